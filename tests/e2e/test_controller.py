"""The controller against the real control plane; the tests play the kubelet by patching pod status."""

from __future__ import annotations

import json
import signal
import textwrap
import time
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import Cluster, ControllerProcess, controller_namespace, leading_controller, wait_until

NS = "ctrl"


@pytest.fixture(scope="module")
def controller_kubeconfig(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> str:
    return controller_namespace(cluster, NS, tmp_path_factory.mktemp("ctrl"))


@pytest.fixture(scope="module")
def controller(controller_kubeconfig: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    process = leading_controller(controller_kubeconfig, NS, tmp_path_factory.mktemp("ctrl-log") / "controller.log")
    yield process
    process.stop()


def apply(cluster: Cluster, manifest: str) -> None:
    cluster.kubectl("apply", "-n", NS, "-f", "-", input=textwrap.dedent(manifest), check=True)


def pods(cluster: Cluster, job: str) -> dict[str, dict]:
    listing = cluster.get_json("pods", "-n", NS, "-l", f"job-name={job}")
    return {p["metadata"]["name"]: p for p in listing["items"]}


def services(cluster: Cluster, job: str) -> dict[str, dict]:
    listing = cluster.get_json("services", "-n", NS, "-l", f"job-name={job}")
    return {s["metadata"]["name"]: s for s in listing["items"]}


def job_status(cluster: Cluster, resource: str, name: str) -> dict:
    result = cluster.kubectl("get", resource, name, "-n", NS, "-o", "json")
    return json.loads(result.stdout).get("status", {}) if result.returncode == 0 else {}


def condition(cluster: Cluster, resource: str, name: str, kind: str) -> dict | None:
    for item in job_status(cluster, resource, name).get("conditions", []):
        if item["type"] == kind and item["status"] == "True":
            return item
    return None


def set_pod(cluster: Cluster, name: str, phase: str, *, exit_code: int | None = None, reason: str | None = None):
    pod = cluster.get_json("pod", name, "-n", NS)
    status: dict = {"phase": phase}
    if reason:
        status["reason"] = reason
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    states = []
    for container in pod["spec"]["containers"]:
        if exit_code is None:
            state = (
                {"running": {"startedAt": now}} if phase == "Running" else {"waiting": {"reason": "ContainerCreating"}}
            )
        else:
            state = {"terminated": {"exitCode": exit_code, "reason": "Error" if exit_code else "Completed",
                                    "startedAt": now, "finishedAt": now}}  # fmt: skip
        states.append(
            {
                "name": container["name"],
                "image": container["image"],
                "imageID": "",
                "ready": phase == "Running",
                "restartCount": 0,
                "state": state,
            }
        )
    status["containerStatuses"] = states
    cluster.kubectl(
        "patch", "pod", name, "-n", NS, "--subresource=status", "--type=merge", "-p", json.dumps({"status": status}),
        check=True,
    )  # fmt: skip


def run_all(cluster: Cluster, job: str) -> None:
    for name, pod in pods(cluster, job).items():
        if pod.get("status", {}).get("phase") != "Running":
            set_pod(cluster, name, "Running")


def delete_job(cluster: Cluster, resource: str, name: str) -> None:
    cluster.kubectl("delete", resource, name, "-n", NS, "--ignore-not-found", "--wait=false")


def events(cluster: Cluster, name: str) -> list[dict]:
    listing = cluster.get_json("events", "-n", NS, "--field-selector", f"involvedObject.name={name}")
    return listing["items"]


TFJOB = """
apiVersion: training.kubedl.io/v1alpha1
kind: TFJob
metadata: {{name: {name}}}
spec:
  {extra}
  tfReplicaSpecs:
    PS:
      template: {{spec: {{containers: [{{name: tensorflow, image: tf}}]}}}}
    Worker:
      replicas: {workers}
      template: {{spec: {{containers: [{{name: tensorflow, image: tf}}]}}}}
"""


def tfjob(name: str, workers: int = 2, extra: str = "") -> str:
    return TFJOB.format(name=name, workers=workers, extra=extra or "backoffLimit: 5")


def test_a_job_creates_exactly_its_children(cluster: Cluster, controller: ControllerProcess):
    apply(cluster, tfjob("children"))
    try:
        created = wait_until(lambda: len(pods(cluster, "children")) == 3 and len(services(cluster, "children")) == 3)
        assert created
        found = pods(cluster, "children")
        assert sorted(found) == ["children-ps-0", "children-worker-0", "children-worker-1"]
        job = cluster.get_json("tfjob", "children", "-n", NS)
        pod = found["children-worker-1"]
        labels = pod["metadata"]["labels"]
        assert labels["group-name"] == "training.kubedl.io"
        assert labels["job-name"] == "children"
        assert (labels["replica-type"], labels["replica-index"]) == ("worker", "1")
        (owner,) = pod["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "TFJob", "children", job["metadata"]["uid"], True,
        )  # fmt: skip
        assert pod["spec"]["restartPolicy"] == "Never"
        env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
        config = json.loads(env["TF_CONFIG"])
        assert config["task"] == {"type": "worker", "index": 1}
        assert config["cluster"]["ps"] == [f"children-ps-0.{NS}.svc:2222"]
        service = services(cluster, "children")["children-worker-1"]
        assert service["spec"]["clusterIP"] == "None"
        assert service["spec"]["ports"][0]["port"] == 2222
        uids = {p["metadata"]["uid"] for p in found.values()}
        time.sleep(3)  # more passes (resync, status events) must create nothing new
        again = pods(cluster, "children")
        assert {p["metadata"]["uid"] for p in again.values()} == uids
        assert len(services(cluster, "children")) == 3
        status = job_status(cluster, "tfjob", "children")
        assert status["replicaSummary"] == "PS 0/1, Worker 0/2"
        assert any(c["type"] == "Created" and c["status"] == "True" for c in status["conditions"])
        reasons = [e["reason"] for e in events(cluster, "children")]
        assert "SuccessfulCreatePod" in reasons
        assert "SuccessfulCreatePod" in cluster.kubectl("describe", "tfjob", "children", "-n", NS, check=True).stdout
    finally:
        delete_job(cluster, "tfjob", "children")


def test_phases_drive_the_job_to_success_and_running_pods_are_cleaned(cluster: Cluster, controller: ControllerProcess):
    apply(cluster, tfjob("phases"))
    try:
        wait_until(lambda: len(pods(cluster, "phases")) == 3)
        run_all(cluster, "phases")
        wait_until(lambda: condition(cluster, "tfjob", "phases", "Running"), message="Running")
        assert (
            cluster.kubectl("get", "tfjob", "phases", "-n", NS, check=True).stdout.split("\n")[1].split()[1]
            == "Running"
        )
        set_pod(cluster, "phases-worker-0", "Succeeded", exit_code=0)
        wait_until(lambda: condition(cluster, "tfjob", "phases", "Succeeded"), message="Succeeded")
        status = job_status(cluster, "tfjob", "phases")
        assert status["completionTime"]
        # cleanPodPolicy Running: the running pods go, the succeeded one stays.
        wait_until(lambda: sorted(pods(cluster, "phases")) == ["phases-worker-0"], message="cleanup")
        assert "JobSucceeded" in [e["reason"] for e in events(cluster, "phases")]
    finally:
        delete_job(cluster, "tfjob", "phases")


def test_a_permanent_failure_fails_the_job(cluster: Cluster, controller: ControllerProcess):
    apply(cluster, tfjob("permanent"))
    try:
        wait_until(lambda: len(pods(cluster, "permanent")) == 3)
        run_all(cluster, "permanent")
        set_pod(cluster, "permanent-worker-1", "Failed", exit_code=1)
        failed = wait_until(lambda: condition(cluster, "tfjob", "permanent", "Failed"), message="Failed")
        assert failed["reason"] == "JobFailed"
        assert "permanent-worker-1 exited with code 1" in failed["message"]
        assert job_status(cluster, "tfjob", "permanent")["restartCount"] == 0
    finally:
        delete_job(cluster, "tfjob", "permanent")


def test_retryable_exit_codes_restart_until_the_backoff_limit(cluster: Cluster, controller: ControllerProcess):
    apply(cluster, tfjob("retry", extra="backoffLimit: 2"))
    try:
        wait_until(lambda: len(pods(cluster, "retry")) == 3)
        for restart in (1, 2):
            old = pods(cluster, "retry")["retry-worker-0"]["metadata"]["uid"]
            set_pod(cluster, "retry-worker-0", "Failed", exit_code=137)
            wait_until(
                # One listing per check: the pod may go between two listings.
                lambda old=old: (
                    (pod := pods(cluster, "retry").get("retry-worker-0")) is not None and pod["metadata"]["uid"] != old
                ),
                message="recreated pod",
            )
            assert job_status(cluster, "tfjob", "retry")["restartCount"] == restart
        assert "JobRestarting" in [e["reason"] for e in events(cluster, "retry")]
        set_pod(cluster, "retry-worker-0", "Failed", exit_code=143)
        failed = wait_until(lambda: condition(cluster, "tfjob", "retry", "Failed"), message="Failed")
        assert failed["reason"] == "BackoffLimitExceeded"
    finally:
        delete_job(cluster, "tfjob", "retry")


def test_active_deadline_fails_a_job_that_runs_too_long(cluster: Cluster, controller: ControllerProcess):
    apply(cluster, tfjob("deadline", extra="activeDeadlineSeconds: 3"))
    try:
        wait_until(lambda: len(pods(cluster, "deadline")) == 3)
        run_all(cluster, "deadline")
        failed = wait_until(lambda: condition(cluster, "tfjob", "deadline", "Failed"), 20, message="deadline")
        assert failed["reason"] == "DeadlineExceeded"
        wait_until(lambda: pods(cluster, "deadline") == {}, message="pods stopped")
    finally:
        delete_job(cluster, "tfjob", "deadline")


def test_ttl_deletes_the_job_and_garbage_collection_its_children(cluster: Cluster, controller: ControllerProcess):
    apply(cluster, tfjob("ttl", extra="ttlSecondsAfterFinished: 2\n  cleanPodPolicy: None"))
    wait_until(lambda: len(pods(cluster, "ttl")) == 3 and len(services(cluster, "ttl")) == 3)
    set_pod(cluster, "ttl-worker-0", "Succeeded", exit_code=0)
    wait_until(lambda: condition(cluster, "tfjob", "ttl", "Succeeded"), message="Succeeded")
    wait_until(lambda: cluster.kubectl("get", "tfjob", "ttl", "-n", NS).returncode != 0, 20, message="job deleted")
    wait_until(lambda: not pods(cluster, "ttl") and not services(cluster, "ttl"), 60, message="children collected")


def test_pytorch_mxjob_and_mpi_children(cluster: Cluster, controller: ControllerProcess):
    apply(
        cluster,
        """
        apiVersion: training.kubedl.io/v1alpha1
        kind: PyTorchJob
        metadata: {name: torch}
        spec:
          pytorchReplicaSpecs:
            Master: {template: {spec: {containers: [{name: pytorch, image: torch}]}}}
            Worker: {replicas: 2, template: {spec: {containers: [{name: pytorch, image: torch}]}}}
        ---
        apiVersion: mxnet.mlkube.io/v1beta1
        kind: MxJob
        metadata: {name: mx}
        spec:
          jobMode: dist
          replicaSpecs:
          - {mxReplicaType: SCHEDULER, template: {spec: {containers: [{name: mxnet, image: mx}]}}}
          - {mxReplicaType: SERVER, template: {spec: {containers: [{name: mxnet, image: mx}]}}}
          - {replicas: 2, template: {spec: {containers: [{name: mxnet, image: mx}]}}}
        ---
        apiVersion: training.kubedl.io/v1alpha1
        kind: MPIJob
        metadata: {name: mpi}
        spec:
          slotsPerWorker: 2
          mpiReplicaSpecs:
            Launcher: {template: {spec: {containers: [{name: launcher, image: mpi}]}}}
            Worker: {replicas: 2, template: {spec: {containers: [{name: worker, image: mpi}]}}}
        """,
    )
    try:
        torch = wait_until(lambda: len(pods(cluster, "torch")) == 3 and pods(cluster, "torch"))
        env = {e["name"]: e["value"] for e in torch["torch-worker-1"]["spec"]["containers"][0]["env"]}
        assert (env["MASTER_ADDR"], env["MASTER_PORT"], env["WORLD_SIZE"], env["RANK"]) == (
            "torch-master-0",
            "23456",
            "3",
            "2",
        )
        assert torch["torch-master-0"]["metadata"]["labels"]["job-role"] == "master"
        mx = wait_until(lambda: len(pods(cluster, "mx")) == 4 and pods(cluster, "mx"))
        env = {e["name"]: e["value"] for e in mx["mx-worker-1"]["spec"]["containers"][0]["env"]}
        assert env == {
            "DMLC_PS_ROOT_URI": "mx-scheduler-0",
            "DMLC_PS_ROOT_PORT": "9091",
            "DMLC_NUM_SERVER": "1",
            "DMLC_NUM_WORKER": "2",
            "DMLC_ROLE": "worker",
        }
        assert job_status(cluster, "mxjob", "mx").get("phase") == "Creating"
        mpi = wait_until(lambda: len(pods(cluster, "mpi")) == 3 and pods(cluster, "mpi"))
        config = cluster.get_json("configmap", "mpi-config", "-n", NS)
        assert config["data"]["hostfile"] == "mpi-worker-0 slots=2\nmpi-worker-1 slots=2\n"
        launcher = mpi["mpi-launcher-0"]["spec"]
        assert launcher["containers"][0]["volumeMounts"][-1]["mountPath"] == "/etc/mpi"
        env = {e["name"]: e["value"] for e in launcher["containers"][0]["env"]}
        assert env["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"
    finally:
        for resource, name in (("pytorchjob", "torch"), ("mxjob", "mx"), ("mpijob", "mpi")):
            delete_job(cluster, resource, name)


def test_sigkill_in_the_middle_of_creating_pods_converges_without_duplicates(
    cluster: Cluster, controller: ControllerProcess, controller_kubeconfig: str, tmp_path
):
    workers = 200
    total = workers + 1
    apply(cluster, tfjob("crash", workers=workers))
    replacement: ControllerProcess | None = None
    try:
        # Kill the leader as soon as the first pods appear: the job is half created.
        wait_until(lambda: len(pods(cluster, "crash")) >= 1, 30, interval=0.01, message="first pods")
        controller.stop(signal.SIGKILL)
        survivors = {name: p["metadata"]["uid"] for name, p in pods(cluster, "crash").items()}
        assert len(survivors) < total, "the controller finished before it was killed; make the job bigger"
        replacement = ControllerProcess(controller_kubeconfig, NS, tmp_path / "replacement.log")
        wait_until(replacement.is_leader, 30, message="new leader after the lease expired")
        final = wait_until(lambda: len(found := pods(cluster, "crash")) == total and found, 90, message="all pods")
        assert len(services(cluster, "crash")) == total
        for name, uid in survivors.items():
            assert final[name]["metadata"]["uid"] == uid  # nothing created twice or replaced
        wait_until(
            lambda: job_status(cluster, "tfjob", "crash").get("replicaSummary") == f"PS 0/1, Worker 0/{workers}",
            30,
            message="status converged",
        )
        time.sleep(2)
        assert len(pods(cluster, "crash")) == total
    finally:
        delete_job(cluster, "tfjob", "crash")
        if replacement is not None:
            replacement.stop()
        # Later tests use the module's controller again.
        controller.restart()


def test_only_the_leader_acts_and_a_standby_takes_over(
    cluster: Cluster, controller: ControllerProcess, controller_kubeconfig: str, tmp_path
):
    standby = ControllerProcess(controller_kubeconfig, NS, tmp_path / "standby.log")
    try:
        time.sleep(3)
        assert not standby.is_leader()
        leader_identity = controller.identity()
        apply(cluster, tfjob("first"))
        wait_until(lambda: len(pods(cluster, "first")) == 3)
        assert {e["reportingInstance"] for e in events(cluster, "first")} == {leader_identity}
        killed_at = time.monotonic()
        controller.stop(signal.SIGKILL)
        wait_until(standby.is_leader, 15, message="takeover")
        takeover = time.monotonic() - killed_at
        assert takeover < 4 + 2 + 1  # lease duration + retry period, with a second of slack
        apply(cluster, tfjob("second"))
        wait_until(lambda: len(pods(cluster, "second")) == 3)
        assert {e["reportingInstance"] for e in events(cluster, "second")} == {standby.identity()}
    finally:
        for name in ("first", "second"):
            delete_job(cluster, "tfjob", name)
        standby.stop()
        controller.restart()


def test_sigterm_releases_the_lease_for_a_fast_handover(
    cluster: Cluster, controller: ControllerProcess, controller_kubeconfig: str, tmp_path
):
    standby = ControllerProcess(controller_kubeconfig, NS, tmp_path / "standby2.log")
    try:
        time.sleep(1)
        assert controller.stop(signal.SIGTERM) == 0
        assert "released lease" in controller.text()
        started = time.monotonic()
        wait_until(standby.is_leader, 10, message="takeover after release")
        assert time.monotonic() - started < 3
    finally:
        standby.stop()
        controller.restart()


def test_gang_scheduling_creates_a_pod_group(cluster: Cluster, controller: ControllerProcess):
    apply(cluster, tfjob("gang", extra="schedulingPolicy: {minAvailable: 2, queue: research}"))
    try:
        group = wait_until(
            lambda: (
                (r := cluster.kubectl("get", "podgroup", "gang", "-n", NS, "-o", "json")).returncode == 0
                and json.loads(r.stdout)
            ),
            message="PodGroup",
        )
        assert group["spec"] == {"minMember": 2, "queue": "research"}
        assert group["metadata"]["ownerReferences"][0]["name"] == "gang"
        found = wait_until(lambda: len(pods(cluster, "gang")) == 3 and pods(cluster, "gang"))
        for pod in found.values():
            assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "gang"
            assert pod["spec"]["schedulerName"] == "volcano"
        set_pod(cluster, "gang-worker-0", "Succeeded", exit_code=0)
        wait_until(lambda: cluster.kubectl("get", "podgroup", "gang", "-n", NS).returncode != 0, message="gang over")
    finally:
        delete_job(cluster, "tfjob", "gang")
