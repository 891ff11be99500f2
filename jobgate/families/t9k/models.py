"""``batch.tensorstack.dev/v1beta1`` GenericJob: the T9k general-purpose batch job API.

``replicaSpecs`` is a list of replica types; a finish rule is a map from replica type to the
indices it refers to (``{"worker": [0, 1]}``). Status keeps T9k's own shape (phase, conditions,
tasks with restart counts and replica phases, aggregate counts).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import Field

from jobgate.api.common import DateTime, Int32, Int64, PodTemplate, WireModel
from jobgate.api.constants import T9K_GROUP, T9K_VERSION

GROUP = T9K_GROUP
VERSION = T9K_VERSION

T9kRestartPolicyType = Literal["Always", "OnFailure", "Never"]
T9K_RESTART_POLICIES: tuple[str, ...] = get_args(T9kRestartPolicyType)
CleanUpPolicy = Literal["None", "Unfinished", "All"]
CLEAN_UP_POLICIES: tuple[str, ...] = get_args(CleanUpPolicy)
JobPhase = Literal["Pending", "Running", "Paused", "Resuming", "Succeeded", "Failed", "Unknown"]

FinishRule = dict[str, list[Int32]]


class RestartPolicy(WireModel):
    """How the controller restarts the pods of one replica type (pods themselves never restart)."""

    policy: T9kRestartPolicyType | None = Field(
        None, description="When a finished replica is restarted: Always, OnFailure or Never. Defaults to OnFailure."
    )
    limit: Int32 | None = Field(
        None, ge=0, description="The maximum number of restarts of this replica type. Defaults to 0."
    )


class ReplicaSpec(WireModel):
    """Pods of one replica type."""

    type: str | None = Field(None, description="Replica type: a DNS-1123 label, unique in the job.")
    replicas: Int32 | None = Field(None, ge=0, description="Number of pods of this type. Defaults to 1.")
    restartPolicy: RestartPolicy | None = Field(
        None, description="Restart policy of this replica type. Defaults to {policy: OnFailure, limit: 0}."
    )
    template: PodTemplate


class ServicePort(WireModel):
    """A port of the services created for the replicas."""

    name: str | None = Field(None, description="Name of the port, unique in the list; $(service.port[<name>]).")
    port: Annotated[int, Field(ge=1, le=65535, json_schema_extra={"format": "int32"})] = Field(
        description="The port number (1-65535)."
    )
    targetPort: Any = Field(
        None,
        description="Port of the pods, a number or a container port name. Defaults to port.",
        json_schema_extra={"x-kubernetes-int-or-string": True},
    )
    protocol: Literal["TCP", "UDP", "SCTP"] | None = Field(None, description="TCP (default), UDP or SCTP.")
    appProtocol: str | None = Field(None, description="Application protocol of this port.")


class ServiceOption(WireModel):
    """The services created for the replicas: one per replica, named <job>-<type>-<rank>."""

    ports: list[ServicePort] | None = Field(None, description="The ports the services expose.")


class ReplicaDebugSet(WireModel):
    """How the replicas of one type start in debug mode."""

    type: str | None = Field(None, description="Replica type.")
    skipInitContainer: bool | None = Field(None, description="Skip the init containers, if true.")
    command: list[str] | None = Field(None, description='Entrypoint array. Defaults to ["sleep", "inf"].')


class DebugMode(WireModel):
    """Debug mode: pods are created but run a null command (sleep) instead of the workload."""

    enabled: bool | None = Field(None, description="Whether debug mode is enabled.")
    replicaSpecs: list[ReplicaDebugSet] | None = Field(
        None, description="Overrides per replica type; at most one entry per type."
    )


class ResumeSpec(WireModel):
    """How the replicas of one type are recreated when a paused job resumes."""

    type: str | None = Field(None, description="Replica type.")
    skipInitContainer: bool | None = Field(None, description="Skip the init containers, if true.")
    command: list[str] | None = Field(None, description="Entrypoint array replacing the template's.")
    args: list[str] | None = Field(None, description="Arguments replacing the template's.")


class PauseMode(WireModel):
    """Pause mode: the job's pods are deleted; turning it off recreates them."""

    enabled: bool | None = Field(None, description="Whether the job is paused. May be toggled at any time.")
    resumeSpecs: list[ResumeSpec] | None = Field(
        None, description="Overrides applied when resuming; immutable once the job exists."
    )


class RunMode(WireModel):
    """Job running mode. Immediate when neither debug nor pause is enabled."""

    debug: DebugMode | None = Field(None, description="Debug mode.")
    pause: PauseMode | None = Field(None, description="Pause mode.")


class T9kScheduler(WireModel):
    """Settings of the T9k scheduler."""

    queue: str | None = Field(None, description="Name of the queue the workload runs in.")
    priority: Annotated[int, Field(ge=0, le=100, json_schema_extra={"format": "int32"})] | None = Field(
        None, description="Priority of the PodGroup, 0-100. Defaults to 0."
    )


class SchedulePolicy(WireModel):
    """Which scheduler places the pods; absent means the default kube-scheduler."""

    t9kScheduler: T9kScheduler | None = Field(None, description="T9k scheduler.")


class GenericJobSpec(WireModel):
    """Desired state of a GenericJob."""

    replicaSpecs: list[ReplicaSpec] = Field(
        description="The replica types of the job; at least one.", json_schema_extra={"minItems": 1}
    )
    successRules: list[FinishRule] | None = Field(
        None,
        description=(
            "The job succeeds when any rule is fulfilled: every replica it lists ({type: [indices]}) succeeded. "
            "Defaults to one rule listing every replica."
        ),
    )
    failureRules: list[FinishRule] | None = Field(
        None,
        description=(
            "The job fails when any rule is fulfilled: every replica it lists failed beyond its restart limit. "
            "Defaults to one rule per replica."
        ),
    )
    service: ServiceOption | None = Field(None, description="Services for the replicas; none when absent.")
    runMode: RunMode | None = Field(None, description="Job running mode. Defaults to immediate.")
    cleanUpPolicy: CleanUpPolicy | None = Field(
        None, description="Pods deleted when the job finishes: None (default), Unfinished or All."
    )
    scheduler: SchedulePolicy | None = Field(None, description="Scheduler of the pods.")


class Aggregate(WireModel):
    """Number of replica pods in each phase."""

    creating: Int32 | None = Field(None, description="Pods being created.")
    pending: Int32 | None = Field(None, description="Pods accepted but not all containers started.")
    running: Int32 | None = Field(None, description="Pods running.")
    succeeded: Int32 | None = Field(None, description="Pods succeeded.")
    failed: Int32 | None = Field(None, description="Pods failed.")
    unknown: Int32 | None = Field(None, description="Pods whose state is unknown.")
    deleted: Int32 | None = Field(None, description="Pods deleted.")


class ContainerStatus(WireModel):
    """Observed state of one container."""

    name: str | None = Field(None, description="Container name.")
    state: dict[str, Any] | None = Field(
        None, description="State of the container.", json_schema_extra={"x-kubernetes-preserve-unknown-fields": True}
    )


class T9kReplicaStatus(WireModel):
    """Observed state of one replica pod."""

    name: str | None = Field(None, description="Pod name.")
    uid: str | None = Field(None, description="Pod uid.")
    rank: Int32 | None = Field(None, description="Index of the replica within its type.")
    phase: str | None = Field(None, description="Pod phase, plus Creating and Deleted.")
    restartCount: Int32 | None = Field(None, description="Restarts of this replica so far.")
    containers: list[ContainerStatus] | None = Field(None, description="Container states.")


class Tasks(WireModel):
    """Observed state of one replica type."""

    type: str | None = Field(None, description="Replica type.")
    restartCount: Int32 | None = Field(None, description="Restarts performed so far for this type.")
    replicas: list[T9kReplicaStatus] | None = Field(None, description="The replica pods of this type.")


class T9kJobCondition(WireModel):
    """One observed condition of the job."""

    type: str = Field(description="Initialized, Running, ReplicaFailure, Completed, Failed or Paused.")
    status: Literal["True", "False", "Unknown"] = Field(description="Status of the condition.")
    lastTransitionTime: DateTime | None = Field(None, description="Last time the status changed.")
    lastUpdateTime: DateTime | None = Field(None, description="Last time the condition was updated.")
    reason: str | None = Field(None, description="Brief reason for the last transition.")
    message: str | None = Field(None, description="Human-readable details of the last transition.")


class GenericJobStatus(WireModel):
    """Observed state of a GenericJob, in T9k's shape."""

    phase: JobPhase | None = Field(
        None, description="Pending, Running, Paused, Resuming, Succeeded, Failed or Unknown."
    )
    conditions: list[T9kJobCondition] | None = Field(None, description="The latest observations of the job.")
    tasks: list[Tasks] | None = Field(None, description="Status of each replica type.")
    aggregate: Aggregate | None = Field(None, description="Number of replicas in each phase.")
    observedGeneration: Int64 | None = Field(None, description="The spec generation this status reflects.")
    startTime: DateTime | None = Field(None, description="When the controller first acknowledged the job.")
    completionTime: DateTime | None = Field(None, description="When the job succeeded or failed.")
    lastReconcileTime: DateTime | None = Field(None, description="When the controller last reconciled the job.")
    restartCount: Int32 | None = Field(None, description="Restarts decided by the controller so far, all types.")
    completedIndices: dict[str, list[Int32]] | None = Field(
        None, description="Replica indices whose pod succeeded, per replica type; never recreated."
    )
    replicaSummary: str | None = Field(
        None, description='Running and desired pods per replica type, e.g. "master 1/1, worker 2/3".'
    )
