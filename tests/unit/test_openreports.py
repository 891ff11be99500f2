"""OpenReports from the policies' audit (controller/openreports.py): one Report per violating job, its
results, stable ids, written only on change, deleted when the job no longer violates, paced."""

from __future__ import annotations

import datetime
from typing import Any

from jobgate.controller.openreports import (
    MAX_RESULTS,
    Pacer,
    ReportWriter,
    desired_report,
    same_report,
)
from jobgate.controller.policy_audit import audit
from tests.unit.test_policy_audit import CAP_POLICY, jobs, policy, stored_tfjob

NOW = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)
LATER = NOW + datetime.timedelta(hours=1)
WARN_LABEL = policy("labels", {"enforcementAction": "Warn", "require": {"labels": [{"key": "team"}]}})


def findings_of(*stored: dict, policies=(CAP_POLICY, WARN_LABEL)) -> dict:
    return audit(jobs(*stored), list(policies), {"a": {}}).jobs


def test_a_report_per_violating_job_with_a_result_per_finding():
    violating = findings_of(stored_tfjob("big", "a", 4), stored_tfjob("small", "a", 1))
    job, found = violating["uid-big"]
    report = desired_report(job, found, NOW)
    assert report["metadata"]["name"] == "jobgate-uid-big" and report["metadata"]["namespace"] == "a"
    assert report["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "jobgate"}
    assert report["metadata"]["ownerReferences"] == [
        {"apiVersion": "training.kubedl.io/v1alpha1", "kind": "TFJob", "name": "big", "uid": "uid-big"}
    ]
    assert report["scope"]["uid"] == "uid-big" and report["source"] == "jobgate"
    by_rule = {r["rule"]: r for r in report["results"]}
    gpus, label = by_rule["policy/max-gpus-per-job"], by_rule["policy/required-label"]
    assert gpus["policy"] == "ClusterTrainingJobPolicy/gpu-cap"
    assert (gpus["result"], gpus["scored"], gpus["severity"], gpus["category"]) == ("fail", True, "medium", "Resources")
    assert (label["result"], label["scored"], label["severity"]) == ("warn", False, "low")
    assert "exceeds 4 GPUs per job" in gpus["message"]
    assert gpus["properties"]["enforcementAction"] == "Deny" and gpus["properties"]["field"] == "spec"
    assert report["summary"] == {"pass": 0, "fail": 1, "warn": 1, "error": 0, "skip": 0}
    # The small job breaks only the Warn policy: a report with one warn result.
    small = desired_report(*violating["uid-small"], NOW)
    assert [r["result"] for r in small["results"]] == ["warn"]


def test_result_ids_are_stable_and_timestamps_kept():
    job, found = findings_of(stored_tfjob("big", "a", 4))["uid-big"]
    first = desired_report(job, found, NOW)
    again = desired_report(job, found, LATER, first)
    assert [r["properties"]["resultID"] for r in first["results"]] == [
        r["properties"]["resultID"] for r in again["results"]
    ]
    assert again["results"][0]["timestamp"] == {"seconds": int(NOW.timestamp()), "nanos": 0}
    assert same_report(first, again)
    other = desired_report(*findings_of(stored_tfjob("big", "a", 8))["uid-big"], LATER, first)
    assert not same_report(first, other)  # the message says 16 GPUs now


def test_results_are_bounded():
    job, found = findings_of(stored_tfjob("big", "a", 4))["uid-big"]
    many = found * (MAX_RESULTS + 50)

    class Moved:
        def __init__(self, finding: Any, i: int) -> None:
            self.policy, self.rule, self.action, self.path = finding.policy, finding.rule, finding.action, f"f{i}"
            self.finding = finding

        def text(self) -> str:
            return "x" * 5000

    report = desired_report(job, [Moved(f, i) for i, f in enumerate(many)], NOW)
    assert len(report["results"]) == MAX_RESULTS
    assert all(len(r["message"]) == 1024 for r in report["results"])


class ReportKube:
    """An apiserver holding Reports (the writes the writer makes, applied)."""

    def __init__(self) -> None:
        self.reports: dict[tuple[str, str], dict] = {}
        self.calls: list[tuple[str, str]] = []

    def serves(self, group: str, version: str, *plurals: str) -> bool:
        return True

    def get(self, path: str, **query: Any) -> dict:
        assert query["labelSelector"] == "app.kubernetes.io/managed-by=jobgate"
        return {"items": list(self.reports.values()), "metadata": {}}

    def create(self, path: str, body: dict) -> dict:
        self.calls.append(("POST", path))
        self.reports[(body["metadata"]["namespace"], body["metadata"]["name"])] = body
        return body

    def replace(self, path: str, body: dict) -> dict:
        self.calls.append(("PUT", path))
        self.reports[(body["metadata"]["namespace"], body["metadata"]["name"])] = body
        return body

    def request(self, method: str, path: str, **_: Any) -> dict:
        self.calls.append((method, path))
        namespace, name = path.split("/namespaces/")[1].split("/reports/")
        del self.reports[(namespace, name)]
        return {}


def test_reports_are_created_updated_only_on_change_and_deleted():
    kube = ReportKube()
    writer = ReportWriter(kube, writes_per_second=0)  # type: ignore[arg-type]
    writer.sync(findings_of(stored_tfjob("big", "a", 4)), NOW)
    assert kube.calls == [("POST", "/apis/openreports.io/v1alpha1/namespaces/a/reports")]
    writer.sync(findings_of(stored_tfjob("big", "a", 4)), LATER)
    assert len(kube.calls) == 1  # unchanged: no write
    writer.sync(findings_of(stored_tfjob("big", "a", 8)), LATER)  # tightened: the message changed
    assert kube.calls[-1] == ("PUT", "/apis/openreports.io/v1alpha1/namespaces/a/reports/jobgate-uid-big")
    writer.sync(findings_of(stored_tfjob("big", "a", 4), policies=()), LATER)  # relaxed: nothing violated
    assert kube.calls[-1] == ("DELETE", "/apis/openreports.io/v1alpha1/namespaces/a/reports/jobgate-uid-big")
    assert kube.reports == {}


def test_writes_are_paced():
    clock = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock[0] += seconds

    pacer = Pacer(10, clock=lambda: clock[0], sleep=sleep)
    for _ in range(5):
        pacer.wait()
    assert len(slept) == 4 and all(abs(s - 0.1) < 1e-9 for s in slept)


def test_the_audit_writes_reports_only_where_served_and_not_turned_off():
    from jobgate.controller.policy_audit import PolicyAudit
    from tests.unit.test_policy_audit import FakeKube, audited

    kube = FakeKube([stored_tfjob("big", "a", 4)])
    runner = audited(kube, [CAP_POLICY])
    runner.run_once()  # FakeKube serves no openreports.io
    assert not [p for p, _ in kube.created if "openreports" in p]
    off = PolicyAudit(kube, [], openreports=False)  # type: ignore[arg-type]
    assert off.reports is None


def test_ten_thousand_violating_jobs_write_once_then_nothing():
    one = findings_of(stored_tfjob("big", "a", 4))["uid-big"]
    violating = {}
    for i in range(10_000):
        job = {**one[0], "metadata": {**one[0]["metadata"], "name": f"job-{i}", "uid": f"uid-{i}"}}
        violating[f"uid-{i}"] = (job, one[1])
    kube = ReportKube()
    writer = ReportWriter(kube, writes_per_second=0)  # type: ignore[arg-type]
    writer.sync(violating, NOW)
    assert writer.writes == 10_000 and len(kube.reports) == 10_000
    writer.sync(violating, LATER)
    assert writer.writes == 10_000  # an audit that finds the same writes nothing
