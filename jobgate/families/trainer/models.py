"""``trainer.kubeflow.org/v1alpha1`` (Kubeflow Trainer v2.3.0): TrainJob, TrainingRuntime, ClusterTrainingRuntime.

The shapes follow Trainer's ``pkg/apis/trainer/v1alpha1`` at v2.3.0, with its schema keywords (bounds,
lengths, enums, defaults). A runtime's JobSet template has the shape Trainer's CRD gives it:
JobSet v0.12.0's ``JobSetSpec``, taken from the jobset family's models (one description of a JobSet
spec), and a TrainJob's runtimePatches have Trainer's own patch types. Core Kubernetes values (env
vars, resources, volumes, security contexts, pod templates) are held whole: their own schemas are the
apiserver's, and the rules read them as plain data. jobgate serves these kinds at admission only; the
CRDs generated from these models are only the end-to-end tests' stand-in for Trainer's
(``tests/e2e/crds/trainer``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from jobgate.api.common import DateTime, Int32, Int64, WireModel
from jobgate.families.jobset.models import JobSetSpec

Whole = Annotated[dict[str, Any], Field(json_schema_extra={"x-kubernetes-preserve-unknown-fields": True})]
WholeList = Annotated[list[Whole], Field()]


class RuntimeRef(WireModel):
    """The runtime a TrainJob runs on."""

    name: str = Field(min_length=1, max_length=253, description="Name of the runtime.")
    apiGroup: str | None = Field(
        "trainer.kubeflow.org",
        max_length=253,
        description="API group of the runtime. Defaults to trainer.kubeflow.org.",
    )
    kind: str | None = Field(
        "ClusterTrainingRuntime",
        max_length=253,
        description="ClusterTrainingRuntime (the default) or TrainingRuntime (in the TrainJob's namespace).",
    )


class SecretRef(WireModel):
    name: str | None = Field("", description="Name of the Secret.")


class DatasetInitializer(WireModel):
    """The dataset initializer's settings."""

    storageUri: str | None = Field(None, max_length=2048, description="Where the dataset is read from (scheme://...).")
    env: list[Whole] | None = Field(None, max_length=128, description="Environment of the initializer container.")
    secretRef: SecretRef | None = Field(None, description="Secret with the credentials of the storage.")


class ModelInitializer(DatasetInitializer):
    """The model initializer's settings."""


class Initializer(WireModel):
    dataset: DatasetInitializer | None = Field(None, description="The dataset initializer.")
    model: ModelInitializer | None = Field(None, description="The model initializer.")


class Trainer(WireModel):
    """Overrides of the runtime's trainer (``node``) container."""

    image: str | None = Field(None, max_length=500, description="Image of the node container.")
    command: list[Annotated[str, Field(max_length=1048576)]] | None = Field(None, max_length=128)
    args: list[Annotated[str, Field(max_length=1048576)]] | None = Field(None, max_length=128)
    env: list[Whole] | None = Field(None, max_length=128, description="Merged into the node container's env.")
    numNodes: Int32 | None = Field(None, description="Trainer nodes; overrides the runtime's mlPolicy.numNodes.")
    resourcesPerNode: Whole | None = Field(None, description="Merged per key onto the node container's resources.")
    numProcPerNode: Int32 | None = Field(None, description="Processes per node.")


class TemplateMetadata(WireModel):
    """The metadata of an embedded template: the five fields Trainer's CRDs keep of an ObjectMeta."""

    labels: dict[str, str] | None = Field(None, description="Labels.")
    annotations: dict[str, str] | None = Field(None, description="Annotations.")
    finalizers: list[str] | None = Field(None, description="Finalizers.")
    name: str | None = Field(None, description="Name.")
    namespace: str | None = Field(None, description="Namespace.")


class ContainerPatch(WireModel):
    """A patch of one container of the runtime's pods (by name): no image, command or resources."""

    name: str = Field(min_length=1, max_length=253, description="The container patched.")
    env: list[Whole] | None = Field(None, max_length=128, description="Environment variables (core/v1 EnvVar).")
    volumeMounts: list[Whole] | None = Field(None, max_length=128, description="Volume mounts (core/v1).")
    securityContext: Whole | None = Field(None, description="Security context (core/v1).")


class SchedulingGate(WireModel):
    name: str = Field(description="Name of the scheduling gate.")


class PodSpecPatch(WireModel):
    """The pod-spec fields a runtime patch may set."""

    serviceAccountName: str | None = Field(None, max_length=253, description="Service account; immutable.")
    volumes: list[Whole] | None = Field(None, max_length=128, description="Volumes (core/v1); immutable.")
    initContainers: list[ContainerPatch] | None = Field(None, max_length=64, description="Immutable.")
    containers: list[ContainerPatch] | None = Field(None, max_length=64, description="Immutable.")
    imagePullSecrets: list[Whole] | None = Field(None, max_length=64, description="Immutable.")
    securityContext: Whole | None = Field(None, description="Pod security context (core/v1); immutable.")
    terminationGracePeriodSeconds: Int64 | None = Field(None, ge=0, description="Immutable.")
    nodeSelector: dict[str, str] | None = Field(None, description="Node selector.")
    affinity: Whole | None = Field(None, description="Affinity (core/v1).")
    tolerations: list[Whole] | None = Field(None, max_length=128, description="Tolerations (core/v1).")
    schedulingGates: list[SchedulingGate] | None = Field(None, max_length=16, description="Scheduling gates.")


class PodTemplatePatch(WireModel):
    metadata: TemplateMetadata | None = Field(None, description="Labels and annotations of the pods.")
    spec: PodSpecPatch | None = Field(None, description="The patch of the pods' spec.")


class JobSpecPatch(WireModel):
    template: PodTemplatePatch | None = Field(None, description="The patch of the Job's pod template.")


class JobTemplatePatch(WireModel):
    metadata: TemplateMetadata | None = Field(None, description="Labels and annotations of the Jobs.")
    spec: JobSpecPatch | None = Field(None, description="The patch of the Jobs' spec.")


class ReplicatedJobPatch(WireModel):
    name: str = Field(min_length=1, max_length=253, description="The runtime's replicated job patched.")
    template: JobTemplatePatch | None = Field(None, description="The patch of its Job template.")


class JobSetSpecPatch(WireModel):
    replicatedJobs: list[ReplicatedJobPatch] | None = Field(None, max_length=100, description="By name.")


class JobSetTemplatePatch(WireModel):
    metadata: TemplateMetadata | None = Field(None, description="Labels and annotations of the JobSet.")
    spec: JobSetSpecPatch | None = Field(None, description="The patch of the JobSet's spec.")


class TrainingRuntimeSpecPatch(WireModel):
    template: JobSetTemplatePatch | None = Field(None, description="The patch of the runtime's JobSet template.")


class RuntimePatch(WireModel):
    """A manager's patch of the runtime's JobSet template (v2.2+)."""

    manager: str = Field(min_length=1, max_length=253, description="The domain-prefixed name of the patch's manager.")
    time: DateTime | None = Field(None, description="When the patch was last changed (set by the mutating webhook).")
    trainingRuntimeSpec: TrainingRuntimeSpecPatch | None = Field(None, description="The patch of the runtime's spec.")


class TrainJobSpec(WireModel):
    """Desired state of a TrainJob."""

    runtimeRef: RuntimeRef = Field(description="The runtime the job runs on; immutable.")
    initializer: Initializer | None = Field(None, description="Dataset and model initializers; immutable.")
    trainer: Trainer | None = Field(None, description="Overrides of the runtime's trainer; immutable.")
    runtimePatches: list[RuntimePatch] | None = Field(None, max_length=16, description="Patches, one per manager.")
    suspend: bool | None = Field(False, description="Whether the job is suspended.")
    activeDeadlineSeconds: Int64 | None = Field(None, ge=1, description="Seconds the job may run; immutable.")
    managedBy: str | None = Field(
        "trainer.kubeflow.org/trainjob-controller", max_length=253, description="The controller of the job."
    )


class TrainJobStatus(WireModel):
    conditions: list[Whole] | None = Field(None, max_length=8)
    jobsStatus: list[Whole] | None = Field(None, max_length=100)
    trainerStatus: Whole | None = None


class TorchPolicy(WireModel):
    envInjection: Whole | None = Field(None, description="Containers that get the PET_* variables too.")


class MPIPolicy(WireModel):
    numProcPerNode: Int32 | None = Field(1, description="Slots per node.")
    mpiImplementation: Literal["OpenMPI", ""] | None = Field("OpenMPI", description="The MPI implementation.")
    sshAuthMountPath: str | None = Field("/root/.ssh", max_length=4096)
    runLauncherAsNode: bool | None = Field(False, description="Whether the launcher also trains.")


class FluxPolicy(WireModel):
    numProcPerNode: Int32 | None = Field(1)


class MLPolicy(WireModel):
    """The runtime's ML framework (at most one)."""

    numNodes: Int32 | None = Field(None, description="Trainer nodes; 1 when unset.")
    torch: TorchPolicy | None = None
    mpi: MPIPolicy | None = None
    jax: Whole | None = None
    xgboost: Whole | None = None
    flux: FluxPolicy | None = None


class JobSetTemplateSpec(WireModel):
    """A runtime's JobSet template: Trainer's CRDs carry JobSet v0.12.0's JobSetSpec schema here, its CEL
    rules included (docs/families.md, Trainer)."""

    metadata: TemplateMetadata | None = Field(None, description="Labels and annotations of the JobSet.")
    spec: JobSetSpec | None = Field(None, description="The JobSet's spec (jobset.x-k8s.io/v1alpha2).")


class TrainingRuntimeSpec(WireModel):
    """Desired state of a (Cluster)TrainingRuntime."""

    mlPolicy: MLPolicy | None = Field(None, description="The ML framework and its settings.")
    podGroupPolicy: Whole | None = Field(None, description="Gang scheduling (coscheduling or Volcano).")
    template: JobSetTemplateSpec = Field(description="The JobSet template (metadata and a JobSet v0.12.0 spec).")


class TrainingRuntimeStatus(WireModel):
    """TrainingRuntimes have no status."""
