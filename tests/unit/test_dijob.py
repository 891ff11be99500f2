"""DIJob (diengine.opendilab.org/v2alpha1): DI-orchestrator's defaults and rules, at admission."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from jobgate.engine.jsonpatch import apply_patch
from testkit.builders import container, errors_of, review


def task(task_type: str | None = None, name: str | None = None, replicas: int | None = None, **extra: Any) -> dict:
    spec: dict[str, Any] = {"template": {"spec": {"containers": [container("di-container")]}}, **extra}
    for key, value in (("type", task_type), ("name", name), ("replicas", replicas)):
        if value is not None:
            spec[key] = value
    return spec


def dijob(*tasks: dict[str, Any], name: str = "di", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "diengine.opendilab.org/v2alpha1",
        "kind": "DIJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {**spec, "tasks": list(tasks or [task("learner")])},
    }


# --- defaults ------------------------------------------------------------------------------


def test_defaults():
    obj = dijob(task("learner"), task(name="server"))
    verdict = review(obj)
    spec = verdict.defaulted["spec"]
    assert (spec["priority"], spec["cleanPodPolicy"], spec["preemptible"], spec["backoffLimit"]) == (
        "normal",
        "Running",
        False,
        3,
    )
    assert [(t["type"], t["name"], t["replicas"]) for t in spec["tasks"]] == [
        ("learner", "learner", 1),
        ("none", "server", 1),
    ]
    assert apply_patch(obj, verdict.patch) == verdict.defaulted
    assert review(verdict.defaulted).patch == []
    assert verdict.errors == []


def test_an_empty_clean_pod_policy_counts_as_unset():
    assert review(dijob(cleanPodPolicy="")).defaulted["spec"]["cleanPodPolicy"] == "Running"


def test_given_values_are_kept():
    obj = dijob(task("collector", "actors", 4), priority="high", cleanPodPolicy="All", preemptible=True, backoffLimit=0)
    spec = review(obj).defaulted["spec"]
    assert (spec["priority"], spec["cleanPodPolicy"], spec["preemptible"], spec["backoffLimit"]) == (
        "high",
        "All",
        True,
        0,
    )
    assert spec["tasks"][0] | {"template": None} == {
        "type": "collector",
        "name": "actors",
        "replicas": 4,
        "template": None,
    }


@pytest.mark.parametrize("task_type", ["learner", "collector", "evaluator"])
def test_a_typed_task_is_named_after_its_type(task_type):
    assert review(dijob(task(task_type))).defaulted["spec"]["tasks"][0]["name"] == task_type


def test_an_untyped_task_stays_unnamed():
    (defaulted_task,) = review(dijob(task())).defaulted["spec"]["tasks"]
    assert defaulted_task["type"] == "none" and "name" not in defaulted_task


def test_unknown_fields_survive_defaulting():
    spec = review(dijob(task("learner", extra=1), future={"x": 1})).defaulted["spec"]
    assert spec["future"] == {"x": 1} and spec["tasks"][0]["extra"] == 1


@pytest.mark.parametrize(
    "spec",
    [{"tasks": "x"}, {"tasks": [None, 3, {"type": 5, "replicas": "two"}]}, {"volumes": 3}, {"tasks": [{"type": []}]}],
)
def test_half_written_jobs_never_crash_defaulting(spec):
    obj = {"apiVersion": "diengine.opendilab.org/v2alpha1", "kind": "DIJob", "metadata": {"name": "x"}, "spec": spec}
    verdict = review(copy.deepcopy(obj))
    assert apply_patch(obj, verdict.patch) == verdict.defaulted
    assert verdict.errors


# --- validation ----------------------------------------------------------------------------


def test_valid_job():
    assert errors_of(dijob(task("learner"), task("collector", replicas=3), task("evaluator"), task(name="x"))) == []


def test_at_least_one_task():
    obj = dijob()
    obj["spec"]["tasks"] = []
    assert errors_of(obj) == ["spec.tasks: Invalid value: 0: spec.tasks in body should have at least 1 items"]


@pytest.mark.parametrize("task_type", ["learner", "collector", "evaluator"])
def test_at_most_one_task_of_each_singleton_type(task_type):
    errors = errors_of(dijob(task(task_type), task(task_type, name="second")))
    assert errors == [
        f'spec.tasks[1].type: Invalid value: "{task_type}": the number of {task_type} task is more than one '
        "(tasks[0] is one)"
    ]


def test_several_none_tasks_are_allowed():
    assert errors_of(dijob(task(name="a"), task("none", name="b"))) == []


def test_none_tasks_are_named():
    assert errors_of(dijob(task("none"))) == ["spec.tasks[0].name: Required value: none type task has no name"]


def test_task_names_are_unique():
    assert errors_of(dijob(task("learner"), task(name="learner"))) == ['spec.tasks[1].name: Duplicate value: "learner"']


def test_task_names_are_dns_labels():
    (error,) = errors_of(dijob(task(name="Big_Task")))
    assert error.startswith('spec.tasks[0].name: Invalid value: "Big_Task": a lowercase RFC 1123 label')


def test_pod_names_fit_in_63_characters():
    assert errors_of(dijob(task("collector", replicas=10), name="d" * 51)) == []  # d...d-collector-9: 63
    (error,) = errors_of(dijob(task("collector", replicas=10), name="d" * 52))
    assert error.startswith('metadata.name: Invalid value: "' + "d" * 52 + '": must be no more than 51 characters')


def test_replicas_at_least_one():
    assert errors_of(dijob(task("learner", replicas=0))) == [
        "spec.tasks[0].replicas: Invalid value: 0: spec.tasks[0].replicas in body should be greater than or equal to 1"
    ]


@pytest.mark.parametrize(
    ("field", "value", "supported"),
    [
        ("priority", "urgent", '"normal", "high"'),
        ("cleanPodPolicy", "Finished", '"All", "Running", "None"'),
    ],
)
def test_enums(field, value, supported):
    assert errors_of(dijob(**{field: value})) == [
        f'spec.{field}: Unsupported value: "{value}": supported values: {supported}'
    ]


def test_task_type_enum():
    assert errors_of(dijob(task("actor", name="a"))) == [
        'spec.tasks[0].type: Unsupported value: "actor": supported values: "learner", "collector", "evaluator", "none"'
    ]


def test_backoff_limit_not_negative():
    assert errors_of(dijob(backoffLimit=-1)) == [
        "spec.backoffLimit: Invalid value: -1: spec.backoffLimit in body should be greater than or equal to 0"
    ]


def test_shared_volumes_are_mountable():
    mounting = task("learner")
    mounting["template"]["spec"]["containers"][0]["volumeMounts"] = [{"name": "cache", "mountPath": "/c"}]
    assert errors_of(dijob(mounting, volumes=[{"name": "cache", "emptyDir": {}}])) == []
    assert errors_of(dijob(copy.deepcopy(mounting))) == [
        'spec.tasks[0].template.spec.containers[0].volumeMounts[0].name: Not found: "cache": '
        "no volume of that name in the pod"
    ]


def test_shared_volume_errors_point_at_spec_volumes_once():
    own = task("learner")
    own["template"]["spec"]["volumes"] = [{"name": "cache", "emptyDir": {}}]
    volumes = [{"name": "cache", "emptyDir": {}}, {"name": "Bad_Name", "emptyDir": {}}]
    errors = errors_of(dijob(own, task("collector"), volumes=volumes))
    assert errors[0] == 'spec.volumes[0].name: Duplicate value: "cache"'
    assert errors[1].startswith('spec.volumes[1].name: Invalid value: "Bad_Name"')
    assert len(errors) == 2


def test_tasks_and_shared_volumes_within_the_crds_bounds():
    # The bounds of the CRD's schema (the CEL cost estimate needs them), in the apiserver's words.
    from jobgate.families.diengine.rules import MAX_SHARED_VOLUMES, MAX_TASKS

    tasks = [task(name=f"t{i}") for i in range(MAX_TASKS)]
    volumes = [{"name": f"v{i}", "emptyDir": {}} for i in range(MAX_SHARED_VOLUMES)]
    assert errors_of(dijob(*tasks, volumes=volumes)) == []
    assert errors_of(dijob(*tasks, task(name="more"), volumes=[*volumes, {"name": "more", "emptyDir": {}}])) == [
        f"spec.tasks: Too many: {MAX_TASKS + 1}: must have at most {MAX_TASKS} items",
        f"spec.volumes: Too many: {MAX_SHARED_VOLUMES + 1}: must have at most {MAX_SHARED_VOLUMES} items",
    ]


def test_all_violations_in_one_answer():
    assert len(errors_of(dijob(task("learner"), task("learner"), task(), priority="x"))) == 4


# --- UPDATE --------------------------------------------------------------------------------


def test_scaling_a_task_is_allowed_but_not_to_zero():
    old = review(dijob(task("collector", replicas=2))).defaulted
    new = copy.deepcopy(old)
    new["spec"]["tasks"][0]["replicas"] = 5
    assert errors_of(new, old) == []
    new["spec"]["tasks"][0]["replicas"] = 0
    assert errors_of(new, old) == [
        "spec.tasks[0].replicas: Invalid value: 0: spec.tasks[0].replicas in body should be greater than or equal to 1"
    ]


def test_light_constants_agree_with_the_model():
    from jobgate.api import constants
    from jobgate.families.diengine import models as diengine

    assert (diengine.GROUP, diengine.VERSION) == (constants.DIENGINE_GROUP, constants.DIENGINE_VERSION)


def test_a_template_restart_policy_is_said_to_be_replaced_by_never():
    learner = task("learner")
    learner["template"]["spec"]["restartPolicy"] = "OnFailure"
    verdict = review(dijob(learner))
    assert verdict.errors == []
    assert verdict.warnings == ["restartPolicy Never overrides the pod template's restartPolicy OnFailure (tasks[0])"]


def test_shared_volumes_are_checked_when_no_task_carries_them():
    """Without a pod spec in any task, ``spec.volumes`` reach no pod's volume list; still checked."""
    obj = dijob({"type": "learner", "template": {"metadata": {}}}, volumes=[{"emptyDir": {}}, {"name": "Data"}])
    errors = errors_of(obj)
    assert "spec.volumes[0].name: Required value" in errors
    assert any(e.startswith('spec.volumes[1].name: Invalid value: "Data": a lowercase RFC 1123 label') for e in errors)
    # Carried by a task, they are reported once, at spec.volumes as well.
    carried = errors_of(dijob(task("learner"), task(name="server"), volumes=[{"emptyDir": {}}]))
    assert carried.count("spec.volumes[0].name: Required value") == 1
