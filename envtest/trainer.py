"""Kubeflow Trainer's own controller manager, built from its Go module (``github.com/kubeflow/trainer/v2``)
at the release the trainer family follows (``TRAINER_VERSION``), for tests/e2e/test_peer_controllers.py:
a TrainJob jobgate admitted becomes a JobSet (run by JobSet's controller, ``envtest.jobset``), Jobs and
pods on the test node.

Built like the other peers (``envtest.peers.build``: a wrapper module requiring Trainer at its version
with Trainer's own ``replace`` block, ``go mod tidy``, ``go build`` of ``cmd/trainer-controller-manager``),
cached in ``~/.cache/jobgate/peers/trainer-<version>/`` (or ``$JOBGATE_PEERS_CACHE``).
``python -m envtest.trainer`` builds it (or reports the cached build); nothing in CI builds it.

``run`` starts it against a test control plane from a configuration file
(``config.trainer.kubeflow.org/v1alpha1`` Configuration): no leader election, certificate management off
(it would wait for its Secret and inject a CA into webhook configurations named after Trainer's), metrics
off, health probes and its webhook server on 127.0.0.1. Its webhooks are registered with no apiserver:
jobgate is the admission in front of TrainJobs and runtimes here. Trainer's configuration has no
certificate directory: controller-runtime reads the webhook server's certificate from its default,
``/tmp/k8s-webhook-server/serving-certs``. So the controller runs in a private mount namespace
(``unshare``) whose ``/tmp`` is an overlay with a tmpfs upper layer: the certificate is written there
and nowhere on the machine, while the rest of ``/tmp`` (the plane's kubeconfig) reads through.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import yaml

from envtest.harness import free_port
from envtest.jobset import serving_certificate
from envtest.peer_process import PeerProcess, spawn
from envtest.peers import Peer, build_command
from envtest.upstream import TRAINER_CRD_DIRECTORY, TRAINER_MODULE
from envtest.versions import TRAINER_VERSION

TRAINER = Peer(
    "trainer",
    TRAINER_MODULE,
    TRAINER_VERSION,
    f"{TRAINER_MODULE}/cmd/trainer-controller-manager",
    TRAINER_CRD_DIRECTORY,
)

CONFIG_API_VERSION = "config.trainer.kubeflow.org/v1alpha1"
WEBHOOK_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"  # controller-runtime's default

# Inside the mount namespace: a tmpfs on the scratch directory, /tmp overlaid with it as the upper
# layer, the certificate where controller-runtime reads it, then Trainer. Arguments: binary, config,
# certificate directory, scratch directory.
_IN_NAMESPACE = f"""set -e
mount -t tmpfs tmpfs "$4"
mkdir "$4/upper" "$4/work"
mount -t overlay overlay -o "lowerdir=/tmp,upperdir=$4/upper,workdir=$4/work" /tmp
mkdir -p {WEBHOOK_CERT_DIR}
cp "$3/tls.crt" "$3/tls.key" {WEBHOOK_CERT_DIR}/
exec "$1" --config="$2" --zap-log-level=2
"""


def configuration(health_port: int, webhook_port: int) -> dict:
    """Trainer's Configuration for a test plane (see the module's docstring)."""
    return {
        "apiVersion": CONFIG_API_VERSION,
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "certManagement": {"enable": False},
        "metrics": {"bindAddress": "0"},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "webhook": {"port": webhook_port, "host": "127.0.0.1"},
    }


def unavailable_reason() -> str | None:
    """Why Trainer's controller cannot be run here, or None."""
    if TRAINER.cached() is None:
        return f"Kubeflow Trainer {TRAINER_VERSION}'s controller is not built (python -m envtest.trainer builds it)"
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return "running Trainer needs root and unshare (a private mount namespace for its webhook certificate)"
    return None


def run(kubeconfig: Path, serving_cert: Path, serving_key: Path, work: Path) -> PeerProcess:
    """Start the built controller manager against ``kubeconfig`` (see the module's docstring); ``work``
    holds its configuration, certificate, scratch mount point and log (``trainer.log``)."""
    binary = TRAINER.cached()
    reason = unavailable_reason()
    if binary is None or reason:
        raise RuntimeError(reason or "Trainer is not built")
    work.mkdir(parents=True, exist_ok=True)
    certs = serving_certificate(work / "certs", serving_cert, serving_key)
    scratch = work / "tmp-overlay"
    scratch.mkdir(exist_ok=True)
    health_port = free_port()
    config = work / "trainer-config.yaml"
    config.write_text(yaml.safe_dump(configuration(health_port, free_port())))
    command = ["unshare", "--mount", "--propagation", "private", "sh", "-c", _IN_NAMESPACE, "trainer"]
    command += [str(binary), str(config), str(certs), str(scratch)]
    return spawn("Trainer's controller manager", command, kubeconfig, work / "trainer.log", health_port)


def main() -> int:
    return build_command(TRAINER)


if __name__ == "__main__":
    sys.exit(main())
