"""require.fitsQueue on a real apiserver (issue 45): the webhook (``--kubeconfig``) watches Kueue's
LocalQueues, ClusterQueues, ResourceFlavors and Cohorts (``kueue.x-k8s.io/v1beta2``) and Volcano's Queues
from their own CRDs (read from their Go modules at the versions envtest/versions.py pins: Kueue
KUEUE_VERSION, Volcano VOLCANO_VERSION; see envtest/upstream.py), and refuses a job its queue can never
run, through ``kubectl``. No Kueue or Volcano controller runs: the objects are written as an
administrator writes them (a Volcano Queue's state as its controller would)."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import IN_CI, KUBEFLOW_TEST_CRDS, Cluster, WebhookProcess, wait_for_webhook, wait_until

pytestmark = pytest.mark.e2e

NAMESPACE = "policy-queuefit"
KUEUE = "kueue.x-k8s.io/v1beta2"


def queue_crds() -> list[Path]:
    """Kueue's queue CRDs and Volcano's Queue CRD from the Go module cache (downloaded once through
    the module proxy), and a PaddleJob CRD. Without the proxy the tests skip, except under CI."""
    from envtest.upstream import UpstreamUnavailable, kueue_queue_crds, volcano_queue_crd

    try:
        upstream = [*kueue_queue_crds(), volcano_queue_crd()]
    except UpstreamUnavailable as exc:
        if IN_CI:
            raise
        pytest.skip(f"Kueue's or Volcano's queue CRDs cannot be had from their Go modules here: {exc}")
    # PaddleJob: a kind Kueue integrates that no KubeDL CRD shares a plural with (the shared cluster's).
    return [*upstream, KUBEFLOW_TEST_CRDS / "kubeflow.org_paddlejobs.yaml"]


POLICY = {
    "apiVersion": "policy.jobgate.io/v1alpha1",
    "kind": "ClusterTrainingJobPolicy",
    "metadata": {"name": "e2e-fits-queue"},
    "spec": {"namespaceSelector": {"matchLabels": {"e2e-queuefit": "yes"}}, "require": {"fitsQueue": True}},
}


def gpu_quota(nominal: int, **limits: int) -> dict:
    return {"name": "nvidia.com/gpu", "nominalQuota": nominal, **limits}


def cluster_queue(name: str, gpus: dict) -> dict:
    return {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "cohortName": "e2e-org",
            "resourceGroups": [
                {"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "e2e-a100", "resources": [gpus]}]}
            ],
        },
    }


def volcano_queue(name: str, gpus: int, parent: str | None = None) -> dict:
    spec: dict = {"capability": {"nvidia.com/gpu": gpus}, "weight": 1}
    if parent:
        spec["parent"] = parent
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}, "spec": spec}


KUEUE_OBJECTS = [
    {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "e2e-a100"}, "spec": {}},
    cluster_queue("e2e-gpu-cq", gpu_quota(16, borrowingLimit=8)),
    cluster_queue("e2e-other-cq", gpu_quota(16)),
    {
        "apiVersion": KUEUE,
        "kind": "LocalQueue",
        "metadata": {"name": "team-a", "namespace": NAMESPACE},
        "spec": {"clusterQueue": "e2e-gpu-cq"},
    },
]
VOLCANO_QUEUES = [volcano_queue("e2e-research", 64, parent="e2e-org"), volcano_queue("e2e-org", 16)]


def paddlejob(name: str, workers: int, queue: str = "team-a") -> dict:
    def template() -> dict:
        container = {"name": "paddle", "image": "paddle:2", "resources": {"limits": {"nvidia.com/gpu": 8}}}
        return {"spec": {"containers": [container]}}

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PaddleJob",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"kueue.x-k8s.io/queue-name": queue}},
        "spec": {
            "paddleReplicaSpecs": {
                "Master": {"replicas": 1, "template": template()},
                "Worker": {"replicas": workers, "template": template()},
            }
        },
    }


def vcjob(name: str, workers: int) -> dict:
    container = {"name": "worker", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": 8}}}
    task = {"name": "worker", "replicas": workers, "template": {"spec": {"containers": [container]}}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"queue": "e2e-research", "minAvailable": workers, "tasks": [task]},
    }


@pytest.fixture(scope="module")
def queue_cluster(cluster: Cluster, webhook_process: WebhookProcess) -> Iterator[Cluster]:
    """Kueue's and Volcano's queue CRDs and a PaddleJob CRD installed, the session's webhook restarted with
    --kubeconfig (its queue informers on), the queues and the policy written."""
    for crd in queue_crds():
        cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(crd), check=True)
    for name in ("localqueues", "clusterqueues", "resourceflavors", "cohorts"):
        cluster.kubectl("wait", "--for=condition=Established", f"crd/{name}.kueue.x-k8s.io", check=True)
    cluster.kubectl("wait", "--for=condition=Established", "crd/queues.scheduling.volcano.sh", check=True)
    cluster.kubectl("wait", "--for=condition=Established", "crd/paddlejobs.kubeflow.org", check=True)
    webhook_process.stop()
    webhook_process.extra = ("--kubeconfig", cluster.kubeconfig)
    webhook_process.start()
    try:
        log = webhook_process.log
        wait_until(lambda: "watching the queues of Kueue and Volcano" in log.read_text(), 60, message="queue informers")
        wait_until(lambda: "platform policy on" in log.read_text(), 60, message="policy caches")
        wait_for_webhook(cluster)
        cluster.kubectl("create", "namespace", NAMESPACE, check=True)
        cluster.kubectl("label", "namespace", NAMESPACE, "e2e-queuefit=yes", check=True)
        objects = [POLICY, *KUEUE_OBJECTS, *VOLCANO_QUEUES]
        cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects), check=True)
        for queue in VOLCANO_QUEUES:
            # As Volcano's queue controller writes it on an idle queue: the CRD requires `allocated`.
            status = json.dumps({"status": {"state": "Open", "allocated": {}}})
            name = queue["metadata"]["name"]
            patch = (
                "patch",
                "queues.scheduling.volcano.sh",
                name,
                "--subresource=status",
                "--type=merge",
                "-p",
                status,
            )
            cluster.kubectl(*patch, check=True)
        yield cluster
    finally:
        cluster.kubectl("delete", "clustertrainingjobpolicy", POLICY["metadata"]["name"], "--ignore-not-found")
        cluster.kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=false")
        for obj in [*KUEUE_OBJECTS[:3], *VOLCANO_QUEUES]:
            kind = obj["kind"].lower() + "s." + obj["apiVersion"].split("/")[0]
            cluster.kubectl("delete", kind, obj["metadata"]["name"], "--ignore-not-found")
        webhook_process.stop()
        webhook_process.extra = ()
        webhook_process.start()
        wait_for_webhook(cluster)


def dry_run(cluster: Cluster, obj: dict) -> subprocess.CompletedProcess[str]:
    return cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump(obj))


def until(cluster: Cluster, obj: dict, done: Callable[[subprocess.CompletedProcess[str]], bool]):
    """The caches follow the cluster by watch: a moment after the objects are written."""
    deadline = time.monotonic() + 30
    while True:
        result = dry_run(cluster, obj)
        if done(result) or time.monotonic() > deadline:
            return result
        time.sleep(0.5)


def test_a_paddlejob_its_cluster_queue_can_never_hold_is_refused(queue_cluster: Cluster):
    refused = until(queue_cluster, paddlejob("too-big", 3), lambda r: "can never be admitted" in r.stderr)
    assert refused.returncode != 0, refused.stdout
    assert 'The PaddleJob "too-big" is invalid' in refused.stderr
    assert 'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "team-a"' in refused.stderr
    assert f"LocalQueue {NAMESPACE}/team-a (ClusterQueue e2e-gpu-cq)" in refused.stderr
    assert "it asks nvidia.com/gpu 32 (Master 1 × 8, Worker 3 × 8)" in refused.stderr
    assert "the most the ClusterQueue can ever give is 24" in refused.stderr
    assert "e2e-a100: nvidia.com/gpu at most 24 (nominalQuota 16, borrowingLimit 8, cohort e2e-org)" in refused.stderr
    # Within nominal + borrowing limit (borrowing from the other ClusterQueue of the cohort): admitted.
    admitted = dry_run(queue_cluster, paddlejob("fits", 2))
    assert admitted.returncode == 0, admitted.stderr


def test_a_missing_or_stopped_queue_is_misconfigured(queue_cluster: Cluster):
    missing = dry_run(queue_cluster, paddlejob("lost", 1, queue="no-such-queue"))
    assert missing.returncode != 0
    assert f"misconfigured: LocalQueue {NAMESPACE}/no-such-queue does not exist" in missing.stderr
    stop = json.dumps({"spec": {"stopPolicy": "Hold"}})
    queue_cluster.kubectl("patch", "clusterqueues.kueue.x-k8s.io", "e2e-gpu-cq", "--type=merge", "-p", stop, check=True)
    try:
        stopped = until(queue_cluster, paddlejob("held", 1), lambda r: "is stopped" in r.stderr)
        assert stopped.returncode != 0
        assert "misconfigured: ClusterQueue e2e-gpu-cq of LocalQueue" in stopped.stderr
        assert "is stopped (stopPolicy Hold)" in stopped.stderr
    finally:
        resume = json.dumps({"spec": {"stopPolicy": "None"}})
        queue_cluster.kubectl("patch", "clusterqueues.kueue.x-k8s.io", "e2e-gpu-cq", "--type=merge", "-p", resume)
    admitted = until(queue_cluster, paddlejob("held", 1), lambda r: r.returncode == 0)
    assert admitted.returncode == 0, admitted.stderr


def test_a_volcano_job_over_its_parent_queues_capability_is_refused(queue_cluster: Cluster):
    refused = until(queue_cluster, vcjob("too-big", 3), lambda r: "can never run" in r.stderr)
    assert refused.returncode != 0, refused.stdout
    assert 'spec.queue: Invalid value: "e2e-research"' in refused.stderr
    assert "Volcano queue e2e-research" in refused.stderr and "nvidia.com/gpu 24" in refused.stderr
    assert "the most the queue can ever give is 16 (the capability of its parent queue e2e-org)" in refused.stderr
    admitted = dry_run(queue_cluster, vcjob("fits", 2))
    assert admitted.returncode == 0, admitted.stderr


def test_policy_explain_reads_the_queues_from_the_cluster(queue_cluster: Cluster):
    from tests.e2e.conftest import jobgate

    shown = jobgate("policy", "explain", "--namespace", NAMESPACE, "--kubeconfig", queue_cluster.kubeconfig)
    assert shown.returncode == 0, shown.stderr
    assert "the job must fit its queue (fitsQueue)" in shown.stdout
    assert f"LocalQueue {NAMESPACE}/team-a → ClusterQueue e2e-gpu-cq (cohort e2e-org)" in shown.stdout
    assert "flavor e2e-a100: nvidia.com/gpu 24" in shown.stdout
    assert "Volcano Queue e2e-research: nvidia.com/gpu 16 (queue e2e-org)" in shown.stdout
