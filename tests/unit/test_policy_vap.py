"""The generated platform-policy ValidatingAdmissionPolicies (manifests/policy-vaps): their shape, the
field map they read, and the enforcement table in the docs. Their verdicts are proven on a real
apiserver by tests/e2e/test_policy_vap.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobgate.cli.manifests import policy_enforcement_table
from jobgate.generate.manifests import generated_files
from jobgate.generate.policy_vap import ACTIONS, kind_documents
from jobgate.policy.fieldmap import KindMap
from jobgate.policy.kinds import KINDS

REPO = Path(__file__).resolve().parents[2]


def _probe(kmap: KindMap) -> dict:
    group = {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}
    groups = (
        {"Worker": dict(group), "PS": {**group, "replicas": 3}}
        if kmap.replica_layout == "map"
        else [
            dict(group),
            {**group, "replicas": 3},
        ]
    )
    return {"apiVersion": f"{kmap.group}/v1", "kind": kmap.kind, "spec": {kmap.replica_field: groups}}


def test_the_field_map_records_how_each_kind_keeps_its_groups():
    for kmap in KINDS.values():
        if not kmap.replica_field:
            continue  # read some other way (a TrainJob's pods are its runtime's: tests/unit/test_trainer_policy.py)
        groups = kmap.groups(_probe(kmap))
        assert len(groups) == 2, kmap.kind
        counts = sorted(g.replicas for g in groups)
        default = 0 if "Worker" in kmap.default_zero else kmap.default_count
        assert counts == sorted([default, 3]), kmap.kind


def test_six_policies_and_bindings_per_kind_with_the_safe_param_settings():
    for kmap in KINDS.values():
        if not kmap.replica_field:
            continue  # no generated policy (a TrainJob's pods are its runtime's)
        documents = kind_documents(kmap, "things", "v1", {})
        policies = [d for d in documents if d["kind"] == "ValidatingAdmissionPolicy"]
        bindings = [d for d in documents if d["kind"] == "ValidatingAdmissionPolicyBinding"]
        assert len(policies) == len(bindings) == 2 * len(ACTIONS)
        for binding in bindings:
            assert binding["spec"]["paramRef"] == {"selector": {}, "parameterNotFoundAction": "Allow"}
            assert "namespace" not in binding["spec"]["paramRef"]
            assert len(binding["spec"]["validationActions"]) == 1
        kinds = {p["spec"]["paramKind"]["kind"] for p in policies}
        assert kinds == {"ClusterTrainingJobPolicy", "TrainingJobPolicy"}
        for policy in policies:
            applies = next(v for v in policy["spec"]["variables"] if v["name"] == "applies")["expression"]
            action = policy["metadata"]["name"].split(".")[2].capitalize()
            assert f"== '{action}'" in applies
            assert ("namespaceSelector" in applies) == (
                policy["spec"]["paramKind"]["kind"] == "ClusterTrainingJobPolicy"
            )


def test_the_policy_vaps_are_generated_apart_and_named_by_the_webhookless_overlays():
    """Their own directory, applied beside a webhook-less overlay: too large (and too slow for the
    apiserver to compile) to ride along with every cel-only install, or with the base, where the
    webhook enforces the same."""
    files = generated_files()
    assert "policy-vaps/kustomization.yaml" in files
    assert "policy-vaps" not in (REPO / "manifests/base/kustomization.yaml").read_text()
    for overlay in ("cel-only", "cel-only-validation"):
        text = (REPO / f"manifests/overlays/{overlay}/kustomization.yaml").read_text()
        assert "../../policy-vaps" not in text
        assert "manifests/policy-vaps" in text


@pytest.mark.skipif(not (REPO / "docs").is_dir(), reason="no docs/ here (the compiled wheel's pass)")
def test_the_docs_carry_the_enforcement_table():
    assert policy_enforcement_table() in (REPO / "docs/policy-enforcement.md").read_text()
