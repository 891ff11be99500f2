"""Volcano's remaining events and actions on the real control plane: Unknown, PodPending and
delayed actions, RestartPartition, Commands (suspend/resume), PodGroup gating, the svc
NetworkPolicy and the hosts ConfigMap after a scale. The tests play the kubelet and the scheduler."""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import POD_GROUP_CRD, REPO, Cluster, ControllerProcess, controller_namespace, wait_until
from tests.e2e.test_volcano_controller import job, uids, worker

NS = "vc-actions"
GATED_NS = "vc-gated"
LATE_NS = "vc-late-commands"
LATE_PG_NS = "vc-late-podgroups"

# Volcano's Command API (bus.volcano.sh), as jobgate ships it: vcctl job suspend|resume writes these.
COMMAND_CRD = REPO / "manifests/base/crds/bus.volcano.sh_commands.yaml"


def install_command_crd(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", str(COMMAND_CRD), check=True)
    cluster.kubectl("wait", "--for=condition=Established", "crd/commands.bus.volcano.sh", check=True)


def _leading(kubeconfig: str, namespace: str, log: Path, *extra: str) -> ControllerProcess:
    process = ControllerProcess(kubeconfig, namespace, log, *extra)
    wait_until(process.is_leader, 30, message="controller leadership")
    return process


@pytest.fixture(scope="module")
def controller(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    install_command_crd(cluster)
    kubeconfig = controller_namespace(cluster, NS, tmp_path_factory.mktemp("vca"))
    process = _leading(kubeconfig, NS, tmp_path_factory.mktemp("vca-log") / "controller.log")
    yield process
    process.stop()


@pytest.fixture(scope="module")
def gated_controller(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    controller_namespace(cluster, GATED_NS, tmp_path_factory.mktemp("vcg"))
    log = tmp_path_factory.mktemp("vcg-log") / "controller.log"
    # The service account may only hold the one jobgate-controller Lease, which this module's other
    # controller holds: this second one runs as the cluster admin, under a Lease of its own.
    lease = ("--lease-name", "jobgate-gated-test")
    process = _leading(cluster.kubeconfig, GATED_NS, log, *lease, "--wait-for-pod-group")
    yield process
    process.stop()


def apply(cluster: Cluster, manifest: str, namespace: str = NS) -> None:
    result = cluster.kubectl("apply", "-n", namespace, "-f", "-", input=manifest)
    assert result.returncode == 0, result.stderr + manifest


def pods(cluster: Cluster, name: str, namespace: str = NS) -> dict[str, dict]:
    listing = cluster.get_json("pods", "-n", namespace, "-l", f"volcano.sh/job-name={name}")
    return {p["metadata"]["name"]: p for p in listing["items"] if not p["metadata"].get("deletionTimestamp")}


def status(cluster: Cluster, name: str, namespace: str = NS) -> dict:
    result = cluster.kubectl("get", "vcjob", name, "-n", namespace, "-o", "json")
    return json.loads(result.stdout).get("status", {}) if result.returncode == 0 else {}


def phase(cluster: Cluster, name: str, namespace: str = NS) -> str | None:
    return status(cluster, name, namespace).get("state", {}).get("phase")


def wait_phase(cluster: Cluster, name: str, wanted: str, timeout: float = 30, namespace: str = NS) -> dict:
    wait_until(
        lambda: phase(cluster, name, namespace) == wanted,
        timeout,
        message=f"{name} {wanted} (now {phase(cluster, name, namespace)})",
    )
    return status(cluster, name, namespace)


def set_phase_of(cluster: Cluster, pod: str, pod_phase: str) -> None:
    patch = json.dumps({"status": {"phase": pod_phase}})
    cluster.kubectl("patch", "pod", pod, "-n", NS, "--subresource=status", "--type=merge", "-p", patch, check=True)


def started(cluster: Cluster, name: str, count: int) -> dict[str, dict]:
    current = wait_until(lambda: len(pods(cluster, name)) == count and pods(cluster, name), message=f"{count} pods")
    for pod in current:
        set_pod_ns(cluster, pod, "Running")
    wait_phase(cluster, name, "Running")
    return pods(cluster, name)


def set_pod_ns(cluster: Cluster, pod: str, pod_phase: str, exit_code: int | None = None) -> None:
    """What a kubelet would write in this module's namespace: the phase and the first container's state."""
    found = cluster.get_json("pod", pod, "-n", NS)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if exit_code is not None:
        state: dict = {"terminated": {"exitCode": exit_code, "startedAt": now, "finishedAt": now}}
    else:
        state = {"running": {"startedAt": now}} if pod_phase == "Running" else {"waiting": {"reason": "Creating"}}
    container = found["spec"]["containers"][0]
    statuses = [
        {
            "name": container["name"],
            "image": container["image"],
            "imageID": "",
            "ready": pod_phase == "Running",
            "restartCount": 0,
            "state": state,
        }
    ]
    patch = json.dumps({"status": {"phase": pod_phase, "containerStatuses": statuses}})
    cluster.kubectl("patch", "pod", pod, "-n", NS, "--subresource=status", "--type=merge", "-p", patch, check=True)


def test_a_pod_in_phase_unknown_is_replaced_by_its_policy(cluster: Cluster, controller: ControllerProcess) -> None:
    apply(cluster, job("unk", worker(extra="policies: [{event: Unknown, action: RestartPod}]"), "minAvailable: 1"))
    before = uids(started(cluster, "unk", 2))
    set_phase_of(cluster, "unk-worker-1", "Unknown")
    wait_until(
        lambda: (
            (current := uids(pods(cluster, "unk"))).get("unk-worker-1") not in (None, before["unk-worker-1"])
            and current
        ),
        message="unk-worker-1 replaced",
    )
    assert uids(pods(cluster, "unk"))["unk-worker-0"] == before["unk-worker-0"]
    assert status(cluster, "unk")["retryCount"] == 1


def test_a_delayed_restart_waits_for_its_timeout(cluster: Cluster, controller: ControllerProcess) -> None:
    apply(cluster, job("late", worker(), "policies: [{event: PodFailed, action: RestartJob, timeout: 6s}]"))
    started(cluster, "late", 2)
    set_pod_ns(cluster, "late-worker-0", "Failed", exit_code=1)
    timers = wait_until(lambda: status(cluster, "late").get("delayedActions"), message="the delayed action recorded")
    assert phase(cluster, "late") == "Running" and status(cluster, "late").get("version", 0) == 0
    wait_until(lambda: status(cluster, "late").get("version") == 1, 40, message="restarted after the timeout")
    restarted = status(cluster, "late")
    assert restarted["retryCount"] == 1 and "delayedActions" not in restarted
    # The controller's own timestamps (not this test's clock): the restart came no sooner than 6 s after.
    seen = datetime.datetime.fromisoformat(next(iter(timers.values())).replace("Z", "+00:00"))
    restarting = next(c for c in restarted["conditions"] if c["status"] == "Restarting")
    acted = datetime.datetime.fromisoformat(restarting["lastTransitionTime"].replace("Z", "+00:00"))
    assert (acted - seen).total_seconds() >= 6


def test_a_pod_pending_too_long_aborts_the_job(cluster: Cluster, controller: ControllerProcess) -> None:
    apply(cluster, job("stuck", worker(), "policies: [{event: PodPending, action: AbortJob, timeout: 3s}]"))
    wait_until(lambda: len(pods(cluster, "stuck")) == 2, message="2 pods")
    wait_phase(cluster, "stuck", "Aborted", timeout=40)
    assert pods(cluster, "stuck") == {}


def test_restart_partition(cluster: Cluster, controller: ControllerProcess) -> None:
    extra = """
    partitionPolicy: {totalPartitions: 2, partitionSize: 2}
    policies: [{event: PodFailed, action: RestartPartition}]
    """
    apply(cluster, job("part", worker(replicas=4, extra=extra), "minAvailable: 2"))
    before = uids(started(cluster, "part", 4))
    assert {n: p["metadata"]["labels"]["volcano.sh/partition-id"] for n, p in pods(cluster, "part").items()} == {
        "part-worker-0": "0",
        "part-worker-1": "0",
        "part-worker-2": "1",
        "part-worker-3": "1",
    }
    set_pod_ns(cluster, "part-worker-2", "Failed", exit_code=1)
    wait_until(
        lambda: (
            len(current := uids(pods(cluster, "part"))) == 4
            and current["part-worker-3"] != before["part-worker-3"]
            and current
        ),
        message="partition 1 recreated",
    )
    current = uids(pods(cluster, "part"))
    assert current["part-worker-0"] == before["part-worker-0"] and current["part-worker-1"] == before["part-worker-1"]


def command(name: str, target: str, uid: str, action: str) -> str:
    """A Command as vcctl writes it: the job as its target and as its controlling owner."""
    reference = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": target, "uid": uid}
    owner = {**reference, "controller": True, "blockOwnerDeletion": True}
    return json.dumps(
        {
            "apiVersion": "bus.volcano.sh/v1alpha1",
            "kind": "Command",
            "metadata": {"name": name, "ownerReferences": [owner]},
            "action": action,
            "target": {**owner},
        }
    )


def test_suspend_and_resume_through_commands(cluster: Cluster, controller: ControllerProcess) -> None:
    apply(cluster, job("susp", worker()))
    started(cluster, "susp", 2)
    uid = cluster.get_json("vcjob", "susp", "-n", NS)["metadata"]["uid"]
    apply(cluster, command("susp-abort", "susp", uid, "AbortJob"))
    wait_phase(cluster, "susp", "Aborted")
    assert cluster.kubectl("get", "commands.bus.volcano.sh", "susp-abort", "-n", NS).returncode != 0  # taken once
    assert pods(cluster, "susp") == {}
    apply(cluster, command("susp-resume", "susp", uid, "ResumeJob"))
    wait_until(lambda: len(pods(cluster, "susp")) == 2, message="pods back after resume")
    resumed = status(cluster, "susp")
    assert resumed["retryCount"] == 1 and resumed["version"] == 1
    assert resumed["state"]["phase"] in ("Pending", "Running")


def test_svc_network_policy_and_hosts_after_a_scale(cluster: Cluster, controller: ControllerProcess) -> None:
    apply(cluster, job("scale", worker(), "plugins: {svc: []}"))
    started(cluster, "scale", 2)
    policy = cluster.get_json("networkpolicy", "scale", "-n", NS)
    selector = {"matchLabels": {"volcano.sh/job-name": "scale", "volcano.sh/job-namespace": NS}}
    assert policy["spec"]["podSelector"] == selector
    assert policy["spec"]["ingress"] == [{"from": [{"podSelector": selector}]}]
    patch = json.dumps([{"op": "replace", "path": "/spec/tasks/0/replicas", "value": 3}])
    cluster.kubectl("patch", "vcjob", "scale", "-n", NS, "--type=json", "-p", patch, check=True)
    wait_until(
        lambda: cluster.get_json("configmap", "scale-svc", "-n", NS)["data"].get("VC_WORKER_NUM") == "3",
        message="hosts ConfigMap rewritten",
    )
    hosts = cluster.get_json("configmap", "scale-svc", "-n", NS)["data"]
    assert hosts["VC_WORKER_HOSTS"] == "scale-worker-0.scale,scale-worker-1.scale,scale-worker-2.scale"
    wait_until(lambda: "scale-worker-2" in pods(cluster, "scale"), message="third pod")


def test_svc_network_policy_disabled(cluster: Cluster, controller: ControllerProcess) -> None:
    apply(cluster, job("nonet", worker(), "plugins: {svc: [--disable-network-policy=true]}"))
    wait_until(lambda: len(pods(cluster, "nonet")) == 2, message="2 pods")
    assert cluster.kubectl("get", "configmap", "nonet-svc", "-n", NS).returncode == 0
    assert cluster.kubectl("get", "networkpolicy", "nonet", "-n", NS).returncode != 0


def test_pods_wait_for_the_pod_group_with_the_gang_scheduler_flag(
    cluster: Cluster, gated_controller: ControllerProcess
) -> None:
    apply(cluster, job("gang", worker(), "schedulerName: volcano"), GATED_NS)
    uid = wait_until(lambda: cluster.get_json("vcjob", "gang", "-n", GATED_NS)["metadata"]["uid"], message="job")
    group = f"gang-{uid}"
    wait_until(lambda: cluster.kubectl("get", "podgroup", group, "-n", GATED_NS).returncode == 0, message="podgroup")
    wait_until(
        lambda: cluster.get_json("events", "-n", GATED_NS, "--field-selector", "reason=PodGroupPending")["items"],
        message="PodGroupPending event",
    )
    assert pods(cluster, "gang", GATED_NS) == {}  # the pass that created the PodGroup created no pod
    patch = json.dumps({"status": {"phase": "Inqueue"}})  # what Volcano's scheduler writes
    cluster.kubectl(
        "patch", "podgroup", group, "-n", GATED_NS, "--subresource=status", "--type=merge", "-p", patch, check=True
    )
    wait_until(lambda: len(pods(cluster, "gang", GATED_NS)) == 2, message="pods once the PodGroup is Inqueue")


def controller_without_api(
    cluster: Cluster, tmp_path_factory: pytest.TempPathFactory, crd: str, group: str, namespace: str
) -> ControllerProcess:
    """A leading controller for ``namespace`` started while ``crd`` (of API group ``group``) is deleted,
    asking discovery again every second."""
    cluster.kubectl("delete", "crd", crd, "--wait=true", check=True)
    # Other CRDs of the group (Volcano's Queues beside PodGroups) may stay.
    wait_until(
        lambda: crd not in cluster.kubectl("api-resources", f"--api-group={group}", "-o", "name").stdout.split(),
        message=f"{crd} gone from discovery",
    )
    controller_namespace(cluster, namespace, tmp_path_factory.mktemp(namespace))
    log = tmp_path_factory.mktemp(f"{namespace}-log") / "controller.log"
    process = ControllerProcess(
        cluster.kubeconfig, namespace, log, "--lease-name", f"jobgate-{namespace}-test",
        env={"JOBGATE_COMMAND_CRD_RECHECK_SECONDS": "1"},
    )  # fmt: skip
    wait_until(process.is_leader, 30, message="controller leadership")
    return process


def test_a_command_crd_applied_after_the_controller_started_is_picked_up(
    cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Without Volcano's Command API at start-up the controller asks discovery again and takes Commands
    once the shipped CRD is applied, without a restart. Near the end of this module: it deletes the CRD
    for a while."""
    try:
        process = controller_without_api(
            cluster, tmp_path_factory, "commands.bus.volcano.sh", "bus.volcano.sh", LATE_NS
        )
        try:
            # Logged once the replica leads (a standby watches nothing), just after "became leader".
            notice = "Command API (bus.volcano.sh) is not served: checking again every 1s"
            wait_until(lambda: notice in process.text(), message="the Command API noticed missing")
            install_command_crd(cluster)
            wait_until(lambda: "Command API is now served" in process.text(), message="Command watch started")
            apply(cluster, job("late", worker()), LATE_NS)
            wait_until(lambda: len(pods(cluster, "late", LATE_NS)) == 2, message="2 pods")
            uid = cluster.get_json("vcjob", "late", "-n", LATE_NS)["metadata"]["uid"]
            apply(cluster, command("late-abort", "late", uid, "AbortJob"), LATE_NS)
            wait_phase(cluster, "late", "Aborted", namespace=LATE_NS)
            assert cluster.kubectl("get", "commands.bus.volcano.sh", "late-abort", "-n", LATE_NS).returncode != 0
        finally:
            process.stop()
    finally:
        install_command_crd(cluster)  # the session's other modules expect the shipped CRD


def install_pod_group_crd(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=POD_GROUP_CRD, check=True)
    cluster.kubectl("wait", "--for=condition=Established", "crd/podgroups.scheduling.volcano.sh", check=True)


def test_a_pod_group_crd_applied_after_the_controller_started_turns_gang_scheduling_on(
    cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Volcano installed after jobgate: without the PodGroup API at start-up the controller runs jobs
    without gangs, asks discovery again, and gives each job its PodGroup once the API is served, without
    a restart and without touching the running pods. Last in this module: it deletes the CRD for a while."""
    try:
        process = controller_without_api(
            cluster, tmp_path_factory, "podgroups.scheduling.volcano.sh", "scheduling.volcano.sh", LATE_PG_NS
        )
        try:
            notice = "PodGroup API (scheduling.volcano.sh) is not served: no gang scheduling"
            wait_until(lambda: notice in process.text(), message="the PodGroup API noticed missing")
            apply(cluster, job("early", worker()), LATE_PG_NS)
            before = wait_until(
                lambda: found if len(found := uids(pods(cluster, "early", LATE_PG_NS))) == 2 else None,
                message="2 pods",
            )
            install_pod_group_crd(cluster)
            wait_until(lambda: "PodGroup API is now served: gang scheduling on" in process.text(), message="gang on")
            uid = cluster.get_json("vcjob", "early", "-n", LATE_PG_NS)["metadata"]["uid"]
            wait_until(
                lambda: cluster.kubectl("get", "podgroup", f"early-{uid}", "-n", LATE_PG_NS).returncode == 0,
                message="the job's PodGroup",
            )
            assert uids(pods(cluster, "early", LATE_PG_NS)) == before  # the running pods are kept
        finally:
            process.stop()
    finally:
        install_pod_group_crd(cluster)  # the session's other modules expect it
