"""GenericJob's defaults and rules as declarations (``jobgate/rules/forms.py``), as far as a form
says them; ``jobgate manifests generate`` compiles them to the calls ``rules.py`` makes
(``jobgate/_generated/declared_rules.py``), to the CRD's schema defaults and rules, the
MutatingAdmissionPolicy (``cel.py`` lists them) and the catalogue's records.
"""

from __future__ import annotations

from jobgate.families.t9k.rules import (
    DEFAULT_CLEAN_UP_POLICY,
    DEFAULT_DEBUG_COMMAND,
    DEFAULT_RESTART_LIMIT,
    DEFAULT_RESTART_POLICY,
    DEFAULT_SCHEDULER_PRIORITY,
)
from jobgate.rules.forms import (
    Declaration,
    DefaultField,
    DefaultItemField,
    Immutable,
    RequiredField,
    UniqueBy,
)

_RESTART_POLICY = (
    f"each replica spec's restartPolicy: {{policy: {DEFAULT_RESTART_POLICY}, limit: {DEFAULT_RESTART_LIMIT}}} "
    '(each of the two when unset, the policy also when "")'
)

GENERIC_JOB: tuple[Declaration, ...] = (
    DefaultItemField("replicas/count", "spec.replicaSpecs", "replicas", 1, entry="replica spec"),
    # One default: the whole restart policy when there is none, else each of its fields.
    *(
        DefaultItemField(
            "genericjob/restart-policy",
            "spec.replicaSpecs",
            field,
            value,
            empty_is_unset=field.endswith(".policy"),
            summary=_RESTART_POLICY,
        )
        for field, value in (
            ("restartPolicy", {"policy": DEFAULT_RESTART_POLICY, "limit": DEFAULT_RESTART_LIMIT}),
            ("restartPolicy.policy", DEFAULT_RESTART_POLICY),
            ("restartPolicy.limit", DEFAULT_RESTART_LIMIT),
        )
    ),
    DefaultField(
        "genericjob/clean-up-policy",
        "spec.cleanUpPolicy",
        DEFAULT_CLEAN_UP_POLICY,
        summary=f"cleanUpPolicy: {DEFAULT_CLEAN_UP_POLICY}",
    ),
    DefaultField(
        "genericjob/scheduler-priority",
        "spec.scheduler.t9kScheduler.priority",
        DEFAULT_SCHEDULER_PRIORITY,
        summary=f"scheduler.t9kScheduler.priority: {DEFAULT_SCHEDULER_PRIORITY}",
    ),
    DefaultItemField(
        "genericjob/debug-command",
        "spec.runMode.debug.replicaSpecs",
        "command",
        list(DEFAULT_DEBUG_COMMAND),
        entry="debug setting",
    ),
    # Reported after the rules written by hand (rules.py), which skip an entry without a type.
    RequiredField(
        "genericjob/replica-type-required",
        "every replica spec has a type",
        "spec.replicaSpecs[*].type",
        "every replica spec needs a type",
        empty_is_unset=True,
    ),
    RequiredField(
        "genericjob/run-mode-type-required",
        "a debug or resume setting names its replica type",
        ("spec.runMode.debug.replicaSpecs[*].type", "spec.runMode.pause.resumeSpecs[*].type"),
        "names the replica type it applies to",
        empty_is_unset=True,
    ),
    # Not a list-map key: a replica spec may lack its type (the rule above).
    UniqueBy(
        "genericjob/replica-types-unique",
        "spec.replicaSpecs",
        "type",
        summary="replica types unique in the job",
        list_map=False,
    ),
    Immutable(
        "genericjob/resume-specs-immutable",
        "the resume settings do not change once the job exists",
        "spec.runMode.pause.resumeSpecs",
        "field is immutable: only pause.enabled may change while the job exists",
    ),
)
