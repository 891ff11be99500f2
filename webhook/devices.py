"""Watch-backed caches of the DRA objects GPU counting reads (``resource.k8s.io/v1``).

A pod asks for devices through ``spec.resourceClaims``: a ResourceClaimTemplate (one claim per
pod) or a ResourceClaim (shared), whose device requests name a DeviceClass; a DeviceClass may
also name an extended resource that containers ask for. A GPU limit counts them, so the webhook
keeps the three kinds in informers beside the policies' (:mod:`.policies` starts them) and each
review reads the caches, never the API. Where the cluster does not serve ``resource.k8s.io/v1``
(before 1.34) there is no view: a pod with claims under a GPU limit is then refused as
uncountable, never admitted on a guess.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from jobgate.engine.views import DRA_GROUP
from jobgate.kube.client import Kube, Resource
from jobgate.kube.informer import Informer, InformerGroup

log = logging.getLogger("jobgate.devices")

DRA_VERSION = "v1"
CLAIM_TEMPLATES = Resource(DRA_GROUP, DRA_VERSION, "resourceclaimtemplates", namespaced=True)
CLAIMS = Resource(DRA_GROUP, DRA_VERSION, "resourceclaims", namespaced=True)
DEVICE_CLASSES = Resource(DRA_GROUP, DRA_VERSION, "deviceclasses", namespaced=False)


def _name_and_spec(obj: dict[str, Any]) -> dict[str, Any]:
    """What the cache keeps of an object: its name, namespace and spec (a claim's status, which lists
    its allocation and reservations, is read by nobody here)."""
    metadata = obj.get("metadata") or {}
    kept = {"name": metadata.get("name")}
    if metadata.get("namespace"):
        kept["namespace"] = metadata["namespace"]  # absent for a DeviceClass: the cache's key is then "/name"
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": kept, "spec": obj.get("spec")}


class DeviceCache(InformerGroup):
    """``DeviceView`` over informers of every ResourceClaimTemplate, ResourceClaim and DeviceClass."""

    def __init__(self, kube: Kube) -> None:
        self.templates = Informer(kube, CLAIM_TEMPLATES.path(), name="resourceclaimtemplates", transform=_name_and_spec)
        self.claims = Informer(kube, CLAIMS.path(), name="resourceclaims", transform=_name_and_spec)
        self.classes = Informer(kube, DEVICE_CLASSES.path(), name="deviceclasses", transform=_name_and_spec)
        # Each DeviceClass's extendedResourceName → the class: a new dict per change (reviews read it
        # without a lock, and a plan remembers its answer for as long as the dict is the same).
        self._extended: Mapping[str, str] = {}
        self.classes.handlers.append(self._class_changed)

    @property
    def informers(self) -> tuple[Informer, ...]:
        return (self.templates, self.claims, self.classes)

    def _class_changed(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        extended: dict[str, str] = {}
        for device_class in self.classes.items():
            name = (device_class.get("metadata") or {}).get("name")
            spec = device_class.get("spec")
            resource = spec.get("extendedResourceName") if isinstance(spec, dict) else None
            if isinstance(name, str) and isinstance(resource, str) and resource:
                extended[resource] = name
        if extended != self._extended:
            self._extended = extended

    def claim_template(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.templates.get(f"{namespace}/{name}")

    def claim(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.claims.get(f"{namespace}/{name}")

    def device_class(self, name: str) -> Mapping[str, Any] | None:
        return self.classes.get(f"/{name}")

    def extended_resource_classes(self) -> Mapping[str, str]:
        return self._extended


def dra_served(kube: Kube) -> bool:
    return kube.serves(DRA_GROUP, DRA_VERSION, CLAIM_TEMPLATES.plural, CLAIMS.plural, DEVICE_CLASSES.plural)
