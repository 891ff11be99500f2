"""GenericJob and DIJob admission on a real kube-apiserver: defaults on apply, refusals, dry-run, UPDATE rules."""

from __future__ import annotations

import json

import pytest
from ruamel.yaml import YAML

from tests.e2e.conftest import REPO, Cluster

NAMESPACE = "default"

GENERIC_JOB = """
apiVersion: batch.tensorstack.dev/v1beta1
kind: GenericJob
metadata: {{name: {name}, namespace: default}}
spec:
  runMode: {{pause: {{enabled: {paused}, resumeSpecs: [{{type: worker, args: [{resume_arg}]}}]}}}}
  replicaSpecs:
    - type: master
      template: {{spec: {{containers: [{{name: main, image: {image}}}]}}}}
    - type: worker
      replicas: {workers}
      template: {{spec: {{containers: [{{name: main, image: busybox:1.36}}]}}}}
"""

DIJOB = """
apiVersion: diengine.opendilab.org/v2alpha1
kind: DIJob
metadata: {{name: {name}, namespace: default}}
spec:
  cleanPodPolicy: ""
  tasks:
    - type: learner
      template: {{spec: {{containers: [{{name: di-container, image: opendilab/ding:nightly}}]}}}}
    - type: collector
      replicas: {collectors}
      template: {{spec: {{containers: [{{name: di-container, image: opendilab/ding:nightly}}]}}}}
"""


def generic_job(
    name: str = "gj-e2e",
    *,
    paused: str = "false",
    resume_arg: str = "--resume",
    image: str = "busybox:1.36",
    workers: int = 2,
) -> str:
    return GENERIC_JOB.format(name=name, paused=paused, resume_arg=resume_arg, image=image, workers=workers)


def dijob(name: str = "di-e2e", collectors: int = 2) -> str:
    return DIJOB.format(name=name, collectors=collectors)


def dry_run_apply(cluster: Cluster, manifest: str):
    return cluster.kubectl("apply", "--server-side", "--dry-run=server", "-f", "-", input=manifest)


def test_apply_stores_the_generic_job_defaults(cluster: Cluster):
    cluster.kubectl("apply", "-f", "-", input=generic_job(), check=True)
    try:
        spec = cluster.get_json("genericjob", "gj-e2e", "-n", NAMESPACE)["spec"]
        assert [r["restartPolicy"] for r in spec["replicaSpecs"]] == [{"policy": "OnFailure", "limit": 0}] * 2
        assert [r["replicas"] for r in spec["replicaSpecs"]] == [1, 2]
        assert spec["cleanUpPolicy"] == "None"
        assert spec["successRules"] == [{"master": [0], "worker": [0, 1]}]
        assert spec["failureRules"] == [{"master": [0]}, {"worker": [0]}, {"worker": [1]}]
        columns = cluster.kubectl("get", "gj", "-n", NAMESPACE, check=True).stdout.splitlines()[0].split()
        assert columns == ["NAME", "PHASE", "RUNNING", "AGE"]
    finally:
        cluster.kubectl("delete", "genericjob", "gj-e2e", "-n", NAMESPACE, "--wait=false")


def test_apply_stores_the_dijob_defaults_and_task_names(cluster: Cluster):
    cluster.kubectl("apply", "-f", "-", input=dijob(), check=True)
    try:
        spec = cluster.get_json("dijob", "di-e2e", "-n", NAMESPACE)["spec"]
        assert (spec["priority"], spec["cleanPodPolicy"], spec["preemptible"], spec["backoffLimit"]) == (
            "normal", "Running", False, 3,
        )  # fmt: skip
        assert [(t["name"], t["type"], t["replicas"]) for t in spec["tasks"]] == [
            ("learner", "learner", 1),
            ("collector", "collector", 2),
        ]
        columns = cluster.kubectl("get", "dij", "-n", NAMESPACE, check=True).stdout.splitlines()[0].split()
        assert columns == ["NAME", "PHASE", "READYREPLICAS", "REPLICAS", "RESTARTS", "RESCHEDULES", "AGE"]
    finally:
        cluster.kubectl("delete", "dijob", "di-e2e", "-n", NAMESPACE, "--wait=false")


@pytest.mark.parametrize(
    ("manifest", "lines"),
    [
        (
            REPO / "examples/invalid/t9k-bad-finish-rules.yaml",
            [
                'spec.successRules[0][chief]: Not found: "chief": no replica spec of this type (types: worker)',
                "spec.failureRules[0]: Required value: a finish rule must name at least one replica",
            ],
        ),
        (
            REPO / "examples/invalid/dijob-two-learners.yaml",
            [
                'spec.tasks[1].type: Invalid value: "learner": the number of learner task is more than one '
                "(tasks[0] is one)",
                'spec.tasks[1].name: Duplicate value: "learner"',
            ],
        ),
    ],
    ids=["generic-job", "dijob"],
)
def test_invalid_jobs_are_refused_with_every_field_error(cluster: Cluster, manifest, lines):
    result = cluster.kubectl("apply", "-f", str(manifest))
    assert result.returncode != 0
    for line in lines:
        assert line in result.stderr, result.stderr
    doc = YAML(typ="safe").load(manifest.read_text())
    kind = f"{doc['kind'].lower()}.{doc['apiVersion'].split('/')[0]}"
    assert cluster.kubectl("get", kind, doc["metadata"]["name"], "-n", NAMESPACE).returncode != 0


def test_server_side_dry_run_defaults_without_storing(cluster: Cluster):
    result = cluster.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", input=dijob("di-dry"))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["spec"]["tasks"][1]["name"] == "collector"
    assert cluster.kubectl("get", "dijob", "di-dry", "-n", NAMESPACE).returncode != 0


def test_generic_job_update_rules(cluster: Cluster):
    cluster.kubectl("apply", "--server-side", "-f", "-", input=generic_job("gj-update"), check=True)
    try:
        before = cluster.get_json("genericjob", "gj-update", "-n", NAMESPACE)
        paused = dry_run_apply(cluster, generic_job("gj-update", paused="true"))
        assert paused.returncode == 0, paused.stderr
        resume_changed = dry_run_apply(cluster, generic_job("gj-update", resume_arg="--other"))
        assert resume_changed.returncode != 0
        assert "spec.runMode.pause.resumeSpecs: Forbidden: field is immutable" in resume_changed.stderr
        template_changed = dry_run_apply(cluster, generic_job("gj-update", image="busybox:1.37"))
        assert template_changed.returncode != 0
        assert "spec.replicaSpecs: Forbidden: replica types and pod templates are immutable" in template_changed.stderr
        scaled = cluster.kubectl(
            "apply", "--server-side", "--dry-run=server", "-o", "json", "-f", "-",
            input=generic_job("gj-update", workers=1),
        )  # fmt: skip
        assert scaled.returncode == 0, scaled.stderr
        assert json.loads(scaled.stdout)["spec"]["successRules"] == [{"master": [0], "worker": [0]}]
        labelled = cluster.kubectl("label", "genericjob", "gj-update", "-n", NAMESPACE, "team=a")
        assert labelled.returncode == 0, labelled.stderr
        # Pausing for real, then resuming: both toggles are stored.
        for state in ("true", "false"):
            cluster.kubectl(
                "apply", "--server-side", "-f", "-", input=generic_job("gj-update", paused=state), check=True
            )
            stored = cluster.get_json("genericjob", "gj-update", "-n", NAMESPACE)
            assert stored["spec"]["runMode"]["pause"]["enabled"] is (state == "true")
        assert stored["spec"]["replicaSpecs"] == before["spec"]["replicaSpecs"]
    finally:
        cluster.kubectl("delete", "genericjob", "gj-update", "-n", NAMESPACE, "--wait=false")


def test_dijob_update_rules(cluster: Cluster):
    cluster.kubectl("apply", "--server-side", "-f", "-", input=dijob("di-update"), check=True)
    try:
        scaled = dry_run_apply(cluster, dijob("di-update", collectors=5))
        assert scaled.returncode == 0, scaled.stderr
        emptied = dry_run_apply(cluster, dijob("di-update", collectors=0))
        assert emptied.returncode != 0
        assert "spec.tasks[1].replicas: Invalid value: 0" in emptied.stderr
        cluster.kubectl("apply", "--server-side", "-f", "-", input=dijob("di-update", collectors=3), check=True)
        assert cluster.get_json("dijob", "di-update", "-n", NAMESPACE)["spec"]["tasks"][1]["replicas"] == 3
    finally:
        cluster.kubectl("delete", "dijob", "di-update", "-n", NAMESPACE, "--wait=false")


def test_explain_describes_both_apis(cluster: Cluster):
    result = cluster.kubectl("explain", "genericjobs.spec.successRules", check=True)
    assert "The job succeeds when any rule is fulfilled" in result.stdout
    result = cluster.kubectl("explain", "dijobs.spec.tasks.name", check=True)
    assert "Task name (a DNS-1123 label, unique)" in result.stdout
