"""jobgate's container image, built on this machine: no container registry, no Docker engine.

``python -m envtest build-image`` writes ``jobgate.local/jobgate:<version>`` (the version of
pyproject.toml) as an OCI archive, cached by content in ``$JOBGATE_IMAGE_CACHE`` or
``~/.cache/jobgate/image/``; ``import_image(node)`` puts it into the test node's containerd.

1. ``mmdebstrap`` (a Debian package, no daemon) makes a Debian 12 root filesystem with
   ``DEBIAN_PACKAGES`` (python3.11, ca-certificates...), while this machine's Debian
   ``python3.11`` (the image's interpreter: same release, same ABI) builds jobgate's wheel with
   the rule engine compiled by mypyc (``JOBGATE_COMPILE=1``) and pip downloads the wheels of its
   dependencies from PyPI.
2. Inside that root filesystem (chroot) its own python3.11 makes the virtual environment
   ``VENV`` without pip, and pip, run from its wheel, installs the wheels there, offline; pip
   compiles every module, so a read-only root filesystem needs no bytecode written.
3. ``assemble`` (``envtest.image_contents``, with the image's facts) copies out only what the
   runtime uses into a new directory, which becomes the image's one layer. No shell, no package
   manager, no other program: nothing in the image can be run but the interpreter.
4. The OCI archive (index, manifest, config, one gzip layer) is written here, as
   ``envtest.node_build`` writes the node's images.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import gzip
import hashlib
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envtest import build_cache, debian, image_contents
from envtest.build_cache import BuildCache, build_info
from envtest.image_contents import (
    CMD,
    DEBIAN_PACKAGES,
    ENTRYPOINT,
    ENV,
    PYTHON,
    SUITE,
    USER,
    VENV,
    WORKDIR,
    ImageBuildError,
    Log,
    assemble,
)

if TYPE_CHECKING:
    from envtest.node import Node

REPO = Path(__file__).resolve().parents[1]
# This builder's own code (the cache key covers it): this file, the image's contents and the harness it imports.
BUILDER_FILES = tuple(
    Path(module.__file__).resolve() for module in (sys.modules[__name__], image_contents, debian, build_cache)
)


def _project_version() -> str:
    return str(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"])


# --- the image's name and its build (its facts and its files: envtest.image_contents) ---
VERSION = _project_version()
IMAGE = f"jobgate.local/jobgate:{VERSION}"
MIRRORS = (
    f"deb http://deb.debian.org/debian {SUITE} main",
    f"deb http://deb.debian.org/debian {SUITE}-updates main",
    f"deb http://deb.debian.org/debian-security {SUITE}-security main",
)
HOST_PACKAGES = ("mmdebstrap", PYTHON, f"{PYTHON}-dev", f"{PYTHON}-venv", "gcc")
HOST_PYTHON = Path("/usr/bin", PYTHON)
# The package's build inputs (the cache key and the wheel's sources). README.md is left out of
# the key: it is only the wheel's long description, and changes far more often than the code.
PACKAGE_SOURCES = (
    "pyproject.toml",
    "setup.py",
    "MANIFEST.in",
    "build_support",
    "jobgate",
    "webhook",
    "controller",
    "certs",
)
ARCHIVE = "jobgate.tar"
CACHE = BuildCache("JOBGATE_IMAGE_CACHE", "image", ARCHIVE, VERSION, keep=3)


def _run(cmd: list[str], log_file: Path | None = None, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, **kwargs)
    if log_file is not None:
        with log_file.open("a") as handle:
            handle.write(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}\n")
    if proc.returncode != 0:
        raise ImageBuildError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{(proc.stdout + proc.stderr)[-3000:]}")
    return proc


# --- the OCI archive ---


def _tree_paths(tree: Path) -> list[str]:
    """Every path below ``tree``, sorted (parents first), symlinks not followed."""
    found = []
    for directory, dirs, files in os.walk(tree):
        here = Path(directory).relative_to(tree)
        found.extend(str(here / name) for name in [*dirs, *files])
    return sorted(found)


def _layer(tree: Path, out: Path) -> None:
    """``tree`` as a layer tar: sorted, numeric owners, whole-second times (a pyc records its
    source's time in seconds)."""
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for relative in _tree_paths(tree):
            info = tar.gettarinfo(str(tree / relative), arcname=relative)
            info.uname = info.gname = ""
            info.mtime = int(info.mtime)
            if info.isreg():
                with (tree / relative).open("rb") as handle:
                    tar.addfile(info, handle)
            else:
                tar.addfile(info)


def _compress(layer: Path, out: Path) -> tuple[str, str]:
    """gzip ``layer`` to ``out``; returns the digests of the uncompressed and compressed bytes."""
    plain = hashlib.sha256()
    with (
        layer.open("rb") as source,
        out.open("wb") as raw,
        gzip.GzipFile(filename="", fileobj=raw, mode="wb", compresslevel=6, mtime=0) as packed,
    ):
        while chunk := source.read(1 << 20):
            plain.update(chunk)
            packed.write(chunk)
    compressed = hashlib.sha256()
    with out.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            compressed.update(chunk)
    return "sha256:" + plain.hexdigest(), "sha256:" + compressed.hexdigest()


def image_config(diff_id: str) -> dict[str, Any]:
    architecture = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    return {
        "architecture": architecture,
        "os": "linux",
        "config": {
            "User": USER,
            "Env": [f"{name}={value}" for name, value in ENV.items()],
            "Entrypoint": list(ENTRYPOINT),
            "Cmd": list(CMD),
            "WorkingDir": WORKDIR,
            "Labels": {
                "org.opencontainers.image.title": "jobgate",
                "org.opencontainers.image.version": VERSION,
                "org.opencontainers.image.base.name": f"debian:{SUITE}",
            },
        },
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created_by": "python -m envtest build-image (envtest/image.py)"}],
    }


def write_archive(tree: Path, archive: Path, workdir: Path) -> dict[str, Any]:
    """``tree`` as a one-layer OCI image layout in a tar named for containerd
    (``io.containerd.image.name``, as ``envtest.node_build`` names the node's images)."""
    layer, packed = workdir / "layer.tar", workdir / "layer.tar.gz"
    _layer(tree, layer)
    diff_id, layer_digest = _compress(layer, packed)
    config = json.dumps(image_config(diff_id), indent=2).encode()
    config_digest = "sha256:" + hashlib.sha256(config).hexdigest()
    manifest = json.dumps({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest,
                   "size": len(config)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layer_digest,
                    "size": packed.stat().st_size}],
    }, indent=2).encode()  # fmt: skip
    manifest_digest = "sha256:" + hashlib.sha256(manifest).hexdigest()
    index = json.dumps({
        "schemaVersion": 2,
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": manifest_digest,
                       "size": len(manifest),
                       "annotations": {"io.containerd.image.name": IMAGE, "org.opencontainers.image.ref.name": IMAGE}}],
    }, indent=2).encode()  # fmt: skip

    def add(tar: tarfile.TarFile, name: str, data: bytes | Path) -> None:
        info = tarfile.TarInfo(name)
        info.mode = 0o644
        if isinstance(data, Path):
            info.size = data.stat().st_size
            with data.open("rb") as handle:
                tar.addfile(info, handle)
        else:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

    with tarfile.open(archive, "w") as tar:
        add(tar, "oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode())
        add(tar, "index.json", index)
        for digest, data in ((config_digest, config), (manifest_digest, manifest), (layer_digest, packed)):
            add(tar, "blobs/sha256/" + digest.removeprefix("sha256:"), data)
    return {
        "manifest_digest": manifest_digest,
        "layer_bytes": layer.stat().st_size,
        "layer_gzip_bytes": packed.stat().st_size,
        "archive_bytes": archive.stat().st_size,
    }


# --- build and cache ---


def _source_files() -> Iterator[Path]:
    for name in PACKAGE_SOURCES:
        path = REPO / name
        if path.is_file():
            yield path
        else:
            for found in sorted(path.rglob("*")):
                if found.is_file() and "__pycache__" not in found.parts and found.suffix not in (".pyc", ".so"):
                    yield found


def cache_key() -> str:
    """What the image is built from: the package's sources, this builder (``BUILDER_FILES``: the
    Debian release, packages, mirrors and file selection are in them) and the interpreter that
    compiles the wheel. Debian's and PyPI's newest versions are taken when the image is built;
    ``--rebuild`` takes them again."""
    digest = hashlib.sha256()
    for path in _source_files():
        digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    for path in BUILDER_FILES:
        digest.update(path.read_bytes())
    if HOST_PYTHON.exists():
        digest.update(_run([str(HOST_PYTHON), "-c", "import sys; print(sys.version)"]).stdout.encode())
    return digest.hexdigest()


def cache_root() -> Path:
    return CACHE.root()


def cached_image(key: str | None = None) -> Path | None:
    """The archive of a finished build of the current sources, or None."""
    return CACHE.cached(key or cache_key())


def missing_host_packages() -> list[str]:
    return debian.missing(HOST_PACKAGES)


def build_unavailable_reason() -> str | None:
    """Why the image cannot be built here, or None (the packages can still be missing: build
    installs them)."""
    if os.geteuid() != 0:
        return "building the image needs root (mmdebstrap in root mode, chroot)"
    if shutil.which("dpkg-query") is None or shutil.which("apt-get") is None:
        return "not a Debian system (dpkg, apt-get)"
    codename = ""
    with contextlib.suppress(OSError):
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("VERSION_CODENAME="):
                codename = line.split("=", 1)[1].strip('"')
    if codename != SUITE:
        # The wheel is compiled by this machine's python3.11 for the image's: same release needed.
        return f"the wheel is compiled by this machine's Debian {PYTHON}: needs Debian {SUITE}, not {codename!r}"
    return None


def install_packages(log: Log = print) -> None:
    """``apt-get update`` once, then install the build's Debian packages (root only)."""
    if missing := missing_host_packages():
        try:
            debian.apt_install(missing, log)
        except RuntimeError as error:
            raise ImageBuildError(str(error)) from error


def _chroot_env() -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": "/root", "LANG": "C.UTF-8"}


def _in_root(root: Path) -> Callable[[], None]:
    def enter() -> None:
        os.chroot(root)
        os.chdir("/")

    return enter


def _stage_sources(destination: Path) -> None:
    """The package's sources, copied so that building never writes into the repository."""
    destination.mkdir()
    for name in (*PACKAGE_SOURCES, "README.md"):
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, destination / name, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyc"))
        else:
            shutil.copy2(source, destination / name)


def _mmdebstrap(rootfs: Path, log_file: Path) -> subprocess.Popen[bytes]:
    command = [
        "mmdebstrap", "--variant=essential", "--mode=root", "--format=directory",
        f"--include={','.join(DEBIAN_PACKAGES)}",
        # Never unpacked, so never copied out: documentation (but copyright), manuals, translations.
        "--dpkgopt=path-exclude=/usr/share/doc/*", "--dpkgopt=path-include=/usr/share/doc/*/copyright",
        "--dpkgopt=path-exclude=/usr/share/man/*", "--dpkgopt=path-exclude=/usr/share/info/*",
        "--dpkgopt=path-exclude=/usr/share/locale/*",
        '--aptopt=Acquire::Retries "3"',
        SUITE, str(rootfs), *MIRRORS,
    ]  # fmt: skip
    with log_file.open("w") as handle:
        handle.write("$ " + " ".join(command) + "\n")
        handle.flush()
        return subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT)


def _build_wheels(work: Path, log_file: Path, log: Log) -> tuple[Path, Path]:
    """jobgate's compiled wheel and its dependencies' wheels (``work/wheels``), pip's wheel
    (``work/installer``)."""
    _stage_sources(work / "src")
    builder = work / "build-venv"
    _run([str(HOST_PYTHON), "-m", "venv", str(builder)], log_file)
    pip = [str(builder / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "--no-input"]
    wheels, installer = work / "wheels", work / "installer"
    log("building jobgate's wheel with the rule engine compiled (mypyc)")
    _run([*pip, "wheel", "--no-deps", "--wheel-dir", str(wheels), str(work / "src")], log_file,
         env={**os.environ, "JOBGATE_COMPILE": "1"})  # fmt: skip
    (wheel,) = wheels.glob("jobgate-*.whl")
    log("downloading the dependencies' wheels from PyPI")
    _run([*pip, "download", "--only-binary=:all:", "--dest", str(wheels), str(wheel)], log_file)
    _run([*pip, "download", "--only-binary=:all:", "--no-deps", "--dest", str(installer), "pip"], log_file)
    return wheels, installer


def _install_venv(rootfs: Path, wheels: Path, installer: Path, log_file: Path) -> None:
    """The venv, made and filled by the image's own interpreter inside the root filesystem;
    offline, and without pip (it runs from its wheel)."""
    inbox = rootfs / "tmp" / "jobgate-install"
    shutil.copytree(wheels, inbox)
    (pip_wheel,) = installer.glob("pip-*.whl")
    shutil.copy2(pip_wheel, inbox / pip_wheel.name)
    enter = _in_root(rootfs)
    _run([f"/usr/bin/{PYTHON}", "-m", "venv", "--without-pip", VENV], log_file, env=_chroot_env(), preexec_fn=enter)
    _run([f"{VENV}/bin/python", f"/tmp/jobgate-install/{pip_wheel.name}/pip", "install", "--disable-pip-version-check",
          "--no-cache-dir", "--no-index", "--find-links", "/tmp/jobgate-install", "jobgate"],
         log_file, env=_chroot_env(), preexec_fn=enter)  # fmt: skip
    shutil.rmtree(inbox)


def _mounts_under(directory: Path) -> list[str]:
    prefix = str(directory).rstrip("/") + "/"
    points = [line.split()[4].replace("\\040", " ") for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    return sorted((p for p in points if p.startswith(prefix)), key=len, reverse=True)


@contextlib.contextmanager
def _work_dir(parent: Path) -> Iterator[Path]:
    """A scratch directory, removed afterwards, but never through a mount left in it (an
    interrupted mmdebstrap can leave the build root's /proc, /sys, /dev/pts mounted)."""
    with _work_dir_removed(Path(tempfile.mkdtemp(prefix="build-", dir=parent))) as work:
        yield work


@contextlib.contextmanager
def _work_dir_removed(work: Path) -> Iterator[Path]:
    try:
        yield work
    finally:
        for point in _mounts_under(work):
            if subprocess.run(["umount", point], capture_output=True, check=False).returncode != 0:
                subprocess.run(["umount", "-l", point], capture_output=True, check=False)
        left = _mounts_under(work)
        if left:
            raise ImageBuildError(f"not removing {work}: still mounted there: {', '.join(left)}")
        shutil.rmtree(work)


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # another build of the image: wait for it
        yield


def build(*, rebuild: bool = False, log: Log = print) -> Path:
    """Build (or find in the cache) the image; returns its OCI archive."""
    key = cache_key()
    if not rebuild and (existing := cached_image(key)):
        return existing
    reason = build_unavailable_reason()
    if reason:
        raise ImageBuildError(reason)
    with _locked(cache_root()):
        if not rebuild and (existing := cached_image(key)):
            return existing
        install_packages(log)
        # Under the lock no other build runs: a scratch directory left is a killed build's.
        for stale in cache_root().glob("build-*"):
            with contextlib.suppress(ImageBuildError), _work_dir_removed(stale):
                pass
        started = time.monotonic()
        steps: dict[str, float] = {}
        with _work_dir(cache_root()) as work:
            rootfs, log_file = work / "rootfs", work / "build.log"
            log(f"mmdebstrap: Debian {SUITE} with {', '.join(DEBIAN_PACKAGES)} (in the background)")
            debootstrap = _mmdebstrap(rootfs, work / "mmdebstrap.log")
            try:
                wheels, installer = _build_wheels(work, log_file, log)
                steps["wheels"] = round(time.monotonic() - started, 1)
            except BaseException:
                # SIGTERM, never SIGKILL: mmdebstrap then waits for its setup process, which
                # unmounts /proc, /sys and /dev/pts from the root filesystem before it exits.
                debootstrap.terminate()
                debootstrap.wait(timeout=600)
                raise
            if debootstrap.wait() != 0:
                raise ImageBuildError(f"mmdebstrap failed:\n{(work / 'mmdebstrap.log').read_text()[-3000:]}")
            steps["root filesystem (parallel)"] = round(time.monotonic() - started, 1)
            mark = time.monotonic()
            log(f"installing jobgate into {VENV} inside the root filesystem")
            _install_venv(rootfs, wheels, installer, log_file)
            steps["venv"] = round(time.monotonic() - mark, 1)
            mark = time.monotonic()
            tree = work / "image"
            packages = assemble(rootfs, tree, log=log)
            steps["assemble"] = round(time.monotonic() - mark, 1)
            mark = time.monotonic()
            log("writing the OCI archive")
            staging = work / "out"
            staging.mkdir()
            sizes = write_archive(tree, staging / ARCHIVE, work)
            steps["archive"] = round(time.monotonic() - mark, 1)
            stamp = {
                "image": IMAGE,
                "key": key,
                "suite": SUITE,
                "build_seconds": round(time.monotonic() - started, 1),
                "step_seconds": steps,
                **sizes,
                "files": len(_tree_paths(tree)),
                "debian_packages": packages,
                "wheels": sorted(p.name for p in wheels.glob("*.whl")),
            }
            archive = CACHE.publish(staging, key, stamp)
    log(f"image {IMAGE} built in {stamp['build_seconds']} s: {archive}")
    return archive


def import_image(node: Node, archive: Path | None = None, log: Log = print) -> str:
    """Build (or find) the image and import it into the node's containerd (namespace k8s.io);
    pods name it ``IMAGE`` with ``imagePullPolicy: Never``. Returns the image's name."""
    node.import_image(archive or build(log=log), IMAGE)
    return IMAGE


def main(argv: list[str] | None = None) -> int:
    """``build [--rebuild]`` (``python -m envtest build-image``), or ``assemble ROOT DEST``."""
    parser = argparse.ArgumentParser(prog="python -m envtest.image", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    commands = parser.add_subparsers(dest="command", required=True)
    build_command = commands.add_parser("build", help="build (or find in the cache) the image")
    build_command.add_argument("--rebuild", action="store_true", help="ignore the cache (new Debian and PyPI versions)")
    collect = commands.add_parser(
        "assemble", help="copy the image's files from a root filesystem (envtest/image_contents.py, as the Dockerfile)"
    )
    collect.add_argument("root", type=Path)
    collect.add_argument("dest", type=Path)
    args = parser.parse_args(argv)
    if args.command == "assemble":
        assemble(args.root, args.dest)
        return 0
    try:
        archive = build(rebuild=args.rebuild)
    except (ImageBuildError, OSError) as exc:
        print(f"image build failed: {exc}", file=sys.stderr)
        return 1
    info = build_info(archive)
    print(f"image:   {IMAGE}\narchive: {archive}")
    archive_mb, layer_mb = info["archive_bytes"] / 1e6, info["layer_bytes"] / 1e6
    print(f"size:    {archive_mb:.1f} MB archive (gzip layer), {layer_mb:.1f} MB unpacked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
