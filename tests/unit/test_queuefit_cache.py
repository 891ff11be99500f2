"""The webhook's store of Kueue's and Volcano's queues (webhook/queuefit.py) follows the informers' lists
and events; the scheduler whose API is not served is marked unknown."""

from __future__ import annotations

from typing import Any

from jobgate.kube.client import ApiError
from jobgate.webhook.queuefit import QueueFitCache


class ListingKube:
    """Serves the group versions given; answers each path's LIST with the objects given for it."""

    def __init__(self, served: dict[str, list[str]], items: dict[str, list[dict[str, Any]]]) -> None:
        self.served = served
        self.items = items

    def serves(self, group: str, version: str, *plurals: str) -> bool:
        return all(plural in self.served.get(f"{group}/{version}", []) for plural in plurals)

    def get(self, path: str, **query: Any) -> dict[str, Any]:
        if path in self.forbidden:
            raise ApiError(403, "Forbidden")
        return {"metadata": {"resourceVersion": "1"}, "items": self.items.get(path, [])}

    forbidden: tuple[str, ...] = ()


KUEUE_V1BETA2 = ["localqueues", "clusterqueues", "resourceflavors", "cohorts"]


def test_kueue_v1beta2_and_volcano_queues_are_listed_into_the_store() -> None:
    items = {
        "/apis/kueue.x-k8s.io/v1beta2/localqueues": [
            {"metadata": {"name": "team-a", "namespace": "ml", "uid": "u"}, "spec": {"clusterQueue": "cq"}}
        ],
        "/apis/kueue.x-k8s.io/v1beta2/clusterqueues": [{"metadata": {"name": "cq"}, "spec": {}, "status": {"x": 1}}],
        "/apis/scheduling.volcano.sh/v1beta1/queues": [
            {"metadata": {"name": "research"}, "spec": {"capability": {"cpu": 4}}, "status": {"state": "Open", "x": 1}}
        ],
    }
    kube = ListingKube({"kueue.x-k8s.io/v1beta2": KUEUE_V1BETA2, "scheduling.volcano.sh/v1beta1": ["queues"]}, items)
    cache = QueueFitCache(kube)  # type: ignore[arg-type]
    assert cache.store.kueue and cache.store.volcano and not cache.synced()
    for informer in cache.informers:
        informer._list()
    assert cache.synced()
    local_queue = cache.store.local_queue("ml", "team-a")
    assert local_queue is not None and local_queue["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert "uid" not in local_queue["metadata"]
    cluster_queue = cache.store.cluster_queue("cq")
    assert cluster_queue is not None and "status" not in cluster_queue
    assert cache.store.volcano_queue("research") == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "research", "namespace": None},
        "spec": {"capability": {"cpu": 4}},
        "status": {"state": "Open"},
    }
    deleted = cache.informers[0]._keep(items["/apis/kueue.x-k8s.io/v1beta2/localqueues"][0])
    cache._changed("DELETED", deleted, None)
    assert cache.store.local_queue("ml", "team-a") is None


def test_kueue_v1beta1_is_read_where_v1beta2_is_not_served_and_a_missing_api_is_unknown() -> None:
    kube = ListingKube({"kueue.x-k8s.io/v1beta1": KUEUE_V1BETA2}, {})
    cache = QueueFitCache(kube)  # type: ignore[arg-type]
    assert cache.store.kueue and not cache.store.volcano
    assert {informer.path for informer in cache.informers} == {
        f"/apis/kueue.x-k8s.io/v1beta1/{plural}" for plural in KUEUE_V1BETA2
    }
    assert not QueueFitCache(ListingKube({}, {})).store.kueue  # type: ignore[arg-type]


def test_queues_the_webhook_may_not_list_are_left_out_rather_than_never_ready() -> None:
    kube = ListingKube({"kueue.x-k8s.io/v1beta2": KUEUE_V1BETA2, "scheduling.volcano.sh/v1beta1": ["queues"]}, {})
    kube.forbidden = ("/apis/kueue.x-k8s.io/v1beta2/cohorts",)
    cache = QueueFitCache(kube)  # type: ignore[arg-type]
    assert not cache.store.kueue and cache.store.volcano
    assert [informer.path for informer in cache.informers] == ["/apis/scheduling.volcano.sh/v1beta1/queues"]
