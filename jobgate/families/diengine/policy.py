"""Where DIJob keeps the fields a platform policy reads or writes (``jobgate.policy.fieldmap``).

No queue, no TTL, no deadline. The priority class and the scheduler are each pod template's (a
DIJob's own priority is not a PriorityClass). The tasks are a list, each named by its ``name`` (or
its ``type``), an unset count 1.
"""

from __future__ import annotations

from jobgate.api.constants import DIENGINE_GROUP
from jobgate.policy.fieldmap import TEMPLATE, KindMap, list_groups

KIND_MAPS: tuple[KindMap, ...] = (
    KindMap(
        "diengine",
        DIENGINE_GROUP,
        "DIJob",
        list_groups("tasks", lambda s, i: str(s.get("name") or s.get("type") or "none"), 1),
        queue=None,
        priority_class=TEMPLATE,
        scheduler=TEMPLATE,
        ttl=None,
        deadline=None,
        replica_field="tasks",
        replica_layout="list",
        default_count=1,
    ),
)
