"""Large bodies go to worker processes; a backlog that could not be answered in time is refused at once.

No timing is asserted: the backlog is priced by size, so these tests set the price and watch
which reviews are accepted.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import ssl

import aiohttp
import pytest

from jobgate.webhook.admission import Webhook
from jobgate.webhook.large_reviews import WORKER_NICENESS, LargeReviewPool, budget_from_timeout, large_review_workers
from jobgate.webhook.outcome import _review_in_worker
from jobgate.webhook.server import OFFLOAD_BYTES, ServerState, WebhookServer
from testkit.builders import admission_review, container, replica, tfjob


def large_body(types: int = 2_500) -> bytes:
    body = json.dumps(admission_review(tfjob({f"Worker{i}": replica(container()) for i in range(types)}))).encode()
    assert len(body) >= OFFLOAD_BYTES
    return body


@pytest.fixture
async def server(tls_dir):
    server = WebhookServer(tls_dir, "127.0.0.1", 0, cert_check_interval=5, state=ServerState())
    await server.start()
    yield server
    await server.shutdown()


def test_one_worker_per_spare_cpu_at_most_four():
    cpus = len(os.sched_getaffinity(0))
    assert large_review_workers() == max(1, min(4, cpus - 1))


async def test_a_review_is_refused_when_the_backlog_would_answer_it_past_the_budget():
    pool = LargeReviewPool(workers=1, budget_seconds=1.0)
    pool.start()
    try:
        body = large_body()
        pool.seconds_per_byte = 0.6 / len(body)  # each review priced 0.6 s: a second one waits 1.2 s
        first, second = await asyncio.gather(pool.review(body, Webhook.VALIDATE), pool.review(body, Webhook.VALIDATE))
        assert first.status == 200
        assert second.status == 429
        assert "too many large reviews" in second.message and "retry" in second.message
        assert pool.refused == 1
        assert pool.pending_seconds == 0.0  # the answered review no longer counts
        again = await pool.review(body, Webhook.VALIDATE)  # once the backlog is gone, accepted again
        assert again.status == 200
    finally:
        pool.stop()


async def test_a_request_budget_replaces_the_pools():
    pool = LargeReviewPool(workers=1, budget_seconds=1.0)
    pool.start()
    try:
        body = large_body()
        pool.seconds_per_byte = 0.6 / len(body)  # the second waits 1.2 s: past 1.0, within 5.0
        first, second = await asyncio.gather(
            pool.review(body, Webhook.VALIDATE, 5.0), pool.review(body, Webhook.VALIDATE, 5.0)
        )
        assert (first.status, second.status) == (200, 200)
    finally:
        pool.stop()


@pytest.mark.parametrize(
    ("timeout", "budget"),
    [
        ("10s", 9.5),  # the apiserver's form: the webhook's timeoutSeconds as a Go duration
        ("3s", 2.5),
        ("1s", 0.5),  # never below the minimum
        ("1.5s", 1.0),
        ("1500ms", 1.0),
        ("1m0s", 29.5),  # the apiserver allows at most 30 s
        ("45s", 29.5),
        (None, None),  # no parameter: the pool's own budget
        ("", None),
        ("10", None),  # not a duration
        ("-1s", None),
        ("s", None),
        ("9" * 40 + "s", None),
    ],
)
def test_the_budget_follows_the_apiservers_timeout(timeout, budget):
    assert budget_from_timeout(timeout) == (pytest.approx(budget) if budget is not None else None)


async def test_a_review_alone_is_accepted_whatever_its_price():
    pool = LargeReviewPool(workers=1, budget_seconds=0.001)
    pool.start()
    try:
        body = large_body()
        pool.seconds_per_byte = 10.0 / len(body)
        assert (await pool.review(body, Webhook.MUTATE)).status == 200
    finally:
        pool.stop()


async def test_two_workers_share_the_backlog():
    pool = LargeReviewPool(workers=2, budget_seconds=1.0)
    pool.start()
    try:
        body = large_body()
        pool.seconds_per_byte = 0.6 / len(body)  # second: 0.6 / 2 + 0.6 fits; third: 1.2 / 2 + 0.6 does not
        outcomes = await asyncio.gather(*(pool.review(body, Webhook.VALIDATE) for _ in range(3)))
        assert [o.status for o in outcomes] == [200, 200, 429]
    finally:
        pool.stop()


def test_the_price_follows_the_workers_measurements_within_bounds():
    pool = LargeReviewPool(workers=1)
    pool.learn(2.0, 1_000_000)  # slower than priced: the price rises at once
    assert pool.seconds_per_byte == pytest.approx(2e-6)
    pool.learn(0.0, 1_000_000)  # faster: it comes down by RATE_DECAY per answer
    assert pool.seconds_per_byte == pytest.approx(2e-6 * LargeReviewPool.RATE_DECAY)
    for _ in range(100):
        pool.learn(0.0, 1_000_000)
    assert pool.seconds_per_byte == LargeReviewPool.MIN_SECONDS_PER_BYTE  # and never below the floor


async def test_the_server_answers_429_with_retry_after_then_reviews_again(server, tls_dir):
    context = ssl.create_default_context(cafile=str(tls_dir / "ca.crt"))
    url = f"https://127.0.0.1:{server.port}/validate"
    pool = server.state.large_reviews
    body = large_body()
    headers = {"Content-Type": "application/json"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as session:
        pool.pending_seconds = pool.budget_seconds * pool.workers  # a backlog as long as the budget
        async with session.post(url, data=body, headers=headers) as response:
            assert response.status == 429
            assert response.headers["Retry-After"] == "1"
            text = await response.text()
            assert text.count("\n") == 1 and "too many large reviews" in text
        # The same backlog within the budget of an apiserver that waits 30 s (timeoutSeconds: 30).
        async with session.post(f"{url}?timeout=30s", data=body, headers=headers) as response:
            assert response.status == 200
        pool.pending_seconds = 0.0
        async with session.post(url, data=body, headers=headers) as response:
            assert response.status == 200
            answer = json.loads(await response.read())["response"]
            assert answer["allowed"] is False  # Worker0..2499 are not TFJob replica types
    metrics = server.state.metrics.registry.get_sample_value(
        "jobgate_admission_rejected_requests_total", {"code": "429"}
    )
    assert metrics == 1.0


def test_workers_run_below_the_event_loops_priority():
    pool = LargeReviewPool(workers=1)
    pool.start()
    try:
        assert pool._executor is not None
        worker_niceness = pool._executor.submit(os.nice, 0).result()
        assert worker_niceness == min(19, os.nice(0) + WORKER_NICENESS)
    finally:
        pool.stop()


def test_a_large_review_runs_with_the_cyclic_collector_paused():
    body = large_body()
    automatic: list[bool] = []  # a collection while the collector is enabled is an automatic one
    gc.callbacks.append(lambda phase, info: automatic.append(gc.isenabled()) if phase == "start" else None)
    try:
        outcome, _ = _review_in_worker(body, "validate")
    finally:
        gc.callbacks.pop()
    assert outcome.status == 200
    # None during the review (~40 without the pause); at most the one due when it is enabled again.
    assert sum(automatic) <= 1
    assert gc.isenabled()


async def test_a_worker_dying_under_reviews_is_replaced_once_and_they_are_answered(caplog):
    pool = LargeReviewPool(workers=1)
    pool.start()
    try:
        assert pool._executor is not None
        old_executor = pool._executor
        (worker,) = old_executor._processes.values()
        body = large_body(10_000)  # six of these keep the worker busy ~0.5 s: several fail together
        reviews = [asyncio.ensure_future(pool.review(body, Webhook.VALIDATE)) for _ in range(6)]
        await asyncio.sleep(0.05)
        assert pool.pending_seconds > 0
        worker.kill()
        outcomes = await asyncio.gather(*reviews)
        assert [o.status for o in outcomes] == [200] * 6
        assert pool._executor is not None and pool._executor is not old_executor
        assert sum("worker died" in r.getMessage() for r in caplog.records) == 1
        assert (await pool.review(body, Webhook.VALIDATE)).status == 200  # through the new worker
    finally:
        pool.stop()
