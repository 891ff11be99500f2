"""T9k GenericJob under the controller: model, substitution, finish rules, restarts, run modes, status."""

from __future__ import annotations

from typing import Any

import pytest

from jobgate.controller.adapters import adapter_for
from jobgate.controller.adapters.t9k import read_genericjob_status, rule_text
from jobgate.controller.engine import Plan
from jobgate.controller.runmodes import DEBUG_COMMAND, apply_override, debug_override
from jobgate.controller.substitution import SubstitutionContext, substitute
from tests.unit.test_controller_engine import Sim


def t9k_replica(replica_type: str, replicas: int | None = None, **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "type": replica_type,
        "template": {"spec": {"containers": [{"name": "main", "image": "example/image:1", "command": ["train"]}]}},
        **extra,
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return spec


def genericjob(*replicas: dict[str, Any], name: str = "gj", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "GenericJob",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"replicaSpecs": list(replicas), **spec},
    }


class T9kSim(Sim):
    """The engine simulation, reading the status back in T9k's shape as the runtime does."""

    def step(self, seconds: float = 0) -> Plan:
        plan = super().step(seconds)
        self.status = self.adapter.read(self.job)
        return plan

    @property
    def phase(self) -> str:
        return self.job["status"]["phase"]

    def condition(self, kind: str) -> dict[str, Any] | None:
        return next((c for c in self.job["status"]["conditions"] if c["type"] == kind), None)

    def run_all(self, *names: str) -> None:
        for name in names or list(self.pods):
            self.set_phase(name, "Running")


def started(job: dict[str, Any]) -> T9kSim:
    sim = T9kSim(job)
    sim.step()
    return sim


# --- model -------------------------------------------------------------------------------------


def test_pods_are_named_by_type_and_rank_and_never_restarted_by_the_kubelet() -> None:
    sim = started(genericjob(t9k_replica("master"), t9k_replica("worker", 2, restartPolicy={"policy": "Always"})))
    assert sorted(sim.pods) == ["gj-master-0", "gj-worker-0", "gj-worker-1"]
    assert {p["spec"]["restartPolicy"] for p in sim.pods.values()} == {"Never"}
    assert sim.services == {}  # no spec.service: no services


def test_spec_service_gives_each_replica_a_service_with_its_ports() -> None:
    ports = [{"name": "http", "port": 8080}, {"name": "grpc", "port": 9090}]
    sim = started(genericjob(t9k_replica("worker", 2), service={"ports": ports}))
    assert sorted(sim.services) == ["gj-worker-0", "gj-worker-1"]
    service = sim.services["gj-worker-1"]
    assert service["spec"]["ports"] == ports
    assert service["spec"]["selector"]["replica-index"] == "1"


def test_variables_are_substituted_in_command_args_and_env() -> None:
    replica = t9k_replica("worker", 2)
    main = replica["template"]["spec"]["containers"][0]
    main["command"] = ["run", "--role=$(type)", "--rank=$(rank)"]
    main["args"] = ["--peers=$(replicas[worker])", "--ps=$(service.ps[0].host):$(service.port[http])"]
    main["env"] = [{"name": "ME", "value": "$(service.worker[$(rank)].host)"}, {"name": "KEEP", "value": "$(HOME)"}]
    sim = started(genericjob(t9k_replica("ps"), replica, service={"ports": [{"name": "http", "port": 8080}]}))
    container = sim.pods["gj-worker-1"]["spec"]["containers"][0]
    assert container["command"] == ["run", "--role=worker", "--rank=1"]
    assert container["args"] == ["--peers=2", "--ps=gj-ps-0.ns.svc:8080"]
    # One pass, as the reference defines no nesting: the inner $(rank) is replaced, the outer kept.
    assert container["env"][0]["value"] == "$(service.worker[1].host)"
    assert container["env"][1]["value"] == "$(HOME)"


def test_service_variables_need_spec_service() -> None:
    replica = t9k_replica("worker")
    replica["template"]["spec"]["containers"][0]["args"] = ["$(service.worker[0].host)", "$(type)"]
    sim = started(genericjob(replica))
    assert sim.pods["gj-worker-0"]["spec"]["containers"][0]["args"] == ["$(service.worker[0].host)", "worker"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$(type)-$(rank)", "worker-3"),
        ("$$(type)", "$$(type)"),  # the kubelet's escape is left for the kubelet
        ("$(replicas[ps])/$(replicas[nope])", "2/$(replicas[nope])"),
        ("$(service.ps[1].host)", "job-ps-1.ns.svc"),
        ("$(service.ps[2].host)", "$(service.ps[2].host)"),  # no such rank
        ("$(service.port[http]) $(service.port[none])", "80 $(service.port[none])"),
        ("$(unknown) $(", "$(unknown) $("),
    ],
)
def test_substitute(text: str, expected: str) -> None:
    context = SubstitutionContext("job", "ns", "worker", 3, {"ps": 2, "worker": 4}, {"http": 80})
    assert substitute(text, context) == expected


def test_rule_text_is_t9ks_format() -> None:
    assert rule_text({"worker": [0]}) == '{ "worker": [0] }'
    assert rule_text({"master": [2], "worker": [0, 1]}) == '{ "master": [2], "worker": [0, 1] }'


# --- finish rules and restarts ------------------------------------------------------------------


def test_default_rules_succeed_when_every_replica_succeeded() -> None:
    sim = started(genericjob(t9k_replica("master"), t9k_replica("worker", 2)))
    sim.run_all()
    sim.step()
    assert sim.phase == "Running"
    for name in ("gj-master-0", "gj-worker-0"):
        sim.set_phase(name, "Succeeded", exit_code=0)
    sim.step()
    assert sim.phase == "Running"  # worker 1 still runs
    sim.set_phase("gj-worker-1", "Succeeded", exit_code=0)
    sim.step()
    assert sim.phase == "Succeeded"
    assert sim.condition("Completed")["status"] == "True"


def test_default_rules_of_a_huge_job_are_not_listed_index_by_index() -> None:
    from jobgate.controller.adapters.t9k import _rules

    success, failure = _rules({}, {"worker": 20_001, "ps": 3})  # listed, these would be 20,004 rules
    assert [len(rule.selectors) for rule in success] == [2]
    assert [rule.description for rule in failure] == [
        'The job is failed with rule: { "worker": [any] }',
        'The job is failed with rule: { "ps": [any] }',
    ]


@pytest.mark.parametrize("fails", [False, True])
def test_unlisted_default_rules_mean_what_the_listed_ones_do(monkeypatch: pytest.MonkeyPatch, fails: bool) -> None:
    monkeypatch.setattr("jobgate.controller.adapters.t9k.MAX_WRITTEN_RULE_REPLICAS", 1)
    sim = started(genericjob(t9k_replica("worker", 2)))
    sim.run_all()
    sim.step()
    sim.set_phase("gj-worker-0", "Succeeded", exit_code=0)
    sim.step()
    assert sim.phase == "Running"
    if fails:
        sim.set_phase("gj-worker-1", "Failed", exit_code=1)
        sim.step()
        assert sim.phase == "Failed"
    else:
        sim.set_phase("gj-worker-1", "Succeeded", exit_code=0)
        sim.step()
        assert sim.phase == "Succeeded"


def test_a_success_rule_over_some_indices_finishes_the_job_and_cleanup_unfinished_deletes_the_rest() -> None:
    sim = started(
        genericjob(
            t9k_replica("master"),
            t9k_replica("worker", 2),
            successRules=[{"master": [0]}],
            failureRules=[{"master": [0]}],
            cleanUpPolicy="Unfinished",
        )
    )
    sim.run_all()
    sim.step()
    sim.set_phase("gj-master-0", "Succeeded", exit_code=0)
    plan = sim.step()
    assert sim.phase == "Succeeded"
    assert sorted(d.name for d in plan.delete) == ["gj-worker-0", "gj-worker-1"]


@pytest.mark.parametrize(("policy", "deleted"), [("None", []), ("All", ["gj-master-0", "gj-worker-0"])])
def test_clean_up_policy_on_finish(policy: str, deleted: list[str]) -> None:
    sim = started(
        genericjob(t9k_replica("master"), t9k_replica("worker"), successRules=[{"master": [0]}], cleanUpPolicy=policy)
    )
    sim.run_all()
    sim.step()
    sim.set_phase("gj-master-0", "Succeeded", exit_code=0)
    plan = sim.step()
    assert sorted(d.name for d in plan.delete if d.kind == "Pod") == deleted


def test_restarts_per_type_up_to_the_limit_then_the_failure_rule_fails_the_job() -> None:
    sim = started(
        genericjob(
            t9k_replica("master", restartPolicy={"policy": "Never"}),
            t9k_replica("worker", 2, restartPolicy={"policy": "OnFailure", "limit": 1}),
        )
    )
    sim.run_all()
    sim.step()
    old_uid = sim.pods["gj-worker-0"]["metadata"]["uid"]
    sim.set_phase("gj-worker-0", "Failed", exit_code=1)
    sim.step()  # deletes the failed pod: restart 1 of 1
    sim.step()  # recreates it
    assert sim.pods["gj-worker-0"]["metadata"]["uid"] != old_uid
    assert sim.job["status"]["tasks"][1] | {"replicas": None} == {"type": "worker", "restartCount": 1, "replicas": None}
    assert sim.job["status"]["tasks"][0]["restartCount"] == 0
    assert sim.phase == "Running"
    sim.set_phase("gj-worker-0", "Failed", exit_code=1)
    sim.step()
    assert sim.phase == "Failed"
    failed = sim.condition("Failed")
    assert failed["message"] == 'The job is failed with rule: { "worker": [0] }'
    assert sim.condition("Completed") == {**failed, "type": "Completed", "status": "False"}
    assert "gj-worker-0" in sim.pods  # the failed pod is kept for its logs


def test_restart_policy_never_fails_the_replica_on_its_first_failure() -> None:
    sim = started(genericjob(t9k_replica("worker", 2, restartPolicy={"policy": "Never", "limit": 5})))
    sim.run_all()
    sim.step()
    sim.set_phase("gj-worker-1", "Failed", exit_code=1)
    sim.step()
    assert sim.phase == "Failed"
    assert sim.condition("Failed")["message"] == 'The job is failed with rule: { "worker": [1] }'


def test_a_failed_replica_no_rule_mentions_does_not_fail_the_job() -> None:
    sim = started(
        genericjob(
            t9k_replica("master"),
            t9k_replica("worker", restartPolicy={"policy": "Never"}),
            successRules=[{"master": [0]}],
            failureRules=[{"master": [0]}],
        )
    )
    sim.run_all()
    sim.step()
    sim.set_phase("gj-worker-0", "Failed", exit_code=1)
    sim.step()
    assert sim.phase == "Running"
    sim.set_phase("gj-master-0", "Succeeded", exit_code=0)
    sim.step()
    assert sim.phase == "Succeeded"


def test_every_replica_finished_with_no_rule_met_fails_the_job() -> None:
    sim = started(
        genericjob(
            t9k_replica("master"),
            t9k_replica("worker", restartPolicy={"policy": "Never"}),
            successRules=[{"master": [0], "worker": [0]}],
            failureRules=[{"master": [0]}],
        )
    )
    sim.run_all()
    sim.step()
    sim.set_phase("gj-worker-0", "Failed", exit_code=1)
    sim.set_phase("gj-master-0", "Succeeded", exit_code=0)
    sim.step()
    assert sim.phase == "Failed"
    assert sim.condition("Failed")["reason"] == "NoRuleMet"


# --- run modes -----------------------------------------------------------------------------------


def test_debug_mode_without_entries_replaces_every_command_with_sleep() -> None:
    replica = t9k_replica("worker")
    replica["template"]["spec"]["containers"][0]["args"] = ["--epochs", "3"]
    sim = started(genericjob(replica, t9k_replica("ps"), runMode={"debug": {"enabled": True}}))
    for pod in sim.pods.values():
        main = pod["spec"]["containers"][0]
        assert main["command"] == DEBUG_COMMAND
        assert "args" not in main


def test_debug_entries_apply_to_their_types_only_and_may_skip_init_containers() -> None:
    worker = t9k_replica("worker")
    worker["template"]["spec"]["initContainers"] = [{"name": "init", "image": "busybox"}]
    run_mode = {"debug": {"enabled": True, "replicaSpecs": [{"type": "worker", "skipInitContainer": True}]}}
    sim = started(genericjob(worker, t9k_replica("ps"), runMode=run_mode))
    assert sim.pods["gj-worker-0"]["spec"]["containers"][0]["command"] == DEBUG_COMMAND
    assert "initContainers" not in sim.pods["gj-worker-0"]["spec"]
    assert sim.pods["gj-ps-0"]["spec"]["containers"][0]["command"] == ["train"]


def test_debug_override_keeps_an_explicit_command() -> None:
    run_mode = {"debug": {"enabled": True, "replicaSpecs": [{"type": "worker", "command": ["bash"]}]}}
    override = debug_override(run_mode, "worker")
    assert override is not None
    template = {"spec": {"containers": [{"name": "a", "command": ["x"], "args": ["y"]}]}}
    assert apply_override(template, override, replace_args=True)["spec"]["containers"][0] == {
        "name": "a",
        "command": ["bash"],
    }
    assert debug_override({"debug": {"enabled": False}}, "worker") is None


RESUME_WORKER = {"type": "worker", "command": ["resume"], "args": ["-c"]}


def test_pause_deletes_the_pods_and_resume_recreates_them_with_the_resume_specs() -> None:
    job = genericjob(
        t9k_replica("master"),
        t9k_replica("worker", 2),
        runMode={"pause": {"enabled": False, "resumeSpecs": [RESUME_WORKER]}},
    )
    sim = started(job)
    sim.run_all()
    sim.step()
    sim.set_phase("gj-worker-1", "Succeeded", exit_code=0)
    sim.step()
    assert sim.phase == "Running"

    job["spec"]["runMode"]["pause"]["enabled"] = True
    plan = sim.step()
    assert sim.phase == "Paused"
    assert sim.pods == {} and plan.create == []
    assert sim.condition("Paused")["status"] == "True"
    assert sim.job["status"]["aggregate"]["deleted"] == 2  # master 0, worker 0; worker 1 succeeded
    sim.step()
    assert sim.pods == {}  # stays paused

    job["spec"]["runMode"]["pause"]["enabled"] = False
    sim.step()
    assert sim.phase == "Resuming"
    assert sorted(sim.pods) == ["gj-master-0", "gj-worker-0"]  # the succeeded rank is not rerun
    worker = sim.pods["gj-worker-0"]["spec"]["containers"][0]
    assert (worker["command"], worker["args"]) == (["resume"], ["-c"])
    assert sim.pods["gj-master-0"]["spec"]["containers"][0]["command"] == ["train"]
    sim.run_all()
    sim.step()
    assert sim.phase == "Running"


def test_a_job_created_paused_creates_no_pods() -> None:
    sim = started(genericjob(t9k_replica("worker"), runMode={"pause": {"enabled": True}}))
    assert sim.pods == {}
    assert sim.phase == "Paused"


# --- status ---------------------------------------------------------------------------------------


def test_status_has_t9ks_shape() -> None:
    sim = started(genericjob(t9k_replica("master"), t9k_replica("worker", 2)))
    assert sim.phase == "Pending"
    assert sim.job["status"]["aggregate"] == {
        "creating": 3,
        "pending": 0,
        "running": 0,
        "succeeded": 0,
        "failed": 0,
        "unknown": 0,
        "deleted": 0,
    }
    sim.step()
    sim.set_phase("gj-master-0", "Running")
    sim.step()
    status = sim.job["status"]
    assert status["aggregate"]["pending"] == 2 and status["aggregate"]["running"] == 1
    assert [t["type"] for t in status["tasks"]] == ["master", "worker"]
    worker_replicas = status["tasks"][1]["replicas"]
    assert [(r["name"], r["phase"]) for r in worker_replicas] == [
        ("gj-worker-0", "Pending"),
        ("gj-worker-1", "Pending"),
    ]
    assert worker_replicas[0]["uid"] == sim.pods["gj-worker-0"]["metadata"]["uid"]
    master = status["tasks"][0]["replicas"][0]
    assert master["containers"] == [{"name": "main", "state": {"running": {}}}]
    assert {c["type"] for c in status["conditions"]} == {"Initialized"}


def test_completed_ranks_are_read_back_from_tasks_when_the_schema_has_no_completed_indices() -> None:
    job = genericjob(t9k_replica("worker", 2))
    job["status"] = {
        "tasks": [
            {"type": "worker", "restartCount": 2, "replicas": [{"phase": "Running"}, {"phase": "Succeeded"}]},
        ],
        "conditions": [{"type": "Completed", "status": "False", "reason": "Failed"}],
    }
    status = read_genericjob_status(job)
    assert status.completed_indices == {"worker": [1]}
    assert status.group_restarts == {"worker": 2}
    assert status.restart_count == 2
    assert status.conditions == []  # Completed=False is the companion of Failed, not a condition of its own


def test_adapter_is_registered_for_genericjob() -> None:
    adapter = adapter_for(genericjob(t9k_replica("worker")))
    assert adapter is not None
    assert adapter.read is read_genericjob_status


def test_a_pass_with_nothing_new_writes_no_status() -> None:
    # The status read back from T9k's shape (tasks[].replicas included) equals what the pass computes.
    sim = started(genericjob(t9k_replica("master"), t9k_replica("worker", 2)))
    sim.step()
    sim.run_all()
    sim.step()
    assert sim.step().status_changed is False


@pytest.mark.parametrize(
    "dropped",
    [
        ("replicaStatuses", "replicaSummary", "completedIndices", "restartCount", "lastReconcileTime"),
        ("replicaStatuses",),
    ],
)
def test_a_pass_with_nothing_new_writes_no_status_even_when_the_schema_drops_the_counts(dropped: tuple) -> None:
    sim = started(genericjob(t9k_replica("master"), t9k_replica("worker", 2)))
    sim.step()
    sim.run_all()
    sim.set_phase("gj-worker-1", "Succeeded", exit_code=0)
    sim.step()
    for pruned in dropped:
        sim.job["status"].pop(pruned, None)
    sim.status = sim.adapter.read(sim.job)
    assert sim.step().status_changed is False
