"""The clean path of the policy checks (``jobgate.policy.plan._Plan``) against the checks themselves.

The plan may only skip work whose result is empty: whenever it calls a job clean, the full checks
must find nothing in it, for every family, every constraint and every action. These tests run it
over jobs that break each constraint in each place it can be broken (and jobs that break none),
under policies that hold each constraint alone and all together, and also check that the plan does
call ordinary jobs clean (else it would be a cost, not a saving). ``fieldmap.pod_sizes`` is held to
``KindMap.groups`` the same way.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest

from jobgate.engine.jsonpatch import NO_PATCH, PatchRecorder
from jobgate.policy.check import _defaults, policy_defaults, policy_findings
from jobgate.policy.fieldmap import pod_sizes
from jobgate.policy.findings import _all_findings
from jobgate.policy.kinds import KINDS, kind_map
from jobgate.policy.plan import _Plan, _plan
from jobgate.policy.resolve import PolicySet, effective_policy
from jobgate.policy.review import write_defaults
from testkit.policy_set import NAMESPACE, NAMESPACE_LABELS, policy_set, tfjob_manifest
from tests.unit.test_policy_fixtures import cluster, dijob, kubedl, kubeflow, mxjob, pod, t9k, volcano

REGISTRY = "registry.example.com/ml/train:1"

CONSTRAINTS: list[dict[str, Any]] = [
    {"limits": {"maxReplicasPerRole": 2}},
    {"limits": {"maxReplicasPerJob": 3}},
    {"limits": {"maxGPUsPerPod": 1}},
    {"limits": {"maxGPUsPerJob": 2}},
    {"limits": {"maxGPUsPerJob": 4, "gpuResources": [{"name": "nvidia.com/mig-*", "weight": 0.5}]}},
    {"limits": {"maxTTLSecondsAfterFinished": 100}},
    {"limits": {"maxActiveDeadlineSeconds": 100}},
    {"require": {"ttlSecondsAfterFinished": True}},
    {"require": {"activeDeadlineSeconds": True}},
    {"require": {"labels": [{"key": "team"}]}},
    {"require": {"labels": [{"key": "team", "values": ["vision", "audio"]}]}},
    {"require": {"queues": ["vision"]}},
    {"require": {"priorityClassNames": ["high"]}},
    {"require": {"schedulerNames": ["default-scheduler"]}},
    {"require": {"schedulerNames": ["volcano"]}},
    {"require": {"imageRegistries": ["registry.example.com/"]}},
    {"require": {"imageRegistries": ["registry.example.com/ml/", "ghcr.io"]}},
    {"require": {"forbid": ["hostNetwork", "hostPID", "hostIPC"]}},
    {"require": {"forbid": ["privileged"]}},
    {"require": {"forbid": ["hostPath"]}},
    {"limits": {"maxGPUsPerJob": 2, "gpuDeviceClasses": [{"name": "gpu.nvidia.com", "weight": 2}]}},
    {"limits": {"maxGPUsPerPod": 1, "gpuResources": [{"name": "nvidia.com/gpu", "weight": 0}]}},
    {"require": {"queues": ["a"]}, "enforcementAction": "Warn"},
]


def _policies() -> list[list[dict[str, Any]]]:
    single = [[cluster(f"p{i}", spec)] for i, spec in enumerate(CONSTRAINTS)]
    audit = [[cluster(f"a{i}", {**spec, "enforcementAction": "Audit"})] for i, spec in enumerate(CONSTRAINTS[:6])]
    everything = [[cluster(f"p{i}", spec) for i, spec in enumerate(CONSTRAINTS[:-1]) if i not in (14, 16)]]
    clash = [[cluster("q1", {"require": {"queues": ["a"]}}), cluster("q2", {"require": {"queues": ["b"]}})]]
    return single + audit + everything + clash


def _container(**extra: Any) -> dict[str, Any]:
    return {"name": "c", "image": REGISTRY, **extra}


def _templates() -> list[dict[str, Any] | None]:
    """Pod templates, each clean or breaking one thing in one place."""
    gpu = {"resources": {"limits": {"nvidia.com/gpu": 1}}}
    return [
        pod(1),
        pod(None),
        pod(2),
        pod("1"),
        pod("500m"),
        pod("two"),
        pod(1, image="docker.io/library/python:3"),
        pod(1, image="python"),
        pod(1, image="registry.example.com:5000/x"),
        pod(1, image=""),
        pod(1, hostNetwork=True),
        pod(1, hostPID=True),
        pod(1, hostIPC=False),
        pod(1, volumes=[{"name": "h", "hostPath": {"path": "/"}}]),
        pod(1, volumes=[{"name": "e", "emptyDir": {}}]),
        pod(1, schedulerName="volcano"),
        pod(1, priorityClassName="high"),
        pod(1, resourceClaims=[{"name": "gpu"}]),
        pod(None, resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "t"}]),
        pod(1, volumes=[{"name": "i", "image": {"reference": "evil.io/weights:1"}}]),
        pod(1, volumes=[{"name": "i", "image": {"reference": REGISTRY}}, {"name": "e", "emptyDir": {}}]),
        pod(1, volumes=[{"name": "i", "image": "not a source"}, {"name": "j", "image": {"reference": 3}}]),
        {
            "spec": {
                "containers": [
                    _container(resources={"limits": {"deviceclass.resource.kubernetes.io/gpu.nvidia.com": 2}})
                ]
            }
        },
        pod(1, overhead={"nvidia.com/gpu": "1"}),
        {"spec": {"containers": [_container(resources={"requests": {"nvidia.com/gpu": 1}, "limits": {"cpu": 1}})]}},
        {
            "spec": {
                "containers": [
                    _container(resources={"requests": {"nvidia.com/gpu": 0}, "limits": {"nvidia.com/gpu": 9}})
                ]
            }
        },
        {"spec": {"containers": [_container(resources={"limits": {"nvidia.com/mig-1g.5gb": 3}})]}},
        {"spec": {"containers": [_container(resources={"limits": {"nvidia.com/gpu": 1}, "claims": [{"name": "x"}]})]}},
        {"spec": {"containers": [_container(resources={"requests": ["x"]})]}},
        {"spec": {"containers": [_container(securityContext={"privileged": True})]}},
        {
            "spec": {
                "containers": [_container(**gpu)],
                "initContainers": [_container(securityContext={"privileged": True})],
            }
        },
        {"spec": {"containers": [_container(**gpu)], "ephemeralContainers": [_container(image="evil.io/x")]}},
        {"spec": {"containers": [_container(**gpu)], "initContainers": [_container(**gpu, restartPolicy="Always")]}},
        {
            "spec": {
                "containers": [_container(**gpu)],
                "initContainers": [_container(resources={"limits": {"nvidia.com/gpu": 4}})],
            }
        },
        {"spec": {"containers": ["not a container", _container(**gpu)]}},
        {"spec": {"containers": [{"name": "no-image", **gpu}]}},
        {"spec": "not a pod spec"},
        {"metadata": {}},
        None,
    ]


def _jobs() -> list[dict[str, Any]]:
    jobs: list[dict[str, Any]] = []
    for template in _templates():
        jobs.append(kubeflow(roles={"Master": (1, pod(1)), "Worker": (2, template)}))
        jobs.append(kubedl(template=template, replicas=1))
        jobs.append(volcano(tasks=[{"name": "w", "replicas": 1, "template": template}]))
    jobs += [
        kubeflow(roles={"Master": (1, pod(1)), "Worker": (1, pod(1))}, elasticPolicy={"maxReplicas": 5}),
        kubeflow("MPIJob", roles={"Launcher": (1, pod(None)), "Worker": (1, pod(1))}),
        kubeflow(runPolicy={"ttlSecondsAfterFinished": 50, "activeDeadlineSeconds": 50,
                            "schedulingPolicy": {"queue": "vision", "priorityClass": "high"}}),
        kubeflow(runPolicy={"ttlSecondsAfterFinished": 500, "activeDeadlineSeconds": True,
                            "schedulingPolicy": {"queue": 7}}),
        kubedl(ttlSecondsAfterFinished=50, activeDeadlineSeconds=50,
               schedulingPolicy={"queue": "vision", "priorityClassName": "high"}),
        kubedl("MPIJob", runPolicy={"ttlSecondsAfterFinished": 500}),
        kubedl(replicas=3),
        volcano(queue="vision", priorityClassName="high", schedulerName="volcano", ttlSecondsAfterFinished=50),
        volcano(queue="other", schedulerName="default-scheduler", ttlSecondsAfterFinished=500),
        volcano(tasks=[{"name": "a", "template": pod(1)}, {"name": "b", "replicas": 4, "template": pod(1)}]),
        mxjob(),
        mxjob(replicas=3),
        t9k(),
        t9k(scheduler={"t9kScheduler": {"queue": "vision"}}),
        dijob(),
        dijob(volumes=[{"name": "h", "hostPath": {"path": "/"}}]),
        dijob(volumes=[{"name": "i", "image": {"reference": "evil.io/weights:1"}}]),
        tfjob_manifest(),
    ]  # fmt: skip
    labelled = []
    for job in jobs:
        for labels in ({"team": "vision"}, {"team": "speech"}, {"team": 3}):
            variant = copy.deepcopy(job)
            variant["metadata"]["labels"] = labels
            labelled.append(variant)
    no_spec = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "j", "namespace": "ns"}}
    return [*jobs, *labelled, no_spec]


JOBS = _jobs()
POLICIES = _policies()


@pytest.mark.parametrize("policies", POLICIES, ids=lambda ps: "+".join(p["metadata"]["name"] for p in ps))
def test_clean_means_no_finding(policies: list[dict[str, Any]]) -> None:
    cleaned = 0
    for job in JOBS:
        kmap = kind_map(job)
        assert kmap is not None
        eff = effective_policy(policies, "ns", {}, job)
        plan = _plan(eff, kmap)
        clean = plan.clean(job, kmap)
        if clean:
            cleaned += 1
            assert _all_findings(job, eff) == [], job
            assert policy_findings(job, copy.deepcopy(job), kmap.family, eff) == []
    if not any(p["spec"].get("enforcementAction") for p in policies) and len(policies) == 1:
        assert cleaned, "the plan found no job clean: it would only add work"


def test_bench_job_is_clean_under_the_bench_set() -> None:
    """The job the cost bench measures takes the clean path under the bench's 50 policies."""
    job = tfjob_manifest()
    policies = PolicySet(policy_set(50, 10))
    eff = effective_policy(policies, NAMESPACE, {**NAMESPACE_LABELS, "kubernetes.io/metadata.name": NAMESPACE}, job)
    kmap = kind_map(job)
    assert kmap is not None and len(eff.policies) == 10
    job["spec"]["ttlSecondsAfterFinished"] = 3600  # the set's default, written before the checks
    assert _plan(eff, kmap).clean(job, kmap)
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["hostIPC"] = True
    assert not _plan(eff, kmap).clean(job, kmap)
    assert [f.rule for f in _all_findings(job, eff)] == ["policy/forbid-hostipc"]


def test_pod_sizes_are_the_groups_counts_and_templates() -> None:
    for job in JOBS:
        kmap = kind_map(job)
        assert kmap is not None
        assert pod_sizes(kmap, job) == [(g.largest, g.template) for g in kmap.groups(job)]
    # Every kind, with every role layout its groups read (unset counts, elastic growth, odd items).
    for (group, kind), kmap in KINDS.items():
        for count, extra in itertools.product((None, 0, 3, True, "2"), (None, 1, 9)):
            item: dict[str, Any] = {"template": pod(1)}
            if count is not None:
                item["replicas"] = count
            spec: dict[str, Any] = {"elasticPolicy": {"maxReplicas": extra}} if extra else {}
            if kmap.replica_layout == "map":
                spec[kmap.replica_field] = {"Worker": item, "Master": dict(item), "bad": 1, "Launcher": {"replicas": 2}}
            else:
                spec[kmap.replica_field] = [item, 1, {"replicas": 2, "template": "x"}]
            job = {"apiVersion": f"{group}/v1", "kind": kind, "metadata": {"name": "j"}, "spec": spec}
            assert pod_sizes(kmap, job) == [(g.largest, g.template) for g in kmap.groups(job)], (kind, count, extra)


DEFAULTS: list[dict[str, Any]] = [
    {"queue": "vision", "priorityClassName": "high", "schedulerName": "batch"},
    {"ttlSecondsAfterFinished": 60, "activeDeadlineSeconds": 600},
    {"labels": {"team": "vision", "cost-center": "ml"}, "kueueQueueName": "q"},
    {"queue": "vision", "ttlSecondsAfterFinished": 60, "labels": {"kueue.x-k8s.io/queue-name": "other"},
     "kueueQueueName": "q"},
]  # fmt: skip


@pytest.mark.parametrize("defaults", DEFAULTS, ids="+".join)
def test_fixed_default_paths_are_the_locators_paths(defaults: dict[str, Any]) -> None:
    """The defaults read at fixed paths (the writers' and the compiled build's reading) give the very
    operations the locators give, for every kind they are fixed for (and none is fixed for the
    others: templates, job-dependent paths, queues)."""
    fixed_plans = 0
    odd = [{"spec": "x", "metadata": "y"}, {"spec": {"runPolicy": 3, "schedulingPolicy": "z"}}, {}]
    for job in [*JOBS, *(dict(job, **extra) for job in JOBS[:40] for extra in odd)]:
        kmap = kind_map(job)
        assert kmap is not None
        eff = effective_policy([cluster("d", {"defaults": defaults})], "ns", {}, job)
        plan = _Plan(eff, kmap)
        if plan.fixed_defaults is not None:
            fixed_plans += 1
            fixed = _defaults(job, kmap, plan)
            plan.fixed_defaults = None  # the locators' reading
            assert _defaults(job, kmap, plan) == fixed, job
    assert fixed_plans or "schedulerName" in defaults  # a pod template's field: fixed for Volcano alone


@pytest.mark.parametrize("defaults", DEFAULTS, ids="+".join)
def test_fixed_writer_copies_and_records_as_the_general_code(defaults: dict[str, Any]) -> None:
    """``_Plan.write_fixed`` gives the very job, patch operations and untouched input that
    ``PolicyReview.defaults`` gives by writing ``policy_defaults``' operations one by one, on every
    kind it is written for, on jobs missing the containers on the way (created), holding them as null
    (replaced), or holding something else there (left alone)."""
    plans_written = 0
    odd: list[dict[str, Any]] = [
        {"spec": "x", "metadata": "y"},
        {"spec": None, "metadata": {"labels": None}},
        {"spec": {"runPolicy": 3, "schedulingPolicy": "z"}},
        {"spec": {"runPolicy": None, "schedulingPolicy": None, "ttlSecondsAfterFinished": None}},
        {"metadata": {"labels": {"team": "own"}}},
        {"metadata": {"labels": ["team"]}},
        {},
    ]
    for job in [*JOBS, *(dict(job, **extra) for job in JOBS[:40] for extra in odd)]:
        kmap = kind_map(job)
        assert kmap is not None
        eff = effective_policy([cluster("d", {"defaults": defaults})], "ns", {}, job)
        plan = _Plan(eff, kmap)
        assert (plan.fixed_defaults is None) == (plan.fixed_writes is None)
        if plan.fixed_writes is None:
            continue
        plans_written += 1
        before = copy.deepcopy(job)
        for recording in (True, False):
            general_recorder = PatchRecorder() if recording else NO_PATCH
            general = write_defaults(job, policy_defaults(job, kmap.family, eff, kmap), general_recorder)
            ops: list[dict[str, Any]] | None = [] if recording else None
            assert plan.write_fixed(job, ops) == general, job
            assert job == before  # copy on write: the input is never changed
            if recording:
                assert ops == general_recorder.ops, job
    assert plans_written or "schedulerName" in defaults
