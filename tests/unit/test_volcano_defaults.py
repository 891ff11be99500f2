"""Volcano Job defaults: those of Volcano's mutating webhook (mutate_job.go) and CRD."""

from __future__ import annotations

import pytest

from jobgate.engine.jsonpatch import apply_patch
from jobgate.review import defaulting_patch, kind_of
from testkit.builders import review, vc_task, vcjob


def defaulted(obj):
    return review(obj).defaulted["spec"]


def test_job_level_defaults():
    spec = defaulted(vcjob(vc_task("worker", 2)))
    assert (spec["queue"], spec["schedulerName"], spec["maxRetry"], spec["minAvailable"]) == (
        "default",
        "volcano",
        3,
        2,
    )


def test_given_values_are_kept():
    obj = vcjob(vc_task("w", 4, minAvailable=1, maxRetry=7), queue="q1", schedulerName="other", maxRetry=5)
    obj["spec"]["minAvailable"] = 2
    spec = defaulted(obj)
    assert (spec["queue"], spec["schedulerName"], spec["maxRetry"], spec["minAvailable"]) == ("q1", "other", 5, 2)
    assert (spec["tasks"][0]["minAvailable"], spec["tasks"][0]["maxRetry"]) == (1, 7)


def test_explicit_zero_counts_as_unset_like_volcano():
    obj = vcjob(vc_task("w", 3, maxRetry=0), maxRetry=0, minAvailable=0)
    spec = defaulted(obj)
    assert (spec["maxRetry"], spec["minAvailable"], spec["tasks"][0]["maxRetry"]) == (3, 3, 3)


def test_explicit_task_min_available_zero_is_kept():
    spec = defaulted(vcjob(vc_task("w", 3, minAvailable=0), vc_task("p", 2)))
    assert spec["tasks"][0]["minAvailable"] == 0
    assert spec["minAvailable"] == 2


def test_task_names_default_to_default_index():
    spec = defaulted(vcjob(vc_task(None, 1), vc_task("named", 1), vc_task("", 1)))
    assert [t["name"] for t in spec["tasks"]] == ["default0", "named", "default2"]


def test_task_min_available_from_partitions_when_min_partitions_set():
    partitioned = vc_task("p", 8, partitionPolicy={"totalPartitions": 4, "partitionSize": 2, "minPartitions": 3})
    without_min = vc_task("q", 4, partitionPolicy={"totalPartitions": 2, "partitionSize": 2})
    spec = defaulted(vcjob(partitioned, without_min))
    assert [t["minAvailable"] for t in spec["tasks"]] == [6, 4]
    assert spec["minAvailable"] == 10


def test_job_min_available_is_sum_of_task_min_available():
    spec = defaulted(vcjob(vc_task("a", 3, minAvailable=1), vc_task("b", 2)))
    assert spec["minAvailable"] == 3


def test_host_network_gets_cluster_first_with_host_net():
    task = vc_task("w", 1)
    task["template"]["spec"]["hostNetwork"] = True
    other = vc_task("x", 1)
    other["template"]["spec"].update(hostNetwork=True, dnsPolicy="Default")
    spec = defaulted(vcjob(task, other, vc_task("y", 1)))
    assert spec["tasks"][0]["template"]["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert spec["tasks"][1]["template"]["spec"]["dnsPolicy"] == "Default"
    assert "dnsPolicy" not in spec["tasks"][2]["template"]["spec"]


@pytest.mark.parametrize(
    ("plugins", "expected"),
    [
        ({"tensorflow": []}, {"tensorflow": [], "svc": []}),
        ({"pytorch": ["--port=1"]}, {"pytorch": ["--port=1"], "svc": []}),
        ({"ray": []}, {"ray": [], "svc": []}),
        ({"mpi": []}, {"mpi": [], "svc": [], "ssh": []}),
        ({"mpi": [], "svc": ["--disable-network-policy"]}, {"mpi": [], "svc": ["--disable-network-policy"], "ssh": []}),
        ({"env": [], "hcclrank": []}, {"env": [], "hcclrank": []}),
    ],
)
def test_framework_plugins_imply_svc_and_ssh(plugins, expected):
    tasks = [vc_task("master", 1), vc_task("worker", 1)]
    assert defaulted(vcjob(*tasks, plugins=plugins))["plugins"] == expected


def test_patch_is_minimal_and_defaulting_idempotent():
    obj = vcjob(vc_task("w", 2), plugins={"mpi": []}, queue="q")
    obj["spec"]["tasks"][0]["name"] = "master"
    verdict = review(obj)
    assert verdict.patch == [
        {"op": "add", "path": "/spec/schedulerName", "value": "volcano"},
        {"op": "add", "path": "/spec/maxRetry", "value": 3},
        {"op": "add", "path": "/spec/tasks/0/minAvailable", "value": 2},
        {"op": "add", "path": "/spec/tasks/0/maxRetry", "value": 3},
        {"op": "add", "path": "/spec/minAvailable", "value": 2},
        {"op": "add", "path": "/spec/plugins/svc", "value": []},
        {"op": "add", "path": "/spec/plugins/ssh", "value": []},
    ]
    assert apply_patch(obj, verdict.patch) == verdict.defaulted
    assert review(verdict.defaulted).patch == []


def test_unknown_fields_survive():
    obj = vcjob(vc_task("w", 1, futureTaskField={"a": 1}), futureJobField=[1, 2])
    spec = defaulted(obj)
    assert spec["futureJobField"] == [1, 2]
    assert spec["tasks"][0]["futureTaskField"] == {"a": 1}


@pytest.mark.parametrize(
    "spec",
    [
        None,
        {},
        {"tasks": None},
        {"tasks": "x"},
        {"tasks": [None, 3, "x", {"replicas": "two", "template": 5}]},
        {"tasks": [{"partitionPolicy": {"minPartitions": "x"}}], "plugins": ["mpi"]},
        {"tasks": [{"template": {"spec": None}}], "plugins": {"mpi": None}},
    ],
)
def test_half_written_input_never_crashes_and_mutate_never_denies(spec):
    obj = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j"}, "spec": spec}
    kind = kind_of(obj)
    patch = defaulting_patch(kind, obj)
    assert apply_patch(obj, patch) == kind.default(obj)
    for error in review(obj).errors:
        assert str(error)
