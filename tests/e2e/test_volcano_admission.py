"""Volcano Jobs through kubectl on the real control plane: defaults, refusals, dry-run, UPDATE, queue check."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from jobgate.generate.manifests import QUEUE_READER
from tests.e2e.conftest import (
    NAMESPACE,
    REPO,
    Cluster,
    WebhookProcess,
    apply_rbac_from,
    install_queue_crd,
    token_kubeconfig,
    wait_for_webhook,
)

UPDATE_FORBIDDEN = "job updates may not change fields other than `minAvailable`"


def job(name: str, **spec) -> dict:
    tasks = spec.pop("tasks", None) or [
        {"name": "worker", "replicas": 2, "template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}}
    ]
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"tasks": tasks, **spec},
    }


def kubectl_apply(cluster: Cluster, obj: dict, *extra: str) -> subprocess.CompletedProcess[str]:
    return cluster.kubectl("apply", *extra, "-f", "-", input=json.dumps(obj))


def stored(cluster: Cluster, name: str) -> dict:
    return cluster.get_json("jobs.batch.volcano.sh", name, "-n", NAMESPACE)


def test_apply_gets_volcano_defaults(cluster: Cluster):
    obj = job("vc-defaults", plugins={"mpi": []})
    obj["spec"]["tasks"] = [
        {"name": "master", "replicas": 1, "template": {"spec": {"containers": [{"name": "m", "image": "busybox"}]}}},
        {"replicas": 3, "template": {"spec": {"hostNetwork": True, "containers": [{"name": "w", "image": "busybox"}]}}},
    ]
    result = kubectl_apply(cluster, obj)
    assert result.returncode == 0, result.stderr
    spec = stored(cluster, "vc-defaults")["spec"]
    assert (spec["queue"], spec["schedulerName"], spec["maxRetry"], spec["minAvailable"]) == (
        "default",
        "volcano",
        3,
        4,
    )
    assert [t["name"] for t in spec["tasks"]] == ["master", "default1"]
    assert [t["minAvailable"] for t in spec["tasks"]] == [1, 3]
    assert [t["maxRetry"] for t in spec["tasks"]] == [3, 3]
    assert spec["tasks"][1]["template"]["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert spec["plugins"] == {"mpi": [], "svc": [], "ssh": []}
    # Volcano's columns and short name.
    table = cluster.kubectl("get", "vcjob", "vc-defaults", "-n", NAMESPACE, "-o", "wide", check=True).stdout
    assert table.split()[:6] == ["NAME", "STATUS", "MINAVAILABLE", "RUNNINGS", "AGE", "QUEUE"]


def test_invalid_job_refused_with_every_field_error(cluster: Cluster):
    obj = job("vc-invalid", minAvailable=9, plugins={"gang": []}, policies=[{"exitCode": 0, "action": "AbortJob"}])
    obj["spec"]["tasks"].append(obj["spec"]["tasks"][0])
    result = kubectl_apply(cluster, obj)
    assert result.returncode != 0
    for line in (
        "spec.minAvailable: Invalid value: 9: job 'minAvailable' should not be greater than total replicas in tasks",
        'spec.tasks[1].name: Duplicate value: "worker": duplicated task name worker',
        'spec.plugins[gang]: Invalid value: "gang": unable to find job plugin: gang',
        "spec.policies[0].exitCode: Invalid value: 0: 0 is not a valid error code",
    ):
        assert line in result.stderr, result.stderr
    assert cluster.kubectl("get", "vcjob", "vc-invalid", "-n", NAMESPACE).returncode != 0


def test_server_side_dry_run_shows_defaults_and_stores_nothing(cluster: Cluster):
    result = cluster.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(job("vc-dry")))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["spec"]["minAvailable"] == 2
    assert cluster.kubectl("get", "vcjob", "vc-dry", "-n", NAMESPACE).returncode != 0
    refused = job("vc-dry-bad", minAvailable=5)
    result = cluster.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(refused))
    assert "job 'minAvailable' should not be greater than total replicas in tasks" in result.stderr


def test_update_rules(cluster: Cluster):
    assert kubectl_apply(cluster, job("vc-update")).returncode == 0
    scaled = stored(cluster, "vc-update")
    scaled["spec"]["tasks"][0]["replicas"] = 4
    scaled["spec"]["minAvailable"] = 3
    result = cluster.kubectl("replace", "-f", "-", input=json.dumps(scaled))
    assert result.returncode == 0, result.stderr

    moved = stored(cluster, "vc-update")
    moved["spec"]["queue"] = "elsewhere"
    moved["spec"]["tasks"][0]["minAvailable"] = 9
    result = cluster.kubectl("replace", "-f", "-", input=json.dumps(moved))
    assert f"spec.queue: Forbidden: {UPDATE_FORBIDDEN}" in result.stderr, result.stderr
    assert "'minAvailable' must be <= 'replicas' in task: worker" in result.stderr

    grown = stored(cluster, "vc-update")
    grown["spec"]["tasks"].append({**grown["spec"]["tasks"][0], "name": "extra"})
    result = cluster.kubectl("replace", "-f", "-", input=json.dumps(grown))
    assert "spec.tasks: Forbidden: job updates may not add or remove tasks" in result.stderr, result.stderr


# --- the queue check: the webhook of a default install, before and after Volcano's Queue CRD arrives ------


def queue(name: str, state: str, parent: str | None = None) -> dict:
    spec = {"weight": 1, **({"parent": parent} if parent else {})}
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
        "status": {"state": state},
    }


class DefaultInstallWebhook(WebhookProcess):
    """The session's webhook restarted on its port as a default install runs it: with the token of
    its own service account (RBAC from manifests/base), so the queue check has exactly the rights
    the base manifests give. Discovery is asked again every second, not every minute."""

    def __init__(self, base: WebhookProcess, kubeconfig: str) -> None:
        super().__init__(base.tls_dir, base.port)
        self.kubeconfig = kubeconfig
        self.log = base.tls_dir.parent / "webhook-default-install.log"

    def start(self) -> None:
        command = [sys.executable, "-m", "jobgate", "webhook", "--tls-dir", str(self.tls_dir)]
        command += ["--host", "127.0.0.1", "--port", str(self.port), "--kubeconfig", self.kubeconfig]
        env = {**os.environ, "JOBGATE_QUEUE_CRD_RECHECK_SECONDS": "1"}
        self.process = subprocess.Popen(command, cwd=REPO, stderr=self.log.open("ab"), env=env)
        self.wait_for_log(r"https://127\.0\.0\.1:")

    def wait_for_log(self, pattern: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(f"webhook exited: {self.log.read_text()[-2000:]}")
            if re.search(pattern, self.log.read_text()):
                return
            time.sleep(0.1)
        raise AssertionError(f"no {pattern!r} in the webhook's log: {self.log.read_text()[-2000:]}")


@pytest.fixture
def default_install_webhook(
    cluster: Cluster, webhook_process: WebhookProcess, tmp_path: Path
) -> Iterator[DefaultInstallWebhook]:
    apply_rbac_from(cluster, "manifests/base")
    kubeconfig = token_kubeconfig(cluster, "jobgate-webhook", tmp_path / "webhook.kubeconfig")
    # The webhook must first meet a cluster without Volcano.
    cluster.kubectl("delete", "crd", "queues.scheduling.volcano.sh", "--ignore-not-found", "--wait", check=True)
    webhook_process.stop()
    replacement = DefaultInstallWebhook(webhook_process, kubeconfig)
    replacement.start()
    wait_for_webhook(cluster)
    try:
        yield replacement
    finally:
        replacement.stop()
        webhook_process.start()
        wait_for_webhook(cluster)


def test_default_install_picks_up_the_queue_check_when_volcano_arrives(
    cluster: Cluster, default_install_webhook: DefaultInstallWebhook
):
    webhook = default_install_webhook
    # No Queue CRD: one line at start-up, and the webhook serves as usual without the check.
    webhook.wait_for_log(r"Volcano queue check off: the scheduling.volcano.sh Queue CRD is not served")
    assert webhook.log.read_text().count("Volcano queue check off") == 1
    assert kubectl_apply(cluster, job("vc-queue-before", queue="nowhere"), "--dry-run=server").returncode == 0

    install_queue_crd(cluster)
    queues = [
        queue("default", "Open"),
        queue("closed", "Closed"),
        queue("parent", "Open"),
        queue("child-a", "Open", "parent"),
        queue("child-b", "Open", "parent"),
    ]
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(queues), check=True)
    # Picked up without a restart, with the service account's own rights (list/watch queues).
    webhook.wait_for_log(r"Volcano queue check on")
    assert "Forbidden" not in webhook.log.read_text()

    assert kubectl_apply(cluster, job("vc-queue-ok", queue="child-a")).returncode == 0
    cases = {
        "missing": 'spec.queue: Not found: "missing": unable to find job queue',
        "closed": "can only submit job to queue with state `Open`, queue `closed` status is `Closed`",
        "parent": "can only submit job to leaf queue, queue `parent` has 2 child queues",
    }
    for name, fragment in cases.items():
        result = kubectl_apply(cluster, job(f"vc-queue-{name}", queue=name))
        assert fragment in result.stderr, result.stderr
    # The watch keeps the cache current: a queue created now is seen by the next review.
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(queue("late", "Open")), check=True)
    deadline = time.monotonic() + 20
    while True:
        result = kubectl_apply(cluster, job("vc-queue-late", queue="late"))
        if result.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert result.returncode == 0, result.stderr


def test_webhook_without_queue_crd_logs_that_the_check_is_off(webhook_process: WebhookProcess):
    assert re.search(r"Volcano queue check off", webhook_process.log.read_text())


def test_volcano_admission_only_overlay(cluster: Cluster):
    """The overlay for clusters running Volcano: webhook only, volcano family only, Volcano's CRD untouched."""
    overlay = str(REPO / "manifests/overlays/volcano-admission-only")
    documents = list(yaml.safe_load_all(cluster.kubectl("kustomize", overlay, check=True).stdout))
    crds = {d["metadata"]["name"] for d in documents if d["kind"] == "CustomResourceDefinition"}
    assert "jobs.batch.volcano.sh" not in crds
    assert "commands.bus.volcano.sh" not in crds  # Volcano's controller takes the commands
    (deployment,) = [d for d in documents if d["kind"] == "Deployment"]
    assert "--families=volcano" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    for configuration in (d for d in documents if d["kind"].endswith("WebhookConfiguration")):
        (rule,) = configuration["webhooks"][0]["rules"]
        assert (rule["apiGroups"], rule["resources"]) == (["batch.volcano.sh"], ["jobs"])
    # The queue reader comes with the base, so the overlay keeps it.
    readers = {d["kind"] for d in documents if d["metadata"]["name"] == QUEUE_READER}
    assert readers == {"ClusterRole", "ClusterRoleBinding"}
