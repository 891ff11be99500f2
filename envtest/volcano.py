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
"""

from __future__ import annotations

import base64
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from envtest.peers import Peer, build
from envtest.upstream import VOLCANO_MODULE, module_directory
from envtest.versions import VOLCANO_VERSION

VOLCANO = Peer(
    "volcano",
    VOLCANO_MODULE,
    VOLCANO_VERSION,
    f"{VOLCANO_MODULE}/cmd/scheduler",
    "config/crd/volcano/bases",
    commands=(
        ("vc-scheduler", f"{VOLCANO_MODULE}/cmd/scheduler"),
        ("vc-controller-manager", f"{VOLCANO_MODULE}/cmd/controller-manager"),
        ("vc-webhook-manager", f"{VOLCANO_MODULE}/cmd/webhook-manager"),
    ),
)

# The controller manager runs every controller by default, the job flow ones too: their CRDs as well.
CRD_DIRECTORIES = ("config/crd/volcano/bases", "config/crd/jobflow/bases")
CHART = "installer/helm/chart/volcano"
SCHEDULER_CONF = f"{CHART}/config/volcano-scheduler.conf"
WEBHOOKS_TEMPLATE = f"{CHART}/templates/webhooks.yaml"
# The chart's release, as its README installs it (the webhooks leave its namespace out).
RELEASE_NAME = "volcano"
RELEASE_NAMESPACE = "volcano-system"


def source() -> Path:
    """Volcano's module source in the Go module cache (downloaded if missing)."""
    return module_directory(VOLCANO.module, VOLCANO.version)


def crds() -> list[Path]:
    root = source()
    return [path for directory in CRD_DIRECTORIES for path in sorted((root / directory).glob("*.yaml"))]


def scheduler_conf() -> str:
    """The scheduler configuration Volcano's chart deploys (actions enqueue, allocate, backfill; the
    ``capacity`` plugin for queues' capability), rather than the binary's built-in one (``proportion``)."""
    return (source() / SCHEDULER_CONF).read_text()


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


def chart_webhook_configurations(url: str, ca_bundle: bytes) -> list[dict]:
    root = source() / CHART
    values = yaml.safe_load((root / "values.yaml").read_text()) or {}
    return webhook_configurations(url, ca_bundle, (root / "templates/webhooks.yaml").read_text(), values)


def unavailable_reason() -> str | None:
    """Why Volcano cannot be run here, or None."""
    if VOLCANO.cached() is None:
        return f"Volcano {VOLCANO_VERSION} is not built (python -m envtest.volcano builds it: tens of minutes, cold)"
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


def start(kubeconfig: Path, pki: Path, work: Path, webhook_port: int) -> Volcano:
    """Start the built commands against ``kubeconfig`` (see the module's docstring): the admission
    server first, until it serves (``webhook_configurations`` must be applied already: it waits for
    them, and the scheduler's first act, creating the ``default`` queue, goes through them), then the
    controller manager and the scheduler. ``pki`` holds the plane's ``ca.crt``, ``apiserver.crt`` and
    ``apiserver.key``; ``work`` gets the scheduler's configuration and the logs."""
    if VOLCANO.cached() is None:
        raise RuntimeError(unavailable_reason() or "Volcano is not built")
    work.mkdir(parents=True, exist_ok=True)
    conf = work / "volcano-scheduler.conf"
    conf.write_text(scheduler_conf())
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
                    [str(VOLCANO.directory / name), *arguments],
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


def main() -> int:
    try:
        build(VOLCANO)
    except RuntimeError as exc:
        print(f"building volcano {VOLCANO_VERSION} failed: {exc}", file=sys.stderr)
        return 1
    for name in VOLCANO.binaries():
        print(VOLCANO.directory / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
