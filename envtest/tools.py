"""Build helm and the helm-unittest plugin from their Go modules; cache them by version.

No prebuilt helm can be downloaded on the machines this project runs on, but the Go module
proxy is reachable, so both are compiled with ``go install`` (as ``bench/cli_bench.py`` builds
kubeconform). helm gets the link-time variables its own Makefile sets: without them it reports
``v3.22`` with no patch level and assumes Kubernetes 1.20 when no cluster is asked
(``helm template``, ``helm lint``'s deprecation check). helm-unittest is a helm plugin: a
directory with a ``plugin.yaml`` naming the binary, found through ``HELM_PLUGINS``; its own
``plugin.yaml`` runs an install hook that downloads a release, so ours is written here instead.

Everything lands in ``$JOBGATE_TOOLS_CACHE`` or ``~/.cache/jobgate/tools/``:
``helm-<version>/helm`` and ``helm-unittest-<version>/plugins/unittest/`` (helm-unittest is built in its module
``go build``, not ``go install``: its go.mod has a replace directive).
``python -m envtest build-tools`` builds (or reports) them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from envtest.versions import HELM_UNITTEST_VERSION, HELM_VERSION

HELM_MODULE = "helm.sh/helm/v3"
HELM_UNITTEST_MODULE = "github.com/helm-unittest/helm-unittest"
_STAMP = "build-info.json"

Log = Callable[[str], object]


@dataclass(frozen=True)
class HelmTools:
    helm: Path
    plugins: Path  # the HELM_PLUGINS directory holding the unittest plugin

    def env(self, base: dict[str, str] | None = None, home: Path | None = None) -> dict[str, str]:
        """An environment for running helm: our plugin directory, and helm's own state (its
        repository index, cache, config) under ``home`` so nothing of the user's is read or written."""
        environment = dict(os.environ if base is None else base)
        environment["HELM_PLUGINS"] = str(self.plugins)
        if home is not None:
            for name, sub in (("HELM_CACHE_HOME", "cache"), ("HELM_CONFIG_HOME", "config"), ("HELM_DATA_HOME", "data")):
                environment[name] = str(home / sub)
        return environment


def cache_root() -> Path:
    root = os.environ.get("JOBGATE_TOOLS_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "jobgate" / "tools"


def _helm_dir() -> Path:
    return cache_root() / f"helm-{HELM_VERSION}"


def _unittest_dir() -> Path:
    return cache_root() / f"helm-unittest-{HELM_UNITTEST_VERSION}"


def cached_tools() -> HelmTools | None:
    """The tools of a finished build, or None when either is missing."""
    helm = _helm_dir() / "helm"
    plugins = _unittest_dir() / "plugins"
    plugin = plugins / "unittest"
    complete = (
        (_helm_dir() / _STAMP).is_file()
        and (_unittest_dir() / _STAMP).is_file()
        and os.access(helm, os.X_OK)
        and os.access(plugin / "untt", os.X_OK)
        and (plugin / "plugin.yaml").is_file()
    )
    return HelmTools(helm, plugins) if complete else None


def unavailable_reason() -> str | None:
    """Why the tools can be neither found nor built here, or None."""
    if cached_tools() is None and shutil.which("go") is None:
        return f"no Go toolchain to build helm {HELM_VERSION} and helm-unittest {HELM_UNITTEST_VERSION}, none cached"
    return None


def _go(args: list[str], cwd: Path, gobin: Path | None = None) -> str:
    environment = dict(os.environ)
    environment["CGO_ENABLED"] = "0"
    environment.setdefault("GOTOOLCHAIN", "auto")
    environment["GOFLAGS"] = (environment.get("GOFLAGS", "") + " -trimpath").strip()
    if gobin is not None:
        environment["GOBIN"] = str(gobin)
    process = subprocess.run(["go", *args], cwd=cwd, env=environment, capture_output=True, text=True, check=False)
    if process.returncode != 0:
        raise RuntimeError(f"go {' '.join(args)} failed:\n{process.stderr[-4000:]}")
    return process.stdout


def _helm_ldflags(work: Path) -> str:
    """The variables helm's Makefile sets: its version, and the Kubernetes release of its
    client-go (v0.X.Y -> 1.X), which helm assumes when it does not ask a cluster."""
    info = json.loads(_go(["mod", "download", "-json", f"{HELM_MODULE}@{HELM_VERSION}"], work))
    gomod = Path(info["GoMod"]).read_text()
    found = re.search(r"^\s*k8s\.io/client-go v0\.(\d+)\.\d+", gomod, re.M)
    if not found:
        raise RuntimeError(f"{HELM_MODULE}@{HELM_VERSION}: no k8s.io/client-go requirement in its go.mod")
    minor = found.group(1)
    flags = ["-s", "-w", f"-X {HELM_MODULE}/internal/version.version={HELM_VERSION}"]
    flags.append(f"-X {HELM_MODULE}/internal/version.gitTreeState=clean")
    for package in ("pkg/lint/rules", "pkg/chartutil"):
        flags.append(f"-X {HELM_MODULE}/{package}.k8sVersionMajor=1")
        flags.append(f"-X {HELM_MODULE}/{package}.k8sVersionMinor={minor}")
    return " ".join(flags)


# Our plugin manifest: helm-unittest's own lists prebuilt binaries per platform and an install
# hook that downloads them; this one runs the binary built here.
_PLUGIN_YAML = f"""\
name: "unittest"
version: "{HELM_UNITTEST_VERSION.lstrip("v")}"
usage: "unittest for helm charts"
description: "helm-unittest {HELM_UNITTEST_VERSION}, built from its Go module by jobgate's envtest"
ignoreFlags: false
command: "$HELM_PLUGIN_DIR/untt"
"""


def _install(target: Path, build: Callable[[Path], dict[str, object]]) -> None:
    """Build into a scratch directory beside ``target``, then move it in place, so an
    interrupted build never leaves a directory that looks finished."""
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        started = time.monotonic()
        stamp = build(scratch)
        stamp["build_seconds"] = round(time.monotonic() - started, 1)
        (scratch / _STAMP).write_text(json.dumps(stamp, indent=2) + "\n")
        if target.exists():
            shutil.rmtree(target)
        scratch.rename(target)
    finally:
        if scratch.exists():
            shutil.rmtree(scratch)


def build(log: Log = print) -> HelmTools:
    existing = cached_tools()
    if existing is not None:
        return existing
    if shutil.which("go") is None:
        raise RuntimeError("go is not installed; cannot build helm and helm-unittest")
    work = Path(tempfile.mkdtemp(prefix="jobgate-tools-"))
    try:
        if not (_helm_dir() / _STAMP).is_file():
            log(f"building helm {HELM_VERSION} (go install {HELM_MODULE}/cmd/helm) ...")

            def build_helm(scratch: Path) -> dict[str, object]:
                ldflags = _helm_ldflags(work)
                _go(["install", f"-ldflags={ldflags}", f"{HELM_MODULE}/cmd/helm@{HELM_VERSION}"], work, gobin=scratch)
                return {"helm": HELM_VERSION}

            _install(_helm_dir(), build_helm)
        if not (_unittest_dir() / _STAMP).is_file():
            module = f"{HELM_UNITTEST_MODULE}@{HELM_UNITTEST_VERSION}"
            log(f"building helm-unittest {HELM_UNITTEST_VERSION} (go build ./cmd/helm-unittest in {module}) ...")

            def build_plugin(scratch: Path) -> dict[str, object]:
                plugin = scratch / "plugins" / "unittest"
                plugin.mkdir(parents=True)
                # Its go.mod has a replace directive, which `go install module@version` refuses:
                # build it as the main module, in its own (read-only) directory of the module cache.
                source = Path(json.loads(_go(["mod", "download", "-json", module], work))["Dir"])
                _go(["build", "-ldflags=-s -w", "-o", str(plugin / "untt"), "./cmd/helm-unittest"], source)
                (plugin / "plugin.yaml").write_text(_PLUGIN_YAML)
                return {"helm-unittest": HELM_UNITTEST_VERSION}

            _install(_unittest_dir(), build_plugin)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    tools = cached_tools()
    if tools is None:
        raise RuntimeError(f"the build finished but {cache_root()} lacks helm or the unittest plugin")
    return tools


def build_seconds() -> dict[str, float]:
    """How long each cached tool took to build (from its stamp)."""
    seconds = {}
    for name, directory in (("helm", _helm_dir()), ("helm-unittest", _unittest_dir())):
        stamp = directory / _STAMP
        if stamp.is_file():
            seconds[name] = json.loads(stamp.read_text()).get("build_seconds", 0.0)
    return seconds


def main() -> int:
    try:
        tools = build()
    except RuntimeError as exc:
        print(f"building helm failed: {exc}", file=sys.stderr)
        return 1
    print(f"helm: {tools.helm} ({HELM_VERSION})")
    print(f"helm-unittest: {tools.plugins / 'unittest'} ({HELM_UNITTEST_VERSION}; HELM_PLUGINS={tools.plugins})")
    for name, seconds in build_seconds().items():
        print(f"{name} build: {seconds} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
