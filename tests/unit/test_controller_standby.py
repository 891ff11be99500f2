"""A standby replica (``--leader-elect``, waiting for the Lease) caches nothing until it leads."""

from __future__ import annotations

import argparse
import threading
from typing import Any

import pytest

from jobgate.controller import main


class FakeController:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.calls: list[str] = []
        self.started = threading.Event()
        FakeController.last = self

    def start_informers(self) -> None:
        self.calls.append("informers")

    def start_workers(self) -> None:
        self.calls.append("workers")
        self.started.set()

    def stop(self) -> None:
        self.calls.append("stop")


class FakeElector:
    """Waits for the Lease (the controller must not have watched anything yet), then leads."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.before_leading: list[str] = []

    def run(self, on_started: Any, on_stopped: Any) -> None:
        controller = FakeController.last
        FakeElector.before_leading = list(controller.calls)
        on_started()
        assert controller.started.wait(5)
        on_stopped()  # leadership lost: run() returns

    def stop(self) -> None:
        pass


def arguments(**overrides: Any) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    main.add_arguments(parser)
    # No policy audit: its start is test_policy_audit's (it would read the fake's adapters).
    args = parser.parse_args(["--namespace", "ns", "--policy-audit-interval", "0"])
    for key, value in overrides.items():
        setattr(args, key, value)
    return args


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    from jobgate.common import logs
    from jobgate.controller import leader, runtime
    from jobgate.kube import client

    monkeypatch.setattr(runtime, "Controller", FakeController)
    monkeypatch.setattr(leader, "LeaderElector", FakeElector)
    monkeypatch.setattr(client, "Kube", lambda *a, **k: type("K", (), {"requests": {}})())
    monkeypatch.setattr(logs, "configure", lambda *a: None)
    monkeypatch.setattr(main.signal, "signal", lambda *a: None)
    monkeypatch.setattr(main, "_report", lambda *a: None)


def test_a_standby_replica_starts_its_informers_only_once_it_leads(fakes):
    assert main.run(arguments(leader_elect=True)) == 1  # leadership lost at the end of the fake election
    assert FakeElector.before_leading == []  # nothing watched, nothing cached while waiting
    assert FakeController.last.calls[:2] == ["informers", "workers"]


def test_nothing_starts_once_stopping():
    controller = FakeController()
    stop = threading.Event()
    stop.set()
    started = main.start_when_leading(controller, stop)  # type: ignore[arg-type]
    started()
    for thread in threading.enumerate():
        if thread.name == "start-leading":
            thread.join(5)
    assert controller.calls == []
