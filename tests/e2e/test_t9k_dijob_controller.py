"""GenericJob and DIJob through the webhook and the controller on the real control plane.

The tests play the kubelet by patching pod status, as in ``test_controller.py``.
"""

from __future__ import annotations

import json
import textwrap
import time
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import Cluster, ControllerProcess, controller_namespace, leading_controller, wait_until

NS = "t9kdi"
GJ = "genericjobs.batch.tensorstack.dev"
DJ = "dijobs.diengine.opendilab.org"


@pytest.fixture(scope="module")
def controller(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    kubeconfig = controller_namespace(cluster, NS, tmp_path_factory.mktemp("t9kdi"))
    process = leading_controller(kubeconfig, NS, tmp_path_factory.mktemp("t9kdi-log") / "controller.log")
    yield process
    process.stop()


def apply(cluster: Cluster, manifest: str) -> None:
    cluster.kubectl("apply", "-n", NS, "-f", "-", input=textwrap.dedent(manifest), check=True)


def pods(cluster: Cluster, job: str) -> dict[str, dict]:
    listing = cluster.get_json("pods", "-n", NS, "-l", f"job-name={job}")
    return {p["metadata"]["name"]: p for p in listing["items"] if not p["metadata"].get("deletionTimestamp")}


def status(cluster: Cluster, resource: str, name: str) -> dict:
    result = cluster.kubectl("get", resource, name, "-n", NS, "-o", "json")
    return json.loads(result.stdout).get("status", {}) if result.returncode == 0 else {}


def phase_is(cluster: Cluster, resource: str, name: str, phase: str, timeout: float = 30) -> dict:
    return wait_until(
        lambda: (s := status(cluster, resource, name)).get("phase") == phase and s,
        timeout,
        message=f"{resource} {name} phase {phase}",
    )


def set_pod(cluster: Cluster, name: str, phase: str, exit_code: int | None = None) -> None:
    pod = cluster.get_json("pod", name, "-n", NS)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if exit_code is None:
        state: dict = {"running": {"startedAt": now}} if phase == "Running" else {"waiting": {"reason": "Creating"}}
    else:
        state = {"terminated": {"exitCode": exit_code, "startedAt": now, "finishedAt": now}}
    containers = [
        {"name": c["name"], "image": c["image"], "imageID": "", "ready": phase == "Running", "restartCount": 0,
         "state": state}
        for c in pod["spec"]["containers"]
    ]  # fmt: skip
    body = {"status": {"phase": phase, "containerStatuses": containers}}
    cluster.kubectl(
        "patch", "pod", name, "-n", NS, "--subresource=status", "--type=merge", "-p", json.dumps(body), check=True
    )


def wait_pods(cluster: Cluster, job: str, names: list[str], timeout: float = 30) -> dict[str, dict]:
    return wait_until(
        lambda: (found := pods(cluster, job)) and sorted(found) == sorted(names) and found,
        timeout,
        message=f"pods {names}",
    )


def run_all(cluster: Cluster, job: str) -> None:
    for name, pod in pods(cluster, job).items():
        if pod.get("status", {}).get("phase") != "Running":
            set_pod(cluster, name, "Running")


CONTAINER = "{name: main, image: busybox, command: [train, '--rank=$(rank)', '--of=$(replicas[worker])']}"


def genericjob(name: str, extra: str = "", worker_policy: str = "{policy: OnFailure, limit: 1}") -> str:
    return f"""
    apiVersion: batch.tensorstack.dev/v1beta1
    kind: GenericJob
    metadata: {{name: {name}}}
    spec:
      {extra}
      replicaSpecs:
      - type: master
        template: {{spec: {{containers: [{CONTAINER}]}}}}
      - type: worker
        replicas: 2
        restartPolicy: {worker_policy}
        template: {{spec: {{containers: [{CONTAINER}]}}}}
    """


# --- T9k GenericJob ------------------------------------------------------------------------------


def test_genericjob_succeeds_by_its_default_rule_and_cleans_up(cluster: Cluster, controller: ControllerProcess):
    apply(cluster, genericjob("gj-ok", "cleanUpPolicy: All\n      service: {ports: [{name: http, port: 8080}]}"))
    found = wait_pods(cluster, "gj-ok", ["gj-ok-master-0", "gj-ok-worker-0", "gj-ok-worker-1"])
    worker = found["gj-ok-worker-1"]
    assert worker["spec"]["restartPolicy"] == "Never"
    assert worker["spec"]["containers"][0]["command"] == ["train", "--rank=1", "--of=2"]
    services = cluster.get_json("services", "-n", NS, "-l", "job-name=gj-ok")["items"]
    assert sorted(s["metadata"]["name"] for s in services) == sorted(found)
    run_all(cluster, "gj-ok")
    phase_is(cluster, GJ, "gj-ok", "Running")
    for name in found:
        set_pod(cluster, name, "Succeeded", exit_code=0)
    done = phase_is(cluster, GJ, "gj-ok", "Succeeded")
    assert {c["type"]: c["status"] for c in done["conditions"]}["Completed"] == "True"
    assert done["aggregate"]["succeeded"] == 3
    wait_until(lambda: pods(cluster, "gj-ok") == {}, 30, message="cleanUpPolicy All")


def test_genericjob_restarts_a_type_up_to_its_limit_then_fails_by_rule(cluster: Cluster, controller: ControllerProcess):
    apply(cluster, genericjob("gj-fail"))
    found = wait_pods(cluster, "gj-fail", ["gj-fail-master-0", "gj-fail-worker-0", "gj-fail-worker-1"])
    run_all(cluster, "gj-fail")
    phase_is(cluster, GJ, "gj-fail", "Running")
    first_uid = found["gj-fail-worker-0"]["metadata"]["uid"]
    set_pod(cluster, "gj-fail-worker-0", "Failed", exit_code=1)
    recreated = wait_until(
        lambda: (p := pods(cluster, "gj-fail").get("gj-fail-worker-0")) and p["metadata"]["uid"] != first_uid and p,
        30,
        message="worker 0 recreated",
    )
    tasks = wait_until(
        lambda: (t := status(cluster, GJ, "gj-fail").get("tasks")) and t[1]["restartCount"] == 1 and t,
        30,
        message="restart counted",
    )
    assert tasks[0]["restartCount"] == 0
    wait_until(lambda: pods(cluster, "gj-fail")["gj-fail-worker-0"]["metadata"]["uid"] == recreated["metadata"]["uid"])
    set_pod(cluster, "gj-fail-worker-0", "Failed", exit_code=1)  # the limit of 1 is spent
    failed = phase_is(cluster, GJ, "gj-fail", "Failed")
    by_type = {c["type"]: c for c in failed["conditions"]}
    assert by_type["Failed"]["message"] == 'The job is failed with rule: { "worker": [0] }'
    assert by_type["Completed"]["status"] == "False"
    # cleanUpPolicy None (the default): nothing deleted.
    assert sorted(pods(cluster, "gj-fail")) == ["gj-fail-master-0", "gj-fail-worker-0", "gj-fail-worker-1"]


def test_genericjob_pause_deletes_pods_and_resume_recreates_them(cluster: Cluster, controller: ControllerProcess):
    resume = "runMode: {pause: {enabled: false, resumeSpecs: [{type: worker, command: [resumed]}]}}"
    apply(cluster, genericjob("gj-pause", resume))
    wait_pods(cluster, "gj-pause", ["gj-pause-master-0", "gj-pause-worker-0", "gj-pause-worker-1"])
    run_all(cluster, "gj-pause")
    phase_is(cluster, GJ, "gj-pause", "Running")
    patch = {"spec": {"runMode": {"pause": {"enabled": True}}}}
    cluster.kubectl("patch", GJ, "gj-pause", "-n", NS, "--type=merge", "-p", json.dumps(patch), check=True)
    paused = phase_is(cluster, GJ, "gj-pause", "Paused")
    assert {c["type"]: c["status"] for c in paused["conditions"]}["Paused"] == "True"
    wait_until(lambda: pods(cluster, "gj-pause") == {}, 30, message="pods deleted on pause")
    patch["spec"]["runMode"]["pause"]["enabled"] = False
    cluster.kubectl("patch", GJ, "gj-pause", "-n", NS, "--type=merge", "-p", json.dumps(patch), check=True)
    found = wait_pods(cluster, "gj-pause", ["gj-pause-master-0", "gj-pause-worker-0", "gj-pause-worker-1"])
    assert found["gj-pause-worker-0"]["spec"]["containers"][0]["command"] == ["resumed"]
    assert found["gj-pause-master-0"]["spec"]["containers"][0]["command"][0] == "train"
    phase_is(cluster, GJ, "gj-pause", "Resuming")
    run_all(cluster, "gj-pause")
    phase_is(cluster, GJ, "gj-pause", "Running")


def test_genericjob_debug_mode_runs_sleep_instead_of_the_command(cluster: Cluster, controller: ControllerProcess):
    debug = "runMode: {debug: {enabled: true, replicaSpecs: [{type: worker}]}}"
    apply(cluster, genericjob("gj-debug", debug))
    found = wait_pods(cluster, "gj-debug", ["gj-debug-master-0", "gj-debug-worker-0", "gj-debug-worker-1"])
    assert found["gj-debug-worker-0"]["spec"]["containers"][0]["command"] == ["sleep", "inf"]
    assert found["gj-debug-master-0"]["spec"]["containers"][0]["command"] == ["train", "--rank=0", "--of=2"]


# --- DIJob ----------------------------------------------------------------------------------------


def dijob(name: str, extra: str = "") -> str:
    return f"""
    apiVersion: diengine.opendilab.org/v2alpha1
    kind: DIJob
    metadata: {{name: {name}}}
    spec:
      {extra}
      tasks:
      - type: learner
        template: {{spec: {{containers: [{{name: di, image: ding}}]}}}}
      - type: collector
        name: collect-a
        replicas: 2
        template: {{spec: {{containers: [{{name: di, image: ding}}]}}}}
    """


def test_dijob_children_restarts_and_backoff(cluster: Cluster, controller: ControllerProcess):
    apply(cluster, dijob("dj", "backoffLimit: 1"))
    names = ["dj-collect-a-0", "dj-collect-a-1", "dj-learner-0"]
    found = wait_pods(cluster, "dj", names)
    pod = found["dj-collect-a-1"]
    env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
    assert env["DI_JOB_ID"] == f"{NS}/dj" and env["DI_RANK"] == "2"
    assert (
        env["DI_COLLECT_A_NODES"]
        == f"dj-collect-a-0.di-dj.{NS}.svc.cluster.local,dj-collect-a-1.di-dj.{NS}.svc.cluster.local"
    )
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("dj-collect-a-1", "di-dj")
    assert pod["metadata"]["annotations"]["diengine/rank"] == "2"
    service = cluster.get_json("service", "di-dj", "-n", NS)
    assert service["spec"]["clusterIP"] == "None" and service["spec"]["ports"][0]["port"] == 22270
    phase_is(cluster, DJ, "dj", "Starting")
    run_all(cluster, "dj")
    running = phase_is(cluster, DJ, "dj", "Running")
    assert running["taskStatus"] == {"learner": {"Running": 1}, "collect-a": {"Running": 2}}

    uid = found["dj-learner-0"]["metadata"]["uid"]
    set_pod(cluster, "dj-learner-0", "Failed", exit_code=137)
    wait_until(lambda: status(cluster, DJ, "dj").get("restarts") == 1, 30, message="restart counted")
    recreated = wait_until(
        lambda: (p := pods(cluster, "dj").get("dj-learner-0")) and p["metadata"]["uid"] != uid and p,
        30,
        message="learner recreated",
    )
    set_pod(cluster, "dj-learner-0", "Running")
    phase_is(cluster, DJ, "dj", "Running")
    wait_until(lambda: pods(cluster, "dj")["dj-learner-0"]["metadata"]["uid"] == recreated["metadata"]["uid"])
    set_pod(cluster, "dj-learner-0", "Failed", exit_code=1)  # backoffLimit 1 is spent
    failed = phase_is(cluster, DJ, "dj", "Failed")
    assert failed["restarts"] == 1
    # cleanPodPolicy Running (the default): running pods go, the failed one stays; the service goes.
    wait_until(lambda: sorted(pods(cluster, "dj")) == ["dj-learner-0"], 30, message="cleanPodPolicy Running")
    wait_until(lambda: cluster.kubectl("get", "service", "di-dj", "-n", NS).returncode != 0, 30, message="service gone")


def test_dijob_succeeds_when_every_pod_succeeded_and_clean_pod_policy_none_keeps_pods(
    cluster: Cluster, controller: ControllerProcess
):
    apply(cluster, dijob("dj-ok", "cleanPodPolicy: None"))
    found = wait_pods(cluster, "dj-ok", ["dj-ok-collect-a-0", "dj-ok-collect-a-1", "dj-ok-learner-0"])
    run_all(cluster, "dj-ok")
    phase_is(cluster, DJ, "dj-ok", "Running")
    set_pod(cluster, "dj-ok-learner-0", "Succeeded", exit_code=0)
    set_pod(cluster, "dj-ok-collect-a-0", "Succeeded", exit_code=0)
    time.sleep(1)  # a pass with a pod still running must not finish the job
    assert status(cluster, DJ, "dj-ok")["phase"] == "Running"
    set_pod(cluster, "dj-ok-collect-a-1", "Succeeded", exit_code=0)
    phase_is(cluster, DJ, "dj-ok", "Succeeded")
    assert sorted(pods(cluster, "dj-ok")) == sorted(found)
