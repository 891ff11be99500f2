"""manifests/overlays/trainer-admission-only on a real control plane, beside Kubeflow Trainer v2.3.0's own CRDs.

A control plane of its own (etcd + kube-apiserver, no node): Trainer's CRDs from its Go module at the
pinned release (envtest/upstream.py ``trainer_crds``; their CEL rules and JobSet's inherited ones run
in the apiserver), jobgate's webhook configurations rendered from the overlay and pointed at a local
``jobgate webhook --families=trainer --kubeconfig ...``, which watches the runtimes. Trainer's own
controller and webhooks are not run: jobgate's answers are checked against Trainer's words.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import IN_CI, REPO, Cluster, admission_only_cluster

pytestmark = pytest.mark.e2e

OVERLAY = REPO / "manifests/overlays/trainer-admission-only"
NAMESPACE = "team-tr"
API = "trainer.kubeflow.org/v1alpha1"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"


def test_the_pinned_release_is_the_familys():
    from envtest.versions import TRAINER_VERSION as PINNED
    from jobgate.families.trainer import TRAINER_VERSION

    assert PINNED == TRAINER_VERSION


class Setup:
    def __init__(self, cluster: Cluster, log: Path) -> None:
        self.cluster = cluster
        self.log = log

    def apply(self, obj: dict, *extra: str) -> subprocess.CompletedProcess[str]:
        return self.cluster.kubectl("apply", *extra, "-f", "-", input=json.dumps(obj))

    def create(self, obj: dict) -> subprocess.CompletedProcess[str]:
        return self.cluster.kubectl("create", "-f", "-", input=json.dumps(obj))


@pytest.fixture(scope="module")
def trainer_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    from envtest.build import cached_binaries
    from envtest.upstream import UpstreamUnavailable, trainer_crds

    if cached_binaries() is None:
        pytest.skip("no cached etcd/kube-apiserver (run the e2e suite once to build them)")
    try:
        crds = trainer_crds()
    except UpstreamUnavailable as exc:
        if IN_CI:
            raise
        pytest.skip(f"Kubeflow Trainer's CRDs not available: {exc}")

    def install(cluster: Cluster, rendered: list[dict]) -> None:
        for crd in crds:
            cluster.kubectl("apply", "--server-side", "-f", str(crd), check=True)
        # The platform-policy CRDs of the overlay (policies apply to TrainJobs too), before the webhook starts.
        policy_crds = [d for d in rendered if d["kind"] == "CustomResourceDefinition"]
        cluster.kubectl(
            "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": policy_crds}), check=True
        )
        cluster.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s", check=True)

    work = tmp_path_factory.mktemp("trainer")
    with admission_only_cluster(work, OVERLAY, install, "--families=trainer", kubeconfig=True) as (cluster, webhook):
        cluster.kubectl("create", "namespace", NAMESPACE, check=True)
        setup = Setup(cluster, webhook.log)
        wait_for_webhook(setup)
        yield setup


def runtime(name: str, *, kind: str = "ClusterTrainingRuntime", gpus: int = 0, replicas: int = 1) -> dict:
    container: dict = {"name": "node", "image": "pytorch/pytorch:2.7.1"}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    metadata: dict = {"name": name}
    if kind == "TrainingRuntime":
        metadata["namespace"] = NAMESPACE
    node = {
        "name": "node",
        "replicas": replicas,
        "template": {
            "metadata": {"labels": {ANCESTOR: "trainer"}},
            "spec": {"template": {"spec": {"containers": [container]}}},
        },
    }
    return {
        "apiVersion": API,
        "kind": kind,
        "metadata": metadata,
        "spec": {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": {"replicatedJobs": [node]}}},
    }


def trainjob(name: str, ref: str, **spec) -> dict:
    return {
        "apiVersion": API,
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"runtimeRef": {"name": ref}, **spec},
    }


def wait_for_webhook(setup: Setup, timeout: float = 60) -> None:
    """Webhook configurations take effect a moment after they are written: until jobgate answers."""
    probe = json.dumps(trainjob("probe", "no-such-runtime"))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = setup.cluster.kubectl("create", "--dry-run=server", "-f", "-", input=probe)
        if "specified clusterTrainingRuntime must be created before the TrainJob is created" in result.stderr:
            return
        time.sleep(0.5)
    raise AssertionError(f"the webhook never answered: {result.stderr}")


def test_a_trainjob_created_right_after_its_runtime_is_admitted_and_defaulted(trainer_cluster: Setup):
    setup = trainer_cluster
    assert setup.create(runtime("torch-now")).returncode == 0
    patch = {"manager": "example.com/mine", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
        {"name": "node", "template": {"spec": {"template": {"spec": {"nodeSelector": {"a": "b"}}}}}}]}}}}  # fmt: skip
    result = setup.create(trainjob("right-after", "torch-now", runtimePatches=[patch]))
    assert result.returncode == 0, result.stderr
    stored = setup.cluster.get_json("trainjobs.trainer.kubeflow.org", "right-after", "-n", NAMESPACE)
    assert stored["spec"]["runtimePatches"][0]["time"]  # stamped by jobgate's /mutate
    assert stored["spec"]["runtimeRef"]["kind"] == "ClusterTrainingRuntime"
    assert stored["spec"]["managedBy"] == "trainer.kubeflow.org/trainjob-controller"


def test_a_missing_runtime_is_refused_as_trainer_refuses_it(trainer_cluster: Setup):
    result = trainer_cluster.create(trainjob("orphan", "no-such-runtime"))
    assert result.returncode != 0
    assert 'clustertrainingruntimes.trainer.kubeflow.org "no-such-runtime" not found' in result.stderr
    assert "spec.RuntimeRef: Invalid value" in result.stderr


def test_plugin_checks_against_the_runtime(trainer_cluster: Setup):
    setup = trainer_cluster
    assert setup.create(runtime("torch-env")).returncode == 0
    job = trainjob("reserved", "torch-env", trainer={"env": [{"name": "PET_NNODES", "value": "2"}]})
    result = setup.create(job)
    assert "must not have reserved envs, invalid envs configured: [PET_NNODES]" in result.stderr, result.stderr
    ghost = {"manager": "example.com/mine", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
        {"name": "ghost"}]}}}}  # fmt: skip
    result = setup.create(trainjob("ghost", "torch-env", runtimePatches=[ghost]))
    assert "must not have replicated job that doesn't exist in the runtime job template" in result.stderr


def test_trainers_crd_rules_and_jobgates_agree(trainer_cluster: Setup):
    result = trainer_cluster.create(trainjob("Bad-Name", "torch-env"))
    assert result.returncode != 0
    assert "metadata.name must match RFC 1035 DNS label format" in result.stderr


def test_a_training_runtime_update_is_validated(trainer_cluster: Setup):
    """Trainer v2.3.0 skips it (kubeflow/trainer#3686); jobgate refuses it as on CREATE."""
    setup = trainer_cluster
    assert setup.create(runtime("mine", kind="TrainingRuntime")).returncode == 0
    changed = setup.cluster.get_json("trainingruntimes.trainer.kubeflow.org", "mine", "-n", NAMESPACE)
    changed["spec"]["template"]["spec"]["replicatedJobs"][0]["replicas"] = 2
    result = setup.cluster.kubectl("replace", "-f", "-", input=json.dumps(changed))
    assert "spec.template.spec.replicatedJobs[0].replicas: Invalid value: 2: always must be 1" in result.stderr


def test_a_gpu_limit_counts_the_runtimes_pods(trainer_cluster: Setup):
    setup = trainer_cluster
    assert setup.create(runtime("torch-gpu", gpus=2)).returncode == 0
    policy = {
        "apiVersion": "policy.jobgate.io/v1alpha1",
        "kind": "TrainingJobPolicy",
        "metadata": {"name": "gpus", "namespace": NAMESPACE},
        "spec": {"enforcementAction": "Deny", "limits": {"maxGPUsPerJob": 16}},
    }
    assert setup.create(policy).returncode == 0
    big = trainjob("big", "torch-gpu", trainer={"numNodes": 4, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 8}}})
    deadline = time.monotonic() + 30
    while True:  # the policy reaches the webhook's cache a moment after it is stored
        result = setup.cluster.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(big))
        if "the job requests 32 GPUs" in result.stderr or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert "the job requests 32 GPUs at its largest (node 4 × 8), exceeds 16 GPUs per job" in result.stderr, (
        result.stderr
    )
    small = trainjob(
        "small", "torch-gpu", trainer={"numNodes": 2, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 8}}}
    )
    assert setup.cluster.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(small)).returncode == 0


def test_a_volcano_runtimes_priority_class_is_looked_up(trainer_cluster: Setup):
    """Trainer's T24: the PriorityClass a Volcano runtime's pods name must exist; jobgate's webhook watches
    PriorityClasses and reads one its cache lacks from the API, so one created a moment ago is found."""
    setup = trainer_cluster
    volcano = runtime("volcano-pc")
    volcano["spec"]["podGroupPolicy"] = {"volcano": {}}
    pod = volcano["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["priorityClassName"] = "team-high"
    assert setup.create(volcano).returncode == 0
    job = json.dumps(trainjob("prioritized", "volcano-pc"))
    result = setup.cluster.kubectl("create", "--dry-run=server", "-f", "-", input=job)
    assert (
        'spec.templateSpec.priorityClassName: Invalid value: "team-high": PriorityClass "team-high" doesn\'t exist'
        in result.stderr
    ), result.stderr
    high = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "team-high"},
        "value": 1000,
    }
    assert setup.create(high).returncode == 0
    result = setup.cluster.kubectl("create", "--dry-run=server", "-f", "-", input=job)
    assert result.returncode == 0, result.stderr
