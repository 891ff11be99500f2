"""Where Kubeflow's kinds keep the fields a platform policy reads or writes (``jobgate.policy.fieldmap``).

Everything under ``spec.runPolicy``: the queue and the priority class in ``schedulingPolicy``
(``priorityClass``, Kubeflow's spelling), the TTL and the deadline beside it. The scheduler is each
pod template's. The replica types are a map of roles: a PyTorchJob's or PaddleJob's Worker may grow
to ``spec.elasticPolicy.maxReplicas``, and an MPIJob's Worker defaults to 0 replicas (the launcher
may run alone). The only family whose jobs Kueue admits by the ``kueue.x-k8s.io/queue-name`` label.
"""

from __future__ import annotations

from jobgate.api.constants import KUBEFLOW_GROUP
from jobgate.policy.fieldmap import TEMPLATE, KindMap, fixed, map_groups

# Each kind's field of replica specs under ``spec``.
REPLICA_FIELDS = {
    "TFJob": "tfReplicaSpecs",
    "PyTorchJob": "pytorchReplicaSpecs",
    "XGBoostJob": "xgbReplicaSpecs",
    "PaddleJob": "paddleReplicaSpecs",
    "JAXJob": "jaxReplicaSpecs",
    "MPIJob": "mpiReplicaSpecs",
}
ELASTIC_KINDS = ("PyTorchJob", "PaddleJob")


def _kind_map(kind: str, field: str) -> KindMap:
    # Kubeflow's MPIJob Worker defaults to 0 replicas (the launcher may run alone).
    default_zero = ("Worker",) if kind == "MPIJob" else ()
    return KindMap(
        "kubeflow",
        KUBEFLOW_GROUP,
        kind,
        map_groups(field, elastic=kind in ELASTIC_KINDS, default_zero=default_zero),
        queue=fixed("spec", "runPolicy", "schedulingPolicy", "queue"),
        priority_class=fixed("spec", "runPolicy", "schedulingPolicy", "priorityClass"),
        scheduler=TEMPLATE,
        ttl=fixed("spec", "runPolicy", "ttlSecondsAfterFinished"),
        deadline=fixed("spec", "runPolicy", "activeDeadlineSeconds"),
        kueue=True,
        replica_field=field,
        default_zero=default_zero,
        elastic=kind in ELASTIC_KINDS,
    )


KIND_MAPS: tuple[KindMap, ...] = tuple(_kind_map(kind, field) for kind, field in REPLICA_FIELDS.items())
