"""The admission fast path: small reviews on keep-alive connections, answered without aiohttp's server.

Every connection starts here. A request of the one shape apiservers send — ``POST /mutate`` or
``POST /validate`` over HTTP/1.1 with a ``Content-Length`` below the offload size and
``Content-Type: application/json``, no transfer coding, expectation, upgrade or ``Connection:
close`` — is reviewed and answered by this protocol: no task, request, response or stream
object, one ``write`` for the answer. The requests read in one event-loop iteration are reviewed
together when it ends, then all answered (see ``FastLane.review_queued``). Anything else hands
the connection, from that request's first byte on, to aiohttp's request handler for good:
health, metrics, every refusal (400, 404, 405, 413, 415), bodies for the large-review workers,
chunked bodies, pipelined oddities. aiohttp so stays the reference for every edge of HTTP, and
this module only answers what aiohttp would have answered with a review.

Why: measured on one core, aiohttp's request machinery (parser, request and response objects,
handler task, stream writer) cost more per review than the rules themselves: a fixed answer
through this path costs half of what it costs through aiohttp (bench/webhook_bench.py).
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import re
import time
from collections.abc import Callable, Mapping
from http import HTTPStatus

from aiohttp.http import SERVER_SOFTWARE

# (body, arrival time from time.perf_counter) -> (HTTP status, answer). 200 carries an
# AdmissionReview (JSON), anything else a line of text.
InlineReview = Callable[[bytes, float], tuple[int, bytes]]

# aiohttp's own limit for the request line and each header; a longer head goes to aiohttp, which refuses it.
MAX_HEAD_BYTES = 8190
# A connection that sends nothing for this long is closed, as aiohttp's keep-alive timeout does.
IDLE_TIMEOUT_SECONDS = 3630.0

_HEAD_END = b"\r\n\r\n"
_TOKEN = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
# Header lines as RFC 9110 allows them (a token, a colon, a value without control characters
# but HTAB), without obsolete line folding: a head with anything else is not the fast path's to judge.
_FIELD_LINES = re.compile(rb"(?:" + _TOKEN + rb":[\t\x20-\x7e\x80-\xff]*\r\n)*")
# The fields the fast path reads or refuses to handle; every other one is ignored, as aiohttp does.
_FIELDS_READ = re.compile(
    rb"^(content-length|content-type|connection|transfer-encoding|expect|upgrade):[ \t]*([^\r]*)\r$", re.I | re.M
)
# ``POST <path>[?<query>] HTTP/1.1``, the query of visible ASCII only (the apiserver's is
# ``timeout=10s``); aiohttp judges anything else.
_REQUEST_LINE = re.compile(rb"POST ([^ ?]*)(?:\?[\x21-\x7e]*)? HTTP/1\.1\r\n")
_SERVER = SERVER_SOFTWARE.encode()
_REASONS = {status.value: status.phrase.encode() for status in HTTPStatus}

log = logging.getLogger("jobgate.webhook")


class _HandOver:
    """The request is not one the fast path answers: aiohttp takes the connection."""


HAND_OVER = _HandOver()


def parse_head(
    buffer: bytes | bytearray, reviews: dict[bytes, InlineReview], offload_bytes: int
) -> tuple[InlineReview, int, int] | _HandOver | None:
    """The review, body offset and body length of the request at the start of ``buffer``.

    None while the head is incomplete; ``HAND_OVER`` when the request is not of the fast path's
    one shape (anything unusual, malformed or not a small review), whatever aiohttp makes of it.
    """
    end = buffer.find(_HEAD_END, 0, MAX_HEAD_BYTES + 4)
    if end < 0:
        return None if len(buffer) <= MAX_HEAD_BYTES else HAND_OVER
    # The head is read in place (the patterns take a start and an end): no copy of it is made.
    request_line = _REQUEST_LINE.match(buffer, 0, end + 2)
    if request_line is None:
        return HAND_OVER
    # Only a known path goes on, so the match ended at the request line's own CRLF.
    review = reviews.get(request_line.group(1))
    if review is None:
        return HAND_OVER
    fields_start = request_line.end()
    if not _FIELD_LINES.fullmatch(buffer, fields_start, end + 2):
        return HAND_OVER
    length = -1
    json_body = False
    for name, raw_value in _FIELDS_READ.findall(buffer, fields_start, end + 2):
        key = name.lower()
        value = raw_value.rstrip(b" \t")
        if key == b"content-length":
            if length >= 0 or not value.isdigit() or len(value) > 10:
                return HAND_OVER
            length = int(value)
        elif key == b"content-type":
            if json_body or value != b"application/json":
                return HAND_OVER
            json_body = True
        elif key != b"connection" or value.lower() != b"keep-alive":
            return HAND_OVER  # a transfer coding, an expectation, an upgrade, or Connection: close
    if not json_body or not 0 <= length < offload_bytes:
        return HAND_OVER
    return review, end + 4, length


class _HttpDate:
    """The ``Date`` header's value, formatted once per second."""

    def __init__(self) -> None:
        self.second = -1
        self.value = b""

    def now(self) -> bytes:
        second = int(time.time())
        if second != self.second:
            self.second = second
            self.value = email.utils.formatdate(second, usegmt=True).encode()
        return self.value


def http_response(status: int, body: bytes, date: bytes, *, closing: bool = False) -> bytes:
    content_type = b"application/json" if status == 200 else b"text/plain; charset=utf-8"
    return b"".join(
        (
            b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nDate: %s\r\nServer: %s\r\n%s\r\n"
            % (status, _REASONS[status], content_type, len(body), date, _SERVER, _CLOSE if closing else b""),
            body,
        )
    )


_CLOSE = b"Connection: close\r\n"


class FastLane:
    """The fast path's connections, what they answer, and where the others go.

    ``fallback`` makes aiohttp's protocol for a connection handed over (``web.Server``).
    """

    def __init__(
        self,
        reviews: Mapping[str, InlineReview],
        fallback: Callable[[], asyncio.Protocol],
        *,
        offload_bytes: int,
        idle_timeout: float = IDLE_TIMEOUT_SECONDS,
    ) -> None:
        self.reviews = {path.encode(): review for path, review in reviews.items()}
        self.fallback = fallback
        self.offload_bytes = offload_bytes
        self.idle_timeout = idle_timeout
        self.connections: set[AdmissionConnection] = set()
        self.date = _HttpDate()
        # Requests read in this event-loop iteration, reviewed together when it ends.
        self.queued: list[tuple[AdmissionConnection, InlineReview, bytes, float]] = []
        # Set when the server drains: each answer then closes its connection, so that a client
        # (the apiserver) opens its next one to a replica still in the Service's endpoints
        # instead of sending it here as the connection is closed under it (which it does not retry).
        self.draining = False

    def __call__(self) -> AdmissionConnection:
        return AdmissionConnection(self)

    @property
    def arriving(self) -> int:
        """Requests that have started arriving on the fast path's connections and are not answered yet."""
        return sum(1 for connection in self.connections if connection.buffer or connection.queued)

    def enqueue(self, connection: AdmissionConnection, review: InlineReview, body: bytes) -> None:
        if not self.queued:
            asyncio.get_running_loop().call_soon(self.review_queued)
        self.queued.append((connection, review, body, time.perf_counter()))
        connection.queued += 1

    def review_queued(self) -> None:
        """Review every request queued, then write every answer, then read on.

        Why in one go rather than as each request is read: measured on one core under load, the
        same reviews cost a third less CPU when the loop decrypts all the requests that arrived,
        then runs the rules on all of them, then encrypts and sends all the answers — each
        stage's code and data stay in the CPU's caches instead of evicting each other at every
        request. The answers wait for the rest of the loop iteration, a fraction of a review.
        """
        queued, self.queued = self.queued, []
        answers: list[tuple[int, bytes] | None] = []
        for connection, review, body, arrived in queued:
            try:
                answers.append(review(body, arrived))
            except Exception:
                # Not expected: the reviews catch their own failures. The connection is dropped,
                # logged, rather than left without an answer.
                log.exception("unexpected error reviewing a request on an admission connection; closing it")
                answers.append(None)
                connection.close()
        date = self.date.now()
        closing = self.draining
        for (connection, _, _, _), answer in zip(queued, answers, strict=True):
            connection.queued -= 1
            if answer is not None and connection.transport is not None:
                connection.transport.write(http_response(answer[0], answer[1], date, closing=closing))
                if closing:
                    connection.close()  # after the answer: the transport flushes what it holds first
        for connection, _, _, _ in queued:
            # Whatever waited behind the answers: pipelined requests, a hand-over to aiohttp.
            if connection.buffer and not connection.queued:
                connection.answer_buffered()

    def close(self) -> None:
        """Close every connection still on the fast path (its answers already written are sent first)."""
        for connection in list(self.connections):
            connection.close()


class AdmissionConnection(asyncio.Protocol):
    """One connection while it stays on the fast path."""

    def __init__(self, lane: FastLane) -> None:
        self.lane = lane
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        # (review, body offset, body length) of the request at the buffer's start, once its head is read
        self.pending: tuple[InlineReview, int, int] | None = None
        self.write_paused = False
        self.queued = 0  # requests of this connection waiting in the lane's queue
        self.activity = 0  # data arrivals, for the idle timer
        self.idle_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.lane.connections.add(self)
        self._arm_idle_timer(self.activity)

    def connection_lost(self, exc: Exception | None) -> None:
        self._leave()
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.activity += 1
        self.buffer += data
        if not self.write_paused:
            self.answer_buffered()

    def eof_received(self) -> bool | None:
        return None  # the transport closes; a request cut short gets no answer, as with aiohttp

    def pause_writing(self) -> None:
        # The client does not read its answers: stop reading its requests until it does.
        self.write_paused = True
        if self.transport is not None:
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        self.write_paused = False
        if self.transport is not None:
            self.transport.resume_reading()
            self.answer_buffered()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        self._leave()

    def answer_buffered(self) -> None:
        """Queue every complete request in the buffer for review; hand the connection over at the first other one."""
        buffer = self.buffer
        lane = self.lane
        try:
            while buffer and not self.write_paused and self.transport is not None:
                request = self.pending or parse_head(buffer, lane.reviews, lane.offload_bytes)
                if request is None:
                    return
                if request is HAND_OVER:
                    if not self.queued:  # else after the answers queued before it (review_queued)
                        self._hand_over()
                    return
                review, body_start, length = request  # type: ignore[misc]
                start = body_start + length
                if len(buffer) < start:
                    self.pending = request  # type: ignore[assignment]
                    return
                self.pending = None
                body = bytes(buffer[body_start:start])
                del buffer[:start]
                lane.enqueue(self, review, body)
        except Exception:
            # Not expected: parsing a head does not raise. The connection is dropped, logged,
            # rather than left half-parsed.
            log.exception("unexpected error on an admission connection; closing it")
            self.close()

    def _hand_over(self) -> None:
        transport, rest = self.transport, bytes(self.buffer)
        self._leave()
        self.transport = None
        if transport is None:
            return
        handler = self.lane.fallback()
        transport.set_protocol(handler)
        handler.connection_made(transport)
        handler.data_received(rest)

    def _leave(self) -> None:
        self.lane.connections.discard(self)
        self.buffer.clear()
        self.pending = None
        if self.idle_timer is not None:
            self.idle_timer.cancel()
            self.idle_timer = None

    def _arm_idle_timer(self, seen: int) -> None:
        loop = asyncio.get_running_loop()
        self.idle_timer = loop.call_later(self.lane.idle_timeout, self._idle_check, seen)

    def _idle_check(self, seen: int) -> None:
        if self.transport is None:
            return
        if self.activity == seen:
            self.close()
        else:
            self._arm_idle_timer(self.activity)
