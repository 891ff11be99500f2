"""envtest/tools.py: what counts as a finished build of helm and the helm-unittest plugin."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from envtest import tools
from envtest.versions import HELM_UNITTEST_VERSION, HELM_VERSION


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JOBGATE_TOOLS_CACHE", str(tmp_path))
    return tmp_path


def _finished(cache, *, stamps: bool = True) -> None:
    helm = cache / f"helm-{HELM_VERSION}"
    plugin = cache / f"helm-unittest-{HELM_UNITTEST_VERSION}" / "plugins" / "unittest"
    plugin.mkdir(parents=True)
    helm.mkdir()
    for binary in (helm / "helm", plugin / "untt"):
        binary.write_text("#!/bin/sh\n")
        binary.chmod(0o755)
    (plugin / "plugin.yaml").write_text(tools._PLUGIN_YAML)
    if stamps:
        for directory in (helm, plugin.parents[1]):
            (directory / "build-info.json").write_text(json.dumps({"build_seconds": 1.5}))


def test_a_finished_build_is_found_by_version(cache):
    assert tools.cached_tools() is None
    _finished(cache)
    found = tools.cached_tools()
    assert found == tools.HelmTools(cache / f"helm-{HELM_VERSION}" / "helm", found.plugins)
    assert (found.plugins / "unittest" / "plugin.yaml").is_file()
    assert tools.build_seconds() == {"helm": 1.5, "helm-unittest": 1.5}


def test_binaries_without_the_stamp_are_an_interrupted_build(cache):
    _finished(cache, stamps=False)
    assert tools.cached_tools() is None


def test_the_plugin_runs_the_binary_built_here_and_downloads_nothing():
    manifest = yaml.safe_load(tools._PLUGIN_YAML)
    assert manifest["name"] == "unittest"
    assert manifest["version"] == HELM_UNITTEST_VERSION.lstrip("v")
    assert manifest["command"] == "$HELM_PLUGIN_DIR/untt"
    assert "hooks" not in manifest and "platformHooks" not in manifest  # helm-unittest's own download


def test_helm_runs_with_our_plugins_and_its_own_state(cache, tmp_path):
    _finished(cache)
    found = tools.cached_tools()
    environment = found.env({"PATH": "/usr/bin"}, home=tmp_path / "home")
    assert environment["HELM_PLUGINS"] == str(found.plugins)
    assert environment["HELM_CONFIG_HOME"] == str(tmp_path / "home" / "config")
    assert environment["PATH"] == "/usr/bin"


def test_without_go_or_a_cache_the_reason_is_given(cache, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    assert "no Go toolchain" in (tools.unavailable_reason() or "")
    with pytest.raises(RuntimeError, match="go is not installed"):
        tools.build(log=lambda _line: None)
    _finished(cache)
    assert tools.unavailable_reason() is None
