"""``PolicySet``: the resolutions it remembers equal a fresh resolution, for every job, namespace and label set."""

from __future__ import annotations

import itertools
from typing import Any

from jobgate.policy.gpu import DEFAULT_GPU_RESOURCES, pod_gpus
from jobgate.policy.images import normalise_image
from jobgate.policy.resolve import PolicySet, combine, effective_policy, select_policies
from jobgate.policy.snapshot import PolicySnapshot
from tests.unit.test_policy_fixtures import cluster, kubedl, kubeflow, namespaced, volcano

POLICIES = [
    cluster("gpus", {"limits": {"maxGPUsPerJob": 8}}),
    cluster("research", {"namespaceSelector": {"matchLabels": {"tier": "research"}}, "limits": {"maxGPUsPerPod": 2}}),
    cluster("kubeflow-only", {"match": {"families": ["kubeflow"]}, "require": {"labels": [{"key": "team"}]}}),
    cluster("vision", {"match": {"objectSelector": {"matchLabels": {"team": "vision"}}}, "defaults": {"queue": "v"}}),
    cluster("low", {"priority": 1, "defaults": {"queue": "low"}}),
    namespaced("local", "team-a", {"require": {"queues": ["v", "low", "a"]}}),
    namespaced("elsewhere", "team-b", {"limits": {"maxReplicasPerJob": 1}}),
]
NAMESPACES: list[tuple[str, dict[str, str] | None]] = [
    ("team-a", {"tier": "research"}),
    ("team-a", {"tier": "prod"}),
    ("team-b", None),
    ("other", {}),
]


def labelled(job: dict[str, Any], labels: dict[str, Any] | None) -> dict[str, Any]:
    if labels is not None:
        job["metadata"]["labels"] = labels
    return job


def jobs() -> list[dict[str, Any] | None]:
    return [
        None,
        kubedl(),
        labelled(kubedl(), {"team": "vision"}),
        labelled(kubedl(), {"team": "audio"}),
        kubeflow(),
        labelled(kubeflow(), {"team": "vision"}),
        volcano(),
    ]


def as_dict(effective: Any) -> dict[str, Any]:
    return {name: getattr(effective, name) for name in effective.__slots__}


def test_a_remembered_resolution_equals_a_fresh_one() -> None:
    policy_set = PolicySet(POLICIES)
    for _ in range(2):  # the second pass reads every result from the memo
        for (namespace, labels), job in itertools.product(NAMESPACES, jobs()):
            fresh = combine(select_policies(POLICIES, namespace, labels, job), namespace)
            assert as_dict(effective_policy(policy_set, namespace, labels, job)) == as_dict(fresh), (namespace, job)


def test_the_memo_is_used_and_shared_between_jobs_selecting_the_same_policies() -> None:
    policy_set = PolicySet(POLICIES)
    first = policy_set.effective("team-a", {"tier": "research"}, kubedl())
    assert policy_set.effective("team-a", {"tier": "research"}, kubedl()) is first
    other_labels = policy_set.effective("team-a", {"tier": "research"}, labelled(kubedl(), {"team": "audio"}))
    assert other_labels is first  # the objectSelector misses both: one selection, one effective policy
    assert policy_set.effective("team-a", {"tier": "research"}, labelled(kubedl(), {"team": "vision"})) is not first


def test_relabelling_a_namespace_resolves_afresh() -> None:
    policy_set = PolicySet(POLICIES)
    research = policy_set.effective("team-a", {"tier": "research"}, kubedl())
    prod = policy_set.effective("team-a", {"tier": "prod"}, kubedl())
    assert "maxGPUsPerPod" in research.limits and "maxGPUsPerPod" not in prod.limits


def test_a_job_with_unhashable_labels_is_still_resolved() -> None:
    job = labelled(kubedl(), {"team": ["not", "a", "string"]})
    effective = PolicySet(POLICIES).effective("team-a", {"tier": "prod"}, job)
    assert [ref.name for ref in effective.policies] == ["gpus", "low", "local"]


def test_the_memo_is_bounded() -> None:
    policy_set = PolicySet(POLICIES)
    policy_set.memo.limit = 3  # the one bound of all three memos
    for index in range(10):
        policy_set.effective("team-a", {"tier": f"prod-{index}"}, kubedl())
    assert all(len(memo) <= 3 for memo in (policy_set.memo.entries, policy_set._in_namespace, policy_set._combined))


def test_a_snapshot_gives_one_set_for_all_its_reviews() -> None:
    snapshot = PolicySnapshot(POLICIES, {"team-a": {"tier": "research"}})
    assert isinstance(snapshot.policies(), PolicySet) and snapshot.policies() is snapshot.policies()


def test_non_gpu_quantities_are_not_parsed_for_the_gpu_count() -> None:
    container = {"name": "a", "resources": {"limits": {"cpu": "lots", "nvidia.com/gpu": 2}}}
    count = pod_gpus({"spec": {"containers": [container]}}, DEFAULT_GPU_RESOURCES, "t")
    assert count.gpus == 2 and count.uncounted == []


def test_an_image_with_a_space_inside_is_malformed() -> None:
    assert normalise_image("registry.example.com/a b:1") is None
    assert normalise_image(" registry.example.com/ab:1\t") == "registry.example.com/ab"


# Selectors reading several keys, by expressions too, and one of a shape the selectors' own checks
# refuse (every label then goes into the memo keys).
WIDER = [
    *POLICIES,
    cluster(
        "wide",
        {
            "namespaceSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
            "match": {"objectSelector": {"matchExpressions": [{"key": "cost", "operator": "Exists"}]}},
            "limits": {"maxReplicasPerJob": 3},
        },
    ),
]
ODD = [*POLICIES, cluster("odd", {"match": {"objectSelector": {"matchLabels": ["team"]}}})]


def test_memo_keys_hold_only_the_labels_selectors_read() -> None:
    policy_set = PolicySet(POLICIES)
    assert (policy_set.memo.namespace_keys, policy_set.memo.object_keys) == (("tier",), ("team",))
    first = policy_set.effective("team-a", {"tier": "research", "x": "1"}, labelled(kubedl(), {"team": "v"}))
    # A label no selector reads (a policy default's, say) finds the same entry.
    again = policy_set.effective("team-a", {"tier": "research", "y": "2"}, labelled(kubedl(), {"team": "v", "c": "m"}))
    assert again is first and len(policy_set.memo.entries) == 1
    wider = PolicySet(WIDER).memo
    assert (wider.namespace_keys, wider.object_keys) == (("tier", "zone"), ("cost", "team"))
    assert PolicySet(ODD).memo.object_keys is None


def test_a_resolution_holds_the_kinds_field_map_and_keeps_its_plan() -> None:
    """A review reads the effective policy, the field map of the job's kind and their plan from the one
    entry the memo looked up: the map is the job's ``kind_map``, and the plan is made once and kept."""
    from jobgate.policy.kinds import kind_map
    from jobgate.policy.plan import _plan, resolved_plan

    policy_set = PolicySet(POLICIES)
    for job in (kubedl(), labelled(kubedl(), {"team": "vision"}), kubeflow(), volcano()):
        resolution = policy_set.memo.resolution("team-a", {"tier": "research"}, job)
        assert resolution is policy_set.memo.resolution("team-a", {"tier": "research"}, job)
        assert resolution.effective is policy_set.effective("team-a", {"tier": "research"}, job)
        assert resolution.kmap is kind_map(job)
        plan = resolved_plan(resolution)
        assert plan is resolution.plan is _plan(resolution.effective, kind_map(job))
        assert resolved_plan(resolution) is plan
    unserved = {"apiVersion": "example.com/v1", "kind": "Job", "metadata": {"name": "x"}}
    resolution = policy_set.memo.resolution("team-a", None, unserved)
    assert resolution.kmap is None and resolution.plan is None
    # A job whose labels cannot be hashed is resolved afresh, with its kind's map all the same.
    odd = labelled(kubedl(), {"team": ["vision"]})
    assert policy_set.memo.resolution("team-a", None, odd).kmap is kind_map(odd)


def test_remembered_resolutions_equal_fresh_ones_whatever_the_selectors_read() -> None:
    namespaces = [*NAMESPACES, ("team-a", {"tier": "research", "zone": "a"}), ("other", {"zone": "b"})]
    extra = [labelled(kubedl(), {"cost": "1"}), labelled(kubedl(), {"cost": "1", "team": "vision"})]
    for policies in (WIDER, ODD):
        policy_set = PolicySet(policies)
        for _ in range(2):
            for (namespace, labels), job in itertools.product(namespaces, [*jobs(), *extra]):
                fresh = combine(select_policies(policies, namespace, labels, job), namespace)
                remembered = effective_policy(policy_set, namespace, labels, job)
                assert as_dict(remembered) == as_dict(fresh), (namespace, labels, job)


def test_selects_alike_compares_what_the_memo_keys_hold() -> None:
    """``selects_alike`` answers as comparing the two jobs' memo keys does, for every pair of job
    versions, odd shapes included (a metadata or labels that is no map, a label that is no string)."""
    from jobgate.policy.memo import match_key

    odd: list[Any] = [
        {"apiVersion": "kubeflow.org/v1", "kind": "TFJob"},
        {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": "x"},
        {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"labels": ["team"]}},
        {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"labels": {"team": float("nan")}}},
        {"apiVersion": "kubeflow.org/v2", "kind": "TFJob", "metadata": {"labels": {"team": "vision"}}},
        {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"labels": {"team": "vision"}}},
    ]
    versions = [job for job in jobs() if job is not None] + odd
    for policies in (POLICIES, [*POLICIES, cluster("two", {"match": {"objectSelector": {"matchLabels": {"x": "y"}}}})]):
        policy_set = PolicySet(policies)
        for job, other in itertools.product(versions, repeat=2):
            keys = policy_set.memo.object_keys
            same_keys = match_key(job, keys) == match_key(other, keys)
            assert policy_set.selects_alike(job, other) == same_keys, (job, other)
