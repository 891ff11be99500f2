"""DIJob under the controller: children, ranks, DI_* environment, phases, backoff, cleanup, taskStatus."""

from __future__ import annotations

from typing import Any

import pytest

from jobgate.controller.adapters import adapter_for
from jobgate.controller.adapters.diengine import read_dijob_status, task_nodes_variable
from jobgate.controller.engine import Observed, reconcile
from tests.unit.test_t9k_controller import T9kSim


def task(task_type: str | None = None, replicas: int | None = None, name: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"spec": {"containers": [{"name": "di", "image": "opendilab/ding:1"}]}}}
    if task_type is not None:
        spec["type"] = task_type
    if replicas is not None:
        spec["replicas"] = replicas
    if name is not None:
        spec["name"] = name
    return spec


def dijob(*tasks: dict[str, Any], name: str = "dj", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "diengine.opendilab.org/v2alpha1",
        "kind": "DIJob",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"tasks": list(tasks), **spec},
    }


def started(job: dict[str, Any]) -> T9kSim:
    sim = T9kSim(job)  # same simulation; the DIJob adapter reads its own status shape
    sim.step()
    return sim


def env_of(pod: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}


THREE_TASKS = (task("learner", 2), task("collector", 1, name="collect-a"), task(None, 1, name="extra"))


def test_pods_carry_di_orchestrators_names_labels_annotations_and_global_ranks() -> None:
    sim = started(dijob(*THREE_TASKS))
    assert sorted(sim.pods) == ["dj-collect-a-0", "dj-extra-0", "dj-learner-0", "dj-learner-1"]
    ranks = {name: pod["metadata"]["annotations"]["diengine/rank"] for name, pod in sim.pods.items()}
    assert ranks == {"dj-learner-0": "0", "dj-learner-1": "1", "dj-collect-a-0": "2", "dj-extra-0": "3"}
    pod = sim.pods["dj-learner-1"]
    assert pod["metadata"]["annotations"]["diengine/task-rank"] == "1"
    assert pod["metadata"]["annotations"]["diengine/replicas"] == "4"
    labels = pod["metadata"]["labels"]
    assert {k: v for k, v in labels.items() if k.startswith("diengine/")} == {
        "diengine/operator": "di-operator",
        "diengine/job": "dj",
        "diengine/task-type": "learner",
        "diengine/task-name": "learner",
        "diengine/pod": "dj-learner-1",
    }
    assert sim.pods["dj-extra-0"]["metadata"]["labels"]["diengine/task-type"] == "none"
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"], pod["spec"]["restartPolicy"]) == (
        "dj-learner-1",
        "di-dj",
        "Never",
    )


def test_one_headless_service_for_the_job() -> None:
    sim = started(dijob(*THREE_TASKS))
    assert list(sim.services) == ["di-dj"]
    service = sim.services["di-dj"]
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["ports"] == [{"name": "di-port", "port": 22270, "targetPort": 22270}]
    assert service["spec"]["selector"] == {"diengine/operator": "di-operator", "diengine/job": "dj"}
    plan = sim.step()
    assert not any(o["kind"] == "Service" for o in plan.create)  # present: not created again
    assert not any(d.kind == "Service" for d in plan.delete)  # nor deleted as a leftover


def test_di_environment() -> None:
    sim = started(dijob(task("learner", 2), task("collector", 1, name="collect-a"), task("collector", 1, name="c-b")))
    env = env_of(sim.pods["dj-collect-a-0"])
    fqdn = "{}.di-dj.ns.svc.cluster.local".format
    assert env["DI_JOB_ID"] == "ns/dj"
    assert env["DI_RANK"] == "2"
    assert env["DI_NODES"] == ",".join(fqdn(p) for p in ("dj-learner-0", "dj-learner-1", "dj-collect-a-0", "dj-c-b-0"))
    # Named by the task, listing every pod of the same task type (DI-orchestrator's BuildPod).
    assert env["DI_COLLECT_A_NODES"] == ",".join(fqdn(p) for p in ("dj-collect-a-0", "dj-c-b-0"))
    assert env["DI_SERVER_URL"].startswith("http://di-server.di-system.")
    assert env_of(sim.pods["dj-learner-1"])["DI_LEARNER_NODES"] == f"{fqdn('dj-learner-0')},{fqdn('dj-learner-1')}"
    assert task_nodes_variable("my-task") == "DI_MY_TASK_NODES"


def test_job_volumes_are_added_to_every_pod() -> None:
    volume = {"name": "data", "emptyDir": {}}
    learner = task("learner")
    learner["template"]["spec"]["volumes"] = [{"name": "data", "hostPath": {"path": "/d"}}]
    sim = started(dijob(learner, task("collector"), volumes=[volume]))
    assert sim.pods["dj-collector-0"]["spec"]["volumes"] == [volume]
    assert sim.pods["dj-learner-0"]["spec"]["volumes"] == [{"name": "data", "hostPath": {"path": "/d"}}]


def test_phases_through_success() -> None:
    sim = started(dijob(task("learner"), task("collector", 2)))
    assert sim.phase == "Pending"  # pods being created
    sim.step()
    assert sim.phase == "Starting"  # every pod exists, not all running
    sim.run_all()
    sim.step()
    assert sim.phase == "Running"
    assert sim.job["status"]["readyReplicas"] == 3
    assert sim.job["status"]["taskStatus"] == {"learner": {"Running": 1}, "collector": {"Running": 2}}
    sim.set_phase("dj-learner-0", "Succeeded", exit_code=0)
    sim.set_phase("dj-collector-0", "Succeeded", exit_code=0)
    sim.step()
    assert sim.phase == "Running"  # DI: succeeded only when every pod succeeded
    sim.set_phase("dj-collector-1", "Succeeded", exit_code=0)
    plan = sim.step()
    assert sim.phase == "Succeeded"
    assert "taskStatus" not in sim.job["status"] and sim.job["status"]["readyReplicas"] == 0
    assert [d.name for d in plan.delete if d.kind == "Service"] == ["di-dj"]  # the service goes with the job


def test_restarts_are_counted_against_the_backoff_limit() -> None:
    sim = started(dijob(task("learner"), task("collector", 2), backoffLimit=2))
    sim.step()
    sim.run_all()
    sim.step()
    for attempt in (1, 2):
        sim.set_phase("dj-collector-1", "Failed", exit_code=1)
        sim.step()
        assert sim.phase == "Restarting"
        assert sim.job["status"]["restarts"] == attempt
        sim.step()  # recreated
        assert sim.pods["dj-collector-1"]["status"]["phase"] == "Pending"
        sim.step()
        assert sim.phase == "Starting"  # every pod is back, not all running
        sim.run_all()
        sim.step()
        assert sim.phase == "Running"
    sim.set_phase("dj-collector-1", "Failed", exit_code=1)
    plan = sim.step()
    assert sim.phase == "Failed"
    assert sim.condition("Failed")["reason"] == "BackoffLimitExceeded"
    assert sim.job["status"]["restarts"] == 2
    # cleanPodPolicy Running (default): the running pods go, the failed one stays for its logs.
    assert sorted(d.name for d in plan.delete if d.kind == "Pod") == ["dj-collector-0", "dj-learner-0"]


def test_backoff_limit_zero_fails_on_the_first_failure() -> None:
    sim = started(dijob(task("learner"), backoffLimit=0))
    sim.run_all()
    sim.step()
    sim.set_phase("dj-learner-0", "Failed", exit_code=137)
    sim.step()
    assert sim.phase == "Failed"


@pytest.mark.parametrize(("policy", "deleted"), [("None", []), ("All", ["dj-collector-0", "dj-learner-0"])])
def test_clean_pod_policy(policy: str, deleted: list[str]) -> None:
    sim = started(dijob(task("learner"), task("collector"), backoffLimit=0, cleanPodPolicy=policy))
    sim.run_all()
    sim.step()
    sim.set_phase("dj-learner-0", "Failed", exit_code=1)
    plan = sim.step()
    assert sim.phase == "Failed"
    assert sorted(d.name for d in plan.delete if d.kind == "Pod") == deleted


def test_status_reader_falls_back_on_dis_fields() -> None:
    job = dijob(task("learner"))
    job["status"] = {"restarts": 2, "completionTimestamp": "2026-11-21T12:00:00Z"}
    status = read_dijob_status(job)
    assert (status.restart_count, status.completion_time) == (2, "2026-11-21T12:00:00Z")


def test_adapter_is_registered_for_dijob() -> None:
    adapter = adapter_for(dijob(task("learner")))
    assert adapter is not None and adapter.read is read_dijob_status


def test_an_idle_pass_is_recognised_on_the_projected_status() -> None:
    # DI's status keeps no per-pod list, so the runtime compares the projected document instead.
    sim = started(dijob(task("learner"), task("collector", 2)))
    sim.step()
    sim.run_all()
    sim.step()
    plan = sim.step()
    assert sim.adapter.projection_unchanged(sim.job, plan.status)
    sim.set_phase("dj-learner-0", "Succeeded", exit_code=0)
    model = sim.adapter.model(sim.job)
    observed = Observed(list(sim.pods.values()), list(sim.services.values()), frozenset(), sim.now)
    changed = reconcile(model, sim.adapter.read(sim.job), observed)
    assert not sim.adapter.projection_unchanged(sim.job, changed.status)
