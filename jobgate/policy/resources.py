"""The API resources the policies live in, and the namespaces their selectors read: one definition
for the webhook's caches, the controller's audit and ``jobgate policy explain``."""

from __future__ import annotations

from jobgate.kube.client import Resource
from jobgate.policy.models import GROUP, VERSION

CLUSTER_POLICIES = Resource(GROUP, VERSION, "clustertrainingjobpolicies", namespaced=False)
POLICIES = Resource(GROUP, VERSION, "trainingjobpolicies", namespaced=True)
EXCEPTIONS = Resource(GROUP, VERSION, "trainingjobpolicyexceptions", namespaced=True)
NAMESPACES = Resource("", "v1", "namespaces", namespaced=False)
