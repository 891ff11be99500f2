"""The T9k family (``batch.tensorstack.dev/v1beta1``): GenericJob.

T9k's controller is closed and has no admission webhook, so its documented defaults are filled
here, written out in full so that users see what the controller will do: every replica's
restart policy, the clean-up policy, the debug command, the scheduler priority and, for a job
without finish rules, the rules jobgate chose (success when every replica succeeded, failure
when any replica failed beyond its restart limit).
"""

from __future__ import annotations

from jobgate._generated import scoped_rules
from jobgate._generated.declared import t9k as declared_rules
from jobgate.api.constants import T9K_GROUP, T9K_VERSION
from jobgate.engine.fielderrors import (
    FieldPath,
    too_many,
)
from jobgate.engine.findings import Findings
from jobgate.engine.jsonpatch import NO_PATCH, PatchRecorder
from jobgate.engine.modelref import ModelRef
from jobgate.engine.registry import GroupVersionKind, register
from jobgate.rules.dicts import as_int
from jobgate.rules.jobmeta import check_job_name, check_spec_schema
from jobgate.rules.names import is_dns1123_label
from jobgate.rules.podtemplate import check_pod_template

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any

    from jobgate.engine.context import ReviewContext

DEFAULT_RESTART_POLICY = "OnFailure"
DEFAULT_RESTART_LIMIT = 0
DEFAULT_CLEAN_UP_POLICY = "None"
DEFAULT_DEBUG_COMMAND = ("sleep", "inf")
DEFAULT_SCHEDULER_PRIORITY = 0
FINISH_RULE_KEYS = ("successRules", "failureRules")
# The controller creates every pod with restartPolicy Never and restarts replicas itself.
CONTROLLER_POD_RESTART_POLICY = "Never"
# The longest lists of replica specs and of service ports. T9k sets none, but the CRD's CEL rules
# (jobgate/families/t9k/cel.py) need bounds for the apiserver's cost estimate: the finish rules'
# check of the replica types they name grows with the square of the replica specs (16 would cost
# twice the per-rule limit). No real job comes near these, and a longer list is refused here as
# the apiserver does, so that both agree. The finish rules' bound is MAX_WRITTEN_RULE_REPLICAS
# (below): the most the defaults write.
MAX_REPLICA_SPECS = 8
MAX_SERVICE_PORTS = 128
# The id of the lists' bounds (jobgate/families/t9k/cel.py), which the errors of these carry.
BOUNDS = "genericjob/bounds"
# A replica type named where no replica spec has it ({known}: the types there are).
NO_TYPE_MESSAGE = "no replica spec of this type (types: {known})"
# The declared rules (declared.py) each reported where the hand-written ones around them expect it.
FINISH_RULES = (
    "genericjob/finish-rule-not-empty",
    "genericjob/finish-rule-types",
    "genericjob/finish-rule-indices-listed",
    "genericjob/finish-rule-indices",
)
PORT_RULES = (
    "genericjob/service-port-names-required",
    "genericjob/service-port-names",
    "genericjob/service-port-names-unique",
)
RUN_MODE_RULES = ("genericjob/run-mode-types", "genericjob/run-mode-types-unique")
LAST_RULES = (
    "genericjob/replicas-immutable",
    "genericjob/replica-type-required",
    "genericjob/run-mode-type-required",
    "genericjob/replica-types-unique",
    "genericjob/resume-specs-immutable",
)


# Models are named, not imported: see jobgate/engine/modelref.py.
GENERIC_JOB_SPEC_MODEL = ModelRef("jobgate.families.t9k.models:GenericJobSpec")
GENERIC_JOB_STATUS_MODEL = ModelRef("jobgate.families.t9k.models:GenericJobStatus")


class GenericJobKind:
    # Not a dataclass: importing ``dataclasses`` costs a one-file ``jobgate validate`` more
    # than the rules it runs. One instance, registered below: its fields are class-level.
    kind: str = "GenericJob"
    plural: str = "genericjobs"
    short_names: tuple[str, ...] = ("gj",)
    # T9k's phase instead of jobgate's common columns.
    printer_columns: tuple[dict[str, str], ...] = (
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase", "description": "T9k phase of the job."},
        {
            "name": "Running",
            "type": "integer",
            "jsonPath": ".status.aggregate.running",
            "description": "Replica pods running.",
        },
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    )
    family: str = "t9k"
    spec_model: ModelRef = GENERIC_JOB_SPEC_MODEL
    status_model: ModelRef = GENERIC_JOB_STATUS_MODEL
    gvk: GroupVersionKind = GroupVersionKind(T9K_GROUP, T9K_VERSION, "GenericJob")

    def default(
        self, obj: dict[str, Any], recorder: PatchRecorder = NO_PATCH, previous: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        # Every step copies what it changes and skips what has an unexpected type: /mutate
        # never denies, validation reports the bad value.
        if not isinstance(obj, dict) or not isinstance(obj.get("spec"), dict):
            return obj
        # Every default is declared (declared.py): replicas, restart policies, cleanUpPolicy, the scheduler's
        # priority, debug commands, then the finish rules, which read the stored job.
        return declared_rules.default_genericjob_batch_tensorstack_dev(obj, recorder, previous=previous)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None, context: ReviewContext) -> Findings:
        found = Findings()
        spec = check_spec_schema(obj, self.spec_model, found)
        replica_specs = spec.get("replicaSpecs") if spec is not None else None
        entries = (
            [(i, r) for i, r in enumerate(replica_specs) if isinstance(r, dict)]
            if isinstance(replica_specs, list)
            else []
        )
        counts: dict[str, int] = {}
        unnamable: set[str] = set()
        base: FieldPath = ("spec", "replicaSpecs")
        if isinstance(replica_specs, list) and len(replica_specs) > MAX_REPLICA_SPECS:
            found.errors.append(too_many(base, len(replica_specs), MAX_REPLICA_SPECS, BOUNDS))
        for index, replica in entries:
            path = (*base, index)
            found.extend(
                check_pod_template(
                    replica.get("template"),
                    (*path, "template"),
                    where=f"replicaSpecs[{index}]",
                    replica_restart_policy=CONTROLLER_POD_RESTART_POLICY,
                )
            )
            replica_type = replica.get("type")
            if replica_type is None or replica_type == "" or not isinstance(replica_type, str):
                continue  # declared.py requires the type; the schema check reports a wrong one
            if replica_type in counts:
                continue  # a duplicate (declared.py)
            # A type that is no label is reported once, here (declared.py's REPLICA_SPEC); finish rules
            # naming it still resolve, and no pod name is derived from it.
            scoped_rules.check_t9k_replica_spec(replica, path, found.errors)
            if not is_dns1123_label(replica_type):
                unnamable.add(replica_type)
            count = as_int(replica.get("replicas"))
            counts[replica_type] = 1 if count is None else count
        found.errors[:0] = check_job_name(obj, [(t, c) for t, c in counts.items() if t not in unnamable])
        if spec is None:
            return found
        # The finish rules' replica types and indices, and the debug and resume settings' replica
        # types, declared in declared.py.
        found.errors.extend(
            declared_rules.validate_genericjob_batch_tensorstack_dev(obj, None, (*FINISH_RULES, *RUN_MODE_RULES))
        )
        service = spec.get("service")
        ports = service.get("ports") if isinstance(service, dict) else None
        if isinstance(ports, list) and len(ports) > MAX_SERVICE_PORTS:
            found.errors.append(too_many(("spec", "service", "ports"), len(ports), MAX_SERVICE_PORTS, BOUNDS))
        # The ports' names, declared in declared.py.
        found.errors.extend(declared_rules.validate_genericjob_batch_tensorstack_dev(obj, None, PORT_RULES))
        stored = old if old is not None and isinstance(old.get("spec"), dict) else None
        # What may not change on UPDATE and the required types, declared in declared.py.
        found.errors.extend(declared_rules.validate_genericjob_batch_tensorstack_dev(obj, stored, LAST_RULES))
        return found


# Default rules list every replica, so their size follows the replica counts, not the object's
# size: a "replicas: 2000000000" of a few bytes would make a patch of gigabytes. Past this many
# replicas in all the rules are not written (the object could not be stored anyway: 100,000
# replicas make failure rules larger than etcd's 1.5 MiB), and the controller applies the same
# rules to a job without any. It is also the most finish rules a job may list (the CRD's bound).
MAX_WRITTEN_RULE_REPLICAS = 10_000


GENERIC_JOB = register(GenericJobKind())
KINDS = (GENERIC_JOB,)
