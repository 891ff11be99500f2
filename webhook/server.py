"""``jobgate webhook``: AdmissionReviews over TLS with aiohttp.

Transport only: HTTP method, content type, body size, TLS, health, metrics, logs and
shutdown. What to answer is ``webhook.admission``'s business, shared with ``jobgate review``;
one review's whole CPU cost is ``webhook.outcome``; large bodies go to ``webhook.large_reviews``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from jobgate.engine.views import ClusterViews
from jobgate.review import engine_build, warm_up

from .admission import (
    Webhook,
)
from .fastpath import FastLane
from .large_reviews import LargeReviewPool, budget_from_timeout
from .metrics import Metrics
from .outcome import ReviewOutcome, review_log, review_outcome
from .review_metrics import ReviewCount
from .tlsreload import CertificateError, ReloadingCertificate

MAX_BODY_BYTES = 7 * 1024 * 1024  # object + oldObject of a 3 MiB apiserver request, as controller-runtime allows


# Bodies from this size on are reviewed in worker processes (LargeReviewPool). A 5 KB review
# takes ~1 ms inline; 256 KiB (~50 replica types) takes ~30 ms, the most one review may hold the loop.
OFFLOAD_BYTES = 256 * 1024


log = logging.getLogger("jobgate.webhook")


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


_INTERNAL_ERROR = "jobgate could not process the request (internal error, see the log)\n"


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


async def serve(server: WebhookServer) -> None:
    # The handlers before start(): a SIGTERM just after "serving" was logged must drain, not kill.
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    await server.start()
    await stopping.wait()
    await server.shutdown()


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
