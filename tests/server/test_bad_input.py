"""Hostile bodies over HTTPS against a running server: each gets a defined answer, never a 500 or
an internal error, never a traceback in the log, and the server answers a valid review right after."""

from __future__ import annotations

import json
import logging
import ssl
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest

from jobgate.webhook.server import MAX_BODY_BYTES, OFFLOAD_BYTES, WebhookServer
from testkit.builders import admission_review, container, replica, tfjob

EIGHT_MIB = 8 * 1024 * 1024


@pytest.fixture
async def server(tls_dir):
    server = WebhookServer(tls_dir, "127.0.0.1", 0, cert_check_interval=5)
    await server.start()
    yield server
    await server.shutdown()


def review_bytes(obj: dict[str, Any] | None = None, **changes: Any) -> bytes:
    review = admission_review(obj if obj is not None else tfjob())
    review["request"].update(changes)
    return json.dumps(review).encode()


def deep(levels: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


def with_first_container(change: Callable[[dict[str, Any]], None]) -> bytes:
    job = tfjob()
    change(job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0])
    return review_bytes(job)


def many_replica_types(count: int) -> bytes:
    job = tfjob({f"Worker{i}": replica(container()) for i in range(count)})
    return review_bytes(job)


def many_containers(count: int) -> bytes:
    image = "registry.example.com/vision/resnet50:2.16"
    return review_bytes(tfjob({"Worker": replica(*[container(f"c{i}", image=image) for i in range(count)])}))


VALID = review_bytes()

# name -> (body, the HTTP statuses it may get). 200 answers are further checked below.
CORPUS: dict[str, tuple[bytes, set[int]]] = {
    "empty": (b"", {400}),
    "not json": (b"apiVersion: admission.k8s.io/v1", {400}),
    "truncated": (VALID[: len(VALID) // 2], {400}),
    "truncated at the end": (VALID[:-1], {400}),
    "json array": (b"[]", {400}),
    "json null": (b"null", {400}),
    "nested 100,000 levels": (b"[" * 100_000 + b"]" * 100_000, {400}),
    "nested 1,000 levels in backoffLimit": (review_bytes(tfjob(backoffLimit=deep(1000))), {200}),
    "nested 1,000 levels in env": (with_first_container(lambda c: c.update(env=deep(990))), {200}),
    "huge integer": (review_bytes(tfjob(backoffLimit=12345)).replace(b"12345", b"9" * 5000), {400}),
    # orjson reads integers past 64 bits as floats: a field error on /validate, not a 400.
    "integer past 64 bits": (review_bytes(tfjob(backoffLimit=2**65)), {200}),
    "quantity 1e400": (with_first_container(lambda c: c.update(resources={"limits": {"cpu": "1e400"}})), {200}),
    "quantity of 5,000 digits": (
        with_first_container(lambda c: c.update(resources={"limits": {"memory": "9" * 5000}})),
        {200},
    ),
    "number 1e400": (review_bytes(tfjob(backoffLimit=12345)).replace(b"12345", b"1e400"), {400}),
    "non-UTF-8": (VALID.replace(b"tensorflow", b"tensor\xfflow", 1), {400}),
    "lone surrogate": (VALID.replace(b"tensorflow", b"\\ud800", 1), {400}),
    "wrong apiVersion": (VALID.replace(b"admission.k8s.io/v1", b"admission.k8s.io/v1beta1", 1), {400}),
    "wrong kind": (VALID.replace(b'"AdmissionReview"', b'"AdmissionResponse"', 1), {400}),
    "no uid": (review_bytes(uid=""), {400}),
    "object is a list": (review_bytes(object=[1, 2]), {400}),
    "object is a string": (review_bytes(object="TFJob"), {400}),
    "operation unknown": (review_bytes(operation="PATCH"), {400}),
    "request.kind of another type": (review_bytes(kind={"group": 1, "version": [], "kind": {}}), {400}),
    "unserved kind": (review_bytes({"apiVersion": "v1", "kind": "Pod", "spec": {}}), {200}),
    "spec of the wrong type": (review_bytes({**tfjob(), "spec": [1]}), {200}),
    "replica map of the wrong type": (review_bytes(tfjob(replicas=None) | {"spec": {"tfReplicaSpecs": "x"}}), {200}),
    "oldObject of the wrong type": (review_bytes(operation="UPDATE", oldObject=[1]), {200}),
    "10,000 replicas": (review_bytes(tfjob({"Worker": replica(container(), replicas=10_000)})), {200}),
    "10,000 replica types": (many_replica_types(10_000), {200}),
    "5,000 containers": (many_containers(5_000), {200}),
}


def _answer_is_proper(path: str, payload: dict[str, Any]) -> None:
    response = payload["response"]
    assert response["uid"], payload
    status = response.get("status") or {}
    assert status.get("code") != 500 and status.get("reason") != "InternalError", status
    assert not any("internal error" in w for w in response.get("warnings", [])), response
    if path == "/mutate":
        assert response["allowed"] is True, status


@pytest.fixture
def no_tracebacks(caplog):
    caplog.set_level(logging.INFO)
    yield
    with_tracebacks = [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
    assert not with_tracebacks, with_tracebacks[0].getMessage()


async def _post(session: aiohttp.ClientSession, url: str, data: Any, **kwargs: Any) -> tuple[int, bytes]:
    async with session.post(url, data=data, headers={"Content-Type": "application/json"}, **kwargs) as response:
        return response.status, await response.read()


async def _valid_review_answered(session: aiohttp.ClientSession, base: str) -> None:
    status, body = await _post(session, f"{base}/validate", VALID)
    assert status == 200 and json.loads(body)["response"]["allowed"] is True


@pytest.mark.parametrize("name", list(CORPUS))
@pytest.mark.parametrize("path", ["/mutate", "/validate"])
async def test_bad_body_gets_a_defined_answer(server, tls_dir, no_tracebacks, name, path):
    body, statuses = CORPUS[name]
    context = ssl.create_default_context(cafile=str(tls_dir / "ca.crt"))
    base = f"https://127.0.0.1:{server.port}"
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as session:
        status, answer = await _post(session, f"{base}{path}", body)
        assert status in statuses, (status, answer[:300])
        if status == 200:
            _answer_is_proper(path, json.loads(answer))
        else:
            text = answer.decode()
            assert text.endswith("\n") and text.count("\n") == 1 and len(text) > 5, text  # one plain line
        await _valid_review_answered(session, base)


async def _chunks(total: int, size: int = 64 * 1024) -> AsyncIterator[bytes]:
    sent = 0
    while sent < total:
        yield b" " * min(size, total - sent)
        sent += size


@pytest.mark.parametrize("with_length", [True, False], ids=["with Content-Length", "chunked"])
async def test_eight_mib_body_gets_413(server, tls_dir, no_tracebacks, with_length):
    context = ssl.create_default_context(cafile=str(tls_dir / "ca.crt"))
    base = f"https://127.0.0.1:{server.port}"
    data: Any = b" " * EIGHT_MIB if with_length else _chunks(EIGHT_MIB)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as session:
        try:
            status, _ = await _post(session, f"{base}/validate", data)
        except (aiohttp.ClientOSError, aiohttp.ServerDisconnectedError):
            status = 413  # the server may close while the body is still being sent, after its 413
        assert status == 413
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as session:
        await _valid_review_answered(session, base)


def test_corpus_bodies_stay_within_the_server_limit():
    # The large-object cases must be reviewed (by the worker process), not refused as too large.
    sizes = {name: len(CORPUS[name][0]) for name in ("10,000 replica types", "5,000 containers")}
    assert all(OFFLOAD_BYTES <= size <= MAX_BODY_BYTES for size in sizes.values()), sizes


def test_corpus_bodies_are_damaged_as_named():
    # Each replace() above must have hit, or the case would test a valid review.
    for name in ("huge integer", "number 1e400", "non-UTF-8", "lone surrogate", "wrong apiVersion", "wrong kind"):
        assert CORPUS[name][0] != VALID, name
    assert b"9" * 5000 in CORPUS["huge integer"][0]
    assert b"1e400" in CORPUS["number 1e400"][0]
