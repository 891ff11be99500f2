"""Watch-backed view of Kubeflow Trainer's runtimes (``trainer.kubeflow.org/v1alpha1`` TrainingRuntimes
and ClusterTrainingRuntimes) that TrainJob reviews are judged against.

Started when the trainer family is served and Trainer's CRDs are: each review reads the informers'
caches, never the API, but for a runtime the caches do not hold yet — one created a moment before
its TrainJob (NVIDIA/aicr#1669, where Trainer's own webhook refuses the job from a stale cache) — it
is read from the API before the job is refused. The webhook is not Ready until both lists are in.
A TrainJob's JobSet (for Trainer's "patches cannot change while a job is active" check) is read
from the API on the rare UPDATE that needs it. PriorityClasses, which a Volcano runtime's pods name
(Trainer's T24), are watched too, and read from the API on a miss, as runtimes are.
"""

from __future__ import annotations

import logging
from typing import Any

from jobgate.engine.views import ClusterViews
from jobgate.families.trainer.rules.runtimes import CLUSTER_TRAINING_RUNTIME, RuntimeSnapshot
from jobgate.kube.client import ApiError, Kube, Resource
from jobgate.kube.informer import Informer, InformerGroup

log = logging.getLogger("jobgate.trainer")

GROUP, VERSION = "trainer.kubeflow.org", "v1alpha1"
CLUSTER_RUNTIMES = Resource(GROUP, VERSION, "clustertrainingruntimes", namespaced=False)
RUNTIMES = Resource(GROUP, VERSION, "trainingruntimes", namespaced=True)
JOBSETS = Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", namespaced=True)
PRIORITY_CLASSES = Resource("scheduling.k8s.io", "v1", "priorityclasses", namespaced=False)
# What a review is told when the webhook has no view of the runtimes (no cluster, or Trainer not installed).
NO_VIEW_HINT = "the webhook has no view of the cluster's runtimes: Trainer's CRDs are not served, or no cluster"


def _keep(obj: dict[str, Any]) -> dict[str, Any]:
    """What the cache keeps of a runtime: what the rules read (no managedFields, no status)."""
    metadata = obj.get("metadata") or {}
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": {k: metadata.get(k) for k in ("name", "namespace", "labels") if k in metadata},
        "spec": obj.get("spec"),
    }


def _keep_priority_class(obj: dict[str, Any]) -> dict[str, Any]:
    """What the cache keeps of a PriorityClass: that it exists (its name) and its value."""
    metadata = obj.get("metadata") or {}
    return {"metadata": {"name": metadata.get("name")}, "value": obj.get("value")}


class RuntimeCache(InformerGroup):
    """``RuntimeView`` over informers of both runtime kinds, with a read of the API on a miss."""

    offline_hint = ""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.cluster = Informer(kube, CLUSTER_RUNTIMES.path(), name="clustertrainingruntimes", transform=_keep)
        self.namespaced = Informer(kube, RUNTIMES.path(), name="trainingruntimes", transform=_keep)
        self.priority_classes = Informer(
            kube, PRIORITY_CLASSES.path(), name="priorityclasses", transform=_keep_priority_class
        )
        self.informers = [self.cluster, self.namespaced, self.priority_classes]

    def runtime(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        if kind == CLUSTER_TRAINING_RUNTIME:
            found = self.cluster.get(f"/{name}")
            return found if found is not None else self._read(CLUSTER_RUNTIMES.path(name=name))
        found = self.namespaced.get(f"{namespace}/{name}")
        return found if found is not None else self._read(RUNTIMES.path(namespace=namespace, name=name))

    def jobset(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self._read(JOBSETS.path(namespace=namespace, name=name))

    def priority_class(self, name: str) -> dict[str, Any] | None:
        found = self.priority_classes.get(f"/{name}")
        return found if found is not None else self._read(PRIORITY_CLASSES.path(name=name))

    def _read(self, path: str) -> dict[str, Any] | None:
        if not path.rstrip("/").rpartition("/")[2]:
            return None
        try:
            return self.kube.get(path)
        except ApiError as exc:
            if exc.status != 404:
                log.warning("trainer: reading %s failed (%s)", path, exc)
            return None
        except Exception as exc:  # an unreachable API must not fail the review: the job is refused as missing
            log.warning("trainer: reading %s failed (%s)", path, exc)
            return None


def start_runtime_cache(kube: Kube | None, views: ClusterViews) -> RuntimeCache | None:
    """Start the runtime informers and put the view into ``views``; without Trainer's CRDs (or a cluster),
    an empty view whose "not found" says so."""
    if kube is not None:
        try:
            served = kube.serves(GROUP, VERSION, CLUSTER_RUNTIMES.plural, RUNTIMES.plural)
        except Exception as exc:  # discovery failing must not stop admission
            log.warning("trainer: discovery of %s/%s failed (%s)", GROUP, VERSION, exc)
            served = False
        if served:
            cache = RuntimeCache(kube)
            cache.start()
            views.runtimes = cache
            log.info("trainer: watching TrainingRuntimes, ClusterTrainingRuntimes and PriorityClasses")
            return cache
    views.runtimes = RuntimeSnapshot((), offline_hint=NO_VIEW_HINT)
    log.info("trainer: %s; TrainJobs are refused as their runtime is not found", NO_VIEW_HINT)
    return None
