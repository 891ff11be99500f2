"""Platform policy through the engine and its transports: ``jobgate validate|default|review
--policies --namespaces``, the webhook's answers, and the order of defaults."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import yaml

from jobgate.cli import main
from jobgate.engine.context import ReviewContext
from jobgate.engine.jsonpatch import apply_patch
from jobgate.engine.views import ClusterViews
from jobgate.policy.snapshot import PolicySnapshot
from jobgate.review import defaulting_patch, kind_of, review_job
from jobgate.webhook.admission import AUDIT_ANNOTATION, Webhook, answer_review, parse_review
from testkit.builders import admission_review, vc_task, vcjob

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_POLICIES = REPO / "examples" / "policies"


def policy(name: str, spec: dict, *, namespace: str | None = None) -> dict:
    metadata = {"name": name} if namespace is None else {"name": name, "namespace": namespace}
    kind = "ClusterTrainingJobPolicy" if namespace is None else "TrainingJobPolicy"
    return {"apiVersion": "policy.jobgate.io/v1alpha1", "kind": kind, "metadata": metadata, "spec": spec}


def tfjob(namespace: str = "team-a", gpus: int = 1, workers: int = 2, labels: dict | None = None) -> dict:
    container = {
        "name": "tensorflow",
        "image": "registry.example.com/ml/tf:2",
        "resources": {"limits": {"nvidia.com/gpu": gpus}},
    }
    return {
        "apiVersion": "training.kubedl.io/v1alpha1",
        "kind": "TFJob",
        "metadata": {"name": "train", "namespace": namespace, "labels": labels or {}},
        "spec": {
            "tfReplicaSpecs": {"Worker": {"replicas": workers, "template": {"spec": {"containers": [container]}}}}
        },
    }


GPU_CAP = policy("gpu-cap", {"limits": {"maxGPUsPerJob": 4, "maxGPUsPerPod": 2}})
TTL_AND_LABEL_DEFAULT = policy("ttl", {"defaults": {"ttlSecondsAfterFinished": 60, "labels": {"team": "a"}}})
QUEUE_DEFAULT = policy("team-a", {"defaults": {"queue": "team-a", "labels": {"team": "a"}}}, namespace="team-a")


def context(*policies: dict, operation: str = "CREATE", namespace: str = "team-a") -> ReviewContext:
    snapshot = PolicySnapshot(policies)
    return ReviewContext(
        operation=operation,
        namespace=namespace,
        namespace_labels=snapshot.namespace_labels(namespace),
        policies=snapshot.policies(),
    )


def test_a_job_over_a_limit_is_denied_with_the_policy_named():
    job = tfjob(gpus=2, workers=3)
    verdict = review_job(kind_of(job), job, context=context(GPU_CAP))
    assert [str(e) for e in verdict.errors] == [
        'spec: Invalid value: "6": the job requests 6 GPUs at its largest (Worker 3 × 2), exceeds 4 GPUs per job '
        "(ClusterTrainingJobPolicy gpu-cap)"
    ]
    assert not verdict.allowed


def test_without_policies_in_the_context_the_same_job_is_admitted():
    job = tfjob(gpus=2, workers=3)
    assert review_job(kind_of(job), job).allowed
    assert review_job(kind_of(job), job, context=context()).allowed  # policies on, none exist


def test_warn_and_audit_policies_admit():
    job = tfjob(gpus=2, workers=3)
    warn = policy("gpu-warn", {"enforcementAction": "Warn", "limits": {"maxGPUsPerJob": 4}})
    audit = policy("gpu-audit", {"enforcementAction": "Audit", "limits": {"maxGPUsPerJob": 4}})
    warned = review_job(kind_of(job), job, context=context(warn))
    assert warned.allowed
    assert any("gpu-warn" in w for w in warned.warnings)
    audited = review_job(kind_of(job), job, context=context(audit))
    assert audited.allowed
    assert audited.warnings == []
    assert any("gpu-audit" in line for line in audited.audit)


def test_policy_defaults_come_first_and_go_into_the_one_patch():
    job = tfjob()
    ctx = context(QUEUE_DEFAULT)
    patch = defaulting_patch(kind_of(job), job, None, ctx)
    stored = apply_patch(job, patch)
    assert stored["spec"]["schedulingPolicy"]["queue"] == "team-a"
    assert stored["metadata"]["labels"]["team"] == "a"
    # The family's defaults are in the same patch, after the policy's.
    assert stored["spec"]["tfReplicaSpecs"]["Worker"]["restartPolicy"]
    paths = [op["path"] for op in patch]
    assert paths.index("/metadata/labels/team") < paths.index("/spec/tfReplicaSpecs/Worker/restartPolicy")
    # The validating side defaults in memory the same way, and the verdict is on that object.
    verdict = review_job(kind_of(job), job, context=ctx)
    assert verdict.defaulted == stored


def test_policy_defaults_apply_on_create_only():
    job = tfjob()
    ctx = context(QUEUE_DEFAULT, operation="UPDATE")
    assert defaulting_patch(kind_of(job), job, job, ctx) == defaulting_patch(kind_of(job), job, job)


def test_a_default_never_overwrites_what_the_job_says():
    job = tfjob(labels={"team": "b"})
    stored = apply_patch(job, defaulting_patch(kind_of(job), job, None, context(QUEUE_DEFAULT)))
    assert stored["metadata"]["labels"]["team"] == "b"


def test_volcanos_schema_default_queue_counts_as_unset():
    """Volcano's CRD stores ``queue: default`` before any webhook runs (documented in
    jobgate/policy/check.py): a policy's queue default replaces exactly that value."""
    job = vcjob(vc_task("w", 1), queue="default")
    job["metadata"]["namespace"] = "team-a"
    stored = apply_patch(job, defaulting_patch(kind_of(job), job, None, context(QUEUE_DEFAULT)))
    assert stored["spec"]["queue"] == "team-a"
    job["spec"]["queue"] = "other"
    stored = apply_patch(job, defaulting_patch(kind_of(job), job, None, context(QUEUE_DEFAULT)))
    assert stored["spec"]["queue"] == "other"


def test_existing_violations_are_allowed_on_update_unless_made_worse():
    old = tfjob(gpus=2, workers=3)
    labelled = tfjob(gpus=2, workers=3, labels={"touched": "yes"})
    ctx = context(GPU_CAP, operation="UPDATE")
    assert review_job(kind_of(labelled), labelled, old, context=ctx).allowed
    bigger = tfjob(gpus=2, workers=4)
    assert not review_job(kind_of(bigger), bigger, old, context=ctx).allowed
    strict = policy("gpu-strict", {"existingViolations": "Deny", "limits": {"maxGPUsPerJob": 4}})
    assert not review_job(kind_of(labelled), labelled, old, context=context(strict, operation="UPDATE")).allowed


def review_response(obj: dict, webhook: Webhook, views: ClusterViews, **kwargs) -> dict:
    body = json.dumps(admission_review(obj, **kwargs)).encode()
    return answer_review(parse_review(body), webhook, views)["response"]


def test_the_webhook_denies_warns_and_annotates_from_its_views():
    job = tfjob(gpus=2, workers=3)
    views = ClusterViews(policies=PolicySnapshot([GPU_CAP]))
    denied = review_response(job, Webhook.VALIDATE, views)
    assert denied["allowed"] is False
    assert denied["status"]["code"] == 422
    assert "gpu-cap" in denied["status"]["message"]
    audit = policy("gpu-audit", {"enforcementAction": "Audit", "limits": {"maxGPUsPerJob": 4}})
    annotated = review_response(job, Webhook.VALIDATE, ClusterViews(policies=PolicySnapshot([audit])))
    assert annotated["allowed"] is True
    assert "gpu-audit" in annotated["auditAnnotations"][AUDIT_ANNOTATION]
    mutated = review_response(tfjob(), Webhook.MUTATE, ClusterViews(policies=PolicySnapshot([QUEUE_DEFAULT])))
    ops = json.loads(base64.b64decode(mutated["patch"]))
    assert {"op": "add", "path": "/metadata/labels/team", "value": "a"} in ops


@pytest.mark.parametrize("field,value", [("spec", []), ("spec", "x"), ("spec", 3), ("labels", ["team"])])
def test_a_default_never_writes_through_a_value_that_is_no_object(field: str, value: object):
    """A policy default goes where the job leaves a field unset; a list or a string where the schema
    wants an object is the author's mistake, left as written for validation to report (never replaced
    by an object holding the default, never an internal error)."""
    job = tfjob()
    if field == "spec":
        job["spec"] = value
    else:
        job["metadata"]["labels"] = value
    views = ClusterViews(policies=PolicySnapshot([TTL_AND_LABEL_DEFAULT]))
    mutated = review_response(job, Webhook.MUTATE, views)
    assert "warnings" not in mutated
    ops = json.loads(base64.b64decode(mutated["patch"])) if "patch" in mutated else []
    blocked = "/spec" if field == "spec" else "/metadata/labels"
    assert not [op for op in ops if op["path"] == blocked or op["path"].startswith(blocked + "/")]
    validated = review_response(job, Webhook.VALIDATE, views)
    assert validated.get("status", {}).get("code") != 500
    if field == "spec":
        assert validated["allowed"] is False and validated["status"]["code"] == 422
        assert "spec in body must be of type object" in validated["status"]["message"]


def test_namespace_selectors_read_the_namespaces_labels():
    research = policy("research", {"namespaceSelector": {"matchLabels": {"tier": "research"}}, **GPU_CAP["spec"]})
    job = tfjob(gpus=2, workers=3, namespace="lab")
    plain = ClusterViews(policies=PolicySnapshot([research], {"lab": {}}))
    assert review_response(job, Webhook.VALIDATE, plain)["allowed"] is True
    labelled = ClusterViews(policies=PolicySnapshot([research], {"lab": {"tier": "research"}}))
    assert review_response(job, Webhook.VALIDATE, labelled)["allowed"] is False


# --- the offline command ------------------------------------------------------------------------


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "policies.yaml").write_text(yaml.safe_dump_all([GPU_CAP, QUEUE_DEFAULT]))
    namespaces = {"apiVersion": "v1", "kind": "List", "items": [{"kind": "Namespace", "metadata": {"name": "team-a"}}]}
    (tmp_path / "namespaces.yaml").write_text(yaml.safe_dump(namespaces))
    (tmp_path / "big.yaml").write_text(yaml.safe_dump(tfjob(gpus=2, workers=3)))
    (tmp_path / "small.yaml").write_text(yaml.safe_dump(tfjob()))
    return tmp_path


def test_validate_with_policies_gives_the_clusters_verdict(files: Path, capsys):
    flags = ["--policies", str(files / "policies.yaml"), "--namespaces", str(files / "namespaces.yaml")]
    assert main(["validate", *flags, str(files / "big.yaml")]) == 1
    out = capsys.readouterr().out
    assert "gpu-cap" in out
    assert main(["validate", "-o", "json", *flags, str(files / "big.yaml")]) == 1
    (error,) = json.loads(capsys.readouterr().out)["documents"][0]["errors"]
    assert error["rule"] == "policy/max-gpus-per-job"
    assert main(["validate", *flags, str(files / "small.yaml")]) == 0
    assert main(["validate", str(files / "big.yaml")]) == 0  # no policies given: none enforced


def test_default_with_policies_prints_the_stored_object(files: Path, capsys):
    assert main(["default", "-o", "json", "--policies", str(files), str(files / "small.yaml")]) == 0
    stored = json.loads(capsys.readouterr().out)
    assert stored["spec"]["schedulingPolicy"]["queue"] == "team-a"
    assert stored["metadata"]["labels"]["team"] == "a"


def test_a_job_without_a_namespace_takes_the_namespace_flag(files: Path, capsys):
    job = tfjob(gpus=2, workers=3)
    del job["metadata"]["namespace"]
    (files / "bare.yaml").write_text(yaml.safe_dump(job))
    only_team_a = policy("cap", GPU_CAP["spec"], namespace="team-a")
    (files / "team-a.yaml").write_text(yaml.safe_dump(only_team_a))
    assert main(["validate", "--policies", str(files / "team-a.yaml"), str(files / "bare.yaml")]) == 0
    flags = ["--policies", str(files / "team-a.yaml"), "--namespace", "team-a"]
    assert main(["validate", *flags, str(files / "bare.yaml")]) == 1


def test_review_with_policies_answers_as_the_webhook(files: Path, capsys):
    review = files / "review.json"
    review.write_text(json.dumps(admission_review(tfjob(gpus=2, workers=3))))
    assert main(["review", "validate", str(review), "--policies", str(files / "policies.yaml")]) == 0
    response = json.loads(capsys.readouterr().out)["response"]
    assert response["allowed"] is False
    assert "gpu-cap" in response["status"]["message"]


def test_a_malformed_policy_is_a_usage_error(files: Path, capsys):
    bad = policy("bad", {"limits": {"maxGPUsPerJob": -1}})
    (files / "bad.yaml").write_text(yaml.safe_dump(bad))
    assert main(["validate", "--policies", str(files / "bad.yaml"), str(files / "small.yaml")]) == 2
    err = capsys.readouterr().err
    assert "ClusterTrainingJobPolicy bad is invalid" in err
    assert "Traceback" not in err


def test_missing_policy_files_are_a_usage_error(files: Path, capsys):
    assert main(["validate", "--policies", str(files / "nowhere"), str(files / "small.yaml")]) == 2
    assert "--policies" in capsys.readouterr().err


def test_policy_explain_names_the_source_of_every_value(files: Path, capsys):
    flags = ["--policies", str(files / "policies.yaml"), "--namespaces", str(files / "namespaces.yaml")]
    assert main(["policy", "explain", "--namespace", "team-a", *flags]) == 0
    out = capsys.readouterr().out
    assert "queue: 'team-a' from TrainingJobPolicy team-a/team-a" in out
    assert "maxGPUsPerJob: 4 from ClusterTrainingJobPolicy gpu-cap" in out


def test_the_example_policies_are_accepted_offline(tmp_path: Path, capsys):
    job = REPO / "examples" / "valid" / "tfjob-mnist.yaml"
    # The cluster policy selects namespaces by label: the job's Namespace is needed to judge it.
    namespaces = {"apiVersion": "v1", "kind": "List", "items": [{"kind": "Namespace", "metadata": {"name": "default"}}]}
    (tmp_path / "namespaces.yaml").write_text(yaml.safe_dump(namespaces))
    flags = ["--policies", str(EXAMPLE_POLICIES), "--namespaces", str(tmp_path / "namespaces.yaml")]
    assert main(["validate", *flags, str(job)]) == 0


def test_validate_checks_policy_documents_as_their_crd_would(tmp_path: Path, capsys):
    bad = policy("bad", {"limits": {"maxGPUsPerJob": -1, "gpuResources": [{"name": "a*b", "weight": 1}]}})
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(bad))
    assert main(["validate", "-o", "json", str(tmp_path / "bad.yaml")]) == 1
    errors = json.loads(capsys.readouterr().out)["documents"][0]["errors"]
    assert sorted(e["field"] for e in errors) == ["spec.limits.gpuResources[0].name", "spec.limits.maxGPUsPerJob"]
    assert {e["rule"] for e in errors} == {"policy/schema"}
    assert main(["validate", str(EXAMPLE_POLICIES)]) == 0


def test_a_label_default_that_a_selector_reads_is_judged_by_the_policies_it_selects():
    """The verdict resolves the policy again for the defaulted job when a default changed a label an
    objectSelector reads (the review reuses the defaults' resolution only when the selection is the same)."""
    gold = policy("gold-default", {"defaults": {"labels": {"tier": "gold"}}})
    gold_cap = policy(
        "gold-cap", {"match": {"objectSelector": {"matchLabels": {"tier": "gold"}}}, "limits": {"maxReplicasPerJob": 2}}
    )
    other_default = policy("cost-default", {"defaults": {"labels": {"cost-center": "ml"}}})
    job = tfjob(gpus=1, workers=3)
    verdict = review_job(kind_of(job), job, context=context(gold, gold_cap))
    assert verdict.defaulted["metadata"]["labels"]["tier"] == "gold"
    assert any("gold-cap" in str(e) for e in verdict.errors), [str(e) for e in verdict.errors]
    # A default no selector reads leaves the selection, and the verdict, as they were.
    verdict = review_job(kind_of(job), job, context=context(other_default, gold_cap))
    assert verdict.defaulted["metadata"]["labels"]["cost-center"] == "ml" and verdict.allowed


def test_the_snapshot_builds_a_namespaces_labels_once():
    snapshot = PolicySnapshot([GPU_CAP], {"team-a": {"tier": "research"}})
    first = snapshot.namespace_labels("team-a")
    assert first == {"tier": "research", "kubernetes.io/metadata.name": "team-a"}
    assert snapshot.namespace_labels("team-a") is first
    assert snapshot.namespace_labels("elsewhere") == {"kubernetes.io/metadata.name": "elsewhere"}


def test_a_check_with_plainly_valid_policies_loads_no_parser_models_or_typing(tmp_path: Path) -> None:
    """`jobgate validate --policies --namespaces FILE` as a pre-commit hook runs it: its command
    line read without argparse, the policies without pydantic or PyYAML, and the policy modules
    without typing, dataclasses or fractions (whole GPU counts), each of which cost a one-file
    check about as much as its rules."""
    import subprocess
    import sys
    import textwrap

    namespaces = {"apiVersion": "v1", "kind": "List", "items": [{"kind": "Namespace", "metadata": {"name": "default"}}]}
    (tmp_path / "namespaces.yaml").write_text(yaml.safe_dump(namespaces))
    job = REPO / "examples" / "valid" / "tfjob-mnist.yaml"
    argv = [
        "validate",
        "--policies",
        str(EXAMPLE_POLICIES),
        "--namespaces",
        str(tmp_path / "namespaces.yaml"),
        str(job),
    ]
    script = textwrap.dedent(
        f"""
        import sys
        from jobgate.cli import main
        code = main({argv!r})
        unwanted = ("argparse", "typing", "dataclasses", "fractions", "pydantic", "yaml", "jobgate.policy.models")
        loaded = sorted(m for m in sys.modules if m in unwanted or m.split(".")[0] in ("pydantic", "yaml"))
        assert not loaded, loaded
        assert "jobgate.policy.check" in sys.modules
        sys.exit(code)
        """
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def _generic_job(**spec: dict) -> dict:
    container = {"name": "main", "image": "registry.example.com/ml/job:1"}
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "GenericJob",
        "metadata": {"name": "gj", "namespace": "team-a"},
        "spec": {"replicaSpecs": [{"type": "worker", "template": {"spec": {"containers": [container]}}}], **spec},
    }


@pytest.mark.parametrize("spec", [{}, {"scheduler": {}}], ids=["no scheduler", "empty scheduler"])
def test_t9k_queue_default_satisfies_the_required_queues(spec: dict):
    """defaults.queue with require.queues never refuses a GenericJob that names no scheduler: the
    default is written at spec.scheduler.t9kScheduler.queue, the one place a GenericJob has a queue.
    Run past the plan's specialisation (its written-out defaults are a second path)."""
    queues = policy("q", {"defaults": {"queue": "team-a"}, "require": {"queues": ["team-a"]}}, namespace="team-a")
    ctx = context(queues)
    job = _generic_job(**spec)
    for _ in range(70):
        verdict = review_job(kind_of(job), job, context=ctx)
        assert verdict.allowed, [str(e) for e in verdict.errors]
        assert verdict.defaulted["spec"]["scheduler"]["t9kScheduler"]["queue"] == "team-a"
        patched = apply_patch(job, defaulting_patch(kind_of(job), job, context=ctx))
        assert patched["spec"]["scheduler"]["t9kScheduler"] == {"queue": "team-a", "priority": 0}
    # Without the default, the requirement still holds: no scheduler is no way around a queue.
    strict = context(policy("q", {"require": {"queues": ["team-a"]}}, namespace="team-a"))
    (error,) = review_job(kind_of(job), job, context=strict).errors
    assert str(error).startswith("spec.scheduler.t9kScheduler.queue: Required value")
