"""Watch-backed caches of the platform policies and the namespaces' labels, for every review.

The webhook starts them when it can reach a cluster (``--kubeconfig`` or in-cluster) that serves
the ``policy.jobgate.io`` CRDs. Until the three lists are in, the webhook is not Ready (a review
then would admit what a policy refuses); once synced, each review reads the caches, never the API.
Without the CRDs, policy enforcement is off, a line at start-up says so, and discovery is asked
again every ``JOBGATE_POLICY_CRD_RECHECK_SECONDS`` (default 60).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from jobgate.common.envconfig import seconds_from_environment
from jobgate.engine.views import ClusterViews, namespace_labels
from jobgate.kube.client import Kube
from jobgate.kube.informer import Informer
from jobgate.policy.models import GROUP, VERSION
from jobgate.policy.resolve import PolicySet
from jobgate.policy.resources import CLUSTER_POLICIES, NAMESPACES, POLICIES

log = logging.getLogger("jobgate.policies")

RECHECK_ENV = "JOBGATE_POLICY_CRD_RECHECK_SECONDS"


# Namespaces whose labels are remembered at most (a deleted namespace's entry goes with the rest).
LABELS_MEMO_LIMIT = 4096


class PolicyCache:
    """``PolicyView`` over informers of both policy kinds and of the namespaces."""

    def __init__(self, kube: Kube) -> None:
        self.informers = [
            Informer(kube, CLUSTER_POLICIES.path(), name="clustertrainingjobpolicies"),
            Informer(kube, POLICIES.path(), name="trainingjobpolicies"),
        ]
        self.namespaces = Informer(kube, NAMESPACES.path(), name="namespaces")
        self._lock = threading.Lock()
        self._policies: PolicySet | None = None
        # namespace -> (its object in the informer, its labels as selectors see them)
        self._labels: dict[str, tuple[dict[str, Any] | None, Mapping[str, str]]] = {}
        for informer in self.informers:
            informer.handlers.append(self._changed)

    def _changed(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        with self._lock:
            self._policies = None  # rebuilt by the next review

    def start(self) -> None:
        for informer in (*self.informers, self.namespaces):
            informer.start()

    def stop(self) -> None:
        for informer in (*self.informers, self.namespaces):
            informer.stop()

    def synced(self) -> bool:
        return all(informer.synced.is_set() for informer in (*self.informers, self.namespaces))

    def policies(self) -> Sequence[Mapping[str, Any]]:
        with self._lock:
            if self._policies is None:
                # A new set per change: the resolutions it remembers never outlive the policies.
                self._policies = PolicySet(obj for informer in self.informers for obj in informer.items())
            return self._policies

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        obj = self.namespaces.get(f"/{namespace}")
        # Built once per version of the Namespace (the informer replaces the object on each change).
        known = self._labels.get(namespace)
        if known is not None and known[0] is obj:
            return known[1]
        metadata = obj.get("metadata") if obj is not None else None
        labels = metadata.get("labels") if isinstance(metadata, dict) else None
        seen = namespace_labels(namespace, labels if isinstance(labels, dict) else None)
        if len(self._labels) >= LABELS_MEMO_LIMIT:
            self._labels.clear()
        self._labels[namespace] = (obj, seen)
        return seen


def policy_crds_served(kube: Kube) -> bool:
    return kube.serves(GROUP, VERSION, CLUSTER_POLICIES.plural, POLICIES.plural)


class PolicyEnforcement:
    """The webhook's side of platform policy: starts the caches when the CRDs are served, and says
    whether the webhook may be Ready (not while a started cache is still listing)."""

    def __init__(self, views: ClusterViews) -> None:
        self.views = views
        self.cache: PolicyCache | None = None
        self.stop_event = threading.Event()

    def ready(self) -> bool:
        return self.cache is None or self.cache.synced()

    def start(self, kubeconfig: str | None, in_cluster: bool) -> None:
        if kubeconfig is None and not in_cluster:
            log.info("platform policy off: no --kubeconfig and not in a cluster")
            return
        try:
            kube = Kube(kubeconfig)
            served = policy_crds_served(kube)
        except Exception as exc:  # an unreachable cluster must not stop admission
            log.warning("platform policy off: cannot reach the cluster (%s); retrying in the background", exc)
            self._recheck(kubeconfig, None)
            return
        if not served:
            log.info("platform policy off: the %s CRDs are not served by this cluster", GROUP)
            self._recheck(kubeconfig, kube)
            return
        self._start_cache(kube)

    def _start_cache(self, kube: Kube) -> None:
        cache = PolicyCache(kube)
        cache.start()
        self.cache = cache
        threading.Thread(target=self._install_when_synced, args=(cache,), name="policies-sync", daemon=True).start()

    def _install_when_synced(self, cache: PolicyCache) -> None:
        for informer in (*cache.informers, cache.namespaces):
            informer.synced.wait()
        self.views.policies = cache
        log.info("platform policy on: watching %s policies and namespaces", GROUP)

    def _recheck(self, kubeconfig: str | None, kube: Kube | None) -> None:
        def loop() -> None:
            interval = seconds_from_environment(RECHECK_ENV, 60.0)
            client = kube
            while not self.stop_event.wait(interval):
                try:
                    client = client or Kube(kubeconfig)
                    if policy_crds_served(client):
                        log.info("the %s CRDs are now served: starting platform policy", GROUP)
                        self._start_cache(client)
                        return
                except Exception as exc:
                    log.debug("policy CRD check failed: %s", exc)

        threading.Thread(target=loop, name="policies-crd", daemon=True).start()

    def stop(self) -> None:
        self.stop_event.set()
        if self.cache is not None:
            self.cache.stop()
