"""How JobSet's and Trainer's controllers are built and configured for the test plane (envtest.jobset,
envtest.trainer): the pinned releases, and nothing that listens beyond loopback or waits for what no
test makes."""

from __future__ import annotations

from pathlib import Path


def test_jobset_is_built_at_the_release_the_jobset_family_follows():
    from envtest.jobset import JOBSET
    from jobgate.families.jobset import PEER_VERSION

    assert (JOBSET.module, JOBSET.version, JOBSET.package) == ("sigs.k8s.io/jobset", PEER_VERSION, "sigs.k8s.io/jobset")
    assert JOBSET.binaries() == {"jobset": "sigs.k8s.io/jobset"}


def test_trainer_is_built_at_the_release_the_trainer_family_follows():
    from envtest.trainer import TRAINER
    from jobgate.families.trainer import TRAINER_VERSION

    assert TRAINER.version == TRAINER_VERSION
    assert TRAINER.package == "github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager"


def test_jobset_runs_on_loopback_with_nothing_to_wait_for():
    from envtest.jobset import configuration

    config = configuration(8081, 9443, Path("/tmp/certs"))
    assert config["apiVersion"] == "config.jobset.x-k8s.io/v1alpha1" and config["kind"] == "Configuration"
    assert config["health"] == {"healthProbeBindAddress": "127.0.0.1:8081"}
    assert config["webhook"] == {"port": 9443, "host": "127.0.0.1", "certDir": "/tmp/certs"}
    assert config["metrics"] == {"bindAddress": "0"}
    assert config["leaderElection"] == {"leaderElect": False}
    assert config["internalCertManagement"] == {"enable": False}


def test_trainer_runs_on_loopback_with_nothing_to_wait_for():
    from envtest.trainer import configuration

    config = configuration(8081, 9443)
    assert config["apiVersion"] == "config.trainer.kubeflow.org/v1alpha1" and config["kind"] == "Configuration"
    assert config["health"] == {"healthProbeBindAddress": "127.0.0.1:8081"}
    assert config["webhook"] == {"port": 9443, "host": "127.0.0.1"}
    assert config["metrics"] == {"bindAddress": "0"}
    assert config["leaderElection"] == {"leaderElect": False}
    assert config["certManagement"] == {"enable": False}


def test_trainers_webhook_certificate_is_written_only_inside_its_mount_namespace():
    from envtest.trainer import _IN_NAMESPACE, WEBHOOK_CERT_DIR

    lines = _IN_NAMESPACE.splitlines()
    overlay = next(i for i, line in enumerate(lines) if line.startswith("mount -t overlay"))
    written = next(i for i, line in enumerate(lines) if line.startswith(f"mkdir -p {WEBHOOK_CERT_DIR}"))
    # /tmp is overlaid (upper layer on a tmpfs) before the certificate's directory is made under it
    assert lines[overlay - 2].startswith("mount -t tmpfs") and overlay < written
    assert "upperdir=$4/upper" in lines[overlay] and lines[-1].startswith('exec "$1"')


def test_a_peer_not_built_says_how_to_build_it(tmp_path, monkeypatch):
    from envtest import jobset, trainer

    monkeypatch.setenv("JOBGATE_PEERS_CACHE", str(tmp_path))
    assert "python -m envtest.jobset" in (jobset.unavailable_reason() or "")
    assert "python -m envtest.trainer" in (trainer.unavailable_reason() or "")
