"""The defaults of Volcano's mutating webhook (``mutate_job.go``) and CRD for its Job.

Explicit zeros: like Volcano's webhook, job ``maxRetry: 0``, job ``minAvailable: 0`` and task
``maxRetry: 0`` count as unset and are defaulted (Volcano's Go fields cannot tell 0 from
absent); task ``minAvailable: 0`` is kept, as it is a pointer there.
"""

from __future__ import annotations

from jobgate._generated.declared import volcano as declared_rules

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any

    from jobgate.engine.jsonpatch import PatchRecorder

DEFAULT_QUEUE = "default"
DEFAULT_SCHEDULER = "volcano"
DEFAULT_MAX_RETRY = 3
DEFAULT_TASK_PREFIX = "default"
HOST_NETWORK_DNS_POLICY = "ClusterFirstWithHostNet"
# Framework plugins and the plugins their pods need (Volcano's mutate_job.go).
IMPLIED_PLUGINS: dict[str, tuple[str, ...]] = {
    "tensorflow": ("svc",),
    "pytorch": ("svc",),
    "ray": ("svc",),
    "mpi": ("svc", "ssh"),
}


def default_job(obj: dict[str, Any], recorder: PatchRecorder) -> dict[str, Any]:
    """The job as the mutating webhook stores it (every default is declared: ``declared.py``, in the
    webhook's order); ``obj`` itself is not modified."""
    if not isinstance(obj, dict) or not isinstance(obj.get("spec"), dict):
        return obj
    return declared_rules.default_job_batch_volcano_sh(obj, recorder)
