"""The webhook's policy cache: what reviews read follows the informers' events, without a lock per read."""

from __future__ import annotations

from typing import Any

from jobgate.engine.views import NAMESPACE_NAME_LABEL
from jobgate.policy.resources import CLUSTER_POLICIES, NAMESPACES, POLICIES
from jobgate.webhook.policies import PolicyCache


class ListingKube:
    """Answers each path's LIST with the objects given for it (one page, no watch events)."""

    def __init__(self, items: dict[str, list[dict[str, Any]]]) -> None:
        self.items = items

    def get(self, path: str, **query: Any) -> dict[str, Any]:
        return {"metadata": {"resourceVersion": "1"}, "items": self.items.get(path, [])}


def namespace(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}, "uid": "u", "managedFields": [{}]}, "spec": {}}


def policy(name: str) -> dict[str, Any]:
    return {"kind": "ClusterTrainingJobPolicy", "metadata": {"name": name}, "spec": {"limits": {"maxGPUsPerJob": 8}}}


def listed_cache() -> PolicyCache:
    kube = ListingKube(
        {
            NAMESPACES.path(): [namespace("team-a", {"tier": "research"}), namespace("team-b")],
            CLUSTER_POLICIES.path(): [policy("gpus")],
            POLICIES.path(): [],
        }
    )
    cache = PolicyCache(kube)  # type: ignore[arg-type]
    for informer in cache.informers:
        informer._list()
    return cache


def test_namespace_labels_follow_the_namespace_events() -> None:
    cache = listed_cache()
    assert cache.synced()
    assert cache.namespace_labels("team-a") == {"tier": "research", NAMESPACE_NAME_LABEL: "team-a"}
    assert cache.namespace_labels("team-b") == {NAMESPACE_NAME_LABEL: "team-b"}
    # The cache keeps only what selectors read of a Namespace.
    assert cache.namespaces.get("/team-a") == {"metadata": {"name": "team-a", "labels": {"tier": "research"}}}
    relabelled = cache.namespaces._keep(namespace("team-a", {"tier": "prod"}))
    cache.namespaces._notify("MODIFIED", relabelled, None)
    assert cache.namespace_labels("team-a") == {"tier": "prod", NAMESPACE_NAME_LABEL: "team-a"}
    cache.namespaces._notify("DELETED", relabelled, None)
    # Gone (or not seen yet): only the label the apiserver gives every namespace.
    assert cache.namespace_labels("team-a") == {NAMESPACE_NAME_LABEL: "team-a"}
    assert cache.namespace_labels("new") == {NAMESPACE_NAME_LABEL: "new"}


def test_a_policy_event_makes_a_new_set_and_reads_between_events_share_one() -> None:
    cache = listed_cache()
    first = cache.policies()
    assert cache.policies() is first and [p["metadata"]["name"] for p in first] == ["gpus"]
    added = policy("more")
    cache.policy_informers[0]._cache["/more"] = added
    cache.policy_informers[0]._notify("ADDED", added, None)
    second = cache.policies()
    assert second is not first and sorted(p["metadata"]["name"] for p in second) == ["gpus", "more"]
    assert cache.policies() is second


def test_the_device_cache_serves_the_dra_objects_by_namespace_and_name() -> None:
    from jobgate.webhook.devices import CLAIM_TEMPLATES, CLAIMS, DEVICE_CLASSES, DeviceCache

    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpus", "namespace": "team-a", "uid": "u", "managedFields": [{}]},
        "spec": {"spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}},
    }
    claim = {"kind": "ResourceClaim", "metadata": {"name": "shared", "namespace": "team-a"}, "spec": {}, "status": {}}
    classes = [
        {
            "kind": "DeviceClass",
            "metadata": {"name": "gpu.nvidia.com"},
            "spec": {"extendedResourceName": "nvidia.com/gpu"},
        },
        {"kind": "DeviceClass", "metadata": {"name": "nic.example.com"}, "spec": {}},
    ]
    kube = ListingKube({CLAIM_TEMPLATES.path(): [template], CLAIMS.path(): [claim], DEVICE_CLASSES.path(): classes})
    cache = DeviceCache(kube)  # type: ignore[arg-type]
    assert not cache.synced()
    for informer in cache.informers:
        informer._list()
    assert cache.synced()
    kept = cache.claim_template("team-a", "gpus")
    assert kept is not None and kept["spec"] == template["spec"] and "uid" not in kept["metadata"]
    assert cache.claim_template("team-b", "gpus") is None
    assert cache.claim("team-a", "shared") is not None and "status" not in cache.claim("team-a", "shared")
    assert cache.device_class("gpu.nvidia.com") is not None
    assert cache.extended_resource_classes() == {"nvidia.com/gpu": "gpu.nvidia.com"}
    before = cache.extended_resource_classes()
    changed = cache.classes._keep(
        {
            "kind": "DeviceClass",
            "metadata": {"name": "nic.example.com"},
            "spec": {"extendedResourceName": "example.com/nic"},
        }
    )
    with cache.classes._lock:
        cache.classes._cache["/nic.example.com"] = changed
    cache.classes._notify("MODIFIED", changed, None)
    # A new map per change: what a plan remembers of the old one is not reused.
    assert cache.extended_resource_classes() == {
        "nvidia.com/gpu": "gpu.nvidia.com",
        "example.com/nic": "nic.example.com",
    }
    assert cache.extended_resource_classes() is not before
