"""Work queue, expectations and status reading: the runtime's pieces that need no cluster."""

from __future__ import annotations

import threading
import time

from jobgate.controller.adapters import common_status_document, read_status
from jobgate.controller.expectations import Expectations
from jobgate.controller.workqueue import WorkQueue
from jobgate.engine.registry import GroupVersionKind


def test_a_key_is_queued_once_and_held_by_one_worker():
    queue = WorkQueue()
    queue.add("a")
    queue.add("a")
    queue.add("b")
    assert len(queue) == 2
    key = queue.get(timeout=1)
    assert key == "a"
    queue.add("a")  # while a worker holds it: queued again only when it is done
    assert queue.get(timeout=1) == "b"
    assert queue.get(timeout=0.05) is None
    queue.done("a")
    assert queue.get(timeout=1) == "a"


def test_delayed_keys_arrive_after_their_delay():
    queue = WorkQueue()
    started = time.monotonic()
    queue.add_after("late", 0.2)
    queue.add_after("early", 0.05)
    assert queue.get(timeout=2) == "early"
    assert queue.get(timeout=2) == "late"
    assert time.monotonic() - started >= 0.2


def test_rate_limited_retries_back_off_and_forget_resets():
    queue = WorkQueue(base_delay=0.01)
    delays = []
    for _ in range(4):
        started = time.monotonic()
        queue.add_rate_limited("k")
        assert queue.get(timeout=2) == "k"
        queue.done("k")
        delays.append(time.monotonic() - started)
    assert delays[3] > delays[0]
    assert queue.failures("k") == 4
    queue.forget("k")
    assert queue.failures("k") == 0


def test_shutdown_wakes_waiting_workers():
    queue = WorkQueue()
    results = []
    worker = threading.Thread(target=lambda: results.append(queue.get()))
    worker.start()
    time.sleep(0.05)
    queue.shutdown()
    worker.join(timeout=2)
    assert results == [None]


def test_expectations_hold_until_observed_or_expired():
    expectations = Expectations(ttl=0.1)
    assert expectations.satisfied("job")
    expectations.expect_creations("job", ["Pod/a", "Pod/b"])
    expectations.creation_observed("job", "Pod/a")
    assert not expectations.satisfied("job")
    expectations.lower_creation("job", "Pod/b")
    assert expectations.satisfied("job")
    expectations.expect_deletions("job", ["uid-1"])
    assert not expectations.satisfied("job")
    time.sleep(0.15)
    assert expectations.satisfied("job")  # an event lost forever must not stall the job


def test_status_round_trip():
    status = {
        "conditions": [
            {
                "type": "Created",
                "status": "True",
                "reason": "JobCreated",
                "message": "m",
                "lastUpdateTime": "2026-01-01T00:00:00Z",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
        "replicaStatuses": {"Worker": {"active": 3, "succeeded": 1, "failed": 0, "evicted": 0}},
        "startTime": "2026-01-01T00:00:00Z",
        "restartCount": 2,
        "completedIndices": {"Worker": [0, 3]},
        "restartingPods": ["u-1"],
        "observedGeneration": 4,
        "replicaSummary": "Worker 1/4",
    }
    model = read_status({"status": status})
    document = common_status_document(model)
    for key, value in status.items():
        assert document[key] == value


def test_unreadable_status_is_treated_as_empty():
    model = read_status({"status": {"conditions": "nonsense", "restartCount": "x"}})
    assert model.conditions == [] and model.restart_count == 0


def test_per_job_bookkeeping_is_released_when_the_job_and_its_children_go(tmp_path):
    from jobgate.controller.adapters import JOB_UID_LABEL
    from jobgate.controller.runtime import Controller
    from jobgate.kube.client import Kube

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {token: t}}]\n"
    )
    controller = Controller(Kube(str(kubeconfig)), namespace="ns")  # nothing connects until started
    job = {
        "apiVersion": "training.kubedl.io/v1alpha1",
        "kind": "TFJob",
        "metadata": {"name": "j", "namespace": "ns", "uid": "u1"},
    }
    pod = {
        "metadata": {
            "name": "j-worker-0",
            "namespace": "ns",
            "uid": "p1",
            "labels": {JOB_UID_LABEL: "u1"},
            "ownerReferences": [
                {
                    "apiVersion": "training.kubedl.io/v1alpha1",
                    "kind": "TFJob",
                    "name": "j",
                    "uid": "u1",
                    "controller": True,
                }
            ],
        }
    }
    job_events = controller.job_informers[GroupVersionKind("training.kubedl.io", "v1alpha1", "TFJob")].handlers[0]
    pod_events = controller.pods.handlers[0]
    pod_events("ADDED", pod, None)
    controller.created_extras["u1"] = {("PodGroup", "j")}
    assert [p["metadata"]["name"] for p in controller.owned("Pod", "u1")] == ["j-worker-0"]
    assert controller._extras_of("u1") == {("PodGroup", "j")}
    pod_events("DELETED", pod, None)
    job_events("DELETED", job, None)
    assert controller.children["Pod"] == {}
    assert controller.created_extras == {}
    controller.stop()


def _offline_controller(tmp_path):
    from jobgate.controller.runtime import Controller
    from jobgate.kube.client import Kube

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {token: t}}]\n"
    )
    return Controller(Kube(str(kubeconfig)), namespace="ns")  # nothing connects until started


def test_a_batch_v1_job_is_never_taken_for_a_volcano_job(tmp_path):
    from jobgate.controller.adapters import JOB_UID_LABEL, adapter_for

    assert adapter_for({"apiVersion": "batch/v1", "kind": "Job"}) is None
    assert adapter_for({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job"}) is not None
    controller = _offline_controller(tmp_path)
    queued: list[str] = []
    controller.queue.add = queued.append  # type: ignore[method-assign]

    def pod(owner_api_version: str) -> dict:
        reference = {"apiVersion": owner_api_version, "kind": "Job", "name": "j", "uid": "u1", "controller": True}
        labels = {JOB_UID_LABEL: "u1"}
        metadata = {"name": "j-x", "namespace": "ns", "uid": "p", "labels": labels, "ownerReferences": [reference]}
        return {"metadata": metadata}

    controller.pods.handlers[0]("ADDED", pod("batch/v1"), None)
    assert queued == []  # a Kubernetes Job's pod: not ours, whatever its kind name
    controller.pods.handlers[0]("ADDED", pod("batch.volcano.sh/v1alpha1"), None)
    assert queued == ["Job.v1alpha1.batch.volcano.sh/ns/j"]
    controller.stop()


def test_job_keys_carry_group_version_and_kind():
    from jobgate.controller.workqueue import job_key, split_key

    volcano = GroupVersionKind("batch.volcano.sh", "v1alpha1", "Job")
    key = job_key(volcano, "ns", "a.b")
    assert split_key(key) == (volcano, "ns", "a.b")
    assert job_key(GroupVersionKind("batch", "v1", "Job"), "ns", "a.b") != key


def test_volcano_commands_are_taken_once_and_only_while_leading(tmp_path):
    controller = _offline_controller(tmp_path)
    deleted: list[str] = []
    controller.kube.delete = lambda path, uid=None, propagation=None: deleted.append(path)  # type: ignore[method-assign]
    queued: list[str] = []
    controller.queue.add = queued.append  # type: ignore[method-assign]

    def command(api_version: str, action: str = "ResumeJob") -> dict:
        target = {"apiVersion": api_version, "kind": "Job", "name": "j", "uid": "u1"}
        return {"metadata": {"name": "c", "namespace": "ns", "uid": "c1"}, "action": action, "target": target}

    controller._command_handler("ADDED", command("batch.volcano.sh/v1alpha1"), None)
    assert deleted == [] and controller.pending_commands == {}  # a standby replica leaves it to the leader
    controller._acting.set()
    controller._command_handler("ADDED", command("batch/v1"), None)
    controller._command_handler("ADDED", command("batch.volcano.sh/v1alpha1"), None)
    controller._pool.shutdown(wait=True)
    assert deleted == ["/apis/bus.volcano.sh/v1alpha1/namespaces/ns/commands/c"]
    assert controller.pending_commands == {"Job.v1alpha1.batch.volcano.sh/ns/j": "ResumeJob"}
    assert queued == ["Job.v1alpha1.batch.volcano.sh/ns/j"]
    controller.stop()


def test_a_command_naming_its_job_under_the_go_field_name_is_not_taken(tmp_path):
    """Volcano's wire name is ``target`` (Go ``TargetObject``); the apiserver prunes anything else."""
    controller = _offline_controller(tmp_path)
    controller._acting.set()
    submitted: list[tuple] = []
    controller._pool.submit = lambda *args: submitted.append(args)  # type: ignore[method-assign,assignment]
    target = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "j", "uid": "u1"}
    metadata = {"name": "c", "namespace": "ns", "uid": "c1"}
    controller._command_handler("ADDED", {"metadata": metadata, "action": "AbortJob", "targetObject": target}, None)
    assert submitted == []
    controller._command_handler("ADDED", {"metadata": metadata, "action": "AbortJob", "target": target}, None)
    assert [args[1] for args in submitted] == ["Job.v1alpha1.batch.volcano.sh/ns/j"]
    controller.stop()


def test_a_command_api_served_after_start_up_is_watched_without_a_restart(tmp_path, monkeypatch):
    from jobgate.kube.informer import Informer

    started: list[str] = []
    monkeypatch.setattr(Informer, "start", lambda self: started.append(self.name))
    monkeypatch.setenv("JOBGATE_COMMAND_CRD_RECHECK_SECONDS", "0.01")
    controller = _offline_controller(tmp_path)
    answers = iter([False, False, ConnectionError("apiserver down"), True])

    def serves(resource) -> bool:
        if resource.group != "bus.volcano.sh":
            return False
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    controller._serves = serves  # type: ignore[method-assign]
    controller.start_informers()
    assert controller.commands is None and "commands" not in started
    (recheck,) = [t for t in controller._threads if t.name == "commands-crd"]
    recheck.join(timeout=10)
    assert not recheck.is_alive()
    assert controller.commands is not None and started.count("commands") == 1
    assert controller.commands.handlers == [controller._command_handler]
    assert controller.commands in controller._informers()  # stopped with the others
    controller.stop()


def test_no_command_watch_is_started_after_stop_nor_without_volcano(tmp_path, monkeypatch):
    from jobgate.controller.runtime import Controller
    from jobgate.kube.informer import Informer

    started: list[str] = []
    monkeypatch.setattr(Informer, "start", lambda self: started.append(self.name))
    monkeypatch.setenv("JOBGATE_COMMAND_CRD_RECHECK_SECONDS", "0.01")
    controller = _offline_controller(tmp_path)
    controller._serves = lambda resource: False  # type: ignore[method-assign]
    controller.start_informers()
    controller.stop()
    controller._serves = lambda resource: True  # type: ignore[method-assign]
    (recheck,) = [t for t in controller._threads if t.name == "commands-crd"]
    recheck.join(timeout=10)
    assert controller.commands is None and "commands" not in started

    without_volcano = Controller(controller.kube, namespace="ns", families=frozenset({"kubedl"}))
    without_volcano._serves = lambda resource: False  # type: ignore[method-assign]
    without_volcano.start_informers()
    # KubeDL jobs use Volcano's PodGroups for gang scheduling, never its Commands.
    assert [t.name for t in without_volcano._threads] == ["podgroups-crd"]
    without_volcano.stop()


def test_a_pod_group_api_served_after_start_up_turns_gang_scheduling_on_without_a_restart(tmp_path, monkeypatch):
    from jobgate.controller.workqueue import job_key
    from jobgate.engine.registry import GroupVersionKind
    from jobgate.kube.informer import Informer

    started: list[str] = []

    def start(self) -> None:
        started.append(self.name)
        self.synced.set()

    monkeypatch.setattr(Informer, "start", start)
    monkeypatch.setenv("JOBGATE_COMMAND_CRD_RECHECK_SECONDS", "0.01")
    controller = _offline_controller(tmp_path)
    tfjobs = GroupVersionKind("training.kubedl.io", "v1alpha1", "TFJob")
    job = {"apiVersion": "training.kubedl.io/v1alpha1", "kind": "TFJob", "metadata": {"namespace": "ns", "name": "t"}}
    controller.job_informers[tfjobs]._cache["ns/t"] = job
    answers = iter([False, ConnectionError("apiserver down"), True])

    def serves(resource) -> bool:
        if resource.group != "scheduling.volcano.sh":
            return True  # Commands are served: only the PodGroup API comes late
        answer = next(answers, True)
        if isinstance(answer, Exception):
            raise answer
        return answer

    controller._serves = serves  # type: ignore[method-assign]
    controller.start_informers()
    assert controller.gang_supported is False and controller.pod_groups is None
    (recheck,) = [t for t in controller._threads if t.name == "podgroups-crd"]
    recheck.join(timeout=10)
    assert not recheck.is_alive()
    assert controller.gang_supported is True and started.count("podgroups") == 1
    assert controller.pod_groups in controller._informers()  # stopped with the others
    assert controller.queue.get() == job_key(tfjobs, "ns", "t")  # every job looked at again
    controller.stop()


def test_command_crd_recheck_interval_from_the_environment(monkeypatch):
    from jobgate.controller.volcano_apis import DEFAULT_COMMAND_CRD_RECHECK_SECONDS, command_crd_recheck_seconds

    default = DEFAULT_COMMAND_CRD_RECHECK_SECONDS
    for raw, expected in [("", default), ("2.5", 2.5), ("-1", default), ("nan", default), ("inf", default),
                          ("soon", default), ("0", default)]:  # fmt: skip
        monkeypatch.setenv("JOBGATE_COMMAND_CRD_RECHECK_SECONDS", raw)
        assert command_crd_recheck_seconds() == expected, raw


def test_repeated_apiserver_refusals_are_logged_without_a_traceback(tmp_path, caplog):
    import logging

    from urllib3.exceptions import MaxRetryError, NewConnectionError

    from jobgate.kube.client import ApiError

    controller = _offline_controller(tmp_path)
    # The apiserver refusing (403), then out of reach (what urllib3 raises for a refused connection).
    unreachable = MaxRetryError(None, "/apis/x", NewConnectionError(None, "Connection refused"))  # type: ignore[arg-type]
    failures = [ApiError(403, "Forbidden", None)] * 6 + [unreachable] * 6 + [RuntimeError("a bug")] * 6
    calls = iter(failures)
    retried_after_all = threading.Event()

    def reconcile_key(key: str) -> None:
        failure = next(calls, None)
        if failure is None:  # every failure above was logged and retried: the 19th call succeeds
            retried_after_all.set()
            return
        raise failure

    controller.reconcile_key = reconcile_key  # type: ignore[method-assign]
    # The real backoff, counting failures (what the log level reads), only short: uncapped, the 17th
    # retry would wait 0.0001 s * 2**16, seconds.
    controller.queue._base_delay = 0.0001
    controller.queue._max_delay = 0.001
    worker = threading.Thread(target=controller._work)
    with caplog.at_level(logging.WARNING, logger="jobgate.controller"):
        worker.start()
        controller.queue.add("TFJob.v1alpha1.training.kubedl.io/ns/j")
        finished = retried_after_all.wait(60)  # a safety net: the worker sets it after 18 failures
        controller.stop()
        worker.join(5)
    assert finished, "the worker stopped retrying"
    assert len(caplog.records) == len(failures)
    refusals, out_of_reach, bugs = caplog.records[:6], caplog.records[6:12], caplog.records[12:18]
    assert [bool(r.exc_info) for r in refusals] == [False] * 6  # ERROR from the 5th on, never a traceback
    assert refusals[-1].levelno == logging.ERROR
    assert [bool(r.exc_info) for r in out_of_reach] == [False] * 6
    assert [bool(r.exc_info) for r in bugs] == [True] * 6  # an unexpected exception keeps its traceback
