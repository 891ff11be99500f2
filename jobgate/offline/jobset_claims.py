"""PersistentVolumeClaims written beside the JobSets whose claim templates name them, in the same file:
``jobgate validate`` checks a JobSet's existing PVCs against them as against ``--cluster-objects``
(those given beside win)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from jobgate.engine.views import ClusterViews


def with_claims_beside(text: str, source: str, views: ClusterViews | None) -> ClusterViews | None:
    """``views`` with the PVCs of this file's documents added; ``views`` itself when it has none."""
    from jobgate.families.jobset.rules.claims import ClaimSnapshot, LayeredClaims, is_claim
    from jobgate.offline.beside import objects_beside, with_view

    beside = ClaimSnapshot((), views.default_namespace if views is not None else "default")
    for obj in objects_beside(text, source, is_claim):
        beside.add(obj)
    if not len(beside):
        return views
    return with_view(views, "claims", LayeredClaims(beside, views.claims if views is not None else None))
