"""``jobset.x-k8s.io/v1alpha2`` JobSet, as JobSet v0.12.0 serves it (``api/jobset/v1alpha2/jobset_types.go``).

jobgate serves JobSet at admission only: JobSet's CRD and controller stay in charge. These models
are the shape jobgate's schema check reads (types, enums, bounds of JobSet's CRD) and the stand-in
CRD of the end-to-end tests that do not install JobSet's own. Each replicated job holds a whole
batch/v1 JobTemplateSpec; its pod template is kept whole (``PodTemplate``), as the other families
keep theirs, and checked by jobgate's pod-template rules.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from jobgate.api.common import DateTime, Int32, Int64, PodTemplate, WireModel

# An object kept whole (a label selector, a pod failure policy, a PersistentVolumeClaim).
AnyObject = Annotated[dict[str, Any], Field(json_schema_extra={"x-kubernetes-preserve-unknown-fields": True})]

CompletionMode = Literal["NonIndexed", "Indexed"]
PodReplacementPolicy = Literal["TerminatingOrFailed", "Failed"]
DependsOnStatus = Literal["Ready", "Complete"]
Operator = Literal["All", "Any"]
StartupPolicyOrder = Literal["AnyOrder", "InOrder"]
RestartStrategy = Literal["Recreate", "BlockingRecreate", "InPlaceRestart"]
FailurePolicyAction = Literal[
    "FailJobSet", "RestartJobSet", "RestartJobSetAndIgnoreMaxRestarts", "RestartJob", "RestartJobAndIgnoreMaxRestarts"
]
WhenDeleted = Literal["Delete", "Retain"]


class JobSpec(WireModel):
    """A batch/v1 JobSpec: the Job each replica of the replicated job is."""

    parallelism: Int32 | None = Field(None, description="Pods the Job runs at once. Defaults to 1.")
    completions: Int32 | None = Field(
        None, description="Successful pods the Job needs (Indexed: its completion indexes). Defaults to parallelism."
    )
    activeDeadlineSeconds: Int64 | None = Field(None, description="Seconds the Job may run before it is failed.")
    podFailurePolicy: AnyObject | None = Field(None, description="How pod failures count (batch/v1 PodFailurePolicy).")
    successPolicy: AnyObject | None = Field(None, description="When an Indexed Job succeeds (batch/v1 SuccessPolicy).")
    backoffLimit: Int32 | None = Field(None, description="Pod failures before the Job is failed. Defaults to 6.")
    backoffLimitPerIndex: Int32 | None = Field(None, description="Pod failures per index (Indexed Jobs).")
    maxFailedIndexes: Int32 | None = Field(None, description="Failed indexes before the Job is failed.")
    selector: AnyObject | None = Field(None, description="Label selector of the Job's pods (generated unless manual).")
    manualSelector: bool | None = Field(None, description="Whether the selector is the user's.")
    template: PodTemplate
    ttlSecondsAfterFinished: Int32 | None = Field(None, description="Seconds after the Job finished before deletion.")
    completionMode: CompletionMode | None = Field(
        None, description="NonIndexed or Indexed; JobSet's webhook defaults it to Indexed."
    )
    suspend: bool | None = Field(None, description="Whether the Job is suspended (JobSet sets it).")
    podReplacementPolicy: PodReplacementPolicy | None = Field(
        None, description="When a failed pod is replaced: TerminatingOrFailed or Failed."
    )
    managedBy: str | None = Field(None, description="The controller of the Job (batch/v1).")


class JobTemplateSpec(WireModel):
    """A batch/v1 JobTemplateSpec."""

    metadata: AnyObject | None = Field(None, description="Labels and annotations of the Jobs.")
    spec: JobSpec | None = Field(None, description="The Jobs' spec.")


class DependsOn(WireModel):
    """A replicated job this one waits for."""

    name: str = Field(description="An earlier replicated job.")
    status: DependsOnStatus = Field(description="Ready (its pods are ready) or Complete (its Jobs completed).")


class ReplicatedJob(WireModel):
    """A group of identical Jobs."""

    name: str = Field(description="Name of the replicated job; its Jobs are <jobset>-<name>-<index>.")
    groupName: str | None = Field(
        None, description="Group of the replicated job (a DNS-1035 label). Defaults to default (JobSet's CRD)."
    )
    template: JobTemplateSpec = Field(description="The Job template (batch/v1).")
    replicas: Int32 | None = Field(None, description="Number of Jobs. Defaults to 1 (JobSet's CRD).")
    dependsOn: list[DependsOn] | None = Field(
        None, max_length=5, description="Replicated jobs this one starts after; immutable (JobSet's CRD rule)."
    )


class Network(WireModel):
    """The JobSet's headless service and pod DNS names."""

    enableDNSHostnames: bool | None = Field(None, description="Pods reachable by hostname. Defaults to true.")
    subdomain: str | None = Field(None, description="The headless service's name. Defaults to the JobSet's name.")
    publishNotReadyAddresses: bool | None = Field(
        None, description="Publish pods' DNS records before they are ready. Defaults to true."
    )


class SuccessPolicy(WireModel):
    """When the JobSet succeeds."""

    operator: Operator = Field(description="All: every targeted Job succeeded; Any: one did.")
    targetReplicatedJobs: list[str] | None = Field(None, description="Replicated jobs counted (default: all).")


class FailurePolicyRule(WireModel):
    """An action for Job failures that match the rule."""

    name: str = Field(description="Name of the rule; defaulted to failurePolicyRule<index> by JobSet's webhook.")
    action: FailurePolicyAction = Field(description="What JobSet does when the rule matches.")
    onJobFailureReasons: list[str] | None = Field(None, description="Job failure reasons the rule matches.")
    onJobFailureMessagePatterns: list[str] | None = Field(None, description="Regexes of failure messages it matches.")
    targetReplicatedJobs: list[str] | None = Field(None, description="Replicated jobs the rule applies to.")


class FailurePolicy(WireModel):
    """When the JobSet is failed or restarted."""

    maxRestarts: Int32 | None = Field(None, description="Restarts before the JobSet is failed.")
    restartStrategy: RestartStrategy | None = Field(
        None, description="Recreate (default, JobSet's CRD), BlockingRecreate or InPlaceRestart (feature gate)."
    )
    rules: list[FailurePolicyRule] | None = Field(None, description="Rules evaluated in order; the first match acts.")


class StartupPolicy(WireModel):
    """The order replicated jobs start in (deprecated for dependsOn)."""

    startupPolicyOrder: StartupPolicyOrder = Field(description="AnyOrder or InOrder.")


class Coordinator(WireModel):
    """The pod whose endpoint every pod is given (label jobset.sigs.k8s.io/coordinator)."""

    replicatedJob: str = Field(description="The replicated job of the coordinator pod.")
    jobIndex: int | None = Field(None, description="Index of its Job.")
    podIndex: int | None = Field(None, description="Completion index of the pod in that Job.")


class VolumeRetentionPolicy(WireModel):
    """What becomes of the claims when the JobSet is deleted."""

    whenDeleted: WhenDeleted | None = Field(None, description="Delete (default) or Retain.")


class VolumeClaimPolicy(WireModel):
    """PersistentVolumeClaims JobSet creates for the JobSet's pods."""

    templates: list[AnyObject] | None = Field(None, max_length=50, description="PVC templates (core/v1).")
    retentionPolicy: VolumeRetentionPolicy | None = Field(None, description="Defaults to whenDeleted: Delete.")


class JobSetSpec(WireModel):
    """Desired state of a JobSet."""

    replicatedJobs: list[ReplicatedJob] | None = Field(None, description="The groups of Jobs, by name.")
    network: Network | None = Field(None, description="Networking of the JobSet's pods; immutable.")
    successPolicy: SuccessPolicy | None = Field(None, description="Defaults to operator All; immutable.")
    failurePolicy: FailurePolicy | None = Field(None, description="Failure and restart policy; immutable.")
    startupPolicy: StartupPolicy | None = Field(None, description="Defaults to AnyOrder; immutable.")
    suspend: bool | None = Field(None, description="Suspends the JobSet's Jobs (Kueue sets it).")
    coordinator: Coordinator | None = Field(None, description="The coordinator pod.")
    managedBy: str | None = Field(
        None,
        description=(
            "The controller of the JobSet: jobset.sigs.k8s.io/jobset-controller when unset, or any domain-prefixed "
            "path of at most 63 characters (kueue.x-k8s.io/multikueue). Immutable."
        ),
    )
    ttlSecondsAfterFinished: Int32 | None = Field(
        None, ge=0, description="Seconds after the JobSet finished before it is deleted."
    )
    volumeClaimPolicies: list[VolumeClaimPolicy] | None = Field(
        None, max_length=50, description="Claims shared by the pods; immutable."
    )


class JobSetCondition(WireModel):
    """One observed condition of the JobSet (metav1.Condition)."""

    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    lastTransitionTime: DateTime | None = None
    observedGeneration: Int64 | None = None


class JobSetStatus(WireModel):
    """Observed state of a JobSet, written by JobSet's controller."""

    conditions: list[JobSetCondition] | None = None
    restarts: Int32 | None = None
    restartsCountTowardsMax: Int32 | None = None
    terminalState: str | None = None
    replicatedJobsStatus: list[AnyObject] | None = None
    individualJobRecreates: AnyObject | None = None
