"""A runtime's JobSet template and a TrainJob's runtimePatches: ``jobgate validate`` offline and a real apiserver
with Kubeflow Trainer v2.3.0's own CRDs give the same verdict (issue 44).

A control plane of its own (etcd + kube-apiserver, no node) with Trainer's CRDs from its Go module at the
pinned release (``envtest/upstream.py trainer_crds``) and **no webhook**: every refusal here is the CRDs'
(JobSet v0.12.0's schema inside the runtimes' ``spec.template.spec``, its CEL rules, Trainer's patch types),
so the comparison is between jobgate's offline check and the CRDs alone. Each object is tried with
``kubectl create --dry-run=server`` and with ``jobgate validate`` on the same file.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import Cluster, crds_only_cluster, jobgate, jobgate_update_response, store_under_loosened_crd

pytestmark = pytest.mark.e2e

API = "trainer.kubeflow.org/v1alpha1"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
RUNTIME_NAME = "torch-agreement"


@pytest.fixture(scope="module")
def trainer_crds_only() -> Iterator[Cluster]:
    from envtest.upstream import trainer_crds

    with crds_only_cluster(trainer_crds, "Kubeflow Trainer's CRDs", "team-tr") as cluster:
        yield cluster


def runtime(**template_spec: Any) -> dict[str, Any]:
    node = {
        "name": "node",
        "template": {
            "metadata": {"labels": {ANCESTOR: "trainer"}},
            "spec": {"template": {"spec": {"containers": [{"name": "node", "image": "pytorch/pytorch:2.7.1"}]}}},
        },
    }
    return {
        "apiVersion": API,
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": RUNTIME_NAME},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {"spec": {"replicatedJobs": [node], **template_spec}},
        },
    }


def node_job(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["spec"]["template"]["spec"]["replicatedJobs"][0]


def trainjob(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "TrainJob",
        "metadata": {"name": "agreement", "namespace": "team-tr"},
        "spec": {"runtimeRef": {"name": RUNTIME_NAME}, **spec},
    }


def pod_patch(**pod_spec: Any) -> dict[str, Any]:
    job = {"name": "node", "template": {"spec": {"template": {"spec": pod_spec}}}}
    return {"manager": "example.com/mine", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [job]}}}}


def changed(base: dict[str, Any], change: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    obj = copy.deepcopy(base)
    change(obj)
    return obj


# (id, object, the field the refusal names; None: admitted)
RUNTIME_CASES: list[tuple[str, dict[str, Any], str | None]] = [
    ("valid", runtime(), None),
    ("job-name-type", changed(runtime(), lambda o: node_job(o).update(name=[])),
     "spec.template.spec.replicatedJobs[0].name"),
    ("replicas-type", changed(runtime(), lambda o: node_job(o).update(replicas="2")),
     "spec.template.spec.replicatedJobs[0].replicas"),
    ("job-template-required", changed(runtime(), lambda o: node_job(o).pop("template")),
     "spec.template.spec.replicatedJobs[0].template"),
    ("success-operator-enum", runtime(successPolicy={"operator": "Some"}),
     "spec.template.spec.successPolicy.operator"),
    ("restart-strategy-enum", runtime(failurePolicy={"restartStrategy": "Sometimes"}),
     "spec.template.spec.failurePolicy.restartStrategy"),
    ("depends-on-status-enum",
     changed(runtime(), lambda o: o["spec"]["template"]["spec"]["replicatedJobs"].append(
         {**copy.deepcopy(node_job(o)), "name": "late", "dependsOn": [{"name": "node", "status": "Started"}]})),
     "spec.template.spec.replicatedJobs[1].dependsOn[0].status"),
    ("ttl-below-zero", runtime(ttlSecondsAfterFinished=-1), "spec.template.spec.ttlSecondsAfterFinished"),
    ("replicas-beyond-int32", changed(runtime(), lambda o: node_job(o).update(replicas=2**31)),
     "spec.template.spec.replicatedJobs[0].replicas"),
    ("coordinator-index-type", runtime(coordinator={"replicatedJob": "node", "jobIndex": "0"}),
     "spec.template.spec.coordinator.jobIndex"),
    ("claim-policy-retention-enum",
     runtime(volumeClaimPolicies=[{"templates": [], "retentionPolicy": {"whenDeleted": "Never"}}]),
     "spec.template.spec.volumeClaimPolicies[0].retentionPolicy.whenDeleted"),
    ("depends-on-too-many",
     changed(runtime(), lambda o: node_job(o).update(dependsOn=[{"name": f"j{i}", "status": "Ready"} for i in range(6)])),  # noqa: E501
     "spec.template.spec.replicatedJobs[0].dependsOn"),
    ("metadata-label-type",
     changed(runtime(), lambda o: o["spec"]["template"].update(metadata={"labels": {"team": 7}})),
     "spec.template.metadata.labels.team"),
    ("replicated-jobs-duplicate-name",
     changed(runtime(), lambda o: o["spec"]["template"]["spec"]["replicatedJobs"].append(copy.deepcopy(node_job(o)))),
     "spec.template.spec.replicatedJobs[1]"),
    ("pod-volumes-duplicate-name",
     changed(runtime(), lambda o: node_job(o)["template"]["spec"]["template"]["spec"].update(
         volumes=[{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}])),
     "spec.template.spec.replicatedJobs[0].template.spec.template.spec.volumes[1]"),
    ("pod-containers-type",
     changed(runtime(), lambda o: node_job(o)["template"]["spec"]["template"]["spec"].update(containers="x")),
     "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers"),
    ("pod-image-type",
     changed(runtime(), lambda o: node_job(o)["template"]["spec"]["template"]["spec"]["containers"][0].update(image=5)),
     "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].image"),
    ("startup-order-and-depends-on",
     changed(runtime(startupPolicy={"startupPolicyOrder": "InOrder"}), lambda o: node_job(o).update(dependsOn=[])),
     "spec.template.spec"),
]  # fmt: skip

TRAINJOB_CASES: list[tuple[str, dict[str, Any], str | None]] = [
    ("valid", trainjob(runtimePatches=[pod_patch(nodeSelector={"pool": "a"})]), None),
    ("patch-container-name-type", trainjob(runtimePatches=[pod_patch(containers=[{"name": 5}])]),
     "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec"
     ".containers[0].name"),
    ("patch-grace-period-below-zero", trainjob(runtimePatches=[pod_patch(terminationGracePeriodSeconds=-1)]),
     "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec"
     ".terminationGracePeriodSeconds"),
    ("patches-of-one-manager", trainjob(runtimePatches=[pod_patch(nodeSelector={"pool": "a"})] * 2),
     "spec.runtimePatches[1]"),
    ("patch-jobs-of-one-name",
     trainjob(runtimePatches=[{**pod_patch(), "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
         {"name": "node", "template": {"spec": {"template": {"spec": {"nodeSelector": {"pool": "a"}}}}}}] * 2}}}}]),
     "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[1]"),
    ("patch-mounts-of-one-name", trainjob(runtimePatches=[pod_patch(containers=[{"name": "node", "volumeMounts": [
        {"name": "v", "mountPath": "/a"}, {"name": "v", "mountPath": "/b"}]}])]),
     "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec"
     ".containers[0].volumeMounts[1]"),
    ("trainer-env-of-one-name",
     trainjob(trainer={"env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}), "spec.trainer.env[1]"),
    ("patch-scheduling-gates-too-many",
     trainjob(runtimePatches=[pod_patch(schedulingGates=[{"name": f"g{i}"} for i in range(17)])]),
     "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec"
     ".schedulingGates"),
]  # fmt: skip


def server_verdict(cluster: Cluster, obj: dict[str, Any]) -> tuple[bool, str]:
    result = cluster.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(obj))
    return result.returncode == 0, result.stderr


def offline_verdict(tmp_path: Path, obj: dict[str, Any], *flags: str) -> tuple[bool, str]:
    path = tmp_path / "object.yaml"
    path.write_text(yaml.safe_dump(obj))
    result = jobgate("validate", *flags, str(path))
    assert result.returncode in (0, 1), result.stdout + result.stderr  # a verdict, not a usage error
    return result.returncode == 0, result.stdout


@pytest.mark.parametrize(("obj", "field"), [c[1:] for c in RUNTIME_CASES], ids=[c[0] for c in RUNTIME_CASES])
def test_a_runtime_template_gets_the_crds_verdict_offline(trainer_crds_only, tmp_path, obj, field):
    admitted, refusal = server_verdict(trainer_crds_only, obj)
    offline_admitted, report = offline_verdict(tmp_path, obj)
    assert (offline_admitted, admitted) == (field is None, field is None), (refusal, report)
    if field is not None:
        # The field the apiserver names (beyond int32 it writes "... in <field>" on a <nil> field: the verdict
        # is the same, the line is jobgate's usual range error).
        assert field in refusal, refusal
        assert f"{field}:" in report, report


@pytest.mark.parametrize(("obj", "field"), [c[1:] for c in TRAINJOB_CASES], ids=[c[0] for c in TRAINJOB_CASES])
def test_a_trainjobs_runtime_patches_get_the_crds_verdict_offline(trainer_crds_only, tmp_path, obj, field):
    runtime_file = tmp_path / "runtime.yaml"
    runtime_file.write_text(yaml.safe_dump(runtime()))
    admitted, refusal = server_verdict(trainer_crds_only, obj)
    offline_admitted, report = offline_verdict(tmp_path, obj, "--cluster-objects", str(runtime_file))
    assert (offline_admitted, admitted) == (field is None, field is None), (refusal, report)
    if field is not None:
        # The field the apiserver names (beyond int32 it writes "... in <field>" on a <nil> field: the verdict
        # is the same, the line is jobgate's usual range error).
        assert field in refusal, refusal
        assert f"{field}:" in report, report


def test_an_unchanged_stored_defect_is_ratcheted_on_update_by_both(trainer_crds_only, tmp_path):
    """A runtime stored while its CRD did not type the template (an older Trainer, say) keeps a defect; an
    update that leaves the defect alone is admitted by the apiserver (CRD validation ratcheting) and by
    jobgate; one that makes it anew is refused by both."""
    from envtest.upstream import trainer_crds

    cluster = trainer_crds_only
    crd_path = next(p for p in trainer_crds() if "clustertrainingruntimes" in p.name)
    real = yaml.safe_load(crd_path.read_text())
    loose = copy.deepcopy(real)
    spec_schema = loose["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    spec_schema["template"] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    stored = changed(runtime(), lambda o: node_job(o).update(replicas="2"))
    stored["metadata"]["name"] = "ratcheted"
    store_under_loosened_crd(cluster, loose, crd_path, stored)
    old = cluster.get_json("clustertrainingruntimes.trainer.kubeflow.org", "ratcheted")
    assert node_job(old)["replicas"] == "2"

    unchanged_defect = changed(old, lambda o: o["spec"]["mlPolicy"].update(numNodes=2))
    new_defect = changed(old, lambda o: o["spec"]["template"]["spec"].update(ttlSecondsAfterFinished=-1))
    deadline = time.monotonic() + 30
    # The real schema is back once the new defect is refused (the apiserver takes a CRD's change a moment later).
    while cluster.kubectl("replace", "--dry-run=server", "-f", "-", input=json.dumps(new_defect)).returncode == 0:
        assert time.monotonic() < deadline, "the real CRD's schema never came back"
        time.sleep(0.5)
    for new, admitted in ((unchanged_defect, True), (new_defect, False)):
        result = cluster.kubectl("replace", "--dry-run=server", "-f", "-", input=json.dumps(new))
        assert (result.returncode == 0) is admitted, result.stderr
        response = jobgate_update_response(new, old)
        assert response["allowed"] is admitted, response
