"""Each declared policy constraint (jobgate.policy.constraints) is compiled by both readers: the
webhook's check gives its finding with the declared rule, error type and text, and the generated
ValidatingAdmissionPolicy has its validation, whose message writes the same text. Dropping a
declaration's form from either compiler, or changing a text on one side only, fails here."""

from __future__ import annotations

import re
from string import Formatter
from typing import Any

import pytest

from jobgate.engine.views import DeviceSnapshot
from jobgate.generate.policy_vap import kind_documents
from jobgate.policy.check import apply_defaults, policy_findings
from jobgate.policy.constraints import CONSTRAINTS, DECLARED, GPU_CLAIMS, RUNTIMES, Constraint, Outcome, of_form
from jobgate.policy.kinds import kind_map
from jobgate.policy.models import FORBIDDEN_ITEMS
from jobgate.policy.resolve import effective_policy
from tests.unit.test_policy_fixtures import cluster, kubedl, pod


def _with(job: dict[str, Any], field: str, value: Any) -> dict[str, Any]:
    locator = kind_map(job).locator(field)
    assert callable(locator), field
    return apply_defaults(job, [(list(locator(job)), value)])


def _labelled(labels: dict[str, str]) -> dict[str, Any]:
    job = kubedl()
    job["metadata"]["labels"] = labels
    return job


def _claiming(template: str) -> dict[str, Any]:
    return kubedl(template=pod(None, resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": template}]))


# The DRA objects the claim triggers read: a template asking for every GPU of a node.
DEVICES = DeviceSnapshot(
    [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "all-gpus", "namespace": "ns"},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [
                            {"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All"}}
                        ]
                    }
                }
            },
        }
    ]
)

# (rule, outcome) → (the policy's spec, a TFJob that gives that outcome)
TRIGGERS: dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]] = {
    ("policy/max-replicas-per-role", "over"): ({"limits": {"maxReplicasPerRole": 1}}, kubedl(replicas=2)),
    ("policy/max-replicas-per-job", "over"): ({"limits": {"maxReplicasPerJob": 1}}, kubedl(replicas=2)),
    ("policy/max-gpus-per-pod", "over"): ({"limits": {"maxGPUsPerPod": 1}}, kubedl(template=pod(2))),
    ("policy/max-gpus-per-job", "over"): ({"limits": {"maxGPUsPerJob": 1}}, kubedl(replicas=2)),
    ("policy/require-ttl", "missing"): ({"require": {"ttlSecondsAfterFinished": True}}, kubedl()),
    ("policy/max-ttl", "over"): (
        {"limits": {"maxTTLSecondsAfterFinished": 10}},
        _with(kubedl(), "ttlSecondsAfterFinished", 100),
    ),
    ("policy/require-deadline", "missing"): ({"require": {"activeDeadlineSeconds": True}}, kubedl()),
    ("policy/max-active-deadline", "over"): (
        {"limits": {"maxActiveDeadlineSeconds": 10}},
        _with(kubedl(), "activeDeadlineSeconds", 100),
    ),
    ("policy/required-label", "missing"): ({"require": {"labels": [{"key": "team"}]}}, kubedl()),
    ("policy/required-label", "outside"): (
        {"require": {"labels": [{"key": "team", "values": ["a"]}]}},
        _labelled({"team": "b"}),
    ),
    ("policy/allowed-queues", "missing"): ({"require": {"queues": ["q"]}}, kubedl()),
    ("policy/allowed-queues", "outside"): ({"require": {"queues": ["q"]}}, _with(kubedl(), "queue", "other")),
    ("policy/allowed-priority-classes", "missing"): ({"require": {"priorityClassNames": ["low"]}}, kubedl()),
    ("policy/allowed-priority-classes", "outside"): (
        {"require": {"priorityClassNames": ["low"]}},
        _with(kubedl(), "priorityClassName", "high"),
    ),
    ("policy/allowed-schedulers", "outside"): ({"require": {"schedulerNames": ["volcano"]}}, kubedl()),
    ("policy/image-registries", "outside"): (
        {"require": {"imageRegistries": ["ghcr.io/"]}},
        kubedl(template=pod(1, image="evil.example.org/x:1")),
    ),
    ("policy/gpu-claim-unbounded", "unbounded"): ({"limits": {"maxGPUsPerJob": 8}}, _claiming("all-gpus")),
    ("policy/gpu-claim-unknown", "unknown"): ({"limits": {"maxGPUsPerJob": 8}}, _claiming("not-there")),
    ("policy/forbid-hostnetwork", "forbidden"): (
        {"require": {"forbid": ["hostNetwork"]}},
        kubedl(template=pod(1, hostNetwork=True)),
    ),
    ("policy/forbid-hostpid", "forbidden"): (
        {"require": {"forbid": ["hostPID"]}},
        kubedl(template=pod(1, hostPID=True)),
    ),
    ("policy/forbid-hostipc", "forbidden"): (
        {"require": {"forbid": ["hostIPC"]}},
        kubedl(template=pod(1, hostIPC=True)),
    ),
    ("policy/forbid-hostpath", "forbidden"): (
        {"require": {"forbid": ["hostPath"]}},
        kubedl(template=pod(1, volumes=[{"name": "h", "hostPath": {"path": "/"}}])),
    ),
    ("policy/forbid-privileged", "forbidden"): (
        {"require": {"forbid": ["privileged"]}},
        kubedl(
            template={"spec": {"containers": [{"name": "m", "image": "x", "securityContext": {"privileged": True}}]}}
        ),
    ),
    ("policy/runtime-not-allowed", "outside"): (
        {"require": {"runtimes": {"clusterTrainingRuntimes": ["torch"]}}},
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "t", "namespace": "ns"},
            "spec": {"runtimeRef": {"name": "deepspeed"}},
        },
    ),
}
# Where the kind leaves the scheduler unset, the pods run with default-scheduler: never "missing".
UNREACHABLE = {("policy/allowed-schedulers", "missing")}


def _pattern(outcome: Outcome) -> re.Pattern[str]:
    """The detail's text with each hole as any text."""
    parts = []
    for literal, hole, _, _ in Formatter().parse(outcome.text):
        parts.append(re.escape(literal))
        if hole is not None:
            parts.append(".+")
    return re.compile("".join(parts) + r" \(ClusterTrainingJobPolicy p\)$")


def test_every_outcome_of_every_declaration_has_a_trigger() -> None:
    declared = {(c.rule, name) for c in CONSTRAINTS for name in c.outcomes}
    assert set(TRIGGERS) | UNREACHABLE == declared


def test_forbid_declarations_cover_the_items_the_api_offers() -> None:
    assert {c.subject for c in CONSTRAINTS if c.param == "require.forbid"} == set(FORBIDDEN_ITEMS)
    assert of_form("no-such-form") == ()


@pytest.mark.parametrize(("rule", "outcome"), sorted(TRIGGERS))
def test_the_webhook_gives_the_declared_finding(rule: str, outcome: str) -> None:
    spec, job = TRIGGERS[rule, outcome]
    decl, declared = DECLARED[rule], DECLARED[rule].outcomes[outcome]
    eff = effective_policy([cluster("p", spec)], "ns", {}, job)
    found = [f for f in policy_findings(job, None, kind_map(job).family, eff, devices=DEVICES) if f.rule == decl.rule]
    assert found, f"no {rule} finding"
    assert found[0].type == declared.type
    assert _pattern(declared).match(found[0].message), found[0].message


def _validation(decl: Constraint) -> dict[str, Any]:
    documents = kind_documents(kind_map(kubedl()), "tfjobs", "v1alpha1", {})
    (found,) = [v for v in documents[0]["spec"]["validations"] if v["message"].startswith(f"{decl.rule}: ")]
    return found


# Read from other objects (claim templates, claims): the apiserver's policies cannot count them.
# A TrainJob's runtime: TrainJobs get no generated policy (their pods are their runtime's).
WEBHOOK_ONLY = {key for key in TRIGGERS if DECLARED[key[0]].form in (GPU_CLAIMS, RUNTIMES)}


def test_the_apiserver_policy_has_no_validation_for_what_it_cannot_read() -> None:
    documents = kind_documents(kind_map(kubedl()), "tfjobs", "v1alpha1", {})
    messages = [v["message"] for v in documents[0]["spec"]["validations"]]
    assert WEBHOOK_ONLY and not [m for m in messages if m.startswith(("policy/gpu-claim-",))]


@pytest.mark.parametrize(("rule", "outcome"), sorted(set(TRIGGERS) - WEBHOOK_ONLY))
def test_the_apiserver_policy_writes_the_declared_text(rule: str, outcome: str) -> None:
    decl = DECLARED[rule]
    declared = decl.outcomes[outcome]
    expression = _validation(decl)["messageExpression"]
    assert f": {declared.type}: " in expression
    for literal, _, _, _ in Formatter().parse(declared.text):
        assert literal in expression, (literal, expression[:300])


def test_a_changed_text_changes_both_readers(monkeypatch: pytest.MonkeyPatch) -> None:
    decl = DECLARED["policy/max-replicas-per-job"]
    monkeypatch.setitem(decl.outcomes, "over", Outcome("Invalid value", "{measure} replicas, above {limit}"))
    spec, job = TRIGGERS["policy/max-replicas-per-job", "over"]
    eff = effective_policy([cluster("p", spec)], "ns", {}, job)
    (finding,) = policy_findings(job, None, kind_map(job).family, eff)
    assert finding.message == "2 replicas, above 1 (ClusterTrainingJobPolicy p)"
    assert "' replicas, above ' + " in _validation(decl)["messageExpression"]
