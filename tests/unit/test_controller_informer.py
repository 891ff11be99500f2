"""The informer caches what its transform keeps, lists in pages and can watch metadata only."""

from __future__ import annotations

from typing import Any

from jobgate.kube.informer import METADATA_ONLY_LIST, METADATA_ONLY_WATCH, Informer


class PagedKube:
    """Answers a LIST in two pages and a WATCH with the given events; records what was asked."""

    def __init__(self, pages: list[dict[str, Any]], events: list[dict[str, Any]]) -> None:
        self.pages = pages
        self.events = events
        self.gets: list[tuple[str, dict[str, Any]]] = []
        self.watches: list[tuple[str, str, dict[str, Any]]] = []

    def get(self, path: str, *, accept: str = "application/json", **query: Any) -> dict[str, Any]:
        self.gets.append((accept, dict(query)))
        return self.pages[len(self.gets) - 1]

    def watch(self, path: str, resource_version: str, timeout: int, *, accept: str = "application/json", **query: Any):
        self.watches.append((accept, resource_version, dict(query)))
        yield from self.events


def pod(name: str, phase: str = "Pending") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "managedFields": [{"manager": "m"}]}, "spec": {"big": 1},
            "status": {"phase": phase}}  # fmt: skip


def keep_name_and_phase(obj: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": obj["metadata"]["name"], "namespace": "ns"}, "status": obj["status"]}


def test_the_list_is_read_in_pages_and_only_the_transform_is_cached_and_handed_on():
    pages = [
        {"metadata": {"resourceVersion": "10", "continue": "next"}, "items": [pod("a")]},
        {"metadata": {"resourceVersion": "10"}, "items": [pod("b")]},
    ]
    running = pod("a", "Running")
    running["metadata"]["resourceVersion"] = "11"
    events = [{"type": "MODIFIED", "object": running}]
    kube = PagedKube(pages, events)
    informer = Informer(kube, "/api/v1/pods", name="pods", label_selector="x", transform=keep_name_and_phase,
                        page_size=1)  # type: ignore[arg-type]  # fmt: skip
    seen: list[tuple[str, dict[str, Any], dict[str, Any] | None]] = []
    informer.handlers.append(lambda kind, obj, old: seen.append((kind, obj, old)))
    version = informer._list()
    assert version == "10"
    assert kube.gets == [("application/json", {"labelSelector": "x", "limit": 1}),
                         ("application/json", {"labelSelector": "x", "limit": 1, "continue": "next"})]  # fmt: skip
    assert sorted(informer._cache) == ["ns/a", "ns/b"]
    assert all(set(o) == {"metadata", "status"} for o in informer.items())
    assert informer._watch(version) == "11"
    assert kube.watches == [("application/json", "10", {"labelSelector": "x"})]
    assert informer.get("ns/a") == {"metadata": {"name": "a", "namespace": "ns"}, "status": {"phase": "Running"}}
    kind, obj, old = seen[-1]
    assert kind == "MODIFIED" and obj["status"] == {"phase": "Running"}
    assert old == {"metadata": {"name": "a", "namespace": "ns"}, "status": {"phase": "Pending"}}
    assert all("managedFields" not in o["metadata"] for _, o, _ in seen)


def test_a_metadata_only_informer_asks_for_partial_object_metadata():
    kube = PagedKube([{"metadata": {"resourceVersion": "5"}, "items": []}], [])
    informer = Informer(kube, "/api/v1/services", name="services", metadata_only=True)  # type: ignore[arg-type]
    informer._watch(informer._list())
    assert kube.gets[0][0] == METADATA_ONLY_LIST
    assert kube.watches[0][0] == METADATA_ONLY_WATCH
