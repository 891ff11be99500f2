"""Cluster objects written in the same file as the jobs that use them (runtimes beside TrainJobs, PVCs
beside JobSets): read from the file's documents and laid over the views the command was given."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    from jobgate.engine.views import ClusterViews


def objects_beside(text: str, source: str, wanted: Callable[[Any], bool]) -> Iterator[dict[str, Any]]:
    """The file's objects (lists unwrapped) that ``wanted`` keeps; a file that cannot be read yields
    what came before the problem (the check proper reports it)."""
    from jobgate.offline.cluster_objects import unwrap
    from jobgate.offline.sources import SourceError, iter_documents

    try:
        for document in iter_documents(text, source):
            for obj, _ in unwrap(document.data):
                if wanted(obj):
                    yield obj
    except (SourceError, RecursionError):
        return


def with_view(views: ClusterViews | None, slot: str, view: Any) -> ClusterViews:
    """A copy of ``views`` (or empty views) whose ``slot`` is ``view``."""
    from jobgate.engine.views import ClusterViews

    layered = ClusterViews(default_namespace=views.default_namespace if views is not None else "default")
    if views is not None:
        for name in ClusterViews.__slots__:
            setattr(layered, name, getattr(views, name))
    setattr(layered, slot, view)
    return layered
