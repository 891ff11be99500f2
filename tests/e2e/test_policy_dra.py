"""GPUs asked through DRA count against platform policy on a real apiserver (issue 43): the webhook
(``--kubeconfig``) watches ResourceClaimTemplates, ResourceClaims and DeviceClasses
(``resource.k8s.io/v1``, served by 1.36) and counts a pod's claims against the GPU limits."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import pytest
import yaml

from tests.e2e.conftest import Cluster, WebhookProcess, wait_for_webhook, wait_until

NAMESPACE = "policy-dra"
POLICY = {
    "apiVersion": "policy.jobgate.io/v1alpha1",
    "kind": "ClusterTrainingJobPolicy",
    "metadata": {"name": "e2e-dra-gpus"},
    "spec": {"namespaceSelector": {"matchLabels": {"e2e-dra": "yes"}}, "limits": {"maxGPUsPerJob": 8}},
}


def claim_template(name: str, exactly: dict) -> dict:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": exactly}]}}},
    }


FOUR_GPUS = claim_template("four-gpus", {"deviceClassName": "gpu.nvidia.com", "count": 4})
EVERY_GPU = claim_template("every-gpu", {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All"})


def tfjob(name: str, workers: int, template: str) -> dict:
    container = {
        "name": "tensorflow",
        "image": "registry.example.com/tf:2",
        "resources": {"claims": [{"name": "gpus"}]},
    }
    pod = {"containers": [container], "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": template}]}
    return {
        "apiVersion": "training.kubedl.io/v1alpha1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": workers, "template": {"spec": pod}}}},
    }


@pytest.fixture(scope="module")
def dra_cluster(cluster: Cluster, webhook_process: WebhookProcess) -> Iterator[Cluster]:
    """The session's webhook restarted with --kubeconfig (policy and DRA caches on), a namespace the
    policy selects, and a claim template asking for 4 GPUs."""
    served = cluster.kubectl("api-resources", "--api-group=resource.k8s.io", "-o", "name", check=True).stdout
    assert "resourceclaimtemplates.resource.k8s.io" in served, served
    webhook_process.stop()
    webhook_process.extra = ("--kubeconfig", cluster.kubeconfig)
    webhook_process.start()
    try:
        wait_until(lambda: "DRA claims counted" in webhook_process.log.read_text(), 60, message="DRA caches")
        wait_until(lambda: "platform policy on" in webhook_process.log.read_text(), 60, message="policy caches")
        wait_for_webhook(cluster)
        cluster.kubectl("create", "namespace", NAMESPACE, check=True)
        cluster.kubectl("label", "namespace", NAMESPACE, "e2e-dra=yes", check=True)
        objects = [POLICY, FOUR_GPUS, EVERY_GPU]
        cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects), check=True)
        yield cluster
    finally:
        cluster.kubectl("delete", "clustertrainingjobpolicy", POLICY["metadata"]["name"], "--ignore-not-found")
        cluster.kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=false")
        webhook_process.stop()
        webhook_process.extra = ()
        webhook_process.start()
        wait_for_webhook(cluster)


def dry_run(cluster: Cluster, obj: dict) -> subprocess.CompletedProcess[str]:
    return cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump(obj))


def until(cluster: Cluster, obj: dict, done: object) -> subprocess.CompletedProcess[str]:
    """The caches follow the cluster by watch: a moment after the objects are written."""
    deadline = time.monotonic() + 30
    while True:
        result = dry_run(cluster, obj)
        if done(result) or time.monotonic() > deadline:  # type: ignore[operator]
            return result
        time.sleep(0.5)


def test_a_claim_template_of_four_gpus_makes_four_replicas_exceed_an_eight_gpu_cap(dra_cluster: Cluster):
    refused = until(dra_cluster, tfjob("too-big", 4, "four-gpus"), lambda r: "e2e-dra-gpus" in r.stderr)
    assert refused.returncode != 0, refused.stdout
    assert 'The TFJob "too-big" is invalid' in refused.stderr
    assert "the job requests 16 GPUs at its largest (Worker 4 × 4), exceeds 8 GPUs per job" in refused.stderr
    admitted = dry_run(dra_cluster, tfjob("fits", 2, "four-gpus"))
    assert admitted.returncode == 0, admitted.stderr


def test_claims_that_cannot_be_counted_are_refused_with_the_reason(dra_cluster: Cluster):
    unbounded = until(dra_cluster, tfjob("every-gpu", 1, "every-gpu"), lambda r: "e2e-dra-gpus" in r.stderr)
    assert unbounded.returncode != 0
    assert "spec.tfReplicaSpecs[Worker].template.spec.resourceClaims[0].resourceClaimTemplateName" in unbounded.stderr
    assert "allocationMode: All" in unbounded.stderr and "cannot be bounded" in unbounded.stderr
    missing = dry_run(dra_cluster, tfjob("missing", 1, "no-such-template"))
    assert missing.returncode != 0
    assert f"ResourceClaimTemplate {NAMESPACE}/no-such-template is not known here" in missing.stderr
    # Created, it is counted (one device: within the cap).
    one = claim_template("no-such-template", {"deviceClassName": "gpu.nvidia.com"})
    dra_cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(one), check=True)
    admitted = until(dra_cluster, tfjob("missing", 1, "no-such-template"), lambda r: r.returncode == 0)
    assert admitted.returncode == 0, admitted.stderr
