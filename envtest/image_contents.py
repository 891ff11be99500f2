"""What jobgate's image holds: its facts, and the files it keeps (``assemble``).

The image's facts are stated here once: the Debian release and packages, the interpreter, the
virtual environment ``VENV``, the user, entrypoint, command, working directory and environment.
``envtest.image`` builds the image and writes its OCI config from them;
``tests/envtest/test_image.py`` keeps the Dockerfile's equal to them.

What ``assemble`` keeps: the Debian packages the interpreter needs (``RUNTIME_PACKAGES`` and,
found by reading the ELF dynamic sections, every package whose shared library an interpreter,
stdlib or venv binary loads), without their programs (except the interpreter), scripts,
manuals, translations and documentation (copyright files kept); the bytecode Debian compiled
for the standard library; the CA bundle; the venv minus ``PRUNED``; a passwd with the user
65532, an empty home and ``/tmp``; and a dpkg status listing exactly the packages inside, for
scanners. The local build (``envtest.image``) and the Dockerfile's build stage run the same
``assemble``, so both ship the same selection.

The Dockerfile copies this file alone and runs it (``python3.11 envtest/image_contents.py
assemble / /rootfs``), so it imports nothing but the standard library, and nothing of envtest.
"""

from __future__ import annotations

import argparse
import os
import shutil
import stat
import struct
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

# --- the image's facts: the Dockerfile states the same (tests/envtest/test_image.py) ---
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


Log = Callable[[str], None]


class ImageBuildError(RuntimeError):
    """Building or assembling the image failed: a command, a package or library missing, ..."""


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


def main(argv: list[str] | None = None) -> int:
    """``assemble ROOT DEST``: what the Dockerfile's build stage runs."""
    parser = argparse.ArgumentParser(prog="python3.11 envtest/image_contents.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    commands = parser.add_subparsers(dest="command", required=True)
    collect = commands.add_parser("assemble", help="copy the image's files from a root filesystem (the Dockerfile)")
    collect.add_argument("root", type=Path)
    collect.add_argument("dest", type=Path)
    args = parser.parse_args(argv)
    assemble(args.root, args.dest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
