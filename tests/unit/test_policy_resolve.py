"""Selection and combination of policies into the effective policy; label selectors; images."""

from __future__ import annotations

import pytest

from jobgate.policy.gpu import DEFAULT_GPU_RESOURCES
from jobgate.policy.images import image_allowed, normalise_image
from jobgate.policy.resolve import conflicts, effective_policy, select_policies
from jobgate.policy.selectors import selector_errors, selector_matches
from tests.unit.test_policy_fixtures import cluster, kubedl, kubeflow, namespaced, volcano

# --- selectors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        (None, {}, True),
        ({}, {"a": "1"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "1"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]}, {"a": "2"}, True),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, True),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {"a": "1"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": ""}, False),
        ({"matchExpressions": [{"key": "a", "operator": "Bogus"}]}, {"a": ""}, False),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}, {"a": ""}, False),
    ],
)
def test_selector(selector: dict | None, labels: dict, expected: bool) -> None:
    assert selector_matches(selector, labels) is expected


def test_selector_errors_name_the_problem() -> None:
    assert "operator" in selector_errors({"matchExpressions": [{"key": "a", "operator": "Bogus"}]})[0]
    assert selector_errors({"matchLabels": {"a": "b"}}) == []


# --- images --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "name"),
    [
        ("python", "docker.io/library/python"),
        ("python:3.11", "docker.io/library/python"),
        ("library/python@sha256:" + "a" * 64, "docker.io/library/python"),
        ("pytorch/pytorch:2.1", "docker.io/pytorch/pytorch"),
        ("index.docker.io/pytorch/pytorch", "docker.io/pytorch/pytorch"),
        ("docker.io/python", "docker.io/library/python"),
        ("ghcr.io/org/img:1@sha256:" + "b" * 64, "ghcr.io/org/img"),
        ("registry.example.com:5000/ml/train:v1", "registry.example.com:5000/ml/train"),
        ("localhost/x", "localhost/x"),
        ("localhost:5000/x:1", "localhost:5000/x"),
        ("", None),
        ("a b", None),
    ],
)
def test_normalise_image(image: str, name: str | None) -> None:
    assert normalise_image(image) == name


@pytest.mark.parametrize(
    ("image", "entries", "allowed"),
    [
        ("python:3.11", ["docker.io"], True),
        ("python:3.11", ["docker.io/library/"], True),
        ("pytorch/pytorch", ["docker.io/library/"], False),
        ("ghcr.io/org/img", ["ghcr.io/org/"], True),
        ("ghcr.io/org-evil/img", ["ghcr.io/org/"], False),  # why the prefix must end in "/"
        ("ghcr.io/org/img", ["ghcr.io"], True),
        ("reg.example.com/x", ["reg.example.com:5000"], False),  # a port is part of the host
        ("reg.example.com:5000/x", ["reg.example.com:5000"], True),
        ("reg.example.com:5000/x", ["reg.example.com"], False),
        ("evil.io/ghcr.io/org/img", ["ghcr.io/org/"], False),
        ("GHCR.IO/org/img", ["ghcr.io/org/"], True),
    ],
)
def test_image_allowed(image: str, entries: list[str], allowed: bool) -> None:
    assert image_allowed(image, entries) is allowed


# --- selection -----------------------------------------------------------------------------------


def test_cluster_policy_by_namespace_selector_and_namespaced_in_its_own_namespace() -> None:
    policies = [
        cluster("all", {}),
        cluster("research", {"namespaceSelector": {"matchLabels": {"tier": "research"}}}),
        namespaced("mine", "ns", {}),
        namespaced("other", "elsewhere", {}),
    ]
    names = [p["metadata"]["name"] for p in select_policies(policies, "ns", {"tier": "research"}, kubeflow())]
    assert names == ["all", "research", "mine"]
    names = [p["metadata"]["name"] for p in select_policies(policies, "ns", {"tier": "prod"}, kubeflow())]
    assert names == ["all", "mine"]


def test_match_families_kinds_and_object_selector() -> None:
    by_family = cluster("f", {"match": {"families": ["volcano"]}})
    by_kind = cluster("k", {"match": {"kinds": [{"group": "kubeflow.org", "kind": "PyTorchJob"}]}})
    by_label = cluster("l", {"match": {"objectSelector": {"matchLabels": {"gpu": "yes"}}}})
    policies = [by_family, by_kind, by_label]
    assert [p["metadata"]["name"] for p in select_policies(policies, "ns", {}, volcano())] == ["f"]
    job = kubeflow()
    assert [p["metadata"]["name"] for p in select_policies(policies, "ns", {}, job)] == ["k"]
    job["metadata"]["labels"] = {"gpu": "yes"}
    assert [p["metadata"]["name"] for p in select_policies(policies, "ns", {}, job)] == ["k", "l"]
    # kubedl's TFJob is not kubeflow's PyTorchJob: the group matters.
    tf = kubedl()
    assert (
        select_policies(
            [cluster("k", {"match": {"kinds": [{"group": "kubeflow.org", "kind": "TFJob"}]}})], "ns", {}, tf
        )
        == []
    )


# --- combination ---------------------------------------------------------------------------------


def test_limits_most_restrictive_per_action() -> None:
    policies = [
        cluster("a", {"limits": {"maxGPUsPerJob": 64}}),
        cluster("b", {"limits": {"maxGPUsPerJob": 32}}),
        cluster("w", {"enforcementAction": "Warn", "limits": {"maxGPUsPerJob": 16}}),
        cluster("w2", {"enforcementAction": "Warn", "limits": {"maxGPUsPerJob": 48}}),  # dominated by b
    ]
    eff = effective_policy(policies, "ns", {}, kubeflow())
    entries = eff.limits["maxGPUsPerJob"]
    assert [(e.value, e.action, e.source.name) for e in entries] == [(16, "Warn", "w"), (32, "Deny", "b")]
    assert eff.limit("maxGPUsPerJob").value == 32


def test_a_warn_limit_never_becomes_deny() -> None:
    eff = effective_policy(
        [cluster("w", {"enforcementAction": "Warn", "limits": {"maxGPUsPerJob": 8}})], "ns", {}, None
    )
    assert [e.action for e in eff.limits["maxGPUsPerJob"]] == ["Warn"]


def test_allow_lists_intersect_and_empty_intersection_is_a_conflict() -> None:
    policies = [
        cluster("a", {"require": {"queues": ["q1", "q2"]}}),
        namespaced("b", "ns", {"require": {"queues": ["q3"]}}),
    ]
    eff = effective_policy(policies, "ns", {}, None)
    assert len(eff.allow["queues"]) == 2
    (conflict,) = eff.conflicts
    assert conflict.field == "require.queues" and conflict.action == "Deny"
    assert {p.name for p in conflict.policies} == {"a", "b"}
    policies[1]["spec"]["require"]["queues"] = ["q2", "q9"]
    assert effective_policy(policies, "ns", {}, None).conflicts == []


def test_allow_list_conflict_with_a_warn_policy_only_warns() -> None:
    policies = [
        cluster("a", {"require": {"schedulerNames": ["volcano"]}}),
        cluster("w", {"enforcementAction": "Warn", "require": {"schedulerNames": ["kueue"]}}),
    ]
    (conflict,) = effective_policy(policies, "ns", {}, None).conflicts
    assert conflict.action == "Warn"


def test_registry_lists_intersect_by_prefix() -> None:
    policies = [
        cluster("a", {"require": {"imageRegistries": ["ghcr.io"]}}),
        cluster("b", {"require": {"imageRegistries": ["ghcr.io/org/"]}}),
    ]
    assert effective_policy(policies, "ns", {}, None).conflicts == []
    policies[1]["spec"]["require"]["imageRegistries"] = ["quay.io/org/"]
    assert [c.field for c in effective_policy(policies, "ns", {}, None).conflicts] == ["require.imageRegistries"]


def test_defaults_namespaced_beats_cluster_then_priority() -> None:
    policies = [
        cluster("low", {"priority": 1, "defaults": {"queue": "low"}}),
        cluster("high", {"priority": 5, "defaults": {"queue": "high", "schedulerName": "volcano"}}),
    ]
    eff = effective_policy(policies, "ns", {}, None)
    assert eff.defaults["queue"].value == "high" and eff.defaults["queue"].source.name == "high"
    policies.append(namespaced("mine", "ns", {"priority": -100, "defaults": {"queue": "mine"}}))
    eff = effective_policy(policies, "ns", {}, None)
    assert eff.defaults["queue"].value == "mine" and eff.defaults["queue"].source.kind == "TrainingJobPolicy"
    assert eff.defaults["schedulerName"].value == "volcano"  # per field: the namespaced policy sets no scheduler


def test_equal_priority_cluster_defaults_conflict_and_give_no_default() -> None:
    policies = [
        cluster("a", {"defaults": {"queue": "qa", "labels": {"team": "x"}}}),
        cluster("b", {"defaults": {"queue": "qb", "labels": {"team": "x"}}}),
    ]
    eff = effective_policy(policies, "ns", {}, None)
    assert "queue" not in eff.defaults
    assert eff.default_labels["team"].value == "x"  # same value: no conflict
    (conflict,) = eff.conflicts
    assert conflict.field == "defaults.queue" and {p.name for p in conflict.policies} == {"a", "b"}


def test_gpu_resources_union_with_largest_weight() -> None:
    policies = [
        cluster("a", {"limits": {"gpuResources": [{"name": "nvidia.com/mig-*", "weight": 0.25}]}}),
        cluster("b", {"limits": {"gpuResources": [{"name": "nvidia.com/mig-*", "weight": 0.5}, {"name": "x/gpu"}]}}),
    ]
    eff = effective_policy(policies, "ns", {}, None)
    # Added to the built-in list: nvidia.com/gpu and the others stay counted.
    assert dict(eff.gpu_resources) == {**dict(DEFAULT_GPU_RESOURCES), "nvidia.com/mig-*": 0.5, "x/gpu": 1}


def test_result_does_not_depend_on_input_order() -> None:
    policies = [cluster(n, {"limits": {"maxGPUsPerJob": 8}}) for n in "cab"]
    a = effective_policy(policies, "ns", {}, None)
    b = effective_policy(list(reversed(policies)), "ns", {}, None)
    assert a == b and a.limits["maxGPUsPerJob"][0].source.name == "a"


def test_conflicts_are_listed_in_the_earlier_kind_order() -> None:
    """A policy's status joins its conflicts' messages in the order ``conflicts`` finds them, kind by
    kind (jobgate.policy.kinds.KINDS): Kubeflow's kinds come before Volcano's, as before each family
    kept its own field map."""
    policies = [
        cluster("every", {"defaults": {"queue": "q-every"}}),
        cluster("volcano-only", {"defaults": {"queue": "q-volcano"}, "match": {"families": ["volcano"]}}),
        cluster("kubeflow-only", {"defaults": {"queue": "q-kubeflow"}, "match": {"families": ["kubeflow"]}}),
    ]
    found = [(c.field, tuple(p.name for p in c.policies)) for c in conflicts(policies)]
    assert found == [
        ("defaults.queue", ("every", "kubeflow-only")),
        ("defaults.queue", ("every", "volcano-only")),
    ]


def test_the_kinds_keep_their_earlier_order() -> None:
    """The families' kinds in the order of the field maps before the families held them; a family
    added since follows, in registration order."""
    from jobgate.families import FAMILY_NAMES, family
    from jobgate.policy.kinds import EARLIER_ORDER, KINDS

    earlier = [
        ("training.kubedl.io", "TFJob"),
        ("training.kubedl.io", "PyTorchJob"),
        ("training.kubedl.io", "XGBoostJob"),
        ("training.kubedl.io", "MPIJob"),
        ("training.kubedl.io", "XDLJob"),
        ("training.kubedl.io", "MarsJob"),
        ("kubeflow.org", "TFJob"),
        ("kubeflow.org", "PyTorchJob"),
        ("kubeflow.org", "XGBoostJob"),
        ("kubeflow.org", "PaddleJob"),
        ("kubeflow.org", "JAXJob"),
        ("kubeflow.org", "MPIJob"),
        ("mxnet.mlkube.io", "MxJob"),
        ("batch.tensorstack.dev", "GenericJob"),
        ("diengine.opendilab.org", "DIJob"),
        ("batch.volcano.sh", "Job"),
    ]
    assert list(KINDS)[: len(earlier)] == earlier
    later = [family(name) for name in FAMILY_NAMES if name not in EARLIER_ORDER]
    assert [KINDS[key].family for key in list(KINDS)[len(earlier) :]] == [
        record.name for record in later if record.policy is not None for _ in record.kinds
    ]


def test_conflicts_for_status() -> None:
    policies = [
        cluster("a", {"defaults": {"queue": "qa"}}),
        cluster("b", {"defaults": {"queue": "qb"}, "match": {"families": ["volcano"]}}),
        cluster("c", {"namespaceSelector": {"matchLabels": {"x": "y"}}, "require": {"queues": ["z"]}}),
        namespaced("n", "team", {"require": {"queues": ["w"]}}),
    ]
    found = {(c.field, tuple(p.name for p in c.policies)) for c in conflicts(policies)}
    assert ("defaults.queue", ("a", "b")) in found
    assert ("require.queues", ("c", "n")) in found
    # With the namespaces known, c does not select "team": no clash with n.
    found = {(c.field, tuple(p.name for p in c.policies)) for c in conflicts(policies, {"team": {}})}
    assert ("require.queues", ("c", "n")) not in found
