"""JobSet's own controller, built from its Go module (``sigs.k8s.io/jobset``) at the release the jobset
family follows (``jobgate.families.jobset.PEER_VERSION``), for tests/e2e/test_peer_controllers.py: JobSets
jobgate admitted and defaulted run to their child Jobs and pods on the test node.

Built like the other peers (``envtest.peers.build``: a throwaway wrapper module requiring JobSet at its
version with JobSet's own ``replace`` block, ``go mod tidy``, ``go build`` of its root ``main`` package),
cached in ``~/.cache/jobgate/peers/jobset-<version>/`` (or ``$JOBGATE_PEERS_CACHE``).
``python -m envtest.jobset`` builds it (or reports the cached build); nothing in CI builds it.

``run`` starts it against a test control plane, everything on loopback, from a configuration file
(``config.jobset.x-k8s.io/v1alpha1`` Configuration): no leader election, no internal certificate
management (which would wait for a Secret and webhook configurations to inject a CA into), metrics
off, its health probes on 127.0.0.1. Its webhook server still starts (the controller registers its
webhooks with itself) on 127.0.0.1 with the plane's serving certificate, but no webhook
configuration points the apiserver at it: jobgate is the admission in front of JobSets here.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import yaml

from envtest.harness import free_port
from envtest.peer_process import PeerProcess, spawn
from envtest.peers import Peer, build_command
from jobgate.families.jobset import PEER_MODULE, PEER_VERSION

JOBSET = Peer("jobset", PEER_MODULE, PEER_VERSION, PEER_MODULE, "config/components/crd/bases")

CONFIG_API_VERSION = "config.jobset.x-k8s.io/v1alpha1"


def configuration(health_port: int, webhook_port: int, cert_dir: Path) -> dict:
    """JobSet's Configuration for a test plane (see the module's docstring)."""
    return {
        "apiVersion": CONFIG_API_VERSION,
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "metrics": {"bindAddress": "0"},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "webhook": {"port": webhook_port, "host": "127.0.0.1", "certDir": str(cert_dir)},
    }


def unavailable_reason() -> str | None:
    """Why JobSet's controller cannot be run here, or None."""
    if JOBSET.cached() is None:
        return f"JobSet {PEER_VERSION}'s controller is not built (python -m envtest.jobset builds it: minutes, cold)"
    return None


def serving_certificate(directory: Path, cert: Path, key: Path) -> Path:
    """``cert`` and ``key`` as controller-runtime's webhook server reads them: ``tls.crt``, ``tls.key``."""
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(cert, directory / "tls.crt")
    shutil.copyfile(key, directory / "tls.key")
    return directory


def run(kubeconfig: Path, serving_cert: Path, serving_key: Path, work: Path) -> PeerProcess:
    """Start the built controller against ``kubeconfig``; ``work`` holds its configuration, certificate
    and log (``jobset.log``)."""
    binary = JOBSET.cached()
    if binary is None:
        raise RuntimeError(unavailable_reason() or "JobSet is not built")
    work.mkdir(parents=True, exist_ok=True)
    certs = serving_certificate(work / "certs", serving_cert, serving_key)
    health_port = free_port()
    config = work / "jobset-config.yaml"
    config.write_text(yaml.safe_dump(configuration(health_port, free_port(), certs)))
    command = [str(binary), f"--config={config}", "--zap-log-level=2"]
    return spawn("JobSet's controller", command, kubeconfig, work / "jobset.log", health_port)


def main() -> int:
    return build_command(JOBSET)


if __name__ == "__main__":
    sys.exit(main())
