"""The read-only view of Kubeflow Trainer's runtimes a review's context carries (``context.runtimes``),
for type checkers: kept out of the compiled rules modules (mypyc compiles no Protocol class)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Protocol
else:
    Protocol = object


class RuntimeView(Protocol):
    """Read-only view of the cluster's runtimes (rules/runtimes.py's RuntimeSnapshot offline, the webhook's
    informers in webhook/trainer_runtimes.py).

    ``runtime`` returns the stored object or None when the view has none of that name. ``offline_hint``
    is appended to the "not found" error: how to give the runtime to an offline check ("" in the webhook).
    ``jobset`` (optional) returns a TrainJob's JobSet, named like it; ``priority_class`` (optional) a
    PriorityClass by name, or None (a Volcano runtime's pods name them: T24).
    """

    offline_hint: str

    def runtime(self, kind: str, namespace: str | None, name: str) -> Mapping[str, Any] | None: ...
