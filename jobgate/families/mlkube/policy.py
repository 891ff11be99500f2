"""Where MxJob keeps the fields a platform policy reads or writes (``jobgate.policy.fieldmap``).

No queue, no TTL, no deadline. The priority class and the scheduler are each pod template's (an
MxJob's own priority is not a PriorityClass). The replica specs are a list, each named by its
``mxReplicaType`` (WORKER when unset), an unset count 1.
"""

from __future__ import annotations

from jobgate.api.constants import MLKUBE_GROUP
from jobgate.policy.fieldmap import TEMPLATE, KindMap, list_groups

KIND_MAPS: tuple[KindMap, ...] = (
    KindMap(
        "mlkube",
        MLKUBE_GROUP,
        "MxJob",
        list_groups("replicaSpecs", lambda s, i: str(s.get("mxReplicaType") or "WORKER"), 1),
        queue=None,
        priority_class=TEMPLATE,
        scheduler=TEMPLATE,
        ttl=None,
        deadline=None,
        replica_field="replicaSpecs",
        replica_layout="list",
        default_count=1,
    ),
)
