"""manifests/overlays/jobset-admission-only on a real control plane, with JobSet's own CRD.

A control plane of its own (etcd + kube-apiserver, no node): JobSet v0.12.0's CRD read from its Go
module (``envtest.upstream.jobset_crd``: the module proxy, cached; nothing of JobSet's is vendored),
jobgate's webhook configurations rendered from the overlay and pointed at a local ``jobgate webhook
--families=jobset``. JobSet's controller and its own webhooks are not run here: what the apiserver
stores and refuses is JobSet's CRD (schema, defaults, CEL) and jobgate's webhooks, which default and
refuse as JobSet's webhook does.
"""

from __future__ import annotations

import copy
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import IN_CI, REPO, Cluster, admission_only_cluster, jobgate

pytestmark = pytest.mark.e2e

OVERLAY = REPO / "manifests/overlays/jobset-admission-only"
NAMESPACE = "team-js"


def rendered_overlay(cluster: Cluster) -> list[dict]:
    return [d for d in yaml.safe_load_all(cluster.kubectl("kustomize", str(OVERLAY), check=True).stdout) if d]


def jobset(name: str, *jobs: dict, **spec: object) -> dict:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"replicatedJobs": list(jobs), **spec},
    }


def replicated(name: str, **job_spec: object) -> dict:
    pod = {"spec": {"containers": [{"name": "main", "image": "busybox:1.36", "command": ["true"]}]}}
    return {"name": name, "template": {"spec": {"template": pod, **job_spec}}}


class Setup:
    def __init__(self, cluster: Cluster, log: Path) -> None:
        self.cluster = cluster
        self.log = log


@pytest.fixture(scope="module")
def jobset_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    from envtest.build import cached_binaries
    from envtest.upstream import UpstreamUnavailable, jobset_crd

    if cached_binaries() is None:
        pytest.skip("no cached etcd/kube-apiserver (run the e2e suite once to build them)")
    try:
        crd = jobset_crd()
    except UpstreamUnavailable as exc:
        if IN_CI:
            raise
        pytest.skip(f"JobSet's CRD is not available here: {exc}")

    def install(cluster: Cluster, rendered: list[dict]) -> None:
        cluster.kubectl("apply", "--server-side", "-f", str(crd), check=True)
        wait_established(cluster)

    work = tmp_path_factory.mktemp("jobset")
    # The plane's kubeconfig: the webhook reads a JobSet's existing PVCs from the API.
    with admission_only_cluster(work, OVERLAY, install, "--families=jobset", kubeconfig=True) as (cluster, webhook):
        cluster.kubectl("create", "namespace", NAMESPACE, check=True)
        setup = Setup(cluster, webhook.log)
        wait_for_webhook(setup)
        yield setup


def wait_established(cluster: Cluster, name: str = "jobsets.jobset.x-k8s.io", timeout: float = 60) -> None:
    """The CRD serves once Established (its status is written a moment after it is created)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = cluster.get_json("crd", name).get("status") or {}
        if any(c["type"] == "Established" and c["status"] == "True" for c in status.get("conditions") or []):
            return
        time.sleep(0.2)
    raise AssertionError(f"CRD {name} never became Established")


def wait_for_webhook(setup: Setup, timeout: float = 60) -> None:
    """Webhook configurations take effect a moment after they are written: until jobgate answers."""
    probe = json.dumps(jobset("probe", replicated("a"), managedBy="nope"))
    deadline = time.monotonic() + timeout
    result = None
    while time.monotonic() < deadline:
        result = setup.cluster.kubectl("create", "--dry-run=server", "-f", "-", input=probe)
        if "must be a domain-prefixed path" in result.stderr:
            return
        time.sleep(0.5)
    raise AssertionError(f"the webhook never answered: {result.stderr if result else ''}")


def apply(setup: Setup, obj: dict) -> subprocess.CompletedProcess[str]:
    return setup.cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=json.dumps(obj))


def stored(setup: Setup, name: str) -> dict:
    return setup.cluster.get_json("jobsets.jobset.x-k8s.io", name, "-n", NAMESPACE)


# --- the tests -------------------------------------------------------------------------------------


def test_the_overlay_ships_no_jobset_crd_no_controller_and_serves_jobsets_only(jobset_cluster: Setup):
    documents = rendered_overlay(jobset_cluster.cluster)
    crds = sorted(d["metadata"]["name"] for d in documents if d["kind"] == "CustomResourceDefinition")
    assert crds == [
        "clustertrainingjobpolicies.policy.jobgate.io",
        "trainingjobpolicies.policy.jobgate.io",
        "trainingjobpolicyexceptions.policy.jobgate.io",
    ]
    (deployment,) = [d for d in documents if d["kind"] == "Deployment"]
    assert "--families=jobset" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    for configuration in (d for d in documents if d["kind"].endswith("WebhookConfiguration")):
        (rule,) = configuration["webhooks"][0]["rules"]
        assert (rule["apiGroups"], rule["resources"]) == (["jobset.x-k8s.io"], ["jobsets"])


def test_a_created_jobset_is_stored_with_jobsets_defaults_as_offline(jobset_cluster: Setup, tmp_path):
    obj = jobset(
        "defaults",
        replicated("leader", parallelism=1, completions=1),
        replicated("workers", parallelism=2, completions=2),
        failurePolicy={"rules": [{"action": "FailJobSet"}]},
    )
    result = apply(jobset_cluster, obj)
    assert result.returncode == 0, result.stderr
    spec = stored(jobset_cluster, "defaults")["spec"]
    assert spec["successPolicy"] == {"operator": "All"}
    assert spec["startupPolicy"] == {"startupPolicyOrder": "AnyOrder"}
    assert spec["network"] == {"enableDNSHostnames": True, "publishNotReadyAddresses": True}
    assert spec["failurePolicy"]["rules"][0]["name"] == "failurePolicyRule0"
    assert spec["failurePolicy"]["restartStrategy"] == "Recreate"  # JobSet's CRD's
    for job in spec["replicatedJobs"]:
        assert (job["groupName"], job["replicas"]) == ("default", 1)  # JobSet's CRD's
        assert job["template"]["spec"]["completionMode"] == "Indexed"
        assert job["template"]["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"
    # Offline, the same stored spec (the apiserver's own defaults of the pod and Job templates
    # aside: JobSet's CRD carries the full batch/v1 schema without defaults, so there are none).
    path = tmp_path / "js.json"
    path.write_text(json.dumps(obj))
    offline = json.loads(jobgate("default", "-o", "json", str(path)).stdout)
    assert offline["spec"] == spec


def test_jobsets_webhook_rules_refuse_as_jobset_does(jobset_cluster: Setup):
    obj = jobset(
        "bad",
        {**replicated("workers"), "dependsOn": [{"name": "leader", "status": "Complete"}]},
        failurePolicy={"rules": [{"action": "RestartJobSet", "targetReplicatedJobs": ["driver"]}]},
    )
    result = apply(jobset_cluster, obj)
    assert result.returncode != 0
    assert 'The JobSet "bad" is invalid' in result.stderr
    for line in (
        "<nil>: Internal error: DependsOn can't be set for the first ReplicatedJob",
        "<nil>: Internal error: replicatedJob: workers cannot depend on replicatedJob: leader",
        "invalid replicatedJob name 'driver' in failure policy does not appear in .spec.ReplicatedJobs",
    ):
        assert line in result.stderr


def with_claim(name: str, claim_spec: dict, when_deleted: str) -> dict:
    """A JobSet whose replicated job mounts the volume claim template ``data`` (its PVC: data-<name>)."""
    job = replicated("workers")
    job["template"]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "data", "mountPath": "/data"}
    ]
    policy = {
        "templates": [{"metadata": {"name": "data"}, "spec": claim_spec}],
        "retentionPolicy": {"whenDeleted": when_deleted},
    }
    return jobset(name, job, volumeClaimPolicies=[policy])


def test_an_existing_pvc_is_checked_as_jobset_checks_it(jobset_cluster: Setup):
    """J18: a stored PVC <template>-<jobset> must have the template's spec and be retained. The stored
    PVC carries the apiserver's default volumeMode, so the template names it to match."""
    claim_spec = {
        "accessModes": ["ReadWriteOnce"],
        "volumeMode": "Filesystem",
        "resources": {"requests": {"storage": "1Gi"}},
    }
    other_spec = {**claim_spec, "resources": {"requests": {"storage": "2Gi"}}}
    for pvc_name, spec in (("data-pvc-other", other_spec), ("data-pvc-same", claim_spec)):
        pvc = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": pvc_name, "namespace": NAMESPACE},
            "spec": spec,
        }
        jobset_cluster.cluster.kubectl("create", "-f", "-", input=json.dumps(pvc), check=True)

    refused = apply(jobset_cluster, with_claim("pvc-other", claim_spec, "Retain"))
    assert refused.returncode != 0
    assert "spec.volumeClaimPolicies[0].template[0].spec: Invalid value: " in refused.stderr
    assert f"spec does not match existing PVC data-pvc-other in namespace {NAMESPACE}" in refused.stderr

    deleted = apply(jobset_cluster, with_claim("pvc-same", claim_spec, "Delete"))
    assert deleted.returncode != 0
    assert (
        'spec.volumeClaimPolicies[0].retentionPolicy.whenDeleted: Invalid value: "Delete": '
        "retentionPolicy must be retain when PVC exists"
    ) in deleted.stderr

    admitted = apply(jobset_cluster, with_claim("pvc-same", claim_spec, "Retain"))
    assert admitted.returncode == 0, admitted.stderr
    assert "not checked" not in admitted.stderr  # the webhook had a view of the PVCs: no warning

    # No PVC data-pvc-new: admitted, even with the defaulted retention (Delete).
    fresh = with_claim("pvc-new", claim_spec, "Delete")
    del fresh["spec"]["volumeClaimPolicies"][0]["retentionPolicy"]
    created = apply(jobset_cluster, fresh)
    assert created.returncode == 0, created.stderr
    assert stored(jobset_cluster, "pvc-new")["spec"]["volumeClaimPolicies"][0]["retentionPolicy"] == {
        "whenDeleted": "Delete"
    }


def test_a_template_jobset_would_fail_at_job_creation_is_refused_at_admission(jobset_cluster: Setup):
    """jobset PR #1211: JobSet v0.12.0 admits these and fails when its controller creates the Job."""
    pod = {"spec": {"restartPolicy": "Always", "containers": [{"name": "main", "image": "busybox"}]}}
    obj = jobset("late", {"name": "w", "template": {"spec": {"parallelism": 2, "template": pod}}})
    result = apply(jobset_cluster, obj)
    assert result.returncode != 0
    assert "spec.replicatedJobs[0].template.spec.completions: Required value: when completion mode is Indexed" in (
        result.stderr
    )
    assert 'restartPolicy: Unsupported value: "Always"' in result.stderr


def test_jobsets_crd_and_jobgate_agree_on_its_cel_rule(jobset_cluster: Setup, tmp_path):
    obj = jobset(
        "in-order",
        replicated("a"),
        {**replicated("b"), "dependsOn": [{"name": "a", "status": "Ready"}]},
        startupPolicy={"startupPolicyOrder": "InOrder"},
    )
    result = apply(jobset_cluster, obj)
    assert result.returncode != 0
    assert "StartupPolicy and DependsOn APIs are mutually exclusive" in result.stderr  # JobSet's CRD
    path = tmp_path / "js.json"
    path.write_text(json.dumps(obj))
    offline = jobgate("validate", str(path))
    assert offline.returncode == 1
    assert 'spec: Invalid value: "object": StartupPolicy and DependsOn APIs are mutually exclusive' in offline.stdout


def test_updates_are_refused_but_for_kueues_fields_while_suspended(jobset_cluster: Setup):
    obj = jobset("queued", replicated("w", parallelism=1, completions=1), suspend=True)
    assert apply(jobset_cluster, obj).returncode == 0
    current = stored(jobset_cluster, "queued")
    # Kueue admits it: nodeSelector and a label on the pod template, while it is still suspended.
    admitted = copy.deepcopy(current)
    pod = admitted["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod["spec"]["nodeSelector"] = {"gpu.example.com/model": "a100"}
    pod.setdefault("metadata", {})["labels"] = {"kueue.x-k8s.io/podset": "w"}
    result = jobset_cluster.cluster.kubectl("replace", "-f", "-", input=json.dumps(admitted))
    assert result.returncode == 0, result.stderr
    # Running: the pod template and the replicas are fixed.
    running = stored(jobset_cluster, "queued")
    running["spec"]["suspend"] = False
    assert jobset_cluster.cluster.kubectl("replace", "-f", "-", input=json.dumps(running)).returncode == 0
    changed = stored(jobset_cluster, "queued")
    changed["spec"]["replicatedJobs"][0]["replicas"] = 3
    result = jobset_cluster.cluster.kubectl("replace", "-f", "-", input=json.dumps(changed))
    assert result.returncode != 0
    assert "spec.replicatedJobs: Invalid value" in result.stderr and "field is immutable" in result.stderr


def test_the_generated_policies_count_a_jobsets_pods_and_gpus_in_the_apiserver(jobset_cluster: Setup, tmp_path):
    """manifests/policy-vaps for JobSet (the webhook-less platform policy): the apiserver totals replicas ×
    pods per Job and their GPUs as the webhook does, and refuses with the webhook's line."""
    cluster = jobset_cluster.cluster
    for crd in sorted((REPO / "manifests/base/crds").glob("policy.jobgate.io_*.yaml")):
        cluster.kubectl("apply", "--server-side", "-f", str(crd), check=True)
        wait_established(cluster, yaml.safe_load(crd.read_text())["metadata"]["name"])
    cluster.kubectl("apply", "--server-side", "-f", str(REPO / "manifests/policy-vaps/jobset.x-k8s.io_jobsets.yaml"),
                    check=True)  # fmt: skip
    policy = {
        "apiVersion": "policy.jobgate.io/v1alpha1",
        "kind": "ClusterTrainingJobPolicy",
        "metadata": {"name": "jobset-gpus"},
        "spec": {"enforcementAction": "Deny", "limits": {"maxGPUsPerJob": 64, "maxReplicasPerJob": 9}},
    }
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    cluster.kubectl("apply", "-f", str(path), check=True)
    job = yaml.safe_load((REPO / "examples/valid/jobset-pytorch.yaml").read_text())
    job["metadata"]["namespace"] = NAMESPACE
    job["metadata"]["name"] = "gpus"
    deadline = time.monotonic() + 60
    result = None
    while time.monotonic() < deadline:  # a policy and its params take effect a moment after they are written
        result = cluster.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(job))
        if "policy/max-gpus-per-job" in result.stderr:
            break
        time.sleep(0.5)
    assert result is not None and result.returncode != 0, result
    assert "ValidatingAdmissionPolicy 'jobgate-policy.cluster.deny.jobsets.jobset.x-k8s.io'" in result.stderr
    offline_job = tmp_path / "job.yaml"
    offline_job.write_text(yaml.safe_dump(job))
    offline = jobgate("validate", "--policies", str(path), str(offline_job))
    (line,) = [x for x in offline.stdout.splitlines() if "max-gpus-per-job" in x]
    # The webhook's line (its field path, value and detail) is the policy's message.
    assert line.split("error: ", 1)[1].split(" (ClusterTrainingJobPolicy")[0] in result.stderr
    # 9 pods: within maxReplicasPerJob; one GPU per pod fits 64.
    for replicated_job in job["spec"]["replicatedJobs"]:
        replicated_job["template"]["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] = {
            "nvidia.com/gpu": 1
        }
    result = cluster.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(job))
    assert result.returncode == 0, result.stderr
    cluster.kubectl("delete", "clustertrainingjobpolicy", "jobset-gpus", check=True)


def test_the_generated_policy_defaults_reach_every_replicated_jobs_pod_template(jobset_cluster: Setup, tmp_path):
    """manifests/policy-maps for JobSet (MutatingAdmissionPolicy v1): the Kueue queue label and a pod
    priority class default written by the apiserver as the webhook writes them (in each Job template's
    pod template)."""
    cluster = jobset_cluster.cluster
    for crd in sorted((REPO / "manifests/base/crds").glob("policy.jobgate.io_*.yaml")):
        cluster.kubectl("apply", "--server-side", "-f", str(crd), check=True)
        wait_established(cluster, yaml.safe_load(crd.read_text())["metadata"]["name"])
    cluster.kubectl("apply", "--server-side", "-f", str(REPO / "manifests/policy-maps/jobset.x-k8s.io_jobsets.yaml"),
                    check=True)  # fmt: skip
    policy = {
        "apiVersion": "policy.jobgate.io/v1alpha1",
        "kind": "ClusterTrainingJobPolicy",
        "metadata": {"name": "jobset-defaults"},
        "spec": {"defaults": {"kueueQueueName": "lq-team", "priorityClassName": "batch-low"}},
    }
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    cluster.kubectl("apply", "-f", str(path), check=True)
    job = jobset("with-defaults", replicated("a"), replicated("b", parallelism=2, completions=2))
    expected = json.loads(jobgate("default", "-o", "json", "--policies", str(path), "-", input=json.dumps(job)).stdout)
    deadline = time.monotonic() + 60
    written = None
    while time.monotonic() < deadline:  # the policy and its params take effect a moment after they are written
        result = cluster.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(job))
        assert result.returncode == 0, result.stderr
        written = json.loads(result.stdout)
        if (written["metadata"].get("labels") or {}).get("kueue.x-k8s.io/queue-name") == "lq-team":
            break
        time.sleep(0.5)
    assert written is not None
    assert written["metadata"]["labels"] == expected["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "lq-team"}
    for mine, theirs in zip(written["spec"]["replicatedJobs"], expected["spec"]["replicatedJobs"], strict=True):
        pod = mine["template"]["spec"]["template"]["spec"]
        assert pod["priorityClassName"] == theirs["template"]["spec"]["template"]["spec"]["priorityClassName"]
        assert pod["priorityClassName"] == "batch-low"
    cluster.kubectl("delete", "clustertrainingjobpolicy", "jobset-defaults", check=True)
