"""The Kubeflow family's rules beyond Kubeflow's own test tables (test_kubeflow_review_table.py):
one failing case per rule, and the places where jobgate departs from Kubeflow on purpose."""

from __future__ import annotations

from typing import Any

import pytest

from jobgate.api.constants import KUBEFLOW_MANAGED_BY
from jobgate.engine.fielderrors import ErrorType
from jobgate.families.kubeflow import models
from jobgate.families.kubeflow import rules as kubeflow
from jobgate.review import defaulting_patch, kind_of, review_job

KF = "kubeflow.org/v1"
FIELDS = {k.kind: (k.replicas_field, k.container) for k in kubeflow.KINDS}
ROLES = {"TFJob": "Worker", "PyTorchJob": "Master", "XGBoostJob": "Master", "PaddleJob": "Worker", "JAXJob": "Worker"}


def container(name: str, image: str = "example/image:1", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": image, **extra}


def replica(kind: str, replicas: int | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"template": {"spec": {"containers": [container(FIELDS[kind][1])]}}, **extra}
    if replicas is not None:
        out["replicas"] = replicas
    return out


def kf_job(kind: str, replicas: dict[str, Any] | None = None, *, name: str = "job", **spec: Any) -> dict[str, Any]:
    if replicas is None:
        replicas = {"Launcher": replica(kind)} if kind == "MPIJob" else {ROLES[kind]: replica(kind)}
    return {
        "apiVersion": KF,
        "kind": kind,
        "metadata": {"name": name, "namespace": "default"},
        "spec": {FIELDS[kind][0]: replicas, **spec},
    }


def review(obj: dict[str, Any], old: dict[str, Any] | None = None):
    kind = kind_of(obj)
    assert kind is not None
    return review_job(kind, obj, old)


def errors(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return [str(e) for e in review(obj, old).errors]


def stored(obj: dict[str, Any]) -> dict[str, Any]:
    return review(obj).defaulted


ALL_KINDS = [k.kind for k in kubeflow.KINDS]


def test_the_family_is_looked_up_by_group_version_kind():
    for kind in ALL_KINDS:
        found = kind_of(kf_job(kind))
        assert found is not None and found.family == "kubeflow" and found.gvk.group == "kubeflow.org"
        assert kind_of({**kf_job(kind), "apiVersion": "training.kubedl.io/v1alpha1"}) is not kind_of(kf_job(kind))


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_every_kind_admits_its_smallest_job(kind):
    assert errors(kf_job(kind)) == []


# --- defaults ----------------------------------------------------------------------------------

PORTS = {
    "TFJob": ("tfjob-port", 2222),
    "PyTorchJob": ("pytorchjob-port", 23456),
    "XGBoostJob": ("xgboostjob-port", 9999),
    "PaddleJob": ("master", 36543),
    "JAXJob": ("jaxjob-port", 6666),
}
RESTART = {
    "TFJob": "Never",
    "PyTorchJob": "OnFailure",
    "XGBoostJob": "Never",
    "PaddleJob": "OnFailure",
    "JAXJob": "Never",
}


@pytest.mark.parametrize("kind", sorted(PORTS))
def test_replicas_restart_policy_and_port_by_kind(kind):
    spec = stored(kf_job(kind))["spec"]
    (entry,) = spec[FIELDS[kind][0]].values()
    assert entry["replicas"] == 1
    assert entry["restartPolicy"] == RESTART[kind]
    (only,) = entry["template"]["spec"]["containers"]
    name, number = PORTS[kind]
    assert only["ports"] == [{"name": name, "containerPort": number}]
    assert "terminationMessagePolicy" not in only  # a KubeDL default, not Kubeflow's
    assert spec["runPolicy"] == {"cleanPodPolicy": "None", "suspend": False}


def test_the_port_goes_to_the_framework_container_else_the_first():
    sidecar_first = {"Worker": {"template": {"spec": {"containers": [container("sidecar"), container("tensorflow")]}}}}
    containers = stored(kf_job("TFJob", sidecar_first))["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"][
        "containers"
    ]
    assert "ports" not in containers[0] and containers[1]["ports"][0]["name"] == "tfjob-port"
    unnamed = {"Worker": {"template": {"spec": {"containers": [container("main")]}}}}
    containers = stored(kf_job("JAXJob", unnamed))["spec"]["jaxReplicaSpecs"]["Worker"]["template"]["spec"][
        "containers"
    ]
    assert containers[0]["ports"] == [{"name": "jaxjob-port", "containerPort": 6666}]


def test_pytorch_port_on_every_replica_type():
    spec = stored(kf_job("PyTorchJob", {"Master": replica("PyTorchJob"), "Worker": replica("PyTorchJob")}))["spec"]
    for entry in spec["pytorchReplicaSpecs"].values():
        assert entry["template"]["spec"]["containers"][0]["ports"][0]["name"] == "pytorchjob-port"


def test_tfjob_success_policy_and_kept_values():
    spec = stored(kf_job("TFJob", runPolicy={"cleanPodPolicy": "All", "suspend": True}))["spec"]
    assert spec["successPolicy"] == ""
    assert spec["runPolicy"] == {"cleanPodPolicy": "All", "suspend": True}
    spec = stored(kf_job("TFJob", successPolicy="AllWorkers"))["spec"]
    assert spec["successPolicy"] == "AllWorkers"


def test_mpijob_defaults_no_port_launcher_one_worker_zero():
    job = kf_job("MPIJob", {"Launcher": replica("MPIJob"), "Worker": replica("MPIJob")})
    spec = stored(job)["spec"]
    assert spec["mpiReplicaSpecs"]["Launcher"]["replicas"] == 1
    assert spec["mpiReplicaSpecs"]["Worker"]["replicas"] == 0
    assert {e["restartPolicy"] for e in spec["mpiReplicaSpecs"].values()} == {"Never"}
    assert all("ports" not in e["template"]["spec"]["containers"][0] for e in spec["mpiReplicaSpecs"].values())
    assert spec["cleanPodPolicy"] == "None" and spec["runPolicy"]["cleanPodPolicy"] == "None"


def test_mpijob_clean_pod_policy_only_when_both_are_unset():
    spec = stored(kf_job("MPIJob", cleanPodPolicy="All"))["spec"]
    assert spec["cleanPodPolicy"] == "All" and "cleanPodPolicy" not in spec["runPolicy"]
    spec = stored(kf_job("MPIJob", runPolicy={"cleanPodPolicy": "Running"}))["spec"]
    assert "cleanPodPolicy" not in spec and spec["runPolicy"]["cleanPodPolicy"] == "Running"


def test_mpijob_types_are_not_normalised():
    result = review(kf_job("MPIJob", {"launcher": replica("MPIJob")}))
    assert "launcher" in result.defaulted["spec"]["mpiReplicaSpecs"]
    assert [e.type for e in result.errors] == [ErrorType.NOT_SUPPORTED, ErrorType.REQUIRED]


def test_lower_case_types_are_normalised_then_admitted():
    # Kubeflow's PyTorch webhook refuses `worker` (it validates before its defaulter renames it);
    # jobgate's /mutate renames it first, so Kubeflow's own webhook behind it admits it too.
    job = kf_job("PyTorchJob", {"master": replica("PyTorchJob"), "WORKER": replica("PyTorchJob")})
    result = review(job)
    assert result.errors == []
    assert set(result.defaulted["spec"]["pytorchReplicaSpecs"]) == {"Master", "Worker"}
    ops = defaulting_patch(kind_of(job), job)
    assert {"op": "move", "from": "/spec/pytorchReplicaSpecs/master", "path": "/spec/pytorchReplicaSpecs/Master"} in ops


def test_master_without_replicas_is_defaulted_then_admitted():
    # Kubeflow's webhook alone refuses a Master without replicas (`must be 1`); defaulted first, it is 1.
    assert errors(kf_job("XGBoostJob", {"Master": replica("XGBoostJob")})) == []


@pytest.mark.parametrize("kind", ["PyTorchJob", "PaddleJob"])
def test_elastic_policy_without_worker_is_left_alone_and_refused(kind):
    job = kf_job(kind, {"Master": replica(kind, 1)}, elasticPolicy={})
    result = review(job)
    assert result.defaulted["spec"]["elasticPolicy"] == {}
    field = FIELDS[kind][0]
    # Kubeflow's PaddleJob webhook does not say it (its defaulter then panics): jobgate does, for both.
    assert f"spec.{field}[Worker]: Required value: must be configured if elastic policy is used" in [
        str(e) for e in result.errors
    ]


def test_nproc_per_node_default_is_skipped_when_the_elastic_policy_has_one():
    spec = stored(kf_job("PyTorchJob", {"Worker": replica("PyTorchJob")}, elasticPolicy={"nProcPerNode": 2}))["spec"]
    assert "nprocPerNode" not in spec
    spec = stored(kf_job("PyTorchJob", nprocPerNode="4"))["spec"]
    assert spec["nprocPerNode"] == "4"


def test_unknown_tfjob_type_is_defaulted_and_admitted_with_a_warning():
    job = kf_job("TFJob", {"Worker": replica("TFJob"), "Sidecar": replica("TFJob")})
    result = review(job)
    assert result.errors == []
    assert result.defaulted["spec"]["tfReplicaSpecs"]["Sidecar"]["restartPolicy"] == "Never"
    assert any("tfReplicaSpecs[Sidecar]: not one of" in w for w in result.warnings)


def test_defaulting_is_idempotent_and_minimal():
    job = kf_job("PyTorchJob", {"Master": replica("PyTorchJob"), "Worker": replica("PyTorchJob", 3)})
    kind = kind_of(job)
    once = review(job).defaulted
    assert defaulting_patch(kind, once) == []
    ops = defaulting_patch(kind, job)
    assert {"op": "add", "path": "/spec/runPolicy", "value": {"cleanPodPolicy": "None", "suspend": False}} in ops
    assert all(not op["path"].startswith("/metadata") for op in ops)


# --- checks ------------------------------------------------------------------------------------


def test_name_in_kubeflows_words():
    (error,) = errors(kf_job("JAXJob", name="Bad_Name"))
    assert error.startswith('metadata.name: Invalid value: "Bad_Name": should match: a DNS-1035 label must consist')


def test_derived_pod_names_fit_in_63_characters():
    job = kf_job("PyTorchJob", {"Worker": replica("PyTorchJob", 100)}, name="a" * 55)
    assert any("derived from it must be no more than 63 characters" in e for e in errors(job))


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_managed_by_for_every_kind(kind):
    # Kubeflow's JAXJob webhook forgets it and MPIJob has none: MultiKueue relies on it for all.
    for manager in KUBEFLOW_MANAGED_BY:
        assert errors(kf_job(kind, runPolicy={"managedBy": manager})) == []
    (error,) = errors(kf_job(kind, runPolicy={"managedBy": "someone/else"}))
    assert error == (
        'spec.runPolicy.managedBy: Unsupported value: "someone/else": supported values: '
        '"kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"'
    )


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_managed_by_is_immutable_for_every_kind(kind):
    old = kf_job(kind, runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"})
    for new_value in ("kubeflow.org/training-operator", None):
        run_policy = {"managedBy": new_value} if new_value else {}
        (error,) = errors(kf_job(kind, runPolicy=run_policy), old)
        assert error.startswith("spec.runPolicy.managedBy: Invalid value: ") and error.endswith("field is immutable")
    assert errors(kf_job(kind, runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"}), old) == []
    # Setting it on a job that had none is a change too (Kubeflow's ValidateImmutableField).
    assert errors(kf_job(kind, runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"}), kf_job(kind)) != []


def test_queue_is_immutable_once_set_as_kubeflows_crd_rule():
    old = kf_job("TFJob", runPolicy={"schedulingPolicy": {"queue": "a"}})
    (error,) = errors(kf_job("TFJob", runPolicy={"schedulingPolicy": {"queue": "b"}}), old)
    assert error == (
        'spec.runPolicy.schedulingPolicy.queue: Invalid value: "b": spec.runPolicy.schedulingPolicy.queue is immutable'
    )
    # A transition rule: setting a queue, or dropping it, is not compared.
    assert errors(kf_job("TFJob", runPolicy={"schedulingPolicy": {"queue": "b"}}), kf_job("TFJob")) == []
    assert errors(kf_job("TFJob"), old) == []


def test_min_available_fits_the_job():
    job = kf_job("TFJob", {"Worker": replica("TFJob", 2)}, runPolicy={"schedulingPolicy": {"minAvailable": 3}})
    assert errors(job) == [
        "spec.runPolicy.schedulingPolicy.minAvailable: Invalid value: 3: "
        "must be less than or equal to the total number of replicas (2)"
    ]


def test_paddle_container_message_is_quoted_as_kubeflows():
    job = kf_job("PaddleJob", {"Worker": {"template": {"spec": {"containers": [container("main")]}}}})
    assert errors(job) == [
        "spec.paddleReplicaSpecs[Worker].template.spec.containers: Required value: must have at least one container "
        'with name "paddle"'
    ]


@pytest.mark.parametrize("template", [None, {}, {"metadata": {}}], ids=["no template", "empty", "no spec"])
def test_a_replica_without_template_is_one_without_containers(template):
    entry = {"replicas": 1} if template is None else {"replicas": 1, "template": template}
    assert errors(kf_job("JAXJob", {"Worker": entry})) == [
        "spec.jaxReplicaSpecs[Worker].template.spec.containers: Required value: "
        "must be specified: must have at least one container with name jax"
    ]


def test_a_replica_without_containers_is_one_clear_error():
    # Kubeflow says it twice (`must be specified`, `must have at least one container with name tensorflow`)
    # and its defaulter would panic on it; jobgate says it once.
    job = kf_job("TFJob", {"Worker": {"template": {"spec": {"containers": []}}}})
    assert errors(job) == [
        "spec.tfReplicaSpecs[Worker].template.spec.containers: Required value: "
        "must be specified: must have at least one container with name tensorflow"
    ]


def test_a_null_replica_entry_counts_as_absent():
    # The apiserver drops null map entries of a custom resource before any webhook; Kubeflow's
    # validators and defaulters would dereference them.
    result = review(kf_job("PyTorchJob", {"Master": replica("PyTorchJob"), "Worker": None}))
    assert result.errors == []
    only_null = errors(kf_job("PyTorchJob", {"Worker": None}))
    assert only_null and all("pytorchReplicaSpecs" in e for e in only_null)


def test_an_empty_replica_map_is_refused():
    assert errors(kf_job("JAXJob", {})) != []


def test_mpijob_checks_with_kubeflows_sentences():
    job = kf_job("MPIJob", {"Launcher": replica("MPIJob", 2), "Worker": replica("MPIJob", 2)})
    assert errors(job) == [
        "spec.mpiReplicaSpecs[Launcher].replicas: Forbidden: must be 1 "
        "(MPIReplicaSpec is not valid: There must be only 1 launcher replica)"
    ]
    job = kf_job("MPIJob", {"Worker": replica("MPIJob", 2)})
    assert errors(job) == [
        "spec.mpiReplicaSpecs[Launcher]: Required value: must be present "
        "(MPIReplicaSpec is not valid: Master ReplicaSpec must be present)"
    ]
    job = kf_job("MPIJob", {"Launcher": {"template": {"spec": {"containers": []}}}})
    assert errors(job) == [
        "spec.mpiReplicaSpecs[Launcher].template.spec.containers: Required value: must have at least one "
        "container (MPIReplicaSpecs is not valid: containers definition expected)"
    ]
    # No framework container is required of an MPIJob.
    assert errors(kf_job("MPIJob", {"Launcher": {"template": {"spec": {"containers": [container("x")]}}}})) == []


def test_pod_template_checks_apply():
    job = kf_job("JAXJob", {"Worker": {"template": {"spec": {"containers": [container("jax", ports=[{}])]}}}})
    assert errors(job) == [
        "spec.jaxReplicaSpecs[Worker].template.spec.containers[0].ports[0].containerPort: Required value"
    ]


def test_the_schema_checks_types():
    assert errors(kf_job("TFJob", runPolicy={"backoffLimit": -1})) == [
        "spec.runPolicy.backoffLimit: Invalid value: -1: spec.runPolicy.backoffLimit in body should be greater than "
        "or equal to 0"
    ]


def test_light_constants_agree_with_the_models():
    field = models.RunPolicy.model_fields["managedBy"]
    for manager in KUBEFLOW_MANAGED_BY:
        assert manager in (field.description or "")
    assert models.GROUP == "kubeflow.org" and models.VERSION == "v1"
    assert {k.gvk.version for k in kubeflow.KINDS} == {"v1"}
