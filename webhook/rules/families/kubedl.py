"""The KubeDL family (``training.kubedl.io/v1alpha1``): TFJob, PyTorchJob, XGBoostJob, MPIJob,
XDLJob, MarsJob.

Defaults follow KubeDL's ``*_defaults.go`` with two decisions of ours: ``cleanPodPolicy``
defaults to Running for every kind, and a replica type KubeDL leaves without a restart
policy gets Never. KubeDL itself validates nothing at admission; the role rules here are
what its controllers assume (one PyTorch Master, one MPI Launcher, ...), checked up front.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jobgate.webhook.api.constants import KUBEDL_GROUP, KUBEDL_VERSION, RESTART_POLICIES
from jobgate.webhook.rules.fielderrors import (
    FieldError,
    FieldPath,
    Key,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
)
from jobgate.webhook.rules.jobmeta import as_int, check_job_name, check_spec_schema
from jobgate.webhook.rules.jsonpatch import NO_PATCH, PatchRecorder, escape_pointer_token
from jobgate.webhook.rules.modelref import ModelRef
from jobgate.webhook.rules.podtemplate import (
    Findings,
    check_pod_template,
    clip_warning,
    copied_dict,
    default_pod_template,
)
from jobgate.webhook.rules.registry import GroupVersionKind, register

DEFAULT_CLEAN_POD_POLICY = "Running"
# Models are named, not imported: see webhook/rules/modelref.py.
JOB_STATUS_MODEL = ModelRef("jobgate.webhook.api.common:JobStatus")
# The fields of KubeDL's RunPolicy (inlined into spec, or under spec.runPolicy for MPIJob).
RUN_POLICY_FIELDS = (
    "cleanPodPolicy",
    "ttlSecondsAfterFinished",
    "activeDeadlineSeconds",
    "backoffLimit",
    "schedulingPolicy",
)


# The classes here are written out, not dataclasses: importing ``dataclasses`` costs a
# one-file ``jobgate validate`` more than the rules it runs.


class Role:
    """A replica type of a kind and what defaulting gives it."""

    __slots__ = ("gets_port", "is_master", "name", "restart_policy")

    def __init__(self, name: str, restart_policy: str, gets_port: bool = True, is_master: bool = False) -> None:
        self.name = name
        self.restart_policy = restart_policy
        self.gets_port = gets_port
        self.is_master = is_master

    def _values(self) -> tuple[str, str, bool, bool]:
        return (self.name, self.restart_policy, self.gets_port, self.is_master)

    def __eq__(self, other: object) -> bool:
        if type(other) is not Role:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return (
            f"Role(name={self.name!r}, restart_policy={self.restart_policy!r}, "
            f"gets_port={self.gets_port!r}, is_master={self.is_master!r})"
        )


RoleRules = Callable[[dict[str, dict[str, Any]], FieldPath], list[FieldError]]
# (spec, run policy, replica map, recorder, JSON pointer of the run policy)
ExtraDefaults = Callable[[dict[str, Any], dict[str, Any], dict[str, Any], PatchRecorder, str], None]


def _no_role_rules(replicas: dict[str, dict[str, Any]], path: FieldPath) -> list[FieldError]:
    return []


def _no_extra_defaults(
    spec: dict[str, Any], run_policy: dict[str, Any], replicas: dict[str, Any], recorder: PatchRecorder, pointer: str
) -> None:
    return None


class KubeDLKind:
    __slots__ = (
        "_canonical",
        "_required_container",
        "_roles",
        "container",
        "extra_defaults",
        "family",
        "gvk",
        "kind",
        "normalise_types",
        "plural",
        "port",
        "port_name",
        "port_requires_named_container",
        "replicas_field",
        "require_container",
        "role_rules",
        "roles",
        "separate_run_policy",
        "short_names",
        "spec_model",
        "status_model",
    )

    # The signature of the dataclass this was, positional fields included.
    def __init__(  # noqa: PLR0917
        self,
        kind: str,
        plural: str,
        short_names: tuple[str, ...],
        replicas_field: str,
        spec_model: ModelRef,
        container: str,
        port_name: str,
        port: int,
        roles: tuple[Role, ...],
        require_container: bool = True,
        normalise_types: bool = True,
        port_requires_named_container: bool = False,
        role_rules: RoleRules = _no_role_rules,
        extra_defaults: ExtraDefaults = _no_extra_defaults,
        separate_run_policy: bool = False,
        family: str = "kubedl",
        status_model: ModelRef = JOB_STATUS_MODEL,
    ) -> None:
        self.kind = kind
        self.plural = plural
        self.short_names = short_names
        self.replicas_field = replicas_field
        self.spec_model = spec_model
        self.container = container
        self.port_name = port_name
        self.port = port
        self.roles = roles
        self.require_container = require_container
        self.normalise_types = normalise_types
        self.port_requires_named_container = port_requires_named_container
        self.role_rules = role_rules
        self.extra_defaults = extra_defaults
        self.separate_run_policy = separate_run_policy
        self.family = family
        self.status_model = status_model
        self.gvk = GroupVersionKind(KUBEDL_GROUP, KUBEDL_VERSION, kind)
        self._roles: dict[str, Role] = {r.name: r for r in roles}
        self._canonical: dict[str, str] = {r.name.casefold(): r.name for r in roles}
        required_container = (container, f"must have at least one container with name {container}")
        self._required_container: tuple[str, str] | None = required_container if require_container else None

    def __repr__(self) -> str:
        return f"KubeDLKind(kind={self.kind!r})"

    def role(self, replica_type: str) -> Role | None:
        return self._roles.get(replica_type)

    def canonical_type(self, replica_type: str) -> str | None:
        return self._canonical.get(replica_type.casefold())

    def run_policy(self, spec: dict[str, Any]) -> dict[str, Any]:
        """Where this job's RunPolicy lives: inline in spec, or spec.runPolicy when an MPIJob uses it."""
        if self.separate_run_policy and isinstance(spec.get("runPolicy"), dict):
            return spec["runPolicy"]
        return spec

    # --- defaulting ------------------------------------------------------------------------

    def default(
        self, obj: dict[str, Any], recorder: PatchRecorder = NO_PATCH, previous: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        if not isinstance(obj, dict) or not isinstance(obj.get("spec"), dict):
            return obj
        job = dict(obj)
        spec = copied_dict(job, "spec")
        assert spec is not None
        policy_pointer = "/spec"
        if self.separate_run_policy and copied_dict(spec, "runPolicy") is not None:
            policy_pointer = "/spec/runPolicy"
        run_policy = self.run_policy(spec)
        if run_policy.get("cleanPodPolicy") in (None, ""):
            recorder.set(run_policy, "cleanPodPolicy", DEFAULT_CLEAN_POD_POLICY, policy_pointer)

        replicas = spec.get(self.replicas_field)
        if not isinstance(replicas, dict):
            return job
        previous_replicas = _get(previous, "spec", self.replicas_field)
        replicas = self._normalised_types(replicas, f"/spec/{self.replicas_field}", recorder, previous_replicas)
        spec[self.replicas_field] = replicas
        for replica_type, given in replicas.items():
            if not isinstance(given, dict):
                continue
            replica = replicas[replica_type] = dict(given)
            pointer = f"/spec/{self.replicas_field}/{escape_pointer_token(replica_type)}"
            role = self._roles.get(replica_type)
            if role is not None:
                if replica.get("replicas") is None:
                    recorder.set(replica, "replicas", 1, pointer)
                if replica.get("restartPolicy") in (None, ""):
                    recorder.set(replica, "restartPolicy", role.restart_policy, pointer)
            default_pod_template(
                replica,
                pointer,
                recorder,
                container_name=self.container,
                port=(self.port_name, self.port) if role is not None and role.gets_port else None,
                port_requires_named_container=self.port_requires_named_container,
            )
        self.extra_defaults(spec, run_policy, replicas, recorder, policy_pointer)
        return job

    def _normalised_types(
        self, replicas: dict[str, Any], pointer: str, recorder: PatchRecorder, previous: Any
    ) -> dict[str, Any]:
        """``worker``/``WORKER`` -> ``Worker``, unless that would overwrite an existing key.

        On UPDATE one exception: ``kubectl apply`` of a manifest that says ``worker`` re-adds
        ``worker`` beside the stored ``Worker`` (its patch cannot know about the rename). When
        ``Worker`` is exactly the stored entry and ``worker`` is the new one, the new one wins.
        """
        if not self.normalise_types:
            return dict(replicas)
        canonical_of = {
            key: canonical
            for key in replicas
            if isinstance(key, str) and (canonical := self._canonical.get(key.casefold())) not in (None, key)
        }
        stale = {
            canonical
            for key, canonical in canonical_of.items()
            if canonical in replicas
            and isinstance(previous, dict)
            and key not in previous
            and previous.get(canonical) == replicas[canonical]
        }
        for canonical in stale:
            recorder.remove(pointer, canonical)
        renamed: dict[str, Any] = {}
        for replica_type, replica in replicas.items():
            if replica_type in stale:
                continue
            canonical = canonical_of.get(replica_type)
            if canonical is not None and (canonical not in replicas or canonical in stale) and canonical not in renamed:
                recorder.move(pointer, replica_type, canonical)
                renamed[canonical] = replica
            else:
                renamed[replica_type] = replica
        return renamed

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> Findings:
        found = Findings()
        spec = check_spec_schema(obj, self.spec_model, found)
        replica_map = spec.get(self.replicas_field) if spec is not None else None
        replicas = (
            {t: r for t, r in replica_map.items() if isinstance(r, dict)} if isinstance(replica_map, dict) else {}
        )
        counts = [(t, as_int(r.get("replicas")) or 1) for t, r in replicas.items() if self.role(t) is not None]
        found.errors[:0] = check_job_name(obj, counts)

        base: FieldPath = ("spec", self.replicas_field)
        if isinstance(replica_map, dict):
            for replica_type in replica_map:
                self._check_replica_type(replica_type, replica_map, base, found.errors)
        for replica_type, replica in replicas.items():
            self._check_replica(replica_type, replica, (*base, Key(replica_type)), found)
        found.errors.extend(self.role_rules(replicas, base))
        if spec is not None:
            self._check_run_policy(spec, replicas, found)
            if old is not None and isinstance(old.get("spec"), dict):
                found.errors.extend(self._check_immutable(spec, old["spec"]))
        return found

    def _check_replica_type(
        self, replica_type: str, replica_map: dict[str, Any], base: FieldPath, errors: list[FieldError]
    ) -> None:
        if self.role(replica_type) is not None:
            return
        canonical = self.canonical_type(replica_type)
        path = (*base, Key(replica_type))
        if canonical is not None and self.normalise_types and canonical in replica_map:
            errors.append(duplicate(path, replica_type))
        else:
            errors.append(not_supported(path, replica_type, [r.name for r in self.roles]))

    def _check_replica(self, replica_type: str, replica: dict[str, Any], path: FieldPath, found: Findings) -> None:
        policy = replica.get("restartPolicy")
        check_pod_template(
            replica.get("template"),
            (*path, "template"),
            where=f"{self.replicas_field}[{replica_type}]",
            replica_restart_policy=policy if policy in RESTART_POLICIES else None,
            required_container=self._required_container,
            found=found,
        )

    def _check_run_policy(self, spec: dict[str, Any], replicas: dict[str, dict[str, Any]], found: Findings) -> None:
        run_policy = self.run_policy(spec)
        policy_path: FieldPath = ("spec", "runPolicy") if run_policy is not spec else ("spec",)
        if run_policy is not spec:
            ignored = [f for f in RUN_POLICY_FIELDS if spec.get(f) is not None]
            if ignored:
                found.warnings.append(
                    clip_warning(
                        f"spec.runPolicy is set, so these inline spec fields are ignored: {', '.join(ignored)}"
                    )
                )
        scheduling = run_policy.get("schedulingPolicy")
        if not isinstance(scheduling, dict):
            return
        min_available = as_int(scheduling.get("minAvailable"))
        total = sum(n for n in (as_int(r.get("replicas")) for r in replicas.values()) if n is not None and n > 0)
        if min_available is not None and min_available > total:
            found.errors.append(
                invalid(
                    (*policy_path, "schedulingPolicy", "minAvailable"),
                    min_available,
                    f"must be less than or equal to the total number of replicas ({total})",
                )
            )

    def _check_immutable(self, spec: dict[str, Any], old_spec: dict[str, Any]) -> list[FieldError]:
        new_queue, new_path = self._queue(spec)
        old_queue, old_path = self._queue(old_spec)
        if new_queue != old_queue:
            return [invalid(new_path if new_queue is not None else old_path, new_queue, "field is immutable")]
        return []

    def _queue(self, spec: dict[str, Any]) -> tuple[Any, FieldPath]:
        run_policy = self.run_policy(spec)
        base: FieldPath = ("spec", "runPolicy") if run_policy is not spec else ("spec",)
        path = (*base, "schedulingPolicy", "queue")
        scheduling = run_policy.get("schedulingPolicy")
        queue = scheduling.get("queue") if isinstance(scheduling, dict) else None
        return (None if queue == "" else queue), path


def _get(obj: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


# --- role rules --------------------------------------------------------------------------------


def _exactly_one(replicas: dict[str, dict[str, Any]], base: FieldPath, role: str) -> list[FieldError]:
    if role not in replicas:
        return [required((*base, Key(role)), "must be present")]
    count = as_int(replicas[role].get("replicas"))
    if count is not None and count != 1:
        return [invalid((*base, Key(role), "replicas"), count, "must be 1")]
    return []


def _tfjob_roles(replicas: dict[str, dict[str, Any]], base: FieldPath) -> list[FieldError]:
    errors = []
    leaders = [t for t in ("Chief", "Master") if t in replicas]
    if len(leaders) > 1:
        errors.append(forbidden(base, "must not have more than 1 Chief or Master role"))
    for leader in leaders:
        count = as_int(replicas[leader].get("replicas"))
        if count is not None and count > 1:
            errors.append(invalid((*base, Key(leader), "replicas"), count, "must be less than or equal to 1"))
    return errors


def _pytorchjob_roles(replicas: dict[str, dict[str, Any]], base: FieldPath) -> list[FieldError]:
    return _exactly_one(replicas, base, "Master")


def _xgboostjob_roles(replicas: dict[str, dict[str, Any]], base: FieldPath) -> list[FieldError]:
    return _exactly_one(replicas, base, "Master")


def _mpijob_roles(replicas: dict[str, dict[str, Any]], base: FieldPath) -> list[FieldError]:
    return _exactly_one(replicas, base, "Launcher")


# --- per-kind extra defaults ---------------------------------------------------------------------

XGBOOST_DEFAULT_TTL_SECONDS = 100
TFJOB_DEFAULT_SUCCESS_POLICY = ""  # KubeDL's SuccessPolicyDefault: Chief/Master, else worker 0
XDL_DEFAULT_BACKOFF_LIMIT = 20
XDL_DEFAULT_MIN_FINISH_WORK_RATE = 90


def _default_tfjob(
    spec: dict[str, Any], run_policy: dict[str, Any], replicas: dict[str, Any], recorder: PatchRecorder, pointer: str
) -> None:
    if spec.get("successPolicy") is None:
        recorder.set(spec, "successPolicy", TFJOB_DEFAULT_SUCCESS_POLICY, "/spec")


def _default_xgboostjob(
    spec: dict[str, Any], run_policy: dict[str, Any], replicas: dict[str, Any], recorder: PatchRecorder, pointer: str
) -> None:
    if run_policy.get("ttlSecondsAfterFinished") is None:
        recorder.set(run_policy, "ttlSecondsAfterFinished", XGBOOST_DEFAULT_TTL_SECONDS, pointer)


def _default_xdljob(
    spec: dict[str, Any], run_policy: dict[str, Any], replicas: dict[str, Any], recorder: PatchRecorder, pointer: str
) -> None:
    if run_policy.get("backoffLimit") is None:
        recorder.set(run_policy, "backoffLimit", XDL_DEFAULT_BACKOFF_LIMIT, pointer)
    if spec.get("minFinishWorkNum") is None and spec.get("minFinishWorkRate") is None:
        recorder.set(spec, "minFinishWorkRate", XDL_DEFAULT_MIN_FINISH_WORK_RATE, "/spec")


MARS_MEMORY_DEFAULTS = (("plasmaStore", "/dev/shm"), ("lockFreeFileIO", True))


def _default_marsjob(
    spec: dict[str, Any], run_policy: dict[str, Any], replicas: dict[str, Any], recorder: PatchRecorder, pointer: str
) -> None:
    if "Worker" not in replicas:
        return
    if spec.get("workerMemoryTuningPolicy") is None:
        recorder.set(spec, "workerMemoryTuningPolicy", dict(MARS_MEMORY_DEFAULTS), "/spec")
        return
    policy = copied_dict(spec, "workerMemoryTuningPolicy")
    if policy is None:
        return
    for key, value in MARS_MEMORY_DEFAULTS:
        if policy.get(key) is None:
            recorder.set(policy, key, value, "/spec/workerMemoryTuningPolicy")


# --- the kinds -----------------------------------------------------------------------------------

TFJOB = register(
    KubeDLKind(
        kind="TFJob",
        plural="tfjobs",
        short_names=("tfj",),
        replicas_field="tfReplicaSpecs",
        spec_model=ModelRef("jobgate.webhook.api.kubedl:TFJobSpec"),
        container="tensorflow",
        port_name="tfjob-port",
        port=2222,
        roles=(
            Role("PS", "ExitCode"),
            Role("Worker", "ExitCode"),
            Role("Chief", "ExitCode", is_master=True),
            Role("Master", "ExitCode", is_master=True),
            Role("Evaluator", "ExitCode"),
        ),
        role_rules=_tfjob_roles,
        extra_defaults=_default_tfjob,
    )
)

PYTORCHJOB = register(
    KubeDLKind(
        kind="PyTorchJob",
        plural="pytorchjobs",
        short_names=("ptj",),
        replicas_field="pytorchReplicaSpecs",
        spec_model=ModelRef("jobgate.webhook.api.kubedl:PyTorchJobSpec"),
        container="pytorch",
        port_name="pytorchjob-port",
        port=23456,
        roles=(Role("Master", "ExitCode", is_master=True), Role("Worker", "OnFailure", gets_port=False)),
        port_requires_named_container=True,
        role_rules=_pytorchjob_roles,
    )
)

XGBOOSTJOB = register(
    KubeDLKind(
        kind="XGBoostJob",
        plural="xgboostjobs",
        short_names=("xgbj",),
        replicas_field="xgbReplicaSpecs",
        spec_model=ModelRef("jobgate.webhook.api.kubedl:XGBoostJobSpec"),
        container="xgboostjob",
        port_name="xgboostjob-port",
        port=9999,
        roles=(Role("Master", "Never", is_master=True), Role("Worker", "Never")),
        role_rules=_xgboostjob_roles,
        extra_defaults=_default_xgboostjob,
    )
)

MPIJOB = register(
    KubeDLKind(
        kind="MPIJob",
        plural="mpijobs",
        short_names=("mpij",),
        replicas_field="mpiReplicaSpecs",
        spec_model=ModelRef("jobgate.webhook.api.kubedl:MPIJobSpec"),
        container="mpi",
        port_name="mpi-port",
        port=2222,
        roles=(Role("Launcher", "Never", is_master=True), Role("Worker", "Never")),
        require_container=False,
        normalise_types=False,
        role_rules=_mpijob_roles,
        separate_run_policy=True,
    )
)

XDLJOB = register(
    KubeDLKind(
        kind="XDLJob",
        plural="xdljobs",
        short_names=("xdlj",),
        replicas_field="xdlReplicaSpecs",
        spec_model=ModelRef("jobgate.webhook.api.kubedl:XDLJobSpec"),
        container="xdl",
        port_name="xdljob-port",
        port=2222,
        roles=(Role("Worker", "Never"), Role("PS", "Never"), Role("Scheduler", "Never"), Role("ExtendRole", "Never")),
        extra_defaults=_default_xdljob,
    )
)

MARSJOB = register(
    KubeDLKind(
        kind="MarsJob",
        plural="marsjobs",
        short_names=("marsj",),
        replicas_field="marsReplicaSpecs",
        spec_model=ModelRef("jobgate.webhook.api.kubedl:MarsJobSpec"),
        container="mars",
        port_name="mars-port",
        port=11111,
        roles=(Role("Scheduler", "Never", is_master=True), Role("Worker", "ExitCode"), Role("WebService", "Always")),
        extra_defaults=_default_marsjob,
    )
)

KINDS = (TFJOB, PYTORCHJOB, XGBOOSTJOB, MPIJOB, XDLJOB, MARSJOB)
