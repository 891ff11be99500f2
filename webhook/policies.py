"""Watch-backed caches of the platform policies and the namespaces' labels, for every review.

The webhook starts them when it can reach a cluster (``--kubeconfig`` or in-cluster) that serves
the ``policy.jobgate.io`` CRDs. Until the three lists are in, the webhook is not Ready (a review
then would admit what a policy refuses); once synced, each review reads the caches, never the API.
Without the CRDs, policy enforcement is off, a line at start-up says so, and discovery is asked
again every ``JOBGATE_POLICY_CRD_RECHECK_SECONDS`` (default 60).

With them, the DRA objects GPU limits count (ResourceClaimTemplates, ResourceClaims, DeviceClasses:
:mod:`.devices`) are watched too where the cluster serves ``resource.k8s.io/v1``; the webhook is
not Ready before those lists are in either (a claim not yet listed would be refused as unknown).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from jobgate.common.envconfig import seconds_from_environment
from jobgate.engine.views import ClusterViews, namespace_labels
from jobgate.kube.client import Kube
from jobgate.kube.informer import Informer, InformerGroup
from jobgate.policy.models import GROUP, VERSION
from jobgate.policy.resolve import PolicySet
from jobgate.policy.resources import CLUSTER_POLICIES, NAMESPACES, POLICIES

from .devices import DeviceCache, dra_served
from .queuefit import QueueFitCache, install_when_synced, start_queue_fit

log = logging.getLogger("jobgate.policies")

RECHECK_ENV = "JOBGATE_POLICY_CRD_RECHECK_SECONDS"


class PolicyCache(InformerGroup):
    """``PolicyView`` over informers of both policy kinds and of the namespaces.

    Every review reads it, so a read takes no lock: the informers' handlers keep what reviews
    read (each namespace's labels as selectors see them) and mark the policy set stale; the first
    review after a change builds the new set.
    """

    def __init__(self, kube: Kube) -> None:
        self.policy_informers = (
            Informer(kube, CLUSTER_POLICIES.path(), name="clustertrainingjobpolicies"),
            Informer(kube, POLICIES.path(), name="trainingjobpolicies"),
        )
        self.namespaces = Informer(kube, NAMESPACES.path(), name="namespaces", transform=_name_and_labels)
        self.informers = (*self.policy_informers, self.namespaces)
        self._lock = threading.Lock()  # serialises building the set against the handlers' marking it stale
        self._policies: PolicySet | None = None
        self._labels: dict[str, Mapping[str, str]] = {}
        for informer in self.policy_informers:
            informer.handlers.append(self._policy_changed)
        self.namespaces.handlers.append(self._namespace_changed)

    def _policy_changed(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        with self._lock:
            self._policies = None  # rebuilt by the next review

    def _namespace_changed(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        metadata = obj.get("metadata") or {}
        name = metadata.get("name")
        if not isinstance(name, str):
            return
        if event == "DELETED":
            self._labels.pop(name, None)
        else:
            labels = metadata.get("labels")
            self._labels[name] = namespace_labels(name, labels if isinstance(labels, dict) else None)

    def policies(self) -> Sequence[Mapping[str, Any]]:
        policies = self._policies
        if policies is not None:
            return policies
        with self._lock:
            if self._policies is None:
                # A new set per change: the resolutions it remembers never outlive the policies.
                self._policies = PolicySet(obj for informer in self.policy_informers for obj in informer.items())
            return self._policies

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        labels = self._labels.get(namespace)
        # A namespace the informer has not seen (yet): only the label the apiserver gives every one.
        return labels if labels is not None else namespace_labels(namespace, None)


def _name_and_labels(namespace: dict[str, Any]) -> dict[str, Any]:
    """What the cache keeps of a Namespace: its name and labels (selectors read nothing else)."""
    metadata = namespace.get("metadata") or {}
    return {"metadata": {"name": metadata.get("name"), "labels": metadata.get("labels")}}


def policy_crds_served(kube: Kube) -> bool:
    return kube.serves(GROUP, VERSION, CLUSTER_POLICIES.plural, POLICIES.plural)


class PolicyEnforcement:
    """The webhook's side of platform policy: starts the caches when the CRDs are served, and says
    whether the webhook may be Ready (not while a started cache is still listing)."""

    def __init__(self, views: ClusterViews) -> None:
        self.views = views
        self.cache: PolicyCache | None = None
        self.devices: DeviceCache | None = None
        self.queue_fit: QueueFitCache | None = None  # Kueue's and Volcano's queues (require.fitsQueue)
        self.exceptions: Any = None  # webhook.policy_exceptions.ExceptionCache, where the CRD is served
        self.stop_event = threading.Event()

    def ready(self) -> bool:
        return (
            (self.cache is None or self.cache.synced())
            and (self.devices is None or self.devices.synced())
            and (self.queue_fit is None or self.queue_fit.synced())
            and (self.exceptions is None or self.exceptions.synced())
        )

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
        self._start_devices(kube)
        self.queue_fit = start_queue_fit(kube, self.views)
        from .policy_exceptions import start_exceptions

        self.exceptions = start_exceptions(kube, self.views)
        cache = PolicyCache(kube)
        cache.start()
        self.cache = cache
        threading.Thread(target=self._install_when_synced, args=(cache,), name="policies-sync", daemon=True).start()

    def _start_devices(self, kube: Kube) -> None:
        try:
            served = dra_served(kube)
        except Exception as exc:  # never a reason to leave the policies off
            log.warning("DRA objects not watched: discovery of resource.k8s.io/v1 failed (%s)", exc)
            return
        if not served:
            log.info("DRA objects not watched: resource.k8s.io/v1 is not served (a claim under a GPU limit is refused)")
            return
        devices = DeviceCache(kube)
        devices.start()
        self.devices = devices
        threading.Thread(target=self._install_devices, args=(devices,), name="devices-sync", daemon=True).start()

    def _install_devices(self, devices: DeviceCache) -> None:
        devices.wait_synced()
        self.views.devices = devices
        log.info("DRA claims counted: watching resource.k8s.io/v1 claim templates, claims and device classes")

    def _install_when_synced(self, cache: PolicyCache) -> None:
        cache.wait_synced()
        if self.queue_fit is not None:
            install_when_synced(self.queue_fit, self.views)  # before the policies: no queue seen missing
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
        if self.devices is not None:
            self.devices.stop()
        if self.queue_fit is not None:
            self.queue_fit.stop()
        if self.exceptions is not None:
            self.exceptions.stop()
