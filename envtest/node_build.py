"""Build what a real test node needs, from sources and Debian packages only; cache it.

- kubelet, kube-scheduler and kube-proxy from ``k8s.io/kubernetes`` at the control plane's
  pinned release (same wrapper-module technique as ``envtest.build``). The default node runs
  no kube-proxy (every service jobgate's controller creates is headless: peers resolve
  straight to pod IPs); the in-cluster node (``Node(in_cluster=True)``) runs it so that
  ClusterIPs, the ``kubernetes`` Service among them, work for pods and for the apiserver.
- CoreDNS from its Go module, compiled with only the plugins the node uses (``bind``,
  ``errors``, ``kubernetes``, ``ready``): the binary cannot forward a query anywhere, whatever
  its Corefile says.
- A pause binary (static Go, ``CGO_ENABLED=0``) written here.
- Two OCI images written without any registry or image tool: ``jobgate.local/pause:1`` and
  ``jobgate.local/job-python:1`` (the host's Debian ``python3`` with the shared libraries it
  links and its standard library, plus ``envtest/jobimage/rendezvous.py``). Copying the
  host's interpreter takes seconds where debootstrap takes minutes; both are Debian 12 builds.

containerd, runc and the CNI plugins come from Debian (``install_packages``).
Everything lands in ``$JOBGATE_NODE_CACHE`` or ``~/.cache/jobgate/node/<version>/``.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from envtest import debian
from envtest.build import _kubernetes_gomod, _module_published, _parse_gomod, _run, _staging_version, _version_ldflags
from envtest.versions import COREDNS_VERSION, KUBERNETES_VERSION

DEBIAN_PACKAGES = ("containerd", "runc", "containernetworking-plugins", "iptables", "iproute2")
NODE_COMMANDS = ("kubelet", "kube-scheduler", "kube-proxy")
PAUSE_IMAGE = "jobgate.local/pause:1"
JOB_IMAGE = "jobgate.local/job-python:1"
JOB_PROGRAM = Path(__file__).parent / "jobimage" / "rendezvous.py"
HOST_PYTHON = Path("/usr/bin/python3.11")
_STAMP = "build-info.json"

_PAUSE_SOURCE = """\
// pause: the sandbox process of every pod. Holds the namespaces, reaps orphans, exits on a signal.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig == syscall.SIGCHLD {
			for {
				var status syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
			continue
		}
		os.Exit(0)
	}
}
"""

# A CoreDNS with the chosen plugins only (the documented way to trim a build: set the
# directive list and import just those plugin packages).
_COREDNS_MAIN = """\
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

func init() {
	dnsserver.Directives = []string{"bind", "errors", "ready", "kubernetes"}
}

func main() { coremain.Run() }
"""


def cache_dir(version: str = KUBERNETES_VERSION) -> Path:
    root = os.environ.get("JOBGATE_NODE_CACHE")
    base = Path(root) if root else Path.home() / ".cache" / "jobgate" / "node"
    return base / version


def cached_node(version: str = KUBERNETES_VERSION) -> Path | None:
    """The cache directory of a finished node build, or None."""
    directory = cache_dir(version)
    wanted = [*NODE_COMMANDS, "coredns", "pause", "images/pause.tar", "images/job-python.tar", _STAMP]
    stamp = directory / _STAMP
    # The job image embeds the test program: a changed program means a rebuilt image.
    if all((directory / name).is_file() for name in wanted) and json.loads(stamp.read_text()).get(
        "job_program_sha256"
    ) == _sha256_file(JOB_PROGRAM):
        return directory
    return None


def missing_packages() -> list[str]:
    """Debian packages (or their key binaries) the node needs and the machine lacks."""
    probes = {
        "containerd": "containerd",
        "runc": "runc",
        "containernetworking-plugins": "/usr/lib/cni/bridge",
        "iptables": "iptables",
        "iproute2": "ip",
    }
    return [pkg for pkg, probe in probes.items() if not (Path(probe).exists() or shutil.which(probe))]


def install_packages(log: Callable[[str], None] = print) -> None:
    """``apt-get update`` once, then install the node's Debian packages (root only)."""
    if missing_packages():
        debian.apt_install(DEBIAN_PACKAGES, log, recommends=True)


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _build_kubernetes_commands(version: str, workdir: Path, target: Path, commands: tuple[str, ...]) -> None:
    (workdir / "go.mod").write_text("module jobgate.invalid/nodebuild\n")
    go_version, staging, _ = _parse_gomod(_kubernetes_gomod(version, workdir))
    staging_version = _staging_version(version)
    replaces = [m for m in staging if _module_published(m, staging_version)]
    lines = [
        "module jobgate.invalid/nodebuild",
        f"go {go_version}",
        f"require k8s.io/kubernetes {version}",
        *(f"replace {m} => {m} {staging_version}" for m in replaces),
    ]
    (workdir / "go.mod").write_text("\n".join(lines) + "\n")
    _run(["go", "mod", "download", "k8s.io/kubernetes"], workdir)
    packages = [f"k8s.io/kubernetes/cmd/{c}" for c in commands]
    _run(["go", "build", "-ldflags=-s -w " + _version_ldflags(version), "-o", str(target) + "/", *packages], workdir)


def _build_coredns(workdir: Path, target: Path) -> None:
    (workdir / "go.mod").write_text(
        f"module jobgate.invalid/corednsbuild\ngo 1.24\nrequire github.com/coredns/coredns {COREDNS_VERSION}\n"
    )
    (workdir / "main.go").write_text(_COREDNS_MAIN)
    _run(["go", "mod", "tidy"], workdir)
    _run(["go", "build", "-ldflags=-s -w", "-o", str(target / "coredns"), "."], workdir)


def _build_pause(workdir: Path, target: Path) -> None:
    (workdir / "go.mod").write_text("module jobgate.invalid/pause\ngo 1.22\n")
    (workdir / "main.go").write_text(_PAUSE_SOURCE)
    _run(["go", "build", "-ldflags=-s -w", "-o", str(target / "pause"), "."], workdir)


# --- OCI images, written by hand: one layer, one config, one manifest, one index ---


def _add_file(tar: tarfile.TarFile, source: Path, name: str, mode: int | None = None) -> None:
    info = tar.gettarinfo(str(source), arcname=name)
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.mtime = 0
    if mode is not None:
        info.mode = mode
    if info.isfile():
        with source.open("rb") as handle:
            tar.addfile(info, handle)
    else:
        tar.addfile(info)


def _add_dir(tar: tarfile.TarFile, name: str) -> None:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = 0o755
    tar.addfile(info)


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    tar.addfile(info, io.BytesIO(data))


def _add_symlink(tar: tarfile.TarFile, name: str, target: str) -> None:
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    tar.addfile(info)


def _shared_libraries(binary: Path) -> list[Path]:
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    libraries = []
    for line in out.splitlines():
        parts = line.split()
        path = parts[2] if "=>" in parts and len(parts) > 2 else parts[0]
        if path.startswith("/"):
            libraries.append(Path(path))
    return libraries


def _pause_layer(pause: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        _add_file(tar, pause, "pause", 0o755)
    return buffer.getvalue()


def _python_layer() -> bytes:
    """The host's python3 with its libraries and standard library, the test program, a passwd."""
    buffer = io.BytesIO()
    skip_dirs = {"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "__pycache__", "dist-packages"}
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for directory in ("bin", "etc", "tmp", "usr", "usr/bin", "usr/lib", "usr/local", "usr/local/bin", "lib64"):
            _add_dir(tar, directory)
        _add_dir(tar, "lib")
        _add_dir(tar, "lib/x86_64-linux-gnu")
        _add_file(tar, HOST_PYTHON, "usr/bin/python3", 0o755)
        _add_symlink(tar, "bin/python3", "/usr/bin/python3")
        _add_symlink(tar, "usr/bin/python", "python3")
        for library in _shared_libraries(HOST_PYTHON):
            real = library.resolve()
            name = str(library).lstrip("/")
            if name.startswith("lib64/"):
                _add_file(tar, real, name, 0o755)
            else:
                _add_file(tar, real, "lib/x86_64-linux-gnu/" + library.name, 0o755)
        stdlib = Path("/usr/lib/python3.11")
        for root, dirs, files in os.walk(stdlib):
            dirs[:] = sorted(d for d in dirs if d not in skip_dirs and not d.startswith("config-"))
            relative = Path(root).relative_to("/")
            _add_dir(tar, str(relative))
            for name in sorted(files):
                path = Path(root) / name
                if path.is_symlink() or not path.is_file():
                    continue
                _add_file(tar, path, str(relative / name))
                if name.endswith(".so"):
                    for library in _shared_libraries(path):
                        if library.name not in {lib.name for lib in _shared_libraries(HOST_PYTHON)}:
                            _add_file(tar, library.resolve(), "lib/x86_64-linux-gnu/" + library.name, 0o755)
        _add_bytes(tar, "etc/passwd", b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534::/:/bin/false\n")
        _add_bytes(tar, "etc/group", b"root:x:0:\nnogroup:x:65534:\n")
        _add_file(tar, JOB_PROGRAM, "usr/local/bin/rendezvous.py", 0o755)
    return buffer.getvalue()


def _write_oci_archive(archive: Path, name: str, layer: bytes, config: dict) -> None:
    """An OCI image layout in a tar, named for containerd by ``io.containerd.image.name``."""
    blobs: dict[str, bytes] = {}

    def blob(data: bytes) -> tuple[str, int]:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return digest, len(data)

    compressed = gzip.compress(layer, compresslevel=1, mtime=0)
    image_config = {
        "architecture": "amd64",
        "os": "linux",
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest()]},
    }
    config_digest, config_size = blob(json.dumps(image_config).encode())
    layer_digest, layer_size = blob(compressed)
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": config_digest,
            "size": config_size,
        },
        "layers": [
            {"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layer_digest, "size": layer_size}
        ],
    }
    manifest_digest, manifest_size = blob(json.dumps(manifest).encode())
    index = {
        "schemaVersion": 2,
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": manifest_digest,
                "size": manifest_size,
                "annotations": {"io.containerd.image.name": name, "org.opencontainers.image.ref.name": name},
            }
        ],
    }
    with tarfile.open(archive, "w") as tar:
        _add_bytes(tar, "oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode())
        _add_bytes(tar, "index.json", json.dumps(index).encode())
        for digest, data in blobs.items():
            _add_bytes(tar, "blobs/sha256/" + digest.split(":")[1], data)


def build_images(target: Path) -> None:
    images = target / "images"
    images.mkdir(exist_ok=True)
    _write_oci_archive(images / "pause.tar", PAUSE_IMAGE, _pause_layer(target / "pause"), {"Entrypoint": ["/pause"]})
    _write_oci_archive(
        images / "job-python.tar",
        JOB_IMAGE,
        _python_layer(),
        {
            "Env": ["PATH=/usr/local/bin:/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1"],
            "Cmd": ["python3", "/usr/local/bin/rendezvous.py"],
        },
    )


def build(version: str = KUBERNETES_VERSION, *, log=print) -> Path:
    """Build (or find) the node's binaries and images; returns the cache directory."""
    existing = cached_node(version)
    if existing:
        return existing
    target = cache_dir(version)
    target.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    timings: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="jobgate-node-build-") as tmp:
        # Only the missing commands: a cache from before kube-proxy was added gains just it.
        commands = tuple(c for c in NODE_COMMANDS if not (target / c).is_file())
        steps = (
            ("pause", lambda d: _build_pause(d, target), ("pause",)),
            ("coredns", lambda d: _build_coredns(d, target), ("coredns",)),
            ("+".join(commands), lambda d: _build_kubernetes_commands(version, d, target, commands), commands),
        )
        for label, step, products in steps:
            if all((target / product).is_file() for product in products):
                continue
            log(f"building {label}")
            step_started = time.monotonic()
            workdir = Path(tmp) / label
            workdir.mkdir()
            step(workdir)
            timings[label] = round(time.monotonic() - step_started, 1)
        log("writing the OCI images")
        image_started = time.monotonic()
        build_images(target)
        timings["images"] = round(time.monotonic() - image_started, 1)
    stamp = {
        "kubernetes": version,
        "coredns": COREDNS_VERSION,
        "build_seconds": round(time.monotonic() - started, 1),
        "step_seconds": timings,
        "job_program_sha256": _sha256_file(JOB_PROGRAM),
    }
    (target / _STAMP).write_text(json.dumps(stamp, indent=2) + "\n")
    log(f"node built in {stamp['build_seconds']} s into {target}")
    return target


def main() -> int:
    if shutil.which("go") is None:
        print("go is not installed; cannot build the node", file=sys.stderr)
        return 2
    try:
        install_packages()
        path = build()
    except (RuntimeError, subprocess.CalledProcessError, OSError) as exc:
        print(f"node build failed: {exc}", file=sys.stderr)
        return 1
    print(f"node: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
