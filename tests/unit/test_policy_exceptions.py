"""TrainingJobPolicyException: what it waives, for which jobs, until when (issue 46), through the engine."""

from __future__ import annotations

import datetime
import json

import pytest
from pydantic import ValidationError

from jobgate.engine.context import ReviewContext
from jobgate.policy.exception_models import exception_crd, parse_exception
from jobgate.policy.exceptions import WAIVABLE_RULES, ExceptionSnapshot, PolicyException, parse_time
from jobgate.policy.models import parse_policy
from jobgate.policy.snapshot import PolicySnapshot
from jobgate.review import kind_of, review_job
from tests.unit.test_policy_enforcement import policy, tfjob

NOW = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)
LATER = "2026-12-05T00:00:00Z"
EARLIER = "2026-11-30T00:00:00Z"

GPU_CAP = policy("gpu-caps", {"limits": {"maxGPUsPerJob": 4}})
LOOSE_CAP = policy("loose", {"limits": {"maxGPUsPerJob": 8}})
LABEL = policy("labels", {"require": {"labels": [{"key": "team"}]}})


def exception(
    name: str = "big-run",
    *,
    namespace: str = "team-a",
    policies: list | None = None,
    match: dict | None = None,
    expires: str = LATER,
    reason: str = "one week of 64 GPUs for the Q4 model",
) -> dict:
    spec: dict = {
        "policies": policies if policies is not None else [{"kind": "ClusterTrainingJobPolicy", "name": "gpu-caps"}],
        "expiresAt": expires,
        "reason": reason,
    }
    if match is not None:
        spec["match"] = match
    return {
        "apiVersion": "policy.jobgate.io/v1alpha1",
        "kind": "TrainingJobPolicyException",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def context(policies: list[dict], exceptions: list[dict], namespace: str = "team-a", **kw) -> ReviewContext:
    snapshot = PolicySnapshot([parse_policy(p) for p in policies])
    return ReviewContext(
        namespace=namespace,
        namespace_labels=snapshot.namespace_labels(namespace),
        policies=snapshot.policies(),
        exceptions=ExceptionSnapshot.of_objects(exceptions, NOW),
        **kw,
    )


def judge(job: dict, policies: list[dict], exceptions: list[dict], **kw):
    return review_job(kind_of(job), job, context=context(policies, exceptions, **kw))


def big(**labels: str) -> dict:
    job = tfjob(gpus=2, workers=3, labels=labels)  # 6 GPUs
    job["metadata"]["name"] = "big-run"
    return job


def test_an_exception_admits_the_job_with_a_warning_naming_it():
    verdict = judge(big(), [GPU_CAP], [exception()])
    assert verdict.allowed
    assert any(w.startswith("TrainingJobPolicyException team-a/big-run waives") for w in verdict.warnings)
    assert "policy/max-gpus-per-job" in verdict.waived[0] and LATER in verdict.waived[0]
    assert verdict.warning_rule(verdict.waived[0]) == "policy/exception"


def test_without_the_exception_the_job_is_denied():
    assert not judge(big(), [GPU_CAP], []).allowed


def test_an_expired_exception_is_ignored():
    assert not judge(big(), [GPU_CAP], [exception(expires=EARLIER)]).allowed
    # expiresAt equal to now is expired too ("not after now").
    assert not judge(big(), [GPU_CAP], [exception(expires="2026-12-01T00:00:00Z")]).allowed


def test_an_exception_never_widens_another_namespace():
    assert not judge(big(), [GPU_CAP], [exception(namespace="team-b")]).allowed


def test_match_criteria_combine_as_and():
    kinds = [{"group": "training.kubedl.io", "kind": "TFJob"}]
    both = {"names": ["big-run"], "kinds": kinds, "objectSelector": {"matchLabels": {"run": "big"}}}
    assert judge(big(run="big"), [GPU_CAP], [exception(match=both)]).allowed
    assert not judge(big(run="small"), [GPU_CAP], [exception(match=both)]).allowed
    assert not judge(big(run="big"), [GPU_CAP], [exception(match={**both, "names": ["other"]})]).allowed
    other_kind = [{"group": "kubeflow.org", "kind": "TFJob"}]  # same kind name, other group
    assert not judge(big(run="big"), [GPU_CAP], [exception(match={**both, "kinds": other_kind})]).allowed


def test_named_rules_only_waive_those_rules():
    only_label = [{"kind": "ClusterTrainingJobPolicy", "name": "gpu-caps", "rules": ["policy/required-label"]}]
    assert not judge(big(), [GPU_CAP], [exception(policies=only_label)]).allowed
    both = policy("both", {"limits": {"maxGPUsPerJob": 4}, "require": {"labels": [{"key": "team"}]}})
    gpus_only = [{"kind": "ClusterTrainingJobPolicy", "name": "both", "rules": ["policy/max-gpus-per-job"]}]
    verdict = judge(big(), [both], [exception(policies=gpus_only)])
    assert not verdict.allowed
    assert [str(e.field) for e in verdict.errors] == ["metadata.labels[team]"]


def test_a_policy_that_denies_exceptions_is_not_waived():
    strict = policy("gpu-caps", {"exceptions": "Deny", "limits": {"maxGPUsPerJob": 4}})
    assert not judge(big(), [strict], [exception()]).allowed


def test_waiving_one_policy_keeps_another_policys_looser_limit():
    # Deny-4 dominates Deny-8 in the resolution: waiving the 4 must bring back the 8.
    huge = tfjob(gpus=2, workers=5)  # 10 GPUs
    huge["metadata"]["name"] = "big-run"
    verdict = judge(huge, [GPU_CAP, LOOSE_CAP], [exception()])
    assert not verdict.allowed
    assert ["ClusterTrainingJobPolicy loose" in str(e) for e in verdict.errors] == [True]
    assert judge(big(), [GPU_CAP, LOOSE_CAP], [exception()]).allowed  # 6 GPUs: within 8


def test_other_policies_still_count_with_every_gpu_list():
    # The waived policy's resource list keeps counting for the others.
    fpga = policy("fpga", {"limits": {"gpuResources": [{"name": "example.com/fpga"}], "maxGPUsPerJob": 100}})
    cap = policy("cap", {"limits": {"maxGPUsPerJob": 3}})
    job = tfjob(gpus=1, workers=2)
    job["metadata"]["name"] = "big-run"
    container = job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["resources"]["limits"]["example.com/fpga"] = 1  # 2 × (1 GPU + 1 FPGA) = 4 > 3
    waive_fpga = [{"kind": "ClusterTrainingJobPolicy", "name": "fpga", "rules": ["policy/max-gpus-per-job"]}]
    assert not judge(job, [fpga, cap], [exception(policies=waive_fpga)]).allowed
    waive_cap = [{"kind": "ClusterTrainingJobPolicy", "name": "cap"}]
    assert judge(job, [fpga, cap], [exception(policies=waive_cap)]).allowed


def test_conflicts_are_never_waived():
    a = policy("a", {"require": {"queues": ["qa"]}})
    b = policy("b", {"require": {"queues": ["qb"]}})
    every = [{"kind": "ClusterTrainingJobPolicy", "name": "a"}, {"kind": "ClusterTrainingJobPolicy", "name": "b"}]
    verdict = judge(big(), [a, b], [exception(policies=every)])
    assert not verdict.allowed
    assert all("conflict" in str(e) for e in verdict.errors)


def test_waiving_never_touches_defaults():
    with_default = policy("gpu-caps", {"defaults": {"ttlSecondsAfterFinished": 60}, "limits": {"maxGPUsPerJob": 4}})
    verdict = judge(big(), [with_default], [exception()])
    assert verdict.allowed
    assert verdict.defaulted["spec"]["ttlSecondsAfterFinished"] == 60


def test_a_namespaced_policy_is_named_in_the_exceptions_namespace():
    local = policy("caps", {"limits": {"maxGPUsPerJob": 4}}, namespace="team-a")
    ref = [{"kind": "TrainingJobPolicy", "name": "caps"}]
    assert judge(big(), [local], [exception(policies=ref)]).allowed


def test_warn_findings_are_waived_too():
    warn = policy("gpu-caps", {"enforcementAction": "Warn", "limits": {"maxGPUsPerJob": 4}})
    verdict = judge(big(), [warn], [exception()])
    assert verdict.allowed
    assert not any("exceeds" in w for w in verdict.warnings)
    assert verdict.waived


def test_a_job_without_findings_gets_no_exception_warning():
    assert judge(tfjob(gpus=1, workers=1), [GPU_CAP], [exception(match=None)]).warnings == []


# --- the model and the CRD ------------------------------------------------------------------------


@pytest.mark.parametrize("missing", ["expiresAt", "reason"])
def test_the_model_refuses_an_exception_without_expiry_or_reason(missing):
    obj = exception()
    del obj["spec"][missing]
    with pytest.raises(ValidationError) as err:
        parse_exception(obj)
    assert missing in str(err.value)


def test_the_model_refuses_an_unknown_rule_id():
    obj = exception(policies=[{"kind": "ClusterTrainingJobPolicy", "name": "x", "rules": ["policy/max-gpus"]}])
    with pytest.raises(ValidationError):
        parse_exception(obj)


def test_the_model_refuses_a_time_without_zone():
    with pytest.raises(ValidationError):
        parse_exception(exception(expires="2026-12-05T00:00:00"))


def test_the_crd_requires_expiry_and_reason_and_lists_the_rule_ids():
    schema = exception_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    spec = schema["properties"]["spec"]
    assert set(spec["required"]) == {"policies", "expiresAt", "reason"}
    assert spec["properties"]["expiresAt"]["format"] == "date-time"
    rules = spec["properties"]["policies"]["items"]["properties"]["rules"]["items"]
    assert set(rules["enum"]) == WAIVABLE_RULES
    assert "policy/conflict" not in rules["enum"] and "policy/not-applicable" not in rules["enum"]
    assert exception_crd()["spec"]["scope"] == "Namespaced"


def test_the_policy_spec_says_whether_it_may_be_waived():
    assert parse_policy(policy("p", {}))["spec"]["exceptions"] == "Allow"
    assert parse_policy(policy("p", {"exceptions": "Deny"}))["spec"]["exceptions"] == "Deny"
    with pytest.raises(ValidationError):
        parse_policy(policy("p", {"exceptions": "Maybe"}))


def test_parse_time_wants_a_zone():
    assert parse_time("2026-12-05T00:00:00Z") == datetime.datetime(2026, 12, 5, tzinfo=datetime.UTC)
    assert parse_time("2026-12-05T01:00:00+01:00") == datetime.datetime(2026, 12, 5, tzinfo=datetime.UTC)
    assert parse_time("2026-12-05") is None
    assert parse_time("2026-12-05T00:00:00") is None


def test_a_malformed_stored_exception_waives_nothing():
    obj = exception()
    obj["spec"]["policies"][0]["rules"] = ["policy/nope"]
    assert PolicyException.from_object(obj) is None


# --- offline: --policies, --cluster-objects, --now --------------------------------------------------


def _write(path, *documents) -> str:
    import yaml

    path.write_text(yaml.safe_dump_all(documents))
    return str(path)


def test_offline_honours_exceptions_at_the_given_time(tmp_path, capsys):
    from jobgate.cli import main

    policies = _write(tmp_path / "policies.yaml", GPU_CAP, exception())
    job = _write(tmp_path / "job.yaml", big())
    assert main(["validate", "--policies", policies, "--now", "2026-12-01T00:00:00Z", job]) == 0
    out = capsys.readouterr().out
    assert "TrainingJobPolicyException team-a/big-run waives" in out and "[policy/exception]" in out
    assert main(["validate", "--policies", policies, "--now", "2026-12-05T00:00:00Z", job]) == 1
    assert main(["validate", "--cluster-objects", policies, "--now", "2026-12-01T00:00:00Z", job]) == 0
    assert main(["default", "--policies", policies, "--now", "2026-12-01T00:00:00Z", job]) == 0
    # A policy file and an exception file apart: both are read.
    apart = _write(tmp_path / "exceptions.yaml", exception())
    only_policy = _write(tmp_path / "policy.yaml", GPU_CAP)
    args = ["validate", "--policies", only_policy, "--cluster-objects", apart, "--now", "2026-12-01T00:00:00Z", job]
    assert main(args) == 0


@pytest.mark.parametrize(
    ("broken", "expected"),
    [
        ({"expiresAt": None}, "spec.expiresAt: Required value"),
        ({"reason": None}, "spec.reason: Required value"),
        ({"policies": [{"kind": "ClusterTrainingJobPolicy", "name": "x", "rules": ["nope"]}]}, "rules[0]"),
    ],
)
def test_offline_a_malformed_exception_is_a_usage_error_naming_it(tmp_path, capsys, broken, expected):
    from jobgate.cli import main

    obj = exception()
    for key, value in broken.items():
        if value is None:
            del obj["spec"][key]
        else:
            obj["spec"][key] = value
    policies = _write(tmp_path / "policies.yaml", GPU_CAP, obj)
    assert main(["validate", "--policies", policies, _write(tmp_path / "job.yaml", big())]) == 2
    err = capsys.readouterr().err
    assert "TrainingJobPolicyException team-a/big-run is invalid" in err
    assert expected in err


def test_offline_an_exception_without_namespace_is_a_usage_error(tmp_path, capsys):
    from jobgate.cli import main

    obj = exception()
    del obj["metadata"]["namespace"]
    policies = _write(tmp_path / "policies.yaml", GPU_CAP, obj)
    assert main(["validate", "--policies", policies, _write(tmp_path / "job.yaml", big())]) == 2
    assert "metadata.namespace: Required value" in capsys.readouterr().err


def test_offline_now_must_be_rfc3339(tmp_path):
    from jobgate.cli import main

    policies = _write(tmp_path / "policies.yaml", GPU_CAP)
    with pytest.raises(SystemExit) as exited:
        main(["validate", "--policies", policies, "--now", "tomorrow", _write(tmp_path / "job.yaml", big())])
    assert exited.value.code == 2


def test_the_webhook_answer_carries_the_warning_and_the_audit_annotation():
    from jobgate.engine.views import ClusterViews
    from jobgate.webhook.admission import EXCEPTION_ANNOTATION, Webhook, answer_review, parse_review
    from testkit.builders import admission_review

    views = ClusterViews(policies=PolicySnapshot([parse_policy(GPU_CAP)]))
    views.exceptions = ExceptionSnapshot.of_objects([exception()], NOW)
    review = parse_review(json.dumps(admission_review(big())).encode())
    response = answer_review(review, Webhook.VALIDATE, views)["response"]
    assert response["allowed"] is True
    assert any("TrainingJobPolicyException team-a/big-run" in w for w in response["warnings"])
    assert "big-run" in response["auditAnnotations"][EXCEPTION_ANNOTATION]


def test_offline_review_answers_as_the_webhook_with_the_exception(tmp_path, capsys):
    from jobgate.cli import main
    from testkit.builders import admission_review

    policies = _write(tmp_path / "policies.yaml", GPU_CAP, exception())
    review = tmp_path / "review.json"
    review.write_text(json.dumps(admission_review(big())))
    flags = ["--policies", policies, "--now", "2026-12-01T00:00:00Z"]
    assert main(["review", "validate", *flags, str(review)]) == 0
    answer = json.loads(capsys.readouterr().out)["response"]
    assert answer["allowed"] is True
    assert "TrainingJobPolicyException team-a/big-run" in answer["auditAnnotations"]["policy-exceptions"]
    assert main(["review", "validate", "--policies", policies, "--now", "2026-12-09T00:00:00Z", str(review)]) == 0
    assert json.loads(capsys.readouterr().out)["response"]["allowed"] is False
