"""jobgate itself next to a test cluster: the webhook and the controller as local processes.

``python -m envtest up --node --jobgate`` uses this so that a person can apply jobs by hand
right away: the CRDs and webhook configurations of ``manifests/overlays/url`` (webhooks
reached by URL on 127.0.0.1), the CA injected into them, ``jobgate webhook`` on a free
loopback port and ``jobgate controller`` for all namespaces with the admin kubeconfig.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

from envtest.harness import ControlPlane, free_port

REPO = Path(__file__).resolve().parents[1]


class JobgateError(RuntimeError):
    pass


def _kubectl(plane: ControlPlane, *args: str, input: str | None = None) -> str:
    proc = subprocess.run(plane.kubectl_command(*args), input=input, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise JobgateError(f"kubectl {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout


def _wait_port(port: int, process: subprocess.Popen, log: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise JobgateError(f"jobgate webhook exited: {log.read_text(errors='replace')[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise JobgateError("jobgate webhook did not open its port")


def start_jobgate(plane: ControlPlane, work_dir: Path) -> dict[str, subprocess.Popen]:
    """Install and run jobgate against ``plane``; returns the processes (the caller stops them)."""
    from jobgate.certs.authority import init_directory

    tls_dir = work_dir / "jobgate-tls"
    init_directory(tls_dir, ["localhost"], ["127.0.0.1"])
    port = free_port()
    processes: dict[str, subprocess.Popen] = {}
    webhook_log = work_dir / "jobgate-webhook.log"
    command = [sys.executable, "-m", "jobgate", "webhook", "--tls-dir", str(tls_dir)]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    with webhook_log.open("ab") as log:
        processes["jobgate-webhook"] = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    _wait_port(port, processes["jobgate-webhook"], webhook_log)
    rendered = _kubectl(plane, "kustomize", str(REPO / "manifests" / "overlays" / "url"))
    _kubectl(plane, "apply", "-f", "-", input=rendered.replace("https://127.0.0.1:9443/", f"https://127.0.0.1:{port}/"))
    inject = [sys.executable, "-m", "jobgate", "certs", "inject", "--kubeconfig", str(plane.kubeconfig)]
    inject += ["--ca-file", str(tls_dir / "ca.crt"), "--webhook", "jobgate-mutating", "--webhook", "jobgate-validating"]
    proc = subprocess.run(inject, cwd=REPO, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise JobgateError(f"jobgate certs inject failed: {proc.stderr.strip()}")
    _kubectl(plane, "wait", "--for=condition=Established", "crd", "-l", "app.kubernetes.io/part-of=jobgate")
    controller_log = work_dir / "jobgate-controller.log"
    command = [sys.executable, "-m", "jobgate", "controller", "--kubeconfig", str(plane.kubeconfig)]
    with controller_log.open("ab") as log:
        processes["jobgate-controller"] = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    return processes
