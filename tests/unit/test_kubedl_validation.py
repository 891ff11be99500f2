"""One test per KubeDL validation rule: each asserts the exact error, so removing the rule fails it."""

from __future__ import annotations

import pytest

from testkit.builders import REPLICA_FIELDS, container, errors_of, fields_of, kubedl_job, replica, review, tfjob


@pytest.mark.parametrize("kind", sorted(REPLICA_FIELDS))
def test_minimal_job_of_every_kind_is_admitted(kind):
    verdict = review(kubedl_job(kind))
    assert verdict.errors == []


def test_all_violations_in_one_answer():
    obj = tfjob(
        {"Worker": replica(container(), replicas=-1), "Chief": replica(container(), replicas=3)},
        backoffLimit=-1,
    )
    assert sorted(errors_of(obj)) == [
        "spec.backoffLimit: Invalid value: -1: spec.backoffLimit in body should be greater than or equal to 0",
        "spec.tfReplicaSpecs.Worker.replicas: Invalid value: -1: "
        "spec.tfReplicaSpecs.Worker.replicas in body should be greater than or equal to 0",
        "spec.tfReplicaSpecs[Chief].replicas: Invalid value: 3: must be less than or equal to 1",
    ]


def test_status_is_422_invalid_with_causes():
    obj = tfjob({"Worker": replica(container(), replicas=-1)}, name="mnist")
    status = review(obj).status()
    assert status["code"] == 422
    assert status["reason"] == "Invalid"
    assert status["status"] == "Failure"
    assert status["message"] == (
        'TFJob.training.kubedl.io "mnist" is invalid: spec.tfReplicaSpecs.Worker.replicas: Invalid value: -1: '
        "spec.tfReplicaSpecs.Worker.replicas in body should be greater than or equal to 0"
    )
    assert status["details"] == {
        "name": "mnist",
        "group": "training.kubedl.io",
        "kind": "TFJob",
        "causes": [
            {
                "reason": "FieldValueInvalid",
                "message": "Invalid value: -1: spec.tfReplicaSpecs.Worker.replicas in body should be greater than "
                "or equal to 0",
                "field": "spec.tfReplicaSpecs.Worker.replicas",
            }
        ],
    }


# --- metadata.name ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["Mnist", "1mnist", "mnist-", "mn_ist", "mnist.v2"])
def test_name_must_be_a_dns1035_label(name):
    errors = errors_of(tfjob(name=name))
    assert errors == [
        f'metadata.name: Invalid value: "{name}": a DNS-1035 label must consist of lower case alphanumeric '
        "characters or '-', start with an alphabetic character, and end with an alphanumeric character "
        "(e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
    ]


def test_name_longer_than_63_characters():
    errors = errors_of(tfjob(name="a" * 64))
    assert 'metadata.name: Invalid value: "' + "a" * 64 + '": must be no more than 63 characters' in errors


def test_derived_pod_name_must_fit_in_63_characters():
    name = "a" * 50
    obj = tfjob({"Evaluator": replica(container(), replicas=12)}, name=name)  # a...-evaluator-11: 63
    assert errors_of(obj) == []
    obj = tfjob({"Evaluator": replica(container(), replicas=11)}, name=name + "b")  # ...-evaluator-10: 64
    (error,) = errors_of(obj)
    assert error.startswith(f'metadata.name: Invalid value: "{name}b": must be no more than 50 characters')
    assert f'"{name}b-evaluator-10"' in error


def test_generate_name_is_checked_with_room_for_the_suffix():
    obj = tfjob()
    obj["metadata"] = {"generateName": "a" * 52 + "-"}  # + 5 random + -worker-0 = 67
    (error,) = errors_of(obj)
    assert error.startswith("metadata.generateName: Invalid value:")


def test_generate_name_beside_a_name_is_a_subdomain_prefix_on_create():
    """The apiserver checks every object's generateName on CREATE, even when a name is given."""
    obj = tfjob()
    obj["metadata"]["generateName"] = "Mnist-"
    (error,) = errors_of(obj)
    assert error.startswith('metadata.generateName: Invalid value: "Mnist-": a lowercase RFC 1123 subdomain ')
    obj["metadata"]["generateName"] = "mnist-"  # a trailing dash is allowed: the suffix follows it
    assert errors_of(obj) == []
    stored = tfjob()
    obj["metadata"]["generateName"] = "Mnist-"
    assert errors_of(obj, stored) == []  # on UPDATE only a path segment's characters
    obj["metadata"]["generateName"] = "a/b%"
    assert errors_of(obj, stored) == [
        "metadata.generateName: Invalid value: \"a/b%\": may not contain '/'",
        "metadata.generateName: Invalid value: \"a/b%\": may not contain '%'",
    ]


def test_name_is_required():
    obj = tfjob()
    obj["metadata"] = {"namespace": "default"}
    assert errors_of(obj) == ["metadata.name: Required value: name or generateName is required"]


# --- replica map ----------------------------------------------------------------------------------


def test_replica_map_is_required():
    obj = tfjob()
    del obj["spec"]["tfReplicaSpecs"]
    assert errors_of(obj) == ["spec.tfReplicaSpecs: Required value"]


def test_replica_map_must_not_be_empty():
    assert errors_of(tfjob({})) == [
        "spec.tfReplicaSpecs: Invalid value: 0: spec.tfReplicaSpecs in body should have at least 1 properties"
    ]


def test_spec_is_required():
    obj = tfjob()
    del obj["spec"]
    assert errors_of(obj) == ["spec: Required value"]


@pytest.mark.parametrize(
    ("kind", "allowed"),
    [
        ("TFJob", '"PS", "Worker", "Chief", "Master", "Evaluator"'),
        ("PyTorchJob", '"Master", "Worker"'),
        ("XGBoostJob", '"Master", "Worker"'),
        ("MPIJob", '"Launcher", "Worker"'),
        ("XDLJob", '"Worker", "PS", "Scheduler", "ExtendRole"'),
        ("MarsJob", '"Scheduler", "Worker", "WebService"'),
    ],
)
def test_replica_types_are_the_kinds_own(kind, allowed):
    field, container_name = REPLICA_FIELDS[kind]
    obj = kubedl_job(kind)
    obj["spec"][field]["Trainer"] = replica(container(container_name))
    assert f'spec.{field}[Trainer]: Unsupported value: "Trainer": supported values: {allowed}' in errors_of(obj)


def test_mpijob_types_are_case_sensitive():
    obj = kubedl_job("MPIJob", {"launcher": replica(container("mpi"))})
    errors = errors_of(obj)
    assert 'spec.mpiReplicaSpecs[launcher]: Unsupported value: "launcher": supported values: "Launcher", "Worker"' in (
        errors
    )


def test_same_type_twice_in_different_case():
    obj = tfjob({"Worker": replica(container()), "worker": replica(container())})
    assert errors_of(obj) == ['spec.tfReplicaSpecs[worker]: Duplicate value: "worker"']


def test_two_other_spellings_of_one_type_are_both_duplicates():
    obj = tfjob({"worker": replica(container()), "WORKER": replica(container())})
    assert errors_of(obj) == [
        'spec.tfReplicaSpecs[worker]: Duplicate value: "worker"',
        'spec.tfReplicaSpecs[WORKER]: Duplicate value: "WORKER"',
    ]


def test_null_replica_is_pruned_as_the_apiserver_does():
    # The apiserver drops a null map entry when it decodes the job: here the map is then empty.
    assert errors_of(tfjob({"Worker": None})) == [
        "spec.tfReplicaSpecs: Invalid value: 0: spec.tfReplicaSpecs in body should have at least 1 properties"
    ]
    assert errors_of(tfjob({"Worker": replica(container()), "PS": None})) == []


def test_replicas_must_not_be_negative():
    assert errors_of(tfjob({"Worker": replica(container(), replicas=-2)})) == [
        "spec.tfReplicaSpecs.Worker.replicas: Invalid value: -2: "
        "spec.tfReplicaSpecs.Worker.replicas in body should be greater than or equal to 0"
    ]


def test_replicas_must_be_an_integer():
    assert errors_of(tfjob({"Worker": replica(container(), replicas="2")})) == [
        'spec.tfReplicaSpecs.Worker.replicas: Invalid value: "string": '
        'spec.tfReplicaSpecs.Worker.replicas in body must be of type integer: "string"'
    ]


def test_replicas_above_int32():
    assert errors_of(tfjob({"Worker": replica(container(), replicas=2**31)})) == [
        "spec.tfReplicaSpecs.Worker.replicas: Invalid value: 2147483648: "
        "spec.tfReplicaSpecs.Worker.replicas in body should be less than or equal to 2147483647"
    ]


def test_template_is_required():
    assert errors_of(tfjob({"Worker": {"replicas": 1}})) == ["spec.tfReplicaSpecs.Worker.template: Required value"]


def test_template_needs_a_container():
    assert errors_of(tfjob({"Worker": replica()})) == [
        "spec.tfReplicaSpecs[Worker].template.spec.containers: Required value: must have at least one container"
    ]


def test_template_needs_a_pod_spec():
    assert errors_of(tfjob({"Worker": {"template": {"metadata": {}}}})) == [
        "spec.tfReplicaSpecs[Worker].template.spec: Required value"
    ]


@pytest.mark.parametrize(("kind", "name"), [(k, v[1]) for k, v in sorted(REPLICA_FIELDS.items()) if k != "MPIJob"])
def test_every_replica_needs_the_framework_container(kind, name):
    field, _ = REPLICA_FIELDS[kind]
    obj = kubedl_job(kind)
    role = next(iter(obj["spec"][field]))
    obj["spec"][field][role] = replica(container("main"))
    assert errors_of(obj) == [
        f"spec.{field}[{role}].template.spec.containers: Required value: must have at least one container with name "
        f"{name}"
    ]


def test_mpijob_needs_no_framework_container():
    obj = kubedl_job("MPIJob", {"Launcher": replica(container("launcher"))})
    assert errors_of(obj) == []


# --- role rules -------------------------------------------------------------------------------------


def test_tfjob_chief_and_master_together():
    obj = tfjob({"Chief": replica(container()), "Master": replica(container()), "Worker": replica(container())})
    assert errors_of(obj) == ["spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role"]


@pytest.mark.parametrize("leader", ["Chief", "Master"])
def test_tfjob_leader_has_at_most_one_replica(leader):
    assert errors_of(tfjob({leader: replica(container(), replicas=2)})) == [
        f"spec.tfReplicaSpecs[{leader}].replicas: Invalid value: 2: must be less than or equal to 1"
    ]
    assert errors_of(tfjob({leader: replica(container(), replicas=0)})) == []


@pytest.mark.parametrize(
    ("kind", "leader"), [("PyTorchJob", "Master"), ("XGBoostJob", "Master"), ("MPIJob", "Launcher")]
)
def test_leader_must_be_present(kind, leader):
    field, name = REPLICA_FIELDS[kind]
    obj = kubedl_job(kind, {"Worker": replica(container(name))})
    assert errors_of(obj) == [f"spec.{field}[{leader}]: Required value: must be present"]


@pytest.mark.parametrize(
    ("kind", "leader"), [("PyTorchJob", "Master"), ("XGBoostJob", "Master"), ("MPIJob", "Launcher")]
)
@pytest.mark.parametrize("count", [0, 2])
def test_leader_has_exactly_one_replica(kind, leader, count):
    field, name = REPLICA_FIELDS[kind]
    obj = kubedl_job(kind, {leader: replica(container(name), replicas=count)})
    assert errors_of(obj) == [f"spec.{field}[{leader}].replicas: Invalid value: {count}: must be 1"]


def test_leader_replicas_default_to_one():
    assert errors_of(kubedl_job("PyTorchJob", {"master": replica(container("pytorch"))})) == []


# --- run policy ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("cleanPodPolicy", "Sometimes", 'Unsupported value: "Sometimes": supported values: "All", "Running", "None"'),
        ("ttlSecondsAfterFinished", -1, "Invalid value: -1: {} in body should be greater than or equal to 0"),
        ("activeDeadlineSeconds", 0, "Invalid value: 0: {} in body should be greater than 0"),
        ("activeDeadlineSeconds", -5, "Invalid value: -5: {} in body should be greater than 0"),
        ("backoffLimit", -1, "Invalid value: -1: {} in body should be greater than or equal to 0"),
        ("backoffLimit", "3", 'Invalid value: "string": {} in body must be of type integer: "string"'),
        ("backoffLimit", True, 'Invalid value: "": {} in body must be of type int32: ""'),
        ("backoffLimit", 1.5, 'Invalid value: "float64": {} in body must be of type int32: "float64"'),
        ("schedulingPolicy", "gang", 'Invalid value: "string": {} in body must be of type object: "string"'),
    ],
)
def test_run_policy_enums_and_ranges(field, value, message):
    assert errors_of(tfjob(**{field: value})) == [f"spec.{field}: {message.format('spec.' + field)}"]


@pytest.mark.parametrize("field", ["ttlSecondsAfterFinished", "backoffLimit"])
def test_run_policy_zero_is_allowed(field):
    assert errors_of(tfjob(**{field: 0})) == []


def test_restart_policy_enum():
    assert errors_of(tfjob({"Worker": replica(container(), restartPolicy="OnError")})) == [
        'spec.tfReplicaSpecs.Worker.restartPolicy: Unsupported value: "OnError": '
        'supported values: "Always", "OnFailure", "Never", "ExitCode"'
    ]


def test_min_available_at_least_one():
    assert errors_of(tfjob(schedulingPolicy={"minAvailable": 0})) == [
        "spec.schedulingPolicy.minAvailable: Invalid value: 0: "
        "spec.schedulingPolicy.minAvailable in body should be greater than or equal to 1"
    ]


def test_min_available_at_most_the_total_replicas():
    replicas = {"PS": replica(container(), replicas=2), "Worker": replica(container(), replicas=3)}
    assert errors_of(tfjob(replicas, schedulingPolicy={"minAvailable": 5})) == []
    assert errors_of(tfjob(replicas, schedulingPolicy={"minAvailable": 6})) == [
        "spec.schedulingPolicy.minAvailable: Invalid value: 6: must be less than or equal to the total number of "
        "replicas (5)"
    ]


def test_min_available_counts_defaulted_replicas():
    replicas = {"PS": replica(container()), "Worker": replica(container())}
    assert fields_of(tfjob(replicas, schedulingPolicy={"minAvailable": 3})) == ["spec.schedulingPolicy.minAvailable"]


def test_mpijob_run_policy_block_is_validated():
    obj = kubedl_job("MPIJob", runPolicy={"backoffLimit": -1, "schedulingPolicy": {"minAvailable": 9}})
    assert errors_of(obj) == [
        "spec.runPolicy.backoffLimit: Invalid value: -1: "
        "spec.runPolicy.backoffLimit in body should be greater than or equal to 0",
        "spec.runPolicy.schedulingPolicy.minAvailable: Invalid value: 9: must be less than or equal to the total "
        "number of replicas (1)",
    ]


def test_xdljob_min_finish_work_rate_range():
    assert errors_of(kubedl_job("XDLJob", minFinishWorkRate=101)) == [
        "spec.minFinishWorkRate: Invalid value: 101: spec.minFinishWorkRate in body should be less than or equal to 100"
    ]


# --- update ------------------------------------------------------------------------------------------


def test_queue_is_immutable():
    old = review(tfjob(schedulingPolicy={"queue": "research"})).defaulted
    assert errors_of(tfjob(schedulingPolicy={"queue": "research"}), old) == []
    assert errors_of(tfjob(schedulingPolicy={"queue": "prod"}), old) == [
        'spec.schedulingPolicy.queue: Invalid value: "prod": field is immutable'
    ]
    assert errors_of(tfjob(), old) == ['spec.schedulingPolicy.queue: Invalid value: "null": field is immutable']


def test_queue_cannot_be_added_on_update():
    old = review(tfjob()).defaulted
    assert fields_of(tfjob(schedulingPolicy={"queue": "late"}), old) == ["spec.schedulingPolicy.queue"]


def test_update_applies_the_create_rules():
    old = review(tfjob()).defaulted
    assert errors_of(tfjob(backoffLimit=-1), old) == [
        "spec.backoffLimit: Invalid value: -1: spec.backoffLimit in body should be greater than or equal to 0"
    ]


def test_update_may_change_replicas():
    old = review(tfjob({"Worker": replica(container(), replicas=2)})).defaulted
    assert errors_of(tfjob({"Worker": replica(container(), replicas=8)}), old) == []


# --- warnings ----------------------------------------------------------------------------------------


def test_warning_when_replica_policy_overrides_the_template():
    obj = tfjob({"Worker": replica(container(), pod_spec={"restartPolicy": "Always"})})
    verdict = review(obj)
    assert verdict.allowed
    assert verdict.warnings == [
        "restartPolicy ExitCode overrides the pod template's restartPolicy Always (tfReplicaSpecs[Worker])"
    ]


def test_no_warning_when_the_template_agrees():
    obj = tfjob({"Worker": replica(container(), pod_spec={"restartPolicy": "Never"})})  # ExitCode runs as Never
    assert review(obj).warnings == []


def test_gpu_requested_without_limit_is_refused():
    resources = {"requests": {"nvidia.com/gpu": 1}}
    verdict = review(tfjob({"Worker": replica(container(resources=resources))}))
    assert not verdict.allowed and verdict.warnings == []
    assert [str(e) for e in verdict.errors] == [
        "spec.tfReplicaSpecs[Worker].template.spec.containers[0].resources.limits[nvidia.com/gpu]: Required value: "
        "nvidia.com/gpu is requested without a limit (container tensorflow): Limit must be set for non "
        "overcommitable resources"
    ]


def test_warning_for_unknown_fields():
    verdict = review(tfjob(tfReplicaSpecz={}))
    assert verdict.allowed
    assert verdict.warnings == [
        "unknown field spec.tfReplicaSpecz: the apiserver drops it or, with strict validation, refuses it"
    ]


def test_warnings_fit_in_120_characters():
    verdict = review(tfjob({"Worker": replica(container())}, **{"x" * 120: {}}))
    assert verdict.warnings
    assert all(len(w) <= 120 for w in verdict.warnings)


def test_mpijob_inline_fields_ignored_next_to_run_policy_are_said():
    verdict = review(kubedl_job("MPIJob", runPolicy={}, backoffLimit=2))
    assert verdict.warnings == ["spec.runPolicy is set, so these inline spec fields are ignored: backoffLimit"]
