"""The mlkube family (``mxnet.mlkube.io/v1beta1``): MxJob of the deepinsight mxnet-operator.

Defaults are the operator's ``SetDefaults`` (replicas 1, PsRootPort 9091, type WORKER). The
job-mode rules keep the operator's own sentences inside the field errors, so users who know
the operator recognise them; unlike the operator, every violation is reported at once and
nothing panics on a half-written spec.
"""

from __future__ import annotations

from jobgate._generated.declared import mlkube as declared_rules
from jobgate.api.constants import MLKUBE_GROUP, MLKUBE_VERSION, MX_REPLICA_TYPES
from jobgate.engine.findings import Findings
from jobgate.engine.jsonpatch import NO_PATCH, PatchRecorder
from jobgate.engine.modelref import ModelRef
from jobgate.engine.registry import GroupVersionKind, register
from jobgate.rules.dicts import as_int
from jobgate.rules.jobmeta import check_job_name, check_spec_schema
from jobgate.rules.podtemplate import check_pod_template

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any

    from jobgate.engine.context import ReviewContext

# Models are named, not imported: see jobgate/engine/modelref.py.
MXJOB_SPEC_MODEL = ModelRef("jobgate.families.mlkube.models:MxJobSpec")
MXJOB_STATUS_MODEL = ModelRef("jobgate.families.mlkube.models:MxJobStatus")
DEFAULT_PS_ROOT_PORT = 9091
DEFAULT_REPLICA_TYPE = "WORKER"
MXNET_CONTAINER = "mxnet"


class MxJobKind:
    # Not a dataclass: importing ``dataclasses`` costs a one-file ``jobgate validate`` more
    # than the rules it runs. One instance, registered below: its fields are class-level.
    kind: str = "MxJob"
    plural: str = "mxjobs"
    short_names: tuple[str, ...] = ("mxj",)
    family: str = "mlkube"
    spec_model: ModelRef = MXJOB_SPEC_MODEL
    status_model: ModelRef = MXJOB_STATUS_MODEL
    gvk: GroupVersionKind = GroupVersionKind(MLKUBE_GROUP, MLKUBE_VERSION, "MxJob")
    printer_columns: tuple[dict[str, str], ...] = ()  # jobgate's default columns

    def default(
        self, obj: dict[str, Any], recorder: PatchRecorder = NO_PATCH, previous: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        if not isinstance(obj, dict) or not isinstance(obj.get("spec"), dict):
            return obj
        # The operator's SetDefaults, declared in declared.py.
        return declared_rules.default_mxjob_mxnet_mlkube_io(obj, recorder)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None, context: ReviewContext) -> Findings:
        found = Findings()
        spec = check_spec_schema(obj, self.spec_model, found)
        replica_specs = spec.get("replicaSpecs") if spec is not None else None
        entries = (
            [(i, r) for i, r in enumerate(replica_specs) if isinstance(r, dict)]
            if isinstance(replica_specs, list)
            else []
        )
        counts = [(r["mxReplicaType"], as_int(r.get("replicas")) or 1) for _, r in entries if _known_type(r)]
        found.errors[:0] = check_job_name(obj, counts)
        for index, replica in entries:
            found.extend(
                check_pod_template(
                    replica.get("template"),
                    ("spec", "replicaSpecs", index, "template"),
                    where=f"replicaSpecs[{index}]",
                    replica_restart_policy=None,
                    required_container=(
                        MXNET_CONTAINER,
                        f"Replica type {replica.get('mxReplicaType')} is missing a container for mxnet",
                    ),
                )
            )
        # The role and job-mode rules, declared in declared.py.
        found.errors.extend(declared_rules.validate_mxjob_mxnet_mlkube_io(obj, old))
        return found


def _known_type(replica: dict[str, Any]) -> bool:
    return replica.get("mxReplicaType") in MX_REPLICA_TYPES


MXJOB = register(MxJobKind())
KINDS = (MXJOB,)
