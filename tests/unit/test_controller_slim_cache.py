"""The controller's caches keep only what a pass reads (controller/slim.py), and that is enough."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from jobgate.controller.adapters import JOB_UID_LABEL
from jobgate.controller.lifecycle_policy import JOB_VERSION_KEY
from jobgate.controller.slim import slim_pod, slim_pod_group, slim_service, strip_managed_fields

REPO = Path(__file__).resolve().parents[2]
OWNER = {
    "apiVersion": "training.kubedl.io/v1alpha1",
    "kind": "TFJob",
    "name": "job",
    "uid": "u1",
    "controller": True,
    "blockOwnerDeletion": True,
}
MANAGED = [{"manager": "jobgate", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {}}}]


def stored_pod() -> dict:
    """A pod as the apiserver answers a watch: defaults, service account volume, managedFields."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "job-worker-0",
            "namespace": "ns",
            "uid": "p1",
            "resourceVersion": "42",
            "creationTimestamp": "2026-11-26T10:00:00Z",
            "labels": {JOB_UID_LABEL: "u1", "replica-type": "worker", "replica-index": "0"},
            "annotations": {JOB_VERSION_KEY: "2", "example.com/notes": "x" * 1000},
            "ownerReferences": [OWNER],
            "managedFields": MANAGED,
            "deletionTimestamp": "2026-11-26T10:05:00Z",
        },
        "spec": {
            "containers": [
                {"name": "tensorflow", "image": "tf", "env": [{"name": "TF_CONFIG", "value": "{...}"}]},
                {"name": "sidecar", "image": "s"},
            ],
            "volumes": [{"name": "kube-api-access-x", "projected": {"sources": []}}],
            "restartPolicy": "Never",
        },
        "status": {
            "phase": "Failed",
            "reason": "Evicted",
            "conditions": [{"type": "Ready", "status": "False"}],
            "podIP": "10.0.0.1",
            "containerStatuses": [
                {
                    "name": "tensorflow",
                    "image": "tf",
                    "imageID": "sha256:x",
                    "containerID": "containerd://x",
                    "ready": False,
                    "restartCount": 3,
                    "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
                    "lastState": {"terminated": {"exitCode": 1}, "waiting": {"reason": "x"}},
                }
            ],
            "initContainerStatuses": [{"name": "init", "image": "i", "restartCount": 1, "state": {}}],
        },
    }


def test_a_cached_pod_keeps_what_a_pass_reads_and_nothing_else():
    assert slim_pod(stored_pod()) == {
        "metadata": {
            "name": "job-worker-0",
            "namespace": "ns",
            "uid": "p1",
            "labels": {JOB_UID_LABEL: "u1", "replica-type": "worker", "replica-index": "0"},
            "annotations": {JOB_VERSION_KEY: "2"},
            "ownerReferences": [OWNER],
            "deletionTimestamp": "2026-11-26T10:05:00Z",
        },
        "spec": {"containers": [{"name": "tensorflow"}]},
        "status": {
            "phase": "Failed",
            "reason": "Evicted",
            "containerStatuses": [
                {
                    "name": "tensorflow",
                    "restartCount": 3,
                    "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
                    "lastState": {"terminated": {"exitCode": 1}},
                }
            ],
            "initContainerStatuses": [{"name": "init", "restartCount": 1}],
        },
    }


def test_a_cached_service_and_pod_group_keep_their_identity_and_the_group_its_phase():
    service = {"metadata": {**stored_pod()["metadata"]}, "spec": {"clusterIP": "None", "ports": []}}
    assert set(slim_service(service)) == {"metadata"}
    assert "managedFields" not in slim_service(service)["metadata"]
    group = {"metadata": {"name": "job", "namespace": "ns", "uid": "g"}, "spec": {"minMember": 5}}
    assert slim_pod_group({**group, "status": {"phase": "Running", "running": 5}}) == {
        "metadata": {"name": "job", "namespace": "ns", "uid": "g"},
        "status": {"phase": "Running"},
    }


def test_repeated_strings_are_shared_between_a_jobs_children():
    first, second = stored_pod(), stored_pod()
    # Equal strings that are distinct objects, as two parsed watch events give them.
    second["metadata"]["labels"] = {k: "".join(v) for k, v in first["metadata"]["labels"].items()}
    second["metadata"]["ownerReferences"] = [{**OWNER, "uid": "".join(["u", "1"])}]
    a, b = slim_pod(first)["metadata"], slim_pod(second)["metadata"]
    assert a["labels"][JOB_UID_LABEL] is b["labels"][JOB_UID_LABEL]
    assert a["ownerReferences"][0]["uid"] is b["ownerReferences"][0]["uid"]


def test_a_jobs_children_share_one_owner_reference_list_and_pending_pods_one_status():
    import gc

    from jobgate.controller import slim

    first, second = stored_pod(), stored_pod()
    second["metadata"]["ownerReferences"] = [{**OWNER, "uid": "".join(["u", "1"])}]
    for pod in (first, second):
        pod["status"] = {"phase": "Pending"}
    a, b = slim_pod(first), slim_pod(second)
    assert a["metadata"]["ownerReferences"] is b["metadata"]["ownerReferences"]
    assert a["status"] is b["status"] and a["spec"] is b["spec"]
    other_job = slim_service({"metadata": {"name": "s", "ownerReferences": [{**OWNER, "uid": "u2"}]}})
    assert other_job["metadata"]["ownerReferences"] is not a["metadata"]["ownerReferences"]
    assert other_job["metadata"]["ownerReferences"] == [{**OWNER, "uid": "u2"}]
    two = [{**OWNER}, {**OWNER, "controller": False, "uid": "u3"}]  # not the common case: a copy of its own
    assert slim_service({"metadata": {"ownerReferences": two}})["metadata"]["ownerReferences"] == two
    key = ("ownerReferences", *(OWNER.get(f) for f in slim.OWNER_FIELDS))
    assert key in slim._shared
    del a, b
    gc.collect()
    assert key not in slim._shared  # gone with the last child that used it


def test_a_cached_job_is_whole_but_for_managed_fields():
    job = {"metadata": {"name": "j", "namespace": "ns", "managedFields": MANAGED}, "spec": {"x": 1}, "status": {}}
    assert strip_managed_fields(job) == {"metadata": {"name": "j", "namespace": "ns"}, "spec": {"x": 1}, "status": {}}


def test_every_engine_suite_passes_on_children_as_the_cache_keeps_them():
    """The engine's, Volcano's, T9k's and DI-engine's suites again, each pass seeing slim children only."""
    suites = [
        "tests/unit/test_controller_engine.py",
        "tests/unit/test_volcano_controller.py",
        "tests/unit/test_volcano_controller_events.py",
        "tests/unit/test_t9k_controller.py",
        "tests/unit/test_dijob_controller.py",
    ]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.unit.slim_children_plugin",
         *suites],
        check=False, cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    passes = re.search(r"passes on cached children: (\d+)", run.stdout)
    assert passes is not None and int(passes.group(1)) > 100
