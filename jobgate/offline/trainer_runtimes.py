"""Runtimes written beside the TrainJobs that use them, in the same file: ``jobgate validate`` judges a
TrainJob against them as against ``--cluster-objects`` (those given beside win)."""

from __future__ import annotations

from jobgate.families.trainer.rules.runtimes import (
    OFFLINE_HINT,
    RuntimeSnapshot,
    is_jobset,
    is_priority_class,
    is_runtime,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from jobgate.engine.views import ClusterViews


class LayeredRuntimes:
    """The runtimes of a file first, then the view the command was given (if any)."""

    __slots__ = ("beside", "given", "offline_hint")

    def __init__(self, beside: RuntimeSnapshot, given: Any) -> None:
        self.beside = beside
        self.given = given
        self.offline_hint = OFFLINE_HINT

    def runtime(self, kind: str, namespace: str | None, name: str) -> Mapping[str, Any] | None:
        found = self.beside.runtime(kind, namespace, name)
        if found is None and self.given is not None:
            found = self.given.runtime(kind, namespace, name)
        return found

    def jobset(self, namespace: str | None, name: str) -> Mapping[str, Any] | None:
        found = self.beside.jobset(namespace, name)
        if found is None and self.given is not None and hasattr(self.given, "jobset"):
            found = self.given.jobset(namespace, name)
        return found

    def priority_class(self, name: str) -> Mapping[str, Any] | None:
        found = self.beside.priority_class(name)
        if found is None and self.given is not None and hasattr(self.given, "priority_class"):
            found = self.given.priority_class(name)
        return found


def with_runtimes_beside(text: str, source: str, views: ClusterViews | None) -> ClusterViews | None:
    """``views`` with the runtimes of this file's documents added; ``views`` itself when it has none."""
    from jobgate.offline.beside import objects_beside, with_view

    beside = RuntimeSnapshot((), views.default_namespace if views is not None else "default", OFFLINE_HINT)
    for obj in objects_beside(text, source, lambda obj: is_runtime(obj) or is_jobset(obj) or is_priority_class(obj)):
        beside.add(obj)
    if not len(beside):
        return views
    return with_view(views, "runtimes", LayeredRuntimes(beside, views.runtimes if views is not None else None))
