"""``jobgate webhook``: AdmissionReviews over TLS with aiohttp.

Transport only: HTTP method, content type, body size, TLS, health, metrics, logs and
shutdown. What to answer is ``webhook.admission``'s business, shared with ``jobgate review``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import gc
import logging
import multiprocessing
import os
import re
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, generate_latest

from jobgate.common.logs import FastLine
from jobgate.engine.review import engine_build, warm_up
from jobgate.engine.views import ClusterViews
from jobgate.webhook.admission import (
    AdmissionReviewResponse,
    Webhook,
    answer_review,
    encode_response,
    parse_review,
)
from jobgate.webhook.envelope import AdmissionReview, BadReview
from jobgate.webhook.fastpath import FastLane
from jobgate.webhook.review_metrics import ReviewCount, ReviewMetrics
from jobgate.webhook.tlsreload import CertificateError, LoadedCertificate, ReloadingCertificate

MAX_BODY_BYTES = 7 * 1024 * 1024  # object + oldObject of a 3 MiB apiserver request, as controller-runtime allows
# Bodies from this size on are reviewed in worker processes (LargeReviewPool). A 5 KB review
# takes ~1 ms inline; 256 KiB (~50 replica types) takes ~30 ms, the most one review may hold the loop.
OFFLOAD_BYTES = 256 * 1024
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)

log = logging.getLogger("jobgate.webhook")
review_log = FastLine("jobgate.review")


class MalformedHttpLine(logging.Filter):
    """aiohttp logs a malformed request (bad request line, header too long, two lengths) with a
    traceback at ERROR; it is the client's fault, answered 400: one WARNING line says so instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, HttpProcessingError):
            reason = (error.message or type(error).__name__).splitlines()[0][:200]
            record.msg, record.args = "malformed HTTP request refused with %d: %s", (error.code, reason)
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.exc_info = record.exc_text = None
        return True


_MALFORMED_HTTP_LINE = MalformedHttpLine()


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        # The two metrics every review updates, without prometheus-client's locks (review_metrics.py).
        self.reviews = ReviewMetrics(LATENCY_BUCKETS)
        self.registry.register(self.reviews)
        self.rejected = Counter(
            "jobgate_admission_rejected_requests",
            "Requests refused before review (HTTP 400, 405, 413, 415), by status.",
            ["code"],
            registry=self.registry,
        )
        self.in_flight = Gauge("jobgate_admission_in_flight", "Reviews being answered.", registry=self.registry)
        self.general_handler_reviews = Counter(
            "jobgate_admission_general_handler_reviews",
            "Reviews answered by aiohttp's general request handler rather than the admission fast path: "
            "bodies of 256 KiB or more, chunked bodies, requests of another shape.",
            registry=self.registry,
        )
        self.certificate_expiry = Gauge(
            "jobgate_tls_certificate_expiry_timestamp_seconds",
            "notAfter of the serving certificate, as a Unix time.",
            registry=self.registry,
        )
        self.certificate_reloads = Counter(
            "jobgate_tls_certificate_reloads",
            "Serving-certificate reload attempts, by result.",
            ["result"],
            registry=self.registry,
        )

    def refused(self, status: int) -> None:
        """A request refused before or instead of a review (400, 405, 413, 415, 429)."""
        self.rejected.labels(str(status)).inc()

    def certificate_changed(self, loaded: LoadedCertificate | None, ok: bool) -> None:
        self.certificate_reloads.labels("success" if ok else "failure").inc()
        if loaded is not None:
            self.certificate_expiry.set(loaded.not_after.timestamp())


@dataclass
class ServerState:
    metrics: Metrics = field(default_factory=Metrics)
    certificate_loaded: bool = False
    serving: bool = False
    draining: bool = False
    # Both pieces of a clean drain, on unless measured without (`jobgate webhook --drain-omit`).
    unready_while_draining: bool = True
    close_while_draining: bool = True
    in_flight: int = 0
    large_reviews: LargeReviewPool = field(default_factory=lambda: LargeReviewPool())  # noqa: PLW0108 (defined below)
    # The cluster objects this process's reviews may read (Volcano's Queues once their cache
    # syncs). Reviews sent to the large-review pool's processes see none of them.
    views: ClusterViews = field(default_factory=ClusterViews)
    # False while a cache the reviews need is still listing (the platform policies'): not Ready then.
    caches_synced: Callable[[], bool] = lambda: True

    @property
    def ready(self) -> bool:
        if self.draining and self.unready_while_draining:
            return False
        return self.serving and self.certificate_loaded and self.caches_synced()


def _plain(status: int, text: str, state: ServerState, *, close: bool = False) -> web.Response:
    state.metrics.refused(status)
    response = web.Response(status=status, text=text + "\n")
    if close:
        response.force_close()
    return response


def _verdict(answer: AdmissionReviewResponse) -> str:
    response = answer["response"]
    if not response["allowed"]:
        return "error" if response["status"]["code"] == 500 else "denied"
    return "patched" if "patch" in response else "allowed"


@dataclass(slots=True)  # not frozen: built for every review, and a frozen __init__ costs 5x
class ReviewOutcome:
    """What one body leads to: a 400 with ``message``, or the answer with its metric labels and log fields.

    Plain data, so that it crosses the process boundary when a large body is reviewed in the pool.
    """

    status: int
    payload: bytes = b""
    message: str = ""
    labels: tuple[str, str, str] = ("", "", "")  # kind, operation, verdict
    log_fields: dict[str, Any] = field(default_factory=dict)


def review_outcome(body: bytes, webhook: Webhook, views: ClusterViews | None = None) -> ReviewOutcome:
    """Parse, review and encode one body: the whole CPU cost of a review, with no I/O."""
    try:
        review = parse_review(body)
        answer = answer_review(review, webhook, views)
    except BadReview as exc:
        return ReviewOutcome(400, message=str(exc))
    verdict = _verdict(answer)
    request = review.request
    return ReviewOutcome(
        200,
        payload=encode_response(answer),
        labels=(request.kind.kind, request.operation, verdict),
        log_fields=_log_fields(review, webhook, verdict),
    )


def _review_in_worker(body: bytes, webhook_value: str) -> tuple[ReviewOutcome, float]:
    """One large review, and its time in the worker, with the cyclic garbage collector paused.

    A review's objects are trees that reference counting frees. The collector, triggered by
    allocation counts, would rescan the whole growing object graph again and again during a
    3 MB review: with it, the cost per replica type grows with their number (20 -> 36 CPU ms
    per 1,000 Volcano tasks from 2,500 to 10,000); without it, it stays flat.
    """
    started = time.perf_counter()
    gc.disable()
    try:
        outcome = review_outcome(body, Webhook(webhook_value))
    finally:
        gc.enable()
    return outcome, time.perf_counter() - started


def _log_fields(review: AdmissionReview, webhook: Webhook, verdict: str) -> dict[str, Any]:
    request = review.request
    name = request.name or ""
    if not name and isinstance(request.object, dict):
        metadata = request.object.get("metadata")
        if isinstance(metadata, dict):
            name = str(metadata.get("name") or metadata.get("generateName") or "")
    return {
        "uid": request.uid,
        "webhook": str(webhook),  # the StrEnum's value; Enum.value is a Python-level property
        "kind": request.kind.kind,
        "object": f"{request.namespace}/{name}" if request.namespace else name,
        "operation": request.operation,
        "dryRun": bool(request.dryRun),
        "verdict": verdict,
    }


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


_INTERNAL_ERROR = "jobgate could not process the request (internal error, see the log)\n"

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


class ReviewEndpoint:
    """One webhook's reviews: the answer, its metrics and its log line, whichever HTTP layer carried the body."""

    def __init__(self, webhook: Webhook, state: ServerState) -> None:
        self.webhook = webhook
        self.state = state
        self.latency = state.metrics.reviews.latency(webhook.value)
        self.counters: dict[tuple[str, str, str], ReviewCount] = {}  # by (kind, operation, verdict)

    def answered(self, outcome: ReviewOutcome, started: float) -> None:
        elapsed = time.perf_counter() - started
        self.latency.observe(elapsed)
        counter = self.counters.get(outcome.labels)
        if counter is None:
            counter = self.counters[outcome.labels] = self.state.metrics.reviews.count(
                self.webhook.value, *outcome.labels
            )
        counter.inc()
        review_log.info("review", {**outcome.log_fields, "ms": round(elapsed * 1000, 3)})

    def review_inline(self, body: bytes, started: float) -> tuple[int, bytes]:
        """A small body reviewed on the spot (``webhook.fastpath``): the HTTP status and the answer.

        ``started``: when the request had arrived, from ``time.perf_counter``.
        """
        try:
            outcome = review_outcome(body, self.webhook, self.state.views)
            if outcome.status != 200:
                self.state.metrics.refused(outcome.status)
                return outcome.status, outcome.message.encode() + b"\n"
            self.answered(outcome, started)
        except Exception:
            log.exception("unexpected error handling POST /%s", self.webhook.value)
            return 400, _INTERNAL_ERROR.encode()
        return 200, outcome.payload


def review_handler(endpoint: ReviewEndpoint) -> Handler:
    state = endpoint.state

    async def handle(request: web.Request) -> web.Response:
        started = time.perf_counter()
        # The header as sent is compared first: parsing it (``content_type``) costs more than
        # the comparison, and what apiservers send is exactly this.
        if request.headers.get("Content-Type") != "application/json" and request.content_type != "application/json":
            return _plain(415, f"unsupported content type {request.content_type!r}: send application/json", state)
        if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
            return _plain(413, f"body larger than {MAX_BODY_BYTES} bytes", state, close=True)
        state.in_flight += 1
        try:
            try:
                body = await request.read()
            except web.HTTPRequestEntityTooLarge:
                return _plain(413, f"body larger than {MAX_BODY_BYTES} bytes", state, close=True)
            if len(body) >= OFFLOAD_BYTES:
                budget = budget_from_timeout(request.query.get("timeout"))
                outcome = await state.large_reviews.review(body, endpoint.webhook, budget)
            else:
                outcome = review_outcome(body, endpoint.webhook, state.views)
            if outcome.status != 200:
                refused = _plain(outcome.status, outcome.message, state)
                if outcome.status == 429:
                    refused.headers["Retry-After"] = "1"
                return refused
            endpoint.answered(outcome, started)
            state.metrics.general_handler_reviews.inc()
            answer = web.Response(body=outcome.payload, content_type="application/json")
            if state.draining and state.close_while_draining:
                answer.force_close()  # Connection: close, as the fast path answers while draining
            return answer
        except Exception:
            # Fails visibly but never as a 500: the apiserver then reports a call failure.
            log.exception("unexpected error handling %s %s", request.method, request.path)
            return web.Response(status=400, text=_INTERNAL_ERROR)
        finally:
            state.in_flight -= 1

    return handle


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def never_500(handler: Handler) -> Handler:
    """An unexpected failure is logged and answered 400 with a one-line reason, never a 500 or a traceback."""

    async def guarded(request: web.Request) -> web.StreamResponse:
        try:
            return await handler(request)
        except Exception:
            log.exception("unexpected error handling %s %s", request.method, request.path)
            return web.Response(status=400, text=_INTERNAL_ERROR)

    return guarded


def review_endpoints(state: ServerState) -> dict[str, ReviewEndpoint]:
    """Each webhook's endpoint by its path."""
    return {f"/{webhook.value}": ReviewEndpoint(webhook, state) for webhook in Webhook}


def build_app(state: ServerState, endpoints: dict[str, ReviewEndpoint] | None = None) -> web.Application:
    app = web.Application(client_max_size=MAX_BODY_BYTES)
    state.metrics.in_flight.set_function(lambda: state.in_flight)
    for path, endpoint in (endpoints or review_endpoints(state)).items():
        app.router.add_post(path, review_handler(endpoint))

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(request: web.Request) -> web.Response:
        if state.ready:
            return web.Response(text="ok\n")
        reason = (
            "draining" if state.draining else "certificate not loaded" if not state.certificate_loaded else "starting"
        )
        return web.Response(status=503, text=f"not ready: {reason}\n")

    async def metrics(request: web.Request) -> web.Response:
        response = web.Response(body=generate_latest(state.metrics.registry))
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    app.router.add_get("/healthz", never_500(healthz))
    app.router.add_get("/readyz", never_500(readyz))
    app.router.add_get("/metrics", never_500(metrics))
    return app


class WebhookServer:
    """The HTTPS server, its certificate watcher and its graceful shutdown."""

    def __init__(
        self,
        tls_dir: Path,
        host: str = "0.0.0.0",
        port: int = 9443,
        *,
        cert_check_interval: float = 2.0,
        shutdown_timeout: float = 10.0,
        shutdown_delay: float = 0.0,
        state: ServerState | None = None,
    ) -> None:
        self.state = state or ServerState()
        self.certificate = ReloadingCertificate(tls_dir, on_change=self.state.metrics.certificate_changed)
        self.host = host
        self.port = port
        self.cert_check_interval = cert_check_interval
        self.shutdown_timeout = shutdown_timeout
        self.shutdown_delay = shutdown_delay
        endpoints = review_endpoints(self.state)
        self.app = build_app(self.state, endpoints)
        self.fast_reviews = {path: endpoint.review_inline for path, endpoint in endpoints.items()}
        self._runner: web.AppRunner | None = None
        self._lane: FastLane | None = None
        self._listener: asyncio.Server | None = None
        self._watcher: asyncio.Task[None] | None = None

    async def start(self) -> None:
        warm_up()
        self.state.large_reviews.start()
        self.certificate.check()
        if self.certificate.current is None:
            self.certificate.load()  # raises CertificateError with the reason
        self.state.certificate_loaded = True
        aiohttp_server_log = logging.getLogger("aiohttp.server")
        if _MALFORMED_HTTP_LINE not in aiohttp_server_log.filters:
            aiohttp_server_log.addFilter(_MALFORMED_HTTP_LINE)
        # Draining is done by shutdown() itself; aiohttp's own grace period only mops up.
        self._runner = web.AppRunner(self.app, handle_signals=False, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        assert self._runner.server is not None
        # Connections start on the fast path and go to aiohttp's handler for anything else.
        self._lane = FastLane(self.fast_reviews, self._runner.server, offload_bytes=OFFLOAD_BYTES)
        self._listener = await asyncio.get_running_loop().create_server(
            self._lane, self.host, self.port, ssl=self.certificate.context, backlog=1024, reuse_address=True
        )
        if self.port == 0:
            self.port = self._listener.sockets[0].getsockname()[1]
        self._watcher = asyncio.create_task(self.certificate.watch(self.cert_check_interval))
        self.state.serving = True
        log.info(
            "serving /mutate and /validate on https://%s:%d (TLS 1.2+, rule engine: %s, event loop: %s)",
            self.host,
            self.port,
            engine_build(),
            "uvloop" if type(asyncio.get_running_loop()).__module__.startswith("uvloop") else "asyncio",
        )

    async def shutdown(self) -> None:
        """Unready, keep serving for ``shutdown_delay``, stop accepting, let in-flight reviews finish.

        aiohttp's own shutdown stops reading request bodies at once, which would strand a review
        whose body is still arriving; so the listener is closed here and in-flight reviews are
        awaited (up to ``shutdown_timeout``) before aiohttp closes the connections.
        """
        self.state.draining = True
        if self._lane and self.state.close_while_draining:
            self._lane.draining = True
        log.info("draining: not ready; closing the listener in %.1f s", self.shutdown_delay)
        if self.shutdown_delay:
            await asyncio.sleep(self.shutdown_delay)
        if self._watcher:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        if self._listener:
            self._listener.close()
        if self._runner:
            deadline = time.monotonic() + self.shutdown_timeout
            while self._reviews_in_flight() and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            if left := self._reviews_in_flight():
                log.warning("%d review(s) still in flight after %.1f s; closing", left, self.shutdown_timeout)
            if self._lane:
                self._lane.close()
            await self._runner.cleanup()
        self.state.large_reviews.stop()
        review_log.flush()
        self.certificate.close()
        self.state.serving = False
        log.info("stopped")

    def _reviews_in_flight(self) -> int:
        """Reviews started and not answered: aiohttp's handlers', and a fast-path request still arriving."""
        return self.state.in_flight + (self._lane.arriving if self._lane is not None else 0)


async def serve(server: WebhookServer) -> None:
    # The handlers before start(): a SIGTERM just after "serving" was logged must drain, not kill.
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    await server.start()
    await stopping.wait()
    await server.shutdown()


EVENT_LOOPS = ("asyncio", "uvloop")


def loop_factory(event_loop: str) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The event loop to serve on: asyncio's own, or uvloop's (libuv; ``pip install uvloop``).

    Raises ImportError when uvloop is asked for and not installed.
    """
    if event_loop == "uvloop":
        import uvloop

        return uvloop.new_event_loop
    return None


def run(server: WebhookServer, event_loop: str = "asyncio") -> int:
    try:
        factory = loop_factory(event_loop)
    except ImportError:
        log.error("cannot start: --event-loop uvloop needs the uvloop package (pip install uvloop)")
        return 2
    try:
        with asyncio.Runner(loop_factory=factory) as runner:
            runner.run(serve(server))
    except CertificateError as exc:
        log.error("cannot start: %s", exc)
        return 2
    except OSError as exc:
        log.error("cannot listen on %s:%d: %s", server.host, server.port, exc.strerror or exc)
        return 2
    return 0
