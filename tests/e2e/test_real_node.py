"""Jobs whose pods really run: a kubelet node, containerd, bridge CNI and cluster DNS (envtest.node).

Every replica runs the job image's ``rendezvous.py`` (envtest/jobimage): it reads only the
environment jobgate's controller injected, reaches its peers over TCP through the headless
services the controller created, and exits 0. Nothing here patches a status: jobs finish
because real processes exit.

A later family needs one manifest and one test, built with ``container``/``template``/``replica``
below. Host lists need no new code: Kubernetes expands ``$(VAR)`` in a container's command from
its environment, so e.g. Volcano's ``container("main", "hosts", "--hosts", "$(VC_WORKER_HOSTS)",
"--index", "$(VC_TASK_INDEX)", "--port", "2222", port=2222)`` meshes the workers; a variable with
another shape (DI_NODES, T9k's substituted values) gets a small planner in ``rendezvous.py``.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from envtest.node import JOB_IMAGE
from tests.e2e.conftest import (
    Cluster,
    ControllerProcess,
    apply_rbac_from,
    token_kubeconfig,
    wait_until,
)

pytestmark = [pytest.mark.e2e, pytest.mark.node]

NS = "node-e2e"
PROGRAM = ["python3", "/usr/local/bin/rendezvous.py"]


@pytest.fixture(scope="module")
def controller(node_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    apply_rbac_from(node_cluster, "manifests/base")
    node_cluster.kubectl("create", "namespace", NS, check=True)
    kubeconfig = token_kubeconfig(node_cluster, "jobgate-controller", tmp_path_factory.mktemp("node-ctrl") / "kc")
    process = ControllerProcess(kubeconfig, NS, tmp_path_factory.mktemp("node-ctrl-log") / "controller.log")
    wait_until(process.is_leader, 30, message="controller leadership")
    yield process
    process.stop()


def container(name: str, *args: str, state_dir: Path | None = None, port: int | None = None) -> dict:
    spec: dict = {
        "name": name,
        "image": JOB_IMAGE,
        "imagePullPolicy": "Never",
        "command": [*PROGRAM, *args],
    }
    if port is not None:
        spec["ports"] = [{"containerPort": port}]
    if state_dir is not None:
        spec["volumeMounts"] = [{"name": "state", "mountPath": "/state"}]
    return spec


def template(*containers: dict, state_dir: Path | None = None) -> dict:
    pod: dict = {"spec": {"containers": list(containers), "terminationGracePeriodSeconds": 1}}
    if state_dir is not None:
        pod["spec"]["volumes"] = [{"name": "state", "hostPath": {"path": str(state_dir), "type": "Directory"}}]
    return pod


def replica(count: int, pod: dict, restart_policy: str | None = None) -> dict:
    spec: dict = {"replicas": count, "template": pod}
    if restart_policy:
        spec["restartPolicy"] = restart_policy
    return spec


def kubedl_job(kind: str, name: str, replica_key: str, replicas: dict[str, dict], **spec: object) -> dict:
    return {
        "apiVersion": "training.kubedl.io/v1alpha1",
        "kind": kind,
        "metadata": {"name": name, "namespace": NS},
        "spec": {**spec, replica_key: replicas},
    }


def apply(cluster: Cluster, job: dict) -> None:
    cluster.kubectl("apply", "-f", "-", input=json.dumps(job), check=True)


def job_pods(cluster: Cluster, name: str) -> dict[str, dict]:
    listing = cluster.get_json("pods", "-n", NS, "-l", f"job-name={name}")
    return {p["metadata"]["name"]: p for p in listing["items"]}


def wait_condition(cluster: Cluster, resource: str, condition: str, timeout: int = 100) -> None:
    """``kubectl wait`` as a user runs it; on failure, say what the job and its pods looked like."""
    result = cluster.kubectl("wait", "-n", NS, f"--for=condition={condition}", resource, f"--timeout={timeout}s")
    if result.returncode != 0:
        described = cluster.kubectl("describe", "-n", NS, resource).stdout
        pods = cluster.kubectl("get", "pods", "-n", NS, "-o", "wide").stdout
        logs = cluster.kubectl("logs", "-n", NS, "-l", f"job-name={resource.split('/')[1]}", "--tail=20").stdout
        raise AssertionError(f"{resource} not {condition}: {result.stderr}\n{described}\n{pods}\n{logs}")


def logs(cluster: Cluster, pod: str) -> str:
    return cluster.kubectl("logs", "-n", NS, pod, check=True).stdout


def delete(cluster: Cluster, resource: str) -> None:
    cluster.kubectl("delete", "-n", NS, resource, "--wait=true", "--timeout=60s")


# --- every family: a distributed job rendezvouses and succeeds on its own ---


def test_tfjob_four_replicas_rendezvous_and_succeed(node_cluster: Cluster, controller: ControllerProcess) -> None:
    pod = template(container("tensorflow", "tf"))
    # cleanPodPolicy None keeps every pod (and its log) after worker 0's success ends the job.
    job = kubedl_job(
        "TFJob", "tf-mesh", "tfReplicaSpecs", {"PS": replica(1, pod), "Worker": replica(3, pod)}, cleanPodPolicy="None"
    )
    apply(node_cluster, job)

    def all_started() -> bool:
        found = job_pods(node_cluster, "tf-mesh")
        states = [s.get("state", {}) for p in found.values() for s in p.get("status", {}).get("containerStatuses", [])]
        return len(found) == 4 and len(states) == 4 and all("running" in s or "terminated" in s for s in states)

    # the times from apply to started and to Succeeded are measured by bench/node_bench.py
    wait_until(all_started, 120, interval=0.2, message="all 4 replicas started")
    wait_condition(node_cluster, "tfjob/tf-mesh", "Succeeded")
    for name in ("tf-mesh-ps-0", "tf-mesh-worker-0", "tf-mesh-worker-1", "tf-mesh-worker-2"):
        text = logs(node_cluster, name)
        assert "rendezvous complete" in text, text
        # every member of the cluster spec reached by its service name, and answered as itself
        assert text.count("reached ") == 3, text
    described = node_cluster.kubectl("describe", "-n", NS, "tfjob/tf-mesh", check=True).stdout
    assert "Succeeded" in described


def test_pytorchjob_ranks_reach_the_master(node_cluster: Cluster, controller: ControllerProcess) -> None:
    pod = template(container("pytorch", "pytorch"))
    job = kubedl_job(
        "PyTorchJob", "pt-star", "pytorchReplicaSpecs", {"Master": replica(1, pod), "Worker": replica(2, pod)}
    )
    apply(node_cluster, job)
    wait_condition(node_cluster, "pytorchjob/pt-star", "Succeeded")
    master = logs(node_cluster, "pt-star-master-0")
    assert "called by rank1" in master and "called by rank2" in master, master


def test_xgboostjob_workers_reach_the_master(node_cluster: Cluster, controller: ControllerProcess) -> None:
    pod = template(container("xgboostjob", "xgboost"))
    job = kubedl_job("XGBoostJob", "xgb", "xgbReplicaSpecs", {"Master": replica(1, pod), "Worker": replica(2, pod)})
    apply(node_cluster, job)
    wait_condition(node_cluster, "xgboostjob/xgb", "Succeeded")
    master = logs(node_cluster, "xgb-master-0")
    assert "called by rank1" in master and "called by rank2" in master, master


def test_mpijob_launcher_reaches_workers_from_the_hostfile(
    node_cluster: Cluster, controller: ControllerProcess
) -> None:
    job = kubedl_job(
        "MPIJob",
        "mpi",
        "mpiReplicaSpecs",
        {
            "Launcher": replica(1, template(container("mpi-launcher", "mpi-launcher", "--port", "2222"))),
            "Worker": replica(2, template(container("mpi-worker", "mpi-worker", "--port", "2222", port=2222))),
        },
        slotsPerWorker=1,
    )
    apply(node_cluster, job)
    wait_condition(node_cluster, "mpijob/mpi", "Succeeded")
    launcher = logs(node_cluster, "mpi-launcher-0")
    assert "reached mpi-worker-0" in launcher and "reached mpi-worker-1" in launcher, launcher


def test_mxjob_scheduler_registers_servers_and_workers(node_cluster: Cluster, controller: ControllerProcess) -> None:
    def spec(replica_type: str, count: int) -> dict:
        return {"mxReplicaType": replica_type, "replicas": count, "template": template(container("mxnet", "mxnet"))}

    job = {
        "apiVersion": "mxnet.mlkube.io/v1beta1",
        "kind": "MxJob",
        "metadata": {"name": "mx", "namespace": NS},
        "spec": {
            "jobMode": "dist",
            "replicaSpecs": [{**spec("SCHEDULER", 1), "PsRootPort": 9091}, spec("SERVER", 1), spec("WORKER", 2)],
        },
    }
    apply(node_cluster, job)
    wait_condition(node_cluster, "mxjob/mx", "Succeeded")
    workers = [name for name in job_pods(node_cluster, "mx") if "-worker-" in name]
    for name in workers:
        assert "reached scheduler" in logs(node_cluster, name)


# --- real failures ---


def test_retryable_exit_code_recreates_the_replica_and_the_job_succeeds(
    node_cluster: Cluster, controller: ControllerProcess, tmp_path: Path
) -> None:
    tmp_path.chmod(0o777)
    pod = template(container("tensorflow", "tf", "--fail-once", "137", state_dir=tmp_path), state_dir=tmp_path)
    job = kubedl_job("TFJob", "tf-retry", "tfReplicaSpecs", {"Worker": replica(2, pod, "ExitCode")}, backoffLimit=4)
    apply(node_cluster, job)
    wait_condition(node_cluster, "tfjob/tf-retry", "Succeeded")
    # each replica really failed once with 137 (its marker) and ran again in a recreated pod
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "failed-once-tf-retry-worker-0",
        "failed-once-tf-retry-worker-1",
    ]
    assert "runs again after its injected failure" in logs(node_cluster, "tf-retry-worker-0")


def test_permanent_exit_code_fails_the_job(node_cluster: Cluster, controller: ControllerProcess) -> None:
    pod = template(container("tensorflow", "tf", "--exit", "3"))
    job = kubedl_job("TFJob", "tf-perm", "tfReplicaSpecs", {"Worker": replica(2, pod, "ExitCode")}, backoffLimit=4)
    apply(node_cluster, job)
    wait_condition(node_cluster, "tfjob/tf-perm", "Failed")
    status = node_cluster.get_json("tfjob/tf-perm", "-n", NS)["status"]
    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert "exited with code 3" in failed["message"], failed


def test_backoff_limit_with_real_retryable_failures(node_cluster: Cluster, controller: ControllerProcess) -> None:
    pod = template(container("tensorflow", "tf", "--exit", "137"))
    job = kubedl_job("TFJob", "tf-backoff", "tfReplicaSpecs", {"Worker": replica(2, pod, "ExitCode")}, backoffLimit=2)
    apply(node_cluster, job)
    wait_condition(node_cluster, "tfjob/tf-backoff", "Failed")
    status = node_cluster.get_json("tfjob/tf-backoff", "-n", NS)["status"]
    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert "backoff limit of 2" in failed["message"], failed


def test_active_deadline_stops_real_processes(node_cluster: Cluster, controller: ControllerProcess) -> None:
    pod = template(container("tensorflow", "tf", "--sleep", "600"))
    job = kubedl_job("TFJob", "tf-deadline", "tfReplicaSpecs", {"Worker": replica(2, pod)}, activeDeadlineSeconds=8)
    apply(node_cluster, job)
    wait_condition(node_cluster, "tfjob/tf-deadline", "Failed", timeout=100)
    status = node_cluster.get_json("tfjob/tf-deadline", "-n", NS)["status"]
    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert "DeadlineExceeded" in failed.get("reason", "") + failed.get("message", ""), failed
    wait_until(lambda: not job_pods(node_cluster, "tf-deadline"), 60, message="the sleeping pods are gone")


def test_pod_deleted_by_hand_is_recreated(node_cluster: Cluster, controller: ControllerProcess) -> None:
    pod = template(container("tensorflow", "tf", "--sleep", "6"))
    job = kubedl_job("TFJob", "tf-del", "tfReplicaSpecs", {"Worker": replica(2, pod)}, cleanPodPolicy="None")
    apply(node_cluster, job)

    def running_uid() -> str | None:
        found = job_pods(node_cluster, "tf-del").get("tf-del-worker-1")
        return found["metadata"]["uid"] if found and found.get("status", {}).get("phase") == "Running" else None

    first = wait_until(running_uid, 90, message="worker 1 running")
    node_cluster.kubectl("delete", "pod", "-n", NS, "tf-del-worker-1", "--wait=false", check=True)
    wait_condition(node_cluster, "tfjob/tf-del", "Succeeded")
    again = job_pods(node_cluster, "tf-del").get("tf-del-worker-1")
    assert again is not None and again["metadata"]["uid"] != first
    assert "rendezvous complete" in logs(node_cluster, "tf-del-worker-1")


@pytest.mark.parametrize(
    ("policy", "left"),
    [
        ("Running", {"tf-clean-{p}-worker-0", "tf-clean-{p}-worker-1"}),
        ("None", {"tf-clean-{p}-ps-0", "tf-clean-{p}-worker-0", "tf-clean-{p}-worker-1"}),
        ("All", set()),
    ],
)
def test_clean_pod_policy_leaves_exactly_its_pods(
    node_cluster: Cluster, controller: ControllerProcess, policy: str, left: set[str]
) -> None:
    # The PS serves on after the rendezvous (like a real parameter server), so it is still
    # running when the workers' success ends the job.
    name = f"tf-clean-{policy.lower()}"
    ps = template(container("tensorflow", "tf", "--linger", "600"))
    worker = template(container("tensorflow", "tf"))
    job = kubedl_job(
        "TFJob",
        name,
        "tfReplicaSpecs",
        {"PS": replica(1, ps), "Worker": replica(2, worker)},
        cleanPodPolicy=policy,
        successPolicy="AllWorkers",  # so no worker is still running when the job succeeds
    )
    apply(node_cluster, job)
    wait_condition(node_cluster, f"tfjob/{name}", "Succeeded")
    expected = {n.format(p=policy.lower()) for n in left}

    def remaining() -> set[str]:
        return {n for n, p in job_pods(node_cluster, name).items() if not p["metadata"].get("deletionTimestamp")}

    try:
        wait_until(lambda: remaining() == expected, 60, message=f"pods left by cleanPodPolicy {policy}")
    except AssertionError:
        raise AssertionError(
            f"cleanPodPolicy {policy} left {sorted(remaining())}, expected {sorted(expected)}"
        ) from None
    time.sleep(2)  # and they stay that way
    assert remaining() == expected
    delete(node_cluster, f"tfjob/{name}")


def test_kubectl_logs_describe_and_wait_as_a_user(node_cluster: Cluster, controller: ControllerProcess) -> None:
    pod = template(container("pytorch", "pytorch"))
    job = kubedl_job(
        "PyTorchJob", "pt-user", "pytorchReplicaSpecs", {"Master": replica(1, pod), "Worker": replica(1, pod)}
    )
    apply(node_cluster, job)
    waited = node_cluster.kubectl(
        "wait", "-n", NS, "--for=condition=Succeeded", "pytorchjob/pt-user", "--timeout=100s", check=True
    )
    assert "condition met" in waited.stdout
    by_label = node_cluster.kubectl("logs", "-n", NS, "-l", "job-name=pt-user", "--prefix", check=True).stdout
    assert "[pod/pt-user-master-0/pytorch] rendezvous complete" in by_label, by_label
    # the master's pod: the worker's may be cleaned up (cleanPodPolicy Running) once the master succeeded
    described = node_cluster.kubectl("describe", "-n", NS, "pod", "pt-user-master-0", check=True).stdout
    assert "MASTER_ADDR:" in described and "RANK:" in described and "Exit Code:    0" in described, described


def replica_pids(job: str, task: str) -> list[int]:
    """Host PIDs of a TF replica's program, found by the TF_CONFIG jobgate gave it."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = entry.joinpath("environ").read_bytes().split(b"\0")
            cmdline = entry.joinpath("cmdline").read_bytes()
        except OSError:
            continue
        if b"rendezvous.py" not in cmdline:
            continue
        for variable in environ:
            if variable.startswith(b"TF_CONFIG="):
                config = json.loads(variable.split(b"=", 1)[1])
                member = f"{config['task']['type']}-{config['task']['index']}"
                if member.lower() == task.lower() and any(
                    f"{job}-" in h for hosts in config["cluster"].values() for h in hosts
                ):
                    found.append(int(entry.name))
    return found


def test_replica_killed_by_hand_is_recreated_per_exit_code_policy(
    node_cluster: Cluster, controller: ControllerProcess
) -> None:
    # SIGKILL from the host, as an OOM kill would: exit code 137 is retryable under ExitCode.
    pod = template(container("tensorflow", "tf", "--sleep", "8"))
    job = kubedl_job(
        "TFJob",
        "tf-kill",
        "tfReplicaSpecs",
        {"Worker": replica(2, pod, "ExitCode")},
        backoffLimit=3,
        cleanPodPolicy="None",
    )
    apply(node_cluster, job)
    pids = wait_until(lambda: replica_pids("tf-kill", "Worker-1"), 90, message="worker 1's process on the host")
    first = job_pods(node_cluster, "tf-kill")["tf-kill-worker-1"]["metadata"]["uid"]
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    wait_condition(node_cluster, "tfjob/tf-kill", "Succeeded")
    again = job_pods(node_cluster, "tf-kill").get("tf-kill-worker-1")
    assert again is not None and again["metadata"]["uid"] != first
    # the controller said why, as a user sees it in kubectl describe
    described = node_cluster.kubectl("describe", "-n", NS, "tfjob/tf-kill", check=True).stdout
    assert "JobRestarting" in described and "exited with code 137" in described, described


PROBE = """
import socket
print("nameservers", [l.split()[1] for l in open("/etc/resolv.conf") if l.startswith("nameserver")])
routes = [l.split() for l in open("/proc/net/route").read().splitlines()[1:]]
print("default route", any(r[1] == "00000000" for r in routes))
print("cluster name", socket.gethostbyname("kubernetes.default.svc.cluster.local"))
try:
    print("outside name", socket.gethostbyname("jobgate-probe.invalid"))
except OSError as exc:
    print("outside name refused", type(exc).__name__)
"""


def test_pods_reach_only_the_cluster(node_cluster: Cluster, controller: ControllerProcess) -> None:
    """The safety settings hold inside a pod: cluster DNS only, no default route, no outside name."""
    from envtest.node import NODE_IP

    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "net-probe", "namespace": NS},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "probe", "image": JOB_IMAGE, "imagePullPolicy": "Never", "command": ["python3", "-c", PROBE]}
            ],
        },
    }
    node_cluster.kubectl("apply", "-f", "-", input=json.dumps(pod), check=True)
    node_cluster.kubectl(
        "wait", "-n", NS, "--for=jsonpath={.status.phase}=Succeeded", "pod/net-probe", "--timeout=60s", check=True
    )
    text = logs(node_cluster, "net-probe")
    assert f"nameservers ['{NODE_IP}']" in text, text
    assert "default route False" in text, text
    assert "cluster name 10.0.0.1" in text, text
    assert "outside name refused" in text, text


def test_an_image_that_is_not_imported_is_never_pulled_from_outside(
    node_cluster: Cluster, controller: ControllerProcess
) -> None:
    """containerd tries the registry's own host after the mirrors: it must end on the loopback proxy."""
    node_cluster.kubectl(
        "run", "pull-probe", "-n", NS, "--image=docker.io/library/busybox:1.36", "--image-pull-policy=IfNotPresent",
        "--restart=Never", check=True,
    )  # fmt: skip
    log = node_cluster.plane.work_dir.parent / "containerd.log"  # type: ignore[union-attr]

    def pull_failed() -> bool:
        return 'PullImage \\"docker.io/library/busybox:1.36\\" failed' in log.read_text(errors="replace")

    wait_until(pull_failed, 60, message="the pull attempt to fail")
    attempts = [line for line in log.read_text(errors="replace").splitlines() if "trying next host" in line]
    assert attempts, "containerd made no pull attempt"
    for line in attempts:
        assert "dial tcp 127.0.0.1:1: connect: connection refused" in line, line
    node_cluster.kubectl("delete", "pod", "-n", NS, "pull-probe", "--wait=false")
