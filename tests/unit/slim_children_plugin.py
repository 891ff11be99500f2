"""A pytest plugin (``-p tests.unit.slim_children_plugin``) that runs the engine's suites on cached children.

Loaded before the suites are imported, it replaces ``engine.reconcile`` with a wrapper that hands
every pass the pods, services and PodGroups as the controller's informers cache them
(``controller/slim.py``), not as the simulators built them. A field the engine reads and the
cache drops fails the suite; tests/unit/test_controller_slim_cache.py runs it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jobgate.controller import engine
from jobgate.controller.slim import slim_pod, slim_pod_group, slim_service

_reconcile = engine.reconcile
passes = 0


def reconcile_on_cached_children(model: Any, previous: Any, observed: engine.Observed) -> engine.Plan:
    global passes  # noqa: PLW0603 - one counter for the report line
    passes += 1
    cached = dataclasses.replace(
        observed,
        pods=[slim_pod(p) for p in observed.pods],
        services=[slim_service(s) for s in observed.services],
        pod_groups=tuple(slim_pod_group(g) for g in observed.pod_groups),
    )
    return _reconcile(model, previous, cached)


engine.reconcile = reconcile_on_cached_children


def pytest_terminal_summary(terminalreporter: Any) -> None:
    terminalreporter.write_line(f"passes on cached children: {passes}")
