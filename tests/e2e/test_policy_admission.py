"""Platform policy on a real apiserver: the policy CRDs refuse malformed policies, the webhook
(watching policies and namespaces through ``--kubeconfig``) defaults, denies, warns and records,
``jobgate validate|default --policies --namespaces`` on the exported objects gives the same verdict
and stored object, and a namespace holding a policy deletes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import (
    IN_CI,
    Cluster,
    ControllerProcess,
    WebhookProcess,
    controller_namespace,
    wait_for_webhook,
    wait_until,
)

REPO = Path(__file__).resolve().parents[2]
RESEARCH = "policy-research"
TEAM = "policy-team"

CLUSTER_POLICY = {
    "apiVersion": "policy.jobgate.io/v1alpha1",
    "kind": "ClusterTrainingJobPolicy",
    "metadata": {"name": "e2e-research-gpus"},
    "spec": {
        "namespaceSelector": {"matchLabels": {"tier": "research"}},
        "limits": {"maxGPUsPerJob": 4, "maxGPUsPerPod": 2},
        "require": {"labels": [{"key": "team"}]},
    },
}
TEAM_POLICY = {
    "apiVersion": "policy.jobgate.io/v1alpha1",
    "kind": "TrainingJobPolicy",
    "metadata": {"name": "team-defaults", "namespace": TEAM},
    "spec": {
        "defaults": {"queue": "team-q", "labels": {"team": "team"}, "ttlSecondsAfterFinished": 3600},
        "limits": {"maxReplicasPerRole": 2},
        "enforcementAction": "Warn",
    },
}


def tfjob(namespace: str, name: str, *, gpus: int = 1, workers: int = 1, labels: dict | None = None) -> dict:
    container = {
        "name": "tensorflow",
        "image": "registry.example.com/tf:2",
        "resources": {"limits": {"nvidia.com/gpu": gpus}},
    }
    return {
        "apiVersion": "training.kubedl.io/v1alpha1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {
            "tfReplicaSpecs": {"Worker": {"replicas": workers, "template": {"spec": {"containers": [container]}}}}
        },
    }


def jobgate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "jobgate", *args], capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def policy_cluster(cluster: Cluster, webhook_process: WebhookProcess) -> Iterator[Cluster]:
    """The session's webhook restarted with --kubeconfig (its policy caches on), and two namespaces."""
    webhook_process.stop()
    webhook_process.extra = ("--kubeconfig", cluster.kubeconfig)
    webhook_process.start()
    try:
        wait_until(lambda: "platform policy on" in webhook_process.log.read_text(), 60, message="policy caches")
        wait_for_webhook(cluster)
        cluster.kubectl("create", "namespace", RESEARCH, check=True)
        cluster.kubectl("label", "namespace", RESEARCH, "tier=research", check=True)
        cluster.kubectl("create", "namespace", TEAM, check=True)
        cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([CLUSTER_POLICY, TEAM_POLICY]), check=True)
        yield cluster
    finally:
        cluster.kubectl("delete", "clustertrainingjobpolicy", CLUSTER_POLICY["metadata"]["name"], "--ignore-not-found")
        webhook_process.stop()
        webhook_process.extra = ()
        webhook_process.start()
        wait_for_webhook(cluster)


def apply(cluster: Cluster, obj: dict, *flags: str) -> subprocess.CompletedProcess[str]:
    return cluster.kubectl("apply", *flags, "-f", "-", input=yaml.safe_dump(obj))


def until_denied(cluster: Cluster, obj: dict, fragment: str) -> subprocess.CompletedProcess[str]:
    """The webhook's caches follow the policies by watch: a moment after they are written."""
    deadline = time.monotonic() + 30
    while True:
        result = apply(cluster, obj, "--dry-run=server")
        if (result.returncode != 0 and fragment in result.stderr) or time.monotonic() > deadline:
            return result
        time.sleep(0.5)


def exported(cluster: Cluster, tmp_path: Path) -> list[str]:
    """The cluster's policies and namespaces as files, as a user exports them for CI."""
    policies = cluster.kubectl("get", "clustertrainingjobpolicies,trainingjobpolicies", "-A", "-o", "yaml", check=True)
    namespaces = cluster.kubectl("get", "namespaces", "-o", "yaml", check=True)
    (tmp_path / "policies.yaml").write_text(policies.stdout)
    (tmp_path / "namespaces.yaml").write_text(namespaces.stdout)
    return ["--policies", str(tmp_path / "policies.yaml"), "--namespaces", str(tmp_path / "namespaces.yaml")]


def test_a_job_over_the_limit_is_refused_at_apply_and_offline_alike(policy_cluster: Cluster, tmp_path: Path):
    job = tfjob(RESEARCH, "too-big", gpus=2, workers=3, labels={"team": "x"})
    refused = until_denied(policy_cluster, job, "e2e-research-gpus")
    assert refused.returncode != 0
    assert 'The TFJob "too-big" is invalid' in refused.stderr
    assert "exceeds 4 GPUs per job (ClusterTrainingJobPolicy e2e-research-gpus)" in refused.stderr
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
    offline = jobgate("validate", "-o", "json", *exported(policy_cluster, tmp_path), str(tmp_path / "job.yaml"))
    assert offline.returncode == 1, offline.stderr
    fields = [e["field"] for d in json.loads(offline.stdout)["documents"] for e in d["errors"]]
    assert fields == ["spec"]
    assert "spec: Invalid value" in refused.stderr
    # The same job in a namespace the policy does not select is admitted.
    assert apply(policy_cluster, tfjob(TEAM, "too-big", gpus=2, workers=1), "--dry-run=server").returncode == 0


def test_one_export_of_the_cluster_gives_the_offline_verdict(policy_cluster: Cluster, tmp_path: Path):
    """`--cluster-objects` with one `kubectl get ... -A -o yaml` (a `kind: List` of every kind the
    checks read, DRA's included): the cluster's verdict; without the namespace's labels, never
    "admitted"."""
    job = tfjob(RESEARCH, "too-big-export", gpus=2, workers=3, labels={"team": "x"})
    refused = until_denied(policy_cluster, job, "e2e-research-gpus")
    assert refused.returncode != 0
    kinds = (
        "namespaces,resourceclaimtemplates,resourceclaims,deviceclasses,clustertrainingjobpolicies,trainingjobpolicies"
    )
    export = policy_cluster.kubectl("get", kinds, "-A", "-o", "yaml", check=True)
    (tmp_path / "cluster.yaml").write_text(export.stdout)
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
    offline = jobgate("validate", "--cluster-objects", str(tmp_path / "cluster.yaml"), str(tmp_path / "job.yaml"))
    assert offline.returncode == 1, offline.stdout + offline.stderr
    assert "exceeds 4 GPUs per job (ClusterTrainingJobPolicy e2e-research-gpus)" in offline.stdout
    policies = policy_cluster.kubectl("get", "clustertrainingjobpolicies,trainingjobpolicies", "-A", "-o", "yaml")
    (tmp_path / "policies.yaml").write_text(policies.stdout)
    small = tfjob(RESEARCH, "small-export", gpus=1, workers=1, labels={"team": "x"})
    (tmp_path / "small.yaml").write_text(yaml.safe_dump(small))
    unknown = jobgate("validate", "--policies", str(tmp_path / "policies.yaml"), str(tmp_path / "small.yaml"))
    assert unknown.returncode == 1 and "[policy/namespace-labels-unknown]" in unknown.stdout, unknown.stdout


def test_a_required_label_is_refused_with_its_field(policy_cluster: Cluster):
    refused = until_denied(policy_cluster, tfjob(RESEARCH, "unlabelled"), "metadata.labels[team]")
    assert "metadata.labels[team]: Required value" in refused.stderr


def until_admitted(cluster: Cluster, obj: dict) -> subprocess.CompletedProcess[str]:
    deadline = time.monotonic() + 30
    while True:
        result = apply(cluster, obj, "--dry-run=server")
        if result.returncode == 0 or time.monotonic() > deadline:
            return result
        time.sleep(0.5)


def test_a_relabelled_namespace_is_judged_by_its_new_labels(policy_cluster: Cluster):
    """The webhook remembers each namespace's labels per version of the Namespace: a relabel reaches
    the next review by watch, in both directions."""
    namespace = "policy-relabel"
    policy_cluster.kubectl("create", "namespace", namespace, check=True)
    try:
        job = tfjob(namespace, "big", gpus=2, workers=3, labels={"team": "x"})
        assert until_admitted(policy_cluster, job).returncode == 0
        policy_cluster.kubectl("label", "namespace", namespace, "tier=research", check=True)
        refused = until_denied(policy_cluster, job, "e2e-research-gpus")
        assert "exceeds 4 GPUs per job (ClusterTrainingJobPolicy e2e-research-gpus)" in refused.stderr
        policy_cluster.kubectl("label", "namespace", namespace, "tier-", check=True)
        admitted = until_admitted(policy_cluster, job)
        assert admitted.returncode == 0, admitted.stderr
    finally:
        policy_cluster.kubectl("delete", "namespace", namespace, "--wait=false")


def test_defaults_are_stored_as_jobgate_default_prints_them(policy_cluster: Cluster, tmp_path: Path):
    job = tfjob(TEAM, "defaulted")
    deadline = time.monotonic() + 30
    while True:  # until the webhook's cache holds the team's policy
        created = apply(policy_cluster, job)
        assert created.returncode == 0, created.stderr
        stored = policy_cluster.get_json("tfjob.training.kubedl.io", "defaulted", "-n", TEAM)
        if stored["spec"].get("schedulingPolicy", {}).get("queue") == "team-q" or time.monotonic() > deadline:
            break
        policy_cluster.kubectl("delete", "tfjob.training.kubedl.io", "defaulted", "-n", TEAM, "--wait", check=True)
        time.sleep(0.5)
    assert stored["spec"]["schedulingPolicy"]["queue"] == "team-q"
    assert stored["metadata"]["labels"]["team"] == "team"
    assert stored["spec"]["ttlSecondsAfterFinished"] == 3600
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
    offline = jobgate("default", "-o", "json", *exported(policy_cluster, tmp_path), str(tmp_path / "job.yaml"))
    assert offline.returncode == 0, offline.stderr
    printed = json.loads(offline.stdout)
    assert printed["spec"] == stored["spec"]
    assert printed["metadata"]["labels"] == stored["metadata"]["labels"]


def test_a_warn_policy_admits_with_a_warning(policy_cluster: Cluster):
    job = tfjob(TEAM, "wide", workers=3)
    deadline = time.monotonic() + 30
    while True:
        result = apply(policy_cluster, job, "--dry-run=server")
        if "TrainingJobPolicy policy-team/team-defaults" in result.stderr or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert result.returncode == 0, result.stderr
    assert "Warning:" in result.stderr
    assert "TrainingJobPolicy policy-team/team-defaults" in result.stderr
    # A dry run writes nothing.
    assert policy_cluster.kubectl("get", "tfjob.training.kubedl.io", "wide", "-n", TEAM).returncode != 0


@pytest.mark.parametrize(
    ("limits", "fragment"),
    [
        ({"gpuResources": [{"name": "nvidia.com/gpu", "weight": -1}]}, "weight"),
        ({"gpuDeviceClasses": [{"name": "GPU.nvidia.com"}]}, "DeviceClass name"),
        ({"gpuDeviceClasses": [{"name": "gpu.nvidia.com"}, {"name": "gpu.nvidia.com", "weight": 2}]}, "Duplicate"),
        ({"maxGPUsPerJob": -1}, "maxGPUsPerJob"),
        ({"maxGPUsPerPod": 8, "maxGPUsPerJob": 4}, "maxGPUsPerPod"),
    ],
)
def test_a_malformed_policy_is_refused_by_its_crd(policy_cluster: Cluster, limits: dict, fragment: str):
    bad = {**CLUSTER_POLICY, "metadata": {"name": "malformed"}, "spec": {"limits": limits}}
    result = apply(policy_cluster, bad)
    assert result.returncode != 0
    assert fragment in result.stderr


def test_weight_zero_takes_a_name_off_the_built_in_list_and_is_accepted(policy_cluster: Cluster):
    limits = {
        "gpuResources": [{"name": "nvidia.com/gpu", "weight": 0}],
        "gpuDeviceClasses": [{"name": "gpu.*", "weight": 0.5}, {"name": "gpu.nvidia.com", "weight": 0}],
    }
    valid = {**CLUSTER_POLICY, "metadata": {"name": "weights"}, "spec": {"limits": limits}}
    result = apply(policy_cluster, valid, "--dry-run=server")
    assert result.returncode == 0, result.stderr


def test_a_namespace_holding_a_policy_deletes(policy_cluster: Cluster):
    namespace = "policy-doomed"
    policy_cluster.kubectl("create", "namespace", namespace, check=True)
    policy = {**TEAM_POLICY, "metadata": {"name": "doomed", "namespace": namespace}}
    apply(policy_cluster, policy).check_returncode()
    policy_cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=True)
    wait_until(
        lambda: policy_cluster.kubectl("get", "namespace", namespace).returncode != 0, 90, message="namespace deleted"
    )


AUDITED = "policy-audited"


def test_a_tightened_policy_lists_the_stored_jobs_it_now_refuses(policy_cluster: Cluster, tmp_path: Path):
    """The controller's audit: the policy's status and an Event name the job, and the job's own
    controller (and its users' updates) go on as before."""
    kubeconfig = controller_namespace(policy_cluster, AUDITED, tmp_path)
    job = tfjob(AUDITED, "grown", gpus=1, workers=2)
    apply(policy_cluster, job).check_returncode()
    controller = ControllerProcess(kubeconfig, AUDITED, tmp_path / "controller.log", "--policy-audit-interval", "2")
    try:
        wait_until(controller.is_leader, 30, message="controller leadership")
        tightened = {
            **TEAM_POLICY,
            "metadata": {"name": "tightened", "namespace": AUDITED},
            "spec": {"limits": {"maxGPUsPerJob": 1}},
        }
        apply(policy_cluster, tightened).check_returncode()

        def status() -> dict:
            got = policy_cluster.get_json("trainingjobpolicy", "tightened", "-n", AUDITED)
            return got.get("status") or {}

        wait_until(lambda: status().get("totalViolations") == 1, 60, message="the audit's status")
        assert [v["name"] for v in status()["violations"]] == ["grown"]
        assert (
            "exceeds 1 GPUs per job (TrainingJobPolicy policy-audited/tightened)"
            in status()["violations"][0]["message"]
        )

        def violation_events() -> list[dict]:
            listed = policy_cluster.get_json("events", "-n", AUDITED, "--field-selector", "reason=PolicyViolation")
            return [e for e in listed["items"] if e["involvedObject"]["name"] == "grown"]

        wait_until(lambda: len(violation_events()) == 1, 30, message="a PolicyViolation event")
        # The job's controller keeps running it: its pods exist, and a user's label update passes.
        wait_until(
            lambda: len(policy_cluster.get_json("pods", "-n", AUDITED)["items"]) == 2, 60, message="the job's pods"
        )
        labelled = policy_cluster.kubectl("label", "tfjob.training.kubedl.io", "grown", "-n", AUDITED, "seen=yes")
        assert labelled.returncode == 0, labelled.stderr
        # A new job over the limit is refused.
        refused = until_denied(policy_cluster, tfjob(AUDITED, "new", gpus=1, workers=2), "tightened")
        assert refused.returncode != 0
    finally:
        controller.stop()


UPDATED = "policy-update"


def test_an_update_of_a_job_that_already_violates_is_judged_on_what_it_makes_worse(policy_cluster: Cluster):
    """existingViolations: Allow lets a job stored before the policy take a label, refuses it more
    GPUs; Deny refuses even the label."""
    policy_cluster.kubectl("create", "namespace", UPDATED, check=True)
    stored = tfjob(UPDATED, "before", gpus=2, workers=2)
    apply(policy_cluster, stored).check_returncode()
    policy = {
        **TEAM_POLICY,
        "metadata": {"name": "update-cap", "namespace": UPDATED},
        "spec": {"limits": {"maxGPUsPerJob": 2}},
    }
    apply(policy_cluster, policy).check_returncode()
    named = "(TrainingJobPolicy policy-update/update-cap)"
    assert named in until_denied(policy_cluster, tfjob(UPDATED, "probe", gpus=2, workers=2), named).stderr
    labelled = json.loads(json.dumps(stored))
    labelled["metadata"]["labels"] = {"touched": "yes"}
    result = apply(policy_cluster, labelled)
    assert result.returncode == 0, result.stderr
    worse = json.loads(json.dumps(labelled))
    worse["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 3
    result = apply(policy_cluster, worse)
    assert result.returncode != 0 and named in result.stderr
    assert "the job requests 6 GPUs at its largest" in result.stderr
    strict = {**policy, "spec": {**policy["spec"], "existingViolations": "Deny"}}
    apply(policy_cluster, strict).check_returncode()
    relabelled = json.loads(json.dumps(labelled))
    relabelled["metadata"]["labels"] = {"touched": "again"}
    result = until_denied(policy_cluster, relabelled, named)
    assert result.returncode != 0 and "the job requests 4 GPUs at its largest" in result.stderr


def _volcano_crd(source: str) -> str:
    if source == "jobgate":
        return (REPO / "manifests" / "base" / "crds" / "batch.volcano.sh_jobs.yaml").read_text()
    from envtest.upstream import UpstreamUnavailable, volcano_job_crd

    try:
        return volcano_job_crd().read_text()
    except UpstreamUnavailable as exc:
        if IN_CI:
            raise
        pytest.skip(f"Volcano's own CRD cannot be had here: {exc}")


VOLCANO_JOB_CRD = "jobs.batch.volcano.sh"


def _crd_in_force(cluster: Cluster) -> str:
    """Which Volcano Job CRD the apiserver applies: "volcano" (Volcano's own: no spec.networkTopology,
    which strict field validation refuses), "jobgate" (the base's: its own rule refuses duplicate
    task names, at the list) or "session" (this session's, the models' schema without rules: the
    webhook refuses them, at the duplicate's name)."""
    probe = next(
        d for d in yaml.safe_load_all((REPO / "examples/invalid/volcano-duplicate-task.yaml").read_text()) if d
    )
    probe["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
    result = cluster.kubectl(
        "create", "--dry-run=server", "--validate=strict", "-n", "default", "-f", "-", input=yaml.safe_dump(probe)
    )
    if 'unknown field "spec.networkTopology"' in result.stderr:
        return "volcano"
    if "spec.tasks[1].name: Duplicate value" in result.stderr:
        return "session"
    return "jobgate" if "duplicated task name" in result.stderr else f"unknown: {result.stderr.strip()}"


def _install_crd(cluster: Cluster, crd: dict, expected: str) -> None:
    """The Volcano Job CRD replaced whole (an apply would merge schemas where other managers own
    fields), and waited for until the apiserver applies it."""
    cluster.kubectl("replace", "-f", "-", input=json.dumps(crd), check=True)
    wait_until(lambda: _crd_in_force(cluster) == expected, 60, message=f"the {expected} Volcano Job CRD in force")


def _session_crd(cluster: Cluster) -> dict:
    crd = cluster.get_json("crd", VOLCANO_JOB_CRD)
    crd.pop("status", None)
    for field in ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"):
        crd["metadata"].pop(field, None)
    return crd


@pytest.mark.parametrize("source", ["jobgate", "volcano"])
def test_a_policy_queue_default_reaches_volcano_jobs_under_either_crd(policy_cluster: Cluster, source: str):
    """jobgate's CRD (as the base installs it) defaults spec.queue to "default" (the webhook then sees
    it set); Volcano's own CRD (v1.10.0) does not, Volcano's webhook does. Either way a job that
    names no queue gets the policy's, and one that names another keeps it."""
    crd = yaml.safe_load(_volcano_crd(source))
    queues_served = policy_cluster.kubectl("get", "crd", "queues.scheduling.volcano.sh").returncode == 0
    if queues_served:  # the webhook's queue check is on: the queues must exist and be Open
        for name in ("team-q", "other-q"):
            queue = {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": name},
                "spec": {"weight": 1},
                "status": {"state": "Open"},
            }
            apply(policy_cluster, queue).check_returncode()
            # Volcano's own Queue CRD (another test of the session may have installed it) keeps
            # status in a subresource, which an apply does not write (and requires status.allocated).
            policy_cluster.kubectl(
                "patch",
                "queue",
                name,
                "--subresource=status",
                "--type=merge",
                "-p",
                '{"status":{"state":"Open","allocated":{}}}',
            )
            stored = json.loads(policy_cluster.kubectl("get", "queue", name, "-o", "json", check=True).stdout)
            assert stored.get("status", {}).get("state") == "Open", stored
    session = _session_crd(policy_cluster)
    assert _crd_in_force(policy_cluster) == "session"
    try:
        _install_crd(policy_cluster, crd, source)
        job = next(d for d in yaml.safe_load_all((REPO / "examples/valid/volcano-pytorch.yaml").read_text()) if d)
        job["metadata"]["namespace"] = TEAM
        job["spec"].pop("queue", None)
        result = policy_cluster.kubectl(
            "create", "--dry-run=server", "-o", "json", "-f", "-", input=yaml.safe_dump(job)
        )
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["spec"]["queue"] == "team-q"
        job["spec"]["queue"] = "other-q"
        result = policy_cluster.kubectl(
            "create", "--dry-run=server", "-o", "json", "-f", "-", input=yaml.safe_dump(job)
        )
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["spec"]["queue"] == "other-q"
    finally:
        # The session's CRD back, as the suites after this one expect it.
        _install_crd(policy_cluster, session, "session")
