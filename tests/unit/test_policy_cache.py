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
    for informer in (*cache.informers, cache.namespaces):
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
    cache.informers[0]._cache["/more"] = added
    cache.informers[0]._notify("ADDED", added, None)
    second = cache.policies()
    assert second is not first and sorted(p["metadata"]["name"] for p in second) == ["gpus", "more"]
    assert cache.policies() is second
