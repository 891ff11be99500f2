"""Platform policy over Kubeflow Trainer's kinds: a TrainJob's pods and GPUs counted from its runtime
(research §8), require.runtimes, Kueue's labels, and a namespaced TrainingRuntime policed as a pod template."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import jobgate.families.trainer.rules.pods as pods  # noqa: PLR0402 (the module, not its package)
from jobgate.cli import main
from jobgate.families.trainer.rules.runtimes import merge_resources

API = "trainer.kubeflow.org/v1alpha1"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"


def rjob(name: str, ancestor: str | None = None, resources: dict | None = None, **pod: Any) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "node" if ancestor == "trainer" or name == "node" else name,
        "image": "registry.example.com/x:1",
    }
    if resources is not None:
        container["resources"] = resources
    job: dict[str, Any] = {
        "name": name,
        "template": {"spec": {"template": {"spec": {"containers": [container], **pod}}}},
    }
    if ancestor:
        job["template"]["metadata"] = {"labels": {ANCESTOR: ancestor}}
    return job


def runtime(name: str = "torch", jobs=None, ml_policy=None, kind: str = "ClusterTrainingRuntime") -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if kind == "TrainingRuntime":
        metadata["namespace"] = "team-a"
    spec: dict[str, Any] = {"template": {"spec": {"replicatedJobs": jobs or [rjob("node", "trainer")]}}}
    if ml_policy is not None:
        spec["mlPolicy"] = ml_policy
    return {"apiVersion": API, "kind": kind, "metadata": metadata, "spec": spec}


def trainjob(ref: str = "torch", kind: str | None = None, labels=None, **trainer: Any) -> dict[str, Any]:
    runtime_ref: dict[str, Any] = {"name": ref}
    if kind:
        runtime_ref["kind"] = kind
    metadata: dict[str, Any] = {"name": "job", "namespace": "team-a", "labels": {"team": "a", **(labels or {})}}
    spec: dict[str, Any] = {"runtimeRef": runtime_ref}
    if trainer:
        spec["trainer"] = trainer
    return {"apiVersion": API, "kind": "TrainJob", "metadata": metadata, "spec": spec}


def policy(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy.jobgate.io/v1alpha1",
        "kind": "TrainingJobPolicy",
        "metadata": {"name": "team-a", "namespace": "team-a"},
        "spec": {"enforcementAction": "Deny", **spec},
    }


def validate(tmp_path, capsys, job, *cluster) -> tuple[int, list[dict[str, Any]]]:
    (tmp_path / "job.json").write_text(json.dumps(job))
    (tmp_path / "cluster.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(cluster)}))
    code = main(
        ["validate", "-o", "json", "--cluster-objects", str(tmp_path / "cluster.json"), str(tmp_path / "job.json")]
    )
    out = json.loads(capsys.readouterr().out)
    return code, [e for result in out["documents"] for e in result["errors"]]


def rules(errors) -> set[str]:
    return {e["rule"] for e in errors}


# --- pods and GPUs from the runtime ------------------------------------------------------------------


def test_merge_is_per_key():
    base = {"limits": {"nvidia.com/gpu": 2, "cpu": "4"}, "requests": {"cpu": "2"}}
    assert merge_resources(base, {"limits": {"nvidia.com/gpu": 8}}) == {
        "limits": {"nvidia.com/gpu": 8, "cpu": "4"},
        "requests": {"cpu": "2"},
    }


@pytest.mark.parametrize(
    ("rt", "trainer", "wanted"),
    [
        (runtime(), {}, [("node", 1)]),
        (runtime(ml_policy={"numNodes": 3, "torch": {}}), {}, [("node", 3)]),
        (runtime(ml_policy={"numNodes": 3, "torch": {}}), {"numNodes": 5}, [("node", 5)]),
        # Initializers count too (Kueue reserves quota for every replicated job at once).
        (
            runtime(
                jobs=[rjob("dataset-initializer", "dataset-initializer"), rjob("node", "trainer")],
                ml_policy={"torch": {}},
            ),
            {"numNodes": 2},
            [("dataset-initializer", 1), ("node", 2)],
        ),
        # MPI: the launcher counts as a node when runLauncherAsNode.
        (
            runtime(jobs=[rjob("launcher"), rjob("node", "trainer")], ml_policy={"mpi": {"runLauncherAsNode": True}}),
            {"numNodes": 3},
            [("launcher", 1), ("node", 2)],
        ),
        (
            runtime(jobs=[rjob("launcher"), rjob("node")], ml_policy={"mpi": {}}),
            {"numNodes": 3},
            [("launcher", 1), ("node", 3)],
        ),
        # No mlPolicy: the trainer job's own parallelism.
        (
            runtime(jobs=[{**rjob("node", "trainer"), "replicas": 1}]),
            {},
            [("node", 1)],
        ),
    ],
)
def test_pod_counts(rt, trainer, wanted):
    sets = pods.runtime_pod_sets(rt, {"trainer": trainer})
    assert [(s.name, s.pods) for s in sets] == wanted


def test_the_node_container_gets_the_trainers_resources_and_image():
    rt = runtime(jobs=[rjob("node", "trainer", resources={"limits": {"nvidia.com/gpu": 2, "cpu": "8"}})])
    (node,) = pods.runtime_pod_sets(
        rt, {"trainer": {"image": "registry.example.com/mine:2", "resourcesPerNode": {"limits": {"nvidia.com/gpu": 8}}}}
    )
    container = node.template["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": 8, "cpu": "8"}
    assert container["image"] == "registry.example.com/mine:2"
    assert rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0][
        "resources"]["limits"]["nvidia.com/gpu"] == 2  # fmt: skip  # the runtime is not changed


def test_gpus_per_job_counted_from_the_runtime(tmp_path, capsys):
    rt = runtime(jobs=[rjob("node", "trainer", resources={"requests": {"cpu": "4"}})], ml_policy={"torch": {}})
    job = trainjob(numNodes=4, resourcesPerNode={"limits": {"nvidia.com/gpu": 8}})
    code, errors = validate(tmp_path, capsys, job, rt, policy(limits={"maxGPUsPerJob": 16}))
    assert code == 1
    assert rules(errors) == {"policy/max-gpus-per-job"}
    assert "32 GPUs" in errors[0]["message"]
    code, errors = validate(tmp_path, capsys, job, rt, policy(limits={"maxGPUsPerJob": 32, "maxGPUsPerPod": 8}))
    assert code == 0, errors


def test_gpus_per_pod_from_the_runtimes_node_container(tmp_path, capsys):
    rt = runtime(jobs=[rjob("node", "trainer", resources={"limits": {"nvidia.com/gpu": 2}})], ml_policy={"torch": {}})
    _code, errors = validate(tmp_path, capsys, trainjob(), rt, policy(limits={"maxGPUsPerPod": 1}))
    assert rules(errors) == {"policy/max-gpus-per-pod"}


def test_replicas_per_job_count_every_replicated_job(tmp_path, capsys):
    rt = runtime(jobs=[rjob("launcher"), rjob("node", "trainer")], ml_policy={"mpi": {"runLauncherAsNode": True}})
    assert validate(tmp_path, capsys, trainjob(numNodes=3), rt, policy(limits={"maxReplicasPerJob": 3}))[0] == 0
    _code, errors = validate(tmp_path, capsys, trainjob(numNodes=4), rt, policy(limits={"maxReplicasPerJob": 3}))
    assert rules(errors) == {"policy/max-replicas-per-job"}


def test_images_of_the_runtime_and_the_trainer(tmp_path, capsys):
    rt = runtime()
    limited = policy(require={"imageRegistries": ["registry.example.com/"]})
    assert validate(tmp_path, capsys, trainjob(), rt, limited)[0] == 0
    _code, errors = validate(tmp_path, capsys, trainjob(image="docker.io/evil:1"), rt, limited)
    assert rules(errors) == {"policy/image-registries"}


def test_kueue_labels_are_the_queue(tmp_path, capsys):
    queues = policy(require={"queues": ["team-a"]})
    _code, errors = validate(tmp_path, capsys, trainjob(), runtime(), queues)
    assert rules(errors) == {"policy/allowed-queues"}
    assert errors[0]["field"] == "metadata.labels[kueue.x-k8s.io/queue-name]"
    ok = trainjob(labels={"kueue.x-k8s.io/queue-name": "team-a"})
    assert validate(tmp_path, capsys, ok, runtime(), queues)[0] == 0


# --- require.runtimes ------------------------------------------------------------------------------


def test_runtimes_allowed_per_kind(tmp_path, capsys):
    limited = policy(require={"runtimes": {"clusterTrainingRuntimes": ["torch"], "trainingRuntimes": []}})
    assert validate(tmp_path, capsys, trainjob(), runtime(), limited)[0] == 0
    _code, errors = validate(tmp_path, capsys, trainjob("other"), runtime("other"), limited)
    assert rules(errors) == {"policy/runtime-not-allowed"}
    assert errors[0]["field"] == "spec.runtimeRef.name"
    namespaced = runtime("mine", kind="TrainingRuntime")
    _code, errors = validate(tmp_path, capsys, trainjob("mine", kind="TrainingRuntime"), namespaced, limited)
    assert rules(errors) == {"policy/runtime-not-allowed"}


def test_a_kind_not_listed_is_not_limited(tmp_path, capsys):
    limited = policy(require={"runtimes": {"clusterTrainingRuntimes": ["torch"]}})
    namespaced = runtime("mine", kind="TrainingRuntime")
    assert validate(tmp_path, capsys, trainjob("mine", kind="TrainingRuntime"), namespaced, limited)[0] == 0


def test_a_runtimes_list_is_checked_as_the_policy_crd_does(tmp_path, capsys):
    bad = policy(require={"runtimes": {"clusterTrainingRuntimes": ["torch", "torch"]}})
    (tmp_path / "job.json").write_text(json.dumps(trainjob()))
    (tmp_path / "cluster.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [runtime(), bad]}))
    assert main(["validate", "--cluster-objects", str(tmp_path / "cluster.json"), str(tmp_path / "job.json")]) == 2


# --- a namespaced TrainingRuntime is a full pod template -------------------------------------------


def test_a_training_runtime_is_policed_as_a_job(tmp_path, capsys):
    privileged = runtime("mine", kind="TrainingRuntime")
    privileged["metadata"]["labels"] = {"team": "a"}
    node = privileged["spec"]["template"]["spec"]["replicatedJobs"][0]
    node["template"]["spec"]["template"]["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    code, errors = validate(tmp_path, capsys, privileged, policy(require={"forbid": ["privileged"]}))
    assert code == 1
    assert rules(errors) == {"policy/forbid-privileged"}
    clean = copy.deepcopy(privileged)
    clean["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0].pop(
        "securityContext")  # fmt: skip
    assert validate(tmp_path, capsys, clean, policy(require={"forbid": ["privileged"]}))[0] == 0


# --- require.fitsQueue: Kueue integrates TrainJob, its pod sets are the runtime's ------------------

KUEUE = "kueue.x-k8s.io/v1beta1"


def test_a_trainjob_must_fit_its_kueue_queue(tmp_path, capsys):
    objects = [
        {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "a100"}, "spec": {}},
        {
            "apiVersion": KUEUE,
            "kind": "ClusterQueue",
            "metadata": {"name": "gpu-cq"},
            "spec": {
                "namespaceSelector": {},
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
            "metadata": {"name": "team-a", "namespace": "team-a"},
            "spec": {"clusterQueue": "gpu-cq"},
        },
        runtime(),
        policy(require={"fitsQueue": True}),
    ]
    queue = {"kueue.x-k8s.io/queue-name": "team-a"}
    gpus = {"limits": {"nvidia.com/gpu": 8}}
    _code, errors = validate(tmp_path, capsys, trainjob(labels=queue, numNodes=4, resourcesPerNode=gpus), *objects)
    assert rules(errors) == {"policy/queue-fit"}, errors
    assert validate(tmp_path, capsys, trainjob(labels=queue, numNodes=2, resourcesPerNode=gpus), *objects)[0] == 0


# --- runtimePatches: what the pods run with ---------------------------------------------------------


def _patch(**pod_spec: Any) -> dict[str, Any]:
    rjob_patch = {"name": "node", "template": {"spec": {"template": {"spec": pod_spec}}}}
    return {
        "manager": "example.com/me",
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [rjob_patch]}}},
    }


def test_patches_are_merged_into_the_pods_by_name():
    rt = runtime(jobs=[rjob("node", "trainer", resources={"limits": {"nvidia.com/gpu": 1}})])
    patches = [
        _patch(
            containers=[{"name": "node", "securityContext": {"privileged": True}}],
            volumes=[{"name": "host", "hostPath": {"path": "/"}}],
            nodeSelector={"a": "b"},
        )
    ]
    (node,) = pods.runtime_pod_sets(rt, {"runtimePatches": patches})
    spec = node.template["spec"]
    assert spec["containers"][0]["securityContext"] == {"privileged": True}
    assert spec["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 1}}  # the runtime's, kept
    assert spec["volumes"] == [{"name": "host", "hostPath": {"path": "/"}}]
    assert spec["nodeSelector"] == {"a": "b"}


@pytest.mark.parametrize(
    ("forbid", "pod_spec", "rule"),
    [
        (
            "privileged",
            {"containers": [{"name": "node", "securityContext": {"privileged": True}}]},
            "policy/forbid-privileged",
        ),
        ("hostPath", {"volumes": [{"name": "host", "hostPath": {"path": "/"}}]}, "policy/forbid-hostpath"),
    ],
)
def test_a_patch_cannot_bring_what_a_policy_forbids(tmp_path, capsys, forbid, pod_spec, rule):
    job = trainjob()
    job["spec"]["runtimePatches"] = [{**_patch(**pod_spec), "time": "2026-01-01T00:00:00Z"}]
    code, errors = validate(tmp_path, capsys, job, runtime(), policy(require={"forbid": [forbid]}))
    assert code == 1
    assert rule in rules(errors)
