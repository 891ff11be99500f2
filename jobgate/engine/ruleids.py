"""The rule behind a field error. jobgate's own errors carry it from the code that made them
(``FieldError.rule``: a declaration's generated check, a hand-written rule, a schema check, a policy's
finding), ``error_rule``. A message that is not jobgate's (an apiserver's) is matched against the table
that ``jobgate manifests generate`` writes from the rule catalogue (``jobgate/_generated/rule_ids.py``),
``rule_id``, so that the offline command could name its rule without importing the generators.

``error_rule`` still falls back to the table for the errors of the runtime checks that hold several
rules and do not label their errors yet (``UNLABELLED``); ``tests/unit/test_rule_ids.py`` holds every
other error of the examples, the test vectors and fuzzed jobs to its label, equal to the table's id.
The table is loaded only when such an error needs it.
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


# The rules whose errors are made unlabelled, by runtime checks of several rules each (Volcano's
# policies and claim volumes, T9k's finish rules and run-mode types: jobgate/forms/checks/volcano.py
# and t9k.py, on their way into their families' packages); the table names them.
UNLABELLED = frozenset(
    {
        "volcano/policies/event-or-exit-code",
        "volcano/policies/action",
        "volcano/policies/events",
        "volcano/policies/events-unique",
        "volcano/policies/exit-code",
        "volcano/policies/exit-codes-unique",
        "volcano/policies/any-event-alone",
        "volcano/volumes/mount-path",
        "volcano/volumes/mount-paths-unique",
        "volcano/volumes/claim-required",
        "volcano/volumes/claim-conflict",
        "volcano/volumes/claim-name",
        "genericjob/finish-rule-not-empty",
        "genericjob/finish-rule-types",
        "genericjob/finish-rule-indices-listed",
        "genericjob/finish-rule-indices",
        "genericjob/run-mode-types",
        "genericjob/run-mode-types-unique",
    }
)


def error_rule(gvk: tuple[str, str, str], error: FieldError) -> str:
    """The id of the rule behind one of jobgate's own errors: the one its code labelled it with (the
    table's, ``rule_id``, only for an error of the checks of ``UNLABELLED``, which carry none)."""
    return error.rule or rule_id(gvk, error)


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
