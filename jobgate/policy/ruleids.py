"""The platform-policy rule ids a finding carries (``policy/max-gpus-per-job``, ...), with what each checks.

``jobgate validate`` prints the id after a policy's message and ``jobgate explain ID`` prints the
record; ``tests/unit/test_policy_rule_ids.py`` keeps this table equal to the ids the checks emit.
"""

from __future__ import annotations

from typing import NamedTuple

from jobgate.policy.models import FORBIDDEN_ITEMS


class PolicyRule(NamedTuple):
    """One policy rule: the spec field that states it, the field error it gives, and what it checks."""

    id: str
    constraint: str  # the policy spec field, e.g. limits.maxGPUsPerJob
    error_type: str  # the Kubernetes field-error type of its finding
    checks: str


_RULES = [
    PolicyRule(
        "policy/max-replicas-per-role",
        "limits.maxReplicasPerRole",
        "Invalid value",
        "No role may reach more replicas than the limit, counted at the largest size the job may reach "
        "(a PyTorchJob's elasticPolicy.maxReplicas, a Volcano task's replicas).",
    ),
    PolicyRule(
        "policy/max-replicas-per-job",
        "limits.maxReplicasPerJob",
        "Invalid value",
        "The replicas of all roles together, each at its largest, must not exceed the limit.",
    ),
    PolicyRule(
        "policy/max-gpus-per-pod",
        "limits.maxGPUsPerPod",
        "Invalid value",
        "A pod of any role must not request more weighted GPUs than the limit, counted as Kubernetes "
        "counts a pod's request (app containers and sidecars against the largest init container; "
        "requests, else limits; overhead) with the weights of limits.gpuResources.",
    ),
    PolicyRule(
        "policy/max-gpus-per-job",
        "limits.maxGPUsPerJob",
        "Invalid value",
        "The job's weighted GPUs, Σ over roles of the largest replica count × one pod's GPUs, must not "
        "exceed the limit.",
    ),
    PolicyRule(
        "policy/gpu-uncounted",
        "limits.maxGPUsPerPod, limits.maxGPUsPerJob",
        "Forbidden",
        "A warning (never a denial) where a GPU limit applies but part of a pod cannot be counted: "
        "DRA resourceClaims, or a GPU quantity that does not parse.",
    ),
    PolicyRule(
        "policy/max-ttl",
        "limits.maxTTLSecondsAfterFinished",
        "Invalid value",
        "ttlSecondsAfterFinished, where the kind has it, must not exceed the limit.",
    ),
    PolicyRule(
        "policy/max-active-deadline",
        "limits.maxActiveDeadlineSeconds",
        "Invalid value",
        "activeDeadlineSeconds, where the kind has it, must not exceed the limit.",
    ),
    PolicyRule(
        "policy/require-ttl",
        "require.ttlSecondsAfterFinished",
        "Required value",
        "The job must set ttlSecondsAfterFinished (where the kind has the field).",
    ),
    PolicyRule(
        "policy/require-deadline",
        "require.activeDeadlineSeconds",
        "Required value",
        "The job must set activeDeadlineSeconds (where the kind has the field).",
    ),
    PolicyRule(
        "policy/allowed-queues",
        "require.queues",
        "Unsupported value",
        "The job's queue must be one of the list (unset: Required value).",
    ),
    PolicyRule(
        "policy/allowed-priority-classes",
        "require.priorityClassNames",
        "Unsupported value",
        "The job's PriorityClass (or each pod template's, for the kinds that keep it there) must be one of the list.",
    ),
    PolicyRule(
        "policy/allowed-schedulers",
        "require.schedulerNames",
        "Unsupported value",
        "The scheduler of the job (Volcano) or of each pod template (unset = default-scheduler) must be "
        "one of the list.",
    ),
    PolicyRule(
        "policy/required-label",
        "require.labels",
        "Required value",
        "The job must carry the label, with one of the listed values when values are given "
        "(Unsupported value otherwise).",
    ),
    PolicyRule(
        "policy/image-registries",
        "require.imageRegistries",
        "Invalid value",
        "Every init, app and ephemeral container's image must come from an exact host of the list or "
        "start with a host/path/ prefix of it; an image without a registry is docker.io's.",
    ),
    *(
        PolicyRule(
            f"policy/forbid-{item.lower()}",
            "require.forbid",
            "Forbidden",
            f"No pod template of the job may use {item}"
            + (" (nor a DIJob's spec.volumes)." if item == "hostPath" else "."),
        )
        for item in FORBIDDEN_ITEMS
    ),
    PolicyRule(
        "policy/conflict",
        "require (allow-lists of several policies)",
        "Forbidden",
        "The policies that apply give allow-lists with no value in common: no job can satisfy them; "
        "the message names the policies.",
    ),
    PolicyRule(
        "policy/not-applicable",
        "limits, require",
        "Forbidden",
        "A warning (never a denial): the policy limits or requires a field this kind does not have "
        "(a TTL on MxJob, a queue on DIJob, ...).",
    ),
    PolicyRule(
        "policy/schema",
        "the whole policy object",
        "Invalid value",
        "jobgate validate, given a ClusterTrainingJobPolicy or TrainingJobPolicy document, refuses what "
        "the policy CRDs' schema and rules refuse.",
    ),
]

POLICY_RULES: dict[str, PolicyRule] = {rule.id: rule for rule in _RULES}
DOCUMENTATION = "docs/policy.md"
