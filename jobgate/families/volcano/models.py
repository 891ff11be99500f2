"""``batch.volcano.sh/v1alpha1`` Job: Volcano's batch job (volcano-sh/apis ``pkg/apis/batch/v1alpha1``).

Field names, enums and bounds follow Volcano's own CRD (``batch.volcano.sh_jobs.yaml``), so a
job accepted by one is accepted by the other. Patterns of that CRD (task names, queue names)
are checked by the family's rules, since the structural schema checker does not run regexes.
The status has Volcano's shape (``state.phase``, pod counts, ``taskStatusCount``), so
``kubectl get vcjob`` reads the same as with Volcano.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field

from jobgate.api.common import DateTime, Int32, Int64, PodTemplate, WireModel
from jobgate.api.constants import VOLCANO_GROUP, VOLCANO_VERSION

GROUP = VOLCANO_GROUP
VERSION = VOLCANO_VERSION

# Every event of volcano-sh/apis bus/v1alpha1 (the CRD enum); the webhook admits fewer (rules).
Event = Literal[
    "*",
    "PodPending",
    "PodRunning",
    "PodFailed",
    "PodEvicted",
    "Unknown",
    "TaskCompleted",
    "TaskFailed",
    "OutOfSync",
    "CommandIssued",
    "JobUpdated",
]
EVENTS: tuple[str, ...] = get_args(Event)
TopologyPolicy = Literal["none", "best-effort", "restricted", "single-numa-node"]
NetworkTopologyMode = Literal["hard", "soft"]
DependsOnIteration = Literal["any", "all"]
JobPhase = Literal[
    "Pending",
    "Aborting",
    "Aborted",
    "Running",
    "Restarting",
    "Completing",
    "Completed",
    "Terminating",
    "Terminated",
    "Failed",
]
JOB_PHASES: tuple[str, ...] = get_args(JobPhase)

# Durations are Go duration strings ("10m", "1h30m").
Duration = str


class NetworkTopologySpec(WireModel):
    """Network-topology constraints of the scheduler."""

    mode: NetworkTopologyMode | None = Field(None, description="hard or soft; defaults to hard.")
    highestTierAllowed: int | None = Field(None, ge=0, description="Highest network tier the job may span.")
    highestTierName: str | None = Field(
        None, description="Name of the highest tier the job may span; not together with highestTierAllowed."
    )


class PartitionPolicySpec(WireModel):
    """Splits a task's replicas into partitions scheduled together."""

    totalPartitions: Int32 = Field(ge=1, description="Number of partitions; replicas = totalPartitions*partitionSize.")
    partitionSize: Int32 = Field(ge=1, description="Pods per partition.")
    networkTopology: NetworkTopologySpec | None = Field(None, description="Topology constraints of one partition.")
    minPartitions: Int32 | None = Field(None, ge=0, description="Partitions that must be schedulable; default 0.")


class DependsOn(WireModel):
    """Tasks that must be running (or finished) before this task starts."""

    name: list[str] | None = Field(None, description="Names of the tasks this task depends on.")
    iteration: DependsOnIteration | None = Field(None, description="any or all of the named tasks.")


class LifecyclePolicy(WireModel):
    """An action taken on an event or on a container exit code."""

    action: str | None = Field(
        None, description="AbortJob, RestartJob, RestartTask, RestartPod, RestartPartition, TerminateJob, ..."
    )
    event: Event | None = Field(None, description="The event that triggers the action.")
    events: list[Event] | None = Field(None, description="Events that trigger the action.")
    exitCode: Int32 | None = Field(None, description="Container exit code that triggers the action (not 0).")
    timeout: Duration | None = Field(None, description="Delay before the action is taken.")


class VolumeSpec(WireModel):
    """A volume mounted into every pod of the job."""

    mountPath: str = Field(description="Where the volume is mounted in every container.")
    volumeClaimName: str | None = Field(None, description="An existing PersistentVolumeClaim.")
    volumeClaim: dict[str, Any] | None = Field(
        None,
        description="Spec of a PersistentVolumeClaim created for the job.",
        json_schema_extra={"x-kubernetes-preserve-unknown-fields": True},
    )


class TaskSpec(WireModel):
    """A group of identical pods within the job."""

    name: str | None = Field(None, description="Task name, a DNS-1123 label; defaults to default<index>.")
    replicas: Int32 | None = Field(None, ge=0, description="Number of pods of this task.")
    minAvailable: Int32 | None = Field(
        None, ge=0, description="Pods that must be schedulable together; defaults to replicas."
    )
    template: PodTemplate | None = None
    policies: list[LifecyclePolicy] | None = Field(None, description="Lifecycle policies of this task.")
    topologyPolicy: TopologyPolicy | None = Field(None, description="NUMA topology policy of the pods.")
    maxRetry: Int32 | None = Field(None, ge=0, description="Retries of this task; defaults to 3.")
    dependsOn: DependsOn | None = Field(None, description="Tasks that must start first.")
    partitionPolicy: PartitionPolicySpec | None = Field(None, description="Partitioning of the replicas.")


class VolcanoJobSpec(WireModel):
    """Desired state of a Volcano Job."""

    schedulerName: str | None = Field(None, description="Scheduler of the pods; defaults to volcano.")
    minAvailable: Int32 | None = Field(
        None, ge=0, description="Pods that must be schedulable together; defaults to the sum over tasks."
    )
    volumes: list[VolumeSpec] | None = Field(None, description="Volumes mounted into every pod.")
    tasks: list[TaskSpec] | None = Field(None, description="The tasks of the job.", json_schema_extra={"minItems": 1})
    policies: list[LifecyclePolicy] | None = Field(None, description="Lifecycle policies of the job.")
    plugins: dict[str, list[str]] | None = Field(None, description="Job plugins and their arguments.")
    runningEstimate: Duration | None = Field(None, description="Expected running time of the job.")
    queue: str | None = Field(None, description="Queue the job is submitted to; defaults to default.")
    maxRetry: Int32 | None = Field(None, ge=0, description="Restarts of the job before it fails; defaults to 3.")
    ttlSecondsAfterFinished: Int32 | None = Field(None, ge=0, description="Seconds a finished job is kept.")
    priorityClassName: str | None = Field(None, description="Priority class of the pods.")
    minSuccess: Int32 | None = Field(None, ge=1, description="Succeeded pods that make the job complete.")
    networkTopology: NetworkTopologySpec | None = Field(None, description="Network-topology constraints.")


class JobState(WireModel):
    """The job's phase and why it is in it."""

    phase: JobPhase | None = Field(None, description="Pending, Running, Restarting, Completed, Failed, ...")
    reason: str | None = Field(None, description="Why the job is in this phase.")
    message: str | None = Field(None, description="Human-readable details.")
    lastTransitionTime: DateTime | None = Field(None, description="When the phase last changed.")


class TaskState(WireModel):
    """Pod counts of one task, by pod phase."""

    phase: dict[str, Int32] | None = Field(None, description="Pods of this task per pod phase.")


class JobConditionEntry(WireModel):
    """A phase the job went through."""

    status: JobPhase | None = Field(None, description="The phase.")
    lastTransitionTime: DateTime | None = Field(None, description="When the job entered it.")


class VolcanoJobStatus(WireModel):
    """Observed state of the job in Volcano's shape, written by the jobgate controller."""

    state: JobState | None = Field(None, description="Current phase of the job.")
    minAvailable: Int32 | None = Field(None, description="The job's minAvailable.")
    taskStatusCount: dict[str, TaskState] | None = Field(None, description="Pod counts per task and phase.")
    pending: Int32 | None = Field(None, description="Pending pods.")
    running: Int32 | None = Field(None, description="Running pods.")
    succeeded: Int32 | None = Field(None, description="Succeeded pods.")
    failed: Int32 | None = Field(None, description="Failed pods.")
    terminating: Int32 | None = Field(None, description="Terminating pods.")
    unknown: Int32 | None = Field(None, description="Pods in an unknown state.")
    version: Int32 | None = Field(None, description="Version of the job's pods, bumped on restart.")
    retryCount: Int32 | None = Field(None, description="Restarts of the job so far; compared with maxRetry.")
    runningDuration: Duration | None = Field(None, description="How long the job has been running.")
    controlledResources: dict[str, str] | None = Field(None, description="Resources created by plugins.")
    conditions: list[JobConditionEntry] | None = Field(None, description="Phases the job went through.")
    # jobgate's own bookkeeping, which Volcano keeps in its controller's memory: written to the
    # status so that a restarted controller neither double-counts nor misses a pod event.
    startTime: DateTime | None = Field(None, description="When the controller first acknowledged the job.")
    observedGeneration: Int64 | None = Field(None, description="The spec generation this status reflects.")
    handledPods: list[str] | None = Field(
        None, description="UIDs of failed pods whose event was already handled (restarted or counted)."
    )
    knownPods: dict[str, str] | None = Field(
        None,
        description="Live pods the controller last saw, by name (their task): one that vanishes counts as evicted.",
    )
    delayedActions: dict[str, DateTime] | None = Field(
        None,
        description="Events a policy with a timeout waits on (event/task/pod/uid), with when each was first seen.",
    )
    childDigests: dict[str, str] | None = Field(
        None, description="Digest of each spec-derived child's content (the svc hosts ConfigMap) as last written."
    )
