"""Where Volcano's Job keeps the fields a platform policy reads or writes (``jobgate.policy.fieldmap``).

The queue, the priority class, the scheduler and the TTL are the job's own (``spec.queue``,
``spec.priorityClassName``, ``spec.schedulerName``, ``spec.ttlSecondsAfterFinished``); no deadline.
The tasks are a list, each named by its ``name`` (``default<index>`` when unset). A task runs
``replicas`` pods (``minAvailable`` is only the gang's floor), and an unset count is 0: Volcano's
task replicas is a plain int32, its CRD has no default.
"""

from __future__ import annotations

from jobgate.api.constants import VOLCANO_GROUP
from jobgate.policy.fieldmap import KindMap, fixed, list_groups

KIND_MAPS: tuple[KindMap, ...] = (
    KindMap(
        "volcano",
        VOLCANO_GROUP,
        "Job",
        list_groups("tasks", lambda s, i: str(s.get("name") or f"default{i}"), 0),
        queue=fixed("spec", "queue"),
        priority_class=fixed("spec", "priorityClassName"),
        scheduler=fixed("spec", "schedulerName"),
        ttl=fixed("spec", "ttlSecondsAfterFinished"),
        deadline=None,
        replica_field="tasks",
        replica_layout="list",
        default_count=0,
    ),
)
