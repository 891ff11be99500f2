"""The controller's audit of stored jobs against the platform policies (controller/policy_audit.py)."""

from __future__ import annotations

from typing import Any

from jobgate.controller.policy_audit import CAP, VIOLATIONS, PolicyAudit, audit, policy_status
from jobgate.review import kind_of


def policy(name: str, spec: dict, namespace: str | None = None) -> dict:
    kind = "TrainingJobPolicy" if namespace else "ClusterTrainingJobPolicy"
    metadata: dict[str, Any] = {"name": name, "generation": 3}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": "policy.jobgate.io/v1alpha1", "kind": kind, "metadata": metadata, "spec": spec}


def stored_tfjob(name: str, namespace: str, gpus: int) -> dict:
    container = {"name": "tensorflow", "image": "tf:2", "resources": {"limits": {"nvidia.com/gpu": gpus}}}
    return {
        "apiVersion": "training.kubedl.io/v1alpha1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2, "template": {"spec": {"containers": [container]}}}}},
    }


CAP_POLICY = policy("gpu-cap", {"limits": {"maxGPUsPerJob": 4}})


def jobs(*objects: dict) -> list[tuple[Any, dict]]:
    return [(kind_of(obj), obj) for obj in objects]


def test_the_audit_finds_the_stored_jobs_a_policy_now_refuses():
    found = audit(jobs(stored_tfjob("big", "a", 4), stored_tfjob("small", "a", 1)), [CAP_POLICY], {"a": {}})
    violating = found.by_policy["ClusterTrainingJobPolicy gpu-cap"]
    assert [v["name"] for v in violating.values()] == ["big"]
    assert "exceeds 4 GPUs per job" in next(iter(violating.values()))["message"]


def test_a_policy_that_selects_other_namespaces_finds_nothing():
    selective = policy(
        "research", {"namespaceSelector": {"matchLabels": {"tier": "research"}}, "limits": {"maxGPUsPerJob": 4}}
    )
    assert audit(jobs(stored_tfjob("big", "a", 4)), [selective], {"a": {}}).by_policy == {}
    found = audit(jobs(stored_tfjob("big", "a", 4)), [selective], {"a": {"tier": "research"}})
    assert list(found.by_policy) == ["ClusterTrainingJobPolicy research"]


def test_the_status_caps_the_list_and_keeps_the_exact_total():
    many = jobs(*(stored_tfjob(f"job-{i:02}", "a", 4) for i in range(CAP + 5)))
    found = audit(many, [CAP_POLICY], {"a": {}})
    status = policy_status(CAP_POLICY, found.by_policy["ClusterTrainingJobPolicy gpu-cap"], 1, None)
    assert status["totalViolations"] == CAP + 5
    assert len(status["violations"]) == CAP
    assert status["observedGeneration"] == 3
    assert status["conditions"][0]["type"] == "Ready"


def test_a_conflict_is_a_condition():
    status = policy_status(CAP_POLICY, {}, 0, "no queue satisfies both")
    assert [c["type"] for c in status["conditions"]] == ["Ready", "Conflict"]


class FakeKube:
    """Records the writes the audit makes; serves the jobs it lists."""

    def __init__(self, items: list[dict]) -> None:
        self.items = items
        self.replaced: list[tuple[str, dict]] = []
        self.created: list[tuple[str, dict]] = []

    def get(self, path: str, **query: Any) -> dict:
        return {
            "items": [i for i in self.items if f"/{i['metadata']['namespace']}/" in path or "namespaces" not in path]
        }

    def replace(self, path: str, body: dict) -> dict:
        self.replaced.append((path, body))
        return body

    def create(self, path: str, body: dict) -> dict:
        self.created.append((path, body))
        return body

    def serves(self, group: str, version: str, *plurals: str) -> bool:
        return False  # no OpenReports CRDs (tests/unit/test_openreports.py has them)


def audited(kube: FakeKube, policies: list[dict]) -> PolicyAudit:
    kinds = [kind_of(stored_tfjob("x", "a", 1))]
    runner = PolicyAudit(kube, kinds)  # type: ignore[arg-type]
    runner.informers["cluster"]._cache = {f"/{p['metadata']['name']}": p for p in policies}
    runner.informers["namespaces"]._cache = {"/a": {"metadata": {"name": "a"}}}
    return runner


def test_one_event_per_violating_job_and_policy_not_per_audit():
    kube = FakeKube([stored_tfjob("big", "a", 4)])
    runner = audited(kube, [CAP_POLICY])
    runner.run_once()
    runner.run_once()
    events = [body for path, body in kube.created if path.endswith("/events")]
    assert len(events) == 1
    assert events[0]["reason"] == "PolicyViolation"
    assert events[0]["involvedObject"]["name"] == "big"
    assert VIOLATIONS.labels("ClusterTrainingJobPolicy gpu-cap")._value.get() == 1
    # The status is written once: the second audit finds it unchanged... once the informer has it.
    path, body = kube.replaced[0]
    assert path.endswith("/clustertrainingjobpolicies/gpu-cap/status")
    assert body["status"]["totalViolations"] == 1
    runner.informers["cluster"]._cache["/gpu-cap"] = body
    writes = len(kube.replaced)
    runner.run_once()
    assert len(kube.replaced) == writes


def test_a_violation_that_goes_away_and_comes_back_is_told_again():
    kube = FakeKube([stored_tfjob("big", "a", 4)])
    runner = audited(kube, [CAP_POLICY])
    runner.run_once()
    kube.items = []
    runner.run_once()
    kube.items = [stored_tfjob("big", "a", 4)]
    runner.run_once()
    assert len([p for p, _ in kube.created if p.endswith("/events")]) == 2
