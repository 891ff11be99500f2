"""Real HTTPS servers: protocol versions, plaintext, certificate reload, graceful shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
import signal
import socket
import ssl
import subprocess
import sys
import time
import warnings
from pathlib import Path

import aiohttp
import pytest

from jobgate.certs.authority import (
    cert_pem,
    create_ca,
    init_directory,
    issue_serving_cert,
    key_pem,
    load_cert_bundle,
    write_atomically,
)
from jobgate.webhook.server import WebhookServer
from testkit.builders import admission_review, tfjob

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def tls_dir(tmp_path):
    directory = tmp_path / "tls"
    init_directory(directory, ["localhost"], ["127.0.0.1"])
    return directory


@pytest.fixture
async def server(tls_dir):
    server = WebhookServer(tls_dir, "127.0.0.1", 0, cert_check_interval=0.05)
    await server.start()
    yield server
    await server.shutdown()


def client_context(ca_file: Path, *, version: ssl.TLSVersion | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca_file))
    if version is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            context.minimum_version = version
            context.maximum_version = version
            if version < ssl.TLSVersion.TLSv1_2:
                context.set_ciphers("DEFAULT:@SECLEVEL=0")
    return context


def peer_certificate_digest(port: int, ca_file: Path) -> str:
    context = client_context(ca_file)
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        return hashlib.sha256(tls.getpeercert(binary_form=True)).hexdigest()


def file_digest(path: Path) -> str:
    from cryptography.hazmat.primitives import serialization

    return hashlib.sha256(load_cert_bundle(path)[0].public_bytes(serialization.Encoding.DER)).hexdigest()


async def post_review(session: aiohttp.ClientSession, port: int, context: ssl.SSLContext, uid: str) -> int:
    body = json.dumps(admission_review(tfjob(), uid=uid))
    async with session.post(
        f"https://127.0.0.1:{port}/mutate", data=body, headers={"Content-Type": "application/json"}, ssl=context
    ) as response:
        answer = await response.json()
        assert answer["response"]["uid"] == uid
        return response.status


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
async def test_tls_12_and_13_are_served(server, tls_dir, version):
    async with aiohttp.ClientSession() as session:
        status = await post_review(session, server.port, client_context(tls_dir / "ca.crt", version=version), "ok")
    assert status == 200


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1])
async def test_old_tls_is_refused(server, tls_dir, version):
    context = client_context(tls_dir / "ca.crt", version=version)

    def handshake():
        with (
            socket.create_connection(("127.0.0.1", server.port), timeout=5) as raw,
            context.wrap_socket(raw, server_hostname="127.0.0.1"),
        ):
            pass

    with pytest.raises(ssl.SSLError) as caught:
        await asyncio.to_thread(handshake)
    # The client did send its hello (a client unable to speak the version would fail with
    # NO_PROTOCOLS_AVAILABLE before that); the server refused it, by alert or by hanging up.
    reason = str(caught.value)
    assert "NO_PROTOCOLS_AVAILABLE" not in reason
    assert any(r in reason for r in ("PROTOCOL_VERSION", "UNSUPPORTED_PROTOCOL", "UNEXPECTED_EOF")), reason


async def test_plain_http_gets_no_http_answer(server):
    def plain_request() -> bytes:
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as raw:
            raw.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            chunks = []
            with contextlib.suppress(OSError):
                while chunk := raw.recv(4096):
                    chunks.append(chunk)
            return b"".join(chunks)

    answer = await asyncio.to_thread(plain_request)
    assert not answer.startswith(b"HTTP/")


def new_pair(tls_dir: Path, *, new_ca: bool) -> tuple[bytes, bytes, bytes]:
    """(ca bundle, cert, key): a new leaf, signed by a new CA or by the existing one."""
    from jobgate.certs.authority import load_key

    if new_ca:
        ca_key, ca_cert = create_ca()
        bundle = cert_pem(ca_cert) + (tls_dir / "ca.crt").read_bytes()
    else:
        ca_key, ca_cert = load_key(tls_dir / "ca.key"), load_cert_bundle(tls_dir / "ca.crt")[0]
        bundle = (tls_dir / "ca.crt").read_bytes()
    key, cert = issue_serving_cert(ca_key, ca_cert, ["localhost"], ["127.0.0.1"])
    return bundle, cert_pem(cert), key_pem(key)


async def wait_for(predicate, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)


@pytest.mark.parametrize("in_place", [True, False], ids=["rewritten-in-place", "renamed-over"])
async def test_certificate_is_reloaded_under_load(server, tls_dir, tmp_path, in_place):
    old_digest = await asyncio.to_thread(peer_certificate_digest, server.port, tls_dir / "ca.crt")
    bundle, cert, key = new_pair(tls_dir, new_ca=True)
    trust = tmp_path / "bundle.crt"
    trust.write_bytes(bundle)
    context = client_context(trust)
    results: list[int] = []
    stop = asyncio.Event()

    async def keep_calling(keep_alive: bool) -> None:
        connector = aiohttp.TCPConnector(force_close=not keep_alive)
        async with aiohttp.ClientSession(connector=connector) as session:
            while not stop.is_set():
                results.append(await post_review(session, server.port, context, f"uid-{len(results)}"))

    callers = [asyncio.create_task(keep_calling(keep_alive)) for keep_alive in (True, False, True)]
    await asyncio.sleep(0.3)
    if in_place:
        (tls_dir / "tls.key").write_bytes(key)
        (tls_dir / "tls.crt").write_bytes(cert)
    else:
        write_atomically(tls_dir / "tls.key", key, 0o600)
        write_atomically(tls_dir / "tls.crt", cert, 0o644)
    new_digest = file_digest(tls_dir / "tls.crt")
    assert new_digest != old_digest
    await wait_for(
        lambda: (
            server.certificate.current is not None
            and server.state.metrics.certificate_reloads.labels("success")._value.get() >= 2
        )
    )
    await asyncio.sleep(0.3)
    stop.set()
    await asyncio.gather(*callers)
    assert results and set(results) == {200}
    assert await asyncio.to_thread(peer_certificate_digest, server.port, trust) == new_digest


async def test_a_mismatched_pair_is_not_loaded(server, tls_dir):
    served = await asyncio.to_thread(peer_certificate_digest, server.port, tls_dir / "ca.crt")
    _, cert, _ = new_pair(tls_dir, new_ca=False)
    (tls_dir / "tls.crt").write_bytes(cert)  # key left as it was: the pair does not match
    await wait_for(lambda: server.state.metrics.certificate_reloads.labels("failure")._value.get() >= 1)
    assert await asyncio.to_thread(peer_certificate_digest, server.port, tls_dir / "ca.crt") == served
    assert server.state.ready


async def test_missing_certificate_refuses_to_start(tmp_path):
    from jobgate.webhook.tlsreload import CertificateError

    server = WebhookServer(tmp_path, "127.0.0.1", 0)
    with pytest.raises(CertificateError, match=r"cannot read .*tls\.crt"):
        await server.start()


# --- the real command, with signals ---------------------------------------------------------


class RunningWebhook:
    def __init__(self, tls_dir: Path, *extra: str) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jobgate",
                "webhook",
                "--tls-dir",
                str(tls_dir),
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                *extra,
            ],
            cwd=REPO,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self.port = 0
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            line = self.process.stderr.readline()
            if not line:
                break
            self.lines.append(line)
            match = re.search(r"https://127\.0\.0\.1:(\d+)", line)
            if match:
                self.port = int(match.group(1))
                return
        self.process.kill()
        raise AssertionError("webhook did not start: " + "".join(self.lines) + self.process.stderr.read())

    def finish(self, timeout: float = 20) -> tuple[int, str]:
        try:
            _, rest = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise
        return self.process.returncode, "".join(self.lines) + rest


def open_tls(port: int, ca_file: Path) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    return client_context(ca_file).wrap_socket(raw, server_hostname="127.0.0.1")


def read_http_response(connection: ssl.SSLSocket) -> tuple[int, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(re.search(rb"(?i)content-length: (\d+)", head).group(1))
    while len(body) < length:
        body += connection.recv(65536)
    return int(head.split()[1]), body


def test_sigterm_lets_an_in_flight_review_finish_and_exits_0(tls_dir):
    webhook = RunningWebhook(tls_dir)
    body = json.dumps(admission_review(tfjob(), uid="in-flight")).encode()
    connection = open_tls(webhook.port, tls_dir / "ca.crt")
    head = (
        f"POST /mutate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    connection.sendall(head + body[:100])  # the review is now in flight, its body half sent
    time.sleep(0.3)
    webhook.process.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    with pytest.raises(OSError):
        open_tls(webhook.port, tls_dir / "ca.crt").close()  # the listener no longer accepts
    connection.sendall(body[100:])
    status, answer = read_http_response(connection)
    connection.close()
    assert status == 200
    assert json.loads(answer)["response"]["uid"] == "in-flight"
    code, log = webhook.finish()
    assert code == 0, log
    assert "draining" in log and "stopped" in log


def test_uvloop_serves_reloads_certificates_and_drains(tls_dir, tmp_path):
    pytest.importorskip("uvloop")
    webhook = RunningWebhook(tls_dir, "--event-loop", "uvloop", "--cert-check-interval", "0.05")
    assert "event loop: uvloop" in "".join(webhook.lines)
    body = json.dumps(admission_review(tfjob(), uid="on-uvloop")).encode()
    request = (
        f"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        f"\r\n".encode()
        + body
    )
    connection = open_tls(webhook.port, tls_dir / "ca.crt")
    connection.sendall(request)
    status, answer = read_http_response(connection)
    assert (status, json.loads(answer)["response"]["uid"]) == (200, "on-uvloop")
    bundle, cert, key = new_pair(tls_dir, new_ca=True)
    trust = tmp_path / "bundle.crt"
    trust.write_bytes(bundle)
    write_atomically(tls_dir / "tls.key", key, 0o600)
    write_atomically(tls_dir / "tls.crt", cert, 0o644)
    new_digest = file_digest(tls_dir / "tls.crt")
    deadline = time.monotonic() + 10
    while peer_certificate_digest(webhook.port, trust) != new_digest:
        assert time.monotonic() < deadline, "the new certificate was not served"
        time.sleep(0.05)
    connection.sendall(request)  # the connection opened before the reload keeps working
    assert read_http_response(connection)[0] == 200
    # Handed from the fast path to aiohttp's handler on uvloop's transport, it keeps answering.
    connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert read_http_response(connection) == (200, b"ok\n")
    connection.sendall(request)
    assert read_http_response(connection)[0] == 200
    connection.close()
    webhook.process.send_signal(signal.SIGTERM)
    code, log = webhook.finish()
    assert code == 0, log
    assert "stopped" in log


def test_readiness_turns_false_while_draining(tls_dir):
    webhook = RunningWebhook(tls_dir, "--shutdown-delay", "2")

    def get(path: str) -> int:
        connection = open_tls(webhook.port, tls_dir / "ca.crt")
        connection.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        status, _ = read_http_response(connection)
        connection.close()
        return status

    assert get("/readyz") == 200
    webhook.process.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    assert get("/readyz") == 503
    assert get("/healthz") == 200
    code, log = webhook.finish()
    assert code == 0, log


def test_drain_omit_readiness_keeps_readyz_answering_ok_while_draining(tls_dir):
    """The measurement knob does what it says (bench/drain_pieces.py compares with and without)."""
    webhook = RunningWebhook(tls_dir, "--shutdown-delay", "2", "--drain-omit", "readiness")
    webhook.process.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    connection = open_tls(webhook.port, tls_dir / "ca.crt")
    connection.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert read_http_response(connection)[0] == 200
    connection.close()
    assert webhook.finish()[0] == 0


def test_drain_omit_connection_close_keeps_connections_open_while_draining(tls_dir):
    webhook = RunningWebhook(tls_dir, "--shutdown-delay", "3", "--drain-omit", "connection-close")
    body = json.dumps(admission_review(tfjob(name="drain"), uid="uid-drain")).encode()
    request = (
        f"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    connection = open_tls(webhook.port, tls_dir / "ca.crt")
    webhook.process.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    for _ in range(2):  # the same connection answers twice: it was not closed
        connection.sendall(request)
        assert read_http_response(connection)[0] == 200
    connection.close()
    assert webhook.finish()[0] == 0


def test_answers_while_draining_close_their_keep_alive_connection(tls_dir):
    """A connection opened before SIGTERM gets its answers with ``Connection: close`` and is then
    closed: the apiserver's next request opens a new connection, which the Service sends to a
    replica still serving, instead of reusing one that this replica will close under it."""
    webhook = RunningWebhook(tls_dir, "--shutdown-delay", "3")
    body = json.dumps(admission_review(tfjob(name="drain"), uid="uid-drain")).encode()
    request = (
        f"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    fast, chunked = open_tls(webhook.port, tls_dir / "ca.crt"), open_tls(webhook.port, tls_dir / "ca.crt")
    fast.sendall(request)
    assert read_http_response(fast)[0] == 200  # keep-alive before SIGTERM

    webhook.process.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    fast.sendall(request)
    answer = b""
    while chunk := fast.recv(65536):  # until the server closes the connection
        answer += chunk
    head = answer.partition(b"\r\n\r\n")[0].lower()
    assert head.startswith(b"http/1.1 200") and b"connection: close" in head, head
    # aiohttp's handler (a chunked body is not the fast path's) answers the same way.
    chunked.sendall(
        b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"%x\r\n" % len(body)
        + body
        + b"\r\n0\r\n\r\n"
    )
    answer = b""
    while chunk := chunked.recv(65536):
        answer += chunk
    head = answer.partition(b"\r\n\r\n")[0].lower()
    assert head.startswith(b"http/1.1 200") and b"connection: close" in head, head
    code, log = webhook.finish()
    assert code == 0, log


def test_json_logs_one_line_per_review(tls_dir):
    webhook = RunningWebhook(tls_dir, "--log-format", "json")
    body = json.dumps(admission_review(tfjob(name="jsonlog"), uid="uid-json")).encode()
    connection = open_tls(webhook.port, tls_dir / "ca.crt")
    connection.sendall(
        f"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        f"Connection: close\r\n\r\n".encode()
        + body
    )
    assert read_http_response(connection)[0] == 200
    connection.close()
    webhook.process.send_signal(signal.SIGTERM)
    code, log = webhook.finish()
    assert code == 0
    records = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    (review_record,) = [r for r in records if r["msg"] == "review"]
    assert review_record["uid"] == "uid-json"
    assert review_record["object"] == "default/jsonlog"
    assert review_record["verdict"] == "allowed"
    assert "spec" not in review_record


def test_webhook_without_certificates_exits_2(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "jobgate", "webhook", "--tls-dir", str(tmp_path), "--port", "0"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2
    assert "cannot start" in result.stderr and "tls.crt" in result.stderr
    assert "Traceback" not in result.stderr
