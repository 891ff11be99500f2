"""Guards against acting on a cache that has not yet seen our own writes.

After creating ``<job>-worker-3`` the informer may still show no such pod for a moment; a
reconcile in that window would create it again. Each job records the children it created
or deleted; until the informer has observed them (or ``ttl`` passes, in case an event was
lost) the job is requeued shortly instead of reconciled. Deterministic names and
AlreadyExists handling remain the backstop.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field


@dataclass
class _Pending:
    creations: set[str] = field(default_factory=set)
    deletions: set[str] = field(default_factory=set)
    since: float = field(default_factory=time.monotonic)


class Expectations:
    def __init__(self, ttl: float = 60.0) -> None:
        self.ttl = ttl
        self._pending: dict[str, _Pending] = {}
        self._lock = threading.Lock()

    def expect_creations(self, job: str, names: list[str]) -> None:
        with self._lock:
            pending = self._pending.setdefault(job, _Pending())
            pending.creations.update(names)
            pending.since = time.monotonic()

    def expect_deletions(self, job: str, uids: list[str]) -> None:
        with self._lock:
            pending = self._pending.setdefault(job, _Pending())
            pending.deletions.update(uids)
            pending.since = time.monotonic()

    def creation_observed(self, job: str, name: str) -> None:
        with self._lock:
            pending = self._pending.get(job)
            if pending is not None:
                pending.creations.discard(name)

    def deletion_observed(self, job: str, uid: str) -> None:
        with self._lock:
            pending = self._pending.get(job)
            if pending is not None:
                pending.deletions.discard(uid)

    def lower_creation(self, job: str, name: str) -> None:
        """A create that failed will not be observed."""
        self.creation_observed(job, name)

    def satisfied(self, job: str) -> bool:
        with self._lock:
            pending = self._pending.get(job)
            if pending is None or (not pending.creations and not pending.deletions):
                return True
            if time.monotonic() - pending.since > self.ttl:
                del self._pending[job]
                return True
            return False

    def forget(self, job: str) -> None:
        with self._lock:
            self._pending.pop(job, None)
