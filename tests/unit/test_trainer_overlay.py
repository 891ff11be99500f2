"""manifests/overlays/trainer-admission-only is current with the generated base: it renders jobgate's
webhooks for Trainer's three kinds alone (the rules the generator makes for the trainer family), the
platform-policy CRDs and no other CRD, no controller, and the webhook serving --families=trainer."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from jobgate.generate.manifests import _rules

REPO = Path(__file__).resolve().parents[2]
OVERLAY = REPO / "manifests/overlays/trainer-admission-only"

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl kustomize renders the overlay")


@pytest.fixture(scope="module")
def rendered() -> list[dict]:
    out = subprocess.run(["kubectl", "kustomize", str(OVERLAY)], capture_output=True, text=True, check=True).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def test_only_the_policy_crds(rendered):
    crds = {d["spec"]["group"] for d in rendered if d["kind"] == "CustomResourceDefinition"}
    assert crds == {"policy.jobgate.io"}


def test_no_controller_and_the_trainer_family_alone(rendered):
    deployments = {d["metadata"]["name"]: d for d in rendered if d["kind"] == "Deployment"}
    assert "jobgate-controller" not in deployments
    assert "--families=trainer" in deployments["jobgate"]["spec"]["template"]["spec"]["containers"][0]["args"]


def test_the_webhooks_rules_are_the_generated_trainer_rules(rendered):
    wanted = [r for r in _rules() if r["apiGroups"] == ["trainer.kubeflow.org"]]
    assert wanted and wanted[0]["scope"] == "*"  # ClusterTrainingRuntime is cluster-scoped
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        (config,) = [d for d in rendered if d["kind"] == kind]
        assert config["webhooks"][0]["rules"] == wanted


def test_the_webhook_may_watch_the_runtimes(rendered):
    rules = [r for d in rendered if d["kind"] == "ClusterRole" for r in d.get("rules", [])]
    assert any(
        "trainer.kubeflow.org" in r["apiGroups"]
        and {"list", "watch"} <= set(r["verbs"])
        and "trainingruntimes" in r["resources"]
        for r in rules
    )
