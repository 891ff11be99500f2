"""A realistic TFJob AdmissionReview, as the apiserver sends it after ``kubectl apply``.

PS x2 and Worker x4 with resources, volumes, tolerations and node selection, plus the
``last-applied-configuration`` annotation client-side apply writes: about 5 KB on the wire.
"""

from __future__ import annotations

import json
from typing import Any


def _replica(replicas: int, cpu: str, memory: str, gpus: int) -> dict[str, Any]:
    limits: dict[str, Any] = {"cpu": cpu, "memory": memory}
    if gpus:
        limits["nvidia.com/gpu"] = gpus
    return {
        "replicas": replicas,
        "template": {
            "metadata": {"labels": {"app": "imagenet", "team": "vision"}},
            "spec": {
                "containers": [
                    {
                        "name": "tensorflow",
                        "image": "registry.example.com/vision/resnet50:2.16",
                        "command": ["python", "/opt/train/resnet50.py"],
                        "env": [
                            {"name": "NCCL_DEBUG", "value": "WARN"},
                        ],
                        "resources": {"requests": {"cpu": cpu, "memory": memory}, "limits": limits},
                        "volumeMounts": [
                            {"name": "dataset", "mountPath": "/data", "readOnly": True},
                            {"name": "models", "mountPath": "/models"},
                            {"name": "dshm", "mountPath": "/dev/shm"},
                        ],
                    }
                ],
                "volumes": [
                    {"name": "dataset", "persistentVolumeClaim": {"claimName": "imagenet-dataset", "readOnly": True}},
                    {"name": "models", "persistentVolumeClaim": {"claimName": "vision-models"}},
                    {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}},
                ],
                "tolerations": [
                    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                    {"key": "dedicated", "operator": "Equal", "value": "training", "effect": "NoSchedule"},
                ],
                "nodeSelector": {"node.kubernetes.io/instance-type": "p4d.24xlarge"},
            },
        },
    }


def tfjob_manifest() -> dict[str, Any]:
    return {
        "apiVersion": "training.kubedl.io/v1alpha1",
        "kind": "TFJob",
        "metadata": {"name": "imagenet-resnet50", "namespace": "vision", "labels": {"team": "vision"}},
        "spec": {
            "backoffLimit": 3,
            "activeDeadlineSeconds": 172800,
            "schedulingPolicy": {"minAvailable": 6, "queue": "vision"},
            "tfReplicaSpecs": {"PS": _replica(2, "4", "16Gi", 0), "Worker": _replica(4, "8", "64Gi", 1)},
        },
    }


def tfjob_review(uid: str = "705ab4f5-6393-11e8-b7cc-42010a800002") -> dict[str, Any]:
    manifest = tfjob_manifest()
    stored = json.loads(json.dumps(manifest))
    stored["metadata"].update(
        {
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": json.dumps(manifest, separators=(",", ":"))
            },
            "creationTimestamp": None,
            "generation": 1,
            "uid": "0d4f4e4e-8f6c-4b8e-9f7d-2b1f3d9c5a10",
        }
    )
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "training.kubedl.io", "version": "v1alpha1", "kind": "TFJob"},
            "resource": {"group": "training.kubedl.io", "version": "v1alpha1", "resource": "tfjobs"},
            "requestKind": {"group": "training.kubedl.io", "version": "v1alpha1", "kind": "TFJob"},
            "requestResource": {"group": "training.kubedl.io", "version": "v1alpha1", "resource": "tfjobs"},
            "name": "imagenet-resnet50",
            "namespace": "vision",
            "operation": "CREATE",
            "userInfo": {"username": "alice@example.com", "groups": ["system:authenticated", "vision-team"]},
            "object": stored,
            "oldObject": None,
            "dryRun": False,
            "options": {
                "kind": "CreateOptions",
                "apiVersion": "meta.k8s.io/v1",
                "fieldManager": "kubectl-client-side-apply",
            },
        },
    }


def tfjob_review_bytes() -> bytes:
    return json.dumps(tfjob_review(), separators=(",", ":")).encode()


if __name__ == "__main__":
    print(len(tfjob_review_bytes()), "bytes")
