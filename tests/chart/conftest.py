"""Fixtures for the chart's tests: helm (with the helm-unittest plugin) and kubectl's kustomize.

helm and the plugin are built from their Go modules on first use (``envtest/tools.py``), kubectl
with the control plane (``envtest/build.py``). Locally the tests that need them skip with the
reason when they cannot be built here; with CI=true that is a failure, never a skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "jobgate"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

Helm = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="session")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Helm:
    """``helm(*args)``: the built helm, with our plugin directory and its own state directories."""
    from envtest import tools

    reason = tools.unavailable_reason()
    if reason and not IN_CI:
        pytest.skip(f"helm cannot be built here: {reason}")
    try:
        built = tools.build(log=lambda _line: None)
    except RuntimeError as exc:
        if IN_CI:
            raise
        pytest.skip(f"helm could not be built here: {exc}")
    environment = built.env(home=tmp_path_factory.mktemp("helm-home"))

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [str(built.helm), *args], capture_output=True, text=True, env=environment, timeout=300, check=False
        )
        if check and result.returncode != 0:
            raise AssertionError(f"helm {' '.join(args)} failed:\n{result.stdout}{result.stderr}")
        return result

    return run


@pytest.fixture(scope="session")
def kubectl() -> Path:
    from envtest.build import build, cached_binaries

    binaries = cached_binaries()
    if binaries is None:
        if shutil.which("go") is None and not IN_CI:
            pytest.skip("no Go toolchain to build kubectl (for kustomize), and no cached one")
        binaries = build(log=lambda _line: None)
    return binaries["kubectl"]


Key = tuple[str, str, str]


def objects(text: str) -> dict[Key, dict[str, Any]]:
    """Rendered objects by (kind, namespace, name); a key twice is an error, not a silent overwrite."""
    found: dict[Key, dict[str, Any]] = {}
    for document in yaml.safe_load_all(text):
        if not document:
            continue
        key = (document["kind"], document["metadata"].get("namespace", ""), document["metadata"]["name"])
        assert key not in found, f"{key} rendered twice"
        found[key] = document
    return found


def kustomize(kubectl: Path, overlay: str) -> dict[Key, dict[str, Any]]:
    rendered = subprocess.run(
        [str(kubectl), "kustomize", str(REPO / "manifests" / "overlays" / overlay)],
        capture_output=True,
        text=True,
        check=True,
    )
    return objects(rendered.stdout)


def template(helm: Helm, *sets: str, chart: Path = CHART) -> dict[Key, dict[str, Any]]:
    arguments = [f"--set={value}" for value in sets]
    return objects(helm("template", "jobgate", str(chart), "--namespace", "jobgate-system", *arguments).stdout)
