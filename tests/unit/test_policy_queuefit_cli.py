"""require.fitsQueue offline: `jobgate validate`, `review` and `policy explain` with the queues given by
--cluster-objects (Kueue's LocalQueues, ClusterQueues, ResourceFlavors, Cohorts; Volcano's Queues)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from jobgate.cli import main
from tests.unit.test_policy_fixtures import cluster, kubeflow, pod, volcano

NS = "ns"
KUEUE = "kueue.x-k8s.io/v1beta2"


def gpu_pod(gpus: int) -> dict[str, Any]:
    template = pod(gpus)
    template["spec"]["containers"][0]["name"] = "pytorch"
    return template


def pytorch(workers: int, queue: str = "team-a") -> dict[str, Any]:
    job = kubeflow(roles={"Master": (1, gpu_pod(8)), "Worker": (workers, gpu_pod(8))})
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": queue}
    return job


def kueue_objects(gpus: int = 32, borrowing: int | None = None) -> list[dict[str, Any]]:
    quota: dict[str, Any] = {"name": "nvidia.com/gpu", "nominalQuota": gpus}
    if borrowing is not None:
        quota["borrowingLimit"] = borrowing
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "a100"}, "spec": {}},
        {
            "apiVersion": KUEUE,
            "kind": "ClusterQueue",
            "metadata": {"name": "gpu-cq"},
            "spec": {
                "namespaceSelector": {},
                "cohortName": "org",
                "resourceGroups": [
                    {"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "a100", "resources": [quota]}]}
                ],
            },
        },
        # Another member of the cohort, whose 16 GPUs the first may borrow (up to its borrowingLimit).
        {
            "apiVersion": KUEUE,
            "kind": "ClusterQueue",
            "metadata": {"name": "other-cq"},
            "spec": {
                "namespaceSelector": {},
                "cohortName": "org",
                "resourceGroups": [
                    {
                        "coveredResources": ["nvidia.com/gpu"],
                        "flavors": [{"name": "a100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 16}]}],
                    }
                ],
            },
        },
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"name": "team-a", "namespace": NS},
            "spec": {"clusterQueue": "gpu-cq"},
        },
    ]


FIT = cluster("fit", {"require": {"fitsQueue": True}})


def write(path: Path, *documents: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump_all(documents))
    return str(path)


def validate(
    tmp_path: Path, job: dict[str, Any], objects: list[dict[str, Any]] | None, policy: dict[str, Any] = FIT
) -> int:
    args = ["validate", write(tmp_path / "job.yaml", job)]
    if objects is not None:
        args += ["--cluster-objects", write(tmp_path / "cluster.yaml", policy, *objects)]
    else:
        args += ["--policies", write(tmp_path / "policy.yaml", policy)]
    return main(args)


def test_a_job_its_cluster_queue_holds_is_admitted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert validate(tmp_path, pytorch(workers=3), kueue_objects()) == 0


def test_a_job_over_the_queue_is_denied_naming_queue_resource_and_flavors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert validate(tmp_path, pytorch(workers=4), kueue_objects(16, borrowing=8)) == 1
    out = capsys.readouterr().out
    assert 'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "team-a"' in out
    assert "LocalQueue ns/team-a (ClusterQueue gpu-cq)" in out and "nvidia.com/gpu 40" in out
    assert "the most the ClusterQueue can ever give is 24" in out
    assert "a100: nvidia.com/gpu at most 24 (nominalQuota 16, borrowingLimit 8, cohort org)" in out
    assert "[policy/queue-fit]" in out


def test_a_missing_local_queue_is_misconfigured(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert validate(tmp_path, pytorch(workers=1, queue="nope"), kueue_objects()) == 1
    assert "misconfigured: LocalQueue ns/nope does not exist" in capsys.readouterr().out


def test_a_labelled_job_without_kueue_objects_is_not_admitted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert validate(tmp_path, pytorch(workers=1), None) == 1
    out = capsys.readouterr().out
    assert (
        "no Kueue objects were given" in out and "--cluster-objects" in out and "[policy/queue-objects-missing]" in out
    )
    # Objects given, none of them Kueue's: the same.
    assert validate(tmp_path, pytorch(workers=1), kueue_objects()[:1]) == 1


def test_a_warn_policy_admits_with_the_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    warn = cluster("fit", {"enforcementAction": "Warn", "require": {"fitsQueue": True}})
    assert validate(tmp_path, pytorch(workers=4), kueue_objects(16, borrowing=8), warn) == 0
    assert "warning: metadata.labels[kueue.x-k8s.io/queue-name]" in capsys.readouterr().out


def test_a_volcano_job_over_its_queue_capability_is_denied(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = {"name": "worker", "replicas": 5, "minAvailable": 5, "template": gpu_pod(8)}
    job = volcano([task], queue="research")
    queues = [
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "research"},
            "spec": {"capability": {"nvidia.com/gpu": 64}, "parent": "org"},
            "status": {"state": "Open"},
        },
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "org"},
            "spec": {"capability": {"nvidia.com/gpu": 32}},
            "status": {"state": "Open"},
        },
    ]
    assert validate(tmp_path, job, queues) == 1
    out = capsys.readouterr().out
    assert 'spec.queue: Invalid value: "research"' in out
    assert "Volcano queue research" in out and "nvidia.com/gpu 40" in out
    assert "the capability of its parent queue org" in out
    job["spec"]["tasks"][0]["minAvailable"] = 4
    job["spec"]["minAvailable"] = 4
    assert validate(tmp_path, job, queues) == 0


def test_review_answers_with_the_refusal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u",
            "kind": {"group": "kubeflow.org", "version": "v1", "kind": "PyTorchJob"},
            "resource": {"group": "kubeflow.org", "version": "v1", "resource": "pytorchjobs"},
            "namespace": NS,
            "operation": "CREATE",
            "userInfo": {"username": "u"},
            "object": pytorch(workers=4),
        },
    }
    path = tmp_path / "review.json"
    path.write_text(json.dumps(review))
    cluster_file = write(tmp_path / "cluster.yaml", FIT, *kueue_objects(16, borrowing=8))
    assert main(["review", "validate", str(path), "--cluster-objects", cluster_file]) == 0
    answer = json.loads(capsys.readouterr().out)["response"]
    assert answer["allowed"] is False and "can never be admitted by LocalQueue ns/team-a" in answer["status"]["message"]


def test_policy_explain_prints_each_queues_ceiling(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster_file = write(tmp_path / "cluster.yaml", FIT, *kueue_objects(16, borrowing=8))
    assert main(["policy", "explain", "--namespace", NS, "--cluster-objects", cluster_file]) == 0
    out = capsys.readouterr().out
    assert "the job must fit its queue (fitsQueue)" in out
    assert "LocalQueue ns/team-a → ClusterQueue gpu-cq (cohort org)" in out
    assert "flavor a100: nvidia.com/gpu 24" in out


def test_the_example_admits_what_fits_and_refuses_the_rest(capsys: pytest.CaptureFixture[str]) -> None:
    example = Path(__file__).resolve().parents[2] / "examples/queue-fit"
    argv = ["validate", str(example / "jobs.yaml")]
    argv += ["--cluster-objects", str(example / "cluster.yaml"), "--cluster-objects", str(example / "policy.yaml")]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "PyTorchJob ml/fits: admitted" in out
    assert "PyTorchJob ml/never-fits: denied" in out and "the most the ClusterQueue can ever give is 24" in out
    assert "Job ml/gang-too-big: denied" in out and "the capability of its parent queue org" in out
