"""The objects a job runs as, built from the common model: its pods, their headless Services
and the gang's PodGroup, with the names, labels and owner reference they carry.

Kept apart from the engine because what a child looks like is not a reconcile decision: the
engine (and Volcano's lifecycle, which labels its pods its own way) decides when a child is
created or removed and builds it here. Nothing here reads the clock or what the informers see.
"""

from __future__ import annotations

import copy
from typing import Any

from .model import JobModel, ReplicaGroup, child_name

# On every replica's pod and Service: the Service selects its pod by them, the engine finds a pod's replica.
LABEL_REPLICA_TYPE = "replica-type"
LABEL_REPLICA_INDEX = "replica-index"
LABEL_JOB_ROLE = "job-role"

# Volcano's gang: one PodGroup named as the job, named again on each of its pods.
POD_GROUP_API = "scheduling.volcano.sh/v1beta1"
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"


def pod_name(model: JobModel, group: ReplicaGroup, index: int) -> str:
    return child_name(model.name, group.object_name, index)


def owner_reference(model: JobModel) -> dict[str, Any]:
    return {
        "apiVersion": model.api_version,
        "kind": model.kind,
        "name": model.name,
        "uid": model.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def replica_labels(model: JobModel, group: ReplicaGroup, index: int) -> dict[str, str]:
    labels = {**model.labels, LABEL_REPLICA_TYPE: group.object_name, LABEL_REPLICA_INDEX: str(index)}
    if index in group.master_indices:
        labels[LABEL_JOB_ROLE] = "master"
    return labels


def build_pod_group(model: JobModel) -> dict[str, Any]:
    policy = model.run_policy
    spec: dict[str, Any] = {"minMember": policy.gang_min_member}
    if policy.queue:
        spec["queue"] = policy.queue
    if policy.priority_class:
        spec["priorityClassName"] = policy.priority_class
    return {
        "apiVersion": POD_GROUP_API,
        "kind": "PodGroup",
        "metadata": {
            "name": model.name,
            "namespace": model.namespace,
            "labels": dict(model.labels),
            "ownerReferences": [owner_reference(model)],
        },
        "spec": spec,
    }


def build_pod(model: JobModel, group: ReplicaGroup, index: int, *, gang_scheduled: bool = False) -> dict[str, Any]:
    template = copy.deepcopy(group.template)
    metadata = template.get("metadata") if isinstance(template.get("metadata"), dict) else {}
    spec = template.get("spec") if isinstance(template.get("spec"), dict) else {}
    spec["restartPolicy"] = group.pod_restart_policy
    env = model.env(group, index) if model.env else {}
    for container in spec.get("containers", []):
        additions = env.get(container.get("name")) or env.get("*")
        if additions:
            given = [e for e in container.get("env", []) if e.get("name") not in {a["name"] for a in additions}]
            container["env"] = given + additions
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(model, group, index),
            "namespace": model.namespace,
            "labels": {**(metadata.get("labels") or {}), **replica_labels(model, group, index)},
            "annotations": dict(metadata.get("annotations") or {}),
            "ownerReferences": [owner_reference(model)],
        },
        "spec": spec,
    }
    if gang_scheduled:
        pod["metadata"]["annotations"][GROUP_NAME_ANNOTATION] = model.name
        spec.setdefault("schedulerName", "volcano")
    if model.pod_decoration:
        model.pod_decoration(group, index, pod)
    return pod


def wants_service(group: ReplicaGroup) -> bool:
    return group.port is not None or bool(group.service_ports)


def build_service(model: JobModel, group: ReplicaGroup, index: int) -> dict[str, Any]:
    if group.service_ports:
        ports = [copy.deepcopy(p) for p in group.service_ports]
    else:
        assert group.port is not None
        port_name, port = group.port
        ports = [{"name": port_name, "port": port, "targetPort": port}]
    labels = replica_labels(model, group, index)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": pod_name(model, group, index),
            "namespace": model.namespace,
            "labels": labels,
            "ownerReferences": [owner_reference(model)],
        },
        "spec": {
            "clusterIP": "None",
            # Replicas look each other up before they are ready (rendezvous happens at start).
            "publishNotReadyAddresses": True,
            "selector": {k: v for k, v in labels.items() if k != LABEL_JOB_ROLE},
            "ports": ports,
        },
    }
