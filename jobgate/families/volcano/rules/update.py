"""What an UPDATE of a Volcano Job may change (Volcano's ``validateJobUpdate``).

Only ``minAvailable``, ``priorityClassName`` and each task's ``replicas`` and ``minAvailable``
may change; the new counts must still add up, and the partition policies and network
topologies still hold. Every changed field is reported, not only the first.
"""

from __future__ import annotations

from jobgate._generated import declared_rules
from jobgate.engine.fielderrors import FieldError, FieldPath, forbidden, invalid
from jobgate.families.volcano.rules.tasks import (
    job_tasks,
    network_topology_errors,
    partition_errors,
    task_name,
)
from jobgate.rules.jobmeta import as_int, job_name

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
            yield invalid((*path, "replicas"), replicas, f"'replicas' must be >= 0 in task: {name}")
        if min_available is not None and min_available < 0:
            yield invalid((*path, "minAvailable"), min_available, f"'minAvailable' must be >= 0 in task: {name}")
        elif min_available is not None and min_available > replicas:
            yield invalid(
                (*path, "minAvailable"), min_available, f"'minAvailable' must be <= 'replicas' in task: {name}"
            )
        yield from partition_errors(task, path, name=name, job=job, replicas=replicas, min_available=min_available)
    # minAvailable at most the tasks' replicas, declared in declared.py.
    yield from declared_rules.validate_job_batch_volcano_sh(obj, old, ("volcano/min-available",))
    job_min = as_int(spec.get("minAvailable"))
    if job_min is not None and job_min < 0:
        yield invalid(("spec", "minAvailable"), job_min, "job 'minAvailable' must be >= 0")
    yield from network_topology_errors(spec.get("networkTopology"), ("spec", "networkTopology"))

    new_tasks, old_tasks = spec.get("tasks"), old_spec.get("tasks")
    new_count = len(new_tasks) if isinstance(new_tasks, list) else 0
    old_count = len(old_tasks) if isinstance(old_tasks, list) else 0
    yield from declared_rules.validate_job_batch_volcano_sh(obj, old, ("volcano/update/task-count",))
    for changed in _changed_paths(_immutable_view(old_spec), _immutable_view(spec), ("spec",)):
        if changed[:2] == ("spec", "tasks") and new_count != old_count:
            continue  # already reported: the task lists cannot be compared entry by entry
        yield forbidden(changed, UPDATE_FORBIDDEN)


_MUTABLE_SPEC_FIELDS = ("minAvailable", "priorityClassName")
_MUTABLE_TASK_FIELDS = ("replicas", "minAvailable")


def _immutable_view(spec: dict[str, Any]) -> Any:
    """The spec without the fields an UPDATE may change, nil and empty treated alike (Semantic.DeepEqual)."""
    view = {k: v for k, v in spec.items() if k not in _MUTABLE_SPEC_FIELDS}
    tasks = view.get("tasks")
    if isinstance(tasks, list):
        view["tasks"] = [
            {k: v for k, v in t.items() if k not in _MUTABLE_TASK_FIELDS} if isinstance(t, dict) else t for t in tasks
        ]
    volumes = view.get("volumes")
    if isinstance(volumes, list):
        # The controller writes the name of the claim it created: not a user change.
        view["volumes"] = [
            {k: v for k, v in vol.items() if k != "volumeClaimName"}
            if isinstance(vol, dict) and vol.get("volumeClaim") is not None
            else vol
            for vol in volumes
        ]
    return _semantic(view)


# Go maps among the spec's fields: a key with an empty value differs from no key (unlike a struct field).
_MAP_FIELDS = frozenset({"plugins", "labels", "annotations", "nodeSelector", "requests", "limits"})


def _semantic(value: Any, *, is_map: bool = False) -> Any:
    if isinstance(value, dict):
        cleaned = {k: _semantic(v, is_map=k in _MAP_FIELDS) for k, v in value.items()}
        if is_map:
            return {k: v for k, v in cleaned.items() if v is not None}
        return {k: v for k, v in cleaned.items() if v is not None and v not in ({}, [])}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def _changed_paths(old: Any, new: Any, path: FieldPath) -> Iterator[FieldPath]:
    """Where ``new`` differs from ``old``: object keys and list entries down to two levels below spec."""
    if old == new:
        return
    depth = len(path)
    if isinstance(old, dict) and isinstance(new, dict) and depth <= 3:
        for key in list(old) + [k for k in new if k not in old]:
            yield from _changed_paths(old.get(key), new.get(key), (*path, key))
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new) and depth <= 3:
        for index, (before, after) in enumerate(zip(old, new, strict=True)):
            yield from _changed_paths(before, after, (*path, index))
    else:
        yield path
