"""The Volcano Job adapter and its lifecycle state machine, pass by pass, the kubelet played by hand."""

from __future__ import annotations

import base64
import copy
import datetime
import json
from typing import Any

import pytest

from jobgate.controller.adapters import adapter_for
from jobgate.controller.engine import Observed, Plan, reconcile
from jobgate.controller.lifecycle_policy import Action, BusEvent, JobRules, Policy, TaskRules, go_duration, resolve

T0 = datetime.datetime(2026, 11, 21, 12, 0, tzinfo=datetime.UTC)
API = "batch.volcano.sh/v1alpha1"


def task(name: str, replicas: int = 1, *, image: str = "busybox", **extra: Any) -> dict[str, Any]:
    pod_spec = extra.pop("pod_spec", {})
    return {
        "name": name,
        "replicas": replicas,
        "template": {"spec": {"containers": [{"name": name, "image": image}], "restartPolicy": "Never", **pod_spec}},
        **extra,
    }


def vcjob(*tasks: dict[str, Any], name: str = "demo", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "Job",
        "metadata": {"name": name, "namespace": "ns", "uid": "uid-1", "generation": 1},
        "spec": {"tasks": list(tasks) or [task("worker", 2)], **spec},
    }


class Sim:
    """A Volcano Job, its children as the informers show them, and a clock."""

    def __init__(self, job: dict[str, Any], *, gang: bool = False) -> None:
        self.job = job
        self.adapter = adapter_for(job)
        assert self.adapter is not None
        self.pods: dict[str, dict[str, Any]] = {}
        self.services: dict[str, dict[str, Any]] = {}
        self.extras: dict[tuple[str, str], dict[str, Any]] = {}
        self.now = T0
        self.uids = 0
        self.gang = gang
        self.plans: list[Plan] = []

    def observe(self) -> Observed:
        return Observed(
            list(self.pods.values()), list(self.services.values()), frozenset(self.extras), self.now, self.gang
        )

    def step(self, seconds: float = 0) -> Plan:
        self.now += datetime.timedelta(seconds=seconds)
        model = self.adapter.model(self.job)
        plan = reconcile(model, self.adapter.read(self.job), self.observe())
        if plan.status_changed:
            self.job["status"] = json.loads(json.dumps(self.adapter.project(plan.status)))
        for deletion in plan.delete:
            {"Pod": self.pods, "Service": self.services}.get(deletion.kind, {}).pop(deletion.name, None)
            self.extras.pop((deletion.kind, deletion.name), None)
        for created in plan.create:
            self.uids += 1
            obj = copy.deepcopy(created)
            obj["metadata"]["uid"] = f"child-{self.uids}"
            name = obj["metadata"]["name"]
            if obj["kind"] == "Pod":
                obj["status"] = {"phase": "Pending"}
                self.pods[name] = obj
            elif obj["kind"] == "Service":
                self.services[name] = obj
            else:
                self.extras[(obj["kind"], name)] = obj
        for updated in plan.update:
            self.extras[(updated["kind"], updated["metadata"]["name"])] = copy.deepcopy(updated)
        self.plans.append(plan)
        return plan

    def settle(self, passes: int = 12) -> None:
        """Passes until nothing changes: the runtime requeues on every phase change."""
        for _ in range(passes):
            plan = self.step()
            if not plan.create and not plan.delete and not plan.status_changed and not plan.delete_job:
                return
        raise AssertionError("the job never settled")

    def kubelet(self, name: str, phase: str, code: int | None = None, restarts: int = 0) -> None:
        pod = self.pods[name]
        status: dict[str, Any] = {"phase": phase}
        container = pod["spec"]["containers"][0]["name"]
        state: dict[str, Any] = {"running": {}} if phase == "Running" else {}
        if code is not None:
            state = {"terminated": {"exitCode": code}}
        status["containerStatuses"] = [{"name": container, "restartCount": restarts, "state": state}]
        pod["status"] = status

    def run_all(self) -> None:
        self.settle()
        for name in list(self.pods):
            self.kubelet(name, "Running")
        self.settle()

    @property
    def status(self) -> dict[str, Any]:
        return self.job.get("status") or {}

    @property
    def phase(self) -> str:
        return self.status["state"]["phase"]

    def events(self, reason: str) -> list[str]:
        return [e.message for p in self.plans for e in p.events if e.reason == reason]


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env") or []}


# --- children ------------------------------------------------------------------------------------


def test_pods_are_named_labelled_and_annotated_as_volcano_does() -> None:
    sim = Sim(vcjob(task("ps", 1), task("worker", 2), priorityClassName="high"))
    sim.settle()
    assert sorted(sim.pods) == ["demo-ps-0", "demo-worker-0", "demo-worker-1"]
    pod = sim.pods["demo-worker-1"]
    expected = {
        "volcano.sh/job-name": "demo",
        "volcano.sh/job-namespace": "ns",
        "volcano.sh/task-spec": "worker",
        "volcano.sh/task-index": "1",
        "volcano.sh/queue-name": "default",
    }
    assert expected.items() <= pod["metadata"]["labels"].items()
    annotations = pod["metadata"]["annotations"]
    assert expected.items() <= annotations.items()
    assert annotations["volcano.sh/job-version"] == "0"
    assert annotations["volcano.sh/template-uid"] == "demo-worker"
    assert "scheduling.k8s.io/group-name" not in annotations  # no PodGroup API here
    assert pod["spec"]["schedulerName"] == "volcano"  # the job's (defaulted) scheduler, passed through
    assert pod["spec"]["priorityClassName"] == "high"
    assert pod["spec"]["restartPolicy"] == "Never"  # the template decides
    owner = pod["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("Job", "uid-1", True)


def test_template_restart_policy_and_scheduler_are_kept() -> None:
    sim = Sim(vcjob(task("worker", 1, pod_spec={"restartPolicy": "OnFailure", "schedulerName": "other"})))
    sim.settle()
    spec = sim.pods["demo-worker-0"]["spec"]
    assert (spec["restartPolicy"], spec["schedulerName"]) == ("OnFailure", "other")


def test_pod_group_when_the_api_exists() -> None:
    sim = Sim(vcjob(task("ps", 1), task("worker", 3, minAvailable=2)), gang=True)
    sim.settle()
    group = sim.extras[("PodGroup", "demo-uid-1")]
    assert group["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert group["spec"]["minMember"] == 3
    assert group["spec"]["minTaskMember"] == {"ps": 1, "worker": 2}
    assert group["spec"]["queue"] == "default"
    assert sim.pods["demo-ps-0"]["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "demo-uid-1"


def test_env_plugin_sets_the_task_index_in_every_container() -> None:
    job = vcjob(task("worker", 2, pod_spec={"initContainers": [{"name": "init", "image": "x"}]}), plugins={"env": []})
    sim = Sim(job)
    sim.settle()
    pod = sim.pods["demo-worker-1"]
    for container in [*pod["spec"]["containers"], *pod["spec"]["initContainers"]]:
        assert env_of(container)["VK_TASK_INDEX"] == "1"
        assert env_of(container)["VC_TASK_INDEX"] == "1"


def test_no_plugin_no_env() -> None:
    sim = Sim(vcjob(task("worker", 1)))
    sim.settle()
    assert "env" not in sim.pods["demo-worker-0"]["spec"]["containers"][0]
    assert not sim.services and not sim.extras


def test_svc_plugin_service_config_map_hostname_mount_and_env() -> None:
    sim = Sim(vcjob(task("ps", 1), task("my-worker", 2), plugins={"svc": ["--publish-not-ready-addresses=true"]}))
    sim.settle()
    service = sim.services["demo"]
    assert service["spec"]["clusterIP"] == "None"
    assert "ports" not in service["spec"]
    assert service["spec"]["selector"] == {"volcano.sh/job-name": "demo", "volcano.sh/job-namespace": "ns"}
    assert service["spec"]["publishNotReadyAddresses"] is True
    data = sim.extras[("ConfigMap", "demo-svc")]["data"]
    assert data["my-worker.host"] == "demo-my-worker-0.demo\ndemo-my-worker-1.demo"
    assert data["VC_MY_WORKER_HOSTS"] == "demo-my-worker-0.demo,demo-my-worker-1.demo"
    assert data["VC_MY_WORKER_NUM"] == "2"
    assert data["VC_PS_NUM"] == "1"
    pod = sim.pods["demo-my-worker-1"]
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("demo-my-worker-1", "demo")
    assert {"name": "demo-svc", "configMap": {"name": "demo-svc"}} in pod["spec"]["volumes"]
    assert {"name": "demo-svc", "mountPath": "/etc/volcano"} in pod["spec"]["containers"][0]["volumeMounts"]
    env = env_of(pod["spec"]["containers"][0])
    assert env["VC_PS_HOSTS"] == {"configMapKeyRef": {"name": "demo-svc", "key": "VC_PS_HOSTS"}}
    assert env["VC_MY_WORKER_NUM"] == {"configMapKeyRef": {"name": "demo-svc", "key": "VC_MY_WORKER_NUM"}}


def test_svc_plugin_can_leave_hosts_env_out() -> None:
    sim = Sim(vcjob(task("worker", 1), plugins={"svc": ["--inject-hosts-env=false"]}))
    sim.settle()
    assert "VC_WORKER_HOSTS" not in env_of(sim.pods["demo-worker-0"]["spec"]["containers"][0])
    assert sim.services["demo"]["spec"]["publishNotReadyAddresses"] is False


def test_ssh_plugin_secret_with_a_real_key_pair_mounted_in_every_pod() -> None:
    from cryptography.hazmat.primitives import serialization

    sim = Sim(vcjob(task("master", 1), task("worker", 2), plugins={"ssh": []}))
    sim.settle()
    secret = sim.extras[("Secret", "demo-ssh")]
    files = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert set(files) == {"id_rsa", "id_rsa.pub", "authorized_keys", "config"}
    assert files["id_rsa"].startswith("-----BEGIN RSA PRIVATE KEY-----")
    key = serialization.load_pem_private_key(files["id_rsa"].encode(), password=None)
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    assert files["id_rsa.pub"].strip() == files["authorized_keys"].strip() == public.decode()
    assert "StrictHostKeyChecking no" in files["config"]
    assert "Host demo-worker-1\n  HostName demo-worker-1.demo\n  Port 22" in files["config"]
    pod = sim.pods["demo-worker-0"]
    volume = next(v for v in pod["spec"]["volumes"] if v["name"] == "demo-ssh")
    assert volume["secret"]["defaultMode"] == 0o600
    assert {"key": "id_rsa", "path": ".ssh/id_rsa"} in volume["secret"]["items"]
    mount = {"name": "demo-ssh", "mountPath": "/root/.ssh", "subPath": ".ssh"}
    assert mount in pod["spec"]["containers"][0]["volumeMounts"]


def test_ssh_plugin_key_path_and_mode() -> None:
    sim = Sim(vcjob(task("worker", 1), plugins={"ssh": ["--ssh-key-file-path=/home/me/.ssh"]}))
    sim.settle()
    pod = sim.pods["demo-worker-0"]
    volume = next(v for v in pod["spec"]["volumes"] if v["name"] == "demo-ssh")
    assert volume["secret"]["defaultMode"] == 0o644
    assert pod["spec"]["containers"][0]["volumeMounts"][0]["mountPath"] == "/home/me/.ssh"


def test_tensorflow_plugin_tf_config() -> None:
    sim = Sim(vcjob(task("ps", 1), task("worker", 2), plugins={"tensorflow": ["--port=3333"]}))
    sim.settle()
    config = json.loads(env_of(sim.pods["demo-worker-1"]["spec"]["containers"][0])["TF_CONFIG"])
    assert config == {
        "cluster": {"ps": ["demo-ps-0.demo:3333"], "worker": ["demo-worker-0.demo:3333", "demo-worker-1.demo:3333"]},
        "task": {"type": "worker", "index": 1},
    }
    assert ("ConfigMap", "demo-svc") in sim.extras  # tensorflow implies svc
    assert sim.status["controlledResources"] == {"plugin-svc": "svc", "plugin-tensorflow": "tensorflow"}


def test_tensorflow_plugin_leaves_a_stand_alone_job_alone() -> None:
    sim = Sim(vcjob(task("worker", 1), plugins={"tensorflow": []}))
    sim.settle()
    assert "TF_CONFIG" not in env_of(sim.pods["demo-worker-0"]["spec"]["containers"][0])


def test_pytorch_plugin_master_addr_world_size_rank() -> None:
    sim = Sim(vcjob(task("master", 1), task("worker", 2), plugins={"pytorch": []}))
    sim.settle()
    master = env_of(sim.pods["demo-master-0"]["spec"]["containers"][0])
    worker = env_of(sim.pods["demo-worker-1"]["spec"]["containers"][0])
    assert master["MASTER_ADDR"] == worker["MASTER_ADDR"] == "demo-master-0.demo"
    assert master["MASTER_PORT"] == "23456"
    assert master["WORLD_SIZE"] == worker["WORLD_SIZE"] == "3"
    assert (master["RANK"], worker["RANK"]) == ("0", "2")  # workers count from 1
    ports = sim.pods["demo-master-0"]["spec"]["containers"][0]["ports"]
    assert {"name": "pytorchjob-port", "containerPort": 23456} in ports


def test_pytorch_plugin_needs_its_master_task() -> None:
    sim = Sim(vcjob(task("worker", 2), plugins={"pytorch": []}))
    sim.settle()
    assert "MASTER_ADDR" not in env_of(sim.pods["demo-worker-0"]["spec"]["containers"][0])


def test_mpi_plugin_mpi_host_on_the_master_only() -> None:
    sim = Sim(vcjob(task("master", 1), task("worker", 2), plugins={"mpi": []}))
    sim.settle()
    assert env_of(sim.pods["demo-master-0"]["spec"]["containers"][0])["MPI_HOST"] == (
        "demo-worker-0.demo,demo-worker-1.demo"
    )
    assert "MPI_HOST" not in env_of(sim.pods["demo-worker-0"]["spec"]["containers"][0])
    assert ("Secret", "demo-ssh") in sim.extras  # mpi implies ssh (and svc)


# --- phases without policies ---------------------------------------------------------------------


def test_pending_running_completed_and_status_shape() -> None:
    sim = Sim(vcjob(task("worker", 2)))
    sim.settle()
    assert sim.phase == "Pending"
    assert sim.status["pending"] == 2
    sim.kubelet("demo-worker-0", "Running")
    sim.settle()
    assert sim.phase == "Pending"  # minAvailable 2: one running is not enough
    sim.kubelet("demo-worker-1", "Running")
    sim.settle()
    assert sim.phase == "Running"
    assert sim.status["running"] == 2
    assert sim.status["taskStatusCount"] == {"worker": {"phase": {"Running": 2}}}
    for name in sim.pods:
        sim.kubelet(name, "Succeeded", 0)
    sim.settle()
    status = sim.status
    assert status["state"]["phase"] == "Completed"
    assert status["succeeded"] == 2 and status["minAvailable"] == 2
    assert (status["version"], status["retryCount"]) == (0, 0)
    assert [c["status"] for c in status["conditions"]] == ["Pending", "Running", "Completed"]
    assert all(c["lastTransitionTime"] for c in status["conditions"])
    assert status["state"]["lastTransitionTime"]
    assert "runningDuration" in status


def test_steady_state_writes_nothing() -> None:
    sim = Sim(vcjob(task("worker", 2)))
    sim.run_all()
    plan = sim.step()
    assert not plan.status_changed and not plan.create and not plan.delete


def test_a_failed_pod_without_policy_waits_for_the_others_then_fails() -> None:
    sim = Sim(vcjob(task("worker", 2)))
    sim.run_all()
    sim.kubelet("demo-worker-0", "Failed", 1)
    sim.settle()
    assert sim.phase == "Running"  # Volcano: nothing happens until every pod has finished
    assert sim.status["failed"] == 1
    sim.kubelet("demo-worker-1", "Succeeded", 0)
    sim.settle()
    assert sim.phase == "Failed"
    assert "demo-worker-0" in sim.pods  # finished pods are kept


def test_completed_when_enough_succeed_even_if_some_fail() -> None:
    sim = Sim(vcjob(task("worker", 3), minAvailable=2))
    sim.run_all()
    sim.kubelet("demo-worker-0", "Failed", 1)
    sim.kubelet("demo-worker-1", "Succeeded", 0)
    sim.kubelet("demo-worker-2", "Succeeded", 0)
    sim.settle()
    assert sim.phase == "Completed"


def test_task_min_available_decides_failure() -> None:
    sim = Sim(vcjob(task("ps", 1), task("worker", 2)))
    sim.run_all()
    sim.kubelet("demo-ps-0", "Failed", 1)
    sim.kubelet("demo-worker-0", "Succeeded", 0)
    sim.kubelet("demo-worker-1", "Succeeded", 0)
    sim.settle()
    assert sim.phase == "Failed"
    assert sim.status["state"]["reason"] == "TaskMinAvailable"


def test_min_success_completes_early_and_kills_the_rest() -> None:
    sim = Sim(vcjob(task("worker", 3), minSuccess=2, minAvailable=1))
    sim.run_all()
    sim.kubelet("demo-worker-0", "Succeeded", 0)
    sim.settle()
    assert sim.phase == "Running"
    sim.kubelet("demo-worker-1", "Succeeded", 0)
    sim.settle()
    assert sim.phase == "Completed"
    assert sorted(sim.pods) == ["demo-worker-0", "demo-worker-1"]  # the running one was killed


def test_min_success_not_reached_fails() -> None:
    sim = Sim(vcjob(task("worker", 2), minSuccess=2, minAvailable=1))
    sim.run_all()
    sim.kubelet("demo-worker-0", "Failed", 1)
    sim.kubelet("demo-worker-1", "Succeeded", 0)
    sim.settle()
    assert (sim.phase, sim.status["state"]["reason"]) == ("Failed", "MinSuccess")


def test_a_vanished_pod_without_policy_is_recreated() -> None:
    sim = Sim(vcjob(task("worker", 2)))
    sim.run_all()
    del sim.pods["demo-worker-1"]
    sim.settle()
    assert "demo-worker-1" in sim.pods and sim.status["retryCount"] == 0


def test_pods_beyond_replicas_are_deleted() -> None:
    sim = Sim(vcjob(task("worker", 3)))
    sim.run_all()
    sim.job["spec"]["tasks"][0]["replicas"] = 2
    sim.job["spec"]["minAvailable"] = 2
    sim.settle()
    assert sorted(sim.pods) == ["demo-worker-0", "demo-worker-1"]


# --- lifecycle policies ----------------------------------------------------------------------------


def test_restart_job_on_pod_failed_kills_everything_and_bumps_the_version() -> None:
    sim = Sim(vcjob(task("worker", 2), policies=[{"event": "PodFailed", "action": "RestartJob"}]))
    sim.run_all()
    old_uids = {p["metadata"]["uid"] for p in sim.pods.values()}
    sim.kubelet("demo-worker-0", "Failed", 1)
    sim.step()
    assert sim.phase == "Restarting"
    assert sim.status["retryCount"] == 1 and sim.status["version"] == 1
    assert not sim.pods  # all killed
    assert any("RestartJob" in m for m in sim.events("ExecuteAction"))
    sim.settle()
    assert sim.phase == "Pending"
    assert sorted(sim.pods) == ["demo-worker-0", "demo-worker-1"]
    assert not old_uids & {p["metadata"]["uid"] for p in sim.pods.values()}
    assert all(p["metadata"]["annotations"]["volcano.sh/job-version"] == "1" for p in sim.pods.values())
    assert sim.pods["demo-worker-0"]["metadata"]["annotations"]["volcano.sh/job-retry-count"] == "1"


def test_restart_task_kills_only_that_task() -> None:
    sim = Sim(vcjob(task("ps", 1), task("worker", 2, policies=[{"event": "PodFailed", "action": "RestartTask"}])))
    sim.run_all()
    ps_uid = sim.pods["demo-ps-0"]["metadata"]["uid"]
    sim.kubelet("demo-worker-1", "Failed", 1)
    sim.step()
    assert sim.phase == "Restarting"
    assert sorted(sim.pods) == ["demo-ps-0"]
    sim.settle()
    assert sim.pods["demo-ps-0"]["metadata"]["uid"] == ps_uid
    assert sorted(sim.pods) == ["demo-ps-0", "demo-worker-0", "demo-worker-1"]
    assert (sim.status["retryCount"], sim.status["version"]) == (1, 0)


def test_restart_pod_kills_only_that_pod() -> None:
    sim = Sim(vcjob(task("worker", 3, policies=[{"event": "PodFailed", "action": "RestartPod"}]), minAvailable=2))
    sim.run_all()
    others = {n: sim.pods[n]["metadata"]["uid"] for n in ("demo-worker-0", "demo-worker-2")}
    sim.kubelet("demo-worker-1", "Failed", 1)
    sim.settle()
    assert {n: sim.pods[n]["metadata"]["uid"] for n in others} == others
    assert sim.pods["demo-worker-1"]["status"]["phase"] == "Pending"  # a new pod
    assert sim.status["retryCount"] == 1
    assert "Restarting" in [c["status"] for c in sim.status["conditions"]]


def test_abort_job_keeps_finished_pods_and_ends_aborted() -> None:
    sim = Sim(vcjob(task("worker", 3), policies=[{"event": "PodFailed", "action": "AbortJob"}]))
    sim.run_all()
    sim.kubelet("demo-worker-0", "Failed", 1)
    sim.step()
    assert sim.phase == "Aborting"
    sim.settle()
    assert sim.phase == "Aborted"
    assert sorted(sim.pods) == ["demo-worker-0"]


def test_terminate_job() -> None:
    sim = Sim(vcjob(task("worker", 2), policies=[{"event": "PodFailed", "action": "TerminateJob"}]))
    sim.run_all()
    sim.kubelet("demo-worker-1", "Failed", 1)
    sim.settle()
    assert sim.phase == "Terminated"
    assert [c["status"] for c in sim.status["conditions"]][-2:] == ["Terminating", "Terminated"]


def test_complete_job_on_task_completed() -> None:
    job = vcjob(task("master", 1, policies=[{"event": "TaskCompleted", "action": "CompleteJob"}]), task("worker", 2))
    sim = Sim(job)
    sim.run_all()
    sim.kubelet("demo-master-0", "Succeeded", 0)
    sim.step()
    assert sim.phase == "Completing"
    sim.settle()
    assert sim.phase == "Completed"
    assert sorted(sim.pods) == ["demo-master-0"]


def test_exit_code_policy_matches_only_its_code() -> None:
    job = vcjob(task("worker", 2), policies=[{"exitCode": 3, "action": "RestartJob"}])
    sim = Sim(job)
    sim.run_all()
    sim.kubelet("demo-worker-0", "Failed", 1)
    sim.settle()
    assert sim.phase == "Running" and sim.status["retryCount"] == 0
    sim.kubelet("demo-worker-1", "Failed", 3)
    sim.step()
    assert sim.phase == "Restarting"


def test_task_policy_wins_over_job_policy() -> None:
    job = vcjob(
        task("worker", 2, policies=[{"event": "PodFailed", "action": "RestartPod"}]),
        policies=[{"event": "PodFailed", "action": "AbortJob"}],
    )
    sim = Sim(job)
    sim.run_all()
    sim.kubelet("demo-worker-0", "Failed", 1)
    sim.settle()
    assert sim.status["retryCount"] == 1 and sim.phase != "Aborted"
    assert "Aborting" not in [c["status"] for c in sim.status["conditions"]]


def test_any_event_wildcard() -> None:
    sim = Sim(vcjob(task("worker", 2), policies=[{"events": ["*"], "action": "TerminateJob"}]))
    sim.run_all()
    sim.kubelet("demo-worker-0", "Failed", 2)
    sim.settle()
    assert sim.phase == "Terminated"


def test_pod_evicted_when_someone_else_deletes_a_pod() -> None:
    sim = Sim(vcjob(task("worker", 2), policies=[{"event": "PodEvicted", "action": "RestartJob"}]))
    sim.run_all()
    del sim.pods["demo-worker-1"]  # kubectl delete pod, a node drain...
    sim.step()
    assert sim.phase == "Restarting"
    assert any("PodEvicted of pod demo-worker-1" in m for m in sim.events("ExecuteAction"))


def test_pod_evicted_while_terminating() -> None:
    sim = Sim(vcjob(task("worker", 2), policies=[{"event": "PodEvicted", "action": "AbortJob"}]))
    sim.run_all()
    sim.pods["demo-worker-0"]["metadata"]["deletionTimestamp"] = "2026-11-21T12:00:00Z"
    sim.step()
    assert sim.phase == "Aborting"


def test_own_deletions_are_no_eviction() -> None:
    job = vcjob(
        task("worker", 2),
        policies=[{"event": "PodFailed", "action": "RestartTask"}, {"event": "PodEvicted", "action": "AbortJob"}],
    )
    sim = Sim(job)
    sim.run_all()
    sim.kubelet("demo-worker-0", "Failed", 1)
    sim.settle()
    assert sim.phase == "Pending" and sim.status["retryCount"] == 1
    assert "Aborting" not in [c["status"] for c in sim.status["conditions"]]


def test_task_failed_when_in_place_restarts_reach_task_max_retry() -> None:
    job = vcjob(task("worker", 2, maxRetry=2, policies=[{"event": "TaskFailed", "action": "TerminateJob"}]))
    sim = Sim(job)
    sim.run_all()
    sim.kubelet("demo-worker-0", "Running", restarts=1)
    sim.settle()
    assert sim.phase == "Running"
    sim.kubelet("demo-worker-1", "Running", restarts=1)
    sim.settle()
    assert sim.phase == "Terminated"


def test_max_retry_fails_the_job() -> None:
    job = vcjob(task("worker", 1), maxRetry=2, policies=[{"event": "PodFailed", "action": "RestartJob"}])
    sim = Sim(job)
    sim.run_all()
    sim.kubelet("demo-worker-0", "Failed", 1)
    sim.settle()
    assert (sim.phase, sim.status["retryCount"]) == ("Pending", 1)
    sim.run_all()
    sim.kubelet("demo-worker-0", "Failed", 1)
    sim.settle()
    assert sim.phase == "Failed"
    assert sim.status["retryCount"] == 2
    assert any("retry limit reached" in m for m in sim.events("ExecuteAction"))
    assert sim.pods["demo-worker-0"]["status"]["phase"] == "Failed"  # last retry keeps the pod for its logs


def test_policies_are_ignored_once_finished() -> None:
    sim = Sim(vcjob(task("worker", 2), policies=[{"event": "PodFailed", "action": "RestartJob"}], minAvailable=1))
    sim.run_all()
    sim.kubelet("demo-worker-0", "Succeeded", 0)
    sim.kubelet("demo-worker-1", "Succeeded", 0)
    sim.settle()
    assert sim.phase == "Completed"
    sim.kubelet("demo-worker-1", "Failed", 1)
    sim.settle()
    assert sim.phase == "Completed" and sim.status["retryCount"] == 0


def test_events_of_an_older_run_are_ignored() -> None:
    sim = Sim(vcjob(task("worker", 1), policies=[{"event": "PodFailed", "action": "AbortJob"}]))
    sim.run_all()
    sim.job["status"]["version"] = 1  # the pod was created by run 0
    sim.kubelet("demo-worker-0", "Failed", 1)
    sim.step()
    assert sim.phase != "Aborting"


def test_ttl_deletes_the_job_after_it_finished() -> None:
    sim = Sim(vcjob(task("worker", 1), ttlSecondsAfterFinished=30))
    sim.run_all()
    sim.kubelet("demo-worker-0", "Succeeded", 0)
    sim.settle()
    assert sim.phase == "Completed"
    plan = sim.step(10)
    assert not plan.delete_job and plan.requeue_after == pytest.approx(20)
    assert sim.step(25).delete_job


def test_aborted_jobs_are_not_collected_by_ttl() -> None:
    sim = Sim(
        vcjob(task("worker", 1), ttlSecondsAfterFinished=0, policies=[{"event": "PodFailed", "action": "AbortJob"}])
    )
    sim.run_all()
    sim.kubelet("demo-worker-0", "Failed", 1)
    sim.settle()
    assert sim.phase == "Aborted"
    assert not sim.step(100).delete_job


def test_depends_on_waits_for_the_dependency() -> None:
    sim = Sim(vcjob(task("ps", 1), task("worker", 2, dependsOn={"name": ["ps"]})))
    sim.settle()
    assert sorted(sim.pods) == ["demo-ps-0"]
    sim.kubelet("demo-ps-0", "Running")
    sim.settle()
    assert sorted(sim.pods) == ["demo-ps-0", "demo-worker-0", "demo-worker-1"]


def test_the_pod_group_goes_with_a_full_restart_and_at_the_end() -> None:
    sim = Sim(vcjob(task("worker", 1), policies=[{"event": "PodFailed", "action": "RestartJob"}]), gang=True)
    sim.run_all()
    sim.kubelet("demo-worker-0", "Failed", 1)
    sim.step()
    assert ("PodGroup", "demo-uid-1") not in sim.extras
    sim.settle()
    assert ("PodGroup", "demo-uid-1") in sim.extras
    sim.run_all()
    sim.kubelet("demo-worker-0", "Succeeded", 0)
    sim.settle()
    assert sim.phase == "Completed" and ("PodGroup", "demo-uid-1") not in sim.extras


# --- pure pieces ---------------------------------------------------------------------------------


def test_resolve_order_and_matching() -> None:
    rules = JobRules(
        min_available=1,
        max_retry=3,
        min_success=None,
        policies=(Policy(Action.ABORT_JOB, frozenset({"PodFailed"})),),
        tasks=(TaskRules("a", 1, 1, 3, (Policy(Action.RESTART_POD, exit_code=7),)), TaskRules("b", 1, 1, 3)),
    )
    assert resolve([BusEvent("PodFailed", "a", "p", exit_code=7)], rules)[0] is Action.RESTART_POD
    assert resolve([BusEvent("PodFailed", "a", "p", exit_code=1)], rules)[0] is Action.ABORT_JOB
    assert resolve([BusEvent("TaskCompleted", "b")], rules) == (Action.SYNC, None)
    assert Policy(Action.RESTART_JOB, exit_code=7).matches("PodEvicted", 7) is False


@pytest.mark.parametrize(("seconds", "text"), [(5, "5s"), (65, "1m5s"), (3725, "1h2m5s")])
def test_go_duration(seconds: int, text: str) -> None:
    assert go_duration(seconds) == text


def test_status_reads_back_as_written() -> None:
    sim = Sim(vcjob(task("worker", 2), plugins={"svc": []}))
    sim.run_all()
    status = sim.adapter.read(sim.job)
    assert sim.adapter.project(status) == sim.job["status"]


def test_controller_serves_only_the_families_asked_for() -> None:
    from jobgate.controller.main import served_families
    from jobgate.controller.runtime import Controller

    class NoKube:  # the constructor only builds informers; nothing talks to the API before start
        pass

    only = Controller(NoKube(), families=served_families("volcano"))  # type: ignore[arg-type]
    assert {g.kind for g in only.adapters} == {"Job"}
    everything = Controller(NoKube(), families=served_families(None))  # type: ignore[arg-type]
    assert {"Job", "TFJob", "MxJob"} <= {g.kind for g in everything.adapters}
    assert served_families(" kubedl , volcano ") == frozenset({"kubedl", "volcano"})


def test_an_unknown_phase_in_the_status_starts_over_as_pending() -> None:
    job = vcjob(task("worker", 1))
    job["status"] = {"state": {"phase": "Bogus"}, "retryCount": "x"}
    sim = Sim(job)
    sim.settle()
    assert sim.phase == "Pending" and len(sim.pods) == 1


def test_a_deleted_pod_group_is_forgotten_so_a_restart_creates_it_again() -> None:
    from jobgate.controller.engine import Deletion
    from jobgate.controller.runtime import Controller

    class Kube:
        def __init__(self) -> None:
            self.deleted: list[str] = []

        def delete(self, path: str, uid: str | None = None) -> None:
            self.deleted.append(path)

    kube = Kube()
    controller = Controller(kube)  # type: ignore[arg-type]
    model = adapter_for(vcjob())
    assert model is not None
    job_model = model.model(vcjob())
    controller.created_extras[job_model.uid] = {("PodGroup", "demo-uid-1"), ("ConfigMap", "demo-svc")}
    controller._delete(
        "Job/ns/demo", job_model, Deletion("scheduling.volcano.sh/v1beta1", "PodGroup", "demo-uid-1", None)
    )
    assert kube.deleted and controller._extras_of(job_model.uid) == {("ConfigMap", "demo-svc")}


# --- any sequence of kubelet reports ---------------------------------------------------------------

EVENTS = ["PodFailed", "PodEvicted", "TaskCompleted", "TaskFailed", "*"]
ACTIONS = ["RestartJob", "RestartTask", "RestartPod", "AbortJob", "TerminateJob", "CompleteJob"]


def _policy_strategy():
    from hypothesis import strategies as st

    by_event = st.builds(lambda e, a: {"event": e, "action": a}, st.sampled_from(EVENTS), st.sampled_from(ACTIONS))
    by_code = st.builds(lambda c, a: {"exitCode": c, "action": a}, st.integers(1, 3), st.sampled_from(ACTIONS))
    return st.lists(st.one_of(by_event, by_code), max_size=2)


def _kubelet_strategy():
    from hypothesis import strategies as st

    report = st.tuples(
        st.integers(0, 2),
        st.sampled_from(["Running", "Succeeded", "Failed", "Gone", "Restarted"]),
        st.integers(1, 3),
    )
    return st.lists(report, max_size=12)


def test_any_sequence_keeps_volcano_invariants() -> None:
    from hypothesis import HealthCheck, given, settings

    from jobgate.controller.lifecycle import FINISHED
    from jobgate.controller.lifecycle_policy import Phase

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_policy_strategy(), _policy_strategy(), _kubelet_strategy())
    def check(job_policies: list, task_policies: list, reports: list) -> None:
        sim = Sim(vcjob(task("worker", 3, policies=task_policies), policies=job_policies, maxRetry=2, minAvailable=2))
        sim.settle()
        finished_as = None
        for which, what, code in reports:
            names = sorted(sim.pods)
            if names:
                name = names[which % len(names)]
                if what == "Gone":
                    del sim.pods[name]
                elif what == "Restarted":
                    sim.kubelet(name, "Running", restarts=code)
                else:
                    sim.kubelet(name, what, code if what == "Failed" else (0 if what == "Succeeded" else None))
            sim.settle(30)
            current = Phase(sim.phase)
            assert sim.status["retryCount"] <= 2
            if finished_as is not None:
                assert current is finished_as  # finished jobs stay finished
            elif current in FINISHED:
                finished_as = current
            if current in FINISHED:
                alive = [p for p in sim.pods.values() if p["status"]["phase"] in ("Pending", "Running")]
                assert not alive  # a finished job keeps no unfinished pod

    check()


def test_start_falls_back_to_the_creation_time() -> None:
    job = vcjob()
    job["metadata"]["creationTimestamp"] = "2026-11-21T11:00:00Z"
    job["status"] = {"state": {"phase": "Running"}}
    adapter = adapter_for(job)
    assert adapter is not None
    assert adapter.read(job).start_time == "2026-11-21T11:00:00Z"
