"""Where Trainer's kinds keep the fields a platform policy reads or writes (``jobgate.policy.fieldmap``).

TrainJob: Kueue's labels (``kueue.x-k8s.io/queue-name``, ``kueue.x-k8s.io/priority-class``); no
scheduler, TTL or deadline field a policy may write (``activeDeadlineSeconds`` is immutable and read
only). Its pods are its runtime's (pods.py): the field map's ``resolve`` reads the runtime from the
review's context and gives the checks the job with its pod sets, so that GPU, replica, image and
privilege limits count what the TrainJob will run. TrainingRuntime and ClusterTrainingRuntime are
full pod templates (``spec.template.spec.replicatedJobs[].template.spec.template``): policies apply
to them as to a job.
"""

from __future__ import annotations

import jobgate.families.trainer.rules.pods as pods  # noqa: PLR0402 (the module, not its package)
import jobgate.families.trainer.rules.runtimes as rt
from jobgate.engine.fielderrors import FieldPath, Key
from jobgate.policy.fieldmap import KUEUE_LABEL, TEMPLATE, KindMap, ReplicaGroup, fixed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

GROUP = "trainer.kubeflow.org"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
# Where the resolved pod sets ride on the job the policy checks read (never stored, never patched).
POD_SETS = "__trainerPodSets"


def _label(key: str) -> Any:
    return fixed("metadata", "labels", Key(key))


def _groups_of(sets: list[pods.PodSet]) -> list[ReplicaGroup]:
    return [
        ReplicaGroup(s.name, s.path, s.pods, s.pods, (*s.path, "replicas"), s.template, s.template_path) for s in sets
    ]


def trainjob_groups(job: dict[str, Any]) -> list[ReplicaGroup]:
    sets = job.get(POD_SETS)
    return _groups_of(sets) if isinstance(sets, list) else []


def runtime_groups(job: dict[str, Any]) -> list[ReplicaGroup]:
    return _groups_of(pods.runtime_pod_sets(job))


def resolve_trainjob(job: dict[str, Any], context: Any) -> dict[str, Any]:
    """The TrainJob with its runtime's pod sets (none when the runtime is not known: the TrainJob's own
    validation refuses it then)."""
    from jobgate.families.trainer.rules.checks import ref_kind

    spec = job.get("spec")
    view = getattr(context, "runtimes", None)
    if not isinstance(spec, dict) or view is None:
        return job
    _, kind, name = ref_kind(spec)
    metadata = job.get("metadata")
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    runtime = view.runtime(kind, namespace or getattr(context, "namespace", None) or "default", name)
    if runtime is None:
        return job
    where: FieldPath = (f"{kind}({name})",)
    return {**job, POD_SETS: pods.runtime_pod_sets(runtime, spec, where)}


def _map(kind: str, groups: Any, resolve: Any = None) -> KindMap:
    kmap = KindMap(
        "trainer",
        GROUP,
        kind,
        groups,
        queue=_label(KUEUE_LABEL),
        priority_class=_label(PRIORITY_LABEL),
        scheduler=TEMPLATE if kind != "TrainJob" else None,
        ttl=None,
        deadline=fixed("spec", "activeDeadlineSeconds") if kind == "TrainJob" else None,
        kueue=True,
    )
    kmap.resolve = resolve
    return kmap


KIND_MAPS: tuple[KindMap, ...] = (
    _map("TrainJob", trainjob_groups, resolve_trainjob),
    _map(rt.TRAINING_RUNTIME, runtime_groups),
    _map(rt.CLUSTER_TRAINING_RUNTIME, runtime_groups),
)
