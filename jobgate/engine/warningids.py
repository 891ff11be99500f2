"""The rule behind a warning, as ``jobgate.engine.ruleids`` names the rule behind an error.

A warning admits the job: it has no field error, so no record of the CEL catalogue explains it.
Each warning a family's rules can give is one record here (its id, what it says, the pattern of
its text); a platform policy's warning carries the id of its finding (``policy/not-applicable``,
...) and is not looked up here. ``jobgate validate`` prints the id after the warning as after an
error, the webhook after each admission warning, ``jobgate explain ID`` prints the record, and
``tests/unit/test_warning_ids.py`` holds every warning the rules give to having one.
"""

from __future__ import annotations

from typing import NamedTuple


class WarningRule(NamedTuple):
    id: str
    families: tuple[str, ...]  # the families whose rules give it; () for every family
    pattern: str  # a regular expression searched in the warning's text
    says: str  # what the warning means, for ``jobgate explain``


# The id of a field no schema knows: the same id as the error kubectl's --validate=strict makes of
# it (jobgate.engine.ruleids.STRICT_DECODING), which is what the warning becomes offline.
UNKNOWN_FIELD = "strict-decoding"

WARNING_RULES: tuple[WarningRule, ...] = (
    WarningRule(
        UNKNOWN_FIELD,
        (),
        r"^unknown field ",
        "A field the kind's schema does not know: the apiserver drops it (or refuses it under strict field "
        "validation) before the webhook sees it; jobgate validate refuses it as kubectl apply does "
        "(--validate=strict), or warns (--validate=warn).",
    ),
    WarningRule(
        "pod-template/restart-policy-overridden",
        (),
        r"^restartPolicy \S+ overrides the pod template's restartPolicy ",
        "The replica's restartPolicy decides how its pods restart: the controller writes it into the pods, "
        "over the template's own restartPolicy.",
    ),
    WarningRule(
        "mpijob/inline-run-policy-ignored",
        ("kubedl",),
        r"^spec\.runPolicy is set, so these inline spec fields are ignored: ",
        "A KubeDL MPIJob with spec.runPolicy reads its run policy there only: the same fields written inline "
        "in spec have no effect.",
    ),
    WarningRule(
        "volcano/exit-code-policy-without-action",
        ("volcano",),
        r": exit-code policy with .*: Volcano runs none$",
        "An exit-code policy whose action Volcano does not run: Volcano admits it and its controller ignores it.",
    ),
    WarningRule(
        "volcano/queue-name",
        ("volcano",),
        r"^spec\.queue: .*: Volcano's CRD refuses it: ",
        "A queue name that Volcano's own CRD (1.14 and later) refuses before any webhook: Volcano's webhook "
        "admits any name, so jobgate warns and leaves the verdict to the CRD.",
    ),
    WarningRule(
        "kubeflow/unknown-replica-type",
        ("kubeflow",),
        r": not one of .*; run as its own type$",
        "A replica type the kind does not define: Kubeflow's webhook admits it and its operator runs it as one "
        "more type.",
    ),
    WarningRule(
        "kubeflow/nproc-per-node-deprecated",
        ("kubeflow",),
        r"^spec\.elasticPolicy\.nProcPerNode is deprecated",
        "Kubeflow's PyTorchJob reads spec.nprocPerNode; elasticPolicy.nProcPerNode is its deprecated spelling.",
    ),
)

# Offline only: what reading a file finds beside the objects (jobgate.offline.exact_yaml).
DUPLICATE_KEY = WarningRule(
    "yaml/duplicate-key",
    (),
    r"^duplicate key ",
    "A mapping gives one key twice: kubectl keeps the last value (and so does jobgate validate).",
)

BY_ID: dict[str, WarningRule] = {rule.id: rule for rule in (*WARNING_RULES, DUPLICATE_KEY)}

_compiled: list[tuple[WarningRule, object]] = []


def warning_rule(family: str, text: str) -> str:
    """The id of the record that explains a family rule's warning ``text``; '' when none does (a test
    holds every warning the rules give to having one)."""
    if not _compiled:
        import re

        _compiled.extend((rule, re.compile(rule.pattern)) for rule in WARNING_RULES)
    for rule, pattern in _compiled:
        if (not rule.families or family in rule.families) and pattern.search(text) is not None:  # type: ignore[attr-defined]
            return rule.id
    return ""
