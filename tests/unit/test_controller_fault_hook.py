"""The runtime's test-only SIGKILL hook stays off unless its variable names a positive count."""

from __future__ import annotations

import pytest

from jobgate.controller.runtime import KILL_AFTER_POD_CREATES_VARIABLE, _kill_after_pod_creates


def test_off_by_default(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(KILL_AFTER_POD_CREATES_VARIABLE, raising=False)
    assert _kill_after_pod_creates() is None


@pytest.mark.parametrize("value", ["", "0", "-3", "yes", "2.5"])
def test_off_for_anything_but_a_positive_count(monkeypatch: pytest.MonkeyPatch, value: str):
    monkeypatch.setenv(KILL_AFTER_POD_CREATES_VARIABLE, value)
    assert _kill_after_pod_creates() is None


def test_on_with_a_positive_count(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(KILL_AFTER_POD_CREATES_VARIABLE, "3")
    assert _kill_after_pod_creates() == 3
