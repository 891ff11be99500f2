"""Build etcd, kube-apiserver, kube-controller-manager and kubectl from Go modules.

No prebuilt Kubernetes binaries can be downloaded on the machines this project is
developed and tested on, but the Go module proxy is reachable. So we create a throwaway
wrapper module that requires ``k8s.io/kubernetes`` at the pinned release and maps every
staging module (``k8s.io/api``, ``k8s.io/apiserver``, ...) to its published ``v0.X.Y``
twin; the ``replace ./staging/...`` directives of Kubernetes' own go.mod only apply inside
that repository, not to a module that depends on it. etcd is built in a second wrapper
module, at the version Kubernetes' go.mod pins, so its dependency graph cannot disturb
the Kubernetes one.

Binaries land in ``$JOBGATE_K8S_CACHE`` or ``~/.cache/jobgate/k8s/<version>/`` and are
reused by every later run. ``python -m envtest.build`` builds (or reports) them; ``--oldest``
(or ``--version vX.Y.Z``) builds another release the same way, without
kube-controller-manager: the oldest supported release only has to serve the API
(``envtest.versions.OLDEST_KUBERNETES_VERSION``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from envtest.versions import KUBERNETES_VERSION, OLDEST_KUBERNETES_VERSION

BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kubectl")
KUBERNETES_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kubectl")
_STAMP = "build-info.json"
_RELEASE = re.compile(r"v1\.(\d+)\.(\d+)")


def binary_names(controller_manager: bool = True) -> tuple[str, ...]:
    """What a control plane needs: all of ``BINARIES``, or all but kube-controller-manager."""
    return BINARIES if controller_manager else tuple(b for b in BINARIES if b != "kube-controller-manager")


def check_release(version: str) -> str:
    """``version`` if it names a Kubernetes release (``v1.30.14``), else ValueError."""
    if not _RELEASE.fullmatch(version):
        raise ValueError(f"not a Kubernetes release: {version!r} (expected v1.MINOR.PATCH, e.g. {KUBERNETES_VERSION})")
    return version


def cache_dir(version: str = KUBERNETES_VERSION) -> Path:
    root = os.environ.get("JOBGATE_K8S_CACHE")
    base = Path(root) if root else Path.home() / ".cache" / "jobgate" / "k8s"
    return base / version


def cached_binaries(version: str = KUBERNETES_VERSION, *, controller_manager: bool = True) -> dict[str, Path] | None:
    """The binaries of a finished build, or None when any is missing."""
    directory = cache_dir(version)
    if not (directory / _STAMP).is_file():
        return None
    paths = {name: directory / name for name in binary_names(controller_manager)}
    if all(p.is_file() and os.access(p, os.X_OK) for p in paths.values()):
        return paths
    return None


def _staging_version(version: str) -> str:
    major_minor_patch = version.lstrip("v").split(".")
    return f"v0.{major_minor_patch[1]}.{major_minor_patch[2]}"


def _go_env(workdir: Path) -> dict[str, str]:
    env = dict(os.environ)
    # The wrapper modules are never committed; let go record their sums as it goes.
    env["GOFLAGS"] = (env.get("GOFLAGS", "") + " -mod=mod -trimpath").strip()
    env.setdefault("GOTOOLCHAIN", "auto")
    env["CGO_ENABLED"] = "0"
    env.setdefault("GOCACHE", str(Path.home() / ".cache" / "go-build"))
    env["PWD"] = str(workdir)
    return env


def _run(cmd: list[str], workdir: Path) -> str:
    proc = subprocess.run(cmd, cwd=workdir, env=_go_env(workdir), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed in {workdir}:\n{proc.stderr[-4000:]}")
    return proc.stdout


def _module_published(module: str, version: str) -> bool:
    """Whether the proxy serves module@version (a few staging modules are never published)."""
    proxy = os.environ.get("GOPROXY", "https://proxy.golang.org").split(",")[0]
    if proxy in ("direct", "off"):
        return True
    url = f"{proxy.rstrip('/')}/{module}/@v/{version}.info"
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status == 200
    except urllib.error.HTTPError:
        return False


def _kubernetes_gomod(version: str, workdir: Path) -> str:
    out = _run(["go", "mod", "download", "-json", f"k8s.io/kubernetes@{version}"], workdir)
    info = json.loads(out)
    return Path(info["GoMod"]).read_text()


def _parse_gomod(text: str) -> tuple[str, list[str], str]:
    go_directive = re.search(r"^go (\S+)", text, re.M)
    staging = re.findall(r"^\s*(k8s\.io/[\w.-]+) => \./staging/", text, re.M)
    etcd = re.search(r"^\s*go\.etcd\.io/etcd/server/v3 (v\S+)", text, re.M)
    if not (go_directive and staging and etcd):
        raise RuntimeError("unexpected k8s.io/kubernetes go.mod layout")
    return go_directive.group(1), staging, etcd.group(1)


# No release needs a fix of its own so far. The oldest one, v1.30.14 (go directive 1.22.0), and the
# etcd it pins (v3.5.10) build unchanged with the local go1.26 toolchain: no -checklinkname=0, no
# bumped dependency, no GOTOOLCHAIN (checked 2026-11: go1.22.12 is served by the module proxy, but
# not needed). etcd v3.5.10 links an old github.com/modern-go/reflect2 (v1.0.1; Kubernetes pins
# v1.0.2, the release made for Go 1.18's runtime), but only through go.etcd.io/etcd/client/v2,
# which etcd uses for v2 discovery alone (a discovery URL: never, for a one-member test etcd).
def build(version: str = KUBERNETES_VERSION, *, controller_manager: bool = True, log=print) -> dict[str, Path]:
    existing = cached_binaries(version, controller_manager=controller_manager)
    if existing:
        return existing
    target = cache_dir(version)
    target.mkdir(parents=True, exist_ok=True)
    # A build that stops half-way must not leave an earlier build's stamp beside its binaries.
    (target / _STAMP).unlink(missing_ok=True)
    commands = [c for c in KUBERNETES_COMMANDS if controller_manager or c != "kube-controller-manager"]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="jobgate-k8s-build-") as tmp:
        k8s_dir = Path(tmp) / "kubernetes"
        etcd_dir = Path(tmp) / "etcd"
        k8s_dir.mkdir()
        etcd_dir.mkdir()
        (k8s_dir / "go.mod").write_text("module jobgate.invalid/k8sbuild\n")
        go_version, staging, etcd_version = _parse_gomod(_kubernetes_gomod(version, k8s_dir))
        staging_version = _staging_version(version)
        replaces = [m for m in staging if _module_published(m, staging_version)]
        skipped = sorted(set(staging) - set(replaces))
        if skipped:
            log(f"staging modules not published at {staging_version} (not needed): {skipped}")
        lines = [
            "module jobgate.invalid/k8sbuild",
            f"go {go_version}",
            f"require k8s.io/kubernetes {version}",
            *(f"replace {m} => {m} {staging_version}" for m in replaces),
        ]
        (k8s_dir / "go.mod").write_text("\n".join(lines) + "\n")
        log(f"building Kubernetes {version} ({', '.join(commands)}; go {go_version}) into {target}")
        _run(["go", "mod", "download", "k8s.io/kubernetes"], k8s_dir)
        packages = [f"k8s.io/kubernetes/cmd/{c}" for c in commands]
        _run(
            ["go", "build", "-ldflags=-s -w " + _version_ldflags(version), "-o", str(target) + "/", *packages], k8s_dir
        )

        (etcd_dir / "go.mod").write_text(
            f"module jobgate.invalid/etcdbuild\ngo {go_version}\nrequire go.etcd.io/etcd/server/v3 {etcd_version}\n"
        )
        log(f"building etcd {etcd_version}")
        _run(["go", "build", "-ldflags=-s -w", "-o", str(target / "etcd"), "go.etcd.io/etcd/server/v3"], etcd_dir)
    seconds = round(time.monotonic() - started, 1)
    stamp = {
        "kubernetes": version,
        "etcd": etcd_version,
        "go": go_version,
        "binaries": ["etcd", *commands],
        "build_seconds": seconds,
    }
    (target / _STAMP).write_text(json.dumps(stamp, indent=2) + "\n")
    log(f"built in {seconds} s")
    result = cached_binaries(version, controller_manager=controller_manager)
    assert result is not None
    return result


def _version_ldflags(version: str) -> str:
    # Without these, the binaries report v0.0.0 and kubectl warns about version skew.
    parts = version.lstrip("v").split(".")
    base = "k8s.io/component-base/version"
    return " ".join(
        f"-X {base}.{key}={value}"
        for key, value in (
            ("gitVersion", version),
            ("gitMajor", parts[0]),
            ("gitMinor", parts[1]),
            ("gitTreeState", "clean"),
        )
    )


def add_version_arguments(parser: argparse.ArgumentParser) -> None:
    """``--version VERSION`` or ``--oldest``; neither means the pinned ``KUBERNETES_VERSION``."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--version",
        default=KUBERNETES_VERSION,
        metavar="VERSION",
        help=f"Kubernetes release to use (default {KUBERNETES_VERSION}; other releases come without "
        "kube-controller-manager)",
    )
    group.add_argument(
        "--oldest",
        dest="version",
        action="store_const",
        const=OLDEST_KUBERNETES_VERSION,
        help=f"the oldest supported release, {OLDEST_KUBERNETES_VERSION} (etcd, kube-apiserver, kubectl)",
    )


def release_problem(version: str) -> str | None:
    """Why ``version`` cannot be built (one line), or None. Only the pinned release and the oldest
    one are known to build; any other must at least be a release the module proxy serves."""
    try:
        check_release(version)
    except ValueError as exc:
        return str(exc)
    if version in (KUBERNETES_VERSION, OLDEST_KUBERNETES_VERSION) or cached_binaries(version, controller_manager=False):
        return None
    try:
        published = _module_published("k8s.io/kubernetes", version)
    except (urllib.error.URLError, OSError):
        return None  # the proxy cannot be asked: let the build say what is wrong
    if not published:
        return f"unknown Kubernetes release {version}: the Go module proxy does not serve k8s.io/kubernetes@{version}"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m envtest build", description="Build or find the cached binaries.")
    add_version_arguments(parser)
    version = parser.parse_args(argv).version
    problem = release_problem(version)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    if shutil.which("go") is None:
        print("go is not installed; cannot build the control plane", file=sys.stderr)
        return 2
    # Only the pinned release runs a controller-manager (envtest.harness.ControlPlane).
    controller_manager = version == KUBERNETES_VERSION
    try:
        paths = build(version, controller_manager=controller_manager)
    except RuntimeError as exc:
        print(f"build failed: {exc}", file=sys.stderr)
        return 1
    for name, path in paths.items():
        print(f"{name}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
