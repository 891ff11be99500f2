"""A JobSet's lists: ``jobgate validate`` offline and a real apiserver with JobSet v0.12.0's own CRD give the
same verdict (issue 44): the CRD's list bounds (maxItems) and its list-maps' keys, pod templates included.

A control plane of its own (etcd + kube-apiserver, no node) with JobSet's CRD from its Go module at the
pinned release (``envtest/upstream.py jobset_crd``) and **no webhook**: every refusal here is the CRD's.
Each object is tried with ``kubectl create --dry-run=server`` and with ``jobgate validate`` on the same file;
the refusal names the same field, with the apiserver's message.
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

from tests.e2e.conftest import Cluster, crds_only_cluster, store_under_loosened_crd
from tests.e2e.test_trainer_template_agreement import offline_verdict, server_verdict

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def jobset_crd_only() -> Iterator[Cluster]:
    from envtest.upstream import jobset_crd

    with crds_only_cluster(lambda: [jobset_crd()], "JobSet's CRD", "team-js") as cluster:
        yield cluster


def job(name: str, **fields: Any) -> dict[str, Any]:
    pod = {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox:1.36"}]}}
    return {"name": name, "template": {"spec": {"template": pod}}, **fields}


def jobset(*jobs: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "agreement", "namespace": "team-js"},
        "spec": {"replicatedJobs": list(jobs or [job("a")]), **spec},
    }


def depends(count: int) -> list[dict[str, str]]:
    return [{"name": f"j{i}", "status": "Ready"} for i in range(count)]


def many_jobs(count: int) -> list[dict[str, Any]]:
    return [job(f"j{i}") for i in range(count)]


def in_pod(change: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    obj = jobset()
    change(obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"])
    return obj


POD = "spec.replicatedJobs[0].template.spec.template.spec"
MOUNTED = [{"name": "v", "emptyDir": {}}]

# (id, object, the field the refusal names and its message; None: admitted)
CASES: list[tuple[str, dict[str, Any], str | None]] = [
    ("valid", jobset(), None),
    ("depends-on-five", jobset(*many_jobs(6), job("late", dependsOn=depends(5))), None),
    ("depends-on-too-many", jobset(*many_jobs(6), job("late", dependsOn=depends(6))),
     "spec.replicatedJobs[6].dependsOn: Too many: 6: must have at most 5 items"),
    ("claim-policies-too-many", jobset(volumeClaimPolicies=[{"templates": []} for _ in range(51)]),
     "spec.volumeClaimPolicies: Too many: 51: must have at most 50 items"),
    ("replicated-jobs-duplicate-name", jobset(job("a"), job("a")),
     'spec.replicatedJobs[1]: Duplicate value: {"name":"a"}'),
    ("depends-on-duplicate-name",
     jobset(job("a"), job("b", dependsOn=[{"name": "a", "status": "Ready"}, {"name": "a", "status": "Complete"}])),
     'spec.replicatedJobs[1].dependsOn[1]: Duplicate value: {"name":"a"}'),
    ("containers-duplicate-name", in_pod(lambda p: p["containers"].append({"name": "main", "image": "busybox"})),
     f'{POD}.containers[1]: Duplicate value: {{"name":"main"}}'),
    ("volumes-duplicate-name", in_pod(lambda p: p.update(volumes=MOUNTED * 2)),
     f'{POD}.volumes[1]: Duplicate value: {{"name":"v"}}'),
    ("ports-other-protocol", in_pod(lambda p: p["containers"][0].update(
        ports=[{"containerPort": 80}, {"containerPort": 80, "protocol": "UDP"}])), None),
    ("ports-tcp-by-default", in_pod(lambda p: p["containers"][0].update(
        ports=[{"containerPort": 80}, {"containerPort": 80, "protocol": "TCP"}])),
     f'{POD}.containers[0].ports[1]: Duplicate value: {{"containerPort":80,"protocol":"TCP"}}'),
    ("mounts-of-one-volume", in_pod(lambda p: (p.update(volumes=copy.deepcopy(MOUNTED)), p["containers"][0].update(
        volumeMounts=[{"name": "v", "mountPath": "/a"}, {"name": "v", "mountPath": "/b"}]))), None),
    ("mounts-duplicate-path", in_pod(lambda p: (p.update(volumes=copy.deepcopy(MOUNTED)), p["containers"][0].update(
        volumeMounts=[{"name": "v", "mountPath": "/a"}, {"name": "v", "mountPath": "/a"}]))),
     f'{POD}.containers[0].volumeMounts[1]: Duplicate value: {{"mountPath":"/a"}}'),
    ("scheduling-gates-duplicate", in_pod(lambda p: p.update(schedulingGates=[{"name": "g"}, {"name": "g"}])),
     f'{POD}.schedulingGates[1]: Duplicate value: {{"name":"g"}}'),
]  # fmt: skip


@pytest.mark.parametrize(("obj", "line"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_jobsets_lists_get_the_crds_verdict_offline(jobset_crd_only, tmp_path: Path, obj, line):
    admitted, refusal = server_verdict(jobset_crd_only, obj)
    offline_admitted, report = offline_verdict(tmp_path, obj)
    assert (offline_admitted, admitted) == (line is None, line is None), (refusal, report)
    if line is not None:
        assert line in refusal, refusal
        assert line in report, report


def test_stored_duplicate_keys_are_not_checked_on_update_by_either(jobset_crd_only):
    """A JobSet stored with two containers of one name (while the CRD did not key the list) is updated:
    the apiserver checks list-map keys on UPDATE only when the stored object passes that check, and so
    does jobgate."""
    from envtest.upstream import jobset_crd
    from tests.e2e.conftest import jobgate_update_response

    cluster = jobset_crd_only
    real = yaml.safe_load(jobset_crd().read_text())
    loose = copy.deepcopy(real)
    spec_schema = loose["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    pod_schema = spec_schema["replicatedJobs"]["items"]["properties"]["template"]["properties"]["spec"]
    containers = pod_schema["properties"]["template"]["properties"]["spec"]["properties"]["containers"]
    del containers["x-kubernetes-list-type"]
    del containers["x-kubernetes-list-map-keys"]
    stored = in_pod(lambda p: p["containers"].append({"name": "main", "image": "busybox"}))
    stored["spec"]["suspend"] = True
    stored["metadata"]["name"] = "keys-ratcheted"
    store_under_loosened_crd(cluster, loose, jobset_crd(), stored)
    old = cluster.get_json("jobsets.jobset.x-k8s.io", "keys-ratcheted", "-n", "team-js")
    new = copy.deepcopy(old)
    new["metadata"].setdefault("labels", {})["team"] = "a"
    # The real schema is back once a new duplicate is refused (the apiserver takes a CRD's change a moment later).
    deadline = time.monotonic() + 30
    while server_verdict(cluster, in_pod(lambda p: p["containers"].append({"name": "main", "image": "x"})))[0]:
        assert time.monotonic() < deadline, "the real CRD's schema never came back"
        time.sleep(0.5)
    result = cluster.kubectl("replace", "--dry-run=server", "-f", "-", input=json.dumps(new))
    assert result.returncode == 0, result.stderr
    response = jobgate_update_response(new, old)
    assert response["allowed"] is True, response
