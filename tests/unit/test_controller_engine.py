"""The reconcile engine, pass by pass, with the kubelet played by hand."""

from __future__ import annotations

import datetime
import json

import pytest

from jobgate.controller.adapters import adapter_for, read_status
from jobgate.controller.engine import Observed, Plan, reconcile
from jobgate.controller.model import JobStatusModel
from testkit.builders import container, kubedl_job, mx_replica, mxjob, replica, tfjob

T0 = datetime.datetime(2026, 11, 21, 12, 0, tzinfo=datetime.UTC)


def with_identity(job: dict, uid: str = "uid-1") -> dict:
    job["metadata"].update(uid=uid, generation=1)
    return job


class Sim:
    """A job, its children as the informers would show them, and a clock."""

    def __init__(self, job: dict, now: datetime.datetime = T0) -> None:
        self.job = with_identity(job)
        self.adapter = adapter_for(self.job)
        self.pods: dict[str, dict] = {}
        self.services: dict[str, dict] = {}
        self.extras: set[tuple[str, str]] = set()
        self.status = JobStatusModel()
        self.now = now
        self.uid_counter = 0
        self.plans: list[Plan] = []
        self.gang = False

    def step(self, seconds: float = 0) -> Plan:
        self.now += datetime.timedelta(seconds=seconds)
        model = self.adapter.model(self.job)
        observed = Observed(
            list(self.pods.values()), list(self.services.values()), frozenset(self.extras), self.now, self.gang
        )
        plan = reconcile(model, self.status, observed)
        self.status = plan.status
        # What the runtime does: status first, then deletions, then creations.
        self.job["status"] = self.adapter.project(plan.status)
        self.status = read_status(self.job)  # what the next pass reads back from the API
        for deletion in plan.delete:
            (self.pods if deletion.kind == "Pod" else self.services if deletion.kind == "Service" else {}).pop(
                deletion.name, None
            )
            self.extras.discard((deletion.kind, deletion.name))
        for created in plan.create:
            self.uid_counter += 1
            obj = json.loads(json.dumps(created))
            obj["metadata"]["uid"] = f"child-{self.uid_counter}"
            obj["status"] = {"phase": "Pending"} if obj["kind"] == "Pod" else {}
            name = obj["metadata"]["name"]
            if obj["kind"] == "Pod":
                self.pods[name] = obj
            elif obj["kind"] == "Service":
                self.services[name] = obj
            else:
                self.extras.add((obj["kind"], name))
        self.plans.append(plan)
        return plan

    def set_phase(
        self, name: str, phase: str, *, exit_code: int | None = None, reason: str | None = None, restarts: int = 0
    ):
        pod = self.pods[name]
        status: dict = {"phase": phase}
        if reason:
            status["reason"] = reason
        container_name = pod["spec"]["containers"][0]["name"]
        state = {"running": {}} if exit_code is None else {"terminated": {"exitCode": exit_code}}
        status["containerStatuses"] = [{"name": container_name, "restartCount": restarts, "state": state}]
        pod["status"] = status

    def run_all(self) -> None:
        for name in list(self.pods):
            self.set_phase(name, "Running")

    def condition(self, kind: str):
        return self.status.condition(kind)

    def true(self, kind: str) -> bool:
        return self.status.is_true(kind)


def tf(**spec) -> dict:
    return tfjob({"Worker": replica(container(), replicas=2), "PS": replica(container())}, **spec)


# --- children ------------------------------------------------------------------------------------


def test_first_pass_creates_every_pod_and_service_with_names_labels_and_owner():
    sim = Sim(tf())
    plan = sim.step()
    assert sorted(sim.pods) == ["job-ps-0", "job-worker-0", "job-worker-1"]
    assert sorted(sim.services) == ["job-ps-0", "job-worker-0", "job-worker-1"]
    pod = sim.pods["job-worker-1"]
    assert pod["metadata"]["labels"] == {
        "group-name": "training.kubedl.io",
        "job-name": "job",
        "jobgate.dev/job-uid": "uid-1",
        "replica-type": "worker",
        "replica-index": "1",
    }
    assert pod["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "training.kubedl.io/v1alpha1",
            "kind": "TFJob",
            "name": "job",
            "uid": "uid-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert pod["spec"]["restartPolicy"] == "Never"  # ExitCode: the controller restarts
    service = sim.services["job-worker-1"]
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["ports"] == [{"name": "tfjob-port", "port": 2222, "targetPort": 2222}]
    assert service["spec"]["selector"]["replica-index"] == "1"
    assert sim.true("Created")
    assert plan.status_changed
    assert [e.reason for e in plan.events] == ["SuccessfulCreatePod"]


def test_second_pass_creates_nothing_and_writes_nothing():
    sim = Sim(tf())
    first = sim.step()
    assert sim.status.replica_statuses["Worker"].active == 2  # counts the pods it is creating
    plan = sim.step(1)
    assert plan.create == [] and plan.delete == [] and not plan.status_changed and plan.events == []
    assert first.status_changed


def test_master_roles_get_the_job_role_label():
    sim = Sim(tfjob({"Chief": replica(container()), "Worker": replica(container())}))
    sim.step()
    assert sim.pods["job-chief-0"]["metadata"]["labels"]["job-role"] == "master"
    assert "job-role" not in sim.pods["job-worker-0"]["metadata"]["labels"]


def test_pod_restart_policy_follows_the_replica():
    job = tfjob({"Worker": replica(container(), restartPolicy="OnFailure", pod_spec={"restartPolicy": "Always"})})
    sim = Sim(job)
    sim.step()
    assert sim.pods["job-worker-0"]["spec"]["restartPolicy"] == "OnFailure"


def test_template_labels_are_kept_and_job_labels_win():
    job = tfjob(
        {
            "Worker": {
                "template": {
                    "metadata": {"labels": {"team": "a", "job-name": "x"}},
                    "spec": {"containers": [container()]},
                }
            }
        }
    )
    sim = Sim(job)
    sim.step()
    labels = sim.pods["job-worker-0"]["metadata"]["labels"]
    assert labels["team"] == "a" and labels["job-name"] == "job"


def test_scale_down_deletes_pods_and_services_beyond_replicas():
    sim = Sim(tf())
    sim.step()
    sim.job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 1
    plan = sim.step(1)
    assert {(d.kind, d.name) for d in plan.delete} == {("Pod", "job-worker-1"), ("Service", "job-worker-1")}


def test_terminating_pods_are_not_recreated_until_gone():
    sim = Sim(tf())
    sim.step()
    sim.pods["job-worker-0"]["metadata"]["deletionTimestamp"] = "2026-11-21T12:00:00Z"
    plan = sim.step(1)
    assert not any(o["metadata"]["name"] == "job-worker-0" for o in plan.create)


# --- phases -----------------------------------------------------------------------------------------


def test_all_running_makes_the_job_running():
    sim = Sim(tf())
    sim.step()
    sim.set_phase("job-worker-0", "Running")
    sim.step(1)
    assert not sim.true("Running")
    sim.run_all()
    sim.step(1)
    assert sim.true("Running")
    assert sim.status.replica_summary == "PS 1/1, Worker 2/2"
    assert sim.status.replica_statuses["Worker"].active == 2


def test_tfjob_succeeds_when_worker_0_succeeds_and_running_pods_are_cleaned():
    sim = Sim(tf())
    sim.step()
    sim.run_all()
    sim.step(1)
    sim.set_phase("job-worker-0", "Succeeded", exit_code=0)
    plan = sim.step(1)
    assert sim.true("Succeeded")
    assert sim.condition("Running").status == "False"
    assert sim.status.completion_time == "2026-11-21T12:00:02Z"
    # cleanPodPolicy Running: the running pods (and their services) go, the finished one stays.
    assert sorted(sim.pods) == ["job-worker-0"]
    assert sorted(sim.services) == ["job-worker-0"]
    assert "JobSucceeded" in [e.reason for e in plan.events]


def test_tfjob_with_chief_succeeds_on_the_chief_only():
    sim = Sim(tfjob({"Chief": replica(container()), "Worker": replica(container(), replicas=2)}))
    sim.step()
    sim.run_all()
    sim.set_phase("job-worker-0", "Succeeded", exit_code=0)
    sim.step(1)
    assert not sim.true("Succeeded")
    sim.set_phase("job-chief-0", "Succeeded", exit_code=0)
    sim.step(1)
    assert sim.true("Succeeded")


def test_tfjob_all_workers_success_policy():
    sim = Sim(tfjob({"Worker": replica(container(), replicas=2)}, successPolicy="AllWorkers"))
    sim.step()
    sim.run_all()
    sim.set_phase("job-worker-0", "Succeeded", exit_code=0)
    sim.step(1)
    assert not sim.true("Succeeded")
    sim.set_phase("job-worker-1", "Succeeded", exit_code=0)
    sim.step(1)
    assert sim.true("Succeeded")


@pytest.mark.parametrize(
    ("kind", "leader"), [("PyTorchJob", "master"), ("XGBoostJob", "master"), ("MPIJob", "launcher")]
)
def test_success_follows_the_leader(kind, leader):
    field_container = {"PyTorchJob": "pytorch", "XGBoostJob": "xgboostjob", "MPIJob": "mpi"}[kind]
    role = leader.capitalize()
    sim = Sim(
        kubedl_job(kind, {role: replica(container(field_container)), "Worker": replica(container(field_container))})
    )
    sim.step()
    sim.run_all()
    sim.set_phase("job-worker-0", "Succeeded", exit_code=0)
    sim.step(1)
    assert not sim.true("Succeeded")
    sim.set_phase(f"job-{leader}-0", "Succeeded", exit_code=0)
    sim.step(1)
    assert sim.true("Succeeded")


def test_mxjob_succeeds_when_all_workers_succeed():
    sim = Sim(mxjob("dist", mx_replica("SCHEDULER"), mx_replica("SERVER"), mx_replica("WORKER", 2), name="job"))
    sim.step()
    assert sorted(sim.pods) == ["job-scheduler-0", "job-server-0", "job-worker-0", "job-worker-1"]
    sim.run_all()
    sim.step(1)
    assert sim.job["status"]["phase"] == "Running"
    sim.set_phase("job-worker-0", "Succeeded", exit_code=0)
    sim.step(1)
    assert not sim.true("Succeeded")
    sim.set_phase("job-worker-1", "Succeeded", exit_code=0)
    sim.step(1)
    assert sim.true("Succeeded")
    assert (sim.job["status"]["phase"], sim.job["status"]["state"]) == ("Done", "Succeeded")


def test_succeeded_indices_are_never_recreated():
    sim = Sim(tfjob({"Chief": replica(container()), "Worker": replica(container(), replicas=2)}))
    sim.step()
    sim.set_phase("job-worker-1", "Succeeded", exit_code=0)
    sim.step(1)
    assert sim.status.completed_indices == {"Worker": [1]}
    del sim.pods["job-worker-1"]  # garbage-collected, or deleted by hand
    plan = sim.step(1)
    assert not any(o["metadata"]["name"] == "job-worker-1" for o in plan.create)
    assert sim.status.replica_statuses["Worker"].succeeded == 1


# --- failures and restarts -------------------------------------------------------------------------


def test_permanent_exit_code_fails_the_job():
    sim = Sim(tf())
    sim.step()
    sim.run_all()
    sim.step(1)
    sim.set_phase("job-worker-1", "Failed", exit_code=1)
    plan = sim.step(1)
    failed = sim.condition("Failed")
    assert failed.status == "True" and failed.reason == "JobFailed"
    assert "pod job-worker-1 exited with code 1" in failed.message
    assert sim.status.restart_count == 0
    assert sim.condition("Running").status == "False"
    assert "job-worker-0" not in sim.pods  # running pods cleaned up
    assert any(e.type == "Warning" and e.reason == "JobFailed" for e in plan.events)


@pytest.mark.parametrize("code", [130, 137, 138, 143])
def test_retryable_exit_code_recreates_the_pod_and_counts_a_restart(code):
    sim = Sim(tf())
    sim.step()
    sim.run_all()
    sim.step(1)
    old_uid = sim.pods["job-worker-1"]["metadata"]["uid"]
    sim.set_phase("job-worker-1", "Failed", exit_code=code)
    plan = sim.step(1)
    assert sim.status.restart_count == 1
    assert sim.true("Restarting") and not sim.true("Running")
    assert [(d.name, d.uid) for d in plan.delete] == [("job-worker-1", old_uid)]
    assert sim.status.restarting_pods == [old_uid]
    assert any(e.reason == "JobRestarting" for e in plan.events)
    plan = sim.step(1)  # the pod is gone: a new one is made
    assert [o["metadata"]["name"] for o in plan.create if o["kind"] == "Pod"] == ["job-worker-1"]
    assert sim.status.restarting_pods == []
    sim.run_all()
    sim.step(1)
    assert sim.true("Running") and sim.condition("Restarting") is None
    assert sim.status.restart_count == 1


def test_a_restart_is_counted_once_even_if_the_delete_did_not_happen():
    sim = Sim(tf())
    sim.step()
    sim.set_phase("job-worker-1", "Failed", exit_code=137)
    model = sim.adapter.model(sim.job)
    observed = Observed(list(sim.pods.values()), list(sim.services.values()), frozenset(), sim.now)
    first = reconcile(model, sim.status, observed)
    second = reconcile(model, first.status, observed)  # the delete failed; same pod seen again
    assert first.status.restart_count == second.status.restart_count == 1
    assert [d.name for d in second.delete] == ["job-worker-1"]


def test_backoff_limit_exceeded_fails_the_job():
    sim = Sim(tf(backoffLimit=2))
    sim.step()
    for restart in (1, 2):
        sim.set_phase("job-worker-0", "Failed", exit_code=137)
        sim.step(1)
        assert sim.status.restart_count == restart
        sim.step(1)  # recreated
    sim.set_phase("job-worker-0", "Failed", exit_code=137)
    sim.step(1)
    failed = sim.condition("Failed")
    assert failed is not None and failed.reason == "BackoffLimitExceeded"
    assert "backoff limit of 2" in failed.message


def test_backoff_limit_zero_allows_no_restart():
    sim = Sim(tf(backoffLimit=0))
    sim.step()
    sim.set_phase("job-ps-0", "Failed", exit_code=143)
    sim.step(1)
    assert sim.condition("Failed").reason == "BackoffLimitExceeded"


def test_in_place_restarts_count_against_the_backoff_limit():
    job = tfjob({"Worker": replica(container(), restartPolicy="OnFailure")}, backoffLimit=3)
    sim = Sim(job)
    sim.step()
    sim.set_phase("job-worker-0", "Running", restarts=3)
    sim.step(1)
    assert not sim.true("Failed")
    sim.set_phase("job-worker-0", "Running", restarts=4)
    sim.step(1)
    assert sim.condition("Failed").reason == "BackoffLimitExceeded"


def test_never_policy_fails_on_any_pod_failure():
    sim = Sim(tfjob({"Worker": replica(container(), restartPolicy="Never")}))
    sim.step()
    sim.set_phase("job-worker-0", "Failed", exit_code=137)
    sim.step(1)
    assert sim.condition("Failed").reason == "JobFailed"


def test_on_failure_recreates_a_lost_pod():
    sim = Sim(tfjob({"Worker": replica(container(), restartPolicy="OnFailure")}))
    sim.step()
    sim.set_phase("job-worker-0", "Failed", reason="Evicted")
    plan = sim.step(1)
    assert sim.status.restart_count == 1 and not sim.true("Failed")
    assert [d.name for d in plan.delete] == ["job-worker-0"]


def test_evicted_pods_are_counted_as_failed_and_evicted():
    sim = Sim(tfjob({"Worker": replica(container(), restartPolicy="Never", replicas=2)}))
    sim.step()
    sim.set_phase("job-worker-0", "Failed", reason="Evicted")
    sim.step(1)
    counts = sim.status.replica_statuses["Worker"]
    assert (counts.failed, counts.evicted) == (1, 1)
    assert sim.condition("Failed").reason == "JobFailed"


def test_exit_code_policy_retries_evictions_without_an_exit_code():
    sim = Sim(tf())
    sim.step()
    pod = sim.pods["job-worker-0"]
    pod["status"] = {"phase": "Failed", "reason": "Evicted"}
    sim.step(1)
    assert sim.status.restart_count == 1


def test_exit_code_of_the_default_container_decides():
    sim = Sim(tfjob({"Worker": replica(container("sidecar"), container())}))
    sim.step()
    pod = sim.pods["job-worker-0"]
    pod["status"] = {
        "phase": "Failed",
        "containerStatuses": [
            {"name": "sidecar", "state": {"terminated": {"exitCode": 137}}},
            {"name": "tensorflow", "state": {"terminated": {"exitCode": 2}}},
        ],
    }
    sim.step(1)
    assert sim.condition("Failed").reason == "JobFailed"


# --- deadline and TTL -------------------------------------------------------------------------------


def test_active_deadline_fails_the_job_and_stops_its_pods():
    sim = Sim(tf(activeDeadlineSeconds=60, cleanPodPolicy="None"))
    plan = sim.step()
    assert plan.requeue_after == pytest.approx(60)
    sim.run_all()
    plan = sim.step(30)
    assert plan.requeue_after == pytest.approx(30)
    sim.step(30)
    failed = sim.condition("Failed")
    assert failed.reason == "DeadlineExceeded"
    assert sim.pods == {}  # over its limits, a job's running pods stop even with cleanPodPolicy None


def test_deadline_is_measured_from_the_status_start_time():
    sim = Sim(tf(activeDeadlineSeconds=60))
    sim.step()
    restarted = Sim(sim.job, now=T0 + datetime.timedelta(seconds=61))  # a new controller
    restarted.status = read_status(sim.job)
    restarted.pods, restarted.services = sim.pods, sim.services
    restarted.step()
    assert restarted.condition("Failed").reason == "DeadlineExceeded"


def test_ttl_deletes_the_job_after_it_finished():
    sim = Sim(tf(ttlSecondsAfterFinished=30))
    sim.step()
    sim.set_phase("job-worker-0", "Succeeded", exit_code=0)
    plan = sim.step(1)
    assert sim.true("Succeeded")
    assert plan.requeue_after == pytest.approx(30) and not plan.delete_job
    plan = sim.step(10)
    assert plan.requeue_after == pytest.approx(20) and not plan.delete_job
    plan = sim.step(20)
    assert plan.delete_job


def test_clean_pod_policy_all_and_none():
    for policy, left in (("All", []), ("None", ["job-ps-0", "job-worker-0", "job-worker-1"])):
        sim = Sim(tf(cleanPodPolicy=policy))
        sim.step()
        sim.run_all()
        sim.set_phase("job-worker-0", "Succeeded", exit_code=0)
        sim.step(1)
        assert sorted(sim.pods) == left, policy


def test_finished_jobs_are_left_alone():
    sim = Sim(tf())
    sim.step()
    sim.set_phase("job-worker-0", "Succeeded", exit_code=0)
    sim.step(1)
    plan = sim.step(1)
    assert plan.create == [] and plan.delete == [] and not plan.status_changed


# --- environment -----------------------------------------------------------------------------------


def env_of(pod: dict, container_name: str | None = None) -> dict[str, str]:
    containers = pod["spec"]["containers"]
    chosen = next(c for c in containers if container_name is None or c["name"] == container_name)
    return {e["name"]: e["value"] for e in chosen.get("env", [])}


def test_tf_config():
    sim = Sim(
        tfjob(
            {"PS": replica(container()), "Worker": replica(container(), replicas=2), "Evaluator": replica(container())}
        )
    )
    sim.step()
    config = json.loads(env_of(sim.pods["job-worker-1"])["TF_CONFIG"])
    assert config == {
        "cluster": {
            "ps": ["job-ps-0.default.svc:2222"],
            "worker": ["job-worker-0.default.svc:2222", "job-worker-1.default.svc:2222"],
        },
        "task": {"type": "worker", "index": 1},
        "environment": "cloud",
    }
    assert json.loads(env_of(sim.pods["job-evaluator-0"])["TF_CONFIG"])["task"] == {"type": "evaluator", "index": 0}


def test_no_tf_config_for_a_single_replica_job():
    sim = Sim(tfjob({"Worker": replica(container())}))
    sim.step()
    assert "TF_CONFIG" not in env_of(sim.pods["job-worker-0"])


def test_pytorch_env():
    sim = Sim(
        kubedl_job(
            "PyTorchJob", {"Master": replica(container("pytorch")), "Worker": replica(container("pytorch"), replicas=2)}
        )
    )
    sim.step()
    assert env_of(sim.pods["job-master-0"]) == {
        "MASTER_PORT": "23456",
        "MASTER_ADDR": "localhost",
        "WORLD_SIZE": "3",
        "RANK": "0",
        "PYTHONUNBUFFERED": "0",
    }
    worker = env_of(sim.pods["job-worker-1"])
    assert (worker["MASTER_ADDR"], worker["RANK"], worker["WORLD_SIZE"]) == ("job-master-0", "2", "3")


def test_xgboost_ranks_are_unique():
    sim = Sim(
        kubedl_job(
            "XGBoostJob",
            {"Master": replica(container("xgboostjob")), "Worker": replica(container("xgboostjob"), replicas=2)},
        )
    )
    sim.step()
    ranks = {name: env_of(pod)["RANK"] for name, pod in sim.pods.items()}
    assert ranks == {"job-master-0": "0", "job-worker-0": "1", "job-worker-1": "2"}
    assert env_of(sim.pods["job-worker-0"])["MASTER_PORT"] == "9999"


def test_mxjob_dist_env_on_the_mxnet_container():
    replicas = (mx_replica("SCHEDULER", PsRootPort=9000), mx_replica("SERVER", 2), mx_replica("WORKER", 3))
    sim = Sim(mxjob("dist", *replicas, name="job"))
    sim.step()
    assert env_of(sim.pods["job-server-1"], "mxnet") == {
        "DMLC_PS_ROOT_URI": "job-scheduler-0",
        "DMLC_PS_ROOT_PORT": "9000",
        "DMLC_NUM_SERVER": "2",
        "DMLC_NUM_WORKER": "3",
        "DMLC_ROLE": "server",
    }
    assert sim.services["job-scheduler-0"]["spec"]["ports"][0]["port"] == 9000


def test_mxjob_local_has_no_dmlc_env():
    sim = Sim(mxjob("local", mx_replica("WORKER"), name="job"))
    sim.step()
    assert env_of(sim.pods["job-worker-0"]) == {}


def test_mpi_hostfile_and_launcher():
    job = kubedl_job(
        "MPIJob",
        {"Launcher": replica(container("launcher")), "Worker": replica(container("w"), replicas=2)},
        slotsPerWorker=4,
    )
    sim = Sim(job)
    plan = sim.step()
    (config_map,) = [o for o in plan.create if o["kind"] == "ConfigMap"]
    assert config_map["metadata"]["name"] == "job-config"
    assert config_map["data"]["hostfile"] == "job-worker-0 slots=4\njob-worker-1 slots=4\n"
    launcher = sim.pods["job-launcher-0"]
    assert env_of(launcher) == {
        "OMPI_MCA_plm_rsh_agent": "/etc/mpi/kubexec.sh",
        "OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile",
    }
    assert launcher["spec"]["containers"][0]["volumeMounts"] == [{"name": "mpi-job-config", "mountPath": "/etc/mpi"}]
    assert env_of(sim.pods["job-worker-0"]) == {}
    plan = sim.step(1)
    assert not any(o["kind"] == "ConfigMap" for o in plan.create)


def test_intel_mpi_hostfile_format():
    job = kubedl_job(
        "MPIJob", {"Launcher": replica(container("l")), "Worker": replica(container("w"))}, mpiDistribution="IntelMPI"
    )
    plan = Sim(job).step()
    (config_map,) = [o for o in plan.create if o["kind"] == "ConfigMap"]
    assert config_map["data"]["hostfile"] == "job-worker-0:1\n"


def test_user_env_is_kept_and_framework_values_win():
    job = tfjob(
        {
            "Worker": replica(
                container(env=[{"name": "A", "value": "1"}, {"name": "TF_CONFIG", "value": "x"}]), replicas=2
            )
        }
    )
    sim = Sim(job)
    sim.step()
    env = sim.pods["job-worker-0"]["spec"]["containers"][0]["env"]
    assert env[0] == {"name": "A", "value": "1"}
    assert [e["name"] for e in env].count("TF_CONFIG") == 1 and env[-1]["value"] != "x"


# --- gang ----------------------------------------------------------------------------------------


def test_pod_group_when_asked_and_supported():
    job = tf(schedulingPolicy={"minAvailable": 2, "queue": "research"})
    sim = Sim(job)
    sim.gang = True
    plan = sim.step()
    (group,) = [o for o in plan.create if o["kind"] == "PodGroup"]
    assert group["spec"] == {"minMember": 2, "queue": "research"}
    assert group["metadata"]["name"] == "job"
    pod = sim.pods["job-worker-0"]
    assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "job"
    assert pod["spec"]["schedulerName"] == "volcano"
    sim.set_phase("job-worker-0", "Succeeded", exit_code=0)
    plan = sim.step(1)
    assert ("PodGroup", "job") in {(d.kind, d.name) for d in plan.delete}


def test_pod_group_defaults_to_all_replicas_and_needs_the_crd():
    job = tf(schedulingPolicy={"queue": "q"})
    sim = Sim(job)
    plan = sim.step()
    assert not any(o["kind"] == "PodGroup" for o in plan.create)  # no PodGroup API in this cluster
    sim = Sim(tf(schedulingPolicy={"queue": "q"}))
    sim.gang = True
    (group,) = [o for o in sim.step().create if o["kind"] == "PodGroup"]
    assert group["spec"]["minMember"] == 3


def test_xdl_success_rate():
    job = kubedl_job("XDLJob", {"Worker": replica(container("xdl"), replicas=10)}, minFinishWorkRate=50)
    sim = Sim(job)
    sim.step()
    for index in range(4):
        sim.set_phase(f"job-worker-{index}", "Succeeded", exit_code=0)
    sim.step(1)
    assert not sim.true("Succeeded")
    sim.set_phase("job-worker-4", "Succeeded", exit_code=0)
    sim.step(1)
    assert sim.true("Succeeded")
