"""``training.kubedl.io/v1alpha1``: the KubeDL job family.

The shapes follow KubeDL's common API: a map of replica type to ``ReplicaSpec`` and the
RunPolicy fields inlined into ``spec`` (MPIJob also accepts them under ``spec.runPolicy``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from jobgate.api.common import Int32, ReplicaSpec, RunPolicyBase, WireModel
from jobgate.api.constants import KUBEDL_GROUP, KUBEDL_VERSION

GROUP = KUBEDL_GROUP
VERSION = KUBEDL_VERSION


class SchedulingPolicy(WireModel):
    """Scheduling settings of the job, e.g. gang scheduling."""

    minAvailable: Int32 | None = Field(
        None,
        ge=1,
        description=(
            "Minimum number of pods that must be schedulable together (the gang size); "
            "at most the total of all replicas. Defaults to the total of all replicas."
        ),
    )
    queue: str | None = Field(None, description="Scheduler queue the job is placed in. Immutable.")
    priorityClassName: str | None = Field(None, description="PriorityClass of the job's pods.")
    priority: Int32 | None = Field(None, description="Priority value, filled from priorityClassName when unset.")


class RunPolicy(RunPolicyBase):
    """Run-time policies of the job; KubeDL inlines these fields into spec."""

    schedulingPolicy: SchedulingPolicy | None = Field(None, description="Scheduling settings, e.g. gang scheduling.")


ReplicaSpecs = dict[str, ReplicaSpec]


def _replica_specs(example: str) -> object:
    return Field(
        description=f"Replica type (e.g. {example}) to the pods of that type.",
        json_schema_extra={"minProperties": 1},
    )


class TFJobSpec(RunPolicy):
    """Desired state of a TensorFlow training job."""

    tfReplicaSpecs: ReplicaSpecs = _replica_specs("PS, Worker, Chief, Master, Evaluator")  # type: ignore[assignment]
    successPolicy: Literal["", "AllWorkers"] | None = Field(
        None, description='When the job succeeds without a Chief/Master: "" (worker 0 succeeded) or AllWorkers.'
    )


class PyTorchJobSpec(RunPolicy):
    """Desired state of a PyTorch training job."""

    pytorchReplicaSpecs: ReplicaSpecs = _replica_specs("Master, Worker")  # type: ignore[assignment]


class XGBoostJobSpec(RunPolicy):
    """Desired state of an XGBoost training job."""

    xgbReplicaSpecs: ReplicaSpecs = _replica_specs("Master, Worker")  # type: ignore[assignment]


class MPIJobSpec(RunPolicy):
    """Desired state of an MPI training job."""

    mpiReplicaSpecs: ReplicaSpecs = _replica_specs("Launcher, Worker")  # type: ignore[assignment]
    slotsPerWorker: Int32 | None = Field(None, ge=1, description="Slots per worker in the hostfile. Defaults to 1.")
    mainContainer: str | None = Field(None, description="Name of the container that runs the MPI program.")
    mpiDistribution: Literal["OpenMPI", "IntelMPI", "MPICH"] | None = Field(
        None, description="MPI implementation, which decides the launcher's environment. Defaults to OpenMPI."
    )
    runPolicy: RunPolicy | None = Field(None, description="Run-time policies (alternative to the inline fields).")


class XDLJobSpec(RunPolicy):
    """Desired state of an XDL training job."""

    xdlReplicaSpecs: ReplicaSpecs = _replica_specs("PS, Worker, Scheduler, ExtendRole")  # type: ignore[assignment]
    minFinishWorkNum: Int32 | None = Field(
        None, ge=0, description="Workers that must finish successfully for the job to succeed."
    )
    minFinishWorkRate: Int32 | None = Field(
        None,
        ge=0,
        le=100,
        description="Percentage of workers that must finish successfully; takes precedence over minFinishWorkNum.",
    )


class MarsWorkerMemoryTuningPolicy(WireModel):
    """Memory tuning of Mars workers."""

    plasmaStore: str | None = Field(None, description="Socket path of the plasma store. Defaults to /dev/shm.")
    lockFreeFileIO: bool | None = Field(None, description="Whether spill directories are dedicated. Defaults to true.")
    spillDirs: list[str] | None = Field(None, description="Directories cold data is spilled to.")
    workerCachePercentage: Int32 | None = Field(None, ge=0, le=100, description="Percentage of memory usable as cache.")
    workerCacheSize: str | None = Field(
        None, description="Exact cache size (a quantity); overrides workerCachePercentage."
    )


class MarsJobSpec(RunPolicy):
    """Desired state of a Mars job."""

    marsReplicaSpecs: ReplicaSpecs = _replica_specs("Scheduler, Worker, WebService")  # type: ignore[assignment]
    workerMemoryTuningPolicy: MarsWorkerMemoryTuningPolicy | None = Field(
        None, description="Memory tuning applied to workers."
    )
    webHost: str | None = Field(None, description="Domain under which the web service is exposed.")
