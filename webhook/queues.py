"""A watch-backed cache of Volcano's Queues (``scheduling.volcano.sh/v1beta1``) for the queue check.

The webhook starts it only when it can reach a cluster (``--kubeconfig`` or in-cluster) and the
Queue CRD is served there; each review then reads the cache, never the API. Without the CRD the
check is skipped and a line at start-up says so; discovery is asked again every
``JOBGATE_QUEUE_CRD_RECHECK_SECONDS`` (default 60), so Volcano installed after the webhook is
picked up without a restart.
"""

from __future__ import annotations

import logging
import os
import threading

from jobgate.common.envconfig import seconds_from_environment
from jobgate.engine.views import ClusterViews, QueueInfo
from jobgate.kube.client import Kube, Resource
from jobgate.kube.informer import Informer

log = logging.getLogger("jobgate.queues")

QUEUE_RESOURCE = Resource("scheduling.volcano.sh", "v1beta1", "queues", namespaced=False)


class QueueCache:
    """``QueueView`` over an informer of every Queue in the cluster."""

    def __init__(self, kube: Kube) -> None:
        self.informer = Informer(kube, QUEUE_RESOURCE.path(), name="queues")

    def stop(self) -> None:
        self.informer.stop()

    def queue(self, name: str) -> QueueInfo | None:
        obj = self.informer.get(f"/{name}")
        if obj is None:
            return None
        status = obj.get("status")
        state = status.get("state") if isinstance(status, dict) else None
        children = sum(
            1
            for other in self.informer.items()
            if isinstance(other.get("spec"), dict) and other["spec"].get("parent") == name
        )
        return QueueInfo(name=name, state=state if isinstance(state, str) else "", child_count=children)


def queue_crd_served(kube: Kube) -> bool:
    return kube.serves(QUEUE_RESOURCE.group, QUEUE_RESOURCE.version, QUEUE_RESOURCE.plural)


def in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST"))


RECHECK_ENV = "JOBGATE_QUEUE_CRD_RECHECK_SECONDS"
DEFAULT_RECHECK_SECONDS = 60.0


def recheck_interval() -> float:
    return seconds_from_environment(RECHECK_ENV, DEFAULT_RECHECK_SECONDS)


def start_queue_check(
    kubeconfig: str | None, views: ClusterViews, *, stop: threading.Event | None = None
) -> QueueCache | None:
    """Put a Queue cache into ``views`` for the Volcano rules when a cluster with the Queue CRD is reachable.

    Without the CRD (or with the cluster unreachable) the check is off, said once, and a daemon
    thread asks discovery again every ``recheck_interval()`` seconds until the CRD is served.
    """
    if kubeconfig is None and not in_cluster():
        log.info("Volcano queue check off: no --kubeconfig and not in a cluster")
        return None
    try:
        kube = Kube(kubeconfig)
        served = queue_crd_served(kube)
    except Exception as exc:  # an unreachable cluster must not stop admission
        log.warning("Volcano queue check off: cannot reach the cluster (%s); retrying in the background", exc)
        _watch_for_crd(kubeconfig, None, views, stop)
        return None
    if not served:
        log.info(
            "Volcano queue check off: the scheduling.volcano.sh Queue CRD is not served by this cluster "
            "(checking again every %gs)",
            recheck_interval(),
        )
        _watch_for_crd(kubeconfig, kube, views, stop)
        return None
    return _start_cache(kube, views)


def _start_cache(kube: Kube, views: ClusterViews) -> QueueCache:
    cache = QueueCache(kube)
    cache.informer.start()
    # Installed once the first list is in: an empty cache would refuse every queue as missing.
    threading.Thread(target=_install_when_synced, args=(cache, views), name="queues-sync", daemon=True).start()
    return cache


def _watch_for_crd(
    kubeconfig: str | None, kube: Kube | None, views: ClusterViews, stop: threading.Event | None
) -> None:
    threading.Thread(
        target=_wait_for_crd,
        args=(kubeconfig, kube, views, stop or threading.Event()),
        name="queues-crd",
        daemon=True,
    ).start()


def _wait_for_crd(kubeconfig: str | None, kube: Kube | None, views: ClusterViews, stop: threading.Event) -> None:
    """Ask discovery until the Queue CRD is served, then start the cache. Quiet on failures: the
    start-up line already said the check is off."""
    interval = recheck_interval()
    while not stop.wait(interval):
        try:
            kube = kube or Kube(kubeconfig)
            if queue_crd_served(kube):
                log.info("Volcano's Queue CRD is now served: starting the queue check")
                _start_cache(kube, views)
                return
        except Exception as exc:
            log.debug("Volcano queue CRD check failed: %s", exc)


def _install_when_synced(cache: QueueCache, views: ClusterViews) -> None:
    cache.informer.synced.wait()
    views.queues = cache
    log.info("Volcano queue check on: watching scheduling.volcano.sh Queues")
