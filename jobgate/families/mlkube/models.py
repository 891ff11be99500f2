"""``mxnet.mlkube.io/v1beta1`` MxJob: the deepinsight mxnet-operator API.

``replicaSpecs`` is a *list* and the scheduler port key is literally ``PsRootPort``.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field

from jobgate.api.common import Int32, JobStatus, PodTemplate, WireModel
from jobgate.api.constants import MLKUBE_GROUP, MLKUBE_VERSION

GROUP = MLKUBE_GROUP
VERSION = MLKUBE_VERSION

JobMode = Literal["local", "dist"]
JOB_MODES: tuple[str, ...] = get_args(JobMode)
MxReplicaType = Literal["SCHEDULER", "SERVER", "WORKER"]
MX_REPLICA_TYPES: tuple[str, ...] = get_args(MxReplicaType)


class MxReplicaSpec(WireModel):
    """Pods of one MXNet role."""

    replicas: Int32 | None = Field(None, ge=0, description="Number of pods of this role. Defaults to 1.")
    template: PodTemplate
    PsRootPort: Int32 | None = Field(
        None, ge=1, le=65535, description="Port of the parameter-server root (the scheduler). Defaults to 9091."
    )
    mxReplicaType: MxReplicaType | None = Field(
        None, description="Role of these pods: SCHEDULER, SERVER or WORKER. Defaults to WORKER."
    )


class MxJobSpec(WireModel):
    """Desired state of an MXNet training job."""

    jobMode: JobMode = Field(
        description="local: a single worker; dist: a SCHEDULER, SERVERs and WORKERs (parameter-server training)."
    )
    replicaSpecs: list[MxReplicaSpec] = Field(
        description="The roles of the job, one entry per role.", json_schema_extra={"minItems": 1}
    )


class MxJobStatus(JobStatus):
    """Observed state of the MxJob: jobgate's common job status plus the mxnet-operator's phase and state."""

    phase: Literal["Creating", "Running", "CleanUp", "Failed", "Done"] | None = Field(
        None, description="The mxnet-operator's phase: Creating, Running, Failed or Done."
    )
    state: Literal["Unknown", "Running", "Succeeded", "Failed"] | None = Field(
        None, description="The mxnet-operator's state: Unknown, Running, Succeeded or Failed."
    )
