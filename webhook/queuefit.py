"""Watch-backed store of the scheduler queues ``require.fitsQueue`` reads.

Kueue's LocalQueues, ClusterQueues, ResourceFlavors and Cohorts (``kueue.x-k8s.io``, v1beta2 where
served, else v1beta1; Cohorts also v1alpha1, where Kueue before v0.11 kept them) and Volcano's Queues
(``scheduling.volcano.sh/v1beta1``) feed one :class:`~jobgate.policy.queueobjects.QueueObjects`, which
each review reads without an API call.

Started with the platform policies (:mod:`.policies`) whenever their CRDs are served, whether or not a
policy asks for ``fitsQueue`` yet: the objects are few and small, and a policy that starts asking must
not wait for a list. The webhook is not Ready before the lists are in, and the policies are not
installed before them either (a review would otherwise call a queue missing that is only not listed).
A scheduler whose API the cluster does not serve, or whose queues the webhook may not list (RBAC), is
said so in a warning on each job that names one of its queues; the API is not looked for again
(installing Kueue or Volcano later needs a restart of the webhook, as their CRDs come with their own
controllers' deployment).
"""

from __future__ import annotations

import logging
from typing import Any

from jobgate.engine.views import ClusterViews
from jobgate.kube.client import ApiError, Kube, Resource
from jobgate.kube.informer import Informer, InformerGroup
from jobgate.policy.queueobjects import CLUSTER, KUEUE_GROUP, VOLCANO_QUEUE_GROUP, QueueObjects

log = logging.getLogger("jobgate.queuefit")

# Each kind the check reads: (kind, plural, namespaced, the versions tried in order).
KUEUE_RESOURCES = (
    ("LocalQueue", "localqueues", True, ("v1beta2", "v1beta1")),
    ("ClusterQueue", "clusterqueues", False, ("v1beta2", "v1beta1")),
    ("ResourceFlavor", "resourceflavors", False, ("v1beta2", "v1beta1")),
    ("Cohort", "cohorts", False, ("v1beta2", "v1beta1", "v1alpha1")),
)
VOLCANO_QUEUES = Resource(VOLCANO_QUEUE_GROUP, "v1beta1", "queues", namespaced=False)


def _keeper(api_version: str, kind: str) -> Any:
    """What the store keeps of an object: apiVersion and kind (a list's items may lack them), its name and
    namespace, its spec, and a Volcano Queue's ``status.state``."""

    def keep(obj: dict[str, Any]) -> dict[str, Any]:
        metadata = obj.get("metadata") or {}
        kept: dict[str, Any] = {
            "apiVersion": api_version,
            "kind": kind,
            "metadata": {"name": metadata.get("name"), "namespace": metadata.get("namespace")},
            "spec": obj.get("spec"),
        }
        status = obj.get("status")
        if kind == "Queue" and isinstance(status, dict) and "state" in status:
            kept["status"] = {"state": status["state"]}
        return kept

    return keep


class QueueFitCache(InformerGroup):
    """Informers of the queue objects served by the cluster, feeding one store."""

    def __init__(self, kube: Kube) -> None:
        self.store = QueueObjects(CLUSTER)
        self.informers: list[Informer] = []
        kueue: list[tuple[Resource, str]] = []
        for kind, plural, namespaced, versions in KUEUE_RESOURCES:
            version = next((v for v in versions if _served(kube, KUEUE_GROUP, v, plural)), None)
            if version is not None:
                kueue.append((Resource(KUEUE_GROUP, version, plural, namespaced=namespaced), kind))
        # A scheduler whose queues this webhook may not list (RBAC older than the image) is left out,
        # said once: an informer refused forever would keep the webhook from ever being Ready.
        if kueue and all(_listable(kube, resource) for resource, _ in kueue):
            self.store.kueue = True
            for resource, kind in kueue:
                self._watch(kube, resource, kind)
        volcano = VOLCANO_QUEUES
        if _served(kube, volcano.group, volcano.version, volcano.plural) and _listable(kube, volcano):
            self.store.volcano = True
            self._watch(kube, volcano, "Queue")

    def _watch(self, kube: Kube, resource: Resource, kind: str) -> None:
        api_version = f"{resource.group}/{resource.version}"
        informer = Informer(kube, resource.path(), name=resource.plural, transform=_keeper(api_version, kind))
        informer.handlers.append(self._changed)
        self.informers.append(informer)

    def _changed(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if event == "DELETED":
            self.store.remove(obj)
        else:
            self.store.add(obj)


def _served(kube: Kube, group: str, version: str, plural: str) -> bool:
    try:
        return kube.serves(group, version, plural)
    except Exception as exc:  # discovery failing must not stop the policies
        log.warning("queue fit: discovery of %s/%s failed (%s)", group, version, exc)
        return False


def _listable(kube: Kube, resource: Resource) -> bool:
    try:
        kube.get(resource.path(), limit=1)
    except ApiError as exc:
        if exc.status in (401, 403):
            log.warning(
                "queue fit: may not list %s.%s (%s): its queues are not checked", resource.plural, resource.group, exc
            )
            return False
    except Exception as exc:  # the informer retries what fails otherwise
        log.debug("queue fit: listing %s failed (%s)", resource.plural, exc)
    return True


def start_queue_fit(kube: Kube, views: ClusterViews) -> QueueFitCache:
    """Start the informers; the store goes into ``views`` once they have listed (the caller waits
    for :meth:`QueueFitCache.wait_synced` before installing the policies)."""
    cache = QueueFitCache(kube)
    cache.start()
    served = [name for name, known in (("Kueue", cache.store.kueue), ("Volcano", cache.store.volcano)) if known]
    log.info("queue fit: watching the queues of %s", " and ".join(served) if served else "no scheduler (none served)")
    return cache


def install_when_synced(cache: QueueFitCache, views: ClusterViews) -> None:
    cache.wait_synced()
    views.queue_objects = cache.store
