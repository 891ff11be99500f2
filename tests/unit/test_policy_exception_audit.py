"""The controller's audit with TrainingJobPolicyExceptions: waived jobs are no violations, each
exception's status lists the jobs it covers, an expired one says so once by an Event."""

from __future__ import annotations

import datetime

from jobgate.controller.exception_audit import Coverage, ExceptionStatusWriter, next_expiry
from jobgate.controller.policy_audit import audit
from jobgate.kube.informer import Informer
from tests.unit.test_policy_audit import CAP_POLICY, FakeKube, audited, jobs, stored_tfjob
from tests.unit.test_policy_exceptions import exception

NOW = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)
GPU = [{"kind": "ClusterTrainingJobPolicy", "name": "gpu-cap"}]


def test_a_waived_job_is_not_a_violation_and_the_exception_lists_it():
    coverage = Coverage([exception(namespace="a", policies=GPU, match={"names": ["big"]})], NOW)
    stored = jobs(stored_tfjob("big", "a", 4), stored_tfjob("other", "a", 4))
    found = audit(stored, [CAP_POLICY], {"a": {}}, coverage)
    assert [v["name"] for v in found.by_policy["ClusterTrainingJobPolicy gpu-cap"].values()] == ["other"]
    status = coverage.status(coverage.objects[0])
    assert status["totalJobs"] == 1 and status["expired"] is False
    assert status["jobs"] == [
        {
            "name": "big",
            "kind": "TFJob",
            "apiVersion": "training.kubedl.io/v1alpha1",
            "rules": ["ClusterTrainingJobPolicy gpu-cap: policy/max-gpus-per-job"],
        }
    ]
    assert status["conditions"][0]["type"] == "Active" and status["conditions"][0]["status"] == "True"


def test_an_expired_exception_covers_nothing_and_says_so():
    coverage = Coverage([exception(namespace="a", policies=GPU, expires="2026-11-30T00:00:00Z")], NOW)
    found = audit(jobs(stored_tfjob("big", "a", 4)), [CAP_POLICY], {"a": {}}, coverage)
    assert list(found.by_policy["ClusterTrainingJobPolicy gpu-cap"]) == ["uid-big/big"]
    status = coverage.status(coverage.objects[0])
    assert status["expired"] is True and status["totalJobs"] == 0
    assert status["conditions"][0]["reason"] == "Expired"


def test_the_status_is_written_when_changed_and_an_expiry_is_one_event():
    kube = FakeKube([])
    writer = ExceptionStatusWriter(kube)  # type: ignore[arg-type]
    expired = exception(namespace="a", policies=GPU, expires="2026-11-30T00:00:00Z")
    writer.write(Coverage([expired], NOW))
    assert kube.replaced[0][0].endswith("/namespaces/a/trainingjobpolicyexceptions/big-run/status")
    stored = kube.replaced[0][1]
    writer.write(Coverage([stored], NOW))  # the informer now holds the written status
    assert len(kube.replaced) == 1
    events = [body for path, body in kube.created if path.endswith("/events")]
    assert [e["reason"] for e in events] == ["ExceptionExpired"]
    assert events[0]["involvedObject"]["kind"] == "TrainingJobPolicyException"


def test_the_audit_wakes_at_the_next_expiry():
    soon = exception(namespace="a", expires="2026-12-01T00:01:00Z")
    past = exception(name="old", namespace="a", expires="2026-11-01T00:00:00Z")
    assert next_expiry([soon, past], NOW) == 60.0
    assert next_expiry([past], NOW) is None


def test_the_audit_loop_reads_exceptions_from_its_informer():
    kube = FakeKube([stored_tfjob("big", "a", 4)])
    runner = audited(kube, [CAP_POLICY])
    informer = Informer(kube, "/apis/policy.jobgate.io/v1alpha1/trainingjobpolicyexceptions", name="x")  # type: ignore[arg-type]
    informer._cache = {"/a/big-run": exception(namespace="a", policies=GPU, expires="2999-01-01T00:00:00Z")}
    runner.informers["exceptions"] = informer
    runner.exception_status = ExceptionStatusWriter(kube)  # type: ignore[arg-type]
    found = runner.run_once()
    assert found.by_policy.get("ClusterTrainingJobPolicy gpu-cap", {}) == {}
    written = {path: body for path, body in kube.replaced}
    exception_status = next(b for p, b in written.items() if "trainingjobpolicyexceptions" in p)["status"]
    assert exception_status["totalJobs"] == 1
