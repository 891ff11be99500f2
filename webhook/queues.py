"""A watch-backed cache of Volcano's Queues (``scheduling.volcano.sh/v1beta1``) for the queue check.

The webhook starts it only when it can reach a cluster (``--kubeconfig`` or in-cluster) and the
Queue CRD is served there; each review then reads the cache, never the API. Without the CRD the
check is skipped and a line at start-up says so.
"""

from __future__ import annotations

import logging
import os
import threading

from controller.informer import Informer
from controller.kube import ApiError, Kube, Resource
from webhook.rules.volcano_rules import QUEUES, QueueInfo

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
    try:
        listing = kube.get(f"/apis/{QUEUE_RESOURCE.group}/{QUEUE_RESOURCE.version}")
    except ApiError as exc:
        if exc.status == 404:
            return False
        raise
    return any(r.get("name") == QUEUE_RESOURCE.plural for r in listing.get("resources") or [])


def in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST"))


def start_queue_check(kubeconfig: str | None) -> QueueCache | None:
    """Install the Queue cache for the Volcano rules when a cluster with the Queue CRD is reachable."""
    if kubeconfig is None and not in_cluster():
        log.info("Volcano queue check off: no --kubeconfig and not in a cluster")
        return None
    try:
        kube = Kube(kubeconfig)
        if not queue_crd_served(kube):
            log.info("Volcano queue check off: the scheduling.volcano.sh Queue CRD is not served by this cluster")
            return None
    except Exception as exc:  # an unreachable cluster must not stop admission
        log.warning("Volcano queue check off: cannot reach the cluster (%s)", exc)
        return None
    cache = QueueCache(kube)
    cache.informer.start()
    # Installed once the first list is in: an empty cache would refuse every queue as missing.
    threading.Thread(target=_install_when_synced, args=(cache,), name="queues-sync", daemon=True).start()
    return cache


def _install_when_synced(cache: QueueCache) -> None:
    cache.informer.synced.wait()
    QUEUES.install(cache)
    log.info("Volcano queue check on: watching scheduling.volcano.sh Queues")
