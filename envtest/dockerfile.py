"""The repository's ``Dockerfile``, built as its users build it, by buildah: no daemon, no registry.

``python -m envtest build-dockerfile`` writes ``jobgate.local/jobgate-dockerfile:<version>`` as an
OCI archive, cached by content in ``$JOBGATE_DOCKERFILE_CACHE`` or ``~/.cache/jobgate/dockerfile/``
(the key: the Dockerfile, every file it COPYs, this builder and buildah's version);
``tests/envtest/test_dockerfile.py`` compares it with the image ``envtest.image`` builds.

What this machine lacks, and what stands in for it, at build time only (the Dockerfile is built
unchanged, and the image holds none of it):

- **No registry**: ``FROM debian:bookworm`` is made here, as Docker Hub's is made (``mmdebstrap
  --variant=minbase`` of Debian 12, the debuerreotype recipe), committed into a private buildah
  storage as ``docker.io/library/debian:bookworm`` (the name Docker resolves ``debian:bookworm``
  to), and the build runs with ``--pull=never``.
- **A TLS-intercepting proxy**: the build's pip fails with ``CERTIFICATE_VERIFY_FAILED:
  self-signed certificate in certificate chain``, because the build stage trusts Debian's CAs,
  not the proxy's. The host's CA bundle is bind-mounted read-only at ``CA_MOUNT`` (under /run,
  which ``assemble`` never copies) and named by the Dockerfile's ``PIP_CERT`` build argument;
  on a machine without a proxy the argument is unset and pip uses its own CAs. apt reaches the
  mirrors over plain HTTP through the host's network (``--network=host``: buildah sets up no
  network of its own, so no firewall rule is added to the host).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import shlex
import shutil
import ssl
import subprocess
import sys
import time
from pathlib import Path

from envtest import debian
from envtest.build_cache import BuildCache, build_info
from envtest.image import (
    MIRRORS,
    VERSION,
    _locked,
    _work_dir,
    _work_dir_removed,
    build_unavailable_reason,
)
from envtest.image_contents import SUITE, ImageBuildError, Log

REPO = Path(__file__).resolve().parents[1]
DOCKERFILE = "Dockerfile"
IMAGE = f"jobgate.local/jobgate-dockerfile:{VERSION}"
# What `FROM debian:bookworm` means to Docker (and to buildah: registries.conf's "debian" alias).
BASE = f"docker.io/library/debian:{SUITE}"
HOST_PACKAGES = ("buildah", "mmdebstrap")
CA_MOUNT = "/run/jobgate-build/ca.crt"
ARCHIVE = "jobgate-dockerfile.tar"
CACHE = BuildCache("JOBGATE_DOCKERFILE_CACHE", "dockerfile", ARCHIVE, VERSION, keep=2)
# Left out of the build context, as they are absent from a fresh clone (bytecode, in-place builds).
_IGNORED_DIRS = ("__pycache__",)
_IGNORED_SUFFIXES = (".pyc", ".so")


# --- what the Dockerfile reads ---


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """The Dockerfile's instructions as (INSTRUCTION, arguments): continuation lines joined and
    comments dropped, as Docker reads them."""
    found: list[tuple[str, str]] = []
    logical = ""
    for line in dockerfile.read_text().splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            logical += stripped[:-1] + " "
            continue
        instruction, _, arguments = (logical + stripped).partition(" ")
        logical = ""
        found.append((instruction.upper(), arguments.strip()))
    return found


def copied_sources(dockerfile: Path) -> list[str]:
    """The build-context paths the Dockerfile's COPY and ADD instructions read (not those copied
    from another stage)."""
    sources: list[str] = []
    for instruction, arguments in instructions(dockerfile):
        if instruction not in ("COPY", "ADD"):
            continue
        if arguments.startswith("["):
            raise ImageBuildError(f"{instruction} {arguments}: the JSON form is not read here; use the plain form")
        words = shlex.split(arguments)
        flags = [w for w in words if w.startswith("--")]
        if any(flag.startswith("--from=") for flag in flags):
            continue
        paths = [w for w in words if not w.startswith("--")]
        for source in paths[:-1]:
            if any(c in source for c in "*?[") or "://" in source:
                raise ImageBuildError(f"{instruction} {arguments}: wildcards and URLs are not read here ({source})")
            sources.append(source.rstrip("/") or ".")
    return sources


def _ignored(path: Path) -> bool:
    return any(part in _IGNORED_DIRS for part in path.parts) or path.suffix in _IGNORED_SUFFIXES


def build_inputs(root: Path = REPO) -> list[Path]:
    """The Dockerfile and every file of ``root`` its COPY instructions copy, relative to ``root``."""
    inputs = {Path(DOCKERFILE)}
    for source in copied_sources(root / DOCKERFILE):
        path = root / source
        if path.is_file():
            inputs.add(Path(source))
        elif path.is_dir():
            inputs.update(
                found.relative_to(root) for found in path.rglob("*") if found.is_file() and not _ignored(found)
            )
        else:
            raise ImageBuildError(f"the Dockerfile copies {source}, which {root} does not have")
    return sorted(inputs)


def _buildah_version() -> str:
    if shutil.which("buildah") is None:
        return ""
    return subprocess.run(["buildah", "--version"], capture_output=True, text=True, check=False).stdout.strip()


def cache_key(root: Path = REPO) -> str:
    """What the image is built from: the Dockerfile, every file it copies, this builder (the base
    image's recipe) and buildah's version. Debian's and PyPI's newest versions are taken when it
    is built; ``--rebuild`` takes them again."""
    digest = hashlib.sha256()
    for relative in build_inputs(root):
        digest.update(str(relative).encode() + b"\0" + (root / relative).read_bytes() + b"\0")
    digest.update(Path(__file__).read_bytes())
    digest.update(_buildah_version().encode())
    return digest.hexdigest()


# --- the cache ---


def cache_root() -> Path:
    return CACHE.root()


def cached_image(key: str | None = None) -> Path | None:
    """The archive of a finished build of the current Dockerfile and sources, or None."""
    return CACHE.cached(key or cache_key())


# --- the build ---


def unavailable_reason() -> str | None:
    """Why the Dockerfile cannot be built here, or None (buildah and mmdebstrap can still be
    missing: ``build`` installs them, as ``python -m envtest node-deps`` does)."""
    # The base image is made by mmdebstrap in root mode, buildah runs as root: the local image's needs.
    return build_unavailable_reason()


def install_packages(log: Log = print) -> None:
    """``apt-get update`` once, then install buildah and mmdebstrap (root only)."""
    if missing := debian.missing(HOST_PACKAGES):
        try:
            debian.apt_install(missing, log)
        except RuntimeError as error:
            raise ImageBuildError(str(error)) from error


def host_ca_bundle() -> Path | None:
    """The CA bundle this machine's own pip and Python trust (``PIP_CERT``, ``SSL_CERT_FILE``,
    ..., else OpenSSL's default): the one that lets a build behind this machine's proxy reach PyPI."""
    candidates = [os.environ.get(name) for name in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")]
    candidates.append(ssl.get_default_verify_paths().cafile)
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return Path(candidate).resolve()
    return None


class Buildah:
    """buildah with its own storage under ``work`` (so nothing is left in /var/lib/containers)."""

    def __init__(self, work: Path, log_file: Path) -> None:
        self.root, self.runroot, self.log_file = work / "storage", work / "run", log_file
        self.registries = work / "registries.conf"
        # Short names resolve as Docker resolves them, whatever this machine's registries.conf says.
        self.registries.write_text('unqualified-search-registries = ["docker.io"]\nshort-name-mode = "permissive"\n')
        self.env = {**os.environ, "CONTAINERS_REGISTRIES_CONF": str(self.registries), "TMPDIR": str(work)}

    def __call__(self, *args: str) -> str:
        command = ["buildah", "--root", str(self.root), "--runroot", str(self.runroot),
                   "--storage-driver", "overlay", *args]  # fmt: skip
        with self.log_file.open("a") as handle:
            handle.write(f"$ {shlex.join(command)}\n")
            handle.flush()
            proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=handle, text=True, env=self.env, check=False)
            handle.write(proc.stdout)
        if proc.returncode != 0:
            tail = self.log_file.read_text()[-4000:]
            raise ImageBuildError(f"buildah {args[0]} failed ({proc.returncode}); the end of {self.log_file}:\n{tail}")
        return proc.stdout.strip()

    def clean(self) -> None:
        """Every container and image of this storage removed (and with them its overlay mounts)."""
        with contextlib.suppress(ImageBuildError):
            self("rm", "--all")
        with contextlib.suppress(ImageBuildError):
            self("rmi", "--all", "--force")


def _base_image(buildah: Buildah, work: Path, log: Log) -> None:
    """``debian:bookworm`` as Docker Hub's is made (debuerreotype: Debian's minbase), in buildah's storage."""
    tarball = work / "debian.tar"
    command = ["mmdebstrap", "--variant=minbase", "--mode=root", "--format=tar", SUITE, str(tarball), *MIRRORS]
    log(f"mmdebstrap: {BASE} (minbase), as the build's base")
    with (work / "mmdebstrap.log").open("w") as handle:
        handle.write("$ " + shlex.join(command) + "\n")
        handle.flush()
        if subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, check=False).returncode != 0:
            raise ImageBuildError(f"mmdebstrap failed:\n{(work / 'mmdebstrap.log').read_text()[-3000:]}")
    container = buildah("from", "scratch")
    buildah("add", container, str(tarball), "/")
    buildah("config", "--env", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "--cmd", "bash", container)  # fmt: skip
    buildah("commit", "--quiet", "--rm", container, BASE)
    tarball.unlink()


def _stage_context(context: Path, inputs: list[Path]) -> None:
    """The build context: exactly the files the cache key covers, so a file the Dockerfile reads
    and the key misses fails the build instead of going unnoticed."""
    for relative in inputs:
        (context / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / relative, context / relative)


def build(*, rebuild: bool = False, log: Log = print) -> Path:
    """Build (or find in the cache) the Dockerfile's image; returns its OCI archive."""
    key = cache_key()
    if not rebuild and (existing := cached_image(key)):
        return existing
    reason = unavailable_reason()
    if reason:
        raise ImageBuildError(reason)
    with _locked(cache_root()):
        if not rebuild and (existing := cached_image(key)):
            return existing
        install_packages(log)
        key = cache_key()  # buildah's version is part of it
        for stale in cache_root().glob("build-*"):
            with contextlib.suppress(ImageBuildError), _work_dir_removed(stale):
                Buildah(stale, stale / "clean.log").clean()
        started = time.monotonic()
        steps: dict[str, float] = {}
        with _work_dir(cache_root()) as work:
            buildah = Buildah(work, work / "buildah.log")
            try:
                context = work / "context"
                _stage_context(context, build_inputs())
                _base_image(buildah, work, log)
                steps["base image"] = round(time.monotonic() - started, 1)
                mark = time.monotonic()
                arguments = ["bud", "--pull=never", "--network=host", "--layers=false", "--format=oci",
                             "--file", str(context / DOCKERFILE), "--tag", IMAGE]  # fmt: skip
                ca = host_ca_bundle()
                if ca is not None:
                    arguments += ["--volume", f"{ca}:{CA_MOUNT}:ro", "--build-arg", f"PIP_CERT={CA_MOUNT}"]
                log(f"buildah bud {DOCKERFILE} (the CA bundle {ca} mounted for pip)")
                buildah(*arguments, str(context))
                steps["buildah bud"] = round(time.monotonic() - mark, 1)
                mark = time.monotonic()
                staging = work / "out"
                staging.mkdir()
                buildah("push", "--quiet", IMAGE, f"oci-archive:{staging / ARCHIVE}:{VERSION}")
                steps["archive"] = round(time.monotonic() - mark, 1)
                stamp = {
                    "image": IMAGE,
                    "key": key,
                    "buildah": _buildah_version(),
                    "ca_bundle": str(ca) if ca else None,
                    "build_seconds": round(time.monotonic() - started, 1),
                    "step_seconds": steps,
                    "archive_bytes": (staging / ARCHIVE).stat().st_size,
                }
                shutil.copy2(work / "buildah.log", staging / "buildah.log")
            finally:
                buildah.clean()
            archive = CACHE.publish(staging, key, stamp)
    log(f"image {IMAGE} built from {DOCKERFILE} in {stamp['build_seconds']} s: {archive}")
    return archive


def main(argv: list[str] | None = None) -> int:
    """``python -m envtest build-dockerfile [--rebuild]``."""
    parser = argparse.ArgumentParser(prog="python -m envtest build-dockerfile", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--rebuild", action="store_true", help="ignore the cache (new Debian and PyPI versions)")
    args = parser.parse_args(argv)
    try:
        archive = build(rebuild=args.rebuild)
    except (ImageBuildError, OSError) as exc:
        print(f"Dockerfile build failed: {exc}", file=sys.stderr)
        return 1
    info = build_info(archive)
    print(f"image:   {IMAGE}\narchive: {archive}")
    print(f"size:    {info['archive_bytes'] / 1e6:.1f} MB archive; built in {info['build_seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
