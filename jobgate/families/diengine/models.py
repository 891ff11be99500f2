"""``diengine.opendilab.org/v2alpha1`` DIJob: the DI-engine (opendilab DI-orchestrator) job API.

``tasks`` is a list; each task has a type (learner, collector, evaluator or none) and a name
that pods are named after. ``volumes`` are added to every pod. Status keeps DI-orchestrator's
shape (phase, conditions, replicas, readyReplicas, taskStatus, restarts, ...).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import Field

from jobgate.api.common import (
    CLEAN_POD_POLICIES,
    CleanPodPolicy,
    DateTime,
    Int32,
    JobStatus,
    PodTemplate,
    WireModel,
)
from jobgate.api.constants import DIENGINE_GROUP, DIENGINE_VERSION

GROUP = DIENGINE_GROUP
VERSION = DIENGINE_VERSION

TaskType = Literal["learner", "collector", "evaluator", "none"]
TASK_TYPES: tuple[str, ...] = get_args(TaskType)
Priority = Literal["normal", "high"]
PRIORITIES: tuple[str, ...] = get_args(Priority)
# The same three values as the Kubeflow-style CleanPodPolicy (typing caches equal Literals, so one spelling).
DICleanPodPolicy = CleanPodPolicy
DI_CLEAN_POD_POLICIES: tuple[str, ...] = CLEAN_POD_POLICIES
DIJobPhase = Literal["Pending", "Starting", "Running", "Restarting", "Rescheduling", "Succeeded", "Failed", "Unknown"]

Volume = Annotated[dict[str, Any], Field(json_schema_extra={"x-kubernetes-preserve-unknown-fields": True})]


class Task(WireModel):
    """Pods of one task."""

    replicas: Int32 | None = Field(None, ge=1, description="Number of pods of this task. Defaults to 1.")
    type: TaskType | None = Field(
        None, description="Task type: learner, collector, evaluator or none. Defaults to none."
    )
    name: str | None = Field(
        None, description="Task name (a DNS-1123 label, unique); pods are <job>-<name>-<rank>. Defaults to the type."
    )
    template: PodTemplate


class DIJobSpec(WireModel):
    """Desired state of a DIJob."""

    priority: Priority | None = Field(None, description="Job priority: normal (default) or high.")
    cleanPodPolicy: DICleanPodPolicy | None = Field(
        None, description="Pods deleted when the job finishes: Running (default), All or None."
    )
    preemptible: bool | None = Field(None, description="Whether the job may be preempted. Defaults to false.")
    backoffLimit: Int32 | None = Field(
        None, ge=0, description="Number of restarts before the job is marked Failed. Defaults to 3."
    )
    volumes: list[Volume] | None = Field(None, description="Volumes (core/v1 Volume) added to every pod of the job.")
    tasks: list[Task] = Field(description="The tasks of the job; at least one.", json_schema_extra={"minItems": 1})


class DIJobCondition(WireModel):
    """One observed condition; its type is a phase."""

    type: str = Field(description="The phase this condition is about.")
    status: Literal["True", "False", "Unknown"] = Field(description="Status of the condition.")
    reason: str | None = Field(None, description="Machine-readable reason for the last transition.")
    message: str | None = Field(None, description="Human-readable details about the last transition.")
    lastUpdateTime: DateTime | None = Field(None, description="Last time the condition was updated.")
    lastTransitionTime: DateTime | None = Field(None, description="Last time the status changed.")


class Profilings(WireModel):
    """Profiling data reported by DI-engine jobs (empty in DI-orchestrator's v2alpha1)."""


class DIJobStatus(JobStatus):
    """Observed state of a DIJob: DI-orchestrator's fields plus jobgate's common job status."""

    phase: DIJobPhase | None = Field(
        None, description="Pending, Starting, Running, Restarting, Rescheduling, Succeeded, Failed or Unknown."
    )
    conditions: list[DIJobCondition] | None = Field(  # type: ignore[assignment]
        None, description="Observed conditions, one per phase."
    )
    replicas: Int32 | None = Field(None, description="Pods of the job.")
    readyReplicas: Int32 | None = Field(None, description="Ready containers of the job's pods.")
    taskStatus: dict[str, dict[str, Int32]] | None = Field(
        None, description="Per task name, the number of pods in each pod phase."
    )
    allocation: list[str] | None = Field(None, description="Node of each rank (preemptible jobs).")
    restarts: Int32 | None = Field(None, description="Restarts so far; the job fails when it reaches backoffLimit.")
    reschedules: Int32 | None = Field(None, description="Reschedules so far.")
    profilings: Profilings | None = Field(None, description="Profiling data reported by DI-engine.")
    completionTimestamp: DateTime | None = Field(None, description="When the job succeeded or failed.")
