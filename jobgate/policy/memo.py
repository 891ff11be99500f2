"""What a ``PolicySet`` remembers of its resolutions, looked up by every review.

Apart from ``resolve`` so that the compiled build compiles it (``resolve.PolicySet`` subclasses
``tuple``, which mypyc cannot compile natively): every review looks it up, and interpreted it
cost a compiled review more than the rest of its policy plumbing together.
"""

from __future__ import annotations

from collections.abc import Mapping

from jobgate.policy.kinds import kind_map

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable, Hashable
    from typing import Any

    from jobgate.policy.fieldmap import KindMap

    # What is resolved and remembered: resolve's EffectivePolicy (Any here: resolve imports this module).
    Resolver = Callable[[str, Mapping[str, str] | None, Mapping[str, Any] | None], Any]

# A label a selector reads that the object does not have (a value no label can hold).
ABSENT: Any = object()


def labels_key(labels: object, keys: tuple[str, ...] | None) -> Hashable:
    """What selectors reading ``keys`` see of ``labels`` (``keys`` None: all of them)."""
    if not isinstance(labels, dict):
        if not isinstance(labels, Mapping):
            return None
        labels = dict(labels)  # never a review's (parsed JSON), and read as one below
    if keys is None:
        return frozenset(labels.items())
    if len(keys) == 1:
        return labels.get(keys[0], ABSENT)
    if not keys:  # no selector reads a label (no policy at all, say): without building an empty list
        return ()
    return tuple([labels.get(key, ABSENT) for key in keys])


def match_key(job: object, keys: tuple[str, ...] | None) -> Hashable:
    """What ``spec.match`` reads of a job: its kind (families and kinds) and its labels (objectSelector)."""
    job = _as_dict(job)
    if job is None:
        return None
    return (job.get("apiVersion"), job.get("kind"), labels_key(_labels(job), keys))


def _as_dict(job: object) -> dict[str, Any] | None:
    if isinstance(job, dict):
        return job
    return dict(job) if isinstance(job, Mapping) else None  # never a review's (parsed JSON)


def _labels(job: dict[str, Any]) -> object:
    metadata = job.get("metadata")
    if isinstance(metadata, dict):  # before the ABC check, and so that the compiled get is a dict's
        return metadata.get("labels")
    return metadata.get("labels") if isinstance(metadata, Mapping) else None


def remember(memo: dict[Any, Any], key: Any, value: Any, limit: int) -> None:
    """``memo[key] = value``, the memo emptied first when it holds ``limit`` entries."""
    if len(memo) >= limit:
        memo.clear()
    memo[key] = value


class Resolution:
    """What the memo holds for a key: its effective policy (``resolve``'s), the field map of the job's
    kind (the key holds the job's apiVersion and kind, all ``kind_map`` reads), and ``plan``, what the
    checks make of the two, left to them to fill (``jobgate.policy.check.resolved_plan``). A review
    looks up this one object and reads the three without another lookup."""

    __slots__ = ("effective", "kmap", "plan")

    def __init__(self, effective: Any, kmap: KindMap | None) -> None:
        self.effective = effective
        self.kmap = kmap
        self.plan: Any = None


class ResolutionMemo:
    """Each (namespace, the namespace labels and job labels selectors read, the job's kind) resolved
    once by ``resolve``; ``resolve_afresh`` (never remembered) serves keys that cannot be hashed
    (a label value that is no string: a malformed job)."""

    def __init__(
        self,
        namespace_keys: tuple[str, ...] | None,
        object_keys: tuple[str, ...] | None,
        resolve: Resolver,
        resolve_afresh: Resolver,
        limit: int,
    ) -> None:
        # The label keys the selectors read (None: every label, when a selector's shape is not plain).
        self.namespace_keys = namespace_keys
        self.object_keys = object_keys
        self.resolve = resolve
        self.resolve_afresh = resolve_afresh
        self.limit = limit
        self.entries: dict[Hashable, Resolution] = {}

    def effective(
        self, namespace: str, namespace_labels: Mapping[str, str] | None, job: Mapping[str, Any] | None
    ) -> Any:
        return self.resolution(namespace, namespace_labels, job).effective

    def resolution(
        self, namespace: str, namespace_labels: Mapping[str, str] | None, job: Mapping[str, Any] | None
    ) -> Resolution:
        as_dict = _as_dict(job)
        try:
            # One flat tuple (no match_key inside): a nested one costs every review a second
            # allocation, hash and comparison.
            if as_dict is None:
                key: Hashable = (namespace, labels_key(namespace_labels, self.namespace_keys))
            else:
                key = (
                    namespace,
                    labels_key(namespace_labels, self.namespace_keys),
                    as_dict.get("apiVersion"),
                    as_dict.get("kind"),
                    labels_key(_labels(as_dict), self.object_keys),
                )
            found = self.entries.get(key)
        except TypeError:
            kmap = kind_map(as_dict) if as_dict is not None else None
            return Resolution(self.resolve_afresh(namespace, namespace_labels, job), kmap)
        if found is None:
            kmap = kind_map(as_dict) if as_dict is not None else None
            found = Resolution(self.resolve(namespace, namespace_labels, job), kmap)
            remember(self.entries, key, found, self.limit)
        return found

    def selects_alike(self, job: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
        """Whether two versions of one job in one namespace select the same policies: the same
        apiVersion and kind, and the same values of the labels the objectSelectors read."""
        keys = self.object_keys
        return bool(match_key(job, keys) == match_key(other, keys))
