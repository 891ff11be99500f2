"""What the Volcano rule modules share: the task list as they read it, the rules CREATE and
UPDATE both run, and how a sentence of an older Volcano release is quoted (``LEGACY``).

Volcano's webhook checks a task's partition policy and the job's and partitions' network
topologies on both operations (``util.go``); the other rules are in ``job`` (CREATE) and
``update`` (UPDATE).
"""

from __future__ import annotations

from jobgate._generated.declared import volcano as declared_rules
from jobgate.engine.fielderrors import FieldError, FieldPath, invalid
from jobgate.rules.dicts import as_int

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

TIER_CONFLICT = "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously"
# Older Volcano releases worded several messages differently; their users' scripts may grep for the old
# words, so the detail carries them too, after the current wording, as "(before Volcano X: ...)".
LEGACY = "before Volcano"
# The ids of the hand-written rules that CREATE and UPDATE share (jobgate/families/volcano/cel/), which
# their errors carry.
PARTITION = "volcano/partition"
COUNTS = "volcano/counts"
TASK_MIN_AVAILABLE = "volcano/task-min-available"


def job_tasks(spec: dict[str, Any] | None) -> list[tuple[int, dict[str, Any]]]:
    tasks = spec.get("tasks") if spec is not None else None
    if not isinstance(tasks, list):
        return []
    return [(i, t) for i, t in enumerate(tasks) if isinstance(t, dict)]


def task_view(index: int, task: Any) -> dict[str, Any]:
    """A view of the job that holds one task, at its index: a declared rule checked on it reports that
    task's errors alone, at their paths, where Volcano's loop over the tasks reports them."""
    return {"spec": {"tasks": [None] * index + [task]}}


def declared_in(view: dict[str, Any], rule_id: str) -> list[FieldError]:
    """A rule declared in ``declared.py`` over ``view`` (the job, or part of it), where Volcano checks it."""
    return declared_rules.validate_job_batch_volcano_sh(view, None, (rule_id,))


def job_topology_errors(spec: dict[str, Any]) -> list[FieldError]:
    """The job's network topology (declared: ``volcano/network-topology``), not its tasks' partitions'."""
    return declared_in({"spec": {"networkTopology": spec.get("networkTopology")}}, "volcano/network-topology")


def task_name(task: dict[str, Any]) -> str:
    name = task.get("name")
    return name if isinstance(name, str) else ""


def partition_errors(
    task: dict[str, Any], path: FieldPath, *, name: str, job: str, replicas: int, min_available: int | None
) -> Iterator[FieldError]:
    partition = task.get("partitionPolicy")
    if not isinstance(partition, dict):
        return
    where = f"in task: {name}, job: {job}"
    partition_path = (*path, "partitionPolicy")
    total = as_int(partition.get("totalPartitions")) or 0
    size = as_int(partition.get("partitionSize")) or 0
    min_partitions = as_int(partition.get("minPartitions")) or 0
    if total <= 0:
        yield invalid(
            (*partition_path, "totalPartitions"), total, f"'TotalPartitions' must be greater than 0 {where}", PARTITION
        )
    elif size <= 0:
        yield invalid(
            (*partition_path, "partitionSize"), size, f"'PartitionSize' must be greater than 0 {where}", PARTITION
        )
    elif replicas != total * size:
        yield invalid(
            (*path, "replicas"),
            replicas,
            f"'Replicas' are not equal to TotalPartitions*PartitionSize {where}",
            PARTITION,
        )
    elif min_available is not None and min_partitions > 0 and min_partitions * size != min_available:
        yield invalid(
            (*path, "minAvailable"),
            min_available,
            f"'MinAvailable' is not equal to MinPartitions*PartitionSize {where}",
            PARTITION,
        )
    # The partition's network topology (declared), over this task alone.
    yield from declared_in(task_view(int(path[-1]), {"partitionPolicy": partition}), "volcano/network-topology")
