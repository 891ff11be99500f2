"""Exported cluster objects (``--cluster-objects FILE|DIR``), routed by apiVersion and kind to what
each check reads: Namespaces (their labels, for the policies' ``namespaceSelector``), the platform
policies, Volcano Queues, Kueue's queues (LocalQueues, ClusterQueues, ResourceFlavors, Cohorts, for
``require.fitsQueue``), the DRA objects GPU counting reads, and Kubeflow Trainer's TrainingRuntimes and
ClusterTrainingRuntimes, which a TrainJob is judged against, and PersistentVolumeClaims (JobSet's check
of existing PVCs).

One ``kubectl get namespaces,queues,resourceclaimtemplates,resourceclaims,deviceclasses,
clustertrainingjobpolicies,trainingjobpolicies -A -o yaml`` is all an offline check needs: a
``kind: List`` is unwrapped, and objects of any other kind are counted and ignored. Pure: the
objects come in with where they were read (:class:`Located`), routed sets come out; reading the
files is the command's business.
"""

from __future__ import annotations

from jobgate.engine.views import DRA_GROUP, DRA_KINDS
from jobgate.policy.queueobjects import KUEUE_GROUP, KUEUE_KINDS

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import Any, Protocol

    class Lines(Protocol):
        def line_of(self, path: Any) -> int: ...


NAMESPACE_KIND = "Namespace"
TRAINER_GROUP = "trainer.kubeflow.org"
TRAINER_RUNTIME_KINDS = ("TrainingRuntime", "ClusterTrainingRuntime")
JOBSET_GROUP = "jobset.x-k8s.io"
POLICY_GROUP = "policy.jobgate.io"
VOLCANO_QUEUE_GROUP = "scheduling.volcano.sh"
VOLCANO_QUEUE_KIND = "Queue"
# The DRA versions read: the GA API (Kubernetes 1.34+) and the two betas before it, whose shapes GPU
# counting knows (v1beta2 is v1's; v1beta1 has a request's fields on the request, without ``exactly``).
# An alpha export is not read: counting it by another version's shape would guess.
DRA_VERSIONS = ("v1", "v1beta2", "v1beta1")


class Located:
    """An object and where it was written: its file, its document (for lines) and its path in it
    (``("items", 3)`` inside a ``kind: List``)."""

    __slots__ = ("document", "obj", "prefix", "source")

    def __init__(self, obj: dict[str, Any], source: str, document: Lines | None = None, prefix: tuple[Any, ...] = ()):
        self.obj = obj
        self.source = source
        self.document = document
        self.prefix = prefix

    def line_of(self, path: Sequence[Any] = ()) -> int:
        """The line of ``path`` inside the object (0 when the document's lines are unknown)."""
        return self.document.line_of((*self.prefix, *path)) if self.document is not None else 0

    def where(self, path: Sequence[Any] = ()) -> str:
        """``FILE:LINE`` of ``path`` inside the object (``FILE`` alone when the line is unknown)."""
        line = self.line_of(path)
        return f"{self.source}:{line}" if line else self.source

    @property
    def title(self) -> str:
        """``Kind name`` (``Kind namespace/name``), as a finding names the object."""
        metadata = self.obj.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        name, namespace = metadata.get("name") or "?", metadata.get("namespace")
        return f"{self.obj.get('kind') or 'object'} {f'{namespace}/{name}' if namespace else name}"


def unwrap(data: Any) -> Iterator[tuple[dict[str, Any], tuple[Any, ...]]]:
    """The objects of one document with their path in it: a ``List`` (``kubectl get -o yaml``,
    ``NamespaceList``, ...) gives its items; anything that is no object gives nothing."""
    if isinstance(data, dict):
        items = data.get("items")
        if str(data.get("kind") or "").endswith("List") and isinstance(items, list):
            for index, item in enumerate(items):
                if isinstance(item, dict):
                    yield item, ("items", index)
            return
        yield data, ()


def group_version_kind(obj: dict[str, Any]) -> tuple[str, str, str]:
    """(group, version, kind) of an object; the core group is ""."""
    api_version = obj.get("apiVersion")
    kind = obj.get("kind")
    group, _, version = api_version.rpartition("/") if isinstance(api_version, str) else ("", "", "")
    return group, version, kind if isinstance(kind, str) else ""


def namespace_labels_of(obj: dict[str, Any]) -> tuple[str, dict[str, str]] | None:
    """A Namespace's name and labels (None when it has no name)."""
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not isinstance(name, str) or not name:
        return None
    labels = metadata.get("labels") if isinstance(metadata, dict) else None
    return name, {str(k): str(v) for k, v in (labels if isinstance(labels, dict) else {}).items()}


class Routed:
    """The cluster objects of a run, by what reads them."""

    __slots__ = (
        "claims",
        "devices",
        "ignored",
        "kueue",
        "namespaces",
        "policies",
        "queues",
        "runtimes",
        "unread_devices",
    )

    def __init__(self) -> None:
        self.namespaces: dict[str, dict[str, str]] = {}  # name -> labels
        self.policies: list[Located] = []  # checked by the command as --policies checks them
        self.queues: list[dict[str, Any]] = []
        self.devices: list[dict[str, Any]] = []  # resource.k8s.io claim templates, claims, device classes
        self.kueue: list[dict[str, Any]] = []  # LocalQueues, ClusterQueues, ResourceFlavors, Cohorts (fitsQueue)
        self.runtimes: list[dict[str, Any]] = []  # Kubeflow Trainer's (Cluster)TrainingRuntimes, for TrainJobs
        self.claims: list[dict[str, Any]] = []  # PersistentVolumeClaims, for JobSet's check of existing PVCs
        # "apiVersion kind" -> count, of the objects no check reads.
        self.ignored: dict[str, int] = {}
        # "apiVersion kind" -> count, of DRA objects of a version other than the one read.
        self.unread_devices: dict[str, int] = {}

    def add(self, located: Located) -> None:
        """Route one object by its apiVersion and kind."""
        obj = located.obj
        group, version, kind = group_version_kind(obj)
        # A hand-written Namespace may lack its apiVersion (--namespaces has always read those).
        if kind == NAMESPACE_KIND and obj.get("apiVersion") in (None, "v1"):
            found = namespace_labels_of(obj)
            if found is not None:
                self.namespaces[found[0]] = found[1]
                return
        elif group == POLICY_GROUP:
            self.policies.append(located)  # any kind of the group: the policy check says what it does not know
            return
        elif group == VOLCANO_QUEUE_GROUP and kind == VOLCANO_QUEUE_KIND:
            self.queues.append(obj)
            return
        elif group == KUEUE_GROUP and kind in KUEUE_KINDS:
            self.kueue.append(obj)
            return
        elif (
            (group == TRAINER_GROUP and kind in TRAINER_RUNTIME_KINDS)
            or (group == JOBSET_GROUP and kind == "JobSet")
            or (group == "scheduling.k8s.io" and kind == "PriorityClass")
        ):
            # A JobSet: a TrainJob's child, whose active jobs freeze its patches; a PriorityClass: named by
            # a Volcano runtime's pods.
            self.runtimes.append(obj)
            return
        elif kind == "PersistentVolumeClaim" and obj.get("apiVersion") == "v1":
            self.claims.append(obj)
            return
        elif group == DRA_GROUP and kind in DRA_KINDS:
            if version in DRA_VERSIONS:
                self.devices.append(obj)
            else:
                key = f"{group}/{version} {kind}"
                self.unread_devices[key] = self.unread_devices.get(key, 0) + 1
            return
        key = f"{obj.get('apiVersion') or '(no apiVersion)'} {kind or '(no kind)'}"
        self.ignored[key] = self.ignored.get(key, 0) + 1

    def notes(self) -> list[str]:
        """What the command says of the objects it did not read (empty when it read them all)."""
        out: list[str] = []
        if self.unread_devices:
            shown = ", ".join(f"{count} {key}" for key, count in sorted(self.unread_devices.items()))
            out.append(
                f"not read: {shown}: {DRA_GROUP} is read in versions {', '.join(DRA_VERSIONS)} "
                "(`kubectl get` of a 1.34+ cluster prints v1), so GPUs claimed through these cannot be counted"
            )
        if self.ignored:
            total = sum(self.ignored.values())
            shown = ", ".join(f"{key} ×{count}" for key, count in sorted(self.ignored.items()))
            out.append(f"ignored {total} object{'s' if total != 1 else ''} of other kinds ({shown})")
        return out


def route(objects: Sequence[Located], into: Routed | None = None) -> Routed:
    """Route ``objects`` (into ``into``, or a new set)."""
    routed = Routed() if into is None else into
    for located in objects:
        routed.add(located)
    return routed
