"""The KubeDL family (``training.kubedl.io/v1alpha1``): TFJob, PyTorchJob, XGBoostJob, MPIJob,
XDLJob, MarsJob.

Defaults follow KubeDL's ``*_defaults.go`` with two decisions of ours: ``cleanPodPolicy``
defaults to Running for every kind, and a replica type KubeDL leaves without a restart
policy gets Never. KubeDL itself validates nothing at admission; the role rules here are
what its controllers assume (one PyTorch Master, one MPI Launcher, ...), checked up front.
"""

from __future__ import annotations

from jobgate.api.constants import KUBEDL_GROUP, KUBEDL_VERSION
from jobgate.engine.fielderrors import FieldError
from jobgate.engine.findings import Findings, clip_warning
from jobgate.engine.jsonpatch import PatchRecorder
from jobgate.engine.modelref import ModelRef
from jobgate.engine.registry import register
from jobgate.rules.replicajobs import (
    ReplicaJobKind,
    Role,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any, Final

DEFAULT_CLEAN_POD_POLICY: Final = "Running"
CLEAN_POD_POLICY: Final = "run-policy/clean-pod-policy"  # the declared default's id (declared.py)
# The fields of KubeDL's RunPolicy (inlined into spec, or under spec.runPolicy for MPIJob).
RUN_POLICY_FIELDS: Final = (
    "cleanPodPolicy",
    "ttlSecondsAfterFinished",
    "activeDeadlineSeconds",
    "backoffLimit",
    "schedulingPolicy",
)


class KubeDLKind(ReplicaJobKind):
    """A KubeDL kind: the run policy inlined into ``spec`` (an MPIJob may use ``spec.runPolicy``)."""

    __slots__ = ()

    def run_policy(self, spec: dict[str, Any]) -> dict[str, Any]:
        """Where this job's RunPolicy lives: inline in spec, or spec.runPolicy when an MPIJob uses it."""
        if self.separate_run_policy and isinstance(spec.get("runPolicy"), dict):
            return spec["runPolicy"]
        return spec

    def _default_run_policy(self, spec: dict[str, Any], recorder: PatchRecorder) -> tuple[dict[str, Any], str]:
        # The declared cleanPodPolicy default (declared.py) first, as before the replicas' defaults;
        # declared_defaults runs it again later, a no-op then.
        defaults = self._kind_function("default")
        spec.update(defaults({"spec": spec}, recorder, (CLEAN_POD_POLICY,))["spec"])
        run_policy = self.run_policy(spec)
        return run_policy, "/spec" if run_policy is spec else "/spec/runPolicy"

    def declared_defaults(self, obj: dict[str, Any], recorder: PatchRecorder) -> dict[str, Any]:
        """The kind's declared defaults (declared.py)."""
        return self._kind_function("default")(obj, recorder)  # type: ignore[no-any-return]

    def declared_rules(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        """The kind's declared role rules (declared.py)."""
        return self._kind_function("validate")(obj, old)  # type: ignore[no-any-return]

    def _check_run_policy(self, spec: dict[str, Any], replicas: dict[str, dict[str, Any]], found: Findings) -> None:
        run_policy = self.run_policy(spec)
        if run_policy is not spec:
            ignored = [f for f in RUN_POLICY_FIELDS if spec.get(f) is not None]
            if ignored:
                found.warnings.append(
                    clip_warning(
                        f"spec.runPolicy is set, so these inline spec fields are ignored: {', '.join(ignored)}"
                    )
                )
        super()._check_run_policy(spec, replicas, found)


# The class through an untyped reference: compiled by mypyc, a native call of a constructor with
# ``**fields`` (or ``super().__init__(**fields)`` in a subclass) passes the dict as a positional argument.
_KUBEDL_KIND: Final[Any] = KubeDLKind


def kubedl_kind(**fields: Any) -> KubeDLKind:
    """A KubeDL kind: ``ReplicaJobKind``'s keyword-only fields, in KubeDL's group and version."""
    return _KUBEDL_KIND(group=KUBEDL_GROUP, version=KUBEDL_VERSION, family="kubedl", **fields)  # type: ignore[no-any-return]


# --- per-kind extra defaults ---------------------------------------------------------------------

XGBOOST_DEFAULT_TTL_SECONDS: Final = 100
TFJOB_DEFAULT_SUCCESS_POLICY: Final = ""  # KubeDL's SuccessPolicyDefault: Chief/Master, else worker 0
XDL_DEFAULT_BACKOFF_LIMIT: Final = 20
XDL_DEFAULT_MIN_FINISH_WORK_RATE: Final = 90


MARS_MEMORY_DEFAULTS: Final = (("plasmaStore", "/dev/shm"), ("lockFreeFileIO", True))


# --- the kinds -----------------------------------------------------------------------------------

TFJOB: Final = register(
    kubedl_kind(
        kind="TFJob",
        plural="tfjobs",
        short_names=("tfj",),
        replicas_field="tfReplicaSpecs",
        spec_model=ModelRef("jobgate.families.kubedl.models:TFJobSpec"),
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
    )
)

PYTORCHJOB: Final = register(
    kubedl_kind(
        kind="PyTorchJob",
        plural="pytorchjobs",
        short_names=("ptj",),
        replicas_field="pytorchReplicaSpecs",
        spec_model=ModelRef("jobgate.families.kubedl.models:PyTorchJobSpec"),
        container="pytorch",
        port_name="pytorchjob-port",
        port=23456,
        roles=(Role("Master", "ExitCode", is_master=True), Role("Worker", "OnFailure", gets_port=False)),
        port_requires_named_container=True,
    )
)

XGBOOSTJOB: Final = register(
    kubedl_kind(
        kind="XGBoostJob",
        plural="xgboostjobs",
        short_names=("xgbj",),
        replicas_field="xgbReplicaSpecs",
        spec_model=ModelRef("jobgate.families.kubedl.models:XGBoostJobSpec"),
        container="xgboostjob",
        port_name="xgboostjob-port",
        port=9999,
        roles=(Role("Master", "Never", is_master=True), Role("Worker", "Never")),
    )
)

MPIJOB: Final = register(
    kubedl_kind(
        kind="MPIJob",
        plural="mpijobs",
        short_names=("mpij",),
        replicas_field="mpiReplicaSpecs",
        spec_model=ModelRef("jobgate.families.kubedl.models:MPIJobSpec"),
        container="mpi",
        port_name="mpi-port",
        port=2222,
        roles=(Role("Launcher", "Never", is_master=True), Role("Worker", "Never")),
        require_container=False,
        normalise_types=False,
        separate_run_policy=True,
    )
)

XDLJOB: Final = register(
    kubedl_kind(
        kind="XDLJob",
        plural="xdljobs",
        short_names=("xdlj",),
        replicas_field="xdlReplicaSpecs",
        spec_model=ModelRef("jobgate.families.kubedl.models:XDLJobSpec"),
        container="xdl",
        port_name="xdljob-port",
        port=2222,
        roles=(Role("Worker", "Never"), Role("PS", "Never"), Role("Scheduler", "Never"), Role("ExtendRole", "Never")),
    )
)

MARSJOB: Final = register(
    kubedl_kind(
        kind="MarsJob",
        plural="marsjobs",
        short_names=("marsj",),
        replicas_field="marsReplicaSpecs",
        spec_model=ModelRef("jobgate.families.kubedl.models:MarsJobSpec"),
        container="mars",
        port_name="mars-port",
        port=11111,
        roles=(Role("Scheduler", "Never", is_master=True), Role("Worker", "ExitCode"), Role("WebService", "Always")),
    )
)

KINDS: Final = (TFJOB, PYTORCHJOB, XGBOOSTJOB, MPIJOB, XDLJOB, MARSJOB)
