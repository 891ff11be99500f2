"""Policy models (what a malformed policy gets), the generated CRDs (structural), examples and explain."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from jobgate.policy.crds import policy_crds
from jobgate.policy.explain import explain_text
from jobgate.policy.models import LABEL_KEY_RE, REGISTRY_RE, parse_policy
from jobgate.policy.resolve import effective_policy
from tests.unit.test_policy_fixtures import cluster, namespaced

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "policies"


def test_examples_parse_and_resolve() -> None:
    objects = [yaml.safe_load(p.read_text()) for p in sorted(EXAMPLES.glob("*.yaml"))]
    assert {o["kind"] for o in objects} == {"ClusterTrainingJobPolicy", "TrainingJobPolicy"}
    parsed = [parse_policy(o) for o in objects]
    eff = effective_policy(parsed, "team-a", {"tier": "research"}, None)
    assert eff.defaults["queue"].source.name == "team-a-defaults"
    assert eff.limit("maxGPUsPerJob").value == 32


def test_parse_fills_defaults() -> None:
    spec = parse_policy(cluster("p", {}))["spec"]
    assert spec == {"priority": 0, "enforcementAction": "Deny", "existingViolations": "Allow", "exceptions": "Allow"}


@pytest.mark.parametrize(
    "spec",
    [
        {"limits": {"maxGpusPerJob": 3}},  # unknown field: a typo must not silently drop a limit
        {"limits": {"maxGPUsPerJob": -1}},
        {"limits": {"maxGPUsPerPod": 9, "maxGPUsPerJob": 8}},
        {"limits": {"maxReplicasPerRole": 9, "maxReplicasPerJob": 8}},
        {"limits": {"gpuResources": [{"name": "nvidia.com/gpu", "weight": -1}]}},
        {"limits": {"gpuDeviceClasses": [{"name": "GPU.nvidia.com"}]}},
        {"limits": {"gpuDeviceClasses": [{"name": "gpu.*.com"}]}},
        {"limits": {"gpuDeviceClasses": [{"name": "gpu.nvidia.com"}, {"name": "gpu.nvidia.com", "weight": 2}]}},
        {"limits": {"gpuDeviceClasses": [{"name": "gpu.nvidia.com", "weight": -0.5}]}},
        {"limits": {"gpuResources": [{"name": "nvidia.com/*gpu"}]}},
        {"limits": {"gpuResources": [{"name": "a/b"}, {"name": "a/b"}]}},
        {"require": {"imageRegistries": ["ghcr.io/org"]}},  # a prefix must end in "/"
        {"require": {"imageRegistries": ["https://ghcr.io/"]}},
        {"require": {"forbid": ["hostUsers"]}},
        {"require": {"forbid": ["hostPID", "hostPID"]}},
        {"require": {"queues": ["a", "a"]}},
        {"require": {"labels": [{"key": "bad key!"}]}},
        {"require": {"labels": [{"key": "team"}, {"key": "team"}]}},
        {"defaults": {"labels": {"team": "not a value!"}}},
        {"defaults": {"ttlSecondsAfterFinished": 100}, "limits": {"maxTTLSecondsAfterFinished": 10}},
        {"enforcementAction": "deny"},
        {"existingViolations": "Ignore"},
        {"match": {"families": ["slurm"]}},
        {"match": {"objectSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}},
    ],
)
def test_malformed_policies_are_refused(spec: dict) -> None:
    with pytest.raises(ValidationError):
        parse_policy(cluster("p", spec))


def test_namespace_selector_only_on_cluster_policies() -> None:
    parse_policy(cluster("p", {"namespaceSelector": {"matchLabels": {"a": "b"}}}))
    with pytest.raises(ValidationError):
        parse_policy(namespaced("p", "ns", {"namespaceSelector": {}}))


@pytest.mark.parametrize("entry", ["docker.io", "ghcr.io/", "ghcr.io/org/", "reg.example.com:5000/a/b/", "localhost"])
def test_registry_entries_accepted(entry: str) -> None:
    assert re.match(REGISTRY_RE, entry)
    parse_policy(cluster("p", {"require": {"imageRegistries": [entry]}}))


def _walk(node: Any, path: str = "") -> list[tuple[str, dict]]:
    out = []
    if isinstance(node, dict):
        out.append((path, node))
        for key, value in node.get("properties", {}).items():
            out.extend(_walk(value, f"{path}.{key}"))
        if isinstance(node.get("items"), dict):
            out.extend(_walk(node["items"], f"{path}[]"))
        if isinstance(node.get("additionalProperties"), dict):
            out.extend(_walk(node["additionalProperties"], f"{path}{{}}"))
    return out


def test_crd_strings_under_cel_rules_are_bounded() -> None:
    # kube-apiserver 1.36 refused the CRD (rule cost 26x over budget) while label values were unbounded.
    spec = policy_crds()[0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["properties"]["defaults"]["properties"]["labels"]["additionalProperties"]["maxLength"] == 63


def test_crds_are_structural() -> None:
    crds = policy_crds()
    assert [c["spec"]["scope"] for c in crds] == ["Cluster", "Namespaced"]
    text = json.dumps(crds)
    assert "$ref" not in text and "anyOf" not in text and "$defs" not in text and '"title"' not in text
    for crd in crds:
        version = crd["spec"]["versions"][0]
        assert version["subresources"] == {"status": {}}
        assert [c["name"] for c in version["additionalPrinterColumns"]] == ["Action", "Priority", "Violations", "Age"]
        schema = version["schema"]["openAPIV3Schema"]
        for path, node in _walk(schema):
            assert "type" in node, path
            if node["type"] == "object" and path not in (".metadata",):
                assert "properties" in node or "additionalProperties" in node, path
            for key in ("exclusiveMinimum", "exclusiveMaximum"):
                assert isinstance(node.get(key, True), bool), path
            # CEL needs bounded lists and strings to estimate its cost.
            if node["type"] == "array":
                assert "maxItems" in node, path


def _rules(node: Any) -> list[str]:
    """Every CEL rule anywhere in a CRD."""
    if isinstance(node, dict):
        own = [v["rule"] for v in node.get("x-kubernetes-validations", [])]
        return own + [r for value in node.values() for r in _rules(value)]
    if isinstance(node, list):
        return [r for value in node for r in _rules(value)]
    return []


def test_crd_cel_rules_present() -> None:
    cluster_crd, namespaced_crd = policy_crds()
    spec = cluster_crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert "namespaceSelector" in spec["properties"]
    assert (
        "namespaceSelector"
        not in namespaced_crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    )
    rules = _rules(cluster_crd)
    for needle in ("maxGPUsPerPod <= self.maxGPUsPerJob", "maxTTLSecondsAfterFinished", "self[k].matches("):
        assert needle in " ".join(rules)
    weight = spec["properties"]["limits"]["properties"]["gpuResources"]["items"]["properties"]["weight"]
    assert weight["minimum"] == 0 and "exclusiveMinimum" not in weight  # weight 0 takes a name off the list
    classes = spec["properties"]["limits"]["properties"]["gpuDeviceClasses"]
    assert classes["x-kubernetes-list-map-keys"] == ["name"]
    assert classes["items"]["properties"]["weight"]["minimum"] == 0
    require = spec["properties"]["require"]["properties"]
    assert require["forbid"]["items"]["enum"] == ["hostNetwork", "privileged", "hostPath", "hostPID", "hostIPC"]
    assert require["forbid"]["x-kubernetes-list-type"] == "set"  # duplicates refused by the apiserver
    assert require["labels"]["x-kubernetes-list-map-keys"] == ["key"]
    assert "x-kubernetes-validations" in require["imageRegistries"]["items"]
    assert spec["properties"]["limits"]["properties"]["gpuResources"]["x-kubernetes-list-map-keys"] == ["name"]
    # Regular expressions are raw CEL strings: "\." in a plain CEL string is an invalid escape.
    assert any(f"r'{LABEL_KEY_RE}'" in rule for rule in rules)


def test_explain_names_the_source_of_every_value_and_conflicts() -> None:
    policies = [
        cluster("gpus", {"limits": {"maxGPUsPerJob": 32}, "defaults": {"queue": "a"}}),
        cluster("other", {"defaults": {"queue": "b"}, "require": {"queues": ["a"], "forbid": ["hostNetwork"]}}),
        namespaced("mine", "ns", {"defaults": {"labels": {"team": "x"}}, "require": {"labels": [{"key": "team"}]}}),
    ]
    text = explain_text(effective_policy(policies, "ns", {}, None))
    assert "maxGPUsPerJob: 32 from ClusterTrainingJobPolicy gpus [Deny" in text
    assert "labels[team]: 'x' from TrainingJobPolicy ns/mine" in text
    assert "queues: a from ClusterTrainingJobPolicy other" in text
    assert "forbid hostNetwork" in text and "label team from TrainingJobPolicy ns/mine" in text
    assert "defaults.queue: ClusterTrainingJobPolicy gpus, ClusterTrainingJobPolicy other" in text
    assert "built-in list" in text


def test_pure_modules_import_nothing_of_jobgate_and_not_pydantic() -> None:
    code = (
        "import sys\n"
        "import jobgate.policy.check, jobgate.policy.resolve, jobgate.policy.explain\n"
        "bad = [m for m in sys.modules if m.startswith(('jobgate.webhook', 'jobgate.controller', 'pydantic'))]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
