"""Volcano's own scheduler, controllers and admission webhooks, built from its Go module
(``volcano.sh/volcano``) at ``VOLCANO_VERSION``, for the test that checks jobgate's queue fit agrees with
Volcano (tests/e2e/test_volcano_agreement.py).

Built like the benchmark's peers (``envtest.peers.build``: a throwaway wrapper module requiring Volcano
at its version with Volcano's own ``replace`` block, which maps ~30 ``k8s.io`` staging modules to the
release ``k8s.io/kubernetes`` needs; ``go mod tidy``; ``go build``), three commands: ``vc-scheduler``,
``vc-controller-manager`` and ``vc-webhook-manager``, cached in ``~/.cache/jobgate/peers/volcano-<version>/``
(or ``$JOBGATE_PEERS_CACHE``). ``python -m envtest.volcano`` builds them (or reports the cached build);
nothing in CI builds them.

``run`` starts them against a test control plane as Volcano's chart deploys them, everything on
loopback: no leader election, metrics and health servers off (their defaults), the scheduler with the
chart's ``volcano-scheduler.conf``, and the admission webhooks on 127.0.0.1 with the plane's serving
certificate, registered with the apiserver by URL (``webhook_configurations``: the chart's own
``webhooks.yaml``, rendered with its default values). Volcano v1.10 refuses a job whose queue is missing
or not open in those webhooks, not in the scheduler, so they are part of what is compared.

A second release, ``VOLCANO_HIERARCHY_VERSION`` (v1.11.0, the first whose ``capacity`` plugin reads
``spec.parent`` when the scheduler configuration gives it ``enableHierarchy: true``), is built beside
it in ``volcano-<that version>/`` for the hierarchical-queue cases. The module proxy reachable here
refuses ``volcano.sh/volcano`` at every version after v1.10.0 (``403 Forbidden: This module version is
not available``), so that release is built from a git repository of Volcano holding its tag
(``python -m envtest.volcano --version v1.11.0 --git DIR``): the tag's tree, its own ``go.mod`` and
``go.sum`` (every dependency still from the module proxy, checked against that ``go.sum``); the build
keeps the tree's CRDs and chart beside the binaries (``source/``), since no module cache has them.
"""

from __future__ import annotations

import argparse
import base64
import io
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from envtest.peers import Log, Peer, _go, build, install
from envtest.upstream import VOLCANO_MODULE, module_directory
from envtest.versions import VOLCANO_HIERARCHY_VERSION, VOLCANO_VERSION


def volcano_peer(version: str) -> Peer:
    """Volcano's three commands at ``version``, cached in ``volcano-<version>/``."""
    return Peer(
        "volcano",
        VOLCANO_MODULE,
        version,
        f"{VOLCANO_MODULE}/cmd/scheduler",
        "config/crd/volcano/bases",
        commands=(
            ("vc-scheduler", f"{VOLCANO_MODULE}/cmd/scheduler"),
            ("vc-controller-manager", f"{VOLCANO_MODULE}/cmd/controller-manager"),
            ("vc-webhook-manager", f"{VOLCANO_MODULE}/cmd/webhook-manager"),
        ),
    )


VOLCANO = volcano_peer(VOLCANO_VERSION)
HIERARCHICAL = volcano_peer(VOLCANO_HIERARCHY_VERSION)

# The controller manager runs every controller by default, the job flow ones too: their CRDs as well.
CRD_DIRECTORIES = ("config/crd/volcano/bases", "config/crd/jobflow/bases")
CHART = "installer/helm/chart/volcano"
SCHEDULER_CONF = f"{CHART}/config/volcano-scheduler.conf"
WEBHOOKS_TEMPLATE = f"{CHART}/templates/webhooks.yaml"
# The chart's release, as its README installs it (the webhooks leave its namespace out).
RELEASE_NAME = "volcano"
RELEASE_NAMESPACE = "volcano-system"
# What a build from a git tree keeps of it, beside the binaries (``source/``).
KEPT_FROM_SOURCE = (*CRD_DIRECTORIES, CHART)
SOURCE_COPY = "source"


def source(peer: Peer = VOLCANO) -> Path:
    """Volcano's source at the peer's version: the tree kept by a build from git, else its module
    source in the Go module cache (downloaded if missing)."""
    kept = peer.directory / SOURCE_COPY
    if peer.cached() is not None and kept.is_dir():
        return kept
    return module_directory(peer.module, peer.version)


def crds(peer: Peer = VOLCANO) -> list[Path]:
    root = source(peer)
    return [path for directory in CRD_DIRECTORIES for path in sorted((root / directory).glob("*.yaml"))]


def scheduler_conf(peer: Peer = VOLCANO) -> str:
    """The scheduler configuration Volcano's chart deploys (actions enqueue, allocate, backfill; the
    ``capacity`` plugin for queues' capability in v1.10, ``proportion`` in v1.11), rather than the
    binary's built-in one (``proportion``)."""
    return (source(peer) / SCHEDULER_CONF).read_text()


def hierarchical_scheduler_conf(chart_conf: str) -> str:
    """The chart's configuration with hierarchical queues on, as Volcano's capacity-plugin guide
    configures them: its queue plugin (``proportion`` or ``capacity``) replaced by ``capacity`` with
    ``enableHierarchy: true`` (the two plugins conflict; only ``capacity`` reads ``spec.parent``)."""
    conf = yaml.safe_load(chart_conf) or {}
    replaced = 0
    for tier in conf.get("tiers") or []:
        plugins = tier.get("plugins") or []
        for index, plugin in enumerate(plugins):
            if plugin.get("name") in ("proportion", "capacity"):
                plugins[index] = {**plugin, "name": "capacity", "enableHierarchy": True}
                replaced += 1
    if replaced != 1:
        raise ValueError(f"expected one proportion or capacity plugin in the scheduler configuration, found {replaced}")
    return yaml.safe_dump(conf, sort_keys=False)


class TemplateError(ValueError):
    """The chart's template uses a construct this renderer does not know."""


def render_chart_template(template: str, values: dict[str, Any]) -> str:
    """The chart's ``webhooks.yaml`` as ``helm template`` renders it with ``values`` (the chart's
    ``values.yaml``): the few constructs it uses (``if`` on a value or on ``enabled_admissions |
    regexMatch``, ``toYaml`` of a value under a false ``if``, ``.Release.Name`` and
    ``.Release.Namespace``); anything else is refused rather than guessed."""
    custom = values.get("custom") or {}
    out: list[str] = []
    kept: list[bool] = []  # one per open `if`: whether its body is rendered
    for line in template.splitlines():
        directive = re.fullmatch(r"\s*\{\{-?\s*(.*?)\s*-?\}\}\s*", line)
        if directive:
            action = directive.group(1)
            if action == "end":
                if not kept:
                    raise TemplateError(f"unbalanced end: {line!r}")
                kept.pop()
                continue
            condition = re.fullmatch(r"if \.Values\.custom\.(\w+)(?: \| regexMatch \"([^\"]+)\")?", action)
            if condition is None:
                if all(kept):
                    raise TemplateError(f"unknown template action: {line!r}")
                continue
            name, pattern = condition.groups()
            value = custom.get(name)
            truth = bool(re.search(pattern, str(value or ""))) if pattern else bool(value)
            kept.append(truth)
            continue
        if not all(kept):
            continue
        rendered = line.replace("{{ .Release.Name }}", RELEASE_NAME)
        rendered = rendered.replace("{{ .Release.Namespace }}", RELEASE_NAMESPACE)
        if "{{" in rendered:
            raise TemplateError(f"unknown template expression: {line!r}")
        out.append(rendered)
    if kept:
        raise TemplateError("an if without its end")
    return "\n".join(out) + "\n"


def webhook_configurations(url: str, ca_bundle: bytes, template: str, values: dict[str, Any]) -> list[dict]:
    """The chart's webhook configurations, each webhook calling ``url`` + its service path (instead of
    the chart's Service) and trusting ``ca_bundle``."""
    documents = [d for d in yaml.safe_load_all(render_chart_template(template, values)) if d]
    for document in documents:
        for webhook in document.get("webhooks") or []:
            path = webhook["clientConfig"]["service"]["path"]
            webhook["clientConfig"] = {"url": url.rstrip("/") + path, "caBundle": base64.b64encode(ca_bundle).decode()}
    return documents


def chart_webhook_configurations(url: str, ca_bundle: bytes, peer: Peer = VOLCANO) -> list[dict]:
    root = source(peer) / CHART
    values = yaml.safe_load((root / "values.yaml").read_text()) or {}
    return webhook_configurations(url, ca_bundle, (root / "templates/webhooks.yaml").read_text(), values)


def unavailable_reason(peer: Peer = VOLCANO) -> str | None:
    """Why Volcano at the peer's version cannot be run here, or None."""
    if peer.cached() is None:
        how = f"python -m envtest.volcano --version {peer.version}"
        if peer.version != VOLCANO_VERSION:
            how += " --git DIR (a git repository of volcano-sh/volcano with that tag: the module proxy refuses it)"
        return f"Volcano {peer.version} is not built ({how} builds it: tens of minutes, cold)"
    return None


@dataclass
class Volcano:
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    logs: dict[str, Path] = field(default_factory=dict)
    webhook_port: int = 0

    def tail(self, lines: int = 30) -> str:
        parts = []
        for name, log in self.logs.items():
            text = log.read_text(errors="replace").splitlines()[-lines:] if log.exists() else []
            parts.append(f"--- {name} (exit {self.processes[name].poll()}):\n" + "\n".join(text))
        return "\n".join(parts)

    def exited(self) -> list[str]:
        return [name for name, process in self.processes.items() if process.poll() is not None]

    def webhook_serving(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.webhook_port), timeout=1):
                return True
        except OSError:
            return False

    def wait_webhook(self, timeout: float = 120.0) -> None:
        """Until the admission server accepts connections (it first injects its CA into the
        configurations, which must exist)."""
        deadline = time.monotonic() + timeout
        while not self.webhook_serving():
            if self.exited() or time.monotonic() > deadline:
                raise RuntimeError(f"Volcano's webhook server did not start:\n{self.tail()}")
            time.sleep(0.5)

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)


def start(
    kubeconfig: Path, pki: Path, work: Path, webhook_port: int, *, peer: Peer = VOLCANO, conf_text: str | None = None
) -> Volcano:
    """Start the built commands against ``kubeconfig`` (see the module's docstring): the admission
    server first, until it serves (``webhook_configurations`` must be applied already: it waits for
    them, and the scheduler's first act, creating the ``default`` queue, goes through them), then the
    controller manager and the scheduler. ``pki`` holds the plane's ``ca.crt``, ``apiserver.crt`` and
    ``apiserver.key``; ``work`` gets the scheduler's configuration (``conf_text``, else the chart's)
    and the logs."""
    if peer.cached() is None:
        raise RuntimeError(unavailable_reason(peer) or "Volcano is not built")
    work.mkdir(parents=True, exist_ok=True)
    conf = work / "volcano-scheduler.conf"
    conf.write_text(conf_text if conf_text is not None else scheduler_conf(peer))
    common = [f"--kubeconfig={kubeconfig}", "--v=3", "--logtostderr"]
    commands = {
        "vc-webhook-manager": [
            *common,
            "--listen-address=127.0.0.1",
            f"--port={webhook_port}",
            f"--webhook-url=https://127.0.0.1:{webhook_port}",
            f"--tls-cert-file={pki / 'apiserver.crt'}",
            f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--ca-cert-file={pki / 'ca.crt'}",
        ],
        "vc-controller-manager": [*common, "--leader-elect=false"],
        "vc-scheduler": [*common, "--leader-elect=false", f"--scheduler-conf={conf}"],
    }
    volcano = Volcano(webhook_port=webhook_port)
    try:
        for name, arguments in commands.items():
            log = volcano.logs[name] = work / f"{name}.log"
            with open(log, "ab") as output:
                volcano.processes[name] = subprocess.Popen(
                    [str(peer.directory / name), *arguments],
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            if name == "vc-webhook-manager":
                volcano.wait_webhook()
    except BaseException:
        volcano.stop()
        raise
    return volcano


def tag_commit(git_dir: Path, tag: str) -> str:
    """The commit the tag names in that git repository."""
    process = subprocess.run(
        ["git", "-C", str(git_dir), "rev-parse", "--verify", f"refs/tags/{tag}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if process.returncode != 0:
        raise RuntimeError(f"{git_dir} has no tag {tag}: {process.stderr.strip()}")
    return process.stdout.strip()


def build_from_git(peer: Peer, git_dir: Path, log: Log = print) -> Path:
    """Build the peer's commands from the tree of its version's tag in ``git_dir`` (see the module's
    docstring): ``go build`` of each in that tree, with its own go.mod and go.sum; the tree's CRDs and
    chart kept in ``source/``. The same stamp and cache directory as a build from the module proxy."""
    existing = peer.cached()
    if existing is not None:
        return existing
    if shutil.which("go") is None:
        raise RuntimeError(f"go is not installed; cannot build {peer.name} {peer.version}")
    commit = tag_commit(git_dir, peer.version)
    target = peer.directory
    target.parent.mkdir(parents=True, exist_ok=True)
    # One place per commit, so that a rebuild finds its packages in the go build cache.
    tree = target.parent / f".{peer.name}-src-{commit[:12]}"
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        if tree.exists():
            shutil.rmtree(tree)
        archive = subprocess.run(["git", "-C", str(git_dir), "archive", commit], capture_output=True, check=True)
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(tree, filter="data")
        module = re.search(r"^module (\S+)", (tree / "go.mod").read_text(), re.M)
        if module is None or module.group(1) != peer.module:
            raise RuntimeError(f"{peer.version} of {git_dir} is not module {peer.module}")
        binaries = peer.binaries()
        log(f"building {peer.name} {peer.version} (git {commit}) into {target} ...")
        started = time.monotonic()
        for name, package in binaries.items():
            relative = "./" + package.removeprefix(peer.module).lstrip("/")
            _go(["build", "-ldflags=-s -w", "-o", str(scratch / name), relative], tree)
        for kept in KEPT_FROM_SOURCE:
            shutil.copytree(tree / kept, scratch / SOURCE_COPY / kept)
        go_version = _go(["env", "GOVERSION"], tree).strip()
        install(peer, scratch, binaries, go_version, started, source={"git_commit": commit, "tag": peer.version})
    finally:
        for leftover in (scratch, tree):
            if leftover.exists():
                shutil.rmtree(leftover)
    built = peer.cached()
    assert built is not None
    return built


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m envtest.volcano", description="Build Volcano's commands (cached).")
    parser.add_argument("--version", default=VOLCANO_VERSION, help=f"Volcano release (default {VOLCANO_VERSION})")
    parser.add_argument(
        "--git",
        type=Path,
        help="a git repository of volcano-sh/volcano holding the version's tag: build that tree instead of "
        "the module from the Go module proxy",
    )
    arguments = parser.parse_args(argv)
    peer = volcano_peer(arguments.version)
    try:
        if arguments.git is not None:
            build_from_git(peer, arguments.git)
        else:
            build(peer)
    except (RuntimeError, subprocess.CalledProcessError, OSError, tarfile.TarError) as exc:
        print(f"building volcano {peer.version} failed: {exc}", file=sys.stderr)
        if arguments.git is None:
            # `go mod download -json` puts the proxy's refusal in its JSON answer, not on stderr.
            print(
                "the Go module proxy refuses volcano.sh/volcano after v1.10.0 here (403 Forbidden: This module "
                "version is not available); build the release's tag from git: --git DIR",
                file=sys.stderr,
            )
        return 1
    for name in peer.binaries():
        print(peer.directory / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
