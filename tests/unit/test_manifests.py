"""manifests/: generated parts are current; the hand-written parts keep their safety properties."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from jobgate.cli import main
from jobgate.engine.registry import served_kinds
from jobgate.generate import manifests
from jobgate.generate.cel.generate import family_defaults
from jobgate.generate.manifests import (
    admission_only,
    controller_cluster_role,
    differences,
    e2e_crd_files,
    every_family_kind,
    generated_files,
    package_tables,
    webhook_configurations,
)

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests"


def load_all(path: Path) -> list[dict]:
    return [d for d in YAML(typ="safe").load_all(path.read_text()) if d]


@pytest.fixture(scope="session")
def generated() -> dict[str, str]:
    """The generated files, made once for the tests below (a full generator run each otherwise)."""
    return generated_files()


def test_generated_manifests_are_current(generated):
    stale = differences(MANIFESTS, generated)
    assert stale == [], f"run `jobgate manifests generate`; stale: {stale}"


def test_check_mode_reports_drift(tmp_path, capsys, monkeypatch, generated):
    # The command's writing and checking, over the files generated once (test_generated_files_are_stable
    # holds that every run generates the same).
    monkeypatch.setattr(manifests, "generated_files", lambda: dict(generated))
    assert main(["manifests", "generate", "--dir", str(tmp_path)]) == 0
    assert main(["manifests", "generate", "--dir", str(tmp_path), "--check"]) == 0
    crd = next(tmp_path.glob("base/crds/training.kubedl.io_tfjobs.yaml"))
    crd.write_text(crd.read_text().replace("minimum: 0", "minimum: 1", 1))
    assert main(["manifests", "generate", "--dir", str(tmp_path), "--check"]) == 1
    assert "training.kubedl.io_tfjobs.yaml: differs" in capsys.readouterr().err


def test_a_crd_per_served_kind():
    crds = {
        (d["spec"]["group"], d["spec"]["names"]["kind"]): d
        for p in (MANIFESTS / "base/crds").glob("*_*.yaml")
        for d in load_all(p)
    }
    assert crds.pop(("bus.volcano.sh", "Command"))  # not a job: see the next test
    # Platform policies, not jobs (tests/unit/test_policy_models.py checks their CRDs).
    assert crds.pop(("policy.jobgate.io", "ClusterTrainingJobPolicy"))
    assert crds.pop(("policy.jobgate.io", "TrainingJobPolicy"))
    assert crds.pop(("policy.jobgate.io", "TrainingJobPolicyException"))
    # Kubeflow's kinds are admitted only: their CRDs are Kubeflow's, never shipped (see the test below).
    assert set(crds) == {(k.gvk.group, k.gvk.kind) for k in served_kinds() if not admission_only(k)}
    for crd in crds.values():
        (version,) = crd["spec"]["versions"]
        assert version["subresources"] == {"status": {}}
        # Volcano, T9k and DI-orchestrator show their own columns; the other families jobgate's.
        columns = [c["name"] for c in version["additionalPrinterColumns"]]
        group = crd["spec"]["group"]
        if group == "batch.volcano.sh":
            assert columns == ["STATUS", "MINAVAILABLE", "RUNNINGS", "AGE", "QUEUE"]
        elif group in ("batch.tensorstack.dev", "diengine.opendilab.org"):
            assert columns[0] == "Phase" and columns[-1] == "Age"
            assert version["additionalPrinterColumns"][0]["jsonPath"] == ".status.phase"
        else:
            assert columns == ["State", "Replicas", "Age"]
        assert crd["spec"]["names"]["shortNames"]
        schema = version["schema"]["openAPIV3Schema"]
        assert schema["description"]
        assert schema["properties"]["spec"]["description"]


def test_volcanos_command_crd_is_shipped_and_is_no_job():
    (crd,) = load_all(MANIFESTS / "base/crds/bus.volcano.sh_commands.yaml")
    assert crd["metadata"]["name"] == "commands.bus.volcano.sh"
    assert crd["spec"]["names"] == {
        "kind": "Command",
        "listKind": "CommandList",
        "plural": "commands",
        "singular": "command",
    }
    assert crd["spec"]["scope"] == "Namespaced"
    (version,) = crd["spec"]["versions"]
    assert version["name"] == "v1alpha1" and version["served"] and version["storage"]
    assert "subresources" not in version
    properties = version["schema"]["openAPIV3Schema"]["properties"]
    # Volcano's wire names: vcctl writes `target`; a field the schema lacks would be pruned by the apiserver.
    assert set(properties) == {"apiVersion", "kind", "metadata", "action", "target", "reason", "message"}
    assert properties["action"] == {**properties["action"], "type": "string"} and "enum" not in properties["action"]
    assert properties["target"]["required"] == ["apiVersion", "kind", "name", "uid"]
    assert properties["target"]["x-kubernetes-map-type"] == "atomic"  # as metav1.OwnerReference
    assert "bus.volcano.sh_commands.yaml" in load_all(MANIFESTS / "base/crds/kustomization.yaml")[0]["resources"]
    # Neither reviewed by the webhooks nor reconciled as a job.
    assert all(k.gvk.group != "bus.volcano.sh" for k in served_kinds())
    for configuration in webhook_configurations():
        assert all(rule["apiGroups"] != ["bus.volcano.sh"] for rule in configuration["webhooks"][0]["rules"])
    assert all("volcano_bus" not in table for table in package_tables().values())


def _nodes(schema: dict, path: str = ""):
    yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from _nodes(sub, f"{path}.{name}")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _nodes(schema["additionalProperties"], f"{path}[*]")
    if isinstance(schema.get("items"), dict):
        yield from _nodes(schema["items"], f"{path}[]")


JOB_CRD_FILES = sorted(p for p in (MANIFESTS / "base/crds").glob("*_*.yaml") if not p.name.startswith("policy."))


@pytest.mark.parametrize("path", JOB_CRD_FILES, ids=lambda p: p.name)
def test_crd_schemas_are_structural_with_unknown_fields_only_under_templates(path: Path):
    (crd,) = load_all(path)
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    kinds = [k for k in every_family_kind() if f"{k.plural}.{k.gvk.group}" == crd["metadata"]["name"]]
    placed_defaults = {
        placement.at for kind in kinds for default in family_defaults(kind) or () for placement in default.placements
    }
    for where, node in _nodes(schema):
        assert (
            "type" in node or node.get("x-kubernetes-preserve-unknown-fields") or node.get("x-kubernetes-int-or-string")
        ), where
        for forbidden in ("$ref", "anyOf", "oneOf", "allOf", "title", "nullable"):
            assert forbidden not in node, where
        if "default" in node:
            # Only the defaults of the catalogue (jobgate/generate/cel), each the webhook's own.
            assert _location(where) in placed_defaults, where
        in_template = ".template." in where
        if node.get("x-kubernetes-preserve-unknown-fields") and not in_template:
            # Core/v1 objects held whole: pod templates (what the rules read of them is typed), DIJob's
            # shared volumes, T9k's container states, Volcano's PVC specs.
            assert where.endswith((".template", ".spec.volumes[]", ".containers[].state", ".volumeClaim")), where
        named_field = not where.endswith(("[]", "[*]", ".template")) and not in_template
        if where.startswith(".spec.") and named_field:
            assert node.get("description"), f"{where} has no description for kubectl explain"


def _location(where: str) -> tuple[str, ...]:
    """``.spec.x[*].y[]`` -> ("spec", "x", "*", "y", "[]")."""
    return tuple("*" if step == "[*]" else step for step in re.findall(r"\[\*\]|\[\]|[^.\[\]]+", where))


def test_webhook_configurations():
    mutating, validating = webhook_configurations()
    assert mutating["kind"] == "MutatingWebhookConfiguration"
    assert validating["kind"] == "ValidatingWebhookConfiguration"
    for configuration in (mutating, validating):
        (webhook,) = configuration["webhooks"]
        assert webhook["sideEffects"] == "None"
        assert webhook["admissionReviewVersions"] == ["v1"]
        assert webhook["failurePolicy"] == "Fail"
        assert webhook["matchPolicy"] == "Equivalent"
        assert webhook["timeoutSeconds"] <= 5
        excluded = webhook["namespaceSelector"]["matchExpressions"][0]
        assert excluded == {
            "key": "kubernetes.io/metadata.name",
            "operator": "NotIn",
            "values": ["kube-system", "jobgate-system"],
        }
        resources = [r for rule in webhook["rules"] for r in rule["resources"]]
        assert sorted(resources) == sorted(k.plural for k in served_kinds())
        assert not any("/" in r for r in resources)  # no status subresource
        for rule in webhook["rules"]:
            assert rule["operations"] == ["CREATE", "UPDATE"]


TEST_CRDS = MANIFESTS.parent / "tests/e2e/crds"


def test_kubeflow_kinds_are_admitted_but_get_no_shipped_crd_nor_controller_rights():
    kubeflow = {k.plural for k in served_kinds() if k.gvk.group == "kubeflow.org"}
    assert kubeflow == {"tfjobs", "pytorchjobs", "xgboostjobs", "paddlejobs", "jaxjobs", "mpijobs"}
    assert all(admission_only(k) for k in served_kinds() if k.gvk.group == "kubeflow.org")
    assert not list((MANIFESTS / "base/crds").glob("kubeflow.org_*"))
    for configuration in webhook_configurations():
        (rule,) = [r for r in configuration["webhooks"][0]["rules"] if r["apiGroups"] == ["kubeflow.org"]]
        assert rule["apiVersions"] == ["v1"] and set(rule["resources"]) == kubeflow
    assert all("kubeflow.org" not in rule["apiGroups"] for rule in controller_cluster_role()["rules"])


def test_kubeflow_test_crds_are_current_and_only_for_the_tests():
    assert differences(TEST_CRDS, e2e_crd_files()) == [], "run `jobgate manifests generate`"
    crds = [d for p in sorted((TEST_CRDS / "kubeflow").glob("kubeflow.org_*.yaml")) for d in load_all(p)]
    assert sorted(c["spec"]["names"]["kind"] for c in crds) == [
        "JAXJob",
        "MPIJob",
        "PaddleJob",
        "PyTorchJob",
        "TFJob",
        "XGBoostJob",
    ]
    for crd in crds:
        (version,) = crd["spec"]["versions"]
        assert version["name"] == "v1"
        assert [c["name"] for c in version["additionalPrinterColumns"]] == ["State", "Age"]  # Kubeflow's columns
        spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
        assert "runPolicy" in spec["properties"]
        assert "stand-in" in version["schema"]["openAPIV3Schema"]["description"]


def test_generated_files_are_stable(generated):
    assert generated_files() == generated


def test_deployment_is_hardened():
    (deployment,) = load_all(MANIFESTS / "base/deployment.yaml")
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    pod = spec["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    # The token serves the watch on Volcano's Queues, the webhook's only right (see below).
    assert pod["automountServiceAccountToken"] is True
    (container,) = pod["containers"]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert any(m["mountPath"] == "/tmp" for m in container["volumeMounts"])


def test_pdb_keeps_a_webhook_replica():
    (pdb,) = load_all(MANIFESTS / "base/pdb.yaml")
    assert pdb["spec"]["minAvailable"] == 1


def test_the_webhook_account_may_only_read_volcano_queues_and_trainer_runtimes():
    role, binding = load_all(MANIFESTS / "base/webhook/queue-reader.yaml")
    assert role["rules"] == [
        {"apiGroups": ["scheduling.volcano.sh"], "resources": ["queues"], "verbs": ["list", "watch"]},
        {
            "apiGroups": ["trainer.kubeflow.org"],
            "resources": ["clustertrainingruntimes", "trainingruntimes"],
            "verbs": ["get", "list", "watch"],
        },
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": ["get"]},
        {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": ["get", "list", "watch"]},
        # JobSet's check of existing PVCs: one read by name, no list, no watch.
        {"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": ["get"]},
    ]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "jobgate-webhook", "namespace": "jobgate-system"}]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert "queue-reader.yaml" in (MANIFESTS / "base/webhook/kustomization.yaml").read_text()


def test_the_family_index_names_every_kind_and_loads_only_the_family_met(tmp_path):
    """The index is generated from the family modules; one document loads one family: its models, its
    rules and its generated declared rules, and of the others nothing (their records are data in
    ``jobgate.families``, never imported for a review)."""
    from jobgate._generated.family_index import KIND_FAMILIES
    from jobgate.generate.manifests import every_family_kind

    assert {(k.gvk.group, k.gvk.version, k.gvk.kind): k.family for k in every_family_kind()} == KIND_FAMILIES
    script = (
        "import sys\n"
        "from jobgate.engine.registry import lookup_names\n"
        "assert lookup_names('mxnet.mlkube.io', 'v1beta1', 'MxJob').family == 'mlkube'\n"
        "assert lookup_names('example.com', 'v1', 'MxJob') is None\n"
        "from jobgate.review import review_job\n"
        "job = {'apiVersion': 'mxnet.mlkube.io/v1beta1', 'kind': 'MxJob', 'metadata': {'name': 'a'}, 'spec': {}}\n"
        "review_job(lookup_names('mxnet.mlkube.io', 'v1beta1', 'MxJob'), job)\n"
        "families = {m.split('.')[2] for m in sys.modules if m.startswith('jobgate.families.')}\n"
        "declared = {m.split('.')[3] for m in sys.modules if m.startswith('jobgate._generated.declared.')}\n"
        "print(sorted(families), sorted(declared))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['mlkube'] ['mlkube']"
