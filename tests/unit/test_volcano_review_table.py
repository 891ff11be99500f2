"""Volcano's own webhook test cases (admit_job_test.go, mutate_job_test.go), restated as AdmissionReviews.

Each case goes through the webhook's answer path (/mutate, then /validate) with a queue view
holding Volcano's fixture (queue ``default``, Open): /mutate admits everything, /validate
gives Volcano's verdict with Volcano's words in the message.
"""

from __future__ import annotations

import base64
import copy
import json

import pytest

from jobgate.engine.jsonpatch import apply_patch
from jobgate.engine.views import ClusterViews, QueueSnapshot
from jobgate.webhook.admission import Webhook, answer_review, parse_review
from testkit.builders import admission_review


def task(name="task-1", replicas=1, **fields):
    template = {
        "metadata": {"labels": {"name": "test"}},
        "spec": {"containers": [{"name": "fake-name", "image": "busybox:1.24"}]},
    }
    return {"name": name, "replicas": replicas, "template": template, **fields}


def job(name="valid-job", tasks=None, **spec):
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "test"},
        "spec": {"minAvailable": 1, "queue": "default", "tasks": [task()] if tasks is None else tasks, **spec},
    }


# The queue Volcano's fixtures submit to, as the webhook's Queue cache would show it.
DEFAULT_QUEUE = ClusterViews(QueueSnapshot([{"metadata": {"name": "default"}, "status": {"state": "Open"}}]))


def respond(obj, webhook, *, operation="CREATE", old=None, views=DEFAULT_QUEUE):
    review = admission_review(obj, operation=operation, old=old)
    return answer_review(parse_review(json.dumps(review).encode()), webhook, views)["response"]


def mutate_then_validate(obj, *, operation="CREATE", old=None, views=DEFAULT_QUEUE):
    mutated = respond(obj, Webhook.MUTATE, operation=operation, old=old, views=views)
    assert mutated["allowed"] is True  # where Volcano's mutating webhook denies nothing, nor does jobgate's
    patch = json.loads(base64.b64decode(mutated["patch"])) if "patch" in mutated else []
    patched = apply_patch(obj, patch)
    return patched, respond(patched, Webhook.VALIDATE, operation=operation, old=old, views=views)


CREATE_CASES = [
    ("valid job", job(policies=[{"event": "PodEvicted", "action": "RestartTask"}]), None),
    (
        "duplicate task name",
        job(tasks=[task("duplicated-task-1"), task("duplicated-task-1")]),
        "duplicated task name duplicated-task-1",
    ),
    (
        "duplicated policy event",
        job(policies=[{"event": "PodFailed", "action": "AbortJob"}, {"event": "PodFailed", "action": "RestartJob"}]),
        "duplicate",
    ),
    ("minAvailable illegal", job(minAvailable=2), "'minAvailable' should not be greater than total replicas in tasks"),
    ("plugin illegal", job(plugins={"big_plugin": []}), "unable to find job plugin: big_plugin"),
    ("ttl illegal", job(ttlSecondsAfterFinished=-1), "'ttlSecondsAfterFinished' cannot be less than zero"),
    ("minAvailable < 0", job(minAvailable=-1), "'minAvailable' must be >= 0"),
    ("maxRetry < 0", job(maxRetry=-1), "'maxRetry' cannot be less than zero."),
    ("no task", job(tasks=[]), "No task specified in job spec"),
    ("replicas < 0", job(tasks=[task(replicas=-1)]), "'replicas' < 0 in task: task-1"),
    ("task name not DNS", job(tasks=[task("Task-1")]), "RFC 1123 label must consist of lower case alphanumeric"),
    (
        "event with exit code",
        job(policies=[{"event": "PodFailed", "action": "AbortJob", "exitCode": -1}]),
        "must not specify event and exitCode simultaneously",
    ),
    ("no event no exit code", job(policies=[{"action": "AbortJob"}]), "either event and exitCode should be specified"),
    ("invalid event", job(policies=[{"event": "someFakeEvent", "action": "AbortJob"}]), "invalid policy event"),
    ("invalid action", job(policies=[{"event": "PodEvicted", "action": "someFakeAction"}]), "invalid policy action"),
    ("exit code 0", job(policies=[{"exitCode": 0, "action": "AbortJob"}]), "0 is not a valid error code"),
    ("duplicate exit code", job(policies=[{"exitCode": 1}, {"exitCode": 1}]), "duplicate exitCode 1"),
    (
        "any event with others",
        job(policies=[{"event": "*", "action": "AbortJob"}, {"event": "PodFailed", "action": "RestartJob"}]),
        "if there's * here, no other policy should be here",
    ),
    ("empty mount path", job(volumes=[{"mountPath": ""}]), "mountPath is required;"),
    (
        "duplicate mount path",
        job(
            volumes=[{"mountPath": "/var", "volumeClaimName": "pvc1"}, {"mountPath": "/var", "volumeClaimName": "pvc2"}]
        ),
        " duplicated mountPath: /var;",
    ),
    (
        "volume without claim",
        job(volumes=[{"mountPath": "/var"}]),
        " either VolumeClaim or VolumeClaimName must be specified;",
    ),
    (
        "task policy any with others",
        job(
            tasks=[
                task(policies=[{"event": "*", "action": "AbortJob"}, {"event": "PodFailed", "action": "RestartJob"}])
            ]
        ),
        "if there's * here, no other policy should be here",
    ),
    ("queue missing", job(queue="jobQueue"), "unable to find job queue"),
    (
        "privileged container",
        job(
            tasks=[
                task(
                    template={
                        "spec": {
                            "containers": [{"name": "c", "image": "busybox", "securityContext": {"privileged": True}}]
                        }
                    }
                )
            ]
        ),
        None,
    ),
    (
        "mpi master missing",
        job(plugins={"mpi": ["--master=master", "--worker=worker"]}),
        "The specified mpi master task was not found",
    ),
    (
        "mpi master present",
        job(tasks=[task("master"), task("worker")], plugins={"mpi": ["--master=master", "--worker=worker"]}),
        None,
    ),
    (
        "dependsOn cycle",
        job(tasks=[task("a", dependsOn={"name": ["b"]}), task("b", dependsOn={"name": ["a"]})]),
        "doesn't form a directed acyclic graph(DAG)",
    ),
    (
        "numa policy with fractional cpu",
        job(
            tasks=[
                task(
                    topologyPolicy="single-numa-node",
                    template={
                        "spec": {
                            "containers": [{"name": "c", "image": "b", "resources": {"requests": {"cpu": "1500m"}}}]
                        }
                    },
                )
            ]
        ),
        "the cpu request isn't an integer in spec.task[0] container[0].",
    ),
    (
        "partition replicas mismatch",
        job(tasks=[task(replicas=5, partitionPolicy={"totalPartitions": 2, "partitionSize": 2})]),
        "'Replicas' are not equal to TotalPartitions*PartitionSize in task: task-1, job: valid-job",
    ),
    (
        "tier fields together",
        job(networkTopology={"mode": "hard", "highestTierAllowed": 1, "highestTierName": "tier"}),
        "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously",
    ),
    (
        "task minAvailable greater than replicas",
        job(tasks=[task(replicas=1, minAvailable=2)]),
        "'minAvailable' is greater than 'replicas' in task: task-1, job: valid-job",
    ),
]


@pytest.mark.parametrize(("obj", "fragment"), [c[1:] for c in CREATE_CASES], ids=[c[0] for c in CREATE_CASES])
def test_create(obj, fragment, views=DEFAULT_QUEUE):
    _, response = mutate_then_validate(obj, views=views)
    if fragment is None:
        assert response["allowed"] is True, response
    else:
        assert response["allowed"] is False
        assert fragment in response["status"]["message"], response["status"]["message"]


def stored_job():
    patched, response = mutate_then_validate(
        job(minAvailable=5, tasks=[task(replicas=5)], policies=[{"event": "PodEvicted", "action": "RestartTask"}])
    )
    assert response["allowed"] is True
    return patched


UPDATE_CASES = [
    # (name, replicas, minAvailable, add task, rename task, change queue, expect denial)
    ("scale up", 6, 5, False, False, False, False),
    ("scale down below minAvailable", 4, 5, False, False, False, True),
    ("scale down", 4, 3, False, False, False, False),
    ("negative minAvailable", 4, -1, False, False, False, True),
    ("add task", 4, 5, True, False, False, True),
    ("rename task", 5, 5, False, True, False, True),
    ("change queue", 5, 5, False, False, True, True),
]


@pytest.mark.parametrize("case", UPDATE_CASES, ids=[c[0] for c in UPDATE_CASES])
def test_update(case):
    _, replicas, min_available, add, rename, queue, denied = case
    old = stored_job()
    new = copy.deepcopy(old)
    new["spec"]["minAvailable"] = min_available
    new["spec"]["tasks"][0]["replicas"] = replicas
    del new["spec"]["tasks"][0]["minAvailable"]  # as in Volcano's table: only replicas is set
    new["status"] = {"succeeded": 2}
    if add:
        new["spec"]["tasks"].append(task("task-2", 5))
    if rename:
        new["spec"]["tasks"][0]["name"] = "mutated-name"
    if queue:
        new["spec"]["queue"] = "mutated-queue"
    _, response = mutate_then_validate(new, operation="UPDATE", old=old)
    assert response["allowed"] is (not denied), response


# --- the rest of Volcano's tables, current and legacy ------------------------------------
# Cases of admit_job_test.go (1.0 to now, and pkg/admission in 0.2) and mutate_job_test.go the lists
# above do not restate. Older releases worded several messages differently: the detail keeps the
# current sentence and adds the old one as "(before Volcano X: ...)", so a fragment of either matches.


def pod_resources(pod=None, containers=(), init=()):
    """A template with pod-level ``resources`` and containers asking for the given cpu."""

    def container(name, requests, limits=None):
        resources = {"requests": {"cpu": requests}}
        if limits is not None:
            resources["limits"] = {"cpu": limits}
        return {"name": name, "image": "busybox:1.24", "resources": resources}

    spec = {"containers": [container(f"c{i}", *c) for i, c in enumerate(containers)]}
    if init:
        spec["initContainers"] = [container(f"i{i}", *c) for i, c in enumerate(init)]
    if pod is not None:
        spec["resources"] = pod
    return {"metadata": {"labels": {"name": "test"}}, "spec": spec}


def partitioned(replicas, **policy):
    return job(tasks=[task(replicas=replicas, partitionPolicy=policy)])


TIER = {"mode": "hard", "highestTierAllowed": 1}
RFC_LABEL = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start"
DNS_LABEL = "a DNS-1123 label must consist of lower case alphanumeric characters or '-', and must start"

MORE_CREATE_CASES = [
    # current table
    (
        "valid job, pod-level resources",
        job(tasks=[task(template=pod_resources({"requests": {"cpu": "4"}}, [("2",), ("2",)]))]),
        None,
    ),
    (
        "pod-level requests below what the containers ask",
        job(tasks=[task(template=pod_resources({"requests": {"cpu": "2"}}, [("2",), ("2",)], init=[("2",)]))]),
        'spec.task[0].template.spec.resources.requests[cpu]: Invalid value: "2": must be greater than or equal to '
        "aggregate container requests of 4",
    ),
    (
        "pod-level requests above pod-level limits",
        job(tasks=[task(template=pod_resources({"requests": {"cpu": "6"}, "limits": {"cpu": "4"}}, [("2", "2")]))]),
        'spec.task[0].template.spec.resources.requests: Invalid value: "6": '
        "must be less than or equal to cpu limit of 4",
    ),
    (
        "partition size 0",
        partitioned(2, totalPartitions=2, partitionSize=0),
        "'PartitionSize' must be greater than 0 in task: task-1, job: valid-job",
    ),
    (
        "total partitions 0",
        partitioned(2, totalPartitions=0, partitionSize=2),
        "'TotalPartitions' must be greater than 0 in task: task-1, job: valid-job",
    ),
    ("valid partition", partitioned(4, totalPartitions=2, partitionSize=2), None),
    ("valid partition with topology", partitioned(4, totalPartitions=2, partitionSize=2, networkTopology=TIER), None),
    (
        "partition topology with both tiers",
        partitioned(4, totalPartitions=2, partitionSize=2, networkTopology={**TIER, "highestTierName": "t"}),
        "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously",
    ),
    (
        "min partitions, minAvailable defaulted",
        partitioned(4, totalPartitions=2, partitionSize=2, minPartitions=1),
        None,
    ),
    (
        "minAvailable not min partitions x size",
        job(
            tasks=[
                task(
                    replicas=4,
                    minAvailable=3,
                    partitionPolicy={"totalPartitions": 2, "partitionSize": 2, "minPartitions": 1},
                )
            ]
        ),
        "'MinAvailable' is not equal to MinPartitions*PartitionSize in task: task-1, job: valid-job",
    ),
    ("mpi master without worker", job(tasks=[task("master")], plugins={"mpi": ["--master=master"]}), None),
    ("valid dependsOn", job(tasks=[task("a"), task("b", dependsOn={"name": ["a"]})]), None),
    (
        "privileged init container",
        job(
            tasks=[
                task(
                    template={
                        "spec": {
                            "initContainers": [{"name": "i", "image": "b", "securityContext": {"privileged": True}}],
                            "containers": [{"name": "c", "image": "b"}],
                        }
                    }
                )
            ]
        ),
        None,
    ),
    # legacy wording (pkg/admission in 0.2/0.3, 1.0 to 1.13)
    ("job minAvailable < 0, 0.x wording", job(minAvailable=-1), "'minAvailable' must be greater than zero."),
    ("replicas < 0, 0.x wording", job(tasks=[task(replicas=-1)]), "'replicas' is not set positive in task: task-1;"),
    ("replicas < 0, 1.0-1.5 wording", job(tasks=[task(replicas=-1)]), "'replicas' < 0 in task: task-1;"),
    (
        "replicas < 0, 1.9-1.13 wording (two sentences in one)",
        job(tasks=[task(replicas=-1)]),
        "'replicas' < 0 in task: task-1, job: valid-job; "
        "job 'minAvailable' should not be greater than total replicas in tasks;",
    ),
    (
        "task minAvailable < 0, 1.9-1.13 wording",
        job(tasks=[task(minAvailable=-1)]),
        "'minAvailable' < 0 in task: task-1, job: valid-job;",
    ),
    ("task name, 1.9-1.13 wording", job(tasks=[task("Task-1")]), f"[{RFC_LABEL}"),
    ("task name, 0.x-1.5 wording", job(tasks=[task("Task-1")]), f"[{DNS_LABEL}"),
    (
        "numa policy, 1.5-1.13 wording",
        job(
            tasks=[
                task(
                    topologyPolicy="restricted",
                    template={
                        "spec": {"containers": [{"name": "c", "image": "b", "resources": {"limits": {"cpu": "500m"}}}]}
                    },
                )
            ]
        ),
        "the cpu request isn't  an integer",
    ),
]


@pytest.mark.parametrize(("obj", "fragment"), [c[1:] for c in MORE_CREATE_CASES], ids=[c[0] for c in MORE_CREATE_CASES])
def test_more_create(obj, fragment):
    test_create(obj, fragment)


HIERARCHY = [
    {"metadata": {"name": "root"}, "status": {"state": "Open"}},
    {"metadata": {"name": "parentQueue"}, "spec": {"parent": "root"}, "status": {"state": "Open"}},
    {"metadata": {"name": "childQueue"}, "spec": {"parent": "parentQueue"}, "status": {"state": "Open"}},
]


@pytest.mark.parametrize(
    ("queue", "fragment"),
    [
        ("root", "can not submit job to root queue"),
        ("parentQueue", "can only submit job to leaf queue"),
        ("childQueue", None),  # Volcano's webhook admits the name; only its CRD has a pattern for it
    ],
)
def test_hierarchical_queues(queue, fragment):
    test_create(job(queue=queue), fragment, views=ClusterViews(QueueSnapshot(HIERARCHY)))


def test_numa_policy_with_whole_cpus_is_admitted():
    resources = {"limits": {"cpu": "1", "memory": "2000"}}
    template = {"spec": {"containers": [{"name": "c", "image": "b", "resources": resources}]}}
    test_create(job(tasks=[task(replicas=5, topologyPolicy="restricted", template=template)], minAvailable=5), None)


def test_update_against_the_job_as_written():
    # Volcano's UPDATE table compares two jobs that were never defaulted; the apiserver hands the
    # stored (defaulted) one. Both must give the same verdicts.
    for _, replicas, min_available, add, rename, queue, denied in UPDATE_CASES:
        old = job(minAvailable=5, tasks=[task(replicas=5)], policies=[{"event": "PodEvicted", "action": "RestartTask"}])
        new = copy.deepcopy(old)
        new["spec"].update(minAvailable=min_available)
        new["spec"]["tasks"][0]["replicas"] = replicas
        if add:
            new["spec"]["tasks"].append(task("task-2", 5))
        if rename:
            new["spec"]["tasks"][0]["name"] = "mutated-name"
        if queue:
            new["spec"]["queue"] = "mutated-queue"
        _, response = mutate_then_validate(new, operation="UPDATE", old=old)
        assert response["allowed"] is (not denied), (min_available, replicas, response)


def defaulted_tasks(tasks):
    patched, _ = mutate_then_validate(job(tasks=tasks, minAvailable=None))
    return patched["spec"]["tasks"]


def test_mutate_names_and_gang_sizes_of_tasks():
    partition = {"totalPartitions": 1, "partitionSize": 1, "networkTopology": TIER}
    tasks = defaulted_tasks(
        [
            {k: v for k, v in task(replicas=r).items() if k != "name"} | extra
            for r, extra in [
                (1, {}),
                (2, {"minAvailable": 1}),
                (1, {"partitionPolicy": {**partition, "minPartitions": 1}}),
                (1, {"partitionPolicy": partition}),
            ]
        ]
    )
    assert [(t["name"], t["minAvailable"], t["maxRetry"]) for t in tasks] == [
        ("default0", 1, 3),
        ("default1", 1, 3),
        ("default2", 1, 3),
        ("default3", 1, 3),  # minPartitions omitted: the replicas (Volcano 1.15; 1.14 wrote 0)
    ]


@pytest.mark.parametrize(
    ("partition", "replicas", "min_available"),
    [
        ({"totalPartitions": 3, "minPartitions": 2, "partitionSize": 3}, 9, 6),
        ({"totalPartitions": 3, "partitionSize": 3}, 9, 9),
    ],
)
def test_mutate_min_available_of_partitioned_tasks(partition, replicas, min_available):
    (defaulted,) = defaulted_tasks([task(replicas=replicas, partitionPolicy=partition)])
    assert (defaulted["minAvailable"], defaulted["maxRetry"]) == (min_available, 3)


def test_mutate_adds_no_mpi_dependency():
    # Volcano's mpi plugin has an AddDependsOn helper with a table of its own, but its mutating
    # webhook has never called it: the master gets no dependsOn at admission.
    obj = job(
        tasks=[task("fakemaster"), task("fakeworker", 2)],
        plugins={"mpi": ["--master=fakemaster", "--worker=fakeworker"]},
    )
    patched, response = mutate_then_validate(obj)
    assert response["allowed"] is True
    assert "dependsOn" not in patched["spec"]["tasks"][0]
