"""The defaults of Volcano's mutating webhook (``mutate_job.go``) and CRD for its Job.

Explicit zeros: like Volcano's webhook, job ``maxRetry: 0``, job ``minAvailable: 0`` and task
``maxRetry: 0`` count as unset and are defaulted (Volcano's Go fields cannot tell 0 from
absent); task ``minAvailable: 0`` is kept, as it is a pointer there.
"""

from __future__ import annotations

import sys

from jobgate._generated import declared_rules
from jobgate.engine.jsonpatch import PatchRecorder
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


# The declared defaults (``declared.py``), each run where the webhook sets it: the job's first, the
# tasks' maxRetry (the last field each task gets) after the tasks' other defaults.
SPEC_DEFAULTS = ("volcano/queue", "volcano/scheduler-name", "volcano/max-retry")
TASK_DEFAULTS = ("volcano/task-max-retry",)


def _unset(value: Any) -> bool:
    return value is None or value == ""


def _zero_or_unset(value: Any) -> bool:
    return value is None or (as_int(value) == 0 and not isinstance(value, bool))


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_FLOAT_MAX = int(sys.float_info.max)


def json_count(value: int) -> int | float:
    """A computed count as the apiserver's JSON carries it: beyond int64 only as a float.

    A replicas of 1e20 arrives as an integral float; a default copied from it (or summed over
    it) must stay writable in the patch, and /validate then reports it like the replicas.
    """
    if _INT64_MIN <= value <= _INT64_MAX:
        return value
    # A product of two such floats can pass even the float range: the largest float stands for it.
    if abs(value) <= _FLOAT_MAX:
        return float(value)
    return sys.float_info.max if value > 0 else -sys.float_info.max


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
    obj = declared_rules.default_job_batch_volcano_sh(obj, recorder, SPEC_DEFAULTS)
    spec = dict(obj["spec"])

    tasks = spec.get("tasks")
    task_min_sum = 0
    if isinstance(tasks, list):
        defaulted_tasks = []
        for index, given in enumerate(tasks):
            task = given
            if isinstance(given, dict):
                task = dict(given)
                _default_task(task, index, recorder)
                task_min_sum += as_int(task.get("minAvailable")) or 0
            defaulted_tasks.append(task)
        spec["tasks"] = defaulted_tasks
        # Each task's maxRetry (declared), the last field the webhook gives a task: the tasks come out
        # as they did, their patches after the others of the tasks.
        spec = declared_rules.default_job_batch_volcano_sh({**obj, "spec": spec}, recorder, TASK_DEFAULTS)["spec"]
    given_min = spec.get("minAvailable")
    if isinstance(tasks, list) and _zero_or_unset(given_min) and given_min != task_min_sum:
        recorder.set(spec, "minAvailable", json_count(task_min_sum), "/spec")

    plugins = spec.get("plugins")
    if isinstance(plugins, dict):
        plugins = dict(plugins)
        for framework, needed in IMPLIED_PLUGINS.items():
            if framework in plugins:
                for plugin in needed:
                    if plugin not in plugins:
                        recorder.set(plugins, plugin, [], "/spec/plugins")
        spec["plugins"] = plugins
    return {**obj, "spec": spec}


def _default_task(task: dict[str, Any], index: int, recorder: PatchRecorder) -> None:
    pointer = f"/spec/tasks/{index}"
    if _unset(task.get("name")):
        recorder.set(task, "name", f"{DEFAULT_TASK_PREFIX}{index}", pointer)
    template = copied_dict(task, "template")
    pod_spec = copied_dict(template, "spec") if template is not None else None
    if pod_spec is not None and pod_spec.get("hostNetwork") is True and _unset(pod_spec.get("dnsPolicy")):
        recorder.set(pod_spec, "dnsPolicy", HOST_NETWORK_DNS_POLICY, f"{pointer}/template/spec")
    if task.get("minAvailable") is None:
        recorder.set(task, "minAvailable", default_task_min_available(task), pointer)
