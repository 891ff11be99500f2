"""OpenReports on a real apiserver with OpenReports' own CRDs: as a policy tightens and relaxes, the
controller's audit creates, updates and deletes one ``Report`` per violating job, and the garbage
collector deletes a job's Report with the job.

The CRDs are OpenReports' own, read from their Go module at a pinned release
(``github.com/openreports/reports-api`` v0.2.1, ``config/crd/openreports.io_reports.yaml`` and
``openreports.io_clusterreports.yaml``) in the Go module cache, as the Volcano CRD of
``test_policy_admission.py`` is: nothing of theirs is copied into this repository.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import IN_CI, Cluster, ControllerProcess, controller_namespace, wait_until

OPENREPORTS_MODULE = "github.com/openreports/reports-api"
OPENREPORTS_VERSION = "v0.2.1"
NAMESPACE = "openreports-audited"


def openreports_crds() -> list[Path]:
    """OpenReports' CRD manifests from its Go module (downloaded into the module cache if missing)."""
    if shutil.which("go") is None:
        if IN_CI:
            pytest.fail("go is needed to read OpenReports' CRDs from its module")
        pytest.skip("go is not installed")
    with tempfile.TemporaryDirectory(prefix="jobgate-openreports-") as tmp:
        (Path(tmp) / "go.mod").write_text("module jobgate.invalid/openreports\n")
        command = ["go", "mod", "download", "-json", f"{OPENREPORTS_MODULE}@{OPENREPORTS_VERSION}"]
        environment = {**os.environ, "GOFLAGS": "-mod=mod"}
        done = subprocess.run(command, cwd=tmp, capture_output=True, text=True, check=False, env=environment)
    if done.returncode != 0:
        message = f"cannot download {OPENREPORTS_MODULE}@{OPENREPORTS_VERSION}: {done.stderr[-2000:]}"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    directory = Path(json.loads(done.stdout)["Dir"]) / "config" / "crd"
    return [directory / "openreports.io_reports.yaml", directory / "openreports.io_clusterreports.yaml"]


def tfjob(name: str, gpus: int) -> dict:
    container = {"name": "tensorflow", "image": "tf:2", "resources": {"limits": {"nvidia.com/gpu": gpus}}}
    return {
        "apiVersion": "training.kubedl.io/v1alpha1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {"containers": [container]}}}}},
    }


def policy(max_gpus: int) -> dict:
    return {
        "apiVersion": "policy.jobgate.io/v1alpha1",
        "kind": "TrainingJobPolicy",
        "metadata": {"name": "reported", "namespace": NAMESPACE},
        "spec": {"enforcementAction": "Audit", "limits": {"maxGPUsPerJob": max_gpus}},
    }


def test_reports_follow_the_audit_as_a_policy_tightens_and_relaxes(cluster: Cluster, tmp_path: Path):
    for crd in openreports_crds():
        cluster.kubectl("apply", "--server-side", "-f", str(crd), check=True)
    wait_until(lambda: cluster.kubectl("get", "reports.openreports.io", "-A").returncode == 0, 60, message="CRD")
    kubeconfig = controller_namespace(cluster, NAMESPACE, tmp_path)
    for name, gpus in (("small", 1), ("medium", 2), ("large", 4)):
        cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(tfjob(name, gpus)), check=True)
    controller = ControllerProcess(kubeconfig, NAMESPACE, tmp_path / "controller.log", "--policy-audit-interval", "2")

    def reports() -> dict[str, dict]:
        listed = cluster.get_json("reports.openreports.io", "-n", NAMESPACE)
        return {r["scope"]["name"]: r for r in listed["items"]}

    def uid(name: str) -> str:
        return cluster.get_json("tfjob.training.kubedl.io", name, "-n", NAMESPACE)["metadata"]["uid"]

    try:
        wait_until(controller.is_leader, 30, message="controller leadership")
        cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(policy(3)), check=True)
        wait_until(lambda: set(reports()) == {"large"}, 60, message="a Report of the one violating job")
        large = reports()["large"]
        assert large["metadata"]["name"] == f"jobgate-{uid('large')}"
        assert large["metadata"]["ownerReferences"][0]["uid"] == uid("large")
        assert large["source"] == "jobgate" and large["summary"]["fail"] == 1
        (result,) = large["results"]
        assert result["policy"] == f"TrainingJobPolicy/{NAMESPACE}/reported"
        assert result["rule"] == "policy/max-gpus-per-job"
        assert (result["result"], result["scored"], result["severity"]) == ("fail", True, "medium")
        assert "exceeds 3 GPUs per job" in result["message"]
        first_id = result["properties"]["resultID"]
        version = large["metadata"]["resourceVersion"]
        # Tightened: another job violates (created), the large one's message changes (updated).
        cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(policy(1)), check=True)
        wait_until(lambda: set(reports()) == {"large", "medium"}, 60, message="a second Report")
        wait_until(lambda: "exceeds 1 GPUs" in reports()["large"]["results"][0]["message"], 60, message="update")
        assert reports()["large"]["results"][0]["properties"]["resultID"] == first_id  # same finding, same id
        # Audits that change nothing write nothing.
        settled = reports()["large"]["metadata"]["resourceVersion"]
        assert settled != version
        time.sleep(6)  # three more audits
        assert reports()["large"]["metadata"]["resourceVersion"] == settled
        # Relaxed: the medium job no longer violates: its Report is deleted.
        cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(policy(3)), check=True)
        wait_until(lambda: set(reports()) == {"large"}, 60, message="the medium job's Report deleted")
        # The large job deleted: the garbage collector takes its Report with it.
        cluster.kubectl("delete", "tfjob.training.kubedl.io", "large", "-n", NAMESPACE, check=True)
        wait_until(lambda: reports() == {}, 90, message="the Report deleted with its job")
    finally:
        controller.stop()
        cluster.kubectl("delete", "namespace", NAMESPACE, "--wait=false")
