"""Where GenericJob keeps the fields a platform policy reads or writes (``jobgate.policy.fieldmap``).

The queue is ``spec.scheduler.t9kScheduler.queue`` (a default creates t9kScheduler: T9k has no
queue elsewhere). No TTL, no deadline. The priority class and the scheduler are each pod
template's. The replica specs are a list, each named by its ``type`` (its index when unset), an
unset count 1.
"""

from __future__ import annotations

from jobgate.api.constants import T9K_GROUP
from jobgate.policy.fieldmap import TEMPLATE, KindMap, fixed, list_groups

KIND_MAPS: tuple[KindMap, ...] = (
    KindMap(
        "t9k",
        T9K_GROUP,
        "GenericJob",
        list_groups("replicaSpecs", lambda s, i: str(s.get("type") or i), 1),
        queue=fixed("spec", "scheduler", "t9kScheduler", "queue"),
        priority_class=TEMPLATE,
        scheduler=TEMPLATE,
        ttl=None,
        deadline=None,
        replica_field="replicaSpecs",
        replica_layout="list",
        default_count=1,
    ),
)
