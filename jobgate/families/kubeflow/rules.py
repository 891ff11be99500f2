"""The Kubeflow family (``kubeflow.org/v1``, training-operator v1.9): TFJob, PyTorchJob,
XGBoostJob, PaddleJob, JAXJob, MPIJob — at admission only.

Defaults are Kubeflow's ``SetDefaults_<Kind>`` (which Kubeflow applies in its reconciler, after
storage); jobgate applies them at admission so the stored object shows them. Checks are those of
Kubeflow's validating webhooks (``pkg/webhooks/<kind>``), in their wording, plus MPIJob's
reconciler-time ``ValidateV1MpiJobSpec`` moved to admission, ``spec.runPolicy.managedBy`` for
every kind, and jobgate's shared pod-template checks. Where Kubeflow panics or its checks
disagree, jobgate gives one clear error (see docs/families.md, Kubeflow).

jobgate ships no CRD and no controller for these kinds: Kubeflow's operator runs them.
"""

from __future__ import annotations

from jobgate.api.constants import KUBEFLOW_GROUP, KUBEFLOW_MANAGED_BY, KUBEFLOW_VERSION
from jobgate.engine.fielderrors import (
    FieldError,
    FieldPath,
    Key,
    forbidden,
    invalid,
    not_supported,
    required,
)
from jobgate.engine.findings import Findings, clip_warning
from jobgate.engine.jsonpatch import PatchRecorder
from jobgate.engine.modelref import ModelRef
from jobgate.engine.registry import register
from jobgate.rules.dicts import as_int, copied_dict
from jobgate.rules.jobmeta import check_job_name
from jobgate.rules.names import dns1035_label_problems
from jobgate.rules.podtemplate import CONTAINERS_REQUIRED
from jobgate.rules.replicajobs import (
    ReplicaJobKind,
    Role,
    exactly_one,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any

DEFAULT_CLEAN_POD_POLICY = "None"
STATUS_MODEL = ModelRef("jobgate.families.kubeflow.models:JobStatus")
RUN_POLICY_PATH: FieldPath = ("spec", "runPolicy")
# Kubeflow's own columns (the generated test CRDs only).
KUBEFLOW_PRINTER_COLUMNS: tuple[dict[str, Any], ...] = (
    {"name": "State", "type": "string", "jsonPath": ".status.conditions[-1:].type"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
)
MANAGED_BY_PATH: FieldPath = ("spec", "runPolicy", "managedBy")
QUEUE_IMMUTABLE = "spec.runPolicy.schedulingPolicy.queue is immutable"  # Kubeflow's CRD rule (CEL)
# Kubeflow's sets.List order: sorted.
SUPPORTED_MANAGERS = tuple(sorted(KUBEFLOW_MANAGED_BY))


# The ids of Kubeflow's own rules (jobgate/families/kubeflow/catalogue.py), which their errors carry.
NAME = "kubeflow/name"
TEMPLATE_CONTAINERS = "kubeflow/template-containers"
MANAGED_BY = "kubeflow/managed-by"
QUEUE_IMMUTABLE_RULE = "kubeflow/queue-immutable"
TFJOB_ONE_LEADER = "kubeflow/tfjob-one-leader"
MASTER_REPLICAS = "kubeflow/master-replicas"
REPLICAS_AT_LEAST_ONE = "kubeflow/replicas-at-least-one"
MASTER_REQUIRED = "kubeflow/master-required"
ONE_LAUNCHER = "kubeflow/one-launcher"
ELASTIC_NEEDS_WORKER = "kubeflow/elastic-needs-worker"
NPROC_PER_NODE = "kubeflow/nproc-per-node"


class KubeflowKind(ReplicaJobKind):
    """A ``kubeflow.org/v1`` kind: the run policy at ``spec.runPolicy``."""

    __slots__ = ("check_types",)
    check_types: bool  # whether replica types outside the kind's roles are refused (kubeflow_kind sets it)

    termination_message_policy = False
    required_container_when_unnamed = True

    def unknown_type_restart_policy(self) -> str | None:
        # Kubeflow's defaulters default every entry of the map (MPIJob's only Launcher and Worker).
        return self.roles[0].restart_policy if self.normalise_types else None

    def run_policy(self, spec: dict[str, Any]) -> dict[str, Any]:
        policy = spec.get("runPolicy")
        return policy if isinstance(policy, dict) else {}

    def run_policy_path(self, spec: dict[str, Any]) -> FieldPath:
        return RUN_POLICY_PATH

    def run_policy_place(self) -> str:
        return "runPolicy"

    # --- defaulting ------------------------------------------------------------------------

    def _default_run_policy(self, spec: dict[str, Any], recorder: PatchRecorder) -> tuple[dict[str, Any], str]:
        pointer = "/spec/runPolicy"
        mpi_legacy_unset = self.kind == "MPIJob" and spec.get("cleanPodPolicy") is None
        if spec.get("runPolicy") is None:
            # One operation for a run policy the job does not have.
            defaults: dict[str, Any] = {"suspend": False}
            if self.kind != "MPIJob" or mpi_legacy_unset:
                defaults = {"cleanPodPolicy": DEFAULT_CLEAN_POD_POLICY, **defaults}
            if mpi_legacy_unset:
                recorder.set(spec, "cleanPodPolicy", DEFAULT_CLEAN_POD_POLICY, "/spec")
            recorder.set(spec, "runPolicy", defaults, "/spec")
            return dict(defaults), pointer
        run_policy = copied_dict(spec, "runPolicy")
        if run_policy is None:
            return {}, pointer  # not an object: the schema check reports it
        if run_policy.get("cleanPodPolicy") is None and (self.kind != "MPIJob" or mpi_legacy_unset):
            # An MPIJob's deprecated spec.cleanPodPolicy too, and only when both are unset (as Kubeflow).
            if mpi_legacy_unset:
                recorder.set(spec, "cleanPodPolicy", DEFAULT_CLEAN_POD_POLICY, "/spec")
            recorder.set(run_policy, "cleanPodPolicy", DEFAULT_CLEAN_POD_POLICY, pointer)
        # The CRD's own default (+kubebuilder:default:=false), which the apiserver applies to every
        # stored runPolicy: written here so that `jobgate default` shows the stored object.
        if run_policy.get("suspend") is None:
            recorder.set(run_policy, "suspend", False, pointer)
        return run_policy, pointer

    # --- validation --------------------------------------------------------------------------

    def checks_types(self) -> bool:
        return self.check_types

    def _counts_for_name(self, replica_type: str) -> bool:
        return self.role(replica_type) is not None or not self.check_types

    def _check_name(self, obj: dict[str, Any], counts: list[tuple[str, int]]) -> list[FieldError]:
        """Kubeflow's words for a name that is no DNS-1035 label; jobgate's check of the pod names."""
        metadata = obj.get("metadata")
        name = metadata.get("name") if isinstance(metadata, dict) else None
        if isinstance(name, str) and name:
            problems = dns1035_label_problems(name)
            if problems:
                return [invalid(("metadata", "name"), name, f"should match: {','.join(problems)}", NAME)]
        return check_job_name(obj, counts)

    def _check_replica_type(
        self, replica_type: str, replica_map: dict[str, Any], base: FieldPath, found: Findings
    ) -> None:
        if not self.check_types and self.role(replica_type) is None:
            # Kubeflow's TFJob webhook takes any replica type; its operator runs it as one more type.
            known = ", ".join(r.name for r in self.roles)
            found.warnings.append(
                clip_warning(f"{self.replicas_field}[{replica_type}]: not one of {known}; run as its own type")
            )

    def _check_replica(self, replica_type: str, replica: dict[str, Any], path: FieldPath, found: Findings) -> None:
        template = replica.get("template")
        if template is None or (isinstance(template, dict) and template.get("spec") is None):
            # Kubeflow reads a missing template as one without containers.
            detail = self._missing_containers or "must have at least one container"
            found.errors.append(required((*path, "template", "spec", "containers"), detail, TEMPLATE_CONTAINERS))
            return
        start = len(found.errors)
        super()._check_replica(replica_type, replica, path, found)
        # A template without containers is Kubeflow's own rule's (its words, its id), not the pod template's.
        errors = found.errors
        for index in range(start, len(errors)):
            error = errors[index]
            if error.rule == CONTAINERS_REQUIRED:
                errors[index] = FieldError(error.type, error.path, error.value, error.detail, TEMPLATE_CONTAINERS)

    def _check_family_rules(self, spec: dict[str, Any], replicas: dict[str, dict[str, Any]], found: Findings) -> None:
        manager = self.run_policy(spec).get("managedBy")
        if manager is not None and manager not in KUBEFLOW_MANAGED_BY:
            found.errors.append(not_supported(MANAGED_BY_PATH, manager, SUPPORTED_MANAGERS, MANAGED_BY))

    def _check_update(self, spec: dict[str, Any], old_spec: dict[str, Any]) -> list[FieldError]:
        errors = []
        old_manager = self.run_policy(old_spec).get("managedBy")
        new_manager = self.run_policy(spec).get("managedBy")
        if new_manager != old_manager:
            errors.append(invalid(MANAGED_BY_PATH, new_manager, "field is immutable", MANAGED_BY))
        # The CRD's transition rule (self == oldSelf): only a queue set before and after is compared.
        new_raw, old_raw = self._raw_queue(spec), self._raw_queue(old_spec)
        if new_raw is not None and old_raw is not None and new_raw != old_raw:
            errors.append(invalid(self.queue(spec)[1], new_raw, QUEUE_IMMUTABLE, QUEUE_IMMUTABLE_RULE))
        return errors

    def _raw_queue(self, spec: dict[str, Any]) -> Any:
        scheduling = self.run_policy(spec).get("schedulingPolicy")
        return scheduling.get("queue") if isinstance(scheduling, dict) else None


# --- role rules (Kubeflow's webhooks; MPIJob's reconciler checks) --------------------------------


def _tfjob_roles(replicas: dict[str, dict[str, Any]], base: FieldPath) -> list[FieldError]:
    if sum(1 for t in ("Chief", "Master") if t in replicas) > 1:
        return [forbidden(base, "must not have more than 1 Chief or Master role", TFJOB_ONE_LEADER)]
    return []


def _master_replicas(replicas: dict[str, dict[str, Any]], base: FieldPath) -> list[FieldError]:
    master = replicas.get("Master")
    if master is not None and as_int(master.get("replicas")) != 1:
        return [forbidden((*base, Key("Master"), "replicas"), "must be 1", MASTER_REPLICAS)]
    return []


def _pytorchjob_roles(replicas: dict[str, dict[str, Any]], base: FieldPath) -> list[FieldError]:
    errors = _master_replicas(replicas, base)
    for replica_type, replica in replicas.items():
        count = as_int(replica.get("replicas"))
        if replica_type != "Master" and count is not None and count < 1:
            path = (*base, Key(replica_type), "replicas")
            errors.append(forbidden(path, "must be at least 1", REPLICAS_AT_LEAST_ONE))
    return errors


def _xgboostjob_roles(replicas: dict[str, dict[str, Any]], base: FieldPath) -> list[FieldError]:
    errors = _master_replicas(replicas, base)
    if "Master" not in replicas:
        errors.append(required((*base, Key("Master")), "must be present", MASTER_REQUIRED))
    return errors


# Kubeflow's ValidateV1MpiJobSpec sentences, after jobgate's (the policies' CEL reads them too).
MPI_NO_LAUNCHER = "must be present (MPIReplicaSpec is not valid: Master ReplicaSpec must be present)"
MPI_LAUNCHER_REPLICAS = "must be 1 (MPIReplicaSpec is not valid: There must be only 1 launcher replica)"


def _mpijob_roles(replicas: dict[str, dict[str, Any]], base: FieldPath) -> list[FieldError]:
    """Kubeflow's ValidateV1MpiJobSpec, run by its reconciler: here at admission, with its sentences.

    Without replica specs only that is said (as Kubeflow: ``MPIReplicaSpecs is not valid``).
    """
    if not replicas:
        return []
    errors = exactly_one(replicas, base, "Launcher", ONE_LAUNCHER)
    for index, error in enumerate(errors):
        if error.path[-1] == "replicas":
            errors[index] = forbidden(error.path, MPI_LAUNCHER_REPLICAS, ONE_LAUNCHER)
        else:
            errors[index] = required(error.path, MPI_NO_LAUNCHER, ONE_LAUNCHER)
    return errors


# --- extra defaults and checks --------------------------------------------------------------------

TFJOB_DEFAULT_SUCCESS_POLICY = ""  # Kubeflow's SuccessPolicyDefault
DEFAULT_NPROC_PER_NODE = "auto"
ELASTIC_WITHOUT_WORKER = "must be configured if elastic policy is used"


def _default_tfjob(
    spec: dict[str, Any], run_policy: dict[str, Any], replicas: dict[str, Any], recorder: PatchRecorder, pointer: str
) -> None:
    if spec.get("successPolicy") is None:
        recorder.set(spec, "successPolicy", TFJOB_DEFAULT_SUCCESS_POLICY, "/spec")


def _default_elastic_policy(spec: dict[str, Any], replicas: dict[str, Any], recorder: PatchRecorder) -> None:
    """min = max when one is set; both = Worker's replicas when neither is (Kubeflow's setElasticPolicy).

    Kubeflow's defaulter dereferences the Worker here and panics without one; jobgate leaves the
    policy as it is and the validation says the Worker is missing.
    """
    if spec.get("elasticPolicy") is None:
        return
    policy = copied_dict(spec, "elasticPolicy")
    if policy is None:
        return
    low, high = policy.get("minReplicas"), policy.get("maxReplicas")
    pointer = "/spec/elasticPolicy"
    if low is not None and high is not None:
        return
    # Only integers are copied: Kubeflow's int32 fields never hold anything else (the schema
    # check refuses the rest), and a copied list or object could be any size or depth.
    if high is not None:
        if _is_int(high):
            recorder.set(policy, "minReplicas", high, pointer)
    elif low is not None:
        if _is_int(low):
            recorder.set(policy, "maxReplicas", low, pointer)
    else:
        worker = replicas.get("Worker")
        count = worker.get("replicas") if isinstance(worker, dict) else None
        if _is_int(count):
            recorder.set(policy, "maxReplicas", count, pointer)
            recorder.set(policy, "minReplicas", count, pointer)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _default_pytorchjob(
    spec: dict[str, Any], run_policy: dict[str, Any], replicas: dict[str, Any], recorder: PatchRecorder, pointer: str
) -> None:
    _default_elastic_policy(spec, replicas, recorder)
    elastic = spec.get("elasticPolicy")
    if (not isinstance(elastic, dict) or elastic.get("nProcPerNode") is None) and spec.get("nprocPerNode") is None:
        recorder.set(spec, "nprocPerNode", DEFAULT_NPROC_PER_NODE, "/spec")


def _default_paddlejob(
    spec: dict[str, Any], run_policy: dict[str, Any], replicas: dict[str, Any], recorder: PatchRecorder, pointer: str
) -> None:
    _default_elastic_policy(spec, replicas, recorder)


class _ElasticKind(KubeflowKind):
    """PyTorchJob and PaddleJob: an elastic policy needs a Worker."""

    __slots__ = ()

    def _check_family_rules(self, spec: dict[str, Any], replicas: dict[str, dict[str, Any]], found: Findings) -> None:
        super()._check_family_rules(spec, replicas, found)
        elastic = spec.get("elasticPolicy")
        if elastic is None:
            return
        map_given = isinstance(spec.get(self.replicas_field), dict)
        if map_given and "Worker" not in replicas:
            found.errors.append(
                required(("spec", self.replicas_field, Key("Worker")), ELASTIC_WITHOUT_WORKER, ELASTIC_NEEDS_WORKER)
            )
        if self.kind != "PyTorchJob" or not isinstance(elastic, dict) or elastic.get("nProcPerNode") is None:
            return
        found.warnings.append("spec.elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode instead")
        if spec.get("nprocPerNode") is not None:
            found.errors.append(
                forbidden(
                    ("spec", "elasticPolicy", "nProcPerNode"), "must not be used with spec.nprocPerNode", NPROC_PER_NODE
                )
            )


# The classes through an untyped reference (see families/kubedl/rules.py's kubedl_kind).
_KUBEFLOW_KIND: Any = KubeflowKind
_ELASTIC_KIND: Any = _ElasticKind


def kubeflow_kind(*, check_types: bool = True, elastic: bool = False, **fields: Any) -> KubeflowKind:
    """A ``kubeflow.org/v1`` kind: ``ReplicaJobKind``'s keyword-only fields, in Kubeflow's group and
    version, with its status and printer columns; ``check_types``: whether replica types outside the
    kind's roles are refused; ``elastic``: PyTorchJob's and PaddleJob's elastic policy checks."""
    fields["missing_containers_detail"] = fields.get("missing_containers_detail") or (
        f"must be specified: must have at least one container with name {fields['container']}"
    )
    kind: KubeflowKind = (_ELASTIC_KIND if elastic else _KUBEFLOW_KIND)(
        group=KUBEFLOW_GROUP,
        version=KUBEFLOW_VERSION,
        family="kubeflow",
        status_model=STATUS_MODEL,
        printer_columns=KUBEFLOW_PRINTER_COLUMNS,
        **fields,
    )
    kind.check_types = check_types
    return kind


# --- the kinds -----------------------------------------------------------------------------------

TFJOB = register(
    kubeflow_kind(
        kind="TFJob",
        plural="tfjobs",
        short_names=(),
        replicas_field="tfReplicaSpecs",
        spec_model=ModelRef("jobgate.families.kubeflow.models:TFJobSpec"),
        container="tensorflow",
        port_name="tfjob-port",
        port=2222,
        roles=(
            Role("PS", "Never"),
            Role("Worker", "Never"),
            Role("Chief", "Never", is_master=True),
            Role("Master", "Never", is_master=True),
            Role("Evaluator", "Never"),
        ),
        role_rules=_tfjob_roles,
        extra_defaults=_default_tfjob,
        check_types=False,
    )
)

PYTORCHJOB = register(
    kubeflow_kind(
        elastic=True,
        kind="PyTorchJob",
        plural="pytorchjobs",
        short_names=(),
        replicas_field="pytorchReplicaSpecs",
        spec_model=ModelRef("jobgate.families.kubeflow.models:PyTorchJobSpec"),
        container="pytorch",
        port_name="pytorchjob-port",
        port=23456,
        roles=(Role("Master", "OnFailure", is_master=True), Role("Worker", "OnFailure")),
        role_rules=_pytorchjob_roles,
        extra_defaults=_default_pytorchjob,
    )
)

XGBOOSTJOB = register(
    kubeflow_kind(
        kind="XGBoostJob",
        plural="xgboostjobs",
        short_names=(),
        replicas_field="xgbReplicaSpecs",
        spec_model=ModelRef("jobgate.families.kubeflow.models:XGBoostJobSpec"),
        container="xgboost",
        port_name="xgboostjob-port",
        port=9999,
        roles=(Role("Master", "Never", is_master=True), Role("Worker", "Never")),
        role_rules=_xgboostjob_roles,
    )
)

PADDLEJOB = register(
    kubeflow_kind(
        elastic=True,
        kind="PaddleJob",
        plural="paddlejobs",
        short_names=(),
        replicas_field="paddleReplicaSpecs",
        spec_model=ModelRef("jobgate.families.kubeflow.models:PaddleJobSpec"),
        container="paddle",
        port_name="master",
        port=36543,
        roles=(Role("Master", "OnFailure", is_master=True), Role("Worker", "OnFailure")),
        extra_defaults=_default_paddlejob,
        required_container_detail='must have at least one container with name "paddle"',
        missing_containers_detail='must be specified: must have at least one container with name "paddle"',
    )
)

JAXJOB = register(
    kubeflow_kind(
        kind="JAXJob",
        plural="jaxjobs",
        short_names=(),
        replicas_field="jaxReplicaSpecs",
        spec_model=ModelRef("jobgate.families.kubeflow.models:JAXJobSpec"),
        container="jax",
        port_name="jaxjob-port",
        port=6666,
        roles=(Role("Worker", "Never"),),
    )
)

MPIJOB = register(
    kubeflow_kind(
        kind="MPIJob",
        plural="mpijobs",
        short_names=(),
        replicas_field="mpiReplicaSpecs",
        spec_model=ModelRef("jobgate.families.kubeflow.models:MPIJobSpec"),
        container="mpi",
        port_name="mpi-port",
        port=9999,
        roles=(
            Role("Launcher", "Never", gets_port=False, is_master=True),
            Role("Worker", "Never", gets_port=False, default_replicas=0),
        ),
        require_container=False,
        normalise_types=False,
        role_rules=_mpijob_roles,
        missing_containers_detail=(
            "must have at least one container (MPIReplicaSpecs is not valid: containers definition expected)"
        ),
    )
)

KINDS = (TFJOB, PYTORCHJOB, XGBOOSTJOB, PADDLEJOB, JAXJOB, MPIJOB)
