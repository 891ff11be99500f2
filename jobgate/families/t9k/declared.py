"""GenericJob's defaults and rules as declarations (``jobgate/forms/``), as far as a form
says them; ``jobgate manifests generate`` compiles them to the calls ``rules.py`` makes
(``jobgate/_generated/declared/t9k.py``), to the CRD's schema defaults and rules, the
MutatingAdmissionPolicy (``cel.py`` lists them) and the catalogue's records.
"""

from __future__ import annotations

from jobgate.families.t9k.forms import DefaultFinishRules, EntriesUnchanged, IndexMaps, RefersTo
from jobgate.families.t9k.rules import (
    DEFAULT_CLEAN_UP_POLICY,
    DEFAULT_DEBUG_COMMAND,
    DEFAULT_RESTART_LIMIT,
    DEFAULT_RESTART_POLICY,
    DEFAULT_SCHEDULER_PRIORITY,
    FINISH_RULE_KEYS,
    MAX_REPLICA_SPECS,
    MAX_WRITTEN_RULE_REPLICAS,
    NO_TYPE_MESSAGE,
)
from jobgate.forms.base import Declaration
from jobgate.forms.defaults import DefaultField, DefaultItemField
from jobgate.forms.entries import NamedEntries
from jobgate.forms.fields import RequiredField, StringField
from jobgate.forms.roles import Immutable, UniqueBy
from jobgate.forms.scopes import Scope

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
    # Reported where rules.py calls them: after the replica specs' rules, before the service's ports.
    IndexMaps(
        "genericjob/finish-rule-not-empty",
        "a finish rule names a replica type at least",
        tuple(f"spec.{key}" for key in FINISH_RULE_KEYS),
        "spec.replicaSpecs",
        "type",
        "replicas",
        1,
        "a finish rule must name at least one replica",
        "genericjob/finish-rule-types",
        "a finish rule names replica types of the job",
        NO_TYPE_MESSAGE,
        "genericjob/finish-rule-indices-listed",
        "a finish rule lists a replica index at least for each type it names",
        "must list at least one replica index",
        "genericjob/finish-rule-indices",
        "a finish rule's indices are replicas of the type (0 to replicas - 1)",
        "must be below replicas ({count}) of type {name}: 0 to {last}",
        "replica type {name} has 0 replicas",
        bound=MAX_REPLICA_SPECS,
        max_maps=MAX_WRITTEN_RULE_REPLICAS,
        max_names=MAX_REPLICA_SPECS,
        bounds_id="genericjob/bounds",
        index_why=f"a ValidatingAdmissionPolicy: up to {MAX_WRITTEN_RULE_REPLICAS} rules (one per replica, as the "
        "defaults write them) or lists of as many indices, each compared with its type's replicas: a CRD rule "
        "is costed for the largest of each at once, about 160 times the limit of a rule",
    ),
    RefersTo(
        "genericjob/run-mode-types",
        "a debug or resume setting names a replica type of the job",
        ("spec.runMode.debug.replicaSpecs", "spec.runMode.pause.resumeSpecs"),
        "type",
        "spec.replicaSpecs",
        "type",
        NO_TYPE_MESSAGE,
        bound=MAX_REPLICA_SPECS,
        unique_id="genericjob/run-mode-types-unique",
        unique_summary="one debug or resume setting per replica type",
        why="reported at the list (a rule on spec, which sees the replica types, cannot name the item)",
    ),
    # Reported where rules.py calls it: after the service's bound.
    NamedEntries(
        (
            "each port of a service of more than one port has a name",
            "service port names are DNS-1123 labels",
            "service port names unique",
        ),
        "spec.service.ports",
        "name",
        required_id="genericjob/service-port-names-required",
        unnamed="a service with more than one port needs a name for each",
        label_id="genericjob/service-port-names",
        unique_id="genericjob/service-port-names-unique",
        several=True,
        label_stops=False,
    ),
    # The controller does not roll running pods: a changed template or replica type would leave pods
    # that no longer match the job. Replica counts and restart policies may change.
    EntriesUnchanged(
        "genericjob/replicas-immutable",
        "the replica types and pod templates do not change once the job exists",
        "spec.replicaSpecs",
        ("type", "template"),
        ("template",),
        "replica types and pod templates are immutable once the job exists",
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
    # The finish rules jobgate chose, written out for the replica counts: they depend on every replica
    # spec and, on UPDATE, on the stored job (rules.py passes it). After the defaults above (replicas).
    DefaultFinishRules(
        "genericjob/success-rules",
        "successRules: one rule listing every replica (rewritten when the replica counts change, if they were "
        "the defaults of the stored counts)",
        "spec.successRules",
        "spec.replicaSpecs",
        "type",
        "replicas",
        1,
        each=False,
        max_entries=MAX_REPLICA_SPECS,
        max_replicas=MAX_WRITTEN_RULE_REPLICAS,
    ),
    DefaultFinishRules(
        "genericjob/failure-rules",
        "failureRules: one rule per replica (rewritten when the replica counts change, if they were the "
        "defaults of the stored counts)",
        "spec.failureRules",
        "spec.replicaSpecs",
        "type",
        "replicas",
        1,
        each=True,
        max_entries=MAX_REPLICA_SPECS,
        max_replicas=MAX_WRITTEN_RULE_REPLICAS,
    ),
)

# Checked replica spec by replica spec (rules.py's loop, after the spec's pod template, for the first
# spec of a type): a replica type names pods and services.
REPLICA_SPEC = Scope(
    "t9k_replica_spec",
    "replica spec",
    (StringField("genericjob/replica-type", "a replica type is a DNS-1123 label", "type", label=True),),
)


# Each kind's declarations, by its name (the family record's ``declared``: the generators compile them).
DECLARED = {"GenericJob": GENERIC_JOB}
# The rules checked replica spec by replica spec (jobgate manifests generate writes their check).
SCOPES = (REPLICA_SPEC,)
