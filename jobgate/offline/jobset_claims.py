"""PersistentVolumeClaims written beside the JobSets whose claim templates name them, in the same file:
``jobgate validate`` checks a JobSet's existing PVCs against them as against ``--cluster-objects``
(those given beside win)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from jobgate.engine.views import ClusterViews


def with_claims_beside(text: str, source: str, views: ClusterViews | None) -> ClusterViews | None:
    """``views`` with the PVCs of this file's documents added; ``views`` itself when it has none."""
    from jobgate.engine.views import ClusterViews
    from jobgate.families.jobset.rules.claims import ClaimSnapshot, LayeredClaims, is_claim
    from jobgate.offline.cluster_objects import unwrap
    from jobgate.offline.sources import SourceError, iter_documents

    default_namespace = views.default_namespace if views is not None else "default"
    beside = ClaimSnapshot((), default_namespace)
    try:
        for document in iter_documents(text, source):
            for obj, _ in unwrap(document.data):
                if is_claim(obj):
                    beside.add(obj)
    except (SourceError, RecursionError):
        pass  # the check proper reports the file's problem
    if not len(beside):
        return views
    layered = ClusterViews(default_namespace=default_namespace)
    if views is not None:
        for slot in ClusterViews.__slots__:
            setattr(layered, slot, getattr(views, slot))
    layered.claims = LayeredClaims(beside, views.claims if views is not None else None)
    return layered
