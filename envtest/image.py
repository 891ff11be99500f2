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
3. ``assemble`` copies out only what the runtime uses (below) into a new directory, which
   becomes the image's one layer. No shell, no package manager, no other program: nothing in
   the image can be run but the interpreter.
4. The OCI archive (index, manifest, config, one gzip layer) is written here, as
   ``envtest.node_build`` writes the node's images.

What ``assemble`` keeps: the Debian packages the interpreter needs (``RUNTIME_PACKAGES`` and,
found by reading the ELF dynamic sections, every package whose shared library an interpreter,
stdlib or venv binary loads), without their programs (except the interpreter), scripts,
manuals, translations and documentation (copyright files kept); the bytecode Debian compiled
for the standard library; the CA bundle; the venv minus ``PRUNED``; a passwd with the user
65532, an empty home and ``/tmp``; and a dpkg status listing exactly the packages inside, for
scanners. The Dockerfile runs the same ``assemble`` in its build stage, so a Docker build ships
the same selection; ``tests/envtest/test_image.py`` keeps the Dockerfile's user, entrypoint,
paths and environment equal to the constants below.

This module runs on its own too (the Dockerfile: ``python3.11 envtest/image.py assemble / /rootfs``),
so it imports nothing but the standard library at module level.
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
import stat
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from envtest.node import Node

REPO = Path(__file__).resolve().parents[1]


def _project_version() -> str:
    return str(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"])


# --- the image's facts: the Dockerfile states the same (tests/envtest/test_image.py) ---
VERSION = _project_version()
IMAGE = f"jobgate.local/jobgate:{VERSION}"
SUITE = "bookworm"  # Debian 12: its python3.11 is the interpreter jobgate targets
PYTHON = "python3.11"
VENV = "/opt/jobgate"
USER = "65532:65532"  # numeric, so that runAsNonRoot can check it without a passwd lookup
USER_NAME = "nonroot"
HOME = "/home/nonroot"
ENTRYPOINT = ("jobgate",)  # the venv's console script, found through PATH
CMD = ("--help",)
WORKDIR = "/"
ENV = {
    "PATH": f"{VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    # The root filesystem is read-only: every module is compiled at build time, and Python must
    # not try to write bytecode beside it.
    "PYTHONDONTWRITEBYTECODE": "1",
    # Log lines reach the kubelet as they are written.
    "PYTHONUNBUFFERED": "1",
}
# What mmdebstrap installs beyond Debian's essential set (and what the Dockerfile's build stage
# installs beyond its build tools). libstdc++6: frozenlist's extension (aiohttp's) links it;
# assemble fails naming the library when a wheel needs one that is not installed.
DEBIAN_PACKAGES = (PYTHON, "ca-certificates", "netbase", "libstdc++6")
MIRRORS = (
    f"deb http://deb.debian.org/debian {SUITE} main",
    f"deb http://deb.debian.org/debian {SUITE}-updates main",
    f"deb http://deb.debian.org/debian-security {SUITE}-security main",
)

# --- what assemble keeps ---
# Packages kept whatever links them: the interpreter and its standard library; libc (its NSS
# modules and libgcc_s are loaded with dlopen, which no ELF header names); the CA bundle and
# openssl's configuration and default paths (Python's ssl looks in /usr/lib/ssl); os-release;
# /etc/services and /etc/protocols; /etc/mime.types (mimetypes).
RUNTIME_PACKAGES = (
    f"{PYTHON}-minimal",
    f"lib{PYTHON}-minimal",
    f"lib{PYTHON}-stdlib",
    "libc6",
    "libgcc-s1",
    "ca-certificates",
    "openssl",
    "base-files",
    "netbase",
    "media-types",
)
PROGRAMS = (f"usr/bin/{PYTHON}",)  # the only program in the image
PROGRAM_DIRS = ("bin", "sbin", "usr/bin", "usr/sbin", "usr/games", "usr/libexec", "usr/local/bin", "usr/local/sbin")
EXCLUDED_DIRS = (
    "usr/share/doc",  # except the copyright files
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "usr/share/lintian",
    "usr/share/bug",
    "usr/share/bash-completion",
    "usr/share/menu",
    "usr/share/gdb",
)
# Files maintainer scripts generate (not in any package's file list) that the runtime reads.
GENERATED = ("etc/nsswitch.conf", "etc/ssl/certs", "etc/ca-certificates.conf")
# Parts of dependencies jobgate never imports, relative to the venv's site-packages:
# the kubernetes client's asyncio copy of itself (68 MB of its 126 MB; jobgate uses the
# synchronous client, and ``import kubernetes`` does not import it).
PRUNED = ("kubernetes/aio",)
# Empty directories a container runtime mounts over or a program expects.
EMPTY_DIRS = {"dev": 0o755, "proc": 0o555, "sys": 0o555, "run": 0o755, "tmp": 0o1777, "root": 0o700}

# --- the build ---
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
_STAMP = "build-info.json"
_KEEP_BUILDS = 3

Log = Callable[[str], None]


class ImageBuildError(RuntimeError):
    pass


def _run(cmd: list[str], log_file: Path | None = None, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, **kwargs)
    if log_file is not None:
        with log_file.open("a") as handle:
            handle.write(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}\n")
    if proc.returncode != 0:
        raise ImageBuildError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{(proc.stdout + proc.stderr)[-3000:]}")
    return proc


# --- Debian's package database ---


def _dpkg_status(root: Path) -> dict[str, str]:
    """Installed packages' stanzas from ``root``'s dpkg status, by package name."""
    stanzas: dict[str, str] = {}
    for stanza in (root / "var/lib/dpkg/status").read_text().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and not line[0].isspace())
        if fields.get("Status") == "install ok installed":
            stanzas[fields["Package"]] = stanza.strip() + "\n"
    return stanzas


def _field(stanza: str, name: str) -> str:
    for line in stanza.splitlines():
        if line.startswith(name + ": "):
            return line.split(": ", 1)[1]
    return ""


def _package_files(root: Path, package: str) -> list[str]:
    info = root / "var/lib/dpkg/info"
    for candidate in (info / f"{package}.list", *info.glob(f"{package}:*.list")):
        if candidate.is_file():
            return [line for line in candidate.read_text().splitlines() if line not in ("", "/.")]
    return []


def _inside(root: Path, path: str) -> str:
    """``path`` of the image relative to its root with every directory symlink above it resolved
    inside ``root`` (merged /usr: /lib/x86_64-linux-gnu/libc.so.6 is usr/lib/x86_64-linux-gnu/libc.so.6);
    the last component is kept as it is."""
    parts = [p for p in path.strip("/").split("/") if p]
    resolved: list[str] = []
    for hops, part in enumerate(parts[:-1]):
        if hops > 64:
            raise ImageBuildError(f"too many symlinks in {path}")
        candidate = root.joinpath(*resolved, part)
        if candidate.is_symlink():
            target = os.readlink(candidate)
            base = [] if target.startswith("/") else resolved
            resolved = _inside(root, "/".join([*base, target, "x"])).split("/")[:-1]
        elif part == "..":
            resolved = resolved[:-1]
        elif part != ".":
            resolved.append(part)
    return "/".join([*resolved, parts[-1]]) if parts else ""


def _resolve(root: Path, path: str) -> str:
    """``path`` with every symlink resolved inside ``root``, the last component included."""
    current = _inside(root, path)
    for _ in range(64):
        full = root / current
        if not full.is_symlink():
            return current
        target = os.readlink(full)
        parent = current.rsplit("/", 1)[0] if "/" in current else ""
        current = _inside(root, target if target.startswith("/") else f"{parent}/{target}")
    raise ImageBuildError(f"too many symlinks at {path}")


# --- ELF: which shared libraries a binary loads ---


def elf_needs(path: Path) -> tuple[list[str], list[str]] | None:
    """DT_NEEDED names and RUNPATH/RPATH directories of a 64-bit little-endian ELF file, or None
    when ``path`` is not one."""
    with path.open("rb") as handle:
        head = handle.read(64)
        if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
            return None
        (phoff,) = struct.unpack_from("<Q", head, 32)
        phentsize, phnum = struct.unpack_from("<HH", head, 54)
        handle.seek(phoff)
        table = handle.read(phentsize * phnum)
        loads: list[tuple[int, int, int]] = []
        dynamic: tuple[int, int] | None = None
        for index in range(phnum):
            p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from("<IIQQQQ", table, index * phentsize)
            if p_type == 1:  # PT_LOAD
                loads.append((p_vaddr, p_offset, p_filesz))
            elif p_type == 2:  # PT_DYNAMIC
                dynamic = (p_offset, p_filesz)
        if dynamic is None:
            return [], []
        handle.seek(dynamic[0])
        data = handle.read(dynamic[1])
        entries: list[tuple[int, int]] = []
        for offset in range(0, len(data) - 15, 16):
            tag, value = struct.unpack_from("<qQ", data, offset)
            if tag == 0:  # DT_NULL
                break
            entries.append((tag, value))
        strtab = next((value for tag, value in entries if tag == 5), None)  # DT_STRTAB, an address
        if strtab is None:
            return [], []
        base = next((strtab - vaddr + off for vaddr, off, size in loads if vaddr <= strtab < vaddr + size), None)
        if base is None:
            return [], []

        def string(at: int) -> str:
            handle.seek(base + at)
            raw = b""
            while b"\0" not in raw:
                chunk = handle.read(256)
                if not chunk:
                    break
                raw += chunk
            return raw.split(b"\0", 1)[0].decode()

        needed = [string(value) for tag, value in entries if tag == 1]  # DT_NEEDED
        runpaths = [d for tag, value in entries if tag in (15, 29) for d in string(value).split(":") if d]  # RPATH
        return needed, runpaths


def _library_dirs(root: Path) -> list[str]:
    multiarch = sorted(p.name for p in (root / "usr/lib").glob("*-linux-gnu*") if (p / "libc.so.6").exists())
    return [
        *(f"/lib/{m}" for m in multiarch),
        *(f"/usr/lib/{m}" for m in multiarch),
        "/lib",
        "/usr/lib",
        "/lib64",
        "/usr/lib64",
    ]


# --- assemble: the image's file tree ---


def _excluded(relative: str) -> bool:
    if relative in PROGRAMS:
        return False
    parent = relative.rsplit("/", 1)[0] if "/" in relative else ""
    if parent in PROGRAM_DIRS:
        return True
    if relative.startswith("usr/share/doc/"):  # usr/share/doc/<package>/copyright only
        depth = relative.count("/")
        return not (depth == 3 or (depth == 4 and relative.endswith("/copyright")))
    return any(relative == d or relative.startswith(d + "/") for d in EXCLUDED_DIRS if d != "usr/share/doc")


def _is_script(path: Path) -> bool:
    """An executable script (openssl's CA.pl...), not a module: a few of the standard library's
    modules are executable and start with ``#!`` too."""
    mode = path.lstat().st_mode
    if not stat.S_ISREG(mode) or not mode & 0o111 or path.suffix == ".py":
        return False
    with path.open("rb") as handle:
        return handle.read(2) == b"#!"


def _walk(root: Path, relative: str) -> Iterator[str]:
    """``relative`` and, for a directory, everything below it (symlinks not followed)."""
    top = root / relative
    if not top.is_symlink() and not top.exists():
        return
    yield relative
    if top.is_dir() and not top.is_symlink():
        for directory, dirs, files in os.walk(top):
            dirs.sort()
            here = Path(directory).relative_to(root)
            for name in [*dirs, *sorted(files)]:
                yield str(here / name)


def select(root: Path, venv: str = VENV, log: Log = print) -> tuple[set[str], dict[str, str]]:
    """The paths (relative to ``root``) the image keeps, and the stanzas of the packages they
    come from. ``root`` holds an installed Debian system with the venv at ``venv``."""
    status = _dpkg_status(root)
    owners: dict[str, str] = {}
    files: dict[str, list[str]] = {}
    for package in status:
        files[package] = [_inside(root, p) for p in _package_files(root, package)]
        for path in files[package]:
            owners.setdefault(path, package)
    missing = [p for p in RUNTIME_PACKAGES if p not in status]
    if missing:
        raise ImageBuildError(f"packages missing from {root}: {' '.join(missing)}")
    venv_rel = venv.strip("/")
    if not (root / venv_rel / "pyvenv.cfg").is_file():
        raise ImageBuildError(f"no virtual environment at {root / venv_rel}")
    site_packages = next((root / venv_rel / "lib").glob("python3*/site-packages"))
    pruned = [str((site_packages / p).relative_to(root)) for p in PRUNED]
    venv_paths = [p for p in _walk(root, venv_rel) if not any(p == q or p.startswith(q + "/") for q in pruned)]
    library_dirs = _library_dirs(root)

    kept: set[str] = set()
    queue: list[str] = []  # ELF files whose libraries are still to be found

    def keep_package(package: str) -> None:
        if package in kept:
            return
        kept.add(package)
        for path in files[package]:
            full = root / path
            if full.is_file() and not full.is_symlink() and not _excluded(path):
                queue.append(path)

    for package in RUNTIME_PACKAGES:
        keep_package(package)
    queue.extend(p for p in venv_paths if (root / p).is_file() and not (root / p).is_symlink())
    seen: set[str] = set()
    while queue:
        path = queue.pop()
        if path in seen:
            continue
        seen.add(path)
        found = elf_needs(root / path)
        if found is None:
            continue
        needed, runpaths = found
        origin = "/" + path.rsplit("/", 1)[0]
        search = [d.replace("${ORIGIN}", origin).replace("$ORIGIN", origin) for d in runpaths] + library_dirs
        for name in needed:
            where = next((f"{d}/{name}" for d in search if (root / _inside(root, f"{d}/{name}")).exists()), None)
            if where is None:
                raise ImageBuildError(f"/{path} needs {name}, which is nowhere in {root}: add its package")
            target = _resolve(root, where)
            if target.startswith(venv_rel + "/"):
                continue  # a wheel's bundled library: the venv is kept whole
            package = owners.get(target)
            if package is None:
                raise ImageBuildError(f"/{path} needs /{target}, which no Debian package installed")
            keep_package(package)

    paths: set[str] = set()
    for package in kept:
        for path in files[package]:
            full = root / path
            if (full.exists() or full.is_symlink()) and not _excluded(path) and not _is_script(full):
                paths.add(path)
                # The bytecode Debian's postinst compiled for the standard library (not in any file list).
                if path.endswith(".py"):
                    directory, name = path.rsplit("/", 1)
                    pyc = f"{directory}/__pycache__/{name[:-3]}.cpython-{PYTHON[6:].replace('.', '')}.pyc"
                    if (root / pyc).is_file():
                        paths.update((f"{directory}/__pycache__", pyc))
    for generated in GENERATED:
        paths.update(_walk(root, generated))
    paths.update(venv_paths)
    # merged /usr: /bin, /lib, /lib64, /sbin are symlinks (the ELF interpreter is /lib64/ld-linux-*)
    paths.update(entry.name for entry in root.iterdir() if entry.is_symlink())
    log(f"keeping {len(kept)} of {len(status)} Debian packages, {len(paths)} paths")
    return paths, {package: status[package] for package in sorted(kept)}


def _copy_entry(source: Path, target: Path) -> None:
    info = source.lstat()
    if stat.S_ISDIR(info.st_mode):
        target.mkdir(exist_ok=True)
    elif stat.S_ISLNK(info.st_mode):
        target.symlink_to(os.readlink(source))
    elif stat.S_ISREG(info.st_mode):
        shutil.copyfile(source, target, follow_symlinks=False)
    else:
        return  # device nodes and fifos: the runtime provides /dev
    # root owns everything (Debian's /var/local is root:staff; the image's groups are root and USER's)
    os.lchown(target, 0, 0)
    if not stat.S_ISLNK(info.st_mode):
        # No setuid or setgid file: nothing in the image can gain privileges by running one.
        os.chmod(target, stat.S_IMODE(info.st_mode) & ~(stat.S_ISUID | stat.S_ISGID))
    os.utime(target, ns=(info.st_mtime_ns, info.st_mtime_ns), follow_symlinks=False)


def _provided_at_run_time(target: str) -> bool:
    return target.startswith(("/run/", "/proc/", "/dev/", "/sys/"))


def _write(dest: Path, relative: str, data: str, mode: int = 0o644) -> None:
    path = dest / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data)
    path.chmod(mode)


def assemble(root: Path, dest: Path, venv: str = VENV, log: Log = print) -> dict[str, str]:
    """Copy the image's files from ``root`` (a Debian system with jobgate's venv) to ``dest``.

    Returns the kept packages' versions. ``dest`` must not exist or be empty.
    """
    paths, stanzas = select(root, venv, log)
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise ImageBuildError(f"{dest} is not empty")
    directories: list[str] = []
    for relative in sorted(paths):
        parts = relative.split("/")
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            if not (dest / parent).exists():
                _copy_entry(root / parent, dest / parent)
                directories.append(parent)
        source = root / relative
        if not (dest / relative).exists() and not (dest / relative).is_symlink():
            _copy_entry(source, dest / relative)
            if source.is_dir() and not source.is_symlink():
                directories.append(relative)
    # The account the image runs as, and no other but root's (no login shell: there is none).
    uid, gid = USER.split(":")
    _write(dest, "etc/passwd", f"root:x:0:0:root:/root:/usr/sbin/nologin\n"
           f"{USER_NAME}:x:{uid}:{gid}:{USER_NAME}:{HOME}:/usr/sbin/nologin\n"
           "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")  # fmt: skip
    _write(dest, "etc/group", f"root:x:0:\n{USER_NAME}:x:{gid}:\nnogroup:x:65534:\n")
    # What is inside, for vulnerability scanners (they read dpkg's status): exactly these packages.
    _write(dest, "var/lib/dpkg/status", "\n".join(stanzas.values()))
    for name, mode in EMPTY_DIRS.items():
        (dest / name).mkdir(exist_ok=True)
        (dest / name).chmod(mode)
    home = dest / HOME.strip("/")
    home.mkdir(parents=True, exist_ok=True)
    home.chmod(0o755)
    os.chown(home, int(uid), int(gid))
    # Links to what was left out (openssl's tsget -> tsget.pl); links into the directories the
    # runtime provides (/var/lock -> /run/lock) stay.
    for relative in sorted(paths):
        link = dest / relative
        if link.is_symlink() and not _provided_at_run_time(os.readlink(link)):
            target = dest / _resolve(dest, relative)  # absolute targets inside dest, not this machine
            if not target.exists() or target.is_symlink():
                link.unlink()
    # Directory times last: creating their entries changed them.
    for relative in reversed(directories):
        mtime = (root / relative).lstat().st_mtime_ns
        os.utime(dest / relative, ns=(mtime, mtime), follow_symlinks=False)
    return {package: _field(stanza, "Version") for package, stanza in stanzas.items()}


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


def cache_root() -> Path:
    root = os.environ.get("JOBGATE_IMAGE_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "jobgate" / "image"


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
    """What the image is built from: the package's sources, this builder, the Debian release and
    mirrors (in this file) and the interpreter that compiles the wheel. Debian's and PyPI's newest
    versions are taken when the image is built; ``--rebuild`` takes them again."""
    digest = hashlib.sha256()
    for path in _source_files():
        digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(Path(__file__).read_bytes())
    if HOST_PYTHON.exists():
        digest.update(_run([str(HOST_PYTHON), "-c", "import sys; print(sys.version)"]).stdout.encode())
    return digest.hexdigest()


def cache_dir(key: str | None = None) -> Path:
    return cache_root() / f"{VERSION}-{(key or cache_key())[:16]}"


def cached_image(key: str | None = None) -> Path | None:
    """The archive of a finished build of the current sources, or None."""
    directory = cache_dir(key)
    archive, stamp = directory / ARCHIVE, directory / _STAMP
    if archive.is_file() and stamp.is_file():
        return archive
    return None


def build_info(archive: Path) -> dict[str, Any]:
    return json.loads((archive.parent / _STAMP).read_text())


def missing_host_packages() -> list[str]:
    def installed(package: str) -> bool:
        query = subprocess.run(
            ["dpkg-query", "-W", "-f", "${Status}", package], capture_output=True, text=True, check=False
        )
        return query.returncode == 0 and query.stdout.strip() == "install ok installed"

    return [package for package in HOST_PACKAGES if not installed(package)]


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
    missing = missing_host_packages()
    if not missing:
        return
    log(f"installing Debian packages: {' '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing]):
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise ImageBuildError(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")


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
        target = cache_dir(key)
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
            (staging / _STAMP).write_text(json.dumps(stamp, indent=2) + "\n")
            if target.exists():
                shutil.rmtree(target)
            staging.rename(target)
        _prune_cache(keep=target)
    log(f"image {IMAGE} built in {stamp['build_seconds']} s: {target / ARCHIVE}")
    return target / ARCHIVE


def _prune_cache(keep: Path) -> None:
    builds = sorted((p for p in cache_root().iterdir() if p.is_dir() and (p / _STAMP).exists()),
                    key=lambda p: p.stat().st_mtime, reverse=True)  # fmt: skip
    for old in builds[_KEEP_BUILDS:]:
        if old != keep:
            shutil.rmtree(old, ignore_errors=True)


def import_image(node: Node, archive: Path | None = None, log: Log = print) -> str:
    """Build (or find) the image and import it into the node's containerd (namespace k8s.io);
    pods name it ``IMAGE`` with ``imagePullPolicy: Never``. Returns the image's name."""
    node.import_image(archive or build(log=log), IMAGE)
    return IMAGE


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m envtest.image", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    commands = parser.add_subparsers(dest="command", required=True)
    build_command = commands.add_parser("build", help="build (or find in the cache) the image")
    build_command.add_argument("--rebuild", action="store_true", help="ignore the cache (new Debian and PyPI versions)")
    collect = commands.add_parser("assemble", help="copy the image's files from a root filesystem (the Dockerfile)")
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
