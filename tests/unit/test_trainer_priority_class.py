"""Trainer's T24 (the Volcano plugin): the PriorityClass a Volcano runtime's pods name must exist. Offline the
PriorityClasses come from ``--cluster-objects`` (or documents beside the TrainJob), in the webhook from an
informer (webhook/trainer_runtimes.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from jobgate.cli import main
from jobgate.engine.context import ReviewContext
from jobgate.families.trainer.rules.runtimes import PRIORITY_CLASS_HINT, RuntimeSnapshot
from jobgate.review import kind_of, review_job

API = "trainer.kubeflow.org/v1alpha1"
FIELD = "spec.templateSpec.priorityClassName"


def volcano_runtime(*classes: str | None) -> dict[str, Any]:
    jobs = []
    for index, name in enumerate(classes):
        pod: dict[str, Any] = {"containers": [{"name": "node", "image": "x"}]}
        if name is not None:
            pod["priorityClassName"] = name
        jobs.append({"name": f"job{index}", "template": {"spec": {"template": {"spec": pod}}}})
    return {
        "apiVersion": API,
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "volcano"},
        "spec": {"podGroupPolicy": {"volcano": {}}, "template": {"spec": {"replicatedJobs": jobs}}},
    }


def priority_class(name: str) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": 1000}


TRAINJOB = {
    "apiVersion": API,
    "kind": "TrainJob",
    "metadata": {"name": "job", "namespace": "default"},
    "spec": {"runtimeRef": {"name": "volcano"}},
}


def errors(runtime: dict[str, Any], *objects: dict[str, Any], offline_hint: str = "") -> list[str]:
    view = RuntimeSnapshot([runtime, *objects], offline_hint=offline_hint)
    verdict = review_job(kind_of(TRAINJOB), TRAINJOB, context=ReviewContext(operation="CREATE", runtimes=view))
    return [str(e) for e in verdict.errors]


def test_a_priority_class_that_exists_is_admitted():
    assert errors(volcano_runtime("high"), priority_class("high")) == []


def test_a_missing_priority_class_is_refused_as_trainer_refuses_it():
    assert errors(volcano_runtime("high", "low"), priority_class("high")) == [
        f'{FIELD}: Invalid value: "low": PriorityClass "low" doesn\'t exist: '
        'priorityclasses.scheduling.k8s.io "low" not found'
    ]


def test_offline_the_refusal_says_how_to_give_priority_classes():
    found = errors(volcano_runtime("high"), offline_hint="offline")
    assert found == [
        f'{FIELD}: Invalid value: "high": PriorityClass "high" doesn\'t exist: '
        f'priorityclasses.scheduling.k8s.io "high" not found{PRIORITY_CLASS_HINT}'
    ]


@pytest.mark.parametrize("system", ["system-cluster-critical", "system-node-critical"])
def test_a_system_priority_ends_the_look_ups_as_in_trainer(system):
    assert errors(volcano_runtime(system, "missing")) == []
    assert len(errors(volcano_runtime("missing", system, "also-missing"))) == 1


def test_only_volcano_runtimes_and_named_classes_are_looked_up():
    runtime = volcano_runtime("missing")
    del runtime["spec"]["podGroupPolicy"]
    assert errors(runtime) == []
    assert errors(volcano_runtime(None, "")) == []


def test_cluster_objects_route_priority_classes_to_the_check(tmp_path, capsys):
    from testkit.builders import admission_review

    review = tmp_path / "review.json"
    review.write_text(json.dumps(admission_review(TRAINJOB, operation="CREATE")))
    cluster = tmp_path / "cluster.json"

    def allowed(*objects: dict[str, Any]) -> bool:
        cluster.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))
        assert main(["review", "validate", "--cluster-objects", str(cluster), str(review)]) == 0
        return json.loads(capsys.readouterr().out)["response"]["allowed"]

    assert allowed(volcano_runtime("high"), priority_class("high"))
    assert not allowed(volcano_runtime("high"))
