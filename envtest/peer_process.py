"""A peer's controller manager running against a test control plane (Kueue's, JobSet's, Trainer's): started in a
session of its own, ready when its health endpoint says so, stopped by its process group."""

from __future__ import annotations

import os
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path


@dataclass
class PeerProcess:
    name: str
    process: subprocess.Popen
    log: Path
    health_port: int
    ready_path: str = "/readyz"

    def ready(self) -> bool:
        try:
            url = f"http://127.0.0.1:{self.health_port}{self.ready_path}"
            with urllib.request.urlopen(url, timeout=2) as answer:
                return answer.status == 200
        except OSError:
            return False

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:]) if self.log.exists() else ""

    def wait_ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.ready():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not become ready (exit {self.process.poll()}):\n{self.tail()}")
            time.sleep(0.5)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, 15)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)
                self.process.wait(timeout=30)


def spawn(name: str, command: list[str], kubeconfig: Path, log: Path, health_port: int) -> PeerProcess:
    """``command`` with ``KUBECONFIG`` set, its output in ``log``, in a process group of its own."""
    environment = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    with open(log, "ab") as output:
        process = subprocess.Popen(
            command, stdout=output, stderr=subprocess.STDOUT, env=environment, start_new_session=True
        )
    return PeerProcess(name, process, log, health_port)
