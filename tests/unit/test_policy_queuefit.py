"""require.fitsQueue: job totals as Kueue and Volcano count them, the most a queue can ever give, and
the findings (jobgate.policy.queuefit, .podrequests, .queueobjects)."""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

import pytest

from jobgate.engine.context import ReviewContext
from jobgate.policy.check import policy_findings
from jobgate.policy.kinds import kind_map
from jobgate.policy.podrequests import gang_minimum, kueue_pod_sets, volcano_tasks
from jobgate.policy.queuefit import (
    FIT,
    MISCONFIGURED,
    NOT_MODELLED,
    OBJECTS_MISSING,
    QuotaTree,
    flavor_rejects,
    format_amount,
    queue_outcomes,
)
from jobgate.policy.queueobjects import CLUSTER, QueueObjects, queue_objects
from jobgate.policy.resolve import PolicySet, effective_policy

KUEUE = "kueue.x-k8s.io/v1beta1"
NS = "ml"


def pod(gpus: int = 8, cpu: Any = 4, memory: str = "32Gi", **spec: Any) -> dict[str, Any]:
    return {
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "i",
                    "resources": {"limits": {"nvidia.com/gpu": gpus, "cpu": cpu, "memory": memory}},
                }
            ],
            **spec,
        }
    }


def pytorch(workers: int = 4, queue: str | None = "team-a", **worker_spec: Any) -> dict[str, Any]:
    labels = {"kueue.x-k8s.io/queue-name": queue} if queue else {}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "j", "namespace": NS, "labels": labels},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": pod()},
                "Worker": {"replicas": workers, "template": pod(**worker_spec)},
            }
        },
    }


def flavor(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def cluster_queue(
    name: str = "gpu-cq",
    flavors: list[tuple[str, dict[str, Any]]] | None = None,
    covered: tuple[str, ...] = ("cpu", "memory", "nvidia.com/gpu"),
    **spec: Any,
) -> dict[str, Any]:
    """A ClusterQueue with one resource group; ``flavors``: (name, {resource: nominal or quota dict})."""
    flavors = flavors if flavors is not None else [("a100", {"cpu": 256, "memory": "2Ti", "nvidia.com/gpu": 32})]
    group = {
        "coveredResources": list(covered),
        "flavors": [
            {
                "name": fname,
                "resources": [
                    {"name": r, **(q if isinstance(q, dict) else {"nominalQuota": q})} for r, q in quotas.items()
                ],
            }
            for fname, quotas in flavors
        ],
    }
    return {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {"namespaceSelector": {}, "resourceGroups": [group], **spec},
    }


def local_queue(name: str = "team-a", cq: str = "gpu-cq", namespace: str = NS, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cq, **spec},
    }


def cohort(name: str, parent: str | None = None, quotas: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if parent:
        spec["parentName"] = parent
    if quotas:
        spec["resourceGroups"] = [
            {
                "coveredResources": list(quotas),
                "flavors": [
                    {
                        "name": "a100",
                        "resources": [
                            {"name": r, **(q if isinstance(q, dict) else {"nominalQuota": q})}
                            for r, q in quotas.items()
                        ],
                    }
                ],
            }
        ]
    return {"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": name}, "spec": spec}


def store(*objects: dict[str, Any], flavors: tuple[str, ...] = ("a100",)) -> QueueObjects:
    return queue_objects([*(flavor(f) for f in flavors), *objects])


def outcomes(job: dict[str, Any], objects: QueueObjects | None, labels: dict[str, str] | None = None) -> list[Any]:
    kmap = kind_map(job)
    assert kmap is not None
    return queue_outcomes(job, kmap, objects, NS, namespace_labels=labels or {"kubernetes.io/metadata.name": NS})


def rules(found: list[Any]) -> list[str]:
    return [o.rule for o in found]


# --- Kueue ------------------------------------------------------------------------------------------


def test_a_job_within_nominal_quota_fits() -> None:
    assert outcomes(pytorch(workers=3), store(cluster_queue(), local_queue())) == []


def test_a_job_over_the_quota_is_refused_naming_queues_resource_and_flavors() -> None:
    (found,) = outcomes(pytorch(workers=4), store(cluster_queue(), local_queue()))
    assert found.rule == FIT
    assert found.value == "team-a"
    assert found.path == ("metadata", "labels", found.path[2]) and str(found.path[2]) == "kueue.x-k8s.io/queue-name"
    message = found.message
    assert "LocalQueue ml/team-a (ClusterQueue gpu-cq)" in message
    assert "nvidia.com/gpu 40 (Master 1 × 8, Worker 4 × 8)" in message
    assert "the most the ClusterQueue can ever give is 32" in message
    assert "flavors considered: a100: nvidia.com/gpu at most 32 (nominalQuota 32)" in message


def test_one_pod_set_over_every_flavor_is_named() -> None:
    quotas = {"cpu": 256, "memory": "2Ti", "nvidia.com/gpu": 16}
    cq = cluster_queue(flavors=[("a100", quotas), ("h100", quotas)])
    # 32 GPUs in all fit the two flavors' 32, but the Worker's 24 fit neither.
    (found,) = outcomes(pytorch(workers=3), store(cq, local_queue(), flavors=("a100", "h100")))
    assert "pod set Worker asks nvidia.com/gpu 24 (3 × 8)" in found.message
    assert "the most the ClusterQueue can ever give it in one flavor is 16" in found.message


def test_missing_local_queue_is_misconfigured() -> None:
    (found,) = outcomes(pytorch(queue="nope"), store(cluster_queue(), local_queue()))
    assert found.rule == MISCONFIGURED and "LocalQueue ml/nope does not exist" in found.message


def test_local_queue_in_another_namespace_does_not_count() -> None:
    (found,) = outcomes(pytorch(), store(cluster_queue(), local_queue(namespace="other")))
    assert found.rule == MISCONFIGURED


def test_missing_cluster_queue_is_misconfigured() -> None:
    (found,) = outcomes(pytorch(), store(local_queue(cq="gone")))
    assert found.rule == MISCONFIGURED and "ClusterQueue gone, which does not exist" in found.message


@pytest.mark.parametrize("policy", ["Hold", "HoldAndDrain"])
def test_stopped_cluster_queue_is_misconfigured(policy: str) -> None:
    (found,) = outcomes(pytorch(workers=1), store(cluster_queue(stopPolicy=policy), local_queue()))
    assert found.rule == MISCONFIGURED and f"is stopped (stopPolicy {policy})" in found.message


def test_stopped_local_queue_is_misconfigured() -> None:
    (found,) = outcomes(pytorch(workers=1), store(cluster_queue(), local_queue(stopPolicy="Hold")))
    assert found.rule == MISCONFIGURED and "LocalQueue ml/team-a is stopped" in found.message


def test_stop_policy_none_admits() -> None:
    assert outcomes(pytorch(workers=1), store(cluster_queue(stopPolicy="None"), local_queue())) == []


def test_namespace_selector_leaving_the_namespace_out_is_misconfigured() -> None:
    cq = cluster_queue(namespaceSelector={"matchLabels": {"team": "ml"}})
    (found,) = outcomes(pytorch(workers=1), store(cq, local_queue()), {"kubernetes.io/metadata.name": NS})
    assert found.rule == MISCONFIGURED and "does not select namespace ml" in found.message
    assert outcomes(pytorch(workers=1), store(cq, local_queue()), {"team": "ml"}) == []


def test_null_namespace_selector_selects_nothing() -> None:
    cq = cluster_queue()
    del cq["spec"]["namespaceSelector"]
    (found,) = outcomes(pytorch(workers=1), store(cq, local_queue()))
    assert found.rule == MISCONFIGURED and "selects no namespace" in found.message


def test_unknown_namespace_labels_warn_instead_of_refusing() -> None:
    cq = cluster_queue(namespaceSelector={"matchLabels": {"team": "ml"}})
    job = pytorch(workers=1)
    kmap = kind_map(job)
    assert kmap is not None
    objects = store(cq, local_queue())
    found = queue_outcomes(
        job, kmap, objects, NS, namespace_labels={"kubernetes.io/metadata.name": NS}, labels_known=False
    )
    assert rules(found) == [NOT_MODELLED]


def test_missing_resource_flavor_is_misconfigured() -> None:
    (found,) = outcomes(pytorch(workers=1), store(cluster_queue(), local_queue(), flavors=()))
    assert found.rule == MISCONFIGURED and "ResourceFlavor a100, which does not exist" in found.message


def test_a_resource_no_group_covers_is_never_admitted() -> None:
    cq = cluster_queue(flavors=[("a100", {"cpu": 256, "memory": "2Ti"})], covered=("cpu", "memory"))
    (found,) = outcomes(pytorch(workers=1), store(cq, local_queue()))
    assert found.rule == FIT and "no resource group of the ClusterQueue covers nvidia.com/gpu" in found.message


def test_pods_are_counted_when_the_cluster_queue_has_quota_for_them() -> None:
    cq = cluster_queue(
        flavors=[("a100", {"cpu": 256, "memory": "2Ti", "nvidia.com/gpu": 64, "pods": 4})],
        covered=("cpu", "memory", "nvidia.com/gpu", "pods"),
    )
    (found,) = outcomes(pytorch(workers=4), store(cq, local_queue()))
    assert found.rule == FIT and "pods 5" in found.message
    assert outcomes(pytorch(workers=3), store(cq, local_queue())) == []


def test_borrowing_from_the_cohort_up_to_the_borrowing_limit() -> None:
    mine = cluster_queue(
        cohort="org",
        flavors=[("a100", {"cpu": 256, "memory": "2Ti", "nvidia.com/gpu": {"nominalQuota": 16, "borrowingLimit": 16}})],
    )
    other = cluster_queue(name="other", cohort="org")
    objects = store(mine, other, local_queue())
    assert outcomes(pytorch(workers=3), objects) == []
    (found,) = outcomes(pytorch(workers=4), objects)
    assert "nominalQuota 16, borrowingLimit 16, cohort org" in found.message


def test_without_borrowing_limit_the_whole_cohort_can_be_borrowed() -> None:
    mine = cluster_queue(cohort="org", flavors=[("a100", {"cpu": 256, "memory": "2Ti", "nvidia.com/gpu": 16})])
    other = cluster_queue(name="other", cohort="org")  # 32 GPUs, lends them all
    assert outcomes(pytorch(workers=5), store(mine, other, local_queue())) == []
    (found,) = outcomes(pytorch(workers=6), store(mine, other, local_queue()))
    assert "the most the ClusterQueue can ever give is 48" in found.message


def test_a_lending_limit_keeps_part_of_a_members_quota() -> None:
    mine = cluster_queue(cohort="org", flavors=[("a100", {"cpu": 256, "memory": "2Ti", "nvidia.com/gpu": 16})])
    other = cluster_queue(
        name="other",
        cohort="org",
        flavors=[("a100", {"cpu": 256, "memory": "2Ti", "nvidia.com/gpu": {"nominalQuota": 32, "lendingLimit": 8}})],
    )
    tree = QuotaTree(store(mine, other), mine)
    assert tree.potential_available("a100", "nvidia.com/gpu") == 24


def test_hierarchical_cohorts_lend_their_own_quota_capped_by_their_borrowing_limit() -> None:
    mine = cluster_queue(cohort="team", flavors=[("a100", {"cpu": 256, "memory": "2Ti", "nvidia.com/gpu": 8})])
    team = cohort("team", parent="org", quotas={"nvidia.com/gpu": {"nominalQuota": 8, "borrowingLimit": 4}})
    org = cohort("org", quotas={"nvidia.com/gpu": 100})
    tree = QuotaTree(store(mine, team, org), mine)
    # 8 own + 8 of team's + at most 4 borrowed by team from org.
    assert tree.potential_available("a100", "nvidia.com/gpu") == 20
    team_unbounded = cohort("team", parent="org", quotas={"nvidia.com/gpu": 8})
    tree = QuotaTree(store(mine, team_unbounded, org), mine)
    assert tree.potential_available("a100", "nvidia.com/gpu") == 116


def test_v1beta2_cohort_name_is_read() -> None:
    mine = cluster_queue(cohortName="org", flavors=[("a100", {"cpu": 256, "memory": "2Ti", "nvidia.com/gpu": 16})])
    mine["apiVersion"] = "kueue.x-k8s.io/v1beta2"
    other = cluster_queue(name="other", cohortName="org")
    assert QuotaTree(store(mine, other), mine).potential_available("a100", "nvidia.com/gpu") == 48


def test_a_cohort_cycle_is_misconfigured() -> None:
    mine = cluster_queue(cohort="a")
    objects = store(mine, local_queue(), cohort("a", parent="b"), cohort("b", parent="a"))
    (found,) = outcomes(pytorch(workers=1), objects)
    assert found.rule == MISCONFIGURED and "cycle" in found.message


def test_pod_sets_split_across_flavors_fit() -> None:
    cq = cluster_queue(
        flavors=[
            ("a100", {"cpu": 256, "memory": "2Ti", "nvidia.com/gpu": 24}),
            ("h100", {"cpu": 256, "memory": "2Ti", "nvidia.com/gpu": 16}),
        ]
    )
    job = pytorch(workers=2)  # Master 8 → a100, Worker 16 → a100 (24) first fit
    assert outcomes(job, store(cq, local_queue(), flavors=("a100", "h100"))) == []
    job = pytorch(workers=3)  # Master 8 + Worker 24 = 32 > 24; Worker 24 in a100, Master 8 in h100 fits
    found = outcomes(job, store(cq, local_queue(), flavors=("a100", "h100")))
    # Kueue's first fit puts Master in a100, then Worker (24) fits nowhere: only the other order fits.
    assert rules(found) == [NOT_MODELLED] and "only as Master → h100, Worker → a100" in found[0].message


def test_two_flavors_each_too_small_for_the_job_refuse_it() -> None:
    cq = cluster_queue(
        flavors=[
            ("a100", {"cpu": 256, "memory": "2Ti", "nvidia.com/gpu": 16}),
            ("h100", {"cpu": 256, "memory": "2Ti", "nvidia.com/gpu": 16}),
        ]
    )
    (found,) = outcomes(pytorch(workers=4), store(cq, local_queue(), flavors=("a100", "h100")))
    assert found.rule == FIT and "it asks nvidia.com/gpu 40" in found.message
    assert "the most the ClusterQueue can ever give is 32" in found.message
    assert "a100: nvidia.com/gpu at most 16" in found.message and "h100: nvidia.com/gpu at most 16" in found.message


def test_an_untolerated_taint_takes_a_flavor_out() -> None:
    tainted = flavor("a100", nodeTaints=[{"key": "gpu", "value": "a100", "effect": "NoSchedule"}])
    objects = queue_objects([tainted, cluster_queue(), local_queue()])
    (found,) = outcomes(pytorch(workers=1), objects)
    assert found.rule == FIT and "untolerated taint gpu=a100:NoSchedule" in found.message
    toleration = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    job = pytorch(workers=1)
    for spec in job["spec"]["pytorchReplicaSpecs"].values():
        spec["template"]["spec"]["tolerations"] = toleration
    assert outcomes(job, objects) == []


def test_a_flavors_own_tolerations_count() -> None:
    taint = {"key": "gpu", "value": "a100", "effect": "NoSchedule"}
    tainted = flavor("a100", nodeTaints=[taint], tolerations=[{"key": "gpu", "operator": "Exists"}])
    assert flavor_rejects(tainted, {}) is None


def test_node_selector_against_flavor_labels() -> None:
    labelled = flavor("a100", nodeLabels={"gpu": "a100"})
    assert flavor_rejects(labelled, {"nodeSelector": {"gpu": "h100"}}) is not None
    assert flavor_rejects(labelled, {"nodeSelector": {"gpu": "a100", "zone": "x"}}) is None
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "NotIn", "values": ["a100"]}]}]
            }
        }
    }
    assert flavor_rejects(labelled, {"affinity": affinity}) is not None
    assert flavor_rejects(flavor("plain"), {"affinity": affinity}) is None


def test_no_kueue_objects_given_offline_is_not_admitted() -> None:
    (found,) = outcomes(pytorch(), None)
    assert found.rule == OBJECTS_MISSING and "--cluster-objects" in found.message
    (found,) = outcomes(pytorch(), queue_objects([]))
    assert found.rule == OBJECTS_MISSING


def test_a_cluster_without_kueue_warns() -> None:
    (found,) = outcomes(pytorch(), QueueObjects(CLUSTER))
    assert found.rule == NOT_MODELLED


def test_a_label_on_a_kind_kueue_does_not_manage_is_not_checked() -> None:
    job = pytorch()
    job["apiVersion"] = "training.kubedl.io/v1alpha1"
    assert outcomes(job, None) == []


def test_a_kubeflow_v1_mpijob_is_not_kueues() -> None:
    """Kueue's MPIJob integration is mpi-operator's kubeflow.org/v2beta1, not training-operator's v1."""
    job = pytorch(workers=40)
    job["kind"] = "MPIJob"
    job["spec"] = {"mpiReplicaSpecs": job["spec"]["pytorchReplicaSpecs"]}
    assert outcomes(job, None) == []


def test_an_unlabelled_job_is_not_checked_unless_a_default_local_queue_exists() -> None:
    assert outcomes(pytorch(queue=None), store(cluster_queue(), local_queue())) == []
    (found,) = outcomes(pytorch(queue=None, workers=4), store(cluster_queue(), local_queue(name="default")))
    assert found.rule == FIT and "Kueue's default LocalQueue" in found.message


def test_dra_claims_are_said_not_counted() -> None:
    job = pytorch(workers=1, resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "t"}])
    (found,) = outcomes(job, store(cluster_queue(), local_queue()))
    assert found.rule == NOT_MODELLED and "deviceClassMappings" in found.message


def test_pod_sets_count_init_containers_and_sidecars_as_pod_requests() -> None:
    job = pytorch(workers=1)
    spec = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    spec["initContainers"] = [
        {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
        {"name": "init", "resources": {"requests": {"cpu": "10"}}},
    ]
    kmap = kind_map(job)
    assert kmap is not None
    sets = {p.name: p for p in kueue_pod_sets(kmap, job, [])}
    # max(4 app + 1 sidecar, 10 init + 1 sidecar started before it) = 11.
    assert sets["Worker"].per_pod["cpu"] == 11
    assert [p.name for p in kueue_pod_sets(kmap, job, [])] == ["Master", "Worker"]


def test_format_amount() -> None:
    assert format_amount(32) == "32"
    assert format_amount(64 * 2**30) == "64Gi"
    assert format_amount(Fraction(1, 2)) == "500m"
    assert format_amount(Fraction(1, 3)) == "0.333333"


# --- through the policy -------------------------------------------------------------------------------


def policy(action: str = "Deny") -> dict[str, Any]:
    return {
        "apiVersion": "policy.jobgate.io/v1alpha1",
        "kind": "ClusterTrainingJobPolicy",
        "metadata": {"name": "fit"},
        "spec": {"enforcementAction": action, "require": {"fitsQueue": True}},
    }


def judge(
    job: dict[str, Any], objects: QueueObjects | None, action: str = "Deny", old: dict[str, Any] | None = None
) -> list[Any]:
    eff = effective_policy(PolicySet([policy(action)]), NS, {"kubernetes.io/metadata.name": NS}, job)
    context = ReviewContext(namespace=NS, namespace_labels={"kubernetes.io/metadata.name": NS}, queue_objects=objects)
    return policy_findings(job, old, "kubeflow", eff, context=context)


def test_the_policy_requirement_refuses_at_its_action() -> None:
    objects = store(cluster_queue(), local_queue())
    (found,) = judge(pytorch(workers=4), objects)
    assert found.action == "Deny" and found.rule == FIT and found.policy == "ClusterTrainingJobPolicy fit"
    assert found.text().startswith('metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "team-a": ')
    (found,) = judge(pytorch(workers=4), objects, "Warn")
    assert found.action == "Warn"
    assert judge(pytorch(workers=3), objects) == []


def test_not_modelled_notices_are_at_most_warnings() -> None:
    (found,) = judge(pytorch(), QueueObjects(CLUSTER))
    assert found.action == "Warn" and found.rule == NOT_MODELLED
    (found,) = judge(pytorch(), QueueObjects(CLUSTER), "Audit")
    assert found.action == "Audit"


def test_without_the_requirement_nothing_is_checked() -> None:
    job = pytorch(workers=40)
    eff = effective_policy(PolicySet([]), NS, {}, job)
    context = ReviewContext(namespace=NS, queue_objects=None)
    assert policy_findings(job, None, "kubeflow", eff, context=context) == []


def test_without_a_context_the_queue_is_not_judged() -> None:
    """The controller's audit has no queue objects: it does not judge queue fit."""
    eff = effective_policy(PolicySet([policy()]), NS, {}, pytorch())
    assert policy_findings(pytorch(workers=40), None, "kubeflow", eff) == []


def test_an_update_that_does_not_change_an_old_misfit_is_allowed() -> None:
    objects = store(cluster_queue(), local_queue())
    old = pytorch(workers=4)
    new = copy.deepcopy(old)
    new["metadata"]["annotations"] = {"x": "y"}
    assert judge(new, objects, old=old) == []
    assert judge(new, objects, old=pytorch(workers=3)) != []


# --- Volcano ------------------------------------------------------------------------------------------


def volcano_queue(
    name: str, capability: dict[str, Any] | None = None, parent: str | None = None, state: str = "Open"
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if capability:
        spec["capability"] = capability
    if parent:
        spec["parent"] = parent
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
        "status": {"state": state},
    }


def vcjob(
    tasks: list[tuple[str, int, int | None, int]], min_available: int | None = None, queue: str = "research"
) -> dict[str, Any]:
    """tasks: (name, replicas, minAvailable, gpus per pod)."""
    spec: dict[str, Any] = {
        "queue": queue,
        "tasks": [
            {"name": n, "replicas": r, **({"minAvailable": m} if m is not None else {}), "template": pod(gpus=g)}
            for n, r, m, g in tasks
        ],
    }
    if min_available is not None:
        spec["minAvailable"] = min_available
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "v", "namespace": NS},
        "spec": spec,
    }


def test_volcano_job_within_capability_fits() -> None:
    objects = queue_objects([volcano_queue("research", {"nvidia.com/gpu": 32})])
    assert outcomes(vcjob([("worker", 4, None, 8)]), objects) == []


def test_volcano_gang_minimum_over_capability_is_refused() -> None:
    objects = queue_objects([volcano_queue("research", {"nvidia.com/gpu": 32})])
    (found,) = outcomes(vcjob([("worker", 5, None, 8)]), objects)
    assert found.rule == FIT and found.path == ("spec", "queue")
    assert "Volcano queue research" in found.message and "nvidia.com/gpu 40" in found.message
    assert "the most the queue can ever give is 32 (its capability)" in found.message


def test_volcano_counts_only_the_gang_minimum() -> None:
    objects = queue_objects([volcano_queue("research", {"nvidia.com/gpu": 32})])
    assert outcomes(vcjob([("worker", 8, 4, 8)], min_available=4), objects) == []
    (found,) = outcomes(vcjob([("worker", 8, 4, 8)], min_available=5), objects)
    assert "nvidia.com/gpu 40" in found.message


def test_gang_minimum_honours_each_tasks_min_available() -> None:
    job = vcjob([("ps", 2, 2, 0), ("worker", 8, 2, 8)], min_available=6)
    kmap = kind_map(job)
    assert kmap is not None
    parts: list[str] = []
    need, ordered = gang_minimum(volcano_tasks(kmap, job, []), 6, parts)
    # ps 2 + worker 2 (each task's min) then 2 more workers: 4 workers × 8 GPUs.
    assert ordered and need["nvidia.com/gpu"] == 32
    need, _ = gang_minimum(volcano_tasks(kmap, job, []), 3, [])  # below the tasks' sum: the first 3 pods
    assert need["nvidia.com/gpu"] == 8


def test_gang_minimum_with_unknown_priorities_counts_the_least_any_order_needs() -> None:
    job = vcjob([("a", 2, None, 8), ("b", 2, None, 1)], min_available=2)
    job["spec"]["tasks"][0]["template"]["spec"]["priorityClassName"] = "high"
    kmap = kind_map(job)
    assert kmap is not None
    need, ordered = gang_minimum(volcano_tasks(kmap, job, []), 2, [])
    assert not ordered and need["nvidia.com/gpu"] == 2


def test_volcano_parent_capability_caps() -> None:
    objects = queue_objects(
        [volcano_queue("research", {"nvidia.com/gpu": 64}, parent="org"), volcano_queue("org", {"nvidia.com/gpu": 16})]
    )
    (found,) = outcomes(vcjob([("worker", 3, None, 8)]), objects)
    assert "the capability of its parent queue org" in found.message and "at most" not in found.message


def test_volcano_reads_a_zero_cpu_or_memory_capability_as_no_bound() -> None:
    from jobgate.policy.queuefit import ceiling_lines

    zero = {"nvidia.com/gpu": 16, "cpu": "0", "memory": "0"}
    objects = queue_objects([volcano_queue("research", zero)])
    job = vcjob([("worker", 2, None, 8)])
    job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"]["requests"] = {
        "cpu": "1",
        "memory": "1Gi",
    }
    assert outcomes(job, objects) == []
    assert "  Volcano Queue research: nvidia.com/gpu 16" in ceiling_lines(objects, NS)
    # Any other resource's zero is a bound: no GPU at all.
    (found,) = outcomes(job, queue_objects([volcano_queue("research", {**zero, "nvidia.com/gpu": 0})]))
    assert "the most the queue can ever give is 0 (its capability)" in found.message


def test_volcano_closed_queue_is_refused_as_closed() -> None:
    objects = queue_objects([volcano_queue("research", state="Closed")])
    (found,) = outcomes(vcjob([("worker", 1, None, 1)]), objects)
    assert found.rule == FIT and "the queue is Closed" in found.message


def test_volcano_missing_queue_is_misconfigured() -> None:
    objects = queue_objects([volcano_queue("other")])
    (found,) = outcomes(vcjob([("worker", 1, None, 1)]), objects)
    assert found.rule == MISCONFIGURED


def test_volcano_without_queues_given_is_not_admitted_offline() -> None:
    (found,) = outcomes(vcjob([("worker", 1, None, 1)]), queue_objects([]))
    assert found.rule == OBJECTS_MISSING


def kubeflow_on_volcano(scheduler: str | None = "volcano", **policy: Any) -> dict[str, Any]:
    job = pytorch(queue=None, workers=4)
    job["spec"]["runPolicy"] = {"schedulingPolicy": {"queue": "research", **policy}}
    if scheduler:
        for spec in job["spec"]["pytorchReplicaSpecs"].values():
            spec["template"]["spec"]["schedulerName"] = scheduler
    return job


def test_kubeflow_job_on_volcano_uses_its_min_resources() -> None:
    objects = queue_objects([volcano_queue("research", {"nvidia.com/gpu": 32})])
    (found,) = outcomes(kubeflow_on_volcano(), objects)  # 5 pods × 8
    assert found.path == ("spec", "runPolicy", "schedulingPolicy", "queue")
    assert outcomes(kubeflow_on_volcano(minAvailable=4), objects) == []
    (found,) = outcomes(kubeflow_on_volcano(minResources={"nvidia.com/gpu": 33}), objects)
    assert "its minResources" in found.message and "nvidia.com/gpu 33" in found.message


def test_kubeflow_job_not_scheduled_by_volcano_is_not_checked() -> None:
    objects = queue_objects([volcano_queue("research", {"nvidia.com/gpu": 8})])
    assert outcomes(kubeflow_on_volcano(scheduler=None), objects) == []


def test_pod_sets_that_do_not_pack_into_the_flavors_are_refused() -> None:
    quotas = {"cpu": 256, "memory": "2Ti", "nvidia.com/gpu": 10}
    cq = cluster_queue(flavors=[("a100", quotas), ("h100", quotas)])
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "t", "namespace": NS, "labels": {"kueue.x-k8s.io/queue-name": "team-a"}},
        "spec": {
            "tfReplicaSpecs": {role: {"replicas": 1, "template": pod(gpus=6)} for role in ("Chief", "PS", "Worker")}
        },
    }
    # 18 GPUs within the flavors' 20, each pod set's 6 within one flavor's 10: but three 6s do not go into two 10s.
    (found,) = outcomes(job, store(cq, local_queue(), flavors=("a100", "h100")))
    assert found.rule == FIT and "no assignment of its pod sets" in found.message
    assert "Chief: cpu 4, memory 32Gi, nvidia.com/gpu 6" in found.message


@pytest.mark.parametrize(
    "broken",
    [
        {"resourceGroups": [{"coveredResources": 1, "flavors": "a100"}]},
        {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "a100", "resources": 7}]}]},
        {"resourceGroups": [{"flavors": [{"name": "a100", "resources": [{"name": "cpu", "nominalQuota": "lots"}]}]}]},
        {"resourceGroups": None, "cohort": ["x"]},
    ],
)
def test_malformed_queue_objects_never_raise(broken: dict[str, Any]) -> None:
    cq = {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": {"name": "gpu-cq"},
        "spec": {"namespaceSelector": {}, **broken},
    }
    tainted = flavor("a100", nodeLabels={"gpu": {"x": 1}}, nodeTaints="all", tolerations=5)
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "Gt", "values": [{}]}]}]
            }
        }
    }
    found = outcomes(pytorch(workers=1, affinity=affinity), queue_objects([tainted, cq, local_queue()]))
    assert all(o.rule in (FIT, MISCONFIGURED, NOT_MODELLED) for o in found)


def test_ceiling_lines_show_each_queue_and_what_caps_it() -> None:
    from jobgate.policy.queuefit import ceiling_lines

    objects = store(
        cluster_queue(stopPolicy="Hold"),
        local_queue(),
        local_queue(name="lost", cq="gone"),
        volcano_queue("research", {"nvidia.com/gpu": 64, "cpu": 8}, parent="org"),
        volcano_queue("org", {"nvidia.com/gpu": 16}),
        volcano_queue("closed", state="Closed"),
    )
    lines = ceiling_lines(objects, NS)
    assert "  LocalQueue ml/lost → ClusterQueue gone: misconfigured (the ClusterQueue does not exist)" in lines
    assert "  LocalQueue ml/team-a → ClusterQueue gpu-cq: misconfigured: ClusterQueue stopped (Hold)" in lines
    assert "    flavor a100: cpu 256, memory 2Ti, nvidia.com/gpu 32" in lines
    assert "  Volcano Queue research: cpu 8, nvidia.com/gpu 16 (queue org)" in lines
    assert "  Volcano Queue closed [Closed]: no capability (unbounded)" in lines
    assert ceiling_lines(None, NS) == ["  no Kueue or Volcano queue objects known (pass them with --cluster-objects)"]
