"""When the webhook meets a cluster without Volcano's Queue CRD: one line, then discovery again."""

from __future__ import annotations

import logging
import threading

import pytest

from jobgate.engine.views import ClusterViews
from jobgate.webhook import queues


class FakeKube:
    """Stands for a cluster whose discovery starts serving the Queue CRD after ``absent_for`` asks."""

    def __init__(self, absent_for: int) -> None:
        self.asks = 0
        self.absent_for = absent_for


@pytest.fixture
def cluster(monkeypatch):
    kube = FakeKube(absent_for=2)
    started = threading.Event()

    def served(k: FakeKube) -> bool:
        k.asks += 1
        return k.asks > k.absent_for

    monkeypatch.setattr(queues, "Kube", lambda kubeconfig: kube)
    monkeypatch.setattr(queues, "queue_crd_served", served)
    monkeypatch.setattr(queues, "_start_cache", lambda k, views: started.set())
    monkeypatch.setenv(queues.RECHECK_ENV, "0.01")
    return kube, started


def test_the_check_starts_when_the_crd_appears(cluster, caplog):
    kube, started = cluster
    stop = threading.Event()
    with caplog.at_level(logging.INFO, logger="jobgate.queues"):
        assert queues.start_queue_check("kubeconfig", ClusterViews(), stop=stop) is None
        assert started.wait(5), "the queue check never started"
    stop.set()
    assert kube.asks == 3
    off = [r for r in caplog.records if "queue check off" in r.getMessage()]
    assert len(off) == 1  # said once, not at every ask
    assert any("now served" in r.getMessage() for r in caplog.records)


def test_stopping_ends_the_rechecks(cluster):
    kube, started = cluster
    kube.absent_for = 10**9
    stop = threading.Event()
    queues.start_queue_check("kubeconfig", ClusterViews(), stop=stop)
    stop.set()
    asks = kube.asks
    assert not started.wait(0.1)
    assert kube.asks <= asks + 1


@pytest.mark.parametrize(("raw", "seconds"), [("", 60.0), ("2.5", 2.5), ("0", 60.0), ("soon", 60.0)])
def test_recheck_interval(monkeypatch, raw, seconds):
    monkeypatch.setenv(queues.RECHECK_ENV, raw)
    assert queues.recheck_interval() == seconds
