"""What an UPDATE of a Volcano Job may change (Volcano's ``validateJobUpdate``).

Only ``minAvailable``, ``priorityClassName`` and each task's ``replicas`` and ``minAvailable``
may change; the new counts must still add up, and the partition policies and network
topologies still hold. Every changed field is reported, not only the first.
"""

from __future__ import annotations

from jobgate._generated.declared import volcano as declared_rules
from jobgate.engine.fielderrors import FieldError, FieldPath, invalid
from jobgate.families.volcano.rules.tasks import (
    COUNTS,
    TASK_MIN_AVAILABLE,
    job_tasks,
    job_topology_errors,
    partition_errors,
    task_name,
)
from jobgate.rules.dicts import as_int
from jobgate.rules.jobmeta import job_name

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

UPDATE_FORBIDDEN = (
    "job updates may not change fields other than `minAvailable`, `tasks[*].replicas under spec` and "
    "`PriorityClassName`"
)


def update_errors(obj: dict[str, Any], old: dict[str, Any], spec: dict[str, Any] | None) -> Iterator[FieldError]:
    if spec is None:
        return
    old_spec = old.get("spec") if isinstance(old.get("spec"), dict) else {}
    assert isinstance(old_spec, dict)
    job = job_name(obj)
    for index, task in job_tasks(spec):
        path: FieldPath = ("spec", "tasks", index)
        name = task_name(task)
        replicas = as_int(task.get("replicas")) or 0
        min_available = as_int(task.get("minAvailable"))
        if replicas < 0:
            yield invalid((*path, "replicas"), replicas, f"'replicas' must be >= 0 in task: {name}", COUNTS)
        if min_available is not None and min_available < 0:
            yield invalid(
                (*path, "minAvailable"), min_available, f"'minAvailable' must be >= 0 in task: {name}", COUNTS
            )
        elif min_available is not None and min_available > replicas:
            yield invalid(
                (*path, "minAvailable"),
                min_available,
                f"'minAvailable' must be <= 'replicas' in task: {name}",
                TASK_MIN_AVAILABLE,
            )
        yield from partition_errors(task, path, name=name, job=job, replicas=replicas, min_available=min_available)
    # minAvailable at most the tasks' replicas, declared in declared.py.
    yield from declared_rules.validate_job_batch_volcano_sh(obj, old, ("volcano/min-available",))
    job_min = as_int(spec.get("minAvailable"))
    if job_min is not None and job_min < 0:
        yield invalid(("spec", "minAvailable"), job_min, "job 'minAvailable' must be >= 0", COUNTS)
    yield from job_topology_errors(spec)

    # The number of tasks, then every other field an UPDATE may not change: declared.
    yield from declared_rules.validate_job_batch_volcano_sh(
        obj, old, ("volcano/update/task-count", "volcano/update/immutable")
    )
