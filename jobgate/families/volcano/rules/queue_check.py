"""The Volcano queue check: the job's Queue exists, is Open, is not root and is a leaf.

It needs the cluster's Queues: the review's context holds a read-only ``QueueView`` (the webhook's
watch-backed cache, or ``jobgate validate --queues``); without one the check is skipped and
the context records it (``QUEUE_CHECK``).
"""

from __future__ import annotations

from jobgate.engine.fielderrors import ErrorType, FieldError, FieldPath, invalid

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any

    from jobgate.engine.views import QueueView

# The name under which a review's context records the check as skipped (no view of the Queues).
QUEUE_CHECK = "volcano-queue"
# The id of the rule (jobgate/families/volcano/cel/job.py), which its errors carry.
QUEUE = "volcano/queue"


QUEUE_CHECK_SKIPPED = (
    "the Volcano queue check (queue exists, is Open, is a leaf) was skipped: it needs the cluster's Queues"
)


def check_queue(obj: dict[str, Any], queues: QueueView) -> list[FieldError]:
    """The job's queue exists, is Open, is not root and is a leaf (Volcano's order)."""
    spec = obj.get("spec")
    name = spec.get("queue") if isinstance(spec, dict) else None
    if not isinstance(name, str) or not name:
        return []
    path: FieldPath = ("spec", "queue")
    info = queues.queue(name)
    if info is None:
        return [
            FieldError(
                ErrorType.NOT_FOUND,
                path,
                name,
                f'unable to find job queue: queue.scheduling.volcano.sh "{name}" not found',
                QUEUE,
            )
        ]
    if info.state != "Open":
        return [
            invalid(
                path,
                name,
                f"can only submit job to queue with state `Open`, queue `{name}` status is `{info.state}`",
                QUEUE,
            )
        ]
    if name == "root":
        return [invalid(path, name, "can not submit job to root queue", QUEUE)]
    if info.child_count > 0:
        return [
            invalid(
                path,
                name,
                f"can only submit job to leaf queue, queue `{name}` has {info.child_count} child queues",
                QUEUE,
            )
        ]
    return []
