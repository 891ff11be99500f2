"""``policy.plain`` (policy objects checked without pydantic) held to ``policy.models``.

Whatever the plain check accepts, the models accept too and give the same dict, in the same key
order; whatever the models refuse, the plain check leaves to them (None). Every field of a full
policy of each kind is replaced in turn by values of every wrong type and past every bound.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import ValidationError

from jobgate.policy.models import parse_policy
from jobgate.policy.plain import parse_policy_plain
from testkit.policy_set import policy_set

SELECTOR = {
    "matchLabels": {"tier": "research"},
    "matchExpressions": [
        {"key": "team", "operator": "In", "values": ["a", "b"]},
        {"key": "gone", "operator": "DoesNotExist"},
    ],
}
SPEC: dict[str, Any] = {
    "match": {
        "families": ["kubeflow", "volcano"],
        "kinds": [{"group": "kubeflow.org", "kind": "PyTorchJob"}],
        "objectSelector": SELECTOR,
    },
    "priority": 5,
    "enforcementAction": "Warn",
    "existingViolations": "Deny",
    "defaults": {
        "queue": "q",
        "priorityClassName": "high",
        "schedulerName": "volcano",
        "ttlSecondsAfterFinished": 60,
        "activeDeadlineSeconds": 600,
        "labels": {"cost-center": "ml", "example.com/team": ""},
        "kueueQueueName": "lq",
    },
    "limits": {
        "maxReplicasPerRole": 4,
        "maxReplicasPerJob": 8,
        "maxGPUsPerPod": 8,
        "maxGPUsPerJob": 64,
        "gpuResources": [{"name": "nvidia.com/gpu"}, {"name": "nvidia.com/mig-*", "weight": 0.25}],
        "gpuDeviceClasses": [{"name": "gpu.nvidia.com", "weight": 0}, {"name": "gpu.example.com*", "weight": 2}],
        "maxTTLSecondsAfterFinished": 3600,
        "maxActiveDeadlineSeconds": 86400,
    },
    "require": {
        "labels": [{"key": "team", "values": ["vision"]}, {"key": "example.com/owner"}],
        "ttlSecondsAfterFinished": True,
        "activeDeadlineSeconds": False,
        "queues": ["q", "r"],
        "priorityClassNames": ["high"],
        "schedulerNames": ["volcano"],
        "imageRegistries": ["registry.example.com", "ghcr.io/org/"],
        "forbid": ["hostNetwork", "privileged", "hostPath", "hostPID", "hostIPC"],
    },
}
STATUS = {
    "conditions": [
        {
            "type": "Ready",
            "status": "True",
            "reason": "Ready",
            "message": "ok",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
            "observedGeneration": 2,
        }
    ],
    "observedGeneration": 2,
    "matchedNamespaces": 3,
    "totalViolations": 1,
    "violations": [{"namespace": "ns", "name": "j", "kind": "TFJob", "apiVersion": "kubeflow.org/v1", "message": "m"}],
}
CLUSTER = {
    "apiVersion": "policy.jobgate.io/v1alpha1",
    "kind": "ClusterTrainingJobPolicy",
    "metadata": {"name": "full", "labels": {"a": "b"}, "annotations": None, "generation": 2},
    "spec": {**SPEC, "namespaceSelector": SELECTOR},
    "status": STATUS,
}
NAMESPACED = {
    "apiVersion": "policy.jobgate.io/v1alpha1",
    "kind": "TrainingJobPolicy",
    "metadata": {"name": "full", "namespace": "ns"},
    "spec": SPEC,
}
MINIMAL = {"kind": "TrainingJobPolicy"}

WRONG: list[Any] = [None, "", "x" * 254, "5", 0, -1, 1, 2**31, -(2**31) - 1, True, 1.5, 0.0, float("inf"), [], {}]
WRONG += [[None], ["hostNetwork", "hostNetwork"], {"bogus": 1}, "Exists", "nvidia.com/*gpu", "UPPER/x", "a" * 64]


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*path, index))


def _variants(obj: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for path in _paths(obj):
        if not path or (path[0] == "metadata" and len(path) > 1):
            continue
        for wrong in [*WRONG, "drop", "extra"]:
            variant = copy.deepcopy(obj)
            parent = variant
            for step in path[:-1]:
                parent = parent[step]
            target = parent[path[-1]]
            if wrong == "drop":
                if isinstance(parent, dict):
                    del parent[path[-1]]
                else:
                    parent.pop(path[-1])
            elif wrong == "extra":
                if not isinstance(target, dict):
                    continue
                target["bogus"] = 1
            else:
                parent[path[-1]] = copy.deepcopy(wrong)
            yield variant


def _same(obj: dict[str, Any]) -> bool:
    """Asserts the plain check agrees with the models; True when it accepted the object itself."""
    plain = parse_policy_plain(copy.deepcopy(obj))
    try:
        parsed = parse_policy(copy.deepcopy(obj))
    except (ValidationError, ValueError):
        assert plain is None, obj
        return False
    if plain is not None:
        assert repr(plain) == repr(parsed), obj
    return plain is not None


@pytest.mark.parametrize("obj", [CLUSTER, NAMESPACED, MINIMAL], ids=["cluster", "namespaced", "minimal"])
def test_every_variant_agrees_with_the_models(obj: dict[str, Any]) -> None:
    assert _same(obj), "the full policy itself must take the plain path"
    accepted = sum(_same(variant) for variant in _variants(obj))
    assert accepted > 0 or obj is MINIMAL


def test_the_bench_set_takes_the_plain_path() -> None:
    for policy in policy_set(50, 10):
        assert _same(policy)


def test_a_plain_policy_is_a_copy() -> None:
    plain = parse_policy_plain(CLUSTER)
    assert plain is not None
    plain["metadata"]["labels"]["a"] = "changed"
    plain["spec"]["require"]["queues"].append("s")
    assert CLUSTER["metadata"]["labels"]["a"] == "b" and SPEC["require"]["queues"] == ["q", "r"]


def test_the_plain_tests_of_names_agree_with_the_patterns() -> None:
    """Each plain test (which spares compiling the patterns) decides exactly as its pattern."""
    import random
    import re

    from jobgate.policy import plain

    alphabet = "aZ09-_./*:\n é"
    rng = random.Random(30)
    samples = ["", "*", "a*", "nvidia.com/mig-*", "team", "cost-center", "registry.example.com/", "ghcr.io", "a" * 64]
    samples += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8))) for _ in range(20000)]
    for text in samples:
        assert plain.label_key_valid(text) == bool(re.match(plain.LABEL_KEY_RE, text)), text
        assert plain.label_value_valid(text) == bool(re.match(plain.LABEL_VALUE_RE, text)), text
        assert plain.registry_valid(text) == bool(re.match(plain.REGISTRY_RE, text)), text
        expected = bool(re.match(plain.GPU_NAME_RE, text)) and "*" not in text[:-1]
        assert plain.gpu_name_valid(text) == expected, text
