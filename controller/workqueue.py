"""A work queue that hands each key to one worker at a time, with delays and per-key backoff.

Semantics of client-go's rate-limited queue: a key added while it is queued is queued once;
a key added while a worker holds it is queued again when the worker is done, so the latest
state is always reconciled but never by two workers at once.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import deque

from jobgate.engine.registry import GroupVersionKind


class WorkQueue:
    def __init__(self, *, base_delay: float = 0.005, max_delay: float = 300.0) -> None:
        self._queue: deque[str] = deque()
        self._dirty: set[str] = set()
        self._processing: set[str] = set()
        self._delayed: list[tuple[float, int, str]] = []
        self._sequence = 0
        self._failures: dict[str, int] = {}
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._condition = threading.Condition()
        self._shutdown = False

    def add(self, key: str) -> None:
        with self._condition:
            if self._shutdown or key in self._dirty:
                return
            self._dirty.add(key)
            if key not in self._processing:
                self._queue.append(key)
                self._condition.notify()

    def add_after(self, key: str, delay: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        with self._condition:
            self._sequence += 1
            heapq.heappush(self._delayed, (time.monotonic() + delay, self._sequence, key))
            self._condition.notify()

    def add_rate_limited(self, key: str) -> None:
        """Retry with exponential backoff per key (5 ms, 10 ms, ... up to 5 minutes)."""
        with self._condition:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
        self.add_after(key, min(self._base_delay * 2**failures, self._max_delay))

    def forget(self, key: str) -> None:
        with self._condition:
            self._failures.pop(key, None)

    def failures(self, key: str) -> int:
        with self._condition:
            return self._failures.get(key, 0)

    def get(self, timeout: float | None = None) -> str | None:
        """The next key, or None on shutdown or timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._condition:
            while True:
                self._promote_delayed()
                if self._queue:
                    key = self._queue.popleft()
                    self._dirty.discard(key)
                    self._processing.add(key)
                    return key
                if self._shutdown:
                    return None
                now = time.monotonic()
                waits = []
                if deadline is not None:
                    if now >= deadline:
                        return None
                    waits.append(deadline - now)
                if self._delayed:
                    waits.append(self._delayed[0][0] - now)
                self._condition.wait(timeout=max(min(waits), 0.001) if waits else None)

    def _promote_delayed(self) -> None:
        now = time.monotonic()
        while self._delayed and self._delayed[0][0] <= now:
            _, _, key = heapq.heappop(self._delayed)
            if key not in self._dirty:
                self._dirty.add(key)
                if key not in self._processing:
                    self._queue.append(key)

    def done(self, key: str) -> None:
        with self._condition:
            self._processing.discard(key)
            if key in self._dirty:
                self._queue.append(key)
                self._condition.notify()

    def shutdown(self) -> None:
        with self._condition:
            self._shutdown = True
            self._condition.notify_all()

    def __len__(self) -> int:
        with self._condition:
            return len(self._queue)


def job_key(gvk: GroupVersionKind, namespace: str, name: str) -> str:
    """``<Kind>.<version>.<group>/<namespace>/<name>``: the kind alone is ambiguous (Volcano's ``Job``
    and ``batch/v1`` Job; KubeDL's and Kubeflow's ``TFJob``), so a key always carries the group."""
    return f"{gvk.kind}.{gvk.version}.{gvk.group}/{namespace}/{name}"


def split_key(key: str) -> tuple[GroupVersionKind, str, str]:
    kind_version_group, namespace, name = key.split("/", 2)
    kind, version, group = kind_version_group.split(".", 2)
    return GroupVersionKind(group, version, kind), namespace, name
