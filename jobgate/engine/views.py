"""Read-only views of cluster objects that a review's context offers the rules.

The webhook backs them with watch caches, ``jobgate validate`` with objects read from files
(``--queues``), tests with plain lists; the rules only ever call their read methods.
"""

from __future__ import annotations

from jobgate.engine.values import Value

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any, Protocol
else:
    # For type checkers only; at run time a plain base, so that checking a file imports no typing.
    Protocol = object


class QueueInfo(Value):
    """What the queue check needs of a ``scheduling.volcano.sh`` Queue."""

    FIELDS = ("name", "state", "child_count")
    __slots__ = FIELDS

    def __init__(self, name: str, state: str, child_count: int) -> None:
        self.name = name
        self.state = state
        self.child_count = child_count


class QueueView(Protocol):
    """Read-only view of the cluster's Queues (a watch-backed cache in the webhook)."""

    def queue(self, name: str) -> QueueInfo | None: ...


class QueueSnapshot:
    """A ``QueueView`` over Queue objects given at once (``jobgate validate --queues``, tests)."""

    def __init__(self, queues: list[Any]) -> None:
        self._by_name: dict[str, dict[str, Any]] = {}
        self._children: dict[str, int] = {}
        for obj in queues:
            metadata = obj.get("metadata") if isinstance(obj, dict) else None
            name = metadata.get("name") if isinstance(metadata, dict) else None
            if not isinstance(name, str):
                continue
            self._by_name[name] = obj
            spec = obj.get("spec")
            parent = spec.get("parent") if isinstance(spec, dict) else None
            if isinstance(parent, str) and parent:
                self._children[parent] = self._children.get(parent, 0) + 1

    def queue(self, name: str) -> QueueInfo | None:
        obj = self._by_name.get(name)
        if obj is None:
            return None
        status = obj.get("status")
        state = status.get("state") if isinstance(status, dict) else None
        return QueueInfo(name, state if isinstance(state, str) else "", self._children.get(name, 0))


class PolicyView(Protocol):
    """Read-only view of the platform policies and the namespaces' labels they select by.

    A view that may not know a namespace (objects given offline) also has ``knows_namespace(name)``;
    one without it (the webhook's, which watches every namespace) knows them all.
    """

    def policies(self) -> Sequence[Mapping[str, Any]]: ...

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None: ...


# The label the apiserver sets on every namespace (NamespaceDefaultLabelName, 1.21+).
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def namespace_labels(namespace: str, labels: Mapping[str, str] | None) -> dict[str, str]:
    """A namespace's labels as selectors see them: with the name label the apiserver always sets."""
    return {**(labels or {}), NAMESPACE_NAME_LABEL: namespace}


class DeviceView(Protocol):
    """Read-only view of the cluster's DRA objects (``resource.k8s.io/v1``) that GPU counting reads.

    Each read returns the object as stored (a plain mapping), or None when the view has no such
    object: the caller tells "not there" from "no view at all" by the view itself being None.
    """

    def claim_template(self, namespace: str, name: str) -> Mapping[str, Any] | None: ...

    def claim(self, namespace: str, name: str) -> Mapping[str, Any] | None: ...

    def device_class(self, name: str) -> Mapping[str, Any] | None: ...

    def extended_resource_classes(self) -> Mapping[str, str]:
        """Each DeviceClass's ``spec.extendedResourceName`` mapped to the class's name."""
        ...


# The kinds a DeviceView holds, by apiVersion group.
DRA_GROUP = "resource.k8s.io"
DRA_KINDS = ("ResourceClaimTemplate", "ResourceClaim", "DeviceClass")


class DeviceSnapshot:
    """A ``DeviceView`` over DRA objects given at once (``--cluster-objects``, tests).

    Objects of another kind, or without a name, are ignored; a namespaced object without a
    namespace is taken as in ``default_namespace`` (as kubectl would create it).
    """

    __slots__ = ("_claims", "_classes", "_extended", "_templates")

    def __init__(self, objects: Sequence[Mapping[str, Any]], default_namespace: str = "default") -> None:
        self._templates: dict[tuple[str, str], Mapping[str, Any]] = {}
        self._claims: dict[tuple[str, str], Mapping[str, Any]] = {}
        self._classes: dict[str, Mapping[str, Any]] = {}
        self._extended: dict[str, str] = {}
        for obj in objects:
            self.add(obj, default_namespace)

    def add(self, obj: Mapping[str, Any], default_namespace: str = "default") -> None:
        """Take one object (a DRA kind; anything else is ignored)."""
        metadata = obj.get("metadata")
        name = metadata.get("name") if isinstance(metadata, dict) else None
        if not isinstance(name, str) or not name:
            return
        kind = obj.get("kind")
        if kind == "DeviceClass":
            self._classes[name] = obj
            spec = obj.get("spec")
            extended = spec.get("extendedResourceName") if isinstance(spec, dict) else None
            if isinstance(extended, str) and extended:
                self._extended[extended] = name
            return
        namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
        key = (namespace if isinstance(namespace, str) and namespace else default_namespace, name)
        if kind == "ResourceClaimTemplate":
            self._templates[key] = obj
        elif kind == "ResourceClaim":
            self._claims[key] = obj

    def claim_template(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self._templates.get((namespace, name))

    def claim(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self._claims.get((namespace, name))

    def device_class(self, name: str) -> Mapping[str, Any] | None:
        return self._classes.get(name)

    def extended_resource_classes(self) -> Mapping[str, str]:
        return self._extended


class ClusterViews:
    """The views a transport holds for its reviews, each None until it has one.

    Owned by the transport (the webhook server's state, a ``jobgate validate`` run), which fills it
    as its caches sync; each review copies what it needs into its ``ReviewContext``.
    """

    __slots__ = (
        "claims",
        "default_namespace",
        "devices",
        "exceptions",
        "feature_gates",
        "policies",
        "queue_objects",
        "queues",
        "runtimes",
    )

    def __init__(
        self,
        queues: QueueView | None = None,
        policies: PolicyView | None = None,
        default_namespace: str = "default",
        devices: DeviceView | None = None,
    ) -> None:
        self.queues = queues
        self.policies = policies
        # DRA objects (claim templates, claims, device classes) that GPU counting reads.
        self.devices = devices
        # Kueue's and Volcano's queue objects that require.fitsQueue reads (jobgate.policy.queueobjects).
        self.queue_objects: Any = None
        # TrainingJobPolicyExceptions (jobgate.policy.exceptions.ExceptionSnapshot, or the webhook's cache).
        self.exceptions: Any = None
        # Kubeflow Trainer's runtimes (jobgate.families.trainer.views.RuntimeView) TrainJobs are judged against.
        self.runtimes: Any = None
        # PersistentVolumeClaims JobSet's check of existing PVCs reads (jobgate.families.jobset.rules.claims).
        self.claims: Any = None
        # The namespace of a job that names none (offline: kubectl's, ``--namespace``).
        self.default_namespace = default_namespace
        # The enabled feature gates of the peers' webhooks (``--jobset-feature-gates``).
        self.feature_gates: frozenset[str] = frozenset()
