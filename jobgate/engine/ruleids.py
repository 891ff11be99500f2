"""The rule behind a message that is not jobgate's own. jobgate's own errors carry their rule from the
code that made them (``FieldError.rule``: a declaration's generated check, a hand-written rule, a
schema check, a policy's finding). A message that is not jobgate's (an apiserver's) is matched against
the table that ``jobgate manifests generate`` writes from the rule catalogue
(``jobgate/_generated/rule_ids.py``), ``rule_id``, without importing the generators;
``tests/unit/test_rule_ids.py`` holds every error of the examples, the test vectors and fuzzed jobs to
carry its label, equal to the table's id. The table is loaded only when it is read.
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


def rule_id(gvk: tuple[str, str, str], error: FieldError) -> str:
    """The id of the first rule of the kind's catalogue whose produced errors match ``error`` (its
    path, type and message): for a message that is not jobgate's; '' when none does."""
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
