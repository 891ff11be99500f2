"""GenericJob (batch.tensorstack.dev/v1beta1): T9k's defaults, jobgate's finish-rule defaults, every rule."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from jobgate.engine.jsonpatch import apply_patch
from testkit.builders import container, errors_of, review


def t9k_replica(replica_type: str | None = "worker", replicas: int | None = None, **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"spec": {"containers": [container("main")]}}, **extra}
    if replica_type is not None:
        spec["type"] = replica_type
    if replicas is not None:
        spec["replicas"] = replicas
    return spec


def generic_job(*replica_specs: dict[str, Any], name: str = "gj", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "GenericJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {**spec, "replicaSpecs": list(replica_specs or [t9k_replica()])},
    }


def defaulted(obj: dict[str, Any]) -> dict[str, Any]:
    return review(obj).defaulted["spec"]


# --- defaults ------------------------------------------------------------------------------


def test_defaults_are_written_out_and_idempotent():
    obj = generic_job(t9k_replica("master"), t9k_replica("worker", 2))
    verdict = review(obj)
    spec = verdict.defaulted["spec"]
    assert [r["replicas"] for r in spec["replicaSpecs"]] == [1, 2]
    assert [r["restartPolicy"] for r in spec["replicaSpecs"]] == [{"policy": "OnFailure", "limit": 0}] * 2
    assert spec["cleanUpPolicy"] == "None"
    assert "scheduler" not in spec and "runMode" not in spec and "service" not in spec
    assert spec["successRules"] == [{"master": [0], "worker": [0, 1]}]
    assert spec["failureRules"] == [{"master": [0]}, {"worker": [0]}, {"worker": [1]}]
    assert apply_patch(obj, verdict.patch) == verdict.defaulted
    assert review(verdict.defaulted).patch == []
    assert verdict.errors == []


def test_default_rules_are_written_up_to_ten_thousand_replicas_in_all():
    # Rules list every replica: past the bound they would outgrow any object the apiserver stores.
    at_bound = defaulted(generic_job(t9k_replica("master"), t9k_replica("worker", 9_999)))
    assert len(at_bound["failureRules"]) == 10_000
    assert at_bound["successRules"][0]["worker"][-1] == 9_998
    past_bound = defaulted(generic_job(t9k_replica("master"), t9k_replica("worker", 10_000)))
    assert "successRules" not in past_bound and "failureRules" not in past_bound


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"policy": "Never"}, {"policy": "Never", "limit": 0}),
        ({"limit": 4}, {"limit": 4, "policy": "OnFailure"}),
        ({"policy": "Always", "limit": 2}, {"policy": "Always", "limit": 2}),
    ],
)
def test_each_part_of_the_restart_policy_is_defaulted_on_its_own(given, expected):
    (replica,) = defaulted(generic_job(t9k_replica(restartPolicy=given)))["replicaSpecs"]
    assert replica["restartPolicy"] == expected


def test_given_finish_rules_and_clean_up_policy_are_kept():
    rules = [{"worker": [1]}]
    spec = defaulted(generic_job(t9k_replica(replicas=2), successRules=rules, failureRules=rules, cleanUpPolicy="All"))
    assert spec["successRules"] == rules and spec["failureRules"] == rules and spec["cleanUpPolicy"] == "All"


def test_replica_types_with_no_replicas_are_left_out_of_the_default_rules():
    spec = defaulted(generic_job(t9k_replica("master"), t9k_replica("spare", 0)))
    assert spec["successRules"] == [{"master": [0]}]
    assert spec["failureRules"] == [{"master": [0]}]


def test_debug_command_defaults_to_sleep_and_explicit_commands_are_kept():
    run_mode = {"debug": {"enabled": True, "replicaSpecs": [{"type": "worker"}, {"type": "ps", "command": ["bash"]}]}}
    spec = defaulted(generic_job(t9k_replica("worker"), t9k_replica("ps"), runMode=run_mode))
    assert [d["command"] for d in spec["runMode"]["debug"]["replicaSpecs"]] == [["sleep", "inf"], ["bash"]]


def test_scheduler_priority_defaults_to_zero_only_for_the_t9k_scheduler():
    spec = defaulted(generic_job(scheduler={"t9kScheduler": {"queue": "q"}}))
    assert spec["scheduler"] == {"t9kScheduler": {"queue": "q", "priority": 0}}
    assert "t9kScheduler" not in defaulted(generic_job(scheduler={}))["scheduler"]


def test_unknown_fields_survive_defaulting():
    obj = generic_job(t9k_replica(extraField={"a": 1}), future="x")
    spec = defaulted(obj)
    assert spec["future"] == "x" and spec["replicaSpecs"][0]["extraField"] == {"a": 1}


@pytest.mark.parametrize(
    "spec",
    [
        {"replicaSpecs": "x"},
        {"replicaSpecs": [None, 3, {"type": 5, "replicas": "two", "restartPolicy": "Never"}]},
        {"replicaSpecs": [], "runMode": {"debug": {"replicaSpecs": [None, "x"]}}, "scheduler": {"t9kScheduler": 1}},
        {"runMode": "debug", "successRules": None},
    ],
)
def test_half_written_jobs_never_crash_defaulting(spec):
    obj = {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "GenericJob", "metadata": {"name": "x"}, "spec": spec}
    verdict = review(copy.deepcopy(obj))
    assert apply_patch(obj, verdict.patch) == verdict.defaulted
    assert verdict.errors  # each of these is refused by /validate


# --- validation ----------------------------------------------------------------------------


def test_valid_job():
    assert errors_of(generic_job(t9k_replica("master"), t9k_replica("worker", 3))) == []


def test_at_least_one_replica_spec():
    obj = generic_job()
    obj["spec"]["replicaSpecs"] = []
    assert errors_of(obj) == [
        "spec.replicaSpecs: Invalid value: 0: spec.replicaSpecs in body should have at least 1 items"
    ]


def test_replica_type_is_required():
    assert errors_of(generic_job(t9k_replica(None))) == [
        "spec.replicaSpecs[0].type: Required value: every replica spec needs a type"
    ]


def test_replica_types_are_unique():
    assert errors_of(generic_job(t9k_replica("worker"), t9k_replica("worker"))) == [
        'spec.replicaSpecs[1].type: Duplicate value: "worker"'
    ]


def test_replica_type_is_a_dns_label():
    (error,) = errors_of(generic_job(t9k_replica("Worker_1")))
    assert error.startswith('spec.replicaSpecs[0].type: Invalid value: "Worker_1": a lowercase RFC 1123 label')


def test_pod_names_fit_in_63_characters():
    assert errors_of(generic_job(t9k_replica("worker", 10), name="j" * 54)) == []  # j...j-worker-9: 63
    (error,) = errors_of(generic_job(t9k_replica("worker", 10), name="j" * 55))
    assert error.startswith('metadata.name: Invalid value: "' + "j" * 55 + '": must be no more than 54 characters')


def test_replicas_not_negative():
    assert errors_of(generic_job(t9k_replica(replicas=-1))) == [
        "spec.replicaSpecs[0].replicas: Invalid value: -1: spec.replicaSpecs[0].replicas in body should be "
        "greater than or equal to 0"
    ]


def test_no_exit_code_restart_policy_and_limit_not_negative():
    assert errors_of(generic_job(t9k_replica(restartPolicy={"policy": "ExitCode", "limit": -2}))) == [
        'spec.replicaSpecs[0].restartPolicy.policy: Unsupported value: "ExitCode": supported values: '
        '"Always", "OnFailure", "Never"',
        "spec.replicaSpecs[0].restartPolicy.limit: Invalid value: -2: spec.replicaSpecs[0].restartPolicy.limit in "
        "body should be greater than or equal to 0",
    ]


@pytest.mark.parametrize("rules_key", ["successRules", "failureRules"])
def test_finish_rules_name_existing_types(rules_key):
    assert errors_of(generic_job(t9k_replica("worker"), **{rules_key: [{"chief": [0]}]})) == [
        f'spec.{rules_key}[0][chief]: Not found: "chief": no replica spec of this type (types: worker)'
    ]


@pytest.mark.parametrize("rules_key", ["successRules", "failureRules"])
def test_finish_rule_indices_are_below_replicas(rules_key):
    assert errors_of(generic_job(t9k_replica("worker", 2), **{rules_key: [{"worker": [0, 2, -1]}]})) == [
        f"spec.{rules_key}[0][worker][1]: Invalid value: 2: must be below replicas (2) of type worker: 0 to 1",
        f"spec.{rules_key}[0][worker][2]: Invalid value: -1: must be below replicas (2) of type worker: 0 to 1",
    ]


def test_an_absent_replicas_counts_as_one_in_finish_rules():
    obj = generic_job(t9k_replica("worker"))
    assert errors_of(obj | {"spec": {**obj["spec"], "successRules": [{"worker": [0]}]}}) == []
    assert errors_of(obj | {"spec": {**obj["spec"], "successRules": [{"worker": [1]}]}}) == [
        "spec.successRules[0][worker][0]: Invalid value: 1: must be below replicas (1) of type worker: 0 to 0"
    ]


@pytest.mark.parametrize("rules_key", ["successRules", "failureRules"])
def test_finish_rules_are_not_empty(rules_key):
    assert errors_of(generic_job(**{rules_key: [{}, {"worker": []}]})) == [
        f"spec.{rules_key}[0]: Required value: a finish rule must name at least one replica",
        f"spec.{rules_key}[1][worker]: Required value: must list at least one replica index",
    ]


@pytest.mark.parametrize(("mode", "list_key"), [("debug", "replicaSpecs"), ("pause", "resumeSpecs")])
def test_run_mode_specs_name_existing_types_once(mode, list_key):
    run_mode = {mode: {"enabled": True, list_key: [{"type": "worker"}, {"type": "worker"}, {"type": "ps"}, {}]}}
    assert errors_of(generic_job(runMode=run_mode)) == [
        f'spec.runMode.{mode}.{list_key}[1].type: Duplicate value: "worker"',
        f'spec.runMode.{mode}.{list_key}[2].type: Not found: "ps": no replica spec of this type (types: worker)',
        f"spec.runMode.{mode}.{list_key}[3].type: Required value: names the replica type it applies to",
    ]


def test_debug_and_pause_may_both_be_enabled():
    assert errors_of(generic_job(runMode={"debug": {"enabled": True}, "pause": {"enabled": True}})) == []


def test_clean_up_policy_enum():
    assert errors_of(generic_job(cleanUpPolicy="Running")) == [
        'spec.cleanUpPolicy: Unsupported value: "Running": supported values: "None", "Unfinished", "All"'
    ]


def test_service_ports_are_valid_with_unique_names():
    ports = [{"name": "http", "port": 0}, {"name": "http", "port": 80}, {"port": 81}, {"name": "Bad_Name", "port": 82}]
    errors = errors_of(generic_job(service={"ports": ports}))
    assert errors[0] == (
        "spec.service.ports[0].port: Invalid value: 0: spec.service.ports[0].port in body should be greater than or "
        "equal to 1"
    )
    assert errors[1:3] == [
        'spec.service.ports[1].name: Duplicate value: "http"',
        "spec.service.ports[2].name: Required value: a service with more than one port needs a name for each",
    ]
    assert errors[3].startswith('spec.service.ports[3].name: Invalid value: "Bad_Name"')
    assert len(errors) == 4


def test_single_unnamed_service_port_is_fine():
    assert errors_of(generic_job(service={"ports": [{"port": 80}]})) == []


def test_scheduler_priority_range():
    assert errors_of(generic_job(scheduler={"t9kScheduler": {"priority": 101}})) == [
        "spec.scheduler.t9kScheduler.priority: Invalid value: 101: spec.scheduler.t9kScheduler.priority in body "
        "should be less than or equal to 100"
    ]


def test_pod_template_checks_apply():
    replica = t9k_replica()
    replica["template"]["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/d"}]
    assert errors_of(generic_job(replica)) == [
        'spec.replicaSpecs[0].template.spec.containers[0].volumeMounts[0].name: Not found: "data": '
        "no volume of that name in the pod"
    ]


def test_replica_specs_finish_rules_and_service_ports_within_the_crds_bounds():
    # The bounds of the CRD's schema (the CEL cost estimate needs them), in the apiserver's words.
    from jobgate.families.t9k.rules import MAX_REPLICA_SPECS, MAX_SERVICE_PORTS, MAX_WRITTEN_RULE_REPLICAS

    replicas = [t9k_replica(f"t{i}") for i in range(MAX_REPLICA_SPECS)]
    ports = [{"name": f"p{i}", "port": 1000 + i} for i in range(MAX_SERVICE_PORTS)]
    rules = [{"t0": [0]}] * MAX_WRITTEN_RULE_REPLICAS
    assert errors_of(generic_job(*replicas, service={"ports": ports}, failureRules=rules)) == []
    more = generic_job(
        *replicas,
        t9k_replica("more"),
        service={"ports": [*ports, {"name": "more", "port": 999}]},
        successRules=[*rules, {"t0": [0]}],
    )
    assert errors_of(more) == [
        f"spec.replicaSpecs: Too many: {MAX_REPLICA_SPECS + 1}: must have at most {MAX_REPLICA_SPECS} items",
        f"spec.successRules: Too many: {MAX_WRITTEN_RULE_REPLICAS + 1}: must have at most "
        f"{MAX_WRITTEN_RULE_REPLICAS} items",
        f"spec.service.ports: Too many: {MAX_SERVICE_PORTS + 1}: must have at most {MAX_SERVICE_PORTS} items",
    ]


def test_all_violations_in_one_answer():
    obj = generic_job(t9k_replica("worker"), t9k_replica("worker"), cleanUpPolicy="x", successRules=[{}])
    assert len(errors_of(obj)) == 3


# --- UPDATE --------------------------------------------------------------------------------


def stored() -> dict[str, Any]:
    obj = generic_job(
        t9k_replica("worker", 2), runMode={"pause": {"enabled": False, "resumeSpecs": [{"type": "worker"}]}}
    )
    return review(obj).defaulted


def test_pause_may_be_toggled_and_metadata_may_change():
    old = stored()
    new = copy.deepcopy(old)
    new["spec"]["runMode"]["pause"]["enabled"] = True
    new["metadata"]["labels"] = {"team": "a"}
    assert errors_of(new, old) == []


def test_resume_specs_are_immutable():
    old = stored()
    new = copy.deepcopy(old)
    new["spec"]["runMode"]["pause"]["resumeSpecs"] = [{"type": "worker", "args": ["--resume"]}]
    assert errors_of(new, old) == [
        "spec.runMode.pause.resumeSpecs: Forbidden: field is immutable: only pause.enabled may change while the job "
        "exists"
    ]


@pytest.mark.parametrize("change", ["type", "template"])
def test_replica_types_and_templates_are_immutable(change):
    old = stored()
    new = copy.deepcopy(old)
    if change == "type":
        new["spec"]["replicaSpecs"][0]["type"] = "trainer"
        new["spec"]["successRules"] = [{"trainer": [0]}]
        new["spec"]["failureRules"] = [{"trainer": [0]}]
    else:
        new["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]["image"] = "other:2"
    assert "spec.replicaSpecs: Forbidden: replica types and pod templates are immutable once the job exists" in (
        errors_of(new, old)
    )


def test_replicas_and_restart_policy_may_change_on_update():
    old = stored()
    new = copy.deepcopy(old)
    new["spec"]["replicaSpecs"][0]["restartPolicy"] = {"policy": "Never", "limit": 0}
    assert errors_of(new, old) == []


def test_default_finish_rules_follow_a_scale_and_given_rules_do_not():
    old = stored()
    new = copy.deepcopy(old)
    new["spec"]["replicaSpecs"][0]["replicas"] = 1
    verdict = review(new, old)
    assert verdict.errors == []
    assert verdict.defaulted["spec"]["successRules"] == [{"worker": [0]}]
    assert verdict.defaulted["spec"]["failureRules"] == [{"worker": [0]}]
    assert apply_patch(new, verdict.patch) == verdict.defaulted

    # A rule that differs from the default was the user's: kept, and checked against the new count.
    written = review(generic_job(t9k_replica("worker", 2), successRules=[{"worker": [1]}])).defaulted
    scaled = copy.deepcopy(written)
    scaled["spec"]["replicaSpecs"][0]["replicas"] = 1
    assert errors_of(scaled, written) == [
        "spec.successRules[0][worker][0]: Invalid value: 1: must be below replicas (1) of type worker: 0 to 0"
    ]


def test_light_constants_agree_with_the_model():
    from jobgate.api import constants
    from jobgate.families.t9k import models as t9k

    assert (t9k.GROUP, t9k.VERSION) == (constants.T9K_GROUP, constants.T9K_VERSION)


def test_a_finish_rule_cannot_name_a_type_without_replicas():
    obj = generic_job(t9k_replica("master"), t9k_replica("spare", 0), successRules=[{"spare": [0]}])
    assert errors_of(obj) == ["spec.successRules[0][spare][0]: Invalid value: 0: replica type spare has 0 replicas"]


def test_a_badly_named_type_is_reported_once_even_when_rules_name_it():
    (error,) = errors_of(generic_job(t9k_replica("Bad_Type"), successRules=[{"Bad_Type": [0]}]))
    assert error.startswith('spec.replicaSpecs[0].type: Invalid value: "Bad_Type"')


def test_a_template_restart_policy_is_said_to_be_replaced_by_never():
    replica = t9k_replica()
    replica["template"]["spec"]["restartPolicy"] = "Always"
    verdict = review(generic_job(replica))
    assert verdict.errors == []
    assert verdict.warnings == [
        "restartPolicy Never overrides the pod template's restartPolicy Always (replicaSpecs[0])"
    ]
