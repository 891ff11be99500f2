"""The platform-policy rule ids a finding carries (``policy/max-gpus-per-job``, ...), with what each checks.

The constraints' records come from their declarations (:mod:`jobgate.policy.constraints`); the rest
(warnings, conflicts, the policy schema) are written here.

``jobgate validate`` prints the id after a policy's message and ``jobgate explain ID`` prints the
record; ``tests/unit/test_policy_rule_ids.py`` keeps this table equal to the ids the checks emit.
"""

from __future__ import annotations

from typing import NamedTuple

from jobgate.policy.constraints import CONSTRAINTS


class PolicyRule(NamedTuple):
    """One policy rule: the spec field that states it, the field error it gives, and what it checks."""

    id: str
    constraint: str  # the policy spec field, e.g. limits.maxGPUsPerJob
    error_type: str  # the Kubernetes field-error type of its finding
    checks: str


_RULES = [
    *(PolicyRule(c.rule, c.param, c.error_type, c.checks) for c in CONSTRAINTS),
    PolicyRule(
        "policy/gpu-uncounted",
        "limits.maxGPUsPerPod, limits.maxGPUsPerJob",
        "Forbidden",
        "A warning (never a denial) where a GPU limit applies but a GPU quantity of a pod does not parse "
        "(the family's rules refuse it). DRA claims are counted: policy/gpu-claim-unbounded and "
        "policy/gpu-claim-unknown say what cannot be.",
    ),
    PolicyRule(
        "policy/conflict",
        "require (allow-lists of several policies)",
        "Forbidden",
        "The policies that apply give allow-lists with no value in common: no job can satisfy them; "
        "the message names the policies.",
    ),
    PolicyRule(
        "policy/default-conflict",
        "defaults (of several policies)",
        "Warning",
        "A warning (never a denial): policies of equal priority that apply to the job set different "
        "defaults for one field, so neither is written; the message names the policies and the values.",
    ),
    PolicyRule(
        "policy/not-applicable",
        "limits, require",
        "Forbidden",
        "A warning (never a denial): the policy limits or requires a field this kind does not have "
        "(a TTL on MxJob, a queue on DIJob, ...).",
    ),
    PolicyRule(
        "policy/namespace-labels-unknown",
        "namespaceSelector (ClusterTrainingJobPolicy)",
        "Invalid value",
        "Offline only (jobgate validate, default, review): a cluster policy that would apply to the job "
        "selects namespaces by a label of the job's namespace that was not given (no Namespace object; only "
        "kubernetes.io/metadata.name is known from the name). Applying or skipping it would be a guess, so "
        "the job is not admitted; pass the Namespace with --namespaces or --cluster-objects.",
    ),
    PolicyRule(
        "policy/queue-fit",
        "require.fitsQueue",
        "Invalid value",
        "The job can never be admitted by its queue: Kueue (the kueue.x-k8s.io/queue-name label of a kind Kueue "
        "integrates) when no assignment of flavors to its pod sets fits what the ClusterQueue can ever hold "
        "(nominalQuota, borrowingLimit, what its cohorts can lend), a resource no resource group covers, or a pod "
        "set no flavor takes (taints, node labels); Volcano when the job's minResources or gang minimum exceeds the "
        "capability of its Queue or of a parent Queue, or the Queue is closed. The message names the queues, the "
        "resource, what the job asks, the most the queue can give and the flavors considered.",
    ),
    PolicyRule(
        "policy/queue-misconfigured",
        "require.fitsQueue",
        "Invalid value",
        "The job's queue cannot admit anything: the LocalQueue or its ClusterQueue does not exist or is stopped "
        "(stopPolicy), the ClusterQueue's namespaceSelector leaves the job's namespace out, it names a "
        "ResourceFlavor that does not exist, its cohorts form a cycle; the Volcano Queue does not exist.",
    ),
    PolicyRule(
        "policy/queue-objects-missing",
        "require.fitsQueue",
        "Invalid value",
        "Offline only: the job names a Kueue or Volcano queue but no objects of that scheduler were given, so "
        "whether it fits is unknown and the job is not admitted; pass them with --cluster-objects (`kubectl get "
        "localqueues,clusterqueues,resourceflavors,cohorts,queues.scheduling.volcano.sh -A -o yaml`).",
    ),
    PolicyRule(
        "policy/queue-fit-not-modelled",
        "require.fitsQueue",
        "Forbidden",
        "A warning (never a denial): part of the queue check could not be decided and the job is admitted: the "
        "only assignment of flavors that fits is not Kueue's first-fit one, the search was too large, DRA claims "
        "(Kueue counts them by its own configuration), a quantity that does not parse, a namespace whose labels "
        "were not given, or the scheduler's API not served by the cluster.",
    ),
    PolicyRule(
        "policy/exception",
        "TrainingJobPolicyException (spec.policies, spec.match, spec.expiresAt)",
        "Warning",
        "A warning (never a denial): a TrainingJobPolicyException of the job's namespace, in force (its "
        "expiresAt after now) and matching the job, waived some of a policy's limits and requirements; the "
        "message names the exception, what it waived, until when and why (also the webhook's audit "
        "annotation policy-exceptions).",
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
