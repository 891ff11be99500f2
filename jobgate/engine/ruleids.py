"""The rule behind a field error. jobgate's own errors carry it from the code that made them
(``FieldError.rule``: a declaration's generated check, a policy's finding), ``error_rule``; an error
that no code labelled (a hand-written rule's), or a message that is not jobgate's (the apiserver's,
which ``jobgate explain`` and the CEL differential explain), is matched against the table that
``jobgate manifests generate`` writes from the rule catalogue (``jobgate/_generated/rule_ids.py``),
``rule_id``, so that the offline command names rules without importing the generators.

The table is loaded only when an error needs it: a one-file check that finds nothing, or only
labelled errors, never pays for it.
"""

from __future__ import annotations

from jobgate.engine.fielderrors import FieldError

# The id of an unknown field refused as kubectl's --validate=strict refuses it (not a rule of the catalogue).
STRICT_DECODING = "strict-decoding"

_compiled: dict[int, tuple[object, object]] = {}


def _entry(index: int) -> tuple[object, object]:
    """The path pattern and compiled detail of a PRODUCES entry, made once."""
    found = _compiled.get(index)
    if found is None:
        import re

        from jobgate._generated.rule_ids import PRODUCES
        from jobgate.engine.pathpattern import PathPattern

        _, path, _, detail = PRODUCES[index]
        found = (PathPattern(path), re.compile(detail) if detail else None)
        _compiled[index] = found
    return found


def error_rule(gvk: tuple[str, str, str], error: FieldError) -> str:
    """The id of the rule behind one of jobgate's own errors: the one its code labelled it with, else
    the catalogue's table's (``rule_id``)."""
    return error.rule or rule_id(gvk, error)


def rule_id(gvk: tuple[str, str, str], error: FieldError) -> str:
    """The id of the first rule of the kind's catalogue that explains ``error``; '' when none does
    (a test holds every example and test vector to having one)."""
    from jobgate._generated.rule_ids import KIND_PRODUCES, PRODUCES

    type_name = error.type.name
    for index in KIND_PRODUCES.get(gvk, ()):
        rule, _, wanted_type, _ = PRODUCES[index]
        if wanted_type != type_name:
            continue
        pattern, detail = _entry(index)
        if pattern.matches(error.path) and (detail is None or detail.search(error.detail) is not None):  # type: ignore[attr-defined]
            return rule
    return ""
