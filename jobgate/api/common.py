"""Types shared by the job APIs: integers with Kubernetes formats, pod templates, job status.

These pydantic models are the one description of the wire format. Nothing on the admission
hot path instantiates them: the structural schema derived from them (``engine.schema``) drives
the type/enum/range checks, and the same schema is written into the CRDs, so the cluster
and ``jobgate validate`` can never disagree about a field's type or bounds.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

INT32_MAX = 2**31 - 1

Int32 = Annotated[int, Field(ge=-(2**31), le=INT32_MAX, json_schema_extra={"format": "int32"})]
# No explicit bounds: the apiserver reads schema bounds as float64, which cannot hold 2**63-1.
Int64 = Annotated[int, Field(json_schema_extra={"format": "int64"})]
DateTime = Annotated[str, Field(json_schema_extra={"format": "date-time"})]

PodTemplate = Annotated[
    dict[str, Any],
    Field(
        description=(
            "Pod template (a core/v1 PodTemplateSpec) for the pods of this replica type. "
            "Its restartPolicy is overridden by the replica's restartPolicy."
        ),
        json_schema_extra={"x-kubernetes-preserve-unknown-fields": True},
    ),
]

RestartPolicy = Literal["Always", "OnFailure", "Never", "ExitCode"]
RESTART_POLICIES: tuple[str, ...] = get_args(RestartPolicy)
CleanPodPolicy = Literal["All", "Running", "None"]
CLEAN_POD_POLICIES: tuple[str, ...] = get_args(CleanPodPolicy)


class WireModel(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


# --- jobs of a map of replica types (the KubeDL and Kubeflow families) -------------------------


class RunPolicyBase(WireModel):
    """The run-time policies every replica-map family has (KubeDL inlines them into spec, Kubeflow
    keeps them under spec.runPolicy); each family adds its own scheduling policy."""

    cleanPodPolicy: CleanPodPolicy | None = Field(
        None,
        description=(
            "Which pods to delete when the job finishes: All, Running (pods still running) or None. "
            "Defaults to Running."
        ),
    )
    ttlSecondsAfterFinished: Int32 | None = Field(
        None, ge=0, description="Seconds after the job finished before it is deleted. Unset: never deleted."
    )
    activeDeadlineSeconds: Int64 | None = Field(
        None, gt=0, description="Seconds from the job's start time after which it is failed (reason DeadlineExceeded)."
    )
    backoffLimit: Int32 | None = Field(
        None, ge=0, description="Number of pod restarts allowed before the job is failed (reason BackoffLimitExceeded)."
    )


class ReplicaSpec(WireModel):
    """Pods of one replica type."""

    replicas: Int32 | None = Field(None, ge=0, description="Number of pods of this replica type. Defaults to 1.")
    template: PodTemplate
    restartPolicy: RestartPolicy | None = Field(
        None,
        description=(
            "What happens when a pod of this replica fails: Always, OnFailure, Never, or ExitCode "
            "(the pod runs with restartPolicy Never and the controller recreates it when the exit code "
            "is retryable). Defaults per kind."
        ),
    )


class JobCondition(WireModel):
    """One observed condition of the job."""

    type: str = Field(description="Condition type: Created, Running, Restarting, Succeeded or Failed.")
    status: Literal["True", "False", "Unknown"] = Field(description="Status of the condition.")
    reason: str | None = Field(None, description="Machine-readable reason for the last transition.")
    message: str | None = Field(None, description="Human-readable details about the last transition.")
    lastUpdateTime: DateTime | None = Field(None, description="Last time the condition was updated.")
    lastTransitionTime: DateTime | None = Field(None, description="Last time the status changed.")


class ReplicaStatus(WireModel):
    """Pod counts of one replica type."""

    active: Int32 | None = Field(None, description="Pods that are pending or running.")
    succeeded: Int32 | None = Field(None, description="Pods that reached phase Succeeded.")
    failed: Int32 | None = Field(None, description="Pods that reached phase Failed (evicted pods included).")
    evicted: Int32 | None = Field(None, description="Failed pods whose reason is Evicted.")


class JobStatus(WireModel):
    """Observed state of the job, written by the jobgate controller."""

    conditions: list[JobCondition] | None = Field(None, description="Observed conditions, oldest first.")
    replicaStatuses: dict[str, ReplicaStatus] | None = Field(None, description="Pod counts per replica type.")
    startTime: DateTime | None = Field(None, description="When the controller first acknowledged the job.")
    completionTime: DateTime | None = Field(None, description="When the job succeeded or failed.")
    lastReconcileTime: DateTime | None = Field(None, description="When the controller last reconciled the job.")
    restartCount: Int32 | None = Field(
        None, description="Pod restarts decided by the controller so far; compared with backoffLimit."
    )
    completedIndices: dict[str, list[Int32]] | None = Field(
        None, description="Replica indices whose pod succeeded, per replica type; never recreated."
    )
    observedGeneration: Int64 | None = Field(None, description="The spec generation this status reflects.")
    replicaSummary: str | None = Field(
        None, description='Running and desired pods per replica type, e.g. "PS 2/2, Worker 3/4".'
    )
