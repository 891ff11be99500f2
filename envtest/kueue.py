"""Kueue's own controller, built from its Go module (``sigs.k8s.io/kueue``) at ``KUEUE_VERSION``, for the
test that checks jobgate's queue fit agrees with Kueue (tests/e2e/test_kueue_agreement.py).

Built like the benchmark's peers (``envtest.peers.build``: a throwaway wrapper module requiring Kueue
at its version with Kueue's own ``replace`` block, ``go mod tidy``, ``go build``), cached in
``~/.cache/jobgate/peers/kueue-<version>/`` (or ``$JOBGATE_PEERS_CACHE``). ``python -m envtest.kueue``
builds it (or reports the cached build); nothing in CI builds it.

``run`` starts it against a test control plane, everything on loopback: no leader election, no
internal certificate management (which would wait for webhook configurations to inject a CA into),
its webhook server on 127.0.0.1 with the plane's serving certificate but registered with no
apiserver (jobs are written as Kueue's defaulting webhook leaves them: suspended), metrics and the
visibility server off. Kueue
reads its metrics certificate from a fixed path, ``/etc/kueue/metrics/certs``, even with metrics off;
it runs in a private mount namespace (``unshare``) whose ``/etc`` is an overlay, so that the file is
written there and nowhere on the machine.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import yaml

from envtest.harness import free_port
from envtest.peer_process import PeerProcess, spawn
from envtest.peers import Peer, build
from envtest.versions import KUEUE_VERSION

KUEUE = Peer(
    "kueue",
    "sigs.k8s.io/kueue",
    KUEUE_VERSION,
    "sigs.k8s.io/kueue/cmd/kueue",
    "config/components/crd/bases",
)

CONFIG_API_VERSION = "config.kueue.x-k8s.io/v1beta2"

# Inside the mount namespace: /etc overlaid on a scratch directory, the metrics certificate where
# Kueue reads it, then Kueue itself. Arguments: binary, config, certificate dir, upper dir, work dir.
_IN_NAMESPACE = """set -e
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$4,workdir=$5" /etc
mkdir -p /etc/kueue/metrics/certs
cp "$3/tls.crt" "$3/tls.key" /etc/kueue/metrics/certs/
exec "$1" --config="$2" --zap-log-level=2
"""


def configuration(frameworks: list[str], health_port: int, webhook_port: int, cert_dir: Path) -> dict:
    """Kueue's Configuration for a test plane (see the module's docstring)."""
    return {
        "apiVersion": CONFIG_API_VERSION,
        "kind": "Configuration",
        "namespace": "kueue-system",
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"port": webhook_port, "host": "127.0.0.1", "certDir": str(cert_dir)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "manageJobsWithoutQueueName": False,
        "integrations": {"frameworks": frameworks},
        # On by default: an extension apiserver on every interface, with a certificate from /visibility.
        "featureGates": {"VisibilityOnDemand": False},
    }


def unavailable_reason() -> str | None:
    """Why Kueue cannot be run here, or None."""
    if KUEUE.cached() is None:
        return f"Kueue {KUEUE_VERSION} is not built (python -m envtest.kueue builds it: minutes, cold)"
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return "running Kueue needs root and unshare (a private mount namespace for its metrics certificate)"
    return None


def run(kubeconfig: Path, serving_cert: Path, serving_key: Path, work: Path, frameworks: list[str]) -> PeerProcess:
    """Start the built Kueue against ``kubeconfig`` (see the module's docstring); ``work`` holds its
    configuration, certificates, overlay and log."""
    binary = KUEUE.cached()
    if binary is None:
        raise RuntimeError(unavailable_reason() or "Kueue is not built")
    certs = work / "certs"
    certs.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(serving_cert, certs / "tls.crt")
    shutil.copyfile(serving_key, certs / "tls.key")
    upper, scratch = work / "etc-upper", work / "etc-work"
    upper.mkdir(exist_ok=True)
    scratch.mkdir(exist_ok=True)
    health_port = free_port()
    config = work / "kueue-config.yaml"
    config.write_text(yaml.safe_dump(configuration(frameworks, health_port, free_port(), certs)))
    log = work / "kueue.log"
    command = ["unshare", "--mount", "--propagation", "private", "sh", "-c", _IN_NAMESPACE, "kueue"]
    command += [str(binary), str(config), str(certs), str(upper), str(scratch)]
    return spawn("Kueue", command, kubeconfig, log, health_port)


def main() -> int:
    try:
        print(build(KUEUE))
    except RuntimeError as exc:
        print(f"building kueue {KUEUE_VERSION} failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
