"""Where KubeDL's kinds keep the fields a platform policy reads or writes (``jobgate.policy.fieldmap``).

KubeDL inlines its RunPolicy into ``spec``: the queue and the priority class under
``spec.schedulingPolicy``, the TTL and the deadline as ``spec.ttlSecondsAfterFinished`` and
``spec.activeDeadlineSeconds``, except for an MPIJob that keeps them under ``spec.runPolicy``
(then the inline ones are ignored). The scheduler is each pod template's; the replica types are a
map of roles (an unset count is 1). No Kueue label.
"""

from __future__ import annotations

from jobgate.api.constants import KUBEDL_GROUP
from jobgate.policy.fieldmap import TEMPLATE, KindMap, get_path, map_groups

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from jobgate.engine.fielderrors import FieldPath
    from jobgate.policy.fieldmap import Locator

# Each kind's field of replica specs under ``spec``.
REPLICA_FIELDS = {
    "TFJob": "tfReplicaSpecs",
    "PyTorchJob": "pytorchReplicaSpecs",
    "XGBoostJob": "xgbReplicaSpecs",
    "MPIJob": "mpiReplicaSpecs",
    "XDLJob": "xdlReplicaSpecs",
    "MarsJob": "marsReplicaSpecs",
}


def run_policy(kind: str) -> Callable[[str], Locator]:
    """KubeDL inlines RunPolicy into spec; an MPIJob may keep it under spec.runPolicy (then inline is ignored)."""

    def at(*rest: str) -> Locator:
        def locate(job: dict[str, Any]) -> FieldPath:
            if kind == "MPIJob" and isinstance(get_path(job, ("spec", "runPolicy")), dict):
                return ("spec", "runPolicy", *rest)
            return ("spec", *rest)

        return locate

    return lambda field: at(*field.split("."))


def _kind_map(kind: str, field: str) -> KindMap:
    rp = run_policy(kind)
    return KindMap(
        "kubedl",
        KUBEDL_GROUP,
        kind,
        map_groups(field),
        queue=rp("schedulingPolicy.queue"),
        priority_class=rp("schedulingPolicy.priorityClassName"),
        scheduler=TEMPLATE,
        ttl=rp("ttlSecondsAfterFinished"),
        deadline=rp("activeDeadlineSeconds"),
        replica_field=field,
    )


KIND_MAPS: tuple[KindMap, ...] = tuple(_kind_map(kind, field) for kind, field in REPLICA_FIELDS.items())
