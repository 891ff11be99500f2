"""A runtime's JobSet template and a TrainJob's runtimePatches, checked as Kubeflow Trainer v2.3.0's CRDs check
them (issue 44): the template is JobSet v0.12.0's JobSetSpec (the jobset family's models), the patches are
Trainer's patch types; the CRDs' list bounds; the apiserver's ratcheting of both on UPDATE.

The expected lines are the apiserver's for Trainer's real CRDs (tests/e2e/test_trainer_template_agreement.py
compares the verdicts on a real apiserver).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from jobgate.engine.context import ReviewContext
from jobgate.families.jobset import shape
from jobgate.families.trainer.rules import runtimes as rt
from jobgate.families.trainer.rules.runtimes import RuntimeSnapshot
from jobgate.review import kind_of, review_job

API = "trainer.kubeflow.org/v1alpha1"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"


def runtime(**template_spec: Any) -> dict[str, Any]:
    node = {
        "name": "node",
        "template": {
            "metadata": {"labels": {ANCESTOR: "trainer"}},
            "spec": {"template": {"spec": {"containers": [{"name": "node", "image": "pytorch/pytorch:2.7.1"}]}}},
        },
    }
    return {
        "apiVersion": API,
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "torch"},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {"spec": {"replicatedJobs": [node], **template_spec}},
        },
    }


def node_job(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["spec"]["template"]["spec"]["replicatedJobs"][0]


def lines(obj: dict[str, Any], old: dict[str, Any] | None = None, context: ReviewContext | None = None) -> list[str]:
    kind = kind_of(obj)
    assert kind is not None
    return [str(e) for e in review_job(kind, obj, old, context=context).errors]


def trainjob(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "TrainJob",
        "metadata": {"name": "job", "namespace": "default"},
        "spec": {"runtimeRef": {"name": "torch"}, **spec},
    }


def with_runtime() -> ReviewContext:
    return ReviewContext(operation="CREATE", runtimes=RuntimeSnapshot([runtime()]))


def patch(*jobs: dict[str, Any], manager: str = "example.com/mine") -> dict[str, Any]:
    return {"manager": manager, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": list(jobs)}}}}


def pod_patch(**pod_spec: Any) -> dict[str, Any]:
    return {"name": "node", "template": {"spec": {"template": {"spec": pod_spec}}}}


JOBS = "spec.template.spec.replicatedJobs[0]"


def test_the_valid_runtime_is_admitted():
    assert lines(runtime()) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda o: node_job(o).update(name=[]),
            f'{JOBS}.name: Invalid value: "array": {JOBS}.name in body must be of type string: "array"',
        ),
        (
            lambda o: node_job(o).update(replicas="2"),
            f'{JOBS}.replicas: Invalid value: "string": {JOBS}.replicas in body must be of type integer: "string"',
        ),
        (
            lambda o: node_job(o).pop("template"),
            f"{JOBS}.template: Required value",
        ),
        (
            lambda o: node_job(o).update(dependsOn=[{"name": "x", "status": "Started"}]),
            f'{JOBS}.dependsOn[0].status: Unsupported value: "Started": supported values: "Ready", "Complete"',
        ),
        (
            lambda o: o["spec"]["template"]["spec"].update(successPolicy={"operator": "Some"}),
            'spec.template.spec.successPolicy.operator: Unsupported value: "Some": supported values: "All", "Any"',
        ),
        (
            lambda o: o["spec"]["template"]["spec"].update(ttlSecondsAfterFinished=-1),
            "spec.template.spec.ttlSecondsAfterFinished: Invalid value: -1: "
            "spec.template.spec.ttlSecondsAfterFinished in body should be greater than or equal to 0",
        ),
        (
            lambda o: node_job(o).update(dependsOn=[{"name": f"j{i}", "status": "Ready"} for i in range(6)]),
            f"{JOBS}.dependsOn: Too many: 6: must have at most 5 items",
        ),
        (
            lambda o: o["spec"]["template"].update(metadata={"labels": {"team": 7}}),
            'spec.template.metadata.labels.team: Invalid value: "integer": '
            'spec.template.metadata.labels.team in body must be of type string: "integer"',
        ),
    ],
    ids=[
        "name-type",
        "replicas-type",
        "template-required",
        "depends-on-enum",
        "success-enum",
        "ttl-min",
        "depends-on-bound",
        "metadata-labels",
    ],
)
def test_a_template_defect_is_refused_as_the_crd_refuses_it(change, expected):
    obj = runtime()
    change(obj)
    assert expected in lines(obj)


def test_the_jobsets_cel_rules_are_the_jobset_familys_at_the_templates_path():
    obj = runtime(startupPolicy={"startupPolicyOrder": "InOrder"})
    node_job(obj)["dependsOn"] = []
    kind = kind_of(obj)
    errors = review_job(kind, obj).errors
    found = [e for e in errors if e.field == "spec.template.spec"]
    assert [(str(e), e.rule) for e in found] == [
        (
            'spec.template.spec: Invalid value: "object": StartupPolicy and DependsOn APIs are mutually exclusive',
            "trainer/jobset-rules",
        )
    ]
    old = runtime(network={"subdomain": "a"})
    new = runtime(network={"subdomain": "b"})
    assert 'spec.template.spec.network: Invalid value: "object": Value is immutable' in lines(new, old)


def test_trainers_template_reader_is_the_jobset_familys():
    assert rt.job_spec is shape.job_spec
    assert rt.pod_spec is shape.pod_spec
    assert rt.pod_template is shape.pod_template
    assert rt.replicas is shape.replicas


# --- ratcheting ------------------------------------------------------------------------------------


def test_an_unchanged_invalid_template_value_is_ratcheted_on_update():
    old = runtime()
    node_job(old)["replicas"] = "1"
    new = copy.deepcopy(old)
    new["spec"]["mlPolicy"]["numNodes"] = 2  # another field changes: the template does not
    assert not any("replicas" in line for line in lines(new, old))
    # The same value, new: refused.
    assert any("replicas in body must be of type integer" in line for line in lines(new, runtime()))


def test_ratcheting_correlates_replicated_jobs_by_name():
    old = runtime()
    node_job(old)["template"]["spec"]["completions"] = "x"
    other = {"name": "other", "template": {"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}}
    old["spec"]["template"]["spec"]["replicatedJobs"].insert(0, other)
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["replicatedJobs"].reverse()  # moved, and unchanged
    new["spec"]["template"]["spec"]["replicatedJobs"][1]["replicas"] = 3  # "other" changes
    assert not any("completions" in line for line in lines(new, old))
    # Renamed, the job is another one (a list-map's item is found by its key): its defect is new.
    node_job(new)["name"] = "trainer"
    assert any("completions in body must be of type integer" in line for line in lines(new, old))


def test_an_atomic_lists_items_are_ratcheted_only_with_the_whole_list():
    rules = [{"name": "a", "action": "Explode"}]
    old = runtime(failurePolicy={"rules": rules})
    new = runtime(failurePolicy={"rules": [*rules, {"name": "b", "action": "FailJobSet"}]})
    assert any("rules[0].action: Unsupported value" in line for line in lines(new, old))


def test_webhook_errors_are_not_ratcheted():
    old = runtime()
    node_job(old)["replicas"] = 2  # Trainer's runtime webhook: always must be 1
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {"a": "b"}
    assert f"{JOBS}.replicas: Invalid value: 2: always must be 1" in lines(new, old)


# --- a TrainJob's runtimePatches --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("patches", "expected"),
    [
        (
            [patch(pod_patch(containers=[{"name": 5}]))],
            "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec"
            '.containers[0].name: Invalid value: "integer": spec.runtimePatches[0].trainingRuntimeSpec.template.spec'
            ".replicatedJobs[0].template.spec.template.spec.containers[0].name in body must be of type string: "
            '"integer"',
        ),
        (
            [patch(pod_patch(terminationGracePeriodSeconds=-1))],
            "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec"
            ".terminationGracePeriodSeconds: Invalid value: -1:",
        ),
        (
            [patch(pod_patch(schedulingGates=[{"name": f"g{i}"} for i in range(17)]))],
            "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec"
            ".schedulingGates: Too many: 17: must have at most 16 items",
        ),
        (
            [patch(manager=f"example.com/m{i}") for i in range(17)],
            "spec.runtimePatches: Too many: 17: must have at most 16 items",
        ),
        (
            [patch({"name": ""})],
            'spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].name: Invalid value: "": '
            "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].name in body should be at "
            "least 1 chars long",
        ),
    ],
    ids=["container-name-type", "grace-period-min", "scheduling-gates-bound", "patches-bound", "job-name-min"],
)
def test_a_patch_defect_is_refused_as_the_crd_refuses_it(patches, expected):
    found = lines(trainjob(runtimePatches=patches), context=with_runtime())
    assert any(line.startswith(expected) for line in found), found


def test_a_patch_field_trainer_does_not_type_is_a_warning_not_an_error():
    job = trainjob(runtimePatches=[patch(pod_patch(containers=[{"name": "node", "image": "x"}]))])
    kind = kind_of(job)
    verdict = review_job(kind, job, context=with_runtime())
    assert verdict.errors == []
    assert any(w.startswith("unknown field spec.runtimePatches[0].trainingRuntimeSpec") for w in verdict.warnings)
