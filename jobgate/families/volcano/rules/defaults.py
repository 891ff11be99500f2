"""The defaults of Volcano's mutating webhook (``mutate_job.go``) and CRD for its Job.

Explicit zeros: like Volcano's webhook, job ``maxRetry: 0``, job ``minAvailable: 0`` and task
``maxRetry: 0`` count as unset and are defaulted (Volcano's Go fields cannot tell 0 from
absent); task ``minAvailable: 0`` is kept, as it is a pointer there.
"""

from __future__ import annotations

from jobgate._generated import declared_rules
from jobgate.engine.jsonpatch import PatchRecorder
from jobgate.rules.declared import json_count
from jobgate.rules.dicts import copied_dict
from jobgate.rules.jobmeta import as_int

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any

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


# The declared defaults (``declared.py``), in the webhook's order around the two written here (a task's
# dnsPolicy and minAvailable): the job's fields and the tasks' names first; then the tasks' maxRetry
# (the last field a task gets), the job's minAvailable (the sum of the tasks') and the plugins the
# plugins imply. Each object comes out as it did, its keys in their order; the patch lists a field
# of every task before the next field (Volcano's, task by task: the same object).
FIRST_DEFAULTS = ("volcano/queue", "volcano/scheduler-name", "volcano/max-retry", "volcano/task-name")
LAST_DEFAULTS = ("volcano/task-max-retry", "volcano/min-available", "volcano/implied-plugins")


def _unset(value: Any) -> bool:
    return value is None or value == ""


def _zero_or_unset(value: Any) -> bool:
    return value is None or (as_int(value) == 0 and not isinstance(value, bool))


def default_task_min_available(task: dict[str, Any]) -> int | float:
    """minPartitions x partitionSize when minPartitions > 0, else replicas (Volcano >= 1.15)."""
    partition = task.get("partitionPolicy")
    if isinstance(partition, dict):
        min_partitions = as_int(partition.get("minPartitions")) or 0
        size = as_int(partition.get("partitionSize")) or 0
        if min_partitions > 0:
            return json_count(min_partitions * size)
    return json_count(as_int(task.get("replicas")) or 0)


def default_job(obj: dict[str, Any], recorder: PatchRecorder) -> dict[str, Any]:
    """The job as the mutating webhook stores it; ``obj`` itself is not modified."""
    if not isinstance(obj, dict) or not isinstance(obj.get("spec"), dict):
        return obj
    obj = declared_rules.default_job_batch_volcano_sh(obj, recorder, FIRST_DEFAULTS)
    spec = dict(obj["spec"])
    tasks = spec.get("tasks")
    if isinstance(tasks, list):
        defaulted_tasks = []
        for index, given in enumerate(tasks):
            task = given
            if isinstance(given, dict):
                task = dict(given)
                _default_task(task, index, recorder)
            defaulted_tasks.append(task)
        spec["tasks"] = defaulted_tasks
    return declared_rules.default_job_batch_volcano_sh({**obj, "spec": spec}, recorder, LAST_DEFAULTS)


def _default_task(task: dict[str, Any], index: int, recorder: PatchRecorder) -> None:
    pointer = f"/spec/tasks/{index}"
    template = copied_dict(task, "template")
    pod_spec = copied_dict(template, "spec") if template is not None else None
    if pod_spec is not None and pod_spec.get("hostNetwork") is True and _unset(pod_spec.get("dnsPolicy")):
        recorder.set(pod_spec, "dnsPolicy", HOST_NETWORK_DNS_POLICY, f"{pointer}/template/spec")
    if task.get("minAvailable") is None:
        recorder.set(task, "minAvailable", default_task_min_available(task), pointer)
