"""Warnings carry rule ids as errors do: every warning the families' rules give has a record
(jobgate.engine.warningids), a platform policy's warning carries its finding's id, and the offline
report, the webhook and ``jobgate explain`` show them. A policy's "not applicable" notice reads as
one, not as ``Forbidden``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from jobgate.cli import main
from jobgate.engine.warningids import BY_ID, DUPLICATE_KEY, UNKNOWN_FIELD, WARNING_RULES
from jobgate.review import kind_of, review_job
from jobgate.webhook.admission import Webhook, answer_review, parse_review
from testkit.builders import admission_review, container, kubedl_job, replica, tfjob, vc_task, vcjob
from tests.unit.test_policy_enforcement import context, policy

REPO = Path(__file__).resolve().parents[2]


def _example(name: str) -> dict:
    return yaml.safe_load((REPO / "examples" / "valid" / name).read_text())


def _kubeflow_pytorchjob(**spec: object) -> dict:
    job = _example("kubeflow-pytorchjob-elastic.yaml")
    job["spec"].update(spec)
    return job


def _kubeflow_tfjob_with_extra_type() -> dict:
    template = {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "tf", "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"Worker": {"template": template}, "Helper": {"template": template}}},
    }


# (the id, a job whose review gives that warning)
WARNED = [
    (UNKNOWN_FIELD, tfjob({"Worker": replica(container())}, tfReplicaSpecz={})),
    (
        "pod-template/restart-policy-overridden",
        tfjob({"Worker": replica(container(), pod_spec={"restartPolicy": "Always"})}),
    ),
    (
        "mpijob/inline-run-policy-ignored",
        kubedl_job(
            "MPIJob",
            {"Launcher": replica(container("mpi")), "Worker": replica(container("mpi"))},
            runPolicy={},
            backoffLimit=2,
        ),
    ),
    (
        "volcano/exit-code-policy-without-action",
        vcjob(vc_task(), policies=[{"exitCode": 3, "action": "AnyOtherAction"}]),
    ),
    ("volcano/queue-name", vcjob(vc_task(), queue="Team_A")),
    ("kubeflow/unknown-replica-type", _kubeflow_tfjob_with_extra_type()),
    (
        "kubeflow/nproc-per-node-deprecated",
        _kubeflow_pytorchjob(elasticPolicy={"minReplicas": 1, "maxReplicas": 3, "nProcPerNode": 2}),
    ),
]


@pytest.mark.parametrize(("rule", "job"), WARNED, ids=[rule for rule, _ in WARNED])
def test_each_warning_of_the_rules_has_its_id(rule: str, job: dict) -> None:
    verdict = review_job(kind_of(job), job)
    assert verdict.warnings, "the job gives no warning"
    assert [verdict.warning_rule(w) for w in verdict.warnings] == [rule] * len(verdict.warnings), verdict.warnings


def test_every_warning_record_is_held_to_a_warning() -> None:
    assert {rule for rule, _ in WARNED} == {rule.id for rule in WARNING_RULES}
    assert len(BY_ID) == len(WARNING_RULES) + 1  # and the reader's duplicate key


# --- platform policies ---------------------------------------------------------------------------

TTL_REQUIRED = policy("ttl-required", {"enforcementAction": "Warn", "require": {"ttlSecondsAfterFinished": True}})
GPU_WARN = policy("gpu-warn", {"enforcementAction": "Warn", "limits": {"maxGPUsPerJob": 1}})


def _dijob() -> dict:
    job = _example("dijob-gobigger.yaml")
    job["metadata"]["namespace"] = "team-a"
    return job


def test_not_applicable_reads_as_such_with_its_id() -> None:
    job = _dijob()
    verdict = review_job(kind_of(job), job, context=context(TTL_REQUIRED))
    (warning,) = verdict.warnings
    assert warning == (
        "spec: require.ttlSecondsAfterFinished is not applicable: DIJob (diengine.opendilab.org) has no "
        "ttlSecondsAfterFinished (ClusterTrainingJobPolicy ttl-required)"
    )
    assert "Forbidden" not in warning
    assert verdict.warning_rule(warning) == "policy/not-applicable"


def test_a_policy_warning_carries_its_findings_id() -> None:
    job = tfjob({"Worker": replica(container(resources={"limits": {"nvidia.com/gpu": 2}}))})
    job["metadata"]["namespace"] = "team-a"
    verdict = review_job(kind_of(job), job, context=context(GPU_WARN))
    assert verdict.allowed
    (warning,) = verdict.warnings
    assert verdict.warning_rule(warning) == "policy/max-gpus-per-job"


def test_the_webhook_sends_warnings_in_the_peers_words_without_ids() -> None:
    # Admission warnings are compared as they are by the peers' users and vectors, as denials are.
    obj = tfjob({"Worker": replica(container(), pod_spec={"restartPolicy": "Always"})})
    answer = answer_review(parse_review(json.dumps(admission_review(obj)).encode()), Webhook.VALIDATE)
    assert answer["response"]["warnings"] == [
        "restartPolicy ExitCode overrides the pod template's restartPolicy Always (tfReplicaSpecs[Worker])"
    ]


# --- offline --------------------------------------------------------------------------------------


def _write(tmp_path: Path, name: str, *documents: dict) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return path


def test_validate_prints_each_warnings_id_and_json_has_rule_and_field(tmp_path, capsys) -> None:
    job = _dijob()
    policies = _write(tmp_path, "policies.yaml", TTL_REQUIRED)
    jobs = _write(tmp_path, "job.yaml", job)
    assert main(["validate", "--policies", str(policies), "--namespace", "team-a", str(jobs)]) == 0
    out = capsys.readouterr().out
    assert "warning: spec: require.ttlSecondsAfterFinished is not applicable: " in out
    assert out.count("[policy/not-applicable]") == 1
    assert main(["validate", "-o", "json", "--policies", str(policies), str(jobs)]) == 0
    (warning,) = json.loads(capsys.readouterr().out)["documents"][0]["warnings"]
    assert warning["rule"] == "policy/not-applicable" and warning["field"] == "spec"


def test_validate_labels_family_warnings_and_the_readers_notes(tmp_path, capsys) -> None:
    job = tfjob({"Worker": replica(container(), pod_spec={"restartPolicy": "Always"})})
    path = _write(tmp_path, "job.yaml", job)
    path.write_text(path.read_text() + "metadata:\n  name: again\n")  # a key given twice
    assert main(["validate", "-o", "json", "--validate", "warn", str(path)]) == 0
    rules = [w["rule"] for w in json.loads(capsys.readouterr().out)["documents"][0]["warnings"]]
    assert sorted(rules) == sorted([DUPLICATE_KEY.id, "pod-template/restart-policy-overridden"])


def test_explain_knows_warning_ids(capsys) -> None:
    assert main(["explain", "kubeflow/unknown-replica-type"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("kubeflow/unknown-replica-type\n") and "the job is admitted" in out


def test_review_names_a_policy_errors_rule_on_stderr(tmp_path, capsys) -> None:
    job = tfjob({"Worker": replica(container(resources={"limits": {"nvidia.com/gpu": 2}}))})
    job["metadata"]["namespace"] = "team-a"
    cap = policy("gpu-cap", {"limits": {"maxGPUsPerJob": 1}})
    policies = _write(tmp_path, "policies.yaml", cap)
    review = tmp_path / "review.json"
    review.write_text(json.dumps(admission_review(job)))
    assert main(["review", "validate", "--policies", str(policies), str(review)]) == 0
    assert "rule policy/max-gpus-per-job" in capsys.readouterr().err
