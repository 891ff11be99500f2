"""The admission fast path (webhook/fastpath.py): what it answers itself, what it hands to aiohttp, and that
both give the same answers."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import socket
import ssl
from pathlib import Path

import pytest

from jobgate.webhook.fastpath import HAND_OVER, MAX_HEAD_BYTES, FastLane, parse_head
from jobgate.webhook.server import OFFLOAD_BYTES, WebhookServer
from testkit.builders import admission_review, tfjob

REVIEWS = {b"/mutate": lambda body, arrived: (200, b"m"), b"/validate": lambda body, arrived: (200, b"v")}


def head(*lines: str, request_line: str = "POST /validate HTTP/1.1") -> bytes:
    return ("\r\n".join((request_line, *lines)) + "\r\n\r\n").encode()


JSON_HEAD = ("Host: x", "Content-Type: application/json", "Content-Length: 2")


# --- parse_head -----------------------------------------------------------------------------


def test_the_apiserver_request_shape_is_taken():
    request = head(
        "Host: jobgate.jobgate-system.svc:443",
        "User-Agent: kube-apiserver-admission",
        "Content-Length: 17",
        "Accept: application/json, */*",
        "Content-Type: application/json",
        "Accept-Encoding: gzip",
        request_line="POST /validate?timeout=5s HTTP/1.1",
    )
    parsed = parse_head(request + b"{}", REVIEWS, OFFLOAD_BYTES)
    assert parsed == (REVIEWS[b"/validate"], len(request), 17)


def test_header_names_are_case_insensitive_and_values_trimmed():
    request = head("content-type:application/json  ", "CONTENT-LENGTH:\t2", request_line="POST /mutate HTTP/1.1")
    assert parse_head(request, REVIEWS, OFFLOAD_BYTES) == (REVIEWS[b"/mutate"], len(request), 2)


def test_an_incomplete_head_waits_for_more():
    request = head(*JSON_HEAD)
    for cut in (0, 1, 10, len(request) - 1):
        assert parse_head(request[:cut], REVIEWS, OFFLOAD_BYTES) is None


@pytest.mark.parametrize(
    ("request_line", "lines"),
    [
        ("GET /validate HTTP/1.1", JSON_HEAD),
        ("POST /healthz HTTP/1.1", JSON_HEAD),
        ("POST /validate/ HTTP/1.1", JSON_HEAD),
        ("POST /validate HTTP/1.0", JSON_HEAD),
        ("POST  /validate HTTP/1.1", JSON_HEAD),
        ("post /validate HTTP/1.1", JSON_HEAD),
        ("POST /validate?timeout=5s extra HTTP/1.1", JSON_HEAD),
        ("POST /validate?timeout=\x7f HTTP/1.1", JSON_HEAD),
        ("POST /validate?caf\u00e9 HTTP/1.1", JSON_HEAD),
        ("POST /validate HTTP/1.1", ("Content-Type: application/json",)),  # no length
        ("POST /validate HTTP/1.1", ("Content-Length: 2",)),  # no type
        ("POST /validate HTTP/1.1", ("Content-Type: application/json; charset=utf-8", "Content-Length: 2")),
        ("POST /validate HTTP/1.1", ("Content-Type: text/plain", "Content-Length: 2")),
        ("POST /validate HTTP/1.1", (*JSON_HEAD, "Content-Type: application/json")),  # twice
        ("POST /validate HTTP/1.1", (*JSON_HEAD, "Content-Length: 2")),  # twice
        ("POST /validate HTTP/1.1", ("Content-Type: application/json", "Content-Length: -2")),
        ("POST /validate HTTP/1.1", ("Content-Type: application/json", "Content-Length: 2 2")),
        ("POST /validate HTTP/1.1", ("Content-Type: application/json", "Content-Length: 0x10")),
        ("POST /validate HTTP/1.1", ("Content-Type: application/json", "Content-Length: 12345678901")),
        ("POST /validate HTTP/1.1", ("Content-Type: application/json", f"Content-Length: {OFFLOAD_BYTES}")),
        ("POST /validate HTTP/1.1", ("Content-Type: application/json", "Transfer-Encoding: chunked")),
        ("POST /validate HTTP/1.1", (*JSON_HEAD, "Transfer-Encoding: chunked")),
        ("POST /validate HTTP/1.1", (*JSON_HEAD, "Expect: 100-continue")),
        ("POST /validate HTTP/1.1", (*JSON_HEAD, "Connection: close")),
        ("POST /validate HTTP/1.1", (*JSON_HEAD, "Connection: Upgrade", "Upgrade: h2c")),
        ("POST /validate HTTP/1.1", (*JSON_HEAD, " folded: value")),  # obsolete line folding
        ("POST /validate HTTP/1.1", (*JSON_HEAD, "Bad Name: x")),
        ("POST /validate HTTP/1.1", (*JSON_HEAD, ": no name")),
        ("POST /validate HTTP/1.1", (*JSON_HEAD, "no colon")),
        ("POST /validate HTTP/1.1", (*JSON_HEAD, "X-Control: a\x01b")),
        ("POST /validate HTTP/1.1", (*JSON_HEAD, "X-Bare-CR: a\rb")),
    ],
)
def test_anything_else_is_handed_to_aiohttp(request_line, lines):
    assert parse_head(head(*lines, request_line=request_line), REVIEWS, OFFLOAD_BYTES) is HAND_OVER


def test_keep_alive_is_taken():
    request = head(*JSON_HEAD, "Connection: Keep-Alive")
    assert parse_head(request, REVIEWS, OFFLOAD_BYTES) == (REVIEWS[b"/validate"], len(request), 2)


def test_a_head_past_aiohttps_limit_is_handed_over_unfinished():
    assert parse_head(b"POST /validate HTTP/1.1\r\nX: " + b"a" * MAX_HEAD_BYTES, REVIEWS, OFFLOAD_BYTES) is HAND_OVER
    assert parse_head(b"POST /validate HTTP/1.1\r\nX: " + b"a" * 100, REVIEWS, OFFLOAD_BYTES) is None


# --- the protocol, with a recording transport ---------------------------------------------------


class RecordingTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written: list[bytes] = []
        self.reading = True
        self.closed = False
        self.protocol: asyncio.BaseProtocol | None = None

    def write(self, data: bytes) -> None:  # type: ignore[override]
        self.written.append(bytes(data))

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def close(self) -> None:
        self.closed = True

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self.protocol = protocol
        self.written_before_hand_over = len(self.written)


class RecordingProtocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.received = b""
        self.transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.received += data


def review_request(path: str, body: bytes, content_type: str = "application/json") -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


def echo_lane(idle_timeout: float = 3600.0) -> tuple[FastLane, list[RecordingProtocol]]:
    handed: list[RecordingProtocol] = []

    def fallback() -> RecordingProtocol:
        handed.append(RecordingProtocol())
        return handed[-1]

    reviews = {
        "/validate": lambda body, arrived: (200, b"echo " + body),
        "/mutate": lambda body, arrived: (400, b"no\n"),
    }
    return FastLane(reviews, fallback, offload_bytes=OFFLOAD_BYTES, idle_timeout=idle_timeout), handed


async def reviewed() -> None:
    """Let the loop end its iteration: the requests queued in it are reviewed and answered."""
    await asyncio.sleep(0)


def bodies_of(written: list[bytes]) -> list[bytes]:
    return [chunk.partition(b"\r\n\r\n")[2] for chunk in written]


async def test_requests_split_anywhere_and_pipelined_are_answered_in_order():
    lane, handed = echo_lane()
    stream = b"".join(
        (review_request("/validate", b"{1}"), review_request("/validate", b"{22}"), review_request("/mutate", b"{}"))
    )
    for piece in (1, 2, 7, 64, len(stream)):
        connection, transport = lane(), RecordingTransport()
        connection.connection_made(transport)
        for start in range(0, len(stream), piece):
            connection.data_received(stream[start : start + piece])
        await reviewed()
        assert bodies_of(transport.written) == [b"echo {1}", b"echo {22}", b"no\n"], piece
        assert transport.written[0].startswith(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
        assert transport.written[2].startswith(b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8")
        assert re.search(rb"\r\nContent-Length: 8\r\n", transport.written[0])
        assert not connection.buffer and not handed
        connection.connection_lost(None)
    assert not lane.connections


async def test_the_first_request_it_does_not_take_hands_the_connection_over_with_every_byte_after_it():
    lane, handed = echo_lane()
    connection, transport = lane(), RecordingTransport()
    connection.connection_made(transport)
    rest = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" + review_request("/validate", b"{3}")
    connection.data_received(review_request("/validate", b"{1}") + rest[:10])
    connection.data_received(rest[10:])
    assert not handed  # not before the answer to the request queued ahead of it
    await reviewed()
    assert bodies_of(transport.written) == [b"echo {1}"]
    assert transport.written_before_hand_over == 1
    assert len(handed) == 1 and handed[0].received == rest
    assert transport.protocol is handed[0] and handed[0].transport is transport
    assert connection not in lane.connections


async def test_a_client_that_does_not_read_is_not_read_from():
    lane, _ = echo_lane()
    connection, transport = lane(), RecordingTransport()
    connection.connection_made(transport)
    connection.pause_writing()
    assert not transport.reading
    connection.data_received(review_request("/validate", b"{1}") + review_request("/validate", b"{2}"))
    assert transport.written == []
    connection.resume_writing()
    assert transport.reading
    await reviewed()
    assert bodies_of(transport.written) == [b"echo {1}", b"echo {2}"]


async def test_an_unexpected_failure_closes_the_connection_and_is_logged(caplog):
    def broken(body: bytes, arrived: float) -> tuple[int, bytes]:
        raise RuntimeError("boom")

    lane = FastLane(
        {"/validate": broken, "/mutate": REVIEWS[b"/mutate"]}, RecordingProtocol, offload_bytes=OFFLOAD_BYTES
    )
    connection, transport = lane(), RecordingTransport()
    connection.connection_made(transport)
    other, other_transport = lane(), RecordingTransport()
    other.connection_made(other_transport)
    connection.data_received(review_request("/validate", b"{}"))
    other.data_received(review_request("/mutate", b"{}"))
    await reviewed()
    assert transport.closed and transport.written == []
    assert "unexpected error reviewing a request on an admission connection" in caplog.text
    assert bodies_of(other_transport.written) == [b"m"]  # the rest of the queue is answered


async def test_the_requests_read_in_one_loop_iteration_are_all_reviewed_then_all_answered():
    events: list[str] = []

    class EventTransport(RecordingTransport):
        def write(self, data: bytes) -> None:  # type: ignore[override]
            events.append("answer")
            super().write(data)

    def review(body: bytes, arrived: float) -> tuple[int, bytes]:
        events.append("review")
        return 200, body

    lane = FastLane({"/validate": review}, RecordingProtocol, offload_bytes=OFFLOAD_BYTES)
    transports = [EventTransport() for _ in range(3)]
    for transport in transports:
        connection = lane()
        connection.connection_made(transport)
        connection.data_received(review_request("/validate", b"{}"))
    assert events == []
    await reviewed()
    assert events == ["review"] * 3 + ["answer"] * 3
    assert all(bodies_of(t.written) == [b"{}"] for t in transports)


async def test_idle_connections_are_closed_and_busy_ones_kept():
    lane, _ = echo_lane(idle_timeout=0.1)
    idle, idle_transport = lane(), RecordingTransport()
    idle.connection_made(idle_transport)
    busy, busy_transport = lane(), RecordingTransport()
    busy.connection_made(busy_transport)
    for _ in range(4):
        await asyncio.sleep(0.06)
        busy.data_received(review_request("/validate", b"{}"))
    assert idle_transport.closed and not busy_transport.closed
    assert lane.connections == {busy}
    await asyncio.sleep(0.25)
    assert busy_transport.closed


async def test_requests_still_arriving_are_counted_for_the_drain():
    lane, _ = echo_lane()
    connection, transport = lane(), RecordingTransport()
    connection.connection_made(transport)
    whole = review_request("/validate", b"{12345}")
    connection.data_received(whole[:-3])
    assert lane.arriving == 1
    connection.data_received(whole[-3:])
    assert lane.arriving == 1  # read, queued for review, not answered yet
    await reviewed()
    assert lane.arriving == 0
    lane.close()
    assert transport.closed and not lane.connections


# --- the real server: the fast path and aiohttp answer alike --------------------------------------


@pytest.fixture
async def server(tls_dir):
    server = WebhookServer(tls_dir, "127.0.0.1", 0)
    await server.start()
    yield server
    await server.shutdown()


def exchange(port: int, ca_file: Path, payload: bytes, responses: int) -> list[tuple[int, dict[str, str], bytes]]:
    """Send ``payload`` on one TLS connection and read ``responses`` HTTP answers from it."""
    context = ssl.create_default_context(cafile=str(ca_file))
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as connection,
    ):
        connection.sendall(payload)
        data = b""
        answers: list[tuple[int, dict[str, str], bytes]] = []
        while len(answers) < responses:
            while b"\r\n\r\n" not in data:
                chunk = connection.recv(65536)
                if not chunk:
                    return answers
                data += chunk
            head_bytes, _, data = data.partition(b"\r\n\r\n")
            status_line, *lines = head_bytes.decode().split("\r\n")
            headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
            length = int(headers.get("content-length", "0"))
            while len(data) < length:
                data += connection.recv(65536)
            answers.append((int(status_line.split()[1]), headers, data[:length]))
            data = data[length:]
        return answers


def invalid_tfjob() -> dict:
    job = tfjob()
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = "Not A Name"
    return job


BODIES = {
    "valid": json.dumps(admission_review(tfjob(), uid="valid")).encode(),
    "invalid": json.dumps(admission_review(invalid_tfjob(), uid="invalid")).encode(),
    "unserved kind": json.dumps(
        admission_review({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}, uid="cm")
    ).encode(),
    "malformed JSON": b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {',
    "not a review": b'{"hello": "world"}',
    "empty": b"",
    "not UTF-8": b'{"apiVersion": "\xff"}',
}


@pytest.mark.parametrize("name", BODIES)
@pytest.mark.parametrize("path", ["/mutate", "/validate"])
async def test_the_fast_path_answers_what_aiohttp_answers(server, tls_dir, path, name):
    body = BODIES[name]
    # The charset parameter makes it aiohttp's request, on a connection of its own.
    fast, slow = await asyncio.gather(
        asyncio.to_thread(exchange, server.port, tls_dir / "ca.crt", review_request(path, body), 1),
        asyncio.to_thread(
            exchange, server.port, tls_dir / "ca.crt", review_request(path, body, "application/json; charset=utf-8"), 1
        ),
    )
    (fast_status, fast_headers, fast_body), (slow_status, slow_headers, slow_body) = fast[0], slow[0]
    assert (fast_status, fast_body) == (slow_status, slow_body)
    assert fast_headers["content-type"] == slow_headers["content-type"]
    assert fast_headers["server"] == slow_headers["server"]
    assert "date" in fast_headers
    assert fast_status in (200, 400)


async def test_one_connection_goes_from_the_fast_path_to_aiohttp_and_keeps_answering(server, tls_dir):
    valid = BODIES["valid"]
    payload = (
        review_request("/validate", valid)
        + review_request("/mutate", valid)
        + b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        + review_request("/validate", valid)
        + review_request("/validate", valid, "text/plain")
        + b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    )
    answers = await asyncio.to_thread(exchange, server.port, tls_dir / "ca.crt", payload, 6)
    assert [status for status, _, _ in answers] == [200, 200, 200, 200, 415, 200]
    assert json.loads(answers[1][2])["response"]["patchType"] == "JSONPatch"
    assert answers[2][2] == b"ok\n"
    metrics = answers[5][2].decode()
    assert (
        'jobgate_admission_reviews_total{kind="TFJob",operation="CREATE",verdict="allowed",webhook="validate"} 2.0'
        in (metrics)
    )
    assert 'jobgate_admission_rejected_requests_total{code="415"} 1.0' in metrics
    # The two reviews before /healthz took the fast path, the one after it aiohttp's handler.
    assert "jobgate_admission_general_handler_reviews_total 1.0" in metrics


@pytest.mark.parametrize(
    ("payload", "status", "malformed"),
    [
        # chunked body: aiohttp reads it
        (
            b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
            + f"{len(BODIES['valid']):x}\r\n".encode()
            + BODIES["valid"]
            + b"\r\n0\r\n\r\n",
            200,
            False,
        ),
        (b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\r\n", 400, False),  # no body
        (b"GET /mutate HTTP/1.1\r\nHost: x\r\n\r\n", 405, False),
        (review_request("/elsewhere", b"{}"), 404, False),
        (
            b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
            b"Content-Length: 3\r\n\r\n{}",
            400,
            True,
        ),
        (b"POST /validate HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 10000 + b"\r\n\r\n", 400, True),  # line too long
        (b"POST /validate HTTP/1.1 extra\r\nHost: x\r\n\r\n", 400, True),
    ],
    ids=["chunked", "no length", "wrong method", "unknown path", "two lengths", "huge header", "bad request line"],
)
async def test_requests_the_fast_path_does_not_take_get_aiohttps_answers(
    server, tls_dir, caplog, *, payload, status, malformed
):
    answers = await asyncio.to_thread(exchange, server.port, tls_dir / "ca.crt", payload, 1)
    assert [answer_status for answer_status, _, _ in answers] == [status]
    # A malformed request is the client's fault: one warning line, no traceback.
    assert not [record for record in caplog.records if record.exc_info or record.levelno >= logging.ERROR]
    lines = [record.getMessage() for record in caplog.records if "malformed HTTP" in record.getMessage()]
    assert len(lines) == (1 if malformed else 0), lines
    assert all(line.startswith("malformed HTTP request refused with 400: ") for line in lines)


async def test_a_body_to_offload_goes_to_the_large_review_workers(server, tls_dir):
    review = admission_review(tfjob(), uid="large")
    review["request"]["object"]["metadata"]["annotations"] = {"padding": "x" * OFFLOAD_BYTES}
    body = json.dumps(review).encode()
    answers = await asyncio.to_thread(exchange, server.port, tls_dir / "ca.crt", review_request("/validate", body), 1)
    assert answers[0][0] == 200 and json.loads(answers[0][2])["response"]["uid"] == "large"


async def test_shutdown_closes_idle_keep_alive_connections(tls_dir):
    server = WebhookServer(tls_dir, "127.0.0.1", 0)
    await server.start()
    context = ssl.create_default_context(cafile=str(tls_dir / "ca.crt"))
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=context)
    writer.write(review_request("/validate", BODIES["valid"]))
    assert (await reader.readline()).startswith(b"HTTP/1.1 200")
    await server.shutdown()
    rest = await asyncio.wait_for(reader.read(), 5)  # the answer's remains, then EOF
    assert rest.endswith(b"}")
    writer.close()
