"""The Volcano queue check: the job's Queue exists, is Open, is not root and is a leaf.

It needs the cluster's Queues: the transport hands in a read-only ``QueueView`` (the webhook's
watch-backed cache, or ``jobgate validate --queues``); without one the check is skipped.
"""

from __future__ import annotations

from jobgate.webhook.rules.fielderrors import ErrorType, FieldError, FieldPath, invalid
from jobgate.webhook.rules.registry import Protocol  # typing's for type checkers, not imported at run time

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any


class QueueInfo:
    """What the queue check needs of a ``scheduling.volcano.sh`` Queue.

    Not a dataclass: importing ``dataclasses`` costs a one-file ``jobgate validate`` more than
    the rules it runs.
    """

    __slots__ = ("child_count", "name", "state")

    def __init__(self, name: str, state: str, child_count: int) -> None:
        self.name = name
        self.state = state
        self.child_count = child_count

    def _values(self) -> tuple[str, str, int]:
        return (self.name, self.state, self.child_count)

    def __eq__(self, other: object) -> bool:
        if type(other) is not QueueInfo:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return f"QueueInfo(name={self.name!r}, state={self.state!r}, child_count={self.child_count!r})"


class QueueView(Protocol):
    """Read-only view of the cluster's Queues (a watch-backed cache in the webhook)."""

    def queue(self, name: str) -> QueueInfo | None: ...


class QueueSnapshot:
    """A ``QueueView`` over Queue objects given at once (``jobgate validate --queues``, tests)."""

    def __init__(self, queues: list[Any]) -> None:
        self._by_name: dict[str, dict[str, Any]] = {}
        self._children: dict[str, int] = {}
        for obj in queues:
            metadata = obj.get("metadata") if isinstance(obj, dict) else None
            name = metadata.get("name") if isinstance(metadata, dict) else None
            if not isinstance(name, str):
                continue
            self._by_name[name] = obj
            spec = obj.get("spec")
            parent = spec.get("parent") if isinstance(spec, dict) else None
            if isinstance(parent, str) and parent:
                self._children[parent] = self._children.get(parent, 0) + 1

    def queue(self, name: str) -> QueueInfo | None:
        obj = self._by_name.get(name)
        if obj is None:
            return None
        status = obj.get("status")
        state = status.get("state") if isinstance(status, dict) else None
        return QueueInfo(name, state if isinstance(state, str) else "", self._children.get(name, 0))


class QueueSource:
    """Where the webhook puts its Queue cache; the rules only read it.

    Unset offline and in clusters without Volcano's Queue CRD: the queue check is then
    skipped, and ``skipped`` tells the CLI to say so (once).
    """

    def __init__(self) -> None:
        self.view: QueueView | None = None
        self.skipped = False

    def install(self, view: QueueView | None) -> None:
        self.view = view


QUEUES = QueueSource()
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
            )
        ]
    if info.state != "Open":
        return [
            invalid(
                path, name, f"can only submit job to queue with state `Open`, queue `{name}` status is `{info.state}`"
            )
        ]
    if name == "root":
        return [invalid(path, name, "can not submit job to root queue")]
    if info.child_count > 0:
        return [
            invalid(
                path, name, f"can only submit job to leaf queue, queue `{name}` has {info.child_count} child queues"
            )
        ]
    return []
