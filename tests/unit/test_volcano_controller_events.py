"""Volcano's remaining events and actions: Unknown/JobUnknown, PodPending, OutOfSync, delayed
actions, RestartPartition, ResumeJob through Commands, PodGroup gating, the svc NetworkPolicy and
the hosts ConfigMap after a scale — pass by pass, the kubelet and the scheduler played by hand."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from jobgate.controller.engine import Observed, Plan, reconcile
from jobgate.controller.lifecycle_policy import parse_go_duration
from tests.unit.test_volcano_controller import Sim, task, vcjob


class VolcanoSim(Sim):
    """``Sim`` plus what the runtime hands the lifecycle besides pods: PodGroups with their status,
    a pending Command, the --wait-for-pod-group flag, and whole-object rewrites."""

    def __init__(self, job: dict[str, Any], *, gang: bool = False, wait_for_pod_group: bool = False) -> None:
        super().__init__(job, gang=gang)
        self.wait_for_pod_group = wait_for_pod_group
        self.command: str | None = None
        self.group_phase: str | None = None
        self.updated: list[dict[str, Any]] = []

    def observe(self) -> Observed:
        groups = [copy.deepcopy(o) for (kind, _), o in self.extras.items() if kind == "PodGroup"]
        for group in groups:
            if self.group_phase is not None:
                group["status"] = {"phase": self.group_phase}
        observed = Observed(
            list(self.pods.values()),
            list(self.services.values()),
            frozenset(self.extras),
            self.now,
            self.gang,
            pod_groups=tuple(groups),
            wait_for_pod_group=self.wait_for_pod_group,
            command=self.command,
        )
        self.command = None  # the runtime forgets a command once its pass is carried out
        return observed

    def step(self, seconds: float = 0) -> Plan:
        plan = super().step(seconds)
        self.updated.extend(plan.update)
        return plan

    def scale(self, task_name: str, replicas: int) -> None:
        for item in self.job["spec"]["tasks"]:
            if item["name"] == task_name:
                item["replicas"] = replicas
        self.job["metadata"]["generation"] += 1


def policy(event: str, action: str, **extra: Any) -> dict[str, Any]:
    return {"event": event, "action": action, **extra}


# --- Unknown and JobUnknown ------------------------------------------------------------------------


def test_a_pod_in_phase_unknown_raises_unknown_for_its_task() -> None:
    sim = VolcanoSim(vcjob(task("worker", 3, policies=[policy("Unknown", "RestartPod")]), minAvailable=1))
    sim.run_all()
    sim.kubelet("demo-worker-1", "Unknown")
    sim.step()
    assert sim.phase == "Restarting" and "demo-worker-1" not in sim.pods
    assert sorted(sim.pods) == ["demo-worker-0", "demo-worker-2"]
    assert any("Unknown of pod demo-worker-1" in m for m in sim.events("ExecuteAction"))


def test_unknown_without_a_policy_just_syncs_as_volcano_does() -> None:
    sim = VolcanoSim(vcjob(task("worker", 2)))
    sim.run_all()
    sim.kubelet("demo-worker-1", "Unknown")
    sim.settle()
    assert sim.phase == "Running" and sim.status["retryCount"] == 0 and len(sim.pods) == 2
    assert sim.status["unknown"] == 1


def test_job_unknown_when_the_pod_group_phase_is_unknown() -> None:
    sim = VolcanoSim(vcjob(task("worker", 2), policies=[policy("Unknown", "AbortJob")]), gang=True)
    sim.run_all()
    assert sim.phase == "Running"
    sim.group_phase = "Unknown"
    sim.step()
    assert sim.phase == "Aborting"
    assert any("Unknown of the job (PodGroup phase Unknown)" in m for m in sim.events("ExecuteAction"))


def test_job_unknown_when_unknown_pods_leave_too_few_known_ones() -> None:
    from jobgate.controller.lifecycle import Step

    sim = VolcanoSim(vcjob(task("worker", 3), minAvailable=3))
    sim.run_all()
    sim.kubelet("demo-worker-2", "Unknown")
    model = sim.adapter.model(sim.job)
    captured: list[str] = []

    def spy(p: Any) -> None:
        captured.append(Step(p, model.lifecycle.keywords["rules"]).job_unknown())  # type: ignore[union-attr]

    import dataclasses

    reconcile(
        dataclasses.replace(model, lifecycle=spy),
        sim.adapter.read(sim.job),
        Observed(list(sim.pods.values()), [], frozenset(), sim.now),
    )
    assert captured == ["1 pod(s) Unknown, 2 running or succeeded of minAvailable 3"]


# --- PodPending and delayed actions ----------------------------------------------------------------


def test_pod_pending_needs_a_timeout_as_in_volcano() -> None:
    sim = VolcanoSim(vcjob(task("worker", 2), policies=[policy("PodPending", "AbortJob")]))
    sim.settle()
    sim.step(3600)
    assert sim.phase == "Pending" and len(sim.pods) == 2


def test_pod_pending_with_a_timeout_fires_only_after_it() -> None:
    sim = VolcanoSim(vcjob(task("worker", 2), policies=[policy("PodPending", "AbortJob", timeout="1m")]))
    sim.settle()  # pods created; the next pass sees them Pending and starts the clock
    plan = sim.step()
    assert plan.requeue_after == pytest.approx(60)  # the work queue wakes the job up: no sleeping
    plan = sim.step(30)
    assert sim.phase == "Pending" and plan.requeue_after == pytest.approx(30)
    sim.step(30)
    assert sim.phase == "Aborting"
    assert "Execute action AbortJob after 1m0s" in sim.events("ExecuteAction")


def test_a_pod_that_leaves_pending_cancels_its_delayed_action() -> None:
    sim = VolcanoSim(vcjob(task("worker", 1), policies=[policy("PodPending", "TerminateJob", timeout="60s")]))
    sim.settle()
    sim.step()
    assert sim.status.get("delayedActions")
    sim.kubelet("demo-worker-0", "Running")
    sim.step(30)
    assert "delayedActions" not in sim.status
    sim.step(120)
    assert sim.phase == "Running"


def test_pod_failed_with_timeout_restarts_after_it_and_the_clock_survives_a_controller_restart() -> None:
    job = vcjob(task("worker", 2), policies=[policy("PodFailed", "RestartJob", timeout="30s")])
    sim = VolcanoSim(job)
    sim.run_all()
    sim.kubelet("demo-worker-0", "Failed", 1)
    sim.step()
    assert sim.phase == "Running" and len(sim.status["delayedActions"]) == 1
    # A new controller process only has the stored status: the clock goes on from there.
    restarted = VolcanoSim(json.loads(json.dumps(sim.job)))
    restarted.pods, restarted.now = sim.pods, sim.now
    restarted.step(10)
    assert restarted.phase == "Running"
    restarted.step(20)
    assert restarted.phase == "Restarting" and restarted.status["retryCount"] == 1
    assert "delayedActions" not in restarted.status


def test_an_immediate_policy_still_acts_at_once() -> None:
    sim = VolcanoSim(
        vcjob(
            task("worker", 2),
            policies=[policy("PodFailed", "RestartJob", timeout="5m"), policy("PodEvicted", "AbortJob")],
        )
    )
    sim.run_all()
    sim.kubelet("demo-worker-0", "Failed", 1)
    sim.step()
    del sim.pods["demo-worker-1"]
    sim.step()
    assert sim.phase == "Aborting"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30), ("1m30s", 90), ("1h", 3600), ("1.5m", 90), ("500ms", 0.5), ("0", 0), ("", None), ("5", None)],
)
def test_go_durations(text: str, seconds: float | None) -> None:
    assert parse_go_duration(text) == seconds


# --- OutOfSync -------------------------------------------------------------------------------------


def test_a_spec_change_is_out_of_sync_and_never_runs_a_policy() -> None:
    sim = VolcanoSim(vcjob(task("worker", 2), policies=[{"events": ["*"], "action": "RestartJob"}]))
    sim.run_all()
    sim.scale("worker", 3)
    sim.settle()
    assert sim.phase in {"Running", "Pending"}
    assert sim.status["retryCount"] == 0 and sorted(sim.pods)[-1] == "demo-worker-2"
    assert [m for m in sim.events("OutOfSync")] == ["job spec changed (generation 1 -> 2): syncing"]


# --- RestartPartition ------------------------------------------------------------------------------


def test_restart_partition_kills_only_the_failed_pods_partition() -> None:
    partitioned = task(
        "worker",
        4,
        partitionPolicy={"totalPartitions": 2, "partitionSize": 2},
        policies=[policy("PodFailed", "RestartPartition")],
    )
    sim = VolcanoSim(vcjob(partitioned, minAvailable=2))
    sim.run_all()
    labels = {n: p["metadata"]["labels"]["volcano.sh/partition-id"] for n, p in sim.pods.items()}
    assert labels == {"demo-worker-0": "0", "demo-worker-1": "0", "demo-worker-2": "1", "demo-worker-3": "1"}
    sim.kubelet("demo-worker-3", "Failed", 1)
    sim.step()
    assert sim.phase == "Restarting" and sorted(sim.pods) == ["demo-worker-0", "demo-worker-1"]
    sim.settle()
    assert sorted(sim.pods) == ["demo-worker-0", "demo-worker-1", "demo-worker-2", "demo-worker-3"]
    assert sim.status["retryCount"] == 1


# --- Commands: ResumeJob, AbortJob -----------------------------------------------------------------


def test_abort_command_then_resume_command() -> None:
    sim = VolcanoSim(vcjob(task("worker", 2)))
    sim.run_all()
    sim.command = "AbortJob"
    sim.step()
    assert sim.phase == "Aborting"
    sim.settle()
    assert sim.phase == "Aborted" and sim.pods == {}
    sim.command = "ResumeJob"
    sim.step()
    assert sim.phase == "Restarting" and sim.status["retryCount"] == 1 and sim.status["version"] == 1
    sim.settle()
    assert sim.phase == "Pending" and sorted(sim.pods) == ["demo-worker-0", "demo-worker-1"]
    assert all(p["metadata"]["annotations"]["volcano.sh/job-version"] == "1" for p in sim.pods.values())
    assert any("Start to execute command ResumeJob" in m for m in sim.events("CommandIssued"))


def test_resume_of_a_running_job_does_nothing() -> None:
    sim = VolcanoSim(vcjob(task("worker", 2)))
    sim.run_all()
    sim.command = "ResumeJob"
    sim.settle()
    assert sim.phase == "Running" and sim.status["retryCount"] == 0


def test_an_aborted_job_without_a_resume_stays_aborted() -> None:
    sim = VolcanoSim(vcjob(task("worker", 1), policies=[policy("PodFailed", "AbortJob")]))
    sim.run_all()
    sim.kubelet("demo-worker-0", "Failed", 1)
    sim.settle()
    sim.command = "RestartJob"
    sim.settle()
    assert sim.phase == "Aborted"


# --- PodGroup gating -------------------------------------------------------------------------------


def test_pods_wait_for_the_pod_group_when_a_gang_scheduler_runs() -> None:
    sim = VolcanoSim(vcjob(task("worker", 2), schedulerName="volcano"), gang=True, wait_for_pod_group=True)
    sim.settle()
    assert sim.pods == {} and ("PodGroup", "demo-uid-1") in sim.extras
    assert sim.events("PodGroupPending")
    sim.group_phase = "Pending"
    sim.settle()
    assert sim.pods == {}
    sim.group_phase = "Inqueue"
    sim.settle()
    assert sorted(sim.pods) == ["demo-worker-0", "demo-worker-1"]


@pytest.mark.parametrize(
    ("scheduler", "wait", "gang"),
    [("volcano", False, True), ("default-scheduler", True, True), ("volcano", True, False)],
)
def test_no_waiting_without_the_flag_the_volcano_scheduler_or_the_api(scheduler: str, wait: bool, gang: bool) -> None:
    sim = VolcanoSim(vcjob(task("worker", 2), schedulerName=scheduler), gang=gang, wait_for_pod_group=wait)
    sim.settle()
    assert len(sim.pods) == 2


# --- svc: NetworkPolicy and hosts after a scale ----------------------------------------------------


def test_svc_network_policy_admits_only_the_jobs_pods() -> None:
    sim = VolcanoSim(vcjob(task("worker", 2), plugins={"svc": []}))
    sim.settle()
    netpol = sim.extras[("NetworkPolicy", "demo")]
    selector = {"matchLabels": {"volcano.sh/job-name": "demo", "volcano.sh/job-namespace": "ns"}}
    assert netpol["apiVersion"] == "networking.k8s.io/v1"
    assert netpol["spec"] == {
        "podSelector": selector,
        "ingress": [{"from": [{"podSelector": selector}]}],
        "policyTypes": ["Ingress"],
    }
    assert netpol["metadata"]["ownerReferences"][0]["uid"] == "uid-1"


def test_svc_network_policy_can_be_disabled() -> None:
    sim = VolcanoSim(vcjob(task("worker", 2), plugins={"svc": ["--disable-network-policy=true"]}))
    sim.settle()
    assert ("NetworkPolicy", "demo") not in sim.extras and ("ConfigMap", "demo-svc") in sim.extras


def test_scaling_a_task_rewrites_the_hosts_config_map() -> None:
    sim = VolcanoSim(vcjob(task("ps", 1), task("worker", 2), plugins={"svc": []}))
    sim.run_all()
    assert sim.updated == []  # nothing changed: no rewrite
    sim.scale("worker", 3)
    sim.settle()
    assert len(sim.updated) == 1
    data = sim.extras[("ConfigMap", "demo-svc")]["data"]
    assert data["VC_WORKER_NUM"] == "3"
    assert data["VC_WORKER_HOSTS"] == "demo-worker-0.demo,demo-worker-1.demo,demo-worker-2.demo"
    assert data["worker.host"].splitlines()[-1] == "demo-worker-2.demo"
    # The new pod reads the same ConfigMap keys as the others (the variables come from it).
    env = {e["name"]: e.get("valueFrom") for e in sim.pods["demo-worker-2"]["spec"]["containers"][0]["env"]}
    assert env["VC_WORKER_NUM"] == {"configMapKeyRef": {"name": "demo-svc", "key": "VC_WORKER_NUM"}}
    sim.scale("worker", 1)
    sim.settle()
    assert sim.extras[("ConfigMap", "demo-svc")]["data"]["VC_WORKER_NUM"] == "1"
    assert sorted(sim.pods) == ["demo-ps-0", "demo-worker-0"]


def test_a_restarted_controller_still_rewrites_hosts_changed_while_it_was_away() -> None:
    sim = VolcanoSim(vcjob(task("worker", 2), plugins={"svc": []}))
    sim.run_all()
    sim.scale("worker", 3)
    # A new process: it has not seen the ConfigMap yet (no informer for it), the status says what was written.
    restarted = VolcanoSim(sim.job)
    restarted.pods, restarted.services, restarted.now = sim.pods, sim.services, sim.now
    restarted.extras = {k: v for k, v in sim.extras.items() if k[0] != "ConfigMap"}
    plan = restarted.step()
    assert [o["kind"] for o in plan.update] == ["ConfigMap"]
    assert plan.update[0]["data"]["VC_WORKER_NUM"] == "3"
    assert not [o for o in plan.create if o["kind"] == "ConfigMap"]


@pytest.mark.parametrize("event", ["OutOfSync", "CommandIssued", "PodRunning"])
def test_internal_events_match_no_policy_not_even_the_wildcard(event: str) -> None:
    from jobgate.controller.lifecycle_policy import Action, Policy

    assert not Policy(Action.RESTART_JOB, frozenset({"*"})).matches(event, None)
    assert not Policy(Action.RESTART_JOB, frozenset({event})).matches(event, None)
    assert Policy(Action.RESTART_JOB, frozenset({"*"})).matches("PodFailed", 1)
