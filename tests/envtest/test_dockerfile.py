"""The repository's Dockerfile, built by buildah as users build it (envtest/dockerfile.py,
``python -m envtest build-dockerfile``), against the image ``python -m envtest build-image`` writes.

- Fast (nothing built): the build context is exactly what the cache key covers; the Dockerfile's
  build-time CA argument is only an argument of the build stage; bad Dockerfile input is refused
  with a message.
- The built image (from the cache when the Dockerfile and what it copies have not changed): the
  same OCI config as the local image, the same Debian packages, the same files with the same
  owners, modes and link targets (the dependencies' files compared where PyPI gave both builds
  the same version), none of this machine's proxy CA; run in a chroot as 65532 with no shell:
  ``jobgate --version``, every module imported with the compiled engine, ``jobgate validate`` of
  the examples.

Locally the built tests skip with the reason when an image cannot be built here (not root, not
Debian 12, no network); with CI=true that is a failure, never a skip.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import os
import re
import shutil
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from envtest import dockerfile, image, image_contents
from tests.envtest.test_image import IMPORT_EVERYTHING, IN_CI, in_chroot

REPO = Path(__file__).resolve().parents[2]
SITE_PACKAGES = f"{image_contents.VENV.strip('/')}/lib/{image_contents.PYTHON}/site-packages"
# A distribution's metadata directory, whose name carries its version.
DIST_INFO = re.compile(rf"^{re.escape(SITE_PACKAGES)}/(?P<name>[^/]+?)-(?P<version>[^/-]+)\.dist-info(?P<rest>/.*)?$")


# --- the build's inputs (nothing built) ---


def test_the_build_context_is_what_the_cache_key_covers() -> None:
    inputs = {str(p) for p in dockerfile.build_inputs()}
    assert "Dockerfile" in inputs
    # what the wheel is built from, the long description, and the file selection
    assert {"pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "envtest/image_contents.py"} <= inputs
    for package in ("jobgate", "webhook", "controller", "certs", "build_support"):
        assert any(p.startswith(f"{package}/") and p.endswith(".py") for p in inputs), package
    # of the harness, the file selection alone (the rest of envtest/ is not the image's)
    assert {p for p in inputs if p.startswith("envtest/")} == {"envtest/image_contents.py"}
    assert not [p for p in inputs if "__pycache__" in p or p.endswith((".pyc", ".so"))]


def _copy_inputs(root: Path) -> None:
    for relative in dockerfile.build_inputs():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / relative, root / relative)


def test_the_cache_key_changes_with_every_input_and_nothing_else(tmp_path: Path) -> None:
    _copy_inputs(tmp_path)
    key = dockerfile.cache_key(tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/new.md").write_text("not copied by the Dockerfile\n")
    (tmp_path / "jobgate/__pycache__").mkdir(exist_ok=True)
    (tmp_path / "jobgate/__pycache__/x.cpython-311.pyc").write_bytes(b"bytecode")
    assert dockerfile.cache_key(tmp_path) == key
    for relative in ("Dockerfile", "README.md", "envtest/image_contents.py", "jobgate/__init__.py"):
        original = (tmp_path / relative).read_bytes()
        (tmp_path / relative).write_bytes(original + b"\n")
        assert dockerfile.cache_key(tmp_path) != key, relative
        (tmp_path / relative).write_bytes(original)
    (tmp_path / "webhook/new_module.py").write_text("")
    assert dockerfile.cache_key(tmp_path) != key


def test_bad_dockerfile_input_is_refused_with_its_reason(tmp_path: Path) -> None:
    for line, reason in (
        ('COPY ["jobgate", "jobgate"]', "the JSON form is not read here"),
        ("COPY jobgate/*.py jobgate/", "wildcards and URLs are not read here (jobgate/*.py)"),
        ("ADD https://example.invalid/x.tar /x", "wildcards and URLs are not read here"),
    ):
        (tmp_path / "Dockerfile").write_text(f"FROM debian:bookworm AS build\n{line}\n")
        with pytest.raises(image_contents.ImageBuildError, match=re.escape(reason)):
            dockerfile.copied_sources(tmp_path / "Dockerfile")
    (tmp_path / "Dockerfile").write_text("FROM debian:bookworm AS build\nCOPY --from=other /a /b\nCOPY missing /m\n")
    assert dockerfile.copied_sources(tmp_path / "Dockerfile") == ["missing"]
    with pytest.raises(image_contents.ImageBuildError, match=r"the Dockerfile copies missing, which .* does not have"):
        dockerfile.build_inputs(tmp_path)


def test_the_build_ca_is_an_argument_of_the_build_stage_only() -> None:
    """PIP_CERT is declared without a value (unset on a machine without a proxy, so pip keeps its
    own CAs), never in the final stage, and the bundle is mounted where assemble copies nothing."""
    stages: list[list[tuple[str, str]]] = []
    for instruction, arguments in dockerfile.instructions(REPO / "Dockerfile"):
        if instruction == "FROM":
            stages.append([])
        stages[-1].append((instruction, arguments))
    build, final = stages[0], stages[-1]
    assert ("ARG", "PIP_CERT") in build
    position = build.index(("ARG", "PIP_CERT"))
    first_pip = next(i for i, (name, arguments) in enumerate(build) if name == "RUN" and "pip " in arguments)
    assert position < first_pip
    assert not [i for i in final if "PIP_CERT" in i[1] or i[0] == "ARG"]
    assert dockerfile.CA_MOUNT.startswith("/run/") and image_contents.EMPTY_DIRS["run"] == 0o755


# --- the built images ---


@dataclass
class Image:
    config: dict
    members: dict[str, tarfile.TarInfo] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)


def read_image(archive: Path, keep_files: bool = False) -> Image:
    """An OCI archive's config and its layers' members, applied in order (no whiteouts expected)."""
    with tarfile.open(archive) as outer:

        def blob(digest: str) -> bytes:
            handle = outer.extractfile("blobs/sha256/" + digest.removeprefix("sha256:"))
            assert handle is not None
            return handle.read()

        [entry] = json.loads(blob_index(outer))["manifests"]
        manifest = json.loads(blob(entry["digest"]))
        found = Image(config=json.loads(blob(manifest["config"]["digest"])))
        for layer in manifest["layers"]:
            data = blob(layer["digest"])
            plain = gzip.decompress(data) if layer["mediaType"].endswith("+gzip") else data
            with tarfile.open(fileobj=io.BytesIO(plain)) as tar:
                for member in tar:
                    name = member.name.removeprefix("./").rstrip("/")
                    assert ".wh." not in name, f"whiteout {name}: one layer on scratch was expected"
                    found.members[name] = member
                    if not member.isreg():
                        continue
                    if name in ("etc/passwd", "etc/group", "var/lib/dpkg/status") or name.endswith(".dist-info/RECORD"):
                        found.texts[name] = tar.extractfile(member).read().decode()  # type: ignore[union-attr]
                    if keep_files or name == "etc/ssl/certs/ca-certificates.crt":
                        found.files[name] = tar.extractfile(member).read()  # type: ignore[union-attr]
    return found


def blob_index(outer: tarfile.TarFile) -> bytes:
    handle = outer.extractfile("index.json")
    assert handle is not None
    return handle.read()


def _built(build: Callable[[], Path], cached: Path | None, unavailable: str | None) -> Path:
    if cached is not None:
        return cached
    if unavailable and not IN_CI:
        pytest.skip(f"the image cannot be built here: {unavailable}")
    try:
        return build()
    except image_contents.ImageBuildError as exc:
        if IN_CI:
            raise
        pytest.skip(f"the image could not be built here: {exc}")


@pytest.fixture(scope="module")
def local() -> Image:
    archive = _built(image.build, image.cached_image(), image.build_unavailable_reason())
    return read_image(archive)


@pytest.fixture(scope="module")
def dockerfile_archive() -> Path:
    return _built(dockerfile.build, dockerfile.cached_image(), dockerfile.unavailable_reason())


@pytest.fixture(scope="module")
def built(dockerfile_archive: Path) -> Image:
    return read_image(dockerfile_archive, keep_files=True)


def test_the_config_is_the_local_images(built: Image, local: Image) -> None:
    keys = ("User", "Env", "Entrypoint", "Cmd", "WorkingDir")
    assert {k: built.config["config"].get(k) for k in keys} == {k: local.config["config"][k] for k in keys}
    assert (built.config["os"], built.config["architecture"]) == (local.config["os"], local.config["architecture"])
    # The build-time CA argument and mount leave no trace in what ships.
    assert "PIP_CERT" not in json.dumps(built.config)
    assert "jobgate-build" not in json.dumps(built.config)


def packages(found: Image) -> dict[str, str]:
    """Package name to version, from the image's dpkg status."""
    listed: dict[str, str] = {}
    for stanza in found.texts["var/lib/dpkg/status"].split("\n\n"):
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and not line[0].isspace())
        if "Package" in fields:
            listed[fields["Package"]] = fields.get("Version", "")
    return listed


def test_the_same_debian_packages(built: Image, local: Image) -> None:
    ours, theirs = packages(built), packages(local)
    assert sorted(ours) == sorted(theirs)
    moved = {name: (theirs[name], ours[name]) for name in ours if ours[name] != theirs[name]}
    # Debian's point releases between the two builds may move versions, never the set.
    print(f"\n{len(ours)} Debian packages in both; versions that differ (local, Dockerfile): {moved or 'none'}")


def distributions(found: Image) -> dict[str, str]:
    """Installed Python distribution name to version, from the venv's dist-info directories."""
    return {m["name"]: m["version"] for name in found.members if (m := DIST_INFO.match(name)) and not m["rest"]}


def comparable(found: Image, moved: set[str]) -> dict[str, tarfile.TarInfo]:
    """Members with versioned dist-info names made version-free, and without the files of the
    distributions whose version differs between the builds (PyPI released one in between): those
    their RECORD lists, their bytecode and their directories."""
    skipped: set[str] = set()
    for name, text in found.texts.items():
        match = DIST_INFO.match(name)
        if match and match["name"] in moved:
            for line in text.splitlines():
                path = os.path.normpath(f"{SITE_PACKAGES}/{line.rsplit(',', 2)[0]}")
                skipped.update([path, *(str(parent) for parent in Path(path).parents)])
    kept: dict[str, tarfile.TarInfo] = {}
    for path, member in found.members.items():
        name, match = path, DIST_INFO.match(path)
        if match:
            if match["name"] in moved:
                continue
            name = f"{SITE_PACKAGES}/{match['name']}.dist-info{match['rest'] or ''}"
        elif path in skipped and path.startswith(f"{SITE_PACKAGES}/"):
            continue
        kept[name] = member
    return kept


def test_the_same_files_owners_modes_and_links(built: Image, local: Image) -> None:
    ours, theirs = distributions(built), distributions(local)
    assert sorted(ours) == sorted(theirs)
    assert "jobgate" in ours
    moved = {name for name in ours if ours[name] != theirs[name]}
    print(f"\ndistributions at different versions (not compared file by file): {moved or 'none'}")
    mine, reference = comparable(built, moved), comparable(local, moved)
    missing, extra = sorted(set(reference) - set(mine)), sorted(set(mine) - set(reference))
    assert (missing, extra) == ([], []), (
        f"only in the local image: {missing[:20]}; only in the Dockerfile's: {extra[:20]}"
    )

    def facts(member: tarfile.TarInfo) -> tuple[object, ...]:
        kind = "dir" if member.isdir() else "link" if member.issym() else "file" if member.isreg() else member.type
        return kind, oct(member.mode & 0o7777), member.uid, member.gid, member.linkname if member.issym() else ""

    different = {name: (facts(reference[name]), facts(mine[name])) for name in mine
                 if facts(mine[name]) != facts(reference[name])}  # fmt: skip
    assert different == {}
    print(f"{len(mine)} paths of {len(built.members)} compared: the same kind, mode, owner and link target")


def pem_bodies(data: bytes) -> set[bytes]:
    """The DER bytes of every certificate in a PEM bundle."""
    text = data.decode("ascii", "replace")
    blocks = re.findall(r"-----BEGIN CERTIFICATE-----(.+?)-----END CERTIFICATE-----", text, re.S)
    return {base64.b64decode("".join(block.split())) for block in blocks}


def test_none_of_the_build_machines_own_cas_is_in_the_image(built: Image, local: Image) -> None:
    """The host's bundle was mounted into the build for pip: the certificates only it has (a
    TLS-intercepting proxy's) must be nowhere in the image, whose bundle is Debian's."""
    bundle = "etc/ssl/certs/ca-certificates.crt"
    debian = pem_bodies(local.files[bundle])
    assert debian and pem_bodies(built.files[bundle]) == debian
    host = dockerfile.host_ca_bundle()
    assert host is not None
    machine_only = pem_bodies(host.read_bytes()) - debian
    print(f"\n{len(machine_only)} certificate(s) of {host} not in Debian's bundle")
    for body in machine_only:
        encoded = base64.b64encode(body)[:64]
        holding = [name for name, data in built.files.items() if body in data or encoded in data]
        assert holding == [], f"a certificate of this machine's {host} is in the image: {holding}"


@pytest.fixture(scope="module")
def unpacked(dockerfile_archive: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if os.geteuid() != 0 and not IN_CI:
        pytest.skip("running the image in a chroot needs root")
    root = tmp_path_factory.mktemp("dockerfile-root")
    root.chmod(0o755)
    with tarfile.open(dockerfile_archive) as outer:
        [entry] = json.loads(blob_index(outer))["manifests"]
        manifest = json.loads(outer.extractfile("blobs/sha256/" + entry["digest"][7:]).read())  # type: ignore[union-attr]
        for layer in manifest["layers"]:
            handle = outer.extractfile("blobs/sha256/" + layer["digest"][7:])
            with tarfile.open(fileobj=handle, mode="r|*") as tar:
                tar.extractall(root, filter="fully_trusted")
    return root


def test_it_runs_in_a_chroot_as_65532_without_a_shell(unpacked: Path) -> None:
    assert not (unpacked / "bin/sh").exists() and not (unpacked / "usr/bin/sh").exists()
    before = sorted(str(p) for p in unpacked.rglob("*"))
    # The image's own command: its entrypoint with its CMD (jobgate has no --version; the wheel's metadata has it).
    usage = in_chroot(unpacked, *image_contents.ENTRYPOINT, *image_contents.CMD)
    assert usage.returncode == 0 and "usage: jobgate" in usage.stdout, usage.stdout + usage.stderr
    version = in_chroot(unpacked, "python", "-c", "import importlib.metadata as m; print(m.version('jobgate'))")
    assert version.stdout.strip() == image.VERSION, version.stdout + version.stderr
    imported = in_chroot(unpacked, f"{image_contents.VENV}/bin/python", "-c", IMPORT_EVERYTHING)
    assert imported.returncode == 0, imported.stderr
    assert "compiled (mypyc) 65532 65532" in imported.stdout, imported.stdout
    examples = unpacked / "tmp" / "examples"
    shutil.copytree(REPO / "examples", examples)
    try:
        valid = in_chroot(unpacked, *image_contents.ENTRYPOINT, "validate", "--jobs=1", "/tmp/examples/valid")
        assert valid.returncode == 0, valid.stdout + valid.stderr
        assert " 0 denied" in valid.stdout, valid.stdout
        invalid = in_chroot(unpacked, *image_contents.ENTRYPOINT, "validate", "--jobs=1", "/tmp/examples/invalid")
        assert invalid.returncode == 1, invalid.stdout + invalid.stderr
        assert " denied" in invalid.stdout and "error: " in invalid.stdout, invalid.stdout
    finally:
        shutil.rmtree(examples)
    assert sorted(str(p) for p in unpacked.rglob("*")) == before


def test_a_warm_build_is_the_cached_archive(dockerfile_archive: Path) -> None:
    """The second build of unchanged sources costs a hash of its inputs, not a build."""
    info = dockerfile.build_info(dockerfile_archive)
    print(f"\nDockerfile build: {info['build_seconds']} s cold ({info['step_seconds']})")
    assert dockerfile.build() == dockerfile_archive
