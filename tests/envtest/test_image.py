"""jobgate's image (envtest/image.py builds it, ``python -m envtest build-image``; its facts and
files are envtest/image_contents.py's).

- The Dockerfile describes the same image: its user, entrypoint, command, environment, working
  directory, Debian release and packages, venv path and file selection are checked against
  envtest/image_contents.py's facts and the OCI config envtest/image.py writes; the file selection
  it runs is image_contents.py alone, which needs nothing but the standard library; the image's
  cache key covers the builder's own code. Fast: nothing is built.
- The built image (taken from the cache when the sources have not changed): its OCI config,
  every file of its layer (owners, modes, programs, bytecode), its size; run in a chroot as
  65532 with no shell in it.
- On the real node (marker ``node``): pods from the image under PodSecurity ``restricted``, as
  the image's own user with a read-only root filesystem: ``jobgate validate`` on examples from a
  ConfigMap exits 0 and 1 as it should, and the webhook's Deployment template becomes Ready.

Locally these skip with the reason when the image or the node cannot be built or started here
(not root, not Debian 12, no network); with CI=true that is a failure, never a skip.
"""

from __future__ import annotations

import ast
import contextlib
import gzip
import hashlib
import http.client
import io
import json
import os
import shlex
import shutil
import ssl
import struct
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from envtest import image, image_contents
from envtest.dockerfile import instructions

if TYPE_CHECKING:
    from envtest.node import Node

REPO = Path(__file__).resolve().parents[2]
# The file selection, as the Dockerfile copies and runs it (relative to the repository).
CONTENTS = str(Path(image_contents.__file__).resolve().relative_to(REPO))
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
SITE_PACKAGES = f"{image_contents.VENV.strip('/')}/lib/{image_contents.PYTHON}/site-packages"
PYC_TAG = f"cpython-{image_contents.PYTHON.removeprefix('python').replace('.', '')}"
# Budgets, not measurements (docs/performance.md: the measured sizes): a dependency that balloons fails here.
MAX_ARCHIVE_BYTES = 60_000_000
MAX_UNPACKED_BYTES = 240_000_000


# --- the Dockerfile states the same image (no build needed) ---


def dockerfile_stages() -> list[list[tuple[str, str]]]:
    """Each stage's instructions as (INSTRUCTION, arguments), read as the Dockerfile's build reads them."""
    stages: list[list[tuple[str, str]]] = []
    for instruction, arguments in instructions(REPO / "Dockerfile"):
        if instruction == "FROM":
            stages.append([])
        stages[-1].append((instruction, arguments))
    return stages


def last(stage: list[tuple[str, str]], instruction: str) -> str:
    found = [arguments for name, arguments in stage if name == instruction]
    assert found, f"no {instruction} in the stage"
    return found[-1]


def test_the_dockerfile_runs_the_image_as_the_local_build_configures_it() -> None:
    final = dockerfile_stages()[-1]
    config = image.image_config("sha256:" + "0" * 64)["config"]
    env: dict[str, str] = {}
    for _, arguments in (i for i in final if i[0] == "ENV"):
        for pair in shlex.split(arguments):
            name, equals, value = pair.partition("=")
            assert equals, f"ENV {arguments}: use the NAME=value form"
            env[name] = value
    assert env == image_contents.ENV
    assert [f"{k}={v}" for k, v in env.items()] == config["Env"]
    assert last(final, "USER") == image_contents.USER == config["User"]
    assert json.loads(last(final, "ENTRYPOINT")) == list(image_contents.ENTRYPOINT) == config["Entrypoint"]
    assert json.loads(last(final, "CMD")) == list(image_contents.CMD) == config["Cmd"]
    assert last(final, "WORKDIR") == image_contents.WORKDIR == config["WorkingDir"]
    # runAsNonRoot can only check a numeric user; the entrypoint is the venv's script, on PATH.
    assert all(part.isdigit() for part in image_contents.USER.split(":"))
    assert image_contents.ENV["PATH"].split(":")[0] == f"{image_contents.VENV}/bin"


def test_the_dockerfile_builds_the_same_files() -> None:
    *builds, final = dockerfile_stages()
    assert last(final, "FROM") == "scratch"
    assert [i for i in final if i[0] in ("COPY", "ADD", "RUN")] == [("COPY", "--from=build /rootfs /")]
    build = next(stage for stage in builds if last(stage, "FROM").endswith(" AS build"))
    assert last(build, "FROM") == f"debian:{image_contents.SUITE} AS build"
    runs = [arguments for name, arguments in build if name == "RUN"]
    install = next(shlex.split(r) for r in runs if "apt-get install" in r)
    assert set(image_contents.DEBIAN_PACKAGES) <= set(install)
    copied = {word for name, arguments in build if name == "COPY" for word in arguments.split()[:-1]}
    assert set(image.PACKAGE_SOURCES) <= copied
    # of the harness, the file selection alone: it runs with the build stage's bare python3.11
    assert {word for word in copied if word.startswith("envtest")} == {CONTENTS}
    # the same compiled wheel, venv (made by the image's interpreter, without pip) and selection
    assert any("JOBGATE_COMPILE=1" in r and "pip wheel --no-deps" in r for r in runs)
    assert any(f"{image_contents.PYTHON} -m venv --without-pip {image_contents.VENV} " in r for r in runs)
    assert any(f"{image_contents.VENV}/bin/python " in r and " install " in r and "--no-index" in r for r in runs)
    assert runs[-1] == f"{image_contents.PYTHON} {CONTENTS} assemble / /rootfs"


def imported_modules(path: Path) -> set[str]:
    """The modules ``path`` imports when it runs (not those imported for type checking only)."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            node.body = []
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_the_file_selection_runs_alone_with_the_standard_library(tmp_path: Path) -> None:
    """What the Dockerfile's build stage needs: image_contents.py with no other file of the repository."""
    source = REPO / CONTENTS
    outside = {name for name in imported_modules(source) if name.split(".")[0] not in sys.stdlib_module_names}
    assert outside == set()
    alone = tmp_path / CONTENTS
    alone.parent.mkdir()
    shutil.copy(source, alone)
    empty_root = tmp_path / "root"
    (empty_root / "var/lib/dpkg").mkdir(parents=True)
    (empty_root / "var/lib/dpkg/status").write_text("")
    ran = subprocess.run(
        [sys.executable, "-I", CONTENTS, "assemble", str(empty_root), str(tmp_path / "rootfs")],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    # It ran as far as reading the (empty) package database: the interpreter and the venv are missing.
    assert ran.returncode == 1, ran.stderr
    assert f"ImageBuildError: packages missing from {empty_root}: {image_contents.PYTHON}-minimal" in ran.stderr


def test_the_cache_key_covers_the_builders_own_code() -> None:
    """A change to the builder or to what it imports of the harness (the image's facts, its file
    selection) makes a new image, not the cached one."""
    harness = {name for name in imported_modules(REPO / "envtest/image.py") if name.startswith("envtest.")}
    imported_files = {REPO / (name.replace(".", "/") + ".py") for name in harness}
    hashed = set(image.BUILDER_FILES)
    assert {REPO / "envtest/image.py", REPO / CONTENTS} <= hashed
    assert {path for path in imported_files if path.is_file()} <= hashed


def test_elf_needs_reads_a_binary_of_this_machine(tmp_path: Path) -> None:
    ls = shutil.which("ls")
    assert ls is not None
    found = image_contents.elf_needs(Path(ls))
    assert found is not None and "libc.so.6" in found[0]
    (tmp_path / "script").write_text("#!/bin/sh\n")
    assert image_contents.elf_needs(tmp_path / "script") is None


def test_what_assemble_leaves_out() -> None:
    excluded, python = image_contents._excluded, image_contents.PYTHON
    assert not excluded(f"usr/bin/{python}")
    assert excluded("usr/bin/openssl") and excluded("usr/sbin/ldconfig") and excluded("bin/sh")
    assert not excluded("usr/share/doc/libc6/copyright") and not excluded("usr/share/doc/libc6")
    assert excluded("usr/share/doc/libc6/changelog.Debian.gz") and excluded("usr/share/man/man1/python3.11.1.gz")
    assert not excluded("usr/lib/x86_64-linux-gnu/libc.so.6") and not excluded(f"usr/lib/{python}/base64.py")


# --- the built image ---


@pytest.fixture(scope="module")
def archive() -> Path:
    cached = image.cached_image()
    if cached is not None:
        return cached
    reason = image.build_unavailable_reason()
    if reason and not IN_CI:
        pytest.skip(f"the image cannot be built here: {reason}")
    try:
        return image.build()
    except image.ImageBuildError as exc:
        if IN_CI:
            raise
        pytest.skip(f"the image could not be built here: {exc}")


@dataclass
class Layer:
    config: dict
    name: str
    diff_id: str
    members: dict[str, tarfile.TarInfo] = field(default_factory=dict)
    pyc_headers: dict[str, bytes] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    unpacked_bytes: int = 0


@pytest.fixture(scope="module")
def layer(archive: Path) -> Layer:
    """The archive read once: the config, and every member of the (only) layer."""
    with tarfile.open(archive) as outer:

        def blob(digest: str) -> tarfile.ExFileObject:
            handle = outer.extractfile("blobs/sha256/" + digest.removeprefix("sha256:"))
            assert handle is not None
            return handle

        [entry] = json.loads(outer.extractfile("index.json").read())["manifests"]  # type: ignore[union-attr]
        manifest = json.loads(blob(entry["digest"]).read())
        [layer_entry] = manifest["layers"]
        assert layer_entry["mediaType"] == "application/vnd.oci.image.layer.v1.tar+gzip"
        compressed = blob(layer_entry["digest"]).read()
        assert "sha256:" + hashlib.sha256(compressed).hexdigest() == layer_entry["digest"]
        plain = gzip.decompress(compressed)
        found = Layer(
            config=json.loads(blob(manifest["config"]["digest"]).read()),
            name=entry["annotations"]["io.containerd.image.name"],
            diff_id="sha256:" + hashlib.sha256(plain).hexdigest(),
            unpacked_bytes=len(plain),
        )
    with tarfile.open(fileobj=io.BytesIO(plain)) as tar:
        for member in tar:
            found.members[member.name] = member
            if member.isreg() and member.name.endswith(".pyc"):
                found.pyc_headers[member.name] = tar.extractfile(member).read(16)  # type: ignore[union-attr]
            elif member.name in ("etc/passwd", "etc/group", "var/lib/dpkg/status"):
                found.texts[member.name] = tar.extractfile(member).read().decode()  # type: ignore[union-attr]
    return found


def test_the_config_is_what_the_deployments_run(layer: Layer) -> None:
    assert layer.name == image.IMAGE == f"jobgate.local/jobgate:{image.VERSION}"
    config = layer.config["config"]
    assert config["User"] == "65532:65532"
    assert config["Entrypoint"] == ["jobgate"]
    assert config["Env"] == [f"{k}={v}" for k, v in image_contents.ENV.items()]
    assert "PYTHONDONTWRITEBYTECODE=1" in config["Env"]
    assert layer.config["rootfs"]["diff_ids"] == [layer.diff_id]
    assert layer.config["os"] == "linux"


def test_no_shell_no_setuid_and_no_program_but_the_interpreter(layer: Layer) -> None:
    members = layer.members
    assert [m.name for m in members.values() if m.mode & 0o6000] == []
    for shell in ("sh", "bash", "dash", "busybox", "rbash"):
        assert f"usr/bin/{shell}" not in members and f"bin/{shell}" not in members
    programs = [
        m.name
        for m in members.values()
        if m.isreg() and m.mode & 0o111 and m.name.rsplit("/", 1)[0] in image_contents.PROGRAM_DIRS
    ]
    assert programs == [f"usr/bin/{image_contents.PYTHON}"]
    assert not [n for n in members if n.startswith(("usr/share/man/", "var/lib/apt/", "var/cache/apt/"))]
    assert not [n for n in members if n.startswith("usr/share/doc/") and n.count("/") == 4 and "copyright" not in n]
    # root owns everything but the user's home
    home = image_contents.HOME.strip("/")
    assert {(m.uid, m.gid) for n, m in members.items() if n != home} == {(0, 0)}
    assert (members[home].uid, members[home].gid) == (65532, 65532)
    assert "nonroot:x:65532:65532:" in layer.texts["etc/passwd"]
    assert "nonroot:x:65532:" in layer.texts["etc/group"]
    assert members["tmp"].mode & 0o7777 == 0o1777


def test_the_dpkg_status_lists_the_packages_inside(archive: Path, layer: Layer) -> None:
    listed = [line.split(": ", 1)[1] for line in layer.texts["var/lib/dpkg/status"].splitlines()
              if line.startswith("Package: ")]  # fmt: skip
    assert sorted(listed) == sorted(image.build_info(archive)["debian_packages"])
    assert set(image_contents.RUNTIME_PACKAGES) <= set(listed)
    assert not {"bash", "dash", "dpkg", "apt", "perl-base", "coreutils", "util-linux", "login"} & set(listed)


def test_every_module_has_valid_bytecode(layer: Layer) -> None:
    """A read-only root filesystem: what Python cannot find compiled it compiles at every start."""
    missing, stale = [], []
    for name, member in layer.members.items():
        if not name.endswith(".py") or not name.startswith((f"usr/lib/{image_contents.PYTHON}/", SITE_PACKAGES + "/")):
            continue
        directory, module = name.rsplit("/", 1)
        header = layer.pyc_headers.get(f"{directory}/__pycache__/{module[:-3]}.{PYC_TAG}.pyc")
        if header is None:
            missing.append(name)
            continue
        source = member
        if member.issym():  # Debian's sitecustomize.py -> /etc/python3.11/...: Python stats the target
            target = member.linkname if member.linkname.startswith("/") else f"{directory}/{member.linkname}"
            source = layer.members[os.path.normpath(target).lstrip("/")]
        flags, mtime, size = struct.unpack("<III", header[4:16])
        if flags != 0 or mtime != source.mtime & 0xFFFFFFFF or size != source.size & 0xFFFFFFFF:
            stale.append(name)
    assert stale == []
    # Debian's py3compile skips lib2to3's test data (Python 2 files) and nothing else.
    assert [n for n in missing if "/lib2to3/tests/" not in n] == []


def test_the_rule_engine_is_compiled(layer: Layer) -> None:
    from build_support.native import COMPILED_MODULES, SHARED_LIBRARY_GROUP

    extensions = {n.split(".cpython-")[0] for n in layer.members if n.endswith(".so") and ".cpython-" in n}
    for module in (*COMPILED_MODULES, SHARED_LIBRARY_GROUP + "__mypyc"):
        assert f"{SITE_PACKAGES}/{module.replace('.', '/')}" in extensions, module
    assert not [n for n in layer.members if n.startswith(f"{SITE_PACKAGES}/pip/")]
    assert not [n for n in layer.members for p in image_contents.PRUNED if n.startswith(f"{SITE_PACKAGES}/{p}/")]


def test_size(archive: Path, layer: Layer) -> None:
    info = image.build_info(archive)
    print(
        f"\n{image.IMAGE}: archive {archive.stat().st_size / 1e6:.1f} MB, layer {layer.unpacked_bytes / 1e6:.1f} MB "
        f"unpacked, {len(layer.members)} entries, {len(info['debian_packages'])} Debian packages, "
        f"built in {info['build_seconds']} s"
    )
    assert archive.stat().st_size < MAX_ARCHIVE_BYTES
    assert layer.unpacked_bytes < MAX_UNPACKED_BYTES


# --- the image run as 65532 in a chroot (root; no node needed) ---


@pytest.fixture(scope="module")
def unpacked(archive: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if os.geteuid() != 0 and not IN_CI:
        pytest.skip("running the image in a chroot needs root")
    root = tmp_path_factory.mktemp("image-root")
    root.chmod(0o755)  # the chroot's / (the layer has no entry for it; mktemp made it 0700)
    with tarfile.open(archive) as outer:
        [entry] = json.loads(outer.extractfile("index.json").read())["manifests"]  # type: ignore[union-attr]
        manifest = json.loads(outer.extractfile("blobs/sha256/" + entry["digest"][7:]).read())  # type: ignore[union-attr]
        layer_blob = outer.extractfile("blobs/sha256/" + manifest["layers"][0]["digest"][7:])
        with tarfile.open(fileobj=layer_blob, mode="r|gz") as tar:
            tar.extractall(root, filter="fully_trusted")
    return root


def in_chroot(root: Path, *command: str) -> subprocess.CompletedProcess[str]:
    env = dict(image_contents.ENV)
    uid, gid = (int(n) for n in image_contents.USER.split(":"))

    def enter() -> None:
        os.chroot(root)
        os.chdir(image_contents.WORKDIR)
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)

    return subprocess.run(
        list(command), env=env, preexec_fn=enter, capture_output=True, text=True, timeout=120, check=False
    )


IMPORT_EVERYTHING = """
import importlib, os, pkgutil, sys, jobgate
names = [m.name for m in pkgutil.walk_packages(jobgate.__path__, "jobgate.") if not m.name.endswith("__main__")]
for name in names:
    importlib.import_module(name)
from jobgate.review import engine_build
print(len(names), "modules;", engine_build(), os.getuid(), os.getgid())
"""


def test_in_a_chroot_as_65532_without_a_shell(unpacked: Path) -> None:
    assert not (unpacked / "usr/bin/sh").exists()
    before = sorted(str(p) for p in unpacked.rglob("*"))
    examples = unpacked / "tmp" / "examples"
    shutil.copytree(REPO / "examples", examples)
    try:
        imported = in_chroot(unpacked, f"{image_contents.VENV}/bin/python", "-c", IMPORT_EVERYTHING)
        assert imported.returncode == 0, imported.stderr
        assert "compiled (mypyc) 65532 65532" in imported.stdout, imported.stdout
        # One process: files checked in parallel need /dev/shm (a pod has it, this chroot not).
        valid = in_chroot(unpacked, *image_contents.ENTRYPOINT, "validate", "--jobs=1", "/tmp/examples/valid")
        assert valid.returncode == 0, valid.stdout + valid.stderr
        invalid = in_chroot(unpacked, *image_contents.ENTRYPOINT, "validate", "--jobs=1", "/tmp/examples/invalid")
        assert invalid.returncode == 1, invalid.stdout + invalid.stderr
        assert " denied" in invalid.stdout
    finally:
        shutil.rmtree(examples)
    # nothing written: no bytecode, no cache
    assert sorted(str(p) for p in unpacked.rglob("*")) == before


# --- on the real node ---

NS = "image-e2e"
VALID_EXAMPLE = "examples/valid/dijob-gobigger.yaml"
INVALID_EXAMPLE = "examples/invalid/tfjob-bad-values.yaml"


def imported(node: Node, archive: Path) -> None:
    started = time.monotonic()
    image.import_image(node, archive)
    print(f"\n{image.IMAGE} imported into containerd in {time.monotonic() - started:.1f} s")


@pytest.fixture(scope="module")
def node(archive: Path) -> Iterator[Node]:
    """The node the e2e suite started in this session, or one of our own; the image imported."""
    from envtest.node import Node, node_unavailable_reason

    shared = Node.running
    if shared is not None:
        imported(shared, archive)
        yield shared
        kubectl(shared, "delete", "namespace", NS, "--wait=false")
        return
    reason = node_unavailable_reason()
    if reason and not IN_CI:
        pytest.skip(f"no real node on this machine: {reason}")
    own = Node()
    try:
        own.start()
        imported(own, archive)
    except Exception as exc:
        own.stop()
        if IN_CI:
            raise
        pytest.skip(f"the real node could not be started here: {exc}")
    try:
        yield own
    finally:
        own.stop()
        assert not own.teardown_problems, f"host state not restored: {own.teardown_problems}"


def kubectl(node: Node, *args: str, input: str | None = None, check: bool = False) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        node.kubectl_command(*args), input=input, capture_output=True, text=True, timeout=120, check=False
    )
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed:\n{result.stdout}{result.stderr}")
    return result


def apply(node: Node, *documents: dict) -> None:
    kubectl(node, "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": documents}),
            check=True)  # fmt: skip


def get_pod(node: Node, name: str) -> dict:
    return json.loads(kubectl(node, "get", "pod", "-n", NS, name, "-o", "json", check=True).stdout)


@pytest.fixture(scope="module")
def restricted(node: Node) -> str:
    """A namespace enforcing PodSecurity ``restricted``, with the examples in a ConfigMap."""
    apply(
        node,
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": NS, "labels": {"pod-security.kubernetes.io/enforce": "restricted"}},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "examples", "namespace": NS},
            "data": {
                "valid.yaml": (REPO / VALID_EXAMPLE).read_text(),
                "invalid.yaml": (REPO / INVALID_EXAMPLE).read_text(),
            },
        },
    )
    return NS


def restricted_pod(name: str, *, args: list[str] | None = None, command: list[str] | None = None) -> dict:
    """A pod as the restricted profile wants it. No runAsUser: the image's own user must be numeric
    and non-root for the kubelet to start it."""
    container: dict = {
        "name": "jobgate",
        "image": image.IMAGE,
        "imagePullPolicy": "Never",
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [{"name": "examples", "mountPath": "/examples", "readOnly": True}],
    }
    if args is not None:
        container["args"] = args
    if command is not None:
        container["command"] = command
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [container],
            "volumes": [{"name": "examples", "configMap": {"name": "examples"}}],
        },
    }


def run_to_completion(node: Node, pod: dict, timeout: float = 120) -> tuple[dict, float]:
    """Create the pod, wait until it ended; the pod and the seconds from apply to its end."""
    name = pod["metadata"]["name"]
    kubectl(node, "delete", "pod", "-n", NS, name, "--ignore-not-found", "--wait=true")
    started = time.monotonic()
    apply(node, pod)
    deadline = started + timeout
    while time.monotonic() < deadline:
        found = get_pod(node, name)
        if found["status"].get("phase") in ("Succeeded", "Failed"):
            return found, time.monotonic() - started
        time.sleep(0.2)
    described = kubectl(node, "describe", "pod", "-n", NS, name).stdout
    raise AssertionError(f"pod {name} did not finish in {timeout} s:\n{described}")


def terminated(pod: dict) -> dict:
    [status] = pod["status"]["containerStatuses"]
    return status["state"]["terminated"]


def logs(node: Node, name: str) -> str:
    return kubectl(node, "logs", "-n", NS, name, check=True).stdout


@pytest.mark.e2e
@pytest.mark.node
def test_validate_runs_in_a_restricted_read_only_pod(node: Node, restricted: str) -> None:
    valid, seconds = run_to_completion(
        node, restricted_pod("validate-valid", args=["validate", "/examples/valid.yaml"])
    )
    print(f"\njobgate validate in the image's first pod, apply to Succeeded: {seconds:.1f} s")
    assert valid["status"]["phase"] == "Succeeded", json.dumps(valid["status"], indent=1)
    assert terminated(valid)["exitCode"] == 0
    assert "1 admitted, 0 denied" in logs(node, "validate-valid")

    invalid, again = run_to_completion(
        node, restricted_pod("validate-invalid", args=["validate", "/examples/invalid.yaml"])
    )
    print(f"the same with the image's layer already unpacked: {again:.1f} s")
    assert invalid["status"]["phase"] == "Failed"
    assert terminated(invalid)["exitCode"] == 1
    text = logs(node, "validate-invalid")
    assert "denied" in text and "error:" in text, text

    # Two files are checked by worker processes (their semaphores live in the pod's /dev/shm).
    both, _ = run_to_completion(
        node, restricted_pod("validate-both", args=["validate", "/examples/valid.yaml", "/examples/invalid.yaml"])
    )
    assert terminated(both)["exitCode"] == 1
    assert "2 documents: 1 admitted, 1 denied" in logs(node, "validate-both")


INSIDE = """
import os, shutil, sys
from jobgate.review import engine_build
print("ids", os.getuid(), os.getgid(), os.getgroups())
print("engine", engine_build())
print("shell", shutil.which("sh"), os.path.exists("/bin/sh"))
for path in ("/probe", "/tmp/probe", "/opt/jobgate/probe"):
    try:
        open(path, "w").close()
        print("wrote", path)
    except OSError as exc:
        print("refused", path, exc.strerror)
"""


@pytest.mark.e2e
@pytest.mark.node
def test_inside_the_pod_as_65532_with_nothing_writable(node: Node, restricted: str) -> None:
    pod, _ = run_to_completion(node, restricted_pod("inside", command=["python", "-c", INSIDE]))
    text = logs(node, "inside")
    assert pod["status"]["phase"] == "Succeeded", text
    assert "ids 65532 65532 [" in text, text
    assert "engine compiled (mypyc)" in text, text
    assert "shell None False" in text, text
    for path in ("/probe", "/tmp/probe", "/opt/jobgate/probe"):
        assert f"refused {path} Read-only file system" in text, text


def seconds_between(earlier: str, later: str) -> float:
    return (datetime.fromisoformat(later) - datetime.fromisoformat(earlier)).total_seconds()


@pytest.mark.e2e
@pytest.mark.node
def test_the_webhook_pod_of_the_deployment_becomes_ready(
    node: Node, restricted: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """manifests/base's webhook pod template, only the image changed: pod start to Ready."""
    from ruamel.yaml import YAML

    from jobgate.certs.authority import init_directory

    [deployment] = [d for d in YAML(typ="safe").load_all((REPO / "manifests/base/deployment.yaml").read_text())
                    if d and d.get("kind") == "Deployment"]  # fmt: skip
    spec = deployment["spec"]["template"]["spec"]
    [container] = spec["containers"]
    container.update(image=image.IMAGE, imagePullPolicy="Never")
    tls = tmp_path_factory.mktemp("image-webhook-tls")
    init_directory(tls, [f"jobgate-webhook.{NS}.svc"], [])
    apply(
        node,
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": spec["serviceAccountName"], "namespace": NS},
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/tls",
            "metadata": {"name": "jobgate-webhook-tls", "namespace": NS},
            "stringData": {name: (tls / name).read_text() for name in ("tls.crt", "tls.key", "ca.crt")},
        },
    )
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "webhook", "namespace": NS}, "spec": spec}
    applied = time.monotonic()
    apply(node, pod)
    deadline = applied + 120
    found: dict = {}
    serving_after = None
    while time.monotonic() < deadline:
        found = get_pod(node, "webhook")
        conditions = {c["type"]: c for c in found["status"].get("conditions", [])}
        if conditions.get("Ready", {}).get("status") == "True":
            break
        # when the process serves, as against when the readiness probe (every 5 s) sees it
        running = "running" in (found["status"].get("containerStatuses") or [{}])[0].get("state", {})
        if serving_after is None and running and "serving /mutate" in kubectl(node, "logs", "-n", NS, "webhook").stdout:
            serving_after = time.monotonic() - applied
        assert found["status"].get("phase") not in ("Succeeded", "Failed"), json.dumps(found["status"], indent=1)
        time.sleep(0.1)
    else:
        described = kubectl(node, "describe", "pod", "-n", NS, "webhook").stdout
        raise AssertionError(f"the webhook pod is not Ready after 120 s:\n{described}")
    ready_after = time.monotonic() - applied
    [status] = found["status"]["containerStatuses"]
    created = found["metadata"]["creationTimestamp"]
    print(
        f"\nwebhook pod: apply to serving {serving_after or ready_after:.1f} s, to Ready {ready_after:.1f} s; "
        "created to container started "
        f"{seconds_between(created, status['state']['running']['startedAt']):.0f} s, to Ready "
        f"{seconds_between(created, conditions['Ready']['lastTransitionTime']):.0f} s (timestamps in whole seconds)"
    )
    text = logs(node, "webhook")
    assert "rule engine: compiled (mypyc)" in text, text
    # It serves TLS with the certificate from the Secret, on the pod's address.
    context = ssl.create_default_context(cafile=str(tls / "ca.crt"))
    context.check_hostname = False  # the certificate names the Service, the pod is reached by IP
    connection = http.client.HTTPSConnection(found["status"]["podIP"], 9443, context=context, timeout=10)
    try:
        connection.request("GET", "/readyz")
        answer = connection.getresponse()
        assert (answer.status, answer.read()) == (200, b"ok\n")
    finally:
        connection.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        kubectl(node, "delete", "pod", "-n", NS, "webhook", "--wait=false")
