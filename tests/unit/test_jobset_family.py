"""The jobset family's record, feature gates, overlay and platform-policy counting (its webhook's and
CRD's rules are in test_jobset_review_table.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from jobgate.cli import main
from jobgate.engine.context import ReviewContext
from jobgate.families import family
from jobgate.families.jobset import PEER_VERSION
from jobgate.families.jobset.rules.gates import parse_gates
from jobgate.generate.manifests import admission_only_overlays
from jobgate.policy.fieldmap import pod_sizes, pods_per_job
from jobgate.policy.kinds import KINDS
from jobgate.review import kind_of, review_job
from tests.unit.test_jobset_review_table import CREATE, UPDATE

REPO = Path(__file__).resolve().parents[2]
VALID = REPO / "examples/valid/jobset-pytorch.yaml"
OVERLAY = REPO / "manifests/overlays/jobset-admission-only/kustomization.yaml"


def test_the_pinned_jobset_release_is_a_visible_fact():
    """The alpha API changes between minors: the release the rules follow is named where users read."""
    assert PEER_VERSION == "v0.12.0"
    assert PEER_VERSION in family("jobset").description
    assert "JobSet v0.12.0" in OVERLAY.read_text()


@pytest.mark.skipif(not (REPO / "docs").is_dir(), reason="no docs/ here (the compiled pass copies the tests)")
def test_the_docs_name_the_pinned_jobset_release():
    assert "JobSet v0.12.0" in (REPO / "docs/families.md").read_text()
    assert "JobSet v0.12.0" in (REPO / "docs/rules/jobset.md").read_text()


def test_the_family_is_admission_only_and_ships_no_jobset_crd():
    record = family("jobset")
    assert record.admission_only and record.controller is None
    assert not list((REPO / "manifests/base/crds").glob("jobset.x-k8s.io_*"))


# --- feature gates ----------------------------------------------------------------------------------


def test_gates_default_off_as_jobsets():
    assert parse_gates(None) == frozenset()
    assert parse_gates("") == frozenset()


def test_gates_are_turned_on_and_off_as_component_base_parses_them():
    assert parse_gates("InPlaceRestart=true, RestartJob=TRUE,ElasticJobSet=false") == {"InPlaceRestart", "RestartJob"}
    assert parse_gates("RestartJob=true,RestartJob=false") == frozenset()
    assert parse_gates("TLSOptions=false") == frozenset()  # JobSet's server's gate: no rule reads it


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("Elastic=true", "unrecognized feature gate: Elastic"),
        ("RestartJob", "missing bool value"),
        ("RestartJob=yes", "must be true or false"),
    ],
)
def test_a_bad_gate_list_is_refused(text, says):
    with pytest.raises(ValueError, match=says):
        parse_gates(text)


def test_a_bad_gate_flag_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["validate", "--jobset-feature-gates", "Nope=true", str(VALID)])
    assert exited.value.code == 2
    assert "unrecognized feature gate: Nope" in capsys.readouterr().err


def test_the_gate_reaches_the_rules_through_the_context():
    document = yaml.safe_load(VALID.read_text())
    document["spec"]["failurePolicy"]["rules"][0]["action"] = "RestartJob"
    kind = kind_of(document)
    off = review_job(kind, document, None)
    on = review_job(kind, document, None, context=ReviewContext(feature_gates=frozenset({"RestartJob"})))
    assert [e.rule for e in off.errors] == ["jobset/failure-policy-restart-job"]
    assert on.errors == []


def test_the_webhook_takes_the_gate_flag():
    from jobgate.cli.parser import build_parser

    args = build_parser().parse_args(["webhook", "--tls-dir", "x", "--jobset-feature-gates", "ElasticJobSet=true"])
    assert args.jobset_feature_gates == {"ElasticJobSet"}


# --- every error names its rule at the source ---------------------------------------------------------


def test_every_error_of_the_tables_carries_its_rule_id():
    jobs = [(c[1], None, c[3]) for c in CREATE] + [(c[1], c[2], c[4]) for c in UPDATE]
    for obj, old, gates in jobs:
        context = ReviewContext(feature_gates=parse_gates(gates), operation="UPDATE" if old else "CREATE")
        kind = kind_of(obj)
        for error in review_job(kind, obj, old, context=context).errors:
            if error.path[:1] == ("spec",) or error.path == ("<nil>",):
                assert error.rule, error


# --- the overlay ---------------------------------------------------------------------------------------


def test_the_overlay_is_generated_and_current():
    assert admission_only_overlays()["overlays/jobset-admission-only/kustomization.yaml"] == OVERLAY.read_text()


def test_the_overlay_serves_jobsets_alone_without_crds_of_jobgates_families_or_a_controller():
    body = yaml.safe_load(OVERLAY.read_text())
    assert body["resources"] == ["../self-signed"]
    deleted = [yaml.safe_load(p["patch"]) for p in body["patches"] if "target" not in p]
    crds = {d["metadata"]["name"] for d in deleted if d["kind"] == "CustomResourceDefinition"}
    assert "jobs.batch.volcano.sh" in crds and "tfjobs.training.kubedl.io" in crds
    assert not any(name.endswith("policy.jobgate.io") or "jobset" in name for name in crds)
    assert any(d["kind"] == "Deployment" and d["metadata"]["name"] == "jobgate-controller" for d in deleted)
    targeted = {p["target"]["kind"]: yaml.safe_load(p["patch"]) for p in body["patches"] if "target" in p}
    assert targeted["Deployment"][0]["value"] == "--families=jobset"
    for configuration in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        (rule,) = targeted[configuration][0]["value"]
        assert (rule["apiGroups"], rule["apiVersions"], rule["resources"]) == (
            ["jobset.x-k8s.io"],
            ["v1alpha2"],
            ["jobsets"],
        )


# --- platform policy: pods as Kueue counts a JobSet's ---------------------------------------------------


@pytest.mark.parametrize(
    ("job_spec", "pods"),
    [
        ({}, 1),
        ({"parallelism": 4}, 4),
        ({"parallelism": 4, "completions": 2}, 2),
        ({"parallelism": 2, "completions": 8}, 2),
        ({"completions": 3}, 1),
        ({"parallelism": 0}, 0),
        (None, 1),
    ],
)
def test_pods_per_job_are_min_of_parallelism_and_completions(job_spec, pods):
    assert pods_per_job(job_spec) == pods


def test_a_jobsets_groups_are_its_replicated_jobs_replicas_times_pods_per_job():
    job = yaml.safe_load(VALID.read_text())
    kmap = KINDS["jobset.x-k8s.io", "JobSet"]
    groups = kmap.groups(job)
    assert [(g.role, g.replicas, g.largest) for g in groups] == [("leader", 1, 1), ("workers", 8, 8)]
    assert groups[1].template_path == ("spec", "replicatedJobs", 1, "template", "spec", "template")
    assert groups[1].template == job["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]
    assert [count for count, _ in pod_sizes(kmap, job)] == [1, 8]
    unset = copy.deepcopy(job)
    del unset["spec"]["replicatedJobs"][1]["replicas"]
    assert [g.replicas for g in kmap.groups(unset)] == [1, 2]  # replicas default 1


def _policy(tmp_path, **spec) -> Path:
    path = tmp_path / "policy.yaml"
    policy = {"apiVersion": "policy.jobgate.io/v1alpha1", "kind": "ClusterTrainingJobPolicy"}
    path.write_text(
        yaml.safe_dump({**policy, "metadata": {"name": "p"}, "spec": {"enforcementAction": "Deny", **spec}})
    )
    return path


def _validate(capsys, *args: str) -> tuple[int, dict]:
    code = main(["validate", "-o", "json", *args])
    return code, json.loads(capsys.readouterr().out)


def _errors(report) -> list[str]:
    return [e["rule"] for doc in report["documents"] for e in doc.get("errors", [])]


def test_gpu_and_replica_limits_count_every_pod_of_a_jobset(tmp_path, capsys):
    """1 leader + 4 workers × 2 pods, 8 GPUs each: 9 pods, 72 GPUs."""
    policy = _policy(tmp_path, limits={"maxGPUsPerJob": 64, "maxReplicasPerJob": 8})
    code, report = _validate(capsys, "--policies", str(policy), str(VALID))
    assert code == 1
    assert sorted(_errors(report)) == ["policy/max-gpus-per-job", "policy/max-replicas-per-job"]
    policy = _policy(tmp_path, limits={"maxGPUsPerJob": 72, "maxReplicasPerJob": 9})
    assert _validate(capsys, "--policies", str(policy), str(VALID))[0] == 0


def test_images_and_privileges_are_read_from_every_replicated_jobs_pod_template(tmp_path, capsys):
    policy = _policy(tmp_path, require={"imageRegistries": ["registry.example.com/"], "forbid": ["privileged"]})
    code, report = _validate(capsys, "--policies", str(policy), str(VALID))
    assert code == 1
    assert _errors(report) == ["policy/image-registries", "policy/image-registries"]


def test_the_kueue_queue_label_is_defaulted_and_the_queue_must_fit(tmp_path, capsys):
    policy = _policy(tmp_path, defaults={"kueueQueueName": "team-a"})
    job = yaml.safe_load(VALID.read_text())
    del job["metadata"]["labels"]
    path = tmp_path / "js.yaml"
    path.write_text(yaml.safe_dump(job))
    assert main(["default", "-o", "json", "--policies", str(policy), str(path)]) == 0
    stored = json.loads(capsys.readouterr().out)
    assert stored["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "team-a"}
    job["metadata"] = {**stored["metadata"], "namespace": "ml"}
    path.write_text(yaml.safe_dump(job))
    cluster = REPO / "examples/queue-fit/cluster.yaml"
    fits = REPO / "examples/queue-fit/policy.yaml"
    code, report = _validate(capsys, "--cluster-objects", str(cluster), "--cluster-objects", str(fits), str(path))
    assert code == 1 and _errors(report) == ["policy/queue-fit"]  # 72 GPUs; the queue can give 24
