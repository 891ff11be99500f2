"""The mlkube family (``mxnet.mlkube.io/v1beta1``): MxJob of the deepinsight mxnet-operator.

Defaults are the operator's ``SetDefaults`` (replicas 1, PsRootPort 9091, type WORKER). The
job-mode rules keep the operator's own sentences inside the field errors, so users who know
the operator recognise them; unlike the operator, every violation is reported at once and
nothing panics on a half-written spec.
"""

from __future__ import annotations

from jobgate.api.constants import MLKUBE_GROUP, MLKUBE_VERSION, MX_REPLICA_TYPES
from jobgate.engine.fielderrors import FieldPath, duplicate, invalid, required
from jobgate.engine.findings import Findings
from jobgate.engine.jsonpatch import NO_PATCH, PatchRecorder
from jobgate.engine.modelref import ModelRef
from jobgate.engine.registry import GroupVersionKind, register
from jobgate.rules.jobmeta import as_int, check_job_name, check_spec_schema
from jobgate.rules.podtemplate import check_pod_template

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any

    from jobgate.engine.context import ReviewContext

DEFAULT_PS_ROOT_PORT = 9091
# Models are named, not imported: see jobgate/engine/modelref.py.
MXJOB_SPEC_MODEL = ModelRef("jobgate.families.mlkube.models:MxJobSpec")
MXJOB_STATUS_MODEL = ModelRef("jobgate.families.mlkube.models:MxJobStatus")
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
        replica_specs = obj["spec"].get("replicaSpecs")
        if not isinstance(replica_specs, list):
            return obj
        defaulted = []
        for index, given in enumerate(replica_specs):
            replica = given
            if isinstance(given, dict):
                replica = dict(given)
                pointer = f"/spec/replicaSpecs/{index}"
                if replica.get("replicas") is None:
                    recorder.set(replica, "replicas", 1, pointer)
                if replica.get("PsRootPort") is None:
                    recorder.set(replica, "PsRootPort", DEFAULT_PS_ROOT_PORT, pointer)
                if replica.get("mxReplicaType") in (None, ""):
                    recorder.set(replica, "mxReplicaType", DEFAULT_REPLICA_TYPE, pointer)
            defaulted.append(replica)
        return {**obj, "spec": {**obj["spec"], "replicaSpecs": defaulted}}

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

        base: FieldPath = ("spec", "replicaSpecs")
        by_type: dict[str, tuple[int, dict[str, Any]]] = {}
        for index, replica in entries:
            path = (*base, index)
            replica_type = replica.get("mxReplicaType")
            template = replica.get("template")
            found.extend(
                check_pod_template(
                    template,
                    (*path, "template"),
                    where=f"replicaSpecs[{index}]",
                    replica_restart_policy=None,
                    required_container=(
                        MXNET_CONTAINER,
                        f"Replica type {replica_type} is missing a container for mxnet",
                    ),
                )
            )
            if not isinstance(replica_type, str) or not _known_type(replica):
                continue  # the schema check names the allowed types
            count = as_int(replica.get("replicas"))
            # Every SCHEDULER entry, a duplicate one too (the CRD's rule reads each item).
            if replica_type == "SCHEDULER" and count is not None and count != 1:
                found.errors.append(invalid((*path, "replicas"), count, "The SCHEDULER must have Replicas = 1"))
            if replica_type in by_type:
                found.errors.append(duplicate((*path, "mxReplicaType"), replica_type))
                continue
            by_type[replica_type] = (index, replica)

        job_mode = spec.get("jobMode") if spec is not None else None
        if job_mode == "local":
            for replica_type in ("SCHEDULER", "SERVER"):
                if replica_type in by_type:
                    index, _ = by_type[replica_type]
                    found.errors.append(
                        invalid(
                            (*base, index, "mxReplicaType"),
                            replica_type,
                            "job mode is local, but its replicas set have replicas type other than worker",
                        )
                    )
            if "WORKER" in by_type:
                index, worker = by_type["WORKER"]
                count = as_int(worker.get("replicas"))
                if count is not None and count > 1:
                    found.errors.append(
                        invalid((*base, index, "replicas"), count, "job mode is local, but it has more than 1 worker")
                    )
        elif job_mode == "dist" and isinstance(replica_specs, list):
            for replica_type in MX_REPLICA_TYPES:
                if replica_type not in by_type:
                    found.errors.append(required(base, f"dist job mode without replica type {replica_type}"))
        return found


def _known_type(replica: dict[str, Any]) -> bool:
    return replica.get("mxReplicaType") in MX_REPLICA_TYPES


MXJOB = register(MxJobKind())
KINDS = (MXJOB,)
