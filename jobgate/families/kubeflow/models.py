"""``kubeflow.org/v1``: the Kubeflow training-operator job family (v1.9).

The shapes follow Kubeflow's ``pkg/apis/kubeflow.org/v1``: the same map of replica type to
``ReplicaSpec`` as KubeDL (``common.ReplicaSpec``), with the run policy under ``spec.runPolicy``
(MPIJob also keeps a deprecated ``spec.cleanPodPolicy``). jobgate serves these kinds at admission
only: Kubeflow's CRDs and operator stay in charge; the CRDs generated from these models are only
the end-to-end tests' stand-in for Kubeflow's (``tests/e2e/crds/kubeflow``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from jobgate.api.common import (
    CleanPodPolicy,
    DateTime,
    Int32,
    JobCondition,
    PodTemplate,
    ReplicaSpec,
    RunPolicyBase,
    WireModel,
)
from jobgate.api.constants import KUBEFLOW_GROUP, KUBEFLOW_VERSION

GROUP = KUBEFLOW_GROUP
VERSION = KUBEFLOW_VERSION

IntOrString = Annotated[Any, Field(json_schema_extra={"x-kubernetes-int-or-string": True})]
# An autoscaling/v2 MetricSpec, held whole.
MetricSpec = Annotated[dict[str, Any], Field(json_schema_extra={"x-kubernetes-preserve-unknown-fields": True})]


class SchedulingPolicy(WireModel):
    """Gang-scheduling settings of the job (Volcano or the scheduler-plugins' coscheduling)."""

    minAvailable: Int32 | None = Field(
        None,
        description=(
            "Pods that must be schedulable together (the PodGroup's minMember); at most the total of all "
            "replicas. Defaults to the total of all replicas."
        ),
    )
    queue: str | None = Field(
        None, description="Scheduler queue of the job's PodGroup; immutable once set (Kubeflow's CRD rule)."
    )
    minResources: dict[str, IntOrString] | None = Field(
        None, description="Resources the PodGroup needs at least, by resource name (quantities)."
    )
    priorityClass: str | None = Field(None, description="PriorityClass of the job's PodGroup.")
    scheduleTimeoutSeconds: Int32 | None = Field(
        None, description="Seconds the PodGroup may wait to be scheduled (coscheduling)."
    )


class RunPolicy(RunPolicyBase):
    """Run-time policies of the job."""

    cleanPodPolicy: CleanPodPolicy | None = Field(
        None,
        description=(
            "Which pods to delete when the job finishes: All, Running (pods still running) or None. Defaults to None."
        ),
    )
    schedulingPolicy: SchedulingPolicy | None = Field(None, description="Gang-scheduling settings.")
    suspend: bool | None = Field(
        None,
        description=("Suspends the job: its pods are deleted and not created until it is resumed. Defaults to false."),
    )
    managedBy: str | None = Field(
        None,
        description=(
            "The controller that runs the job: kubeflow.org/training-operator (also when unset) or "
            "kueue.x-k8s.io/multikueue. Immutable."
        ),
    )


class KubeflowReplicaSpec(ReplicaSpec):
    """Pods of one replica type."""

    replicas: Int32 | None = Field(
        None, ge=0, description="Number of pods of this replica type. Defaults to 1 (an MPIJob's Worker: 0)."
    )
    template: PodTemplate | None = None  # type: ignore[assignment]  # optional in Kubeflow's API


ReplicaSpecs = dict[str, KubeflowReplicaSpec]


def _replica_specs(example: str) -> Any:
    return Field(
        description=f"Replica type (e.g. {example}) to the pods of that type.",
        json_schema_extra={"minProperties": 1},
    )


def _run_policy() -> Any:
    return Field(None, description="Run-time policies: clean-up, deadlines, back-off, gang scheduling, suspension.")


class TFJobSpec(WireModel):
    """Desired state of a TensorFlow training job."""

    runPolicy: RunPolicy | None = _run_policy()
    successPolicy: Literal["", "AllWorkers"] | None = Field(
        None, description='When the job succeeds without a Chief/Master: "" (worker 0 succeeded) or AllWorkers.'
    )
    tfReplicaSpecs: ReplicaSpecs = _replica_specs("PS, Worker, Chief, Master, Evaluator")
    enableDynamicWorker: bool | None = Field(None, description="Sparse TF_CONFIG: workers may join and leave.")


class RDZVConf(WireModel):
    """One rendezvous setting."""

    key: str | None = Field(None, description="Setting name.")
    value: str | None = Field(None, description="Setting value.")


class ElasticPolicy(WireModel):
    """Elastic training with torchrun (PET_* environment)."""

    minReplicas: Int32 | None = Field(None, description="Lower bound of Worker replicas. Defaults to maxReplicas.")
    maxReplicas: Int32 | None = Field(None, description="Upper bound of Worker replicas. Defaults to minReplicas.")
    rdzvBackend: Literal["c10d", "etcd", "etcd-v2"] | None = Field(None, description="Rendezvous backend.")
    rdzvPort: Int32 | None = Field(None, description="Rendezvous port.")
    rdzvHost: str | None = Field(None, description="Rendezvous host.")
    rdzvId: str | None = Field(None, description="Rendezvous id.")
    rdzvConf: list[RDZVConf] | None = Field(None, description="Further rendezvous settings.")
    standalone: bool | None = Field(None, description="torchrun --standalone.")
    nProcPerNode: Int32 | None = Field(None, description="Deprecated: use spec.nprocPerNode.")
    maxRestarts: Int32 | None = Field(None, description="Worker group restarts before failing.")
    metrics: list[MetricSpec] | None = Field(None, description="Metrics of the HorizontalPodAutoscaler.")


class PyTorchJobSpec(WireModel):
    """Desired state of a PyTorch training job."""

    runPolicy: RunPolicy | None = _run_policy()
    elasticPolicy: ElasticPolicy | None = Field(None, description="Elastic training settings.")
    pytorchReplicaSpecs: ReplicaSpecs = _replica_specs("Master, Worker")
    nprocPerNode: str | None = Field(
        None, description="Processes per node: a number, auto, cpu or gpu. Defaults to auto."
    )


class XGBoostJobSpec(WireModel):
    """Desired state of an XGBoost training job."""

    runPolicy: RunPolicy | None = _run_policy()
    xgbReplicaSpecs: ReplicaSpecs = _replica_specs("Master, Worker")


class MPIJobSpec(WireModel):
    """Desired state of an MPI training job."""

    slotsPerWorker: Int32 | None = Field(None, description="Slots per worker in the hostfile. Defaults to 1.")
    cleanPodPolicy: CleanPodPolicy | None = Field(
        None, description="Deprecated: use runPolicy.cleanPodPolicy. Defaults to None."
    )
    mpiReplicaSpecs: ReplicaSpecs = _replica_specs("Launcher, Worker")
    mainContainer: str | None = Field(None, description="Name of the container that runs the MPI program.")
    runPolicy: RunPolicy | None = _run_policy()


class PaddleElasticPolicy(WireModel):
    """Elastic training of a PaddleJob."""

    minReplicas: Int32 | None = Field(None, description="Lower bound of Worker replicas. Defaults to maxReplicas.")
    maxReplicas: Int32 | None = Field(None, description="Upper bound of Worker replicas. Defaults to minReplicas.")
    maxRestarts: Int32 | None = Field(None, description="Restarts before failing.")
    metrics: list[MetricSpec] | None = Field(None, description="Metrics of the HorizontalPodAutoscaler.")


class PaddleJobSpec(WireModel):
    """Desired state of a PaddlePaddle training job."""

    runPolicy: RunPolicy | None = _run_policy()
    elasticPolicy: PaddleElasticPolicy | None = Field(None, description="Elastic training settings.")
    paddleReplicaSpecs: ReplicaSpecs = _replica_specs("Master, Worker")


class JAXJobSpec(WireModel):
    """Desired state of a JAX training job."""

    runPolicy: RunPolicy | None = _run_policy()
    jaxReplicaSpecs: ReplicaSpecs = _replica_specs("Worker")


class ReplicaStatus(WireModel):
    """Pod counts of one replica type."""

    active: Int32 | None = Field(None, description="Pods that are running.")
    succeeded: Int32 | None = Field(None, description="Pods that succeeded.")
    failed: Int32 | None = Field(None, description="Pods that failed.")
    labelSelector: dict[str, Any] | None = Field(
        None,
        description="Selector of the replica type's pods.",
        json_schema_extra={"x-kubernetes-preserve-unknown-fields": True},
    )
    selector: str | None = Field(None, description="The selector as a string (for the scale subresource).")


class JobStatus(WireModel):
    """Observed state of the job, written by Kubeflow's operator."""

    conditions: list[JobCondition] | None = Field(None, description="Observed conditions, oldest first.")
    replicaStatuses: dict[str, ReplicaStatus] | None = Field(None, description="Pod counts per replica type.")
    startTime: DateTime | None = Field(None, description="When the operator first acknowledged the job.")
    completionTime: DateTime | None = Field(None, description="When the job succeeded or failed.")
    lastReconcileTime: DateTime | None = Field(None, description="When the operator last reconciled the job.")
