"""Builders shared by the policy tests (no tests here): policies and jobs of every family, as plain dicts."""

from __future__ import annotations

from typing import Any


def cluster(name: str, spec: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy.jobgate.io/v1alpha1",
        "kind": "ClusterTrainingJobPolicy",
        "metadata": {"name": name},
        "spec": spec,
        **top,
    }


def namespaced(name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "policy.jobgate.io/v1alpha1",
        "kind": "TrainingJobPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def pod(gpus: int | str | None = None, image: str = "registry.example.com/ml/train:1", **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": image}
    if gpus is not None:
        container["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    return {"spec": {"containers": [container], **spec}}


def kubeflow(kind: str = "PyTorchJob", roles: dict[str, tuple[int, dict[str, Any]]] | None = None, **spec: Any) -> dict:
    field = {
        "PyTorchJob": "pytorchReplicaSpecs",
        "TFJob": "tfReplicaSpecs",
        "MPIJob": "mpiReplicaSpecs",
        "PaddleJob": "paddleReplicaSpecs",
    }[kind]
    roles = roles or {"Master": (1, pod(1)), "Worker": (2, pod(1))}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": kind,
        "metadata": {"name": "j", "namespace": "ns", "labels": {}},
        "spec": {field: {r: {"replicas": n, "template": t} for r, (n, t) in roles.items()}, **spec},
    }


def kubedl(kind: str = "TFJob", replicas: int = 2, template: dict | None = None, **spec: Any) -> dict:
    field = {"TFJob": "tfReplicaSpecs", "MPIJob": "mpiReplicaSpecs", "MarsJob": "marsReplicaSpecs"}[kind]
    return {
        "apiVersion": "training.kubedl.io/v1alpha1",
        "kind": kind,
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {field: {"Worker": {"replicas": replicas, "template": template or pod(1)}}, **spec},
    }


def volcano(tasks: list[dict[str, Any]] | None = None, **spec: Any) -> dict:
    tasks = tasks or [{"name": "worker", "replicas": 2, "minAvailable": 1, "template": pod(1)}]
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {"tasks": tasks, **spec},
    }


def mxjob(replicas: int = 1) -> dict:
    return {
        "apiVersion": "mxnet.mlkube.io/v1beta1",
        "kind": "MxJob",
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {
            "jobMode": "dist",
            "replicaSpecs": [{"mxReplicaType": "WORKER", "replicas": replicas, "template": pod(1)}],
        },
    }


def t9k(**spec: Any) -> dict:
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "GenericJob",
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {"replicaSpecs": [{"type": "worker", "replicas": 2, "template": pod(1)}], **spec},
    }


def dijob(**spec: Any) -> dict:
    return {
        "apiVersion": "diengine.opendilab.org/v2alpha1",
        "kind": "DIJob",
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {"tasks": [{"name": "learner", "type": "learner", "replicas": 1, "template": pod(1)}], **spec},
    }
