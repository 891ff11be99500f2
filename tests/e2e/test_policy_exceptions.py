"""TrainingJobPolicyException on a real apiserver: the CRD refuses an exception without expiresAt or
reason or with an unknown rule id; the webhook (watching exceptions) admits a job through a matching
exception with a warning naming it, and refuses it without one, through an expired one, one of
another namespace, or against a policy that denies exceptions; an export of the cluster gives the
same verdict offline at ``--now``; the controller's audit counts the covered job as no violation and
lists it in the exception's status."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import (
    Cluster,
    ControllerProcess,
    WebhookProcess,
    controller_namespace,
    wait_for_webhook,
    wait_until,
)

NAMESPACE = "exc-team"
OTHER = "exc-other"
CAP = {
    "apiVersion": "policy.jobgate.io/v1alpha1",
    "kind": "ClusterTrainingJobPolicy",
    "metadata": {"name": "exc-gpu-caps"},
    "spec": {
        "namespaceSelector": {"matchLabels": {"exc": "yes"}},
        "limits": {"maxGPUsPerJob": 4},
        "require": {"labels": [{"key": "team"}]},
    },
}
STRICT = {
    "apiVersion": "policy.jobgate.io/v1alpha1",
    "kind": "ClusterTrainingJobPolicy",
    "metadata": {"name": "exc-strict"},
    "spec": {
        "namespaceSelector": {"matchLabels": {"exc": "strict"}},
        "exceptions": "Deny",
        "limits": {"maxGPUsPerJob": 4},
    },
}
FUTURE = "2999-01-01T00:00:00Z"
PAST = "2020-01-01T00:00:00Z"


def exception(name: str, namespace: str, *, expires: str = FUTURE, policy: str = "exc-gpu-caps", **spec) -> dict:
    body = {
        "policies": [{"kind": "ClusterTrainingJobPolicy", "name": policy, "rules": ["policy/max-gpus-per-job"]}],
        "match": {"names": ["big-run"], "objectSelector": {"matchLabels": {"run": "big"}}},
        "expiresAt": expires,
        "reason": "one week of 64 GPUs for the Q4 model",
        **spec,
    }
    return {
        "apiVersion": "policy.jobgate.io/v1alpha1",
        "kind": "TrainingJobPolicyException",
        "metadata": {"name": name, "namespace": namespace},
        "spec": body,
    }


def tfjob(namespace: str, name: str = "big-run", gpus: int = 2, workers: int = 3) -> dict:
    container = {"name": "tensorflow", "image": "tf:2", "resources": {"limits": {"nvidia.com/gpu": gpus}}}
    return {
        "apiVersion": "training.kubedl.io/v1alpha1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": namespace, "labels": {"team": "t", "run": "big"}},
        "spec": {
            "tfReplicaSpecs": {"Worker": {"replicas": workers, "template": {"spec": {"containers": [container]}}}}
        },
    }


def apply(cluster: Cluster, obj: dict, *flags: str) -> subprocess.CompletedProcess[str]:
    return cluster.kubectl("apply", *flags, "-f", "-", input=yaml.safe_dump(obj))


def until(cluster: Cluster, obj: dict, admitted: bool, fragment: str = "") -> subprocess.CompletedProcess[str]:
    """The webhook's caches follow the objects by watch: a moment after they are written."""
    deadline = time.monotonic() + 30
    while True:
        result = apply(cluster, obj, "--dry-run=server")
        done = (result.returncode == 0) == admitted and fragment in result.stderr
        if done or time.monotonic() > deadline:
            return result
        time.sleep(0.5)


@pytest.fixture(scope="module")
def exc_cluster(cluster: Cluster, webhook_process: WebhookProcess) -> Iterator[Cluster]:
    webhook_process.stop()
    webhook_process.extra = ("--kubeconfig", cluster.kubeconfig)
    webhook_process.start()
    try:
        wait_until(lambda: "policy exceptions on" in webhook_process.log.read_text(), 60, message="exception cache")
        wait_for_webhook(cluster)
        for namespace, label in ((NAMESPACE, "exc=yes"), (OTHER, "exc=yes")):
            cluster.kubectl("create", "namespace", namespace)
            cluster.kubectl("label", "--overwrite", "namespace", namespace, label, check=True)
        cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([CAP, STRICT]), check=True)
        yield cluster
    finally:
        for policy in (CAP, STRICT):
            cluster.kubectl("delete", "clustertrainingjobpolicy", policy["metadata"]["name"], "--ignore-not-found")
        for namespace in (NAMESPACE, OTHER, "exc-strict-ns"):
            cluster.kubectl("delete", "namespace", namespace, "--wait=false", "--ignore-not-found")
        webhook_process.stop()
        webhook_process.extra = ()
        webhook_process.start()
        wait_for_webhook(cluster)


@pytest.mark.parametrize(
    ("remove", "change", "expected"),
    [
        ("expiresAt", None, "spec.expiresAt: Required value"),
        ("reason", None, "spec.reason: Required value"),
        (None, {"rules": ["policy/max-gpus"]}, 'Unsupported value: "policy/max-gpus"'),
    ],
)
def test_the_crd_refuses_a_malformed_exception(exc_cluster: Cluster, remove, change, expected):
    obj = exception("malformed", NAMESPACE)
    if remove:
        del obj["spec"][remove]
    if change:
        obj["spec"]["policies"][0].update(change)
    refused = apply(exc_cluster, obj)
    assert refused.returncode != 0
    assert expected in refused.stderr, refused.stderr


def test_a_matching_exception_admits_with_a_warning_and_others_do_not(exc_cluster: Cluster, tmp_path: Path):
    job = tfjob(NAMESPACE)
    refused = until(exc_cluster, job, False, "exceeds 4 GPUs per job")
    assert "exc-gpu-caps" in refused.stderr
    # An exception of another namespace, and an expired one (creating it is allowed), change nothing.
    apply(exc_cluster, exception("elsewhere", OTHER)).check_returncode()
    apply(exc_cluster, exception("expired", NAMESPACE, expires=PAST)).check_returncode()
    time.sleep(2)
    assert apply(exc_cluster, job, "--dry-run=server").returncode != 0
    # A matching one in force: admitted, and kubectl prints the warning naming it.
    apply(exc_cluster, exception("big-run", NAMESPACE)).check_returncode()
    admitted = until(exc_cluster, job, True)
    assert admitted.returncode == 0, admitted.stderr
    assert f"TrainingJobPolicyException {NAMESPACE}/big-run waives" in admitted.stderr
    # AND of the criteria: another name, or the label missing, is not covered.
    other_name = tfjob(NAMESPACE, name="other-run")
    assert apply(exc_cluster, other_name, "--dry-run=server").returncode != 0
    unlabelled = tfjob(NAMESPACE)
    del unlabelled["metadata"]["labels"]["run"]
    assert apply(exc_cluster, unlabelled, "--dry-run=server").returncode != 0
    # Only the named rule: the required label is still required.
    no_team = tfjob(NAMESPACE)
    del no_team["metadata"]["labels"]["team"]
    refused = apply(exc_cluster, no_team, "--dry-run=server")
    assert refused.returncode != 0 and "metadata.labels[team]" in refused.stderr
    # The same verdicts offline from one export, at a given time.
    kinds = "namespaces,clustertrainingjobpolicies,trainingjobpolicies,trainingjobpolicyexceptions"
    export = exc_cluster.kubectl("get", kinds, "-A", "-o", "yaml", check=True)
    (tmp_path / "cluster.yaml").write_text(export.stdout)
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))

    def offline(now: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "jobgate", "validate", "--cluster-objects", str(tmp_path / "cluster.yaml")]
        command += ["--now", now, str(tmp_path / "job.yaml")]
        return subprocess.run(command, capture_output=True, text=True, check=False)

    now = offline("2026-12-01T00:00:00Z")
    assert now.returncode == 0, now.stdout + now.stderr
    assert f"TrainingJobPolicyException {NAMESPACE}/big-run waives" in now.stdout
    assert offline("3000-01-01T00:00:00Z").returncode == 1


def test_a_policy_that_denies_exceptions_is_not_waived(exc_cluster: Cluster):
    namespace = "exc-strict-ns"
    exc_cluster.kubectl("create", "namespace", namespace)
    exc_cluster.kubectl("label", "--overwrite", "namespace", namespace, "exc=strict", check=True)
    apply(exc_cluster, exception("big-run", namespace, policy="exc-strict")).check_returncode()
    refused = until(exc_cluster, tfjob(namespace), False, "exc-strict")
    assert refused.returncode != 0 and "exceeds 4 GPUs per job" in refused.stderr, refused.stderr
    time.sleep(2)  # the exception is surely in the webhook's cache by now
    assert apply(exc_cluster, tfjob(namespace), "--dry-run=server").returncode != 0


AUDITED = "exc-audited"


def test_the_audit_counts_a_covered_job_as_no_violation(exc_cluster: Cluster, tmp_path: Path):
    kubeconfig = controller_namespace(exc_cluster, AUDITED, tmp_path)
    exc_cluster.kubectl("label", "--overwrite", "namespace", AUDITED, "exc=yes", check=True)
    apply(exc_cluster, exception("big-run", AUDITED)).check_returncode()
    until(exc_cluster, tfjob(AUDITED), True).check_returncode()
    apply(exc_cluster, tfjob(AUDITED)).check_returncode()
    apply(exc_cluster, exception("old", AUDITED, expires=PAST)).check_returncode()
    controller = ControllerProcess(kubeconfig, AUDITED, tmp_path / "controller.log", "--policy-audit-interval", "2")
    try:
        wait_until(controller.is_leader, 30, message="controller leadership")

        def status(name: str) -> dict:
            got = exc_cluster.get_json("trainingjobpolicyexception", name, "-n", AUDITED)
            return got.get("status") or {}

        wait_until(lambda: status("big-run").get("totalJobs") == 1, 60, message="the exception's status")
        assert status("big-run")["jobs"][0]["name"] == "big-run"
        assert status("big-run")["expired"] is False
        policy = exc_cluster.get_json("clustertrainingjobpolicy", "exc-gpu-caps")
        assert AUDITED not in [v["namespace"] for v in (policy.get("status") or {}).get("violations") or []]
        wait_until(lambda: status("old").get("expired") is True, 60, message="the expired exception's status")

        def expiry_events() -> list[dict]:
            listed = exc_cluster.get_json("events", "-n", AUDITED, "--field-selector", "reason=ExceptionExpired")
            return [e for e in listed["items"] if e["involvedObject"]["name"] == "old"]

        wait_until(lambda: len(expiry_events()) == 1, 30, message="an ExceptionExpired event")
    finally:
        controller.stop()
        exc_cluster.kubectl("delete", "namespace", AUDITED, "--wait=false")
