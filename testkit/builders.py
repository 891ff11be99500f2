"""Small builders for job manifests and AdmissionReviews used across the tests."""

from __future__ import annotations

import copy
import uuid
from typing import Any

from jobgate.review import Verdict, kind_of, review_job

KUBEDL = "training.kubedl.io/v1alpha1"
MLKUBE = "mxnet.mlkube.io/v1beta1"
VOLCANO = "batch.volcano.sh/v1alpha1"

REPLICA_FIELDS = {
    "TFJob": ("tfReplicaSpecs", "tensorflow"),
    "PyTorchJob": ("pytorchReplicaSpecs", "pytorch"),
    "XGBoostJob": ("xgbReplicaSpecs", "xgboostjob"),
    "MPIJob": ("mpiReplicaSpecs", "mpi"),
    "XDLJob": ("xdlReplicaSpecs", "xdl"),
    "MarsJob": ("marsReplicaSpecs", "mars"),
}

# The smallest valid replica map of each KubeDL kind.
MINIMAL_ROLES = {
    "TFJob": ("Worker",),
    "PyTorchJob": ("Master",),
    "XGBoostJob": ("Master",),
    "MPIJob": ("Launcher",),
    "XDLJob": ("Worker",),
    "MarsJob": ("Scheduler",),
}


def container(name: str = "tensorflow", image: str | None = "example/image:1", **extra: Any) -> dict[str, Any]:
    result: dict[str, Any] = {"name": name}
    if image is not None:
        result["image"] = image
    result.update(extra)
    return result


def replica(*containers: dict[str, Any], replicas: int | None = None, **extra: Any) -> dict[str, Any]:
    pod_spec = extra.pop("pod_spec", {})
    result: dict[str, Any] = {"template": {"spec": {"containers": list(containers), **pod_spec}}}
    if replicas is not None:
        result["replicas"] = replicas
    result.update(extra)
    return result


def kubedl_job(kind: str, replicas: dict[str, Any] | None = None, *, name: str = "job", **spec: Any) -> dict[str, Any]:
    field, container_name = REPLICA_FIELDS[kind]
    if replicas is None:
        replicas = {role: replica(container(container_name)) for role in MINIMAL_ROLES[kind]}
    return {
        "apiVersion": KUBEDL,
        "kind": kind,
        "metadata": {"name": name, "namespace": "default"},
        "spec": {field: replicas, **spec},
    }


def tfjob(replicas: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return kubedl_job("TFJob", replicas, **spec)


def mx_replica(replica_type: str | None = "WORKER", replicas: int | None = None, **extra: Any) -> dict[str, Any]:
    result = replica(container("mxnet"), replicas=replicas, **extra)
    if replica_type is not None:
        result["mxReplicaType"] = replica_type
    return result


def mxjob(job_mode: str | None, *replica_specs: dict[str, Any], name: str = "mx") -> dict[str, Any]:
    spec: dict[str, Any] = {"replicaSpecs": list(replica_specs)}
    if job_mode is not None:
        spec["jobMode"] = job_mode
    return {"apiVersion": MLKUBE, "kind": "MxJob", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def review(obj: dict[str, Any], old: dict[str, Any] | None = None) -> Verdict:
    kind = kind_of(obj)
    assert kind is not None, obj
    snapshot = copy.deepcopy(obj)
    verdict = review_job(kind, obj, old)
    assert obj == snapshot, "review_job must not modify its input"
    return verdict


def errors_of(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return [str(e) for e in review(obj, old).errors]


def fields_of(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return [e.field for e in review(obj, old).errors]


def admission_review(
    obj: dict[str, Any] | None,
    *,
    operation: str = "CREATE",
    old: dict[str, Any] | None = None,
    uid: str | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    source = obj if obj is not None else old or {}
    api_version = source.get("apiVersion", "v1")
    group, _, version = api_version.rpartition("/")
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid or str(uuid.uuid4()),
            "kind": {"group": group, "version": version, "kind": source.get("kind", "")},
            "resource": {"group": group, "version": version, "resource": source.get("kind", "").lower() + "s"},
            "name": source.get("metadata", {}).get("name", ""),
            "namespace": source.get("metadata", {}).get("namespace", "default"),
            "operation": operation,
            "userInfo": {"username": "tester"},
            "object": obj,
            "oldObject": old,
            "dryRun": dry_run,
        },
    }


def vc_task(name: str | None = "worker", replicas: int | None = 1, **fields: Any) -> dict[str, Any]:
    """A Volcano task with a minimal valid pod template."""
    task: dict[str, Any] = {"replicas": replicas, "template": {"spec": {"containers": [container("main")]}}}
    if name is not None:
        task["name"] = name
    if replicas is None:
        del task["replicas"]
    task.update(fields)
    return task


def vcjob(*tasks: dict[str, Any], name: str = "job", **spec: Any) -> dict[str, Any]:
    """A ``batch.volcano.sh/v1alpha1`` Job in namespace ``default``."""
    return {
        "apiVersion": VOLCANO,
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"tasks": list(tasks), **spec},
    }
