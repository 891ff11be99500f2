"""Volcano Job rules (admit_job.go / util.go): one test per rule, CREATE and UPDATE, Volcano's words."""

from __future__ import annotations

import copy

import pytest

from jobgate.engine.views import QueueInfo
from jobgate.families.volcano.rules.queue_check import check_queue
from testkit.builders import errors_of, review, vc_task, vcjob


def one_error_with(obj, fragment, old=None):
    errors = errors_of(obj, old)
    matching = [e for e in errors if fragment in e]
    assert matching, errors
    return matching


def test_valid_jobs_are_admitted():
    assert errors_of(vcjob(vc_task("ps", 2), vc_task("worker", 4))) == []
    mpi = vcjob(vc_task("master", 1), vc_task("worker", 2), plugins={"mpi": ["--master=master"], "env": []})
    assert errors_of(mpi) == []


# --- CREATE ------------------------------------------------------------------------------


def test_no_tasks():
    assert errors_of(vcjob()) == [
        "spec.tasks: Invalid value: 0: spec.tasks in body should have at least 1 items",
        "spec.tasks: Required value: No task specified in job spec",
    ]


def test_task_min_available_greater_than_replicas():
    obj = vcjob(vc_task("w", 2, minAvailable=3), minAvailable=2)
    assert errors_of(obj) == [
        "spec.tasks[0].minAvailable: Invalid value: 3: 'minAvailable' is greater than 'replicas' in task: w, job: job"
    ]


def test_job_min_available_greater_than_total_replicas():
    obj = vcjob(vc_task("a", 2), vc_task("b", 1), minAvailable=4)
    assert errors_of(obj) == [
        "spec.minAvailable: Invalid value: 4: job 'minAvailable' should not be greater than total replicas in tasks"
    ]
    assert errors_of(vcjob(vc_task("a", 2), vc_task("b", 1), minAvailable=3)) == []


def test_duplicated_task_name_reported_with_all_other_problems():
    obj = vcjob(vc_task("w", 1), vc_task("w", 1, minAvailable=2), minAvailable=2)
    assert errors_of(obj) == [
        "spec.tasks[1].minAvailable: Invalid value: 2: 'minAvailable' is greater than 'replicas' in task: w, job: job",
        'spec.tasks[1].name: Duplicate value: "w": duplicated task name w',
    ]


def test_task_name_must_be_dns1123_label():
    # The CRD pattern's line (what Volcano 1.14+ users get from the apiserver), then the webhook's.
    schema, error = errors_of(vcjob(vc_task("Bad_Name", 1)))
    assert schema.endswith("spec.tasks[0].name in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'")
    assert error.startswith('spec.tasks[0].name: Invalid value: "Bad_Name": [a lowercase RFC 1123 label')


def test_pod_name_must_fit_63_characters():
    obj = vcjob(vc_task("t" * 40, 11), name="j" * 20)
    (error,) = errors_of(obj)
    assert error.startswith("spec.tasks[0].name: Invalid value:")
    assert f"create pod with name {'j' * 20}-{'t' * 40}-10 validate failed" in error
    assert "name part must be no more than 63 characters" in error
    # The same names with one replica fit: the longest pod name is what counts.
    assert errors_of(vcjob(vc_task("t" * 40, 1), name="j" * 20)) == []


def test_job_name_must_be_a_qualified_name():
    (error,) = [e for e in errors_of(vcjob(vc_task("w", 1), name="j" * 64)) if e.startswith("metadata")]
    assert error.startswith("metadata.name: Invalid value:")
    assert f"create job with name {'j' * 64} validate failed [name part must be no more than 63 characters" in error


def test_job_name_is_also_a_dns_subdomain():
    """Volcano's qualified names allow capitals; the apiserver's check of every custom object does not."""
    (error,) = errors_of(vcjob(vc_task("w", 1), name="Job"))
    assert error.startswith('metadata.name: Invalid value: "Job": a lowercase RFC 1123 subdomain ')


def test_negative_values_with_volcano_legacy_words():
    obj = vcjob(vc_task("w", -1), maxRetry=-1, ttlSecondsAfterFinished=-1)
    obj["spec"]["tasks"][0]["minAvailable"] = -2
    errors = errors_of(obj)
    for fragment in (
        "'maxRetry' cannot be less than zero.",
        "'ttlSecondsAfterFinished' cannot be less than zero.",
        "'replicas' < 0 in task: w, job: job",
        "'minAvailable' < 0 in task: w, job: job",
        "spec.maxRetry in body should be greater than or equal to 0",  # the apiserver's CRD check
    ):
        assert any(fragment in e for e in errors), (fragment, errors)


@pytest.mark.parametrize(
    ("policy", "fragment"),
    [
        ({"event": "PodFailed", "exitCode": 3, "action": "RestartJob"}, "must not specify event and exitCode"),
        ({"action": "RestartJob"}, "either event and exitCode should be specified"),
        ({"event": "OutOfSync", "action": "RestartJob"}, 'Invalid value: "OutOfSync": invalid policy event'),
        ({"event": "CommandIssued", "action": "RestartJob"}, "invalid policy event"),
        ({"event": "PodRunning", "action": "RestartJob"}, "invalid policy event"),
        ({"event": "PodFailed", "action": "SyncJob"}, 'Invalid value: "SyncJob": invalid policy action'),
        ({"event": "PodFailed"}, 'Invalid value: "": invalid policy action'),
        ({"exitCode": 0, "action": "RestartJob"}, "0 is not a valid error code"),
    ],
)
@pytest.mark.parametrize("level", ["job", "task"])
def test_single_policy_rules(policy, fragment, level):
    obj = vcjob(vc_task("w", 1, **({"policies": [policy]} if level == "task" else {})))
    if level == "job":
        obj["spec"]["policies"] = [policy]
    (error,) = [e for e in errors_of(obj) if "Unsupported value" not in e]  # unknown events: the CRD enum too
    assert fragment in error
    assert error.startswith("spec.policies[0]" if level == "job" else "spec.tasks[0].policies[0]")


def test_policies_duplicate_event_exit_code_and_star():
    policies = [
        {"event": "PodFailed", "action": "RestartJob"},
        {"events": ["PodEvicted", "PodFailed"], "action": "AbortJob"},
        {"exitCode": 3, "action": "RestartTask"},
        {"exitCode": 3, "action": "AbortJob"},
        {"event": "*", "action": "TerminateJob"},
    ]
    errors = errors_of(vcjob(vc_task("w", 1), policies=policies))
    assert errors == [
        'spec.policies[1].events[1]: Duplicate value: "PodFailed": duplicate event PodFailed  across different policy',
        "spec.policies[3].exitCode: Duplicate value: 3: duplicate exitCode 3",
        'spec.policies: Invalid value: "*": if there\'s * here, no other policy should be here',
    ]


def test_policy_lists_are_checked_separately():
    policy = {"event": "PodFailed", "action": "RestartJob"}
    obj = vcjob(vc_task("a", 1, policies=[policy]), vc_task("b", 1, policies=[policy]), policies=[policy])
    assert errors_of(obj) == []


def test_events_and_event_are_merged():
    obj = vcjob(vc_task("w", 1), policies=[{"events": ["PodFailed"], "event": "PodFailed", "action": "RestartJob"}])
    assert errors_of(obj) == []


def test_unknown_plugin():
    assert errors_of(vcjob(vc_task("w", 1), plugins={"gang": []})) == [
        'spec.plugins[gang]: Invalid value: "gang": unable to find job plugin: gang'
    ]


@pytest.mark.parametrize(
    ("arguments", "master"),
    [([], "master"), (["--master=head"], "head"), (["--master", "head"], "head"), (["-master=head"], "head")],
)
def test_mpi_master_task_must_exist(arguments, master):
    obj = vcjob(vc_task("worker", 2), plugins={"mpi": arguments})
    assert errors_of(obj) == [
        f'spec.plugins[mpi]: Invalid value: "{master}": The specified mpi master task was not found'
    ]
    obj["spec"]["tasks"].append(vc_task(master, 1))
    assert errors_of(obj) == []


def test_dependencies_form_a_dag():
    a = vc_task("a", 1, dependsOn={"name": ["b"]})
    b = vc_task("b", 1, dependsOn={"name": ["a"]})
    errors = errors_of(vcjob(a, b, vc_task("c", 1)))
    assert len(errors) == 2
    assert all(
        "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG)" in e for e in errors
    )


@pytest.mark.parametrize("depends", [["missing"], ["self"]])
def test_dependency_on_missing_or_same_task(depends):
    obj = vcjob(vc_task("self", 1, dependsOn={"name": depends}))
    (error,) = errors_of(obj)
    assert error.startswith("spec.tasks[0].dependsOn.name: Invalid value:")
    assert "doesn't form a directed acyclic graph(DAG)" in error


def test_acyclic_dependencies_are_admitted():
    obj = vcjob(
        vc_task("a", 1), vc_task("b", 1, dependsOn={"name": ["a"]}), vc_task("c", 1, dependsOn={"name": ["a", "b"]})
    )
    assert errors_of(obj) == []


def test_volume_rules_all_reported():
    volumes = [
        {"mountPath": "", "volumeClaimName": "a"},
        {"mountPath": "/data", "volumeClaimName": "a"},
        {"mountPath": "/data", "volumeClaimName": "b"},
        {"mountPath": "/x"},
        {"mountPath": "/y", "volumeClaimName": "c", "volumeClaim": {"accessModes": ["ReadWriteOnce"]}},
        {"mountPath": "/z", "volumeClaimName": "Bad_Claim"},
    ]
    errors = errors_of(vcjob(vc_task("w", 1), volumes=volumes))
    # Volcano ends these three sentences with ';' (how it joins its messages); its users grep for that.
    assert errors.pop(0).endswith("spec.volumes[0].mountPath in body should be at least 1 chars long")  # CRD's line
    assert errors[0] == "spec.volumes[0].mountPath: Required value: mountPath is required;"
    assert errors[1] == 'spec.volumes[2].mountPath: Duplicate value: "/data": duplicated mountPath: /data;'
    assert errors[2] == "spec.volumes[3]: Required value: either VolumeClaim or VolumeClaimName must be specified;"
    assert errors[3].startswith('spec.volumes[4].volumeClaimName: Invalid value: "c": conflict: If you want to use')
    assert errors[4].startswith('spec.volumes[5].volumeClaimName: Invalid value: "Bad_Claim": invalid VolumeClaimName')
    assert len(errors) == 5


@pytest.mark.parametrize(
    ("partition", "replicas", "min_available", "fragment"),
    [
        ({"totalPartitions": 0, "partitionSize": 2}, 2, None, "'TotalPartitions' must be greater than 0 in task: p"),
        ({"totalPartitions": 2, "partitionSize": 0}, 2, None, "'PartitionSize' must be greater than 0 in task: p"),
        (
            {"totalPartitions": 2, "partitionSize": 2},
            5,
            None,
            "'Replicas' are not equal to TotalPartitions*PartitionSize",
        ),
        (
            {"totalPartitions": 2, "partitionSize": 2, "minPartitions": 1},
            4,
            3,
            "'MinAvailable' is not equal to MinPartitions*PartitionSize in task: p, job: job",
        ),
    ],
)
def test_partition_policy_arithmetic(partition, replicas, min_available, fragment):
    task = vc_task("p", replicas, partitionPolicy=partition)
    if min_available is not None:
        task["minAvailable"] = min_available
    one_error_with(vcjob(task), fragment)
    good = vc_task("p", 4, partitionPolicy={"totalPartitions": 2, "partitionSize": 2, "minPartitions": 1})
    assert errors_of(vcjob(good)) == []


@pytest.mark.parametrize("where", ["job", "partition"])
def test_highest_tier_allowed_and_name_are_exclusive(where):
    topology = {"highestTierAllowed": 1, "highestTierName": "spine"}
    if where == "job":
        obj = vcjob(vc_task("w", 1), networkTopology=topology)
        path = "spec.networkTopology.highestTierName"
    else:
        policy = {"totalPartitions": 1, "partitionSize": 1, "networkTopology": topology}
        obj = vcjob(vc_task("w", 1, partitionPolicy=policy))
        path = "spec.tasks[0].partitionPolicy.networkTopology.highestTierName"
    assert errors_of(obj) == [
        f"{path}: Forbidden: must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology "
        "simultaneously"
    ]
    topology["highestTierName"] = ""
    assert errors_of(obj) == []


def test_pod_template_checks_are_reused():
    task = vc_task("w", 1)
    task["template"]["spec"]["containers"][0].pop("image")
    assert errors_of(vcjob(task)) == ["spec.tasks[0].template.spec.containers[0].image: Required value"]
    assert "spec.tasks[0].template: Required value" in errors_of(vcjob({"name": "w", "replicas": 1}))[0]


def test_numa_topology_policy_needs_whole_cpus():
    task = vc_task("w", 1, topologyPolicy="single-numa-node")
    task["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "500m"}}
    (error,) = errors_of(vcjob(task))
    assert "the cpu request isn't an integer in spec.task[0] container[0]." in error
    task["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "2"}}
    assert errors_of(vcjob(task)) == []
    task["topologyPolicy"] = "none"
    task["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "500m"}}
    assert errors_of(vcjob(task)) == []


def test_priority_class_is_a_dns_subdomain_and_a_bad_queue_name_only_warned():
    # Volcano's webhook admits any queue name (its tables use "childQueue"); only its CRD has the pattern.
    obj = vcjob(vc_task("w", 1), queue="Bad_Queue", priorityClassName="Bad_Class")
    errors = errors_of(obj)
    assert [e.split(":")[0] for e in errors] == ["spec.priorityClassName"]
    assert any(w.startswith("spec.queue: 'Bad_Queue': Volcano's CRD refuses it") for w in review(obj).warnings)


def test_all_violations_in_one_answer():
    obj = vcjob(
        vc_task("w", 1, minAvailable=2),
        vc_task("w", 1),
        plugins={"nope": []},
        policies=[{"exitCode": 0, "action": "RestartJob"}],
        minAvailable=9,
    )
    assert len(errors_of(obj)) == 5


# --- queue (cluster view supplied by the transport) ------------------------------------


class Queues:
    def __init__(self, *queues: QueueInfo) -> None:
        self.by_name = {q.name: q for q in queues}

    def queue(self, name: str) -> QueueInfo | None:
        return self.by_name.get(name)


@pytest.mark.parametrize(
    ("queue", "fragment"),
    [
        ("missing", 'unable to find job queue: queue.scheduling.volcano.sh "missing" not found'),
        ("closed", "can only submit job to queue with state `Open`, queue `closed` status is `Closed`"),
        ("root", "can not submit job to root queue"),
        ("parent", "can only submit job to leaf queue, queue `parent` has 2 child queues"),
    ],
)
def test_queue_check(queue, fragment):
    queues = Queues(
        QueueInfo("default", "Open", 0),
        QueueInfo("closed", "Closed", 0),
        QueueInfo("root", "Open", 1),
        QueueInfo("parent", "Open", 2),
    )
    job = review(vcjob(vc_task("w", 1), queue=queue)).defaulted
    (error,) = check_queue(job, queues)
    assert str(error).startswith("spec.queue: ")
    assert fragment in str(error)
    assert check_queue(review(vcjob(vc_task("w", 1))).defaulted, queues) == []


# --- UPDATE ------------------------------------------------------------------------------


def stored():
    return review(vcjob(vc_task("a", 2), vc_task("b", 2), priorityClassName="low")).defaulted


def test_update_may_change_min_available_replicas_and_priority_class():
    old = stored()
    new = copy.deepcopy(old)
    new["spec"]["tasks"][0]["replicas"] = 4
    new["spec"]["tasks"][1]["minAvailable"] = 1
    new["spec"]["minAvailable"] = 3
    new["spec"]["priorityClassName"] = "high"
    new["metadata"]["labels"] = {"x": "y"}
    assert errors_of(new, old) == []


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda s: s.update(queue="other"), "spec.queue"),
        (lambda s: s.update(maxRetry=9), "spec.maxRetry"),
        (lambda s: s.update(plugins={"env": []}), "spec.plugins"),
        (lambda s: s["tasks"][0].update(name="c"), "spec.tasks[0].name"),
        (lambda s: s["tasks"][1]["template"]["spec"]["containers"][0].update(image="x:2"), "spec.tasks[1].template"),
    ],
)
def test_update_forbids_other_fields(change, path):
    old = stored()
    new = copy.deepcopy(old)
    change(new["spec"])
    assert errors_of(new, old) == [
        f"{path}: Forbidden: job updates may not change fields other than `minAvailable`, "
        "`tasks[*].replicas under spec` and `PriorityClassName`"
    ]


def test_update_may_not_add_or_remove_tasks():
    old = stored()
    new = copy.deepcopy(old)
    new["spec"]["tasks"].append(vc_task("c", 1))
    assert errors_of(new, old) == ["spec.tasks: Forbidden: job updates may not add or remove tasks"]


def test_update_rules_all_reported():
    old = stored()
    new = copy.deepcopy(old)
    new["spec"]["tasks"][0]["minAvailable"] = 5
    new["spec"]["minAvailable"] = 10
    new["spec"]["queue"] = "other"
    errors = errors_of(new, old)
    assert errors == [
        "spec.tasks[0].minAvailable: Invalid value: 5: 'minAvailable' must be <= 'replicas' in task: a",
        "spec.minAvailable: Invalid value: 10: job 'minAvailable' must not be greater than total replicas",
        "spec.queue: Forbidden: job updates may not change fields other than `minAvailable`, "
        "`tasks[*].replicas under spec` and `PriorityClassName`",
    ]


def test_update_negative_values():
    old = stored()
    new = copy.deepcopy(old)
    new["spec"]["tasks"][0]["replicas"] = -1
    new["spec"]["tasks"][1]["minAvailable"] = -1
    errors = errors_of(new, old)
    assert any("'replicas' must be >= 0 in task: a" in e for e in errors)
    assert any("'minAvailable' must be >= 0 in task: b" in e for e in errors)


def test_update_partition_arithmetic():
    policy = {"totalPartitions": 2, "partitionSize": 2}
    old = review(vcjob(vc_task("p", 4, partitionPolicy=policy))).defaulted
    new = copy.deepcopy(old)
    new["spec"]["tasks"][0]["replicas"] = 6
    one_error_with(new, "'Replicas' are not equal to TotalPartitions*PartitionSize in task: p, job: job", old)


def test_update_volume_claim_name_filled_by_controller_is_allowed():
    volumes = [{"mountPath": "/d", "volumeClaim": {"accessModes": ["ReadWriteOnce"]}}]
    old = review(vcjob(vc_task("a", 1), volumes=volumes)).defaulted
    new = copy.deepcopy(old)
    new["spec"]["volumes"][0]["volumeClaimName"] = "job-volume-abc"
    assert errors_of(new, old) == []


def test_update_does_not_rerun_create_only_rules():
    old = review(vcjob(vc_task("a", 1), plugins={"unknown": []})).defaulted
    new = copy.deepcopy(old)
    new["spec"]["tasks"][0]["replicas"] = 2
    assert errors_of(new, old) == []


def test_exit_code_policy_action_is_not_checked_but_warned():
    obj = vcjob(vc_task("w", 1), policies=[{"exitCode": 3, "action": "Explode"}, {"exitCode": 4}])
    verdict = review(obj)
    assert verdict.errors == []
    assert verdict.warnings == [
        'spec.policies[0]: exit-code policy with action "Explode": Volcano runs none',
        "spec.policies[1]: exit-code policy with no action: Volcano runs none",
    ]


def _pod_level(pod_resources, containers, init=()):
    task = vc_task("w", 1)
    spec = task["template"]["spec"]
    spec["resources"] = pod_resources
    spec["containers"] = [{"name": f"c{i}", "image": "b", "resources": r} for i, r in enumerate(containers)]
    if init:
        spec["initContainers"] = [{"name": f"i{i}", "image": "b", **extra} for i, extra in enumerate(init)]
    return errors_of(vcjob(task))


def test_pod_level_resources_against_the_containers():
    # Sidecars (restartable init containers) add to the containers; an ordinary init container
    # runs beside the sidecars started before it, and only raises the total if it is bigger.
    sidecar = {"restartPolicy": "Always", "resources": {"requests": {"memory": "1Gi"}}}
    big_init = {"resources": {"requests": {"memory": "3Gi"}}}
    (error,) = _pod_level({"requests": {"memory": "2Gi"}}, [{"requests": {"memory": "1Gi"}}], [sidecar, big_init])
    assert error.endswith(
        'spec.task[0].template.spec.resources.requests[memory]: Invalid value: "2Gi": '
        "must be greater than or equal to aggregate container requests of 4Gi"
    )
    assert _pod_level({"requests": {"memory": "4Gi"}}, [{"requests": {"memory": "1Gi"}}], [sidecar, big_init]) == []
    (error,) = _pod_level({"limits": {"hugepages-2Mi": "2Mi"}}, [{"limits": {"hugepages-2Mi": "2Mi"}}] * 2)
    assert (
        'limits[hugepages-2Mi]: Invalid value: "2Mi": '
        "must be greater than or equal to aggregate container limits of 4Mi" in error
    )
    (error,) = _pod_level({"limits": {"cpu": "1"}}, [{"limits": {"cpu": "2"}}])
    assert error.startswith("spec.tasks[0].template.spec.containers[0].resources.limits[cpu]")
    assert error.endswith("must be less than or equal to pod limits of 1")
    # Beside another error of the template, as Kubernetes' pod validation collects them all.
    errors = _pod_level(
        {"limits": {"hugepages-2Mi": "2Mi"}},
        [{"limits": {"hugepages-2Mi": "2Mi"}}, {"limits": {"hugepages-2Mi": "2Mi", "nvidia.com/gpu": "0.5"}}],
    )
    assert [e.split(": Invalid value")[0] for e in errors] == [
        "spec.tasks[0].template.spec.containers[1].resources.limits[nvidia.com/gpu]",
        "spec.tasks[0].template.spec.resources.limits[hugepages-2Mi]",
    ]


# --- what the CRD bounds and types for its CEL rules (bounds.py), on CREATE and UPDATE -------------


def test_lists_and_strings_beyond_the_crds_bounds():
    many = vcjob(*(vc_task(f"t{i}", 1) for i in range(31)))
    assert errors_of(many) == ["spec.tasks: Too many: 31: must have at most 30 items"]
    long_argument = vcjob(vc_task("w", 1), plugins={"env": ["x" * 1025]})
    assert errors_of(long_argument) == ["spec.plugins.env[0]: Too long: may not be more than 1024 bytes"]
    obj = vcjob(vc_task("w", 1, dependsOn={"name": ["m"] * 17}), vc_task("m", 1))
    assert "spec.tasks[0].dependsOn.name: Too many: 17: must have at most 16 items" in errors_of(obj)
    policy = vcjob(vc_task("w", 1), policies=[{"exitCode": 3, "action": "x" * 129}])
    assert errors_of(policy) == ["spec.policies[0].action: Too long: may not be more than 128 bytes"]
    within = vcjob(*(vc_task(f"t{i}", 1) for i in range(30)), plugins={"env": ["x" * 1024]})
    assert errors_of(within) == []


def test_bounds_hold_on_update_too():
    old = vcjob(vc_task("w", 1), volumes=[{"mountPath": "/d", "volumeClaim": {}}])
    new = copy.deepcopy(old)
    new["spec"]["volumes"][0]["volumeClaimName"] = "c" * 254  # the controller's to write, but not that long
    assert errors_of(new, old) == ["spec.volumes[0].volumeClaimName: Too long: may not be more than 253 bytes"]


def test_pod_level_resources_and_init_restart_policy_have_the_crds_types():
    task = vc_task("w", 1)
    task["template"]["spec"]["resources"] = {"requests": {"cpu": 1.5, "memory": "1Gi"}, "limits": ["cpu"]}
    task["template"]["spec"]["initContainers"] = [{"name": "i", "image": "i", "restartPolicy": 1}]
    assert errors_of(vcjob(task)) == [
        "spec.tasks[0].template.spec.resources.requests[cpu]: Invalid value: 1.5: must be of type integer or string",
        'spec.tasks[0].template.spec.resources.limits: Invalid value: "array": '
        'spec.tasks[0].template.spec.resources.limits in body must be of type object: "array"',
        'spec.tasks[0].template.spec.initContainers[0].restartPolicy: Invalid value: "integer": '
        'spec.tasks[0].template.spec.initContainers[0].restartPolicy in body must be of type string: "integer"',
    ]
