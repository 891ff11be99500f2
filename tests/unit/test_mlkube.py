"""MxJob (mxnet.mlkube.io/v1beta1): defaults and the mxnet-operator's rules."""

from __future__ import annotations

import pytest

from testkit.builders import container, errors_of, mx_replica, mxjob, replica, review


def dist_job(**overrides):
    roles = {"SCHEDULER": mx_replica("SCHEDULER"), "SERVER": mx_replica("SERVER", 2), "WORKER": mx_replica("WORKER", 2)}
    roles.update(overrides)
    return mxjob("dist", *[r for r in roles.values() if r is not None])


def test_defaults():
    obj = mxjob("local", replica(container("mxnet")))
    verdict = review(obj)
    (spec,) = verdict.defaulted["spec"]["replicaSpecs"]
    assert (spec["replicas"], spec["PsRootPort"], spec["mxReplicaType"]) == (1, 9091, "WORKER")
    assert "terminationMessagePolicy" not in spec["template"]["spec"]["containers"][0]
    assert verdict.patch == [
        {"op": "add", "path": "/spec/replicaSpecs/0/replicas", "value": 1},
        {"op": "add", "path": "/spec/replicaSpecs/0/PsRootPort", "value": 9091},
        {"op": "add", "path": "/spec/replicaSpecs/0/mxReplicaType", "value": "WORKER"},
    ]
    assert review(verdict.defaulted).patch == []


def test_given_values_are_kept():
    obj = mxjob("dist", mx_replica("SCHEDULER", 1, PsRootPort=9000), mx_replica("SERVER"), mx_replica("WORKER", 3))
    specs = review(obj).defaulted["spec"]["replicaSpecs"]
    assert specs[0]["PsRootPort"] == 9000
    assert specs[2]["replicas"] == 3


def test_valid_jobs():
    assert errors_of(dist_job()) == []
    assert errors_of(mxjob("local", mx_replica("WORKER", 1))) == []
    assert errors_of(mxjob("local", replica(container("mxnet")))) == []


def test_local_allows_only_workers():
    obj = mxjob("local", mx_replica("WORKER"), mx_replica("SERVER"))
    assert errors_of(obj) == [
        'spec.replicaSpecs[1].mxReplicaType: Invalid value: "SERVER": job mode is local, but its replicas set have '
        "replicas type other than worker"
    ]


def test_local_allows_at_most_one_worker():
    assert errors_of(mxjob("local", mx_replica("WORKER", 2))) == [
        "spec.replicaSpecs[0].replicas: Invalid value: 2: job mode is local, but it has more than 1 worker"
    ]


@pytest.mark.parametrize("missing", ["SCHEDULER", "SERVER", "WORKER"])
def test_dist_needs_every_role(missing):
    assert errors_of(dist_job(**{missing: None})) == [
        f"spec.replicaSpecs: Required value: dist job mode without replica type {missing}"
    ]


@pytest.mark.parametrize("count", [0, 2])
def test_scheduler_has_exactly_one_replica(count):
    assert errors_of(dist_job(SCHEDULER=mx_replica("SCHEDULER", count))) == [
        f"spec.replicaSpecs[0].replicas: Invalid value: {count}: The SCHEDULER must have Replicas = 1"
    ]


def test_unknown_job_mode_is_named():
    assert errors_of(mxjob("cluster", mx_replica("WORKER"))) == [
        'spec.jobMode: Unsupported value: "cluster": supported values: "local", "dist"'
    ]


def test_job_mode_is_required():
    assert errors_of(mxjob(None, mx_replica("WORKER"))) == ["spec.jobMode: Required value"]


def test_unknown_replica_type_lists_the_allowed_ones():
    assert errors_of(mxjob("local", mx_replica("PS"))) == [
        'spec.replicaSpecs[0].mxReplicaType: Unsupported value: "PS": supported values: "SCHEDULER", "SERVER", "WORKER"'
    ]


def test_each_replica_needs_an_mxnet_container():
    obj = mxjob("local", replica(container("trainer")))
    assert errors_of(obj) == [
        "spec.replicaSpecs[0].template.spec.containers: Required value: Replica type WORKER is missing a container for "
        "mxnet"
    ]


def test_a_role_appears_once():
    obj = mxjob("dist", mx_replica("SCHEDULER"), mx_replica("SERVER"), mx_replica("WORKER"), mx_replica("WORKER"))
    assert errors_of(obj) == ['spec.replicaSpecs[3].mxReplicaType: Duplicate value: "WORKER"']


def test_a_second_scheduler_is_a_duplicate_and_still_has_one_replica():
    obj = mxjob("dist", mx_replica("SCHEDULER"), mx_replica("SERVER"), mx_replica("WORKER"), mx_replica("SCHEDULER", 2))
    assert errors_of(obj) == [
        "spec.replicaSpecs[3].replicas: Invalid value: 2: The SCHEDULER must have Replicas = 1",
        'spec.replicaSpecs[3].mxReplicaType: Duplicate value: "SCHEDULER"',
    ]


def test_replica_list_present_and_not_empty():
    assert errors_of(mxjob("local")) == [
        "spec.replicaSpecs: Invalid value: 0: spec.replicaSpecs in body should have at least 1 items"
    ]
    obj = mxjob("local")
    del obj["spec"]["replicaSpecs"]
    assert errors_of(obj) == ["spec.replicaSpecs: Required value"]


def test_replicas_and_port_ranges():
    obj = mxjob("dist", mx_replica("SCHEDULER", PsRootPort=70000), mx_replica("SERVER", -1), mx_replica("WORKER"))
    assert errors_of(obj) == [
        "spec.replicaSpecs[0].PsRootPort: Invalid value: 70000: "
        "spec.replicaSpecs[0].PsRootPort in body should be less than or equal to 65535",
        "spec.replicaSpecs[1].replicas: Invalid value: -1: "
        "spec.replicaSpecs[1].replicas in body should be greater than or equal to 0",
    ]


def test_null_entries_are_reported_not_crashed_on():
    obj = mxjob("local", None, mx_replica("WORKER"))
    verdict = review(obj)
    assert verdict.defaulted["spec"]["replicaSpecs"][0] is None
    assert [str(e) for e in verdict.errors] == [
        'spec.replicaSpecs[0]: Invalid value: "null": spec.replicaSpecs[0] in body must be of type object: "null"'
    ]


def test_derived_names_use_the_lower_case_role():
    obj = dist_job(WORKER=mx_replica("WORKER", 100))
    obj["metadata"]["name"] = "m" * 51  # + -scheduler-0 = 63, + -worker-99 = 61
    assert errors_of(obj) == []
    obj["metadata"]["name"] = "m" * 52
    (error,) = errors_of(obj)
    assert f'"{"m" * 52}-scheduler-0" derived from it' in error


def test_pod_template_rules_apply():
    obj = mxjob("local", replica(container("mxnet", ports=[{"containerPort": 0}])))
    assert errors_of(obj) == [
        "spec.replicaSpecs[0].template.spec.containers[0].ports[0].containerPort: Invalid value: 0: must be between 1 "
        "and 65535, inclusive"
    ]
