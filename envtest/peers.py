"""Build the Go controllers jobgate is compared with (the peers) from their Go modules; cache them.

KubeDL's controller (``github.com/alibaba/kubedl``) and Kubeflow's training-operator
(``github.com/kubeflow/training-operator``), at the versions pinned here, for
``python -m bench.controller_bench --peers``. As for the control plane (``envtest.build``), no
prebuilt binary can be downloaded here but the Go module proxy is reachable, so each is compiled
in a throwaway wrapper module that requires the peer at its version and copies the peer's own
``replace`` block: ``go install pkg@version`` refuses a module whose go.mod has ``replace``
directives (kubedl's maps every k8s.io staging module to v0.22.6), and for kubedl the proxy also
answers 403 to the version list that ``go install`` reads first. ``go mod tidy`` then resolves the
wrapper against the peer's go.mod, so the build links what the peer's own build would.

Binaries land in ``$JOBGATE_PEERS_CACHE`` or ``~/.cache/jobgate/peers/<name>-<version>/``
beside a ``build-info.json`` stamp (an interrupted build leaves no stamp, so it is redone). The
peers' CRDs are read from their module source in the Go module cache (``Peer.crds()``), which
the build fills. ``python -m envtest.peers`` builds (or reports) both; nothing in CI builds them.
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
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

# Pinned here rather than in envtest/versions.py: only the benchmark uses them.
KUBEDL_VERSION = "v0.5.0"
TRAINING_OPERATOR_VERSION = "v1.9.2"

_STAMP = "build-info.json"

Log = Callable[[str], object]


@dataclass(frozen=True)
class Peer:
    name: str
    module: str
    version: str
    package: str  # the main package, inside the module
    crd_dir: str  # the module's directory of CRD manifests, as its own deployment applies them
    # (binary name, main package) of each command built, for a peer run as several programs
    # (Volcano); empty: one binary named after the peer, of ``package``.
    commands: tuple[tuple[str, str], ...] = ()

    def binaries(self) -> dict[str, str]:
        """Binary name → main package, of every command the build makes."""
        return dict(self.commands) or {self.name: self.package}

    @property
    def directory(self) -> Path:
        root = os.environ.get("JOBGATE_PEERS_CACHE")
        base = Path(root) if root else Path.home() / ".cache" / "jobgate" / "peers"
        return base / f"{self.name}-{self.version}"

    @property
    def binary(self) -> Path:
        return self.directory / next(iter(self.binaries()))

    def cached(self) -> Path | None:
        """The (first) binary of a finished build of every command, or None: a stamp naming other
        commands than the peer's (a command added since) is a build to redo."""
        stamp = self.directory / _STAMP
        if not stamp.is_file():
            return None
        try:
            built = json.loads(stamp.read_text()).get("binaries", {self.name: self.package})
        except (OSError, ValueError, AttributeError):
            return None
        if built != self.binaries():
            return None
        if all(os.access(self.directory / name, os.X_OK) for name in built):
            return self.binary
        return None

    def source(self) -> Path:
        """The module's source in the Go module cache (downloaded if missing)."""
        with tempfile.TemporaryDirectory(prefix="jobgate-peer-src-") as tmp:
            (Path(tmp) / "go.mod").write_text("module jobgate.invalid/peersource\n")
            info = json.loads(_go(["mod", "download", "-json", f"{self.module}@{self.version}"], Path(tmp)))
        return Path(info["Dir"])

    def crds(self) -> list[Path]:
        """Every CRD manifest of the module's CRD directory (not its kustomization.yaml)."""
        found = sorted((self.source() / self.crd_dir).glob("*.yaml"))
        return [path for path in found if path.name != "kustomization.yaml"]


KUBEDL = Peer("kubedl", "github.com/alibaba/kubedl", KUBEDL_VERSION, "github.com/alibaba/kubedl", "config/crd/bases")
TRAINING_OPERATOR = Peer(
    "training-operator",
    "github.com/kubeflow/training-operator",
    TRAINING_OPERATOR_VERSION,
    "github.com/kubeflow/training-operator/cmd/training-operator.v1",
    "manifests/base/crds",
)
PEERS = {peer.name: peer for peer in (KUBEDL, TRAINING_OPERATOR)}


def _go(args: list[str], cwd: Path) -> str:
    # The go command's defaults otherwise (no -trimpath, cgo as the machine has it), so that the
    # build cache of any earlier build of the same module is reused: a cold build takes ~8 minutes.
    environment = dict(os.environ)
    environment.setdefault("GOTOOLCHAIN", "auto")
    process = subprocess.run(["go", *args], cwd=cwd, env=environment, capture_output=True, text=True, check=False)
    if process.returncode != 0:
        raise RuntimeError(f"go {' '.join(args)} failed in {cwd}:\n{process.stderr[-4000:]}")
    return process.stdout


def replace_block(gomod: str) -> list[str]:
    """The ``replace`` directives of a go.mod, one ``old => new`` per item (block or single-line
    form); local-path replacements (``=> ./x``) are dropped: they only exist in the peer's repository."""
    directives: list[str] = []
    inside = False
    for raw in gomod.splitlines():
        line = raw.split("//", 1)[0].strip()
        if inside:
            if line == ")":
                inside = False
            elif line:
                directives.append(line)
        elif re.fullmatch(r"replace\s*\(", line):
            inside = True
        elif line.startswith("replace "):
            directives.append(line.removeprefix("replace ").strip())
    return [d for d in directives if not re.search(r"=>\s*\.{1,2}/", d)]


# The wrapper's own language version: at least the one kubedl was first built with here. Below 1.17
# `go mod tidy` keeps the unpruned module graph (kubedl's go.mod says 1.16).
MINIMUM_GO = "1.22"


def go_directive(gomod: str) -> str:
    """The peer's ``go`` directive, or ``MINIMUM_GO`` when that is older (or missing)."""
    found = re.search(r"^go (\S+)", gomod, re.M)
    if not found:
        return MINIMUM_GO
    version = found.group(1)

    def key(v: str) -> tuple[int, ...]:
        return tuple(int(part) for part in re.findall(r"\d+", v)[:3])

    return version if key(version) > key(MINIMUM_GO) else MINIMUM_GO


def wrapper_gomod(peer: Peer, gomod: str) -> str:
    """The wrapper module's go.mod: the peer at its version, and the peer's own replacements."""
    lines = [f"module jobgate.invalid/{peer.name}build", "", f"go {go_directive(gomod)}", ""]
    lines.append(f"require {peer.module} {peer.version}")
    replaces = replace_block(gomod)
    if replaces:
        lines += ["", "replace (", *(f"\t{r}" for r in replaces), ")"]
    return "\n".join(lines) + "\n"


def install(
    peer: Peer, scratch: Path, binaries: dict[str, str], go_version: str, started: float, **more: object
) -> None:
    """The built ``scratch`` directory becomes the peer's cache directory, with the stamp that names the
    build (``more``: what else the builder records, e.g. the source it built from)."""
    stamp = {
        "peer": peer.name,
        "module": peer.module,
        "version": peer.version,
        "package": peer.package,
        "binaries": binaries,
        **more,
        "go": go_version,
        "build_seconds": round(time.monotonic() - started, 1),
    }
    (scratch / _STAMP).write_text(json.dumps(stamp, indent=2) + "\n")
    if peer.directory.exists():
        shutil.rmtree(peer.directory)
    scratch.rename(peer.directory)


def build(peer: Peer, log: Log = print) -> Path:
    existing = peer.cached()
    if existing is not None:
        return existing
    if shutil.which("go") is None:
        raise RuntimeError(f"go is not installed; cannot build {peer.name} {peer.version}")
    target = peer.directory
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        with tempfile.TemporaryDirectory(prefix=f"jobgate-peer-{peer.name}-") as tmp:
            work = Path(tmp)
            (work / "go.mod").write_text("module jobgate.invalid/peerprobe\n")
            info = json.loads(_go(["mod", "download", "-json", f"{peer.module}@{peer.version}"], work))
            gomod = Path(info["GoMod"]).read_text()
            (work / "go.mod").write_text(wrapper_gomod(peer, gomod))
            binaries = peer.binaries()
            # A file importing the packages, so that `go mod tidy` keeps the peer and its graph.
            imports = "".join(f'\t_ "{package}"\n' for package in binaries.values())
            (work / "tools.go").write_text(f"//go:build tools\n\npackage tools\n\nimport (\n{imports})\n")
            log(f"building {peer.name} {peer.version} (go build {' '.join(binaries.values())}) into {target} ...")
            started = time.monotonic()
            _go(["mod", "tidy"], work)
            for name, package in binaries.items():
                _go(["build", "-ldflags=-s -w", "-o", str(scratch / name), package], work)
            go_version = _go(["env", "GOVERSION"], work).strip()
        install(peer, scratch, binaries, go_version, started)
    finally:
        if scratch.exists():
            shutil.rmtree(scratch)
    built = peer.cached()
    assert built is not None
    return built


# --- how the benchmark runs them (bench/controller_bench.py --peers) --------------------------------

# Each contender's controller authenticates as this user (in system:masters, as the admin), so that
# the audit log tells its requests from the bench's own.
CONTROLLER_USER = "jobgate-bench-controller"
AUDIT_POLICY = f"""apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["{CONTROLLER_USER}"]
- level: None
"""
TRAINING_OPERATOR_NAMESPACE = "kubeflow"


def build_command(peer: Peer) -> int:
    """``python -m envtest.<peer>``: build the peer (or find it in the cache) and say where and how."""
    try:
        binary = build(peer)
    except RuntimeError as exc:
        print(f"building {peer.name} {peer.version} failed: {exc}", file=sys.stderr)
        return 1
    stamp = json.loads((peer.directory / _STAMP).read_text())
    print(f"{peer.name} {peer.version}: {binary} (built with {stamp['go']} in {stamp['build_seconds']} s)")
    return 0


def audit_requests(lines: Iterable[str], user: str = CONTROLLER_USER) -> dict[str, int]:
    """API requests of ``user`` by verb, from the apiserver's JSON audit log: one per audit ID (a
    watch logs ResponseStarted and ResponseComplete), verbs upper-cased as in the controller's
    exit log ("list" and "watch" are GETs on the wire, but kept apart here)."""
    counts: dict[str, int] = {}
    for verb, _ in audit_events(lines, user).values():
        counts[verb] = counts.get(verb, 0) + 1
    return dict(sorted(counts.items()))


def audit_breakdown(lines: Iterable[str], user: str = CONTROLLER_USER) -> dict[str, int]:
    """The same requests by verb and resource ("CREATE pods", "UPDATE tfjobs/status", ...)."""
    counts: dict[str, int] = {}
    for verb, resource in audit_events(lines, user).values():
        key = f"{verb} {resource}"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: -item[1]))


def audit_events(lines: Iterable[str], user: str) -> dict[str, tuple[str, str]]:
    """Verb and resource (with its subresource) of each request of ``user``, by audit ID."""
    seen: dict[str, tuple[str, str]] = {}
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut by the apiserver's exit
        if (event.get("user") or {}).get("username") != user:
            continue
        target = event.get("objectRef") or {}
        resource = target.get("resource", "")
        if target.get("subresource"):
            resource += "/" + target["subresource"]
        seen.setdefault(event.get("auditID", ""), (str(event.get("verb", "")).upper(), resource))
    return seen


def _condition(status: dict, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in status.get("conditions") or [])


# The benchmark's job: one parameter server, four workers.
SHAPE = {"PS": 1, "Worker": 4}


def jobgate_status_right(job: dict, shape: dict[str, int] = SHAPE) -> bool:
    """jobgate: Created, every replica active (a pod that exists counts, scheduled or not), and its
    summary ("PS 0/1, Worker 0/4": none of them running yet)."""
    status = job.get("status") or {}
    counts = status.get("replicaStatuses") or {}
    active = all((counts.get(kind) or {}).get("active", 0) == n for kind, n in shape.items())
    summary = ", ".join(f"{kind} 0/{n}" for kind, n in shape.items())
    return _condition(status, "Created") and active and status.get("replicaSummary") == summary


def kubedl_status_right(job: dict, shape: dict[str, int] = SHAPE) -> bool:
    """KubeDL v0.5.0: a replica status for every replica type and a start time, which its TFJob
    controller writes once it has created the pods and services. It counts a replica "active" only
    once its pod runs, so with unscheduled pods (no node here) the entries are rightly empty. It never
    persists a Created condition here: both writers of that condition (the job coordinator, on by
    default, and the create handler) PUT a status without ``replicaStatuses``, which kubedl's own
    CRD requires, and the apiserver rejects it ("status.replicaStatuses: Required value")."""
    status = job.get("status") or {}
    counts = status.get("replicaStatuses") or {}
    return bool(status.get("startTime")) and all(kind in counts for kind in shape)


def training_operator_status_right(job: dict, shape: dict[str, int] = SHAPE) -> bool:
    """training-operator: the Created condition and a replica status for every replica type (it, too,
    counts a replica "active" only once its pod runs)."""
    status = job.get("status") or {}
    counts = status.get("replicaStatuses") or {}
    return _condition(status, "Created") and all(kind in counts for kind in shape)


def training_operator_webhooks(manifest: str) -> list[dict]:
    """training-operator's ValidatingWebhookConfiguration as its kustomization makes it (named
    ``validator.training-operator.kubeflow.org``, calling the ``training-operator`` Service in
    ``kubeflow``), but selecting no namespace: v1.9.2 cannot run without its webhook server and
    certificate rotator, which inject their CA into this object and wait for it, while nothing
    here could route the apiserver to a Service. So its webhooks are installed and off."""
    import yaml

    documents = [d for d in yaml.safe_load_all(manifest) if d]
    for document in documents:
        document["metadata"]["name"] = "validator.training-operator.kubeflow.org"
        for webhook in document.get("webhooks") or []:
            webhook["clientConfig"]["service"]["name"] = "training-operator"
            webhook["clientConfig"]["service"]["namespace"] = TRAINING_OPERATOR_NAMESPACE
            webhook["namespaceSelector"] = {"matchLabels": {"jobgate.bench/never": "selected"}}
    return documents


def main(argv: list[str] | None = None) -> int:
    names = argv if argv is not None else sys.argv[1:]
    unknown = [n for n in names if n not in PEERS]
    if unknown:
        print(f"unknown peer(s) {unknown}; known: {sorted(PEERS)}", file=sys.stderr)
        return 2
    for name in names or list(PEERS):
        if build_command(PEERS[name]):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
