"""The cluster's PersistentVolumeClaims for JobSet's check of existing PVCs: each read from the API by
name, when a JobSet with claim templates is reviewed (CREATE only), as JobSet's webhook reads them.

No informer: a cache of every PVC of the cluster would cost the webhook memory and a watch for the
rare JobSet that has claim templates. The read is made in the review, as a Trainer runtime's read on
a cache miss is, with a short timeout. A read that fails for another reason than "not found" refuses
the JobSet as JobSet's webhook does (``Internal error: failed to check for existing PVC ...``).
"""

from __future__ import annotations

import logging
from typing import Any

from jobgate.engine.views import ClusterViews
from jobgate.families.jobset.rules.claims import ClaimLookupError
from jobgate.kube.client import ApiError, Kube, Resource

log = logging.getLogger("jobgate.jobset")

CLAIMS = Resource("", "v1", "persistentvolumeclaims", namespaced=True)
# The review waits for the read: short enough to answer within the apiserver's webhook timeout (10 s by
# default) with JobSet's "failed to check" error rather than be timed out.
READ_TIMEOUT_SECONDS = 4.0


class ClaimReader:
    """``ClaimView`` over the API: a GET of one PVC by namespace and name."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube

    def claim(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            path = CLAIMS.path(namespace=namespace, name=name)
            found: dict[str, Any] = self.kube.request("GET", path, timeout=READ_TIMEOUT_SECONDS)
            return found
        except ApiError as exc:
            if exc.status == 404:
                return None
            log.warning("jobset: reading PVC %s/%s failed (%s)", namespace, name, exc)
            # The apiserver's own words, as JobSet's client error would carry them.
            raise ClaimLookupError(exc.body.get("message") or str(exc)) from exc
        except Exception as exc:  # an unreachable API: JobSet's webhook refuses the JobSet too
            log.warning("jobset: reading PVC %s/%s failed (%s)", namespace, name, exc)
            raise ClaimLookupError(str(exc)) from exc


def start_claim_reader(kube: Kube | None, views: ClusterViews) -> ClaimReader | None:
    """Put the API reader into ``views``; without a cluster, none (JobSets are admitted with a warning
    that existing PVCs were not checked, as offline without PVCs)."""
    if kube is None:
        log.info("jobset: no cluster: existing PVCs of JobSets' claim templates are not checked")
        return None
    views.claims = ClaimReader(kube)
    return views.claims
