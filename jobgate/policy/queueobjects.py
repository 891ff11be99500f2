"""The scheduler queue objects ``require.fitsQueue`` reads: Kueue's LocalQueues, ClusterQueues,
ResourceFlavors and Cohorts (``kueue.x-k8s.io`` v1beta1 and v1beta2) and Volcano's Queues
(``scheduling.volcano.sh/v1beta1``).

One store serves every transport: ``jobgate validate --cluster-objects`` fills it at once, the
webhook's informers (:mod:`webhook.schedqueues`) add and remove objects as they change. Reviews read
it without a lock: each write replaces one dict entry.

``kueue`` and ``volcano`` say whether the store knows that scheduler's objects at all (offline: some
object of its group was given; the webhook: its API is served and listed). A store that does not
know them cannot tell a missing queue from one it was not shown, so the check says so instead.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

KUEUE_GROUP = "kueue.x-k8s.io"
# The versions whose shapes are read: v1beta2 (``cohortName``) and v1beta1 (``cohort``); a Cohort's
# parent is ``parentName`` in both (v1alpha1's ``parent`` is read too).
KUEUE_VERSIONS = ("v1beta2", "v1beta1", "v1alpha1")
KUEUE_KINDS = ("LocalQueue", "ClusterQueue", "ResourceFlavor", "Cohort")
VOLCANO_QUEUE_GROUP = "scheduling.volcano.sh"
VOLCANO_QUEUE_KIND = "Queue"

# Where the objects come from, for the messages that say what is missing.
OFFLINE = "offline"
CLUSTER = "cluster"


def _name_namespace(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        return None
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        return None
    namespace = metadata.get("namespace")
    return name, namespace if isinstance(namespace, str) else ""


class QueueObjects:
    """Kueue's and Volcano's queue objects by kind and name (LocalQueues by namespace and name)."""

    __slots__ = ("_by_kind", "default_namespace", "kueue", "origin", "volcano")

    def __init__(self, origin: str = OFFLINE, default_namespace: str = "default") -> None:
        self.origin = origin
        self.default_namespace = default_namespace
        self.kueue = False
        self.volcano = False
        self._by_kind: dict[str, dict[str, Mapping[str, Any]]] = {kind: {} for kind in (*KUEUE_KINDS, "Queue")}

    def add(self, obj: Mapping[str, Any]) -> bool:
        """Take one object of a kind this store holds (True), or ignore it (False)."""
        kind = self._kind_of(obj)
        found = _name_namespace(obj) if kind else None
        if kind is None or found is None:
            return False
        name, namespace = found
        if kind == "LocalQueue":
            name = f"{namespace or self.default_namespace}/{name}"
        table = dict(self._by_kind[kind])  # a new dict per change: a review reading the old one is not disturbed
        table[name] = obj
        self._by_kind[kind] = table
        if kind == VOLCANO_QUEUE_KIND:
            self.volcano = True
        else:
            self.kueue = True
        return True

    def remove(self, obj: Mapping[str, Any]) -> None:
        kind = self._kind_of(obj)
        found = _name_namespace(obj) if kind else None
        if kind is None or found is None:
            return
        name, namespace = found
        if kind == "LocalQueue":
            name = f"{namespace or self.default_namespace}/{name}"
        table = dict(self._by_kind[kind])
        table.pop(name, None)
        self._by_kind[kind] = table

    @staticmethod
    def _kind_of(obj: Mapping[str, Any]) -> str | None:
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            return None
        group, _, version = api_version.rpartition("/")
        if group == KUEUE_GROUP and kind in KUEUE_KINDS and version in KUEUE_VERSIONS:
            return kind
        if group == VOLCANO_QUEUE_GROUP and kind == VOLCANO_QUEUE_KIND:
            return kind
        return None

    # --- reads ---------------------------------------------------------------------------------

    def local_queue(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self._by_kind["LocalQueue"].get(f"{namespace}/{name}")

    def cluster_queue(self, name: str) -> Mapping[str, Any] | None:
        return self._by_kind["ClusterQueue"].get(name)

    def resource_flavor(self, name: str) -> Mapping[str, Any] | None:
        return self._by_kind["ResourceFlavor"].get(name)

    def cohort(self, name: str) -> Mapping[str, Any] | None:
        return self._by_kind["Cohort"].get(name)

    def cluster_queues(self) -> Iterable[Mapping[str, Any]]:
        return self._by_kind["ClusterQueue"].values()

    def cohorts(self) -> Iterable[Mapping[str, Any]]:
        return self._by_kind["Cohort"].values()

    def local_queues(self) -> Iterable[Mapping[str, Any]]:
        return self._by_kind["LocalQueue"].values()

    def volcano_queue(self, name: str) -> Mapping[str, Any] | None:
        return self._by_kind["Queue"].get(name)

    def volcano_queues(self) -> Iterable[Mapping[str, Any]]:
        return self._by_kind["Queue"].values()


def queue_objects(objects: Iterable[Mapping[str, Any]], default_namespace: str = "default") -> QueueObjects:
    """A store over objects given at once (``--cluster-objects``, ``--queues``, tests)."""
    store = QueueObjects(OFFLINE, default_namespace)
    for obj in objects:
        store.add(obj)
    return store
