"""Large bodies reviewed in worker processes, so that one 3 MB review never holds the event loop."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import gc
import logging
import multiprocessing
import os
import re

from jobgate.review import warm_up

from .admission import (
    Webhook,
)
from .outcome import ReviewOutcome, _review_in_worker, review_outcome

log = logging.getLogger("jobgate.webhook")

# Workers run at a lower priority than the event loop: on a CPU they share, the scheduler
# gives the loop (and its small reviews) the time it asks for, and the worker the rest.
WORKER_NICENESS = 10


def _start_worker() -> None:
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICENESS)
    warm_up()
    gc.freeze()  # the schemas built above live as long as the worker: never rescan them


def large_review_workers() -> int:
    """One worker per CPU this process may use, less the one the event loop needs, at most 4.

    A worker beside the loop on the loop's own CPU would take its time slices from the small
    reviews; past 4, more 6 MB reviews at once are rare and each worker costs ~50 MiB at rest.
    """
    return max(1, min(4, len(os.sched_getaffinity(0)) - 1))


class LargeReviewPool:
    """Reviews of large bodies run in worker processes, so that they never hold the event loop.

    A 3 MB review costs the rules 0.1-0.3 s of CPU; on the event loop every small review
    queued behind it would wait that long. In a worker process it only shares the CPU with the
    loop (time slices of a few ms), and small reviews keep their latency. Small bodies stay
    inline: the round trip to a process (pickling, a pipe, a context switch) costs more than
    their review.

    The backlog is bounded in time, not in count: each large body is priced by its size at the
    slowest rate (seconds per byte) seen lately, and a body whose answer would come after the
    request's budget (the apiserver's ``?timeout=`` less a margin; without it ``budget_seconds``,
    the shortest webhook timeout jobgate's configurations set, less a margin) is refused at once
    with 429 and ``Retry-After``. The apiserver's client retries such
    an answer within its own timeout; a review answered after that timeout would only have
    held a worker that the reviews behind it needed.
    """

    # Measured worst case, pure Python, on a shared 2-core machine (bench/big_review.py):
    # ~0.2 s per MB of body. The estimate starts there and follows what the workers report.
    INITIAL_SECONDS_PER_BYTE = 0.2e-6
    # Cheap large bodies (a long env list) cost ~5 ms per MB; the estimate never follows them
    # that far down, or a burst of expensive ones right after would all be accepted.
    MIN_SECONDS_PER_BYTE = 0.05e-6
    # Every answer lowers the rate estimate by this factor at most: one slow review keeps the
    # estimate cautious for the next few, and it comes back down as fast ones are answered.
    RATE_DECAY = 0.8

    def __init__(self, workers: int | None = None, *, budget_seconds: float = 2.5) -> None:
        self.workers = workers if workers is not None else large_review_workers()
        self.budget_seconds = budget_seconds
        self.seconds_per_byte = self.INITIAL_SECONDS_PER_BYTE
        self.pending_seconds = 0.0  # estimated cost of the reviews accepted and not yet answered
        self.refused = 0
        self._executor: concurrent.futures.ProcessPoolExecutor | None = None

    def start(self) -> None:
        context = multiprocessing.get_context("spawn")  # no fork of a process with an event loop and threads
        self._executor = concurrent.futures.ProcessPoolExecutor(
            self.workers, mp_context=context, initializer=_start_worker
        )
        # Start every worker now (and build its schemas), not on the first large reviews.
        for started in [self._executor.submit(warm_up) for _ in range(self.workers)]:
            started.result()

    def estimate(self, size: int) -> float:
        """Seconds until the answer to a body of ``size`` bytes accepted now, by the current rates."""
        # Those ahead share the workers; this one runs on one of them.
        return self.pending_seconds / self.workers + size * self.seconds_per_byte

    async def review(self, body: bytes, webhook: Webhook, budget_seconds: float | None = None) -> ReviewOutcome:
        """``budget_seconds``: this request's own budget (from the apiserver's timeout), else the pool's."""
        if self._executor is None:
            return review_outcome(body, webhook)
        budget = self.budget_seconds if budget_seconds is None else budget_seconds
        cost = len(body) * self.seconds_per_byte
        if self.pending_seconds and self.estimate(len(body)) > budget:
            self.refused += 1
            return ReviewOutcome(
                429,
                message=f"too many large reviews in progress: this one would be answered in about "
                f"{self.estimate(len(body)):.1f} s, past the {budget:.1f} s budget; retry",
            )
        self.pending_seconds += cost
        executor = self._executor
        loop = asyncio.get_running_loop()
        try:
            outcome, seconds = await loop.run_in_executor(executor, _review_in_worker, body, webhook.value)
        except concurrent.futures.process.BrokenProcessPool:
            # A worker died (e.g. killed by the OOM killer): every review it held fails at once, and
            # the first of them starts new workers (off the loop); each is answered inline.
            if self._executor is executor:
                log.error("a large-review worker died; restarting the workers")
                self.stop()
                await asyncio.to_thread(self.start)
            return review_outcome(body, webhook)
        finally:
            self.pending_seconds = max(0.0, self.pending_seconds - cost)
        self.learn(seconds, len(body))
        return outcome

    def learn(self, seconds: float, size: int) -> None:
        """Take in a worker's time for a body of ``size`` bytes."""
        self.seconds_per_byte = max(seconds / size, self.seconds_per_byte * self.RATE_DECAY, self.MIN_SECONDS_PER_BYTE)

    def stop(self) -> None:
        """Called once in-flight reviews are answered (or their time is up): nothing left is worth waiting for."""
        executor, self._executor = self._executor, None
        if executor is None:
            return
        # ProcessPoolExecutor cannot interrupt a running review; its workers are ended directly so
        # that a stuck review never holds the process past its shutdown timeout.
        workers = list(getattr(executor, "_processes", {}).values())
        executor.shutdown(wait=False, cancel_futures=True)
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.join(5)


_GO_DURATION_PART_PATTERN = r"(\d+(?:\.\d*)?|\.\d+)(h|ms|m|s|us|\u00b5s|ns)"


_GO_DURATION_PART = re.compile(_GO_DURATION_PART_PATTERN)


_GO_DURATION = re.compile(f"(?:{_GO_DURATION_PART_PATTERN})+")


_GO_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "\u00b5s": 1e-6, "ns": 1e-9}


# The apiserver stops waiting at the webhook's timeoutSeconds (1-30 s); the answer must leave
# this much before, to cross the network and be read.
TIMEOUT_MARGIN_SECONDS = 0.5


MIN_BUDGET_SECONDS = 0.5


def budget_from_timeout(timeout: str | None) -> float | None:
    """The large-review budget for a request whose URL carries the apiserver's ``?timeout=``.

    The apiserver appends the webhook's ``timeoutSeconds`` as a Go duration (``timeout=10s``);
    a review answered after it is wasted work. None (the pool's own budget) when the parameter
    is absent or not a duration.
    """
    if not timeout or len(timeout) > 32 or not _GO_DURATION.fullmatch(timeout):
        return None
    seconds = sum(float(number) * _GO_UNIT_SECONDS[unit] for number, unit in _GO_DURATION_PART.findall(timeout))
    return max(min(seconds, 30.0) - TIMEOUT_MARGIN_SECONDS, MIN_BUDGET_SECONDS)
