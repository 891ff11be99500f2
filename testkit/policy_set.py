"""The bench's TFJob (``tfjob_manifest``: ``bench/fixtures.py`` wraps it in an AdmissionReview) and a
policy set of a given size of which a given number apply to it.

Here, in the harness, rather than under ``bench/``: the policy unit tests check the same job against
the same policies, and neither tier imports the other.

The matching policies carry limits, requirements and defaults the job satisfies (it stays
admitted, as without policies, so that both runs do the same work besides the policies); the
others are kept from the job in each of the ways a real cluster's are: a cluster policy whose
``namespaceSelector`` selects other namespaces, a namespaced policy in another namespace, a
``match.families``/``kinds`` for other APIs, an ``objectSelector`` the job's labels miss.
"""

from __future__ import annotations

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


API_VERSION = "policy.jobgate.io/v1alpha1"
# The fixture's namespace and the labels that namespace has in the bench.
NAMESPACE = "vision"
NAMESPACE_LABELS = {"tier": "research", "team": "vision"}
OTHER_NAMESPACES = ("audio", "text", "robotics")

# What each matching policy says, in turn: every part of the spec (limits, GPUs, required labels,
# allow-lists, registries, forbid, defaults), each satisfied by the fixture's job.
_MATCHING_SPECS: tuple[dict[str, Any], ...] = (
    {"limits": {"maxGPUsPerJob": 64, "maxGPUsPerPod": 8}},
    {"limits": {"maxReplicasPerRole": 32, "maxReplicasPerJob": 64}},
    {"require": {"labels": [{"key": "team"}]}},
    {"require": {"imageRegistries": ["registry.example.com/", "ghcr.io/"]}},
    {"require": {"forbid": ["hostNetwork", "privileged", "hostPID", "hostIPC"]}},
    {"limits": {"maxActiveDeadlineSeconds": 604800}, "require": {"activeDeadlineSeconds": True}},
    {"require": {"queues": ["vision", "shared"]}},
    {"defaults": {"ttlSecondsAfterFinished": 86400}, "limits": {"maxTTLSecondsAfterFinished": 604800}},
    {"defaults": {"labels": {"cost-center": "ml-vision"}}, "enforcementAction": "Warn"},
    {"limits": {"maxGPUsPerJob": 128, "gpuResources": [{"name": "nvidia.com/gpu"}, {"name": "nvidia.com/mig-*"}]}},
)


def _cluster(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "ClusterTrainingJobPolicy", "metadata": {"name": name}, "spec": spec}


def _namespaced(name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    metadata = {"name": name, "namespace": namespace}
    return {"apiVersion": API_VERSION, "kind": "TrainingJobPolicy", "metadata": metadata, "spec": spec}


def _not_matching(index: int) -> dict[str, Any]:
    spec = dict(_MATCHING_SPECS[index % len(_MATCHING_SPECS)])
    way = index % 4
    if way == 0:
        selector = {"matchLabels": {"tier": "production"}}
        return _cluster(f"bench-other-tier-{index}", {**spec, "namespaceSelector": selector})
    if way == 1:
        return _namespaced(f"bench-elsewhere-{index}", OTHER_NAMESPACES[index % len(OTHER_NAMESPACES)], spec)
    if way == 2:
        match = {"families": ["volcano", "kubeflow"], "kinds": [{"group": "batch.volcano.sh", "kind": "Job"}]}
        return _cluster(f"bench-other-apis-{index}", {**spec, "match": match})
    match = {"objectSelector": {"matchLabels": {"team": "speech"}}}
    return _cluster(f"bench-other-team-{index}", {**spec, "match": match})


def policy_set(total: int, matching: int) -> list[dict[str, Any]]:
    """``total`` policies, ``matching`` of which apply to the fixture's TFJob in ``NAMESPACE``."""
    if not 0 <= matching <= total:
        raise ValueError(f"matching ({matching}) must be between 0 and total ({total})")
    policies = []
    for index in range(matching):
        spec = dict(_MATCHING_SPECS[index % len(_MATCHING_SPECS)])
        if index % 2:
            policies.append(_namespaced(f"bench-match-{index}", NAMESPACE, spec))
        else:
            selector = {"matchLabels": {"tier": "research"}}
            match = {"families": ["kubedl"], "objectSelector": {"matchLabels": {"team": "vision"}}}
            policies.append(_cluster(f"bench-match-{index}", {**spec, "namespaceSelector": selector, "match": match}))
    policies.extend(_not_matching(index) for index in range(total - matching))
    return policies


def namespaces() -> list[dict[str, Any]]:
    """The Namespace objects the set selects by (``--namespaces`` offline, created on the bench's plane)."""
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE, "labels": NAMESPACE_LABELS}}]
    for name in OTHER_NAMESPACES:
        metadata = {"name": name, "labels": {"tier": "prod"}}
        objects.append({"apiVersion": "v1", "kind": "Namespace", "metadata": metadata})
    return objects
