"""Volcano Jobs reconciled by the controller on the real control plane; the tests play the kubelet."""

from __future__ import annotations

import base64
import json
import textwrap
import time
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import Cluster, ControllerProcess, controller_namespace, leading_controller, wait_until

NS = "vc"


@pytest.fixture(scope="module")
def controller(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    kubeconfig = controller_namespace(cluster, NS, tmp_path_factory.mktemp("vc"))
    process = leading_controller(kubeconfig, NS, tmp_path_factory.mktemp("vc-log") / "controller.log")
    yield process
    process.stop()


def job(name: str, tasks: str, extra: str = "") -> str:
    return textwrap.dedent(
        f"""
        apiVersion: batch.volcano.sh/v1alpha1
        kind: Job
        metadata: {{name: {name}}}
        spec:
        """
    ) + textwrap.indent(textwrap.dedent(extra).strip() + "\ntasks:\n" + textwrap.dedent(tasks).strip(), "  ")


def worker(name: str = "worker", replicas: int = 2, extra: str = "") -> str:
    lines = [f"- name: {name}", f"  replicas: {replicas}"]
    lines += [f"  {line}" for line in textwrap.dedent(extra).strip().splitlines() if line]
    lines.append(f"  template: {{spec: {{restartPolicy: Never, containers: [{{name: {name}, image: busybox}}]}}}}")
    return "\n".join(lines)


def apply(cluster: Cluster, manifest: str) -> None:
    result = cluster.kubectl("apply", "-n", NS, "-f", "-", input=manifest)
    assert result.returncode == 0, result.stderr + manifest


def pods(cluster: Cluster, name: str) -> dict[str, dict]:
    listing = cluster.get_json("pods", "-n", NS, "-l", f"volcano.sh/job-name={name}")
    return {p["metadata"]["name"]: p for p in listing["items"] if not p["metadata"].get("deletionTimestamp")}


def status(cluster: Cluster, name: str) -> dict:
    result = cluster.kubectl("get", "vcjob", name, "-n", NS, "-o", "json")
    return json.loads(result.stdout).get("status", {}) if result.returncode == 0 else {}


def phase(cluster: Cluster, name: str) -> str | None:
    return status(cluster, name).get("state", {}).get("phase")


def wait_phase(cluster: Cluster, name: str, wanted: str, timeout: float = 30) -> dict:
    wait_until(lambda: phase(cluster, name) == wanted, timeout, message=f"{name} {wanted} (now {phase(cluster, name)})")
    return status(cluster, name)


def set_pod(cluster: Cluster, name: str, pod_phase: str, exit_code: int | None = None) -> None:
    """What a kubelet would write: the phase and the first container's state."""
    pod = cluster.get_json("pod", name, "-n", NS)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if exit_code is not None:
        state: dict = {"terminated": {"exitCode": exit_code, "startedAt": now, "finishedAt": now}}
    else:
        state = {"running": {"startedAt": now}} if pod_phase == "Running" else {"waiting": {"reason": "Creating"}}
    container = pod["spec"]["containers"][0]
    statuses = [{"name": container["name"], "image": container["image"], "imageID": "", "ready": pod_phase == "Running",
                 "restartCount": 0, "state": state}]  # fmt: skip
    patch = json.dumps({"status": {"phase": pod_phase, "containerStatuses": statuses}})
    cluster.kubectl("patch", "pod", name, "-n", NS, "--subresource=status", "--type=merge", "-p", patch, check=True)


def started(cluster: Cluster, name: str, count: int) -> dict[str, dict]:
    """Wait for ``count`` pods, mark them Running, wait for the job to run."""
    current = wait_until(lambda: len(pods(cluster, name)) == count and pods(cluster, name), message=f"{count} pods")
    for pod in current:
        set_pod(cluster, pod, "Running")
    wait_phase(cluster, name, "Running")
    return pods(cluster, name)


def uids(found: dict[str, dict]) -> dict[str, str]:
    return {name: pod["metadata"]["uid"] for name, pod in found.items()}


def env_of(pod: dict) -> dict[str, object]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in pod["spec"]["containers"][0].get("env", [])}


def test_phases_children_plugins_and_kubectl_get(cluster: Cluster, controller: ControllerProcess) -> None:
    apply(cluster, job("life", worker("ps", 1) + "\n" + worker("worker", 2), "plugins: {env: [], svc: []}"))
    found = wait_until(lambda: len(pods(cluster, "life")) == 3 and pods(cluster, "life"), message="3 pods")
    assert phase(cluster, "life") == "Pending"
    pod = found["life-worker-1"]
    labels, annotations = pod["metadata"]["labels"], pod["metadata"]["annotations"]
    assert labels["volcano.sh/task-spec"] == "worker" and labels["volcano.sh/job-namespace"] == NS
    assert annotations["volcano.sh/job-version"] == "0" and annotations["volcano.sh/task-index"] == "1"
    uid = cluster.get_json("vcjob", "life", "-n", NS)["metadata"]["uid"]
    assert annotations["scheduling.k8s.io/group-name"] == f"life-{uid}"
    group = cluster.get_json("podgroup", f"life-{uid}", "-n", NS)
    assert group["spec"]["minMember"] == 3
    assert pod["spec"]["schedulerName"] == "volcano"
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("life-worker-1", "life")
    env = env_of(pod)
    assert env["VC_TASK_INDEX"] == env["VK_TASK_INDEX"] == "1"
    assert env["VC_WORKER_HOSTS"] == {"configMapKeyRef": {"name": "life-svc", "key": "VC_WORKER_HOSTS"}}
    service = cluster.get_json("service", "life", "-n", NS)
    assert service["spec"]["clusterIP"] == "None"
    hosts = cluster.get_json("configmap", "life-svc", "-n", NS)["data"]
    assert hosts["worker.host"] == "life-worker-0.life\nlife-worker-1.life"
    for name in found:
        set_pod(cluster, name, "Running")
    running = wait_phase(cluster, "life", "Running")
    wait_until(lambda: status(cluster, "life").get("running") == 3, message="3 running")
    assert running["minAvailable"] == 3
    table = cluster.kubectl("get", "vcjob", "life", "-n", NS, check=True).stdout
    assert "STATUS" in table.splitlines()[0] and "Running" in table.splitlines()[1]
    for name in found:
        set_pod(cluster, name, "Succeeded", exit_code=0)
    done = wait_phase(cluster, "life", "Completed")
    assert [c["status"] for c in done["conditions"]] == ["Pending", "Running", "Completed"]
    wait_until(lambda: status(cluster, "life").get("succeeded") == 3, message="3 succeeded")
    assert status(cluster, "life")["taskStatusCount"]["worker"]["phase"] == {"Succeeded": 2}


def test_restart_job_recreates_every_pod_with_a_new_version(cluster: Cluster, controller: ControllerProcess) -> None:
    apply(cluster, job("rjob", worker(), "policies: [{event: PodFailed, action: RestartJob}]"))
    before = uids(started(cluster, "rjob", 2))
    set_pod(cluster, "rjob-worker-0", "Failed", exit_code=1)
    wait_until(
        lambda: (
            len(pods(cluster, "rjob")) == 2 and not set(uids(pods(cluster, "rjob")).values()) & set(before.values())
        ),
        message="new pods",
    )
    assert all(p["metadata"]["annotations"]["volcano.sh/job-version"] == "1" for p in pods(cluster, "rjob").values())
    current = status(cluster, "rjob")
    assert (current["retryCount"], current["version"]) == (1, 1)
    assert "Restarting" in [c["status"] for c in current["conditions"]]


def test_restart_task_and_restart_pod(cluster: Cluster, controller: ControllerProcess) -> None:
    tasks = worker("ps", 1) + "\n" + worker("worker", 2, "policies: [{event: PodFailed, action: RestartTask}]")
    apply(cluster, job("rtask", tasks))
    before = uids(started(cluster, "rtask", 3))
    set_pod(cluster, "rtask-worker-1", "Failed", exit_code=1)
    wait_until(
        lambda: (
            {n for n, u in uids(pods(cluster, "rtask")).items() if u != before.get(n)}
            == {"rtask-worker-0", "rtask-worker-1"}
        ),
        message="the worker task recreated",
    )
    assert uids(pods(cluster, "rtask"))["rtask-ps-0"] == before["rtask-ps-0"]

    apply(cluster, job("rpod", worker(replicas=3, extra="policies: [{exitCode: 7, action: RestartPod}]")))
    before = uids(started(cluster, "rpod", 3))
    set_pod(cluster, "rpod-worker-2", "Failed", exit_code=7)
    wait_until(lambda: uids(pods(cluster, "rpod")).get("rpod-worker-2") not in (None, before["rpod-worker-2"]))
    after = uids(pods(cluster, "rpod"))
    assert (after["rpod-worker-0"], after["rpod-worker-1"]) == (before["rpod-worker-0"], before["rpod-worker-1"])
    assert status(cluster, "rpod")["retryCount"] == 1


def test_abort_terminate_and_complete(cluster: Cluster, controller: ControllerProcess) -> None:
    apply(cluster, job("abort", worker(replicas=3), "policies: [{event: PodFailed, action: AbortJob}]"))
    apply(cluster, job("term", worker(), "policies: [{events: ['*'], action: TerminateJob}]"))
    master = worker("master", 1, "policies: [{event: TaskCompleted, action: CompleteJob}]")
    apply(cluster, job("comp", master + "\n" + worker()))
    started(cluster, "abort", 3)
    started(cluster, "term", 2)
    started(cluster, "comp", 3)
    set_pod(cluster, "abort-worker-0", "Failed", exit_code=2)
    set_pod(cluster, "term-worker-1", "Failed", exit_code=2)
    set_pod(cluster, "comp-master-0", "Succeeded", exit_code=0)
    aborted = wait_phase(cluster, "abort", "Aborted")
    assert "Aborting" in [c["status"] for c in aborted["conditions"]]
    assert sorted(pods(cluster, "abort")) == ["abort-worker-0"]  # the failed pod stays for its logs
    wait_phase(cluster, "term", "Terminated")
    assert sorted(pods(cluster, "term")) == ["term-worker-1"]
    wait_phase(cluster, "comp", "Completed")
    assert sorted(pods(cluster, "comp")) == ["comp-master-0"]


def test_max_retry_fails_the_job(cluster: Cluster, controller: ControllerProcess) -> None:
    apply(cluster, job("retry", worker(replicas=1), "maxRetry: 2\npolicies: [{event: PodFailed, action: RestartJob}]"))
    first = uids(started(cluster, "retry", 1))
    set_pod(cluster, "retry-worker-0", "Failed", exit_code=1)
    wait_until(lambda: uids(pods(cluster, "retry")).get("retry-worker-0") not in (None, first["retry-worker-0"]))
    started(cluster, "retry", 1)
    set_pod(cluster, "retry-worker-0", "Failed", exit_code=1)
    failed = wait_phase(cluster, "retry", "Failed")
    assert failed["retryCount"] == 2
    assert pods(cluster, "retry")["retry-worker-0"]["status"]["phase"] == "Failed"  # kept at the last retry


def test_no_policy_waits_for_every_pod_then_decides(cluster: Cluster, controller: ControllerProcess) -> None:
    apply(cluster, job("nopol", worker()))
    started(cluster, "nopol", 2)
    set_pod(cluster, "nopol-worker-0", "Failed", exit_code=1)
    wait_until(lambda: status(cluster, "nopol").get("failed") == 1, message="one failed")
    assert phase(cluster, "nopol") == "Running"
    set_pod(cluster, "nopol-worker-1", "Succeeded", exit_code=0)
    wait_phase(cluster, "nopol", "Failed")


def test_pod_evicted_policy(cluster: Cluster, controller: ControllerProcess) -> None:
    apply(cluster, job("evict", worker(), "policies: [{event: PodEvicted, action: AbortJob}]"))
    started(cluster, "evict", 2)
    wait_until(lambda: status(cluster, "evict").get("running") == 2, message="the running pods written")
    cluster.kubectl("delete", "pod", "evict-worker-1", "-n", NS, "--wait=false", check=True)
    wait_phase(cluster, "evict", "Aborted")


def test_ssh_plugin_secret_and_mount(cluster: Cluster, controller: ControllerProcess) -> None:
    apply(cluster, job("sshj", worker("master", 1) + "\n" + worker(), "plugins: {ssh: [], svc: []}"))
    found = wait_until(lambda: len(pods(cluster, "sshj")) == 3 and pods(cluster, "sshj"), message="3 pods")
    secret = wait_until(
        lambda: cluster.kubectl("get", "secret", "sshj-ssh", "-n", NS, "-o", "json").stdout, message="ssh secret"
    )
    data = json.loads(secret)["data"]
    assert base64.b64decode(data["id_rsa"]).startswith(b"-----BEGIN RSA PRIVATE KEY-----")
    assert base64.b64decode(data["authorized_keys"]) == base64.b64decode(data["id_rsa.pub"])
    mounts = found["sshj-worker-0"]["spec"]["containers"][0]["volumeMounts"]
    assert {"name": "sshj-ssh", "mountPath": "/root/.ssh", "subPath": ".ssh"} in mounts


def test_ttl_deletes_the_finished_job(cluster: Cluster, controller: ControllerProcess) -> None:
    apply(cluster, job("vttl", worker(replicas=1), "ttlSecondsAfterFinished: 2"))
    started(cluster, "vttl", 1)
    set_pod(cluster, "vttl-worker-0", "Succeeded", exit_code=0)
    wait_phase(cluster, "vttl", "Completed")
    wait_until(lambda: cluster.kubectl("get", "vcjob", "vttl", "-n", NS).returncode != 0, 20, message="job deleted")
