"""pydantic v2 models of ``policy.jobgate.io/v1alpha1``: ``ClusterTrainingJobPolicy`` and ``TrainingJobPolicy``.

The field names of the spec are a contract: the checks (:mod:`.check`), the resolution
(:mod:`.resolve`) and the generated admission policies read them by these names. The models
refuse unknown fields (``extra="forbid"``), as the CRDs' structural schema does, so a typo such as
``maxGpusPerJob`` is an error and never a silently absent limit. Each model's validators repeat
the CRD's CEL rules (:mod:`.crds`), so that ``jobgate validate --policies`` refuses what
``kubectl apply`` refuses.

The pure modules work on plain dicts: :func:`parse_policy` validates an object and gives it back
as the dict they expect (defaults filled, ``None`` dropped).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# The names and patterns are defined once, beside the pydantic-free check of the same objects.
from jobgate.policy.plain import (
    API_VERSION,
    CLUSTER_KIND,
    DEVICE_CLASS_RE,
    FAMILIES,
    FORBIDDEN_ITEMS,
    GPU_NAME_RE,
    GROUP,
    LABEL_KEY_RE,
    LABEL_VALUE_RE,
    MAX_LIST,
    MAX_NAME,
    NAMESPACED_KIND,
    POLICY_KINDS,  # noqa: F401 (the models module keeps every name it had)
    REGISTRY_RE,
    VERSION,  # noqa: F401
)

# Literal of a tuple is the Literal of its items: the registered families (jobgate.families).
Family = Literal[FAMILIES]  # type: ignore[valid-type]
EnforcementAction = Literal["Deny", "Warn", "Audit"]
ExistingViolations = Literal["Allow", "Deny"]
ForbiddenItem = Literal["hostNetwork", "privileged", "hostPath", "hostPID", "hostIPC"]

_label_key = re.compile(LABEL_KEY_RE)
_label_value = re.compile(LABEL_VALUE_RE)
_registry = re.compile(REGISTRY_RE)
_gpu_name = re.compile(GPU_NAME_RE)
_device_class = re.compile(DEVICE_CLASS_RE)


def _cel(rule: str, message: str) -> dict[str, str]:
    return {"rule": rule, "message": message}


def _x(*rules: dict[str, str], **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = dict(extra)
    if rules:
        out["x-kubernetes-validations"] = list(rules)
    return out


Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME)]
LabelValue = Annotated[str, Field(max_length=63)]
NonNegInt32 = Annotated[int, Field(ge=0, le=2**31 - 1, json_schema_extra={"format": "int32"})]
NonNegInt64 = Annotated[int, Field(ge=0, json_schema_extra={"format": "int64"})]


class PolicyModel(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class LabelSelectorRequirement(PolicyModel):
    """One requirement of a label selector."""

    key: Name = Field(description="The label key the requirement applies to.")
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"] = Field(description="In, NotIn, Exists, DoesNotExist.")
    values: Annotated[list[Name], Field(max_length=MAX_LIST)] | None = Field(
        None, description="Values for In and NotIn (non-empty); empty for Exists and DoesNotExist."
    )

    @model_validator(mode="after")
    def _values_fit_operator(self) -> LabelSelectorRequirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"values: must be non-empty for {self.operator}")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"values: must be empty for {self.operator}")
        return self


class LabelSelector(PolicyModel):
    """A metav1 LabelSelector: matchLabels and matchExpressions, ANDed; {} matches everything."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra=_x(
            _cel(
                "!has(self.matchExpressions) || self.matchExpressions.all(e, "
                "(e.operator in ['In', 'NotIn']) == (has(e.values) && size(e.values) > 0))",
                "values must be non-empty for In and NotIn, and empty for Exists and DoesNotExist",
            )
        ),
    )

    matchLabels: Annotated[dict[str, LabelValue], Field(max_length=MAX_LIST)] | None = Field(
        None, description="Labels that must all be present with these values."
    )
    matchExpressions: Annotated[list[LabelSelectorRequirement], Field(max_length=MAX_LIST)] | None = Field(
        None, description="Requirements that must all hold."
    )


class KindRef(PolicyModel):
    """A job kind: API group and kind (a kind name alone is ambiguous: TFJob is KubeDL's and Kubeflow's)."""

    group: Name = Field(description="API group, e.g. kubeflow.org.")
    kind: Name = Field(description="Kind, e.g. PyTorchJob.")


class PolicyMatch(PolicyModel):
    """Which jobs the policy applies to; every condition given must hold, absent = every job jobgate serves."""

    families: Annotated[list[Family], Field(max_length=len(FAMILIES))] | None = Field(
        None,
        description=f"jobgate families: {', '.join(FAMILIES)}.",
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    kinds: Annotated[list[KindRef], Field(max_length=MAX_LIST)] | None = Field(
        None,
        description="Job kinds by group and kind.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["group", "kind"]},
    )
    objectSelector: LabelSelector | None = Field(None, description="Labels the job must have.")


class PolicyDefaults(PolicyModel):
    """Values written into a job on CREATE where it leaves them unset, where its family keeps the field."""

    queue: Name | None = Field(None, description="Scheduler queue.")
    priorityClassName: Name | None = Field(None, description="PriorityClass of the job (or of its pods).")
    schedulerName: Name | None = Field(None, description="Scheduler of the job's pods.")
    ttlSecondsAfterFinished: NonNegInt32 | None = Field(None, description="Seconds a finished job is kept.")
    activeDeadlineSeconds: Annotated[int, Field(ge=1, json_schema_extra={"format": "int64"})] | None = Field(
        None, description="Seconds a job may run."
    )
    labels: Annotated[dict[str, LabelValue], Field(max_length=MAX_LIST)] | None = Field(
        None,
        description="Labels added to the job when it lacks the key.",
        json_schema_extra=_x(
            _cel(f"self.all(k, k.matches(r'{LABEL_KEY_RE}'))", "label keys must be valid qualified names"),
            _cel(f"self.all(k, self[k].matches(r'{LABEL_VALUE_RE}'))", "label values must be valid label values"),
        ),
    )
    kueueQueueName: Name | None = Field(
        None, description="The kueue.x-k8s.io/queue-name label, for the kinds Kueue integrates (kubeflow.org)."
    )

    @field_validator("labels")
    @classmethod
    def _labels_valid(cls, labels: dict[str, str] | None) -> dict[str, str] | None:
        for key, value in (labels or {}).items():
            if not _label_key.match(key):
                raise ValueError(f"label key {key!r} is not a valid qualified name")
            if not _label_value.match(value):
                raise ValueError(f"label value {value!r} of {key!r} is not a valid label value")
        return labels


class GPUResource(PolicyModel):
    """A resource counted as GPUs, with its weight (e.g. a MIG slice as a fraction of a GPU)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra=_x(
            _cel(
                f"self.name.matches(r'{GPU_NAME_RE}') && "
                "(!self.name.contains('*') || self.name.matches(r'^[^*]+[*]$'))",
                "name must be a resource name, optionally ending in a single '*'",
            ),
        ),
    )

    name: Name = Field(description="Resource name, e.g. nvidia.com/gpu; a trailing '*' matches any suffix.")
    # ge=0 becomes the schema's minimum: 0 takes a name off the built-in list.
    weight: float = Field(
        1.0, ge=0, description="GPUs one unit of the resource counts as. Defaults to 1; 0 excludes the resource."
    )

    @field_validator("name")
    @classmethod
    def _name_valid(cls, name: str) -> str:
        if not _gpu_name.match(name) or "*" in name[:-1]:
            raise ValueError(f"{name!r} must be a resource name, optionally ending in a single '*'")
        return name


class GPUDeviceClass(PolicyModel):
    """A DRA DeviceClass whose devices count as GPUs, with the weight of one device."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra=_x(
            _cel(
                f"self.name.matches(r'{DEVICE_CLASS_RE}') && "
                "(!self.name.contains('*') || self.name.matches(r'^[^*]+[*]$'))",
                "name must be a DeviceClass name, optionally ending in a single '*'",
            ),
        ),
    )

    name: Annotated[str, Field(min_length=1, max_length=253)] = Field(
        description="DeviceClass name, e.g. gpu.nvidia.com; a trailing '*' matches any suffix."
    )
    weight: float = Field(
        1.0, ge=0, description="GPUs one device of the class counts as. Defaults to 1; 0 excludes the class."
    )

    @field_validator("name")
    @classmethod
    def _name_valid(cls, name: str) -> str:
        if not _device_class.match(name) or "*" in name[:-1]:
            raise ValueError(f"{name!r} must be a DeviceClass name, optionally ending in a single '*'")
        return name


class PolicyLimits(PolicyModel):
    """Upper bounds; with several policies, the most restrictive one applies."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra=_x(
            _cel(
                "!has(self.maxGPUsPerPod) || !has(self.maxGPUsPerJob) || self.maxGPUsPerPod <= self.maxGPUsPerJob",
                "maxGPUsPerPod must not exceed maxGPUsPerJob",
            ),
            _cel(
                "!has(self.maxReplicasPerRole) || !has(self.maxReplicasPerJob) || "
                "self.maxReplicasPerRole <= self.maxReplicasPerJob",
                "maxReplicasPerRole must not exceed maxReplicasPerJob",
            ),
        ),
    )

    maxReplicasPerRole: NonNegInt32 | None = Field(None, description="Pods of one role (largest reachable count).")
    maxReplicasPerJob: NonNegInt32 | None = Field(None, description="Pods of the whole job (largest reachable).")
    maxGPUsPerPod: NonNegInt32 | None = Field(None, description="Weighted GPUs one pod requests.")
    maxGPUsPerJob: NonNegInt32 | None = Field(None, description="Weighted GPUs of the whole job at its largest.")
    gpuResources: Annotated[list[GPUResource], Field(max_length=MAX_LIST)] | None = Field(
        None,
        description="Resources counted as GPUs, added to the built-in list (NVIDIA incl. MIG, AMD, Intel, Gaudi, "
        "Neuron, Volcano vGPU): a name given again sets its weight, weight 0 excludes it.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )
    gpuDeviceClasses: Annotated[list[GPUDeviceClass], Field(max_length=MAX_LIST)] | None = Field(
        None,
        description="DRA DeviceClasses whose devices count as GPUs, added to the built-in list (gpu.nvidia.com, "
        "mig.nvidia.com, gpu.amd.com, gpu.intel.com): a name given again sets its weight, weight 0 excludes it.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )
    maxTTLSecondsAfterFinished: NonNegInt32 | None = Field(None, description="Largest ttlSecondsAfterFinished.")
    maxActiveDeadlineSeconds: NonNegInt64 | None = Field(None, description="Largest activeDeadlineSeconds.")

    @model_validator(mode="after")
    def _consistent(self) -> PolicyLimits:
        if None not in (self.maxGPUsPerPod, self.maxGPUsPerJob) and self.maxGPUsPerPod > self.maxGPUsPerJob:  # type: ignore[operator]
            raise ValueError("maxGPUsPerPod must not exceed maxGPUsPerJob")
        if (
            None not in (self.maxReplicasPerRole, self.maxReplicasPerJob)
            and self.maxReplicasPerRole > self.maxReplicasPerJob  # type: ignore[operator]
        ):
            raise ValueError("maxReplicasPerRole must not exceed maxReplicasPerJob")
        names = [g.name for g in self.gpuResources or []]
        if len(names) != len(set(names)):
            raise ValueError("gpuResources: duplicate name")
        classes = [g.name for g in self.gpuDeviceClasses or []]
        if len(classes) != len(set(classes)):
            raise ValueError("gpuDeviceClasses: duplicate name")
        return self


class RequiredLabel(PolicyModel):
    """A label every job must carry, optionally with one of the given values."""

    key: Name = Field(
        description="Label key.",
        json_schema_extra=_x(_cel(f"self.matches(r'{LABEL_KEY_RE}')", "must be a valid label key")),
    )
    values: Annotated[list[LabelValue], Field(max_length=MAX_LIST)] | None = Field(
        None,
        description="Allowed values; absent = any value.",
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )

    @field_validator("key")
    @classmethod
    def _key_valid(cls, key: str) -> str:
        if not _label_key.match(key):
            raise ValueError(f"{key!r} is not a valid label key")
        return key


def _allow_list(what: str) -> Any:
    return Field(
        None,
        description=f"Allowed {what}; with several policies, a job must satisfy each (their intersection).",
        max_length=MAX_LIST,
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )


class RequiredRuntimes(PolicyModel):
    """The Kubeflow Trainer runtimes a TrainJob may reference, per kind (absent: any of that kind)."""

    clusterTrainingRuntimes: list[Name] | None = _allow_list("ClusterTrainingRuntime names")
    trainingRuntimes: list[Name] | None = _allow_list("TrainingRuntime names (in the TrainJob's namespace)")

    @model_validator(mode="after")
    def _no_duplicates(self) -> RequiredRuntimes:
        for name in ("clusterTrainingRuntimes", "trainingRuntimes"):
            values = getattr(self, name) or []
            if len(values) != len(set(values)):
                raise ValueError(f"runtimes.{name}: duplicate value")
        return self


class PolicyRequire(PolicyModel):
    """What every matching job must have or must not have."""

    labels: Annotated[list[RequiredLabel], Field(max_length=MAX_LIST)] | None = Field(
        None,
        description="Labels the job must carry.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["key"]},
    )
    ttlSecondsAfterFinished: bool | None = Field(None, description="The job must set a TTL after it finishes.")
    activeDeadlineSeconds: bool | None = Field(None, description="The job must set an active deadline.")
    fitsQueue: bool | None = Field(
        None,
        description=(
            "The job must fit its scheduler queue: a Kueue LocalQueue's ClusterQueue (quotas, flavors, cohorts) "
            "or a Volcano Queue's capability (and its parents'); a job the queue can never admit is refused."
        ),
    )
    queues: list[Name] | None = _allow_list("queues")
    priorityClassNames: list[Name] | None = _allow_list("PriorityClass names")
    schedulerNames: list[Name] | None = _allow_list("scheduler names")
    imageRegistries: list[Name] | None = Field(
        None,
        description=(
            "Registries images may come from: an exact host (with its port, if any), or a host/path prefix "
            "ending in '/'. An image without a registry is docker.io's (docker.io/library/ for one component)."
        ),
        max_length=MAX_LIST,
        json_schema_extra={
            "x-kubernetes-list-type": "set",
            "items": _x(
                _cel(
                    f"self.matches(r'{REGISTRY_RE}')",
                    "must be a host[:port], or a host[:port]/path/ prefix ending in '/'",
                )
            ),
        },
    )
    runtimes: RequiredRuntimes | None = Field(
        None,
        description=(
            "Kubeflow Trainer runtimes a TrainJob may reference (spec.runtimeRef), per kind: the runtime decides "
            "a TrainJob's images, GPUs and privileges."
        ),
    )
    forbid: Annotated[list[ForbiddenItem], Field(max_length=len(FORBIDDEN_ITEMS))] | None = Field(
        None,
        description="Pod settings no pod of the job may use: hostNetwork, privileged, hostPath, hostPID, hostIPC.",
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )

    @model_validator(mode="after")
    def _no_duplicates(self) -> PolicyRequire:
        for name in ("queues", "priorityClassNames", "schedulerNames", "imageRegistries", "forbid"):
            values = getattr(self, name) or []
            if len(values) != len(set(values)):
                raise ValueError(f"{name}: duplicate value")
        keys = [label.key for label in self.labels or []]
        if len(keys) != len(set(keys)):
            raise ValueError("labels: duplicate key")
        for entry in self.imageRegistries or []:
            if not _registry.match(entry):
                raise ValueError(
                    f"imageRegistries: {entry!r} must be a host[:port], or a host[:port]/path/ prefix ending in '/'"
                )
        return self


_SPEC_RULES = _x(
    _cel(
        "!has(self.defaults) || !has(self.defaults.ttlSecondsAfterFinished) || !has(self.limits) || "
        "!has(self.limits.maxTTLSecondsAfterFinished) || "
        "self.defaults.ttlSecondsAfterFinished <= self.limits.maxTTLSecondsAfterFinished",
        "defaults.ttlSecondsAfterFinished must not exceed limits.maxTTLSecondsAfterFinished",
    ),
    _cel(
        "!has(self.defaults) || !has(self.defaults.activeDeadlineSeconds) || !has(self.limits) || "
        "!has(self.limits.maxActiveDeadlineSeconds) || "
        "self.defaults.activeDeadlineSeconds <= self.limits.maxActiveDeadlineSeconds",
        "defaults.activeDeadlineSeconds must not exceed limits.maxActiveDeadlineSeconds",
    ),
)


class TrainingJobPolicySpec(PolicyModel):
    """The common spec of both policy kinds."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_SPEC_RULES)

    match: PolicyMatch | None = Field(None, description="Jobs the policy applies to; absent = every job.")
    priority: Annotated[int, Field(ge=-(2**31), le=2**31 - 1, json_schema_extra={"format": "int32"})] = Field(
        0, description="Orders defaults between policies of the same scope: the higher wins. Defaults to 0."
    )
    enforcementAction: EnforcementAction = Field(
        "Deny", description="Deny (default), Warn (admitted with a warning) or Audit (admitted, recorded)."
    )
    existingViolations: ExistingViolations = Field(
        "Allow",
        description=(
            "Allow (default): an UPDATE is judged only on what it makes new or worse; Deny: every violation counts."
        ),
    )
    exceptions: ExistingViolations = Field(
        "Allow",
        description="Allow (default): a TrainingJobPolicyException may waive the policy's limits and requirements "
        "for some jobs until it expires; Deny: no exception waives anything of this policy.",
    )
    defaults: PolicyDefaults | None = Field(None, description="Values set on CREATE where the job leaves them unset.")
    limits: PolicyLimits | None = Field(None, description="Upper bounds.")
    require: PolicyRequire | None = Field(None, description="Requirements.")

    @model_validator(mode="after")
    def _defaults_within_limits(self) -> TrainingJobPolicySpec:
        d, lim = self.defaults, self.limits
        if d and lim:
            pairs = (
                ("ttlSecondsAfterFinished", "maxTTLSecondsAfterFinished"),
                ("activeDeadlineSeconds", "maxActiveDeadlineSeconds"),
            )
            for field, limit in pairs:
                value, bound = getattr(d, field), getattr(lim, limit)
                if value is not None and bound is not None and value > bound:
                    raise ValueError(f"defaults.{field} must not exceed limits.{limit}")
        return self


class ClusterTrainingJobPolicySpec(TrainingJobPolicySpec):
    """Spec of a cluster-wide policy: the common spec plus the namespaces it applies to."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_SPEC_RULES)

    namespaceSelector: LabelSelector | None = Field(
        None, description="Namespaces the policy applies to, by their labels; absent = every namespace."
    )


class Condition(PolicyModel):
    """A metav1.Condition."""

    type: Name = Field(description="Ready or Conflict.")
    status: Literal["True", "False", "Unknown"] = Field(description="Status of the condition.")
    reason: Annotated[str, Field(max_length=1024)] | None = Field(None, description="Machine-readable reason.")
    message: Annotated[str, Field(max_length=32768)] | None = Field(None, description="Human-readable details.")
    lastTransitionTime: Annotated[str, Field(json_schema_extra={"format": "date-time"})] | None = Field(
        None, description="When the status last changed."
    )
    observedGeneration: NonNegInt64 | None = Field(None, description="The generation this condition reflects.")


class Violation(PolicyModel):
    """A stored job that violates the policy."""

    namespace: Annotated[str, Field(max_length=MAX_NAME)] | None = Field(None, description="The job's namespace.")
    name: Name = Field(description="The job's name.")
    kind: Name = Field(description="The job's kind.")
    apiVersion: Name = Field(description="The job's apiVersion.")
    message: Annotated[str, Field(max_length=4096)] = Field(description="What the job violates.")


class PolicyStatus(PolicyModel):
    """Observed state of the policy, written by the jobgate controller."""

    conditions: Annotated[list[Condition], Field(max_length=MAX_LIST)] | None = Field(
        None,
        description="Ready; Conflict with the policies it conflicts with.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    observedGeneration: NonNegInt64 | None = Field(None, description="The spec generation this status reflects.")
    matchedNamespaces: NonNegInt32 | None = Field(None, description="Namespaces the policy applies to.")
    totalViolations: NonNegInt32 | None = Field(None, description="Stored jobs violating the policy.")
    violations: Annotated[list[Violation], Field(max_length=100)] | None = Field(
        None, description="Some of the violating jobs (capped)."
    )


class _PolicyObject(PolicyModel):
    apiVersion: Literal["policy.jobgate.io/v1alpha1"] = API_VERSION
    metadata: dict[str, Any] = Field(default_factory=dict, description="Standard object metadata.")
    status: PolicyStatus | None = None


class ClusterTrainingJobPolicy(_PolicyObject):
    """Cluster-wide defaults, limits and requirements for training jobs."""

    kind: Literal["ClusterTrainingJobPolicy"] = CLUSTER_KIND
    spec: ClusterTrainingJobPolicySpec = Field(default_factory=ClusterTrainingJobPolicySpec)


class TrainingJobPolicy(_PolicyObject):
    """Defaults, limits and requirements for the training jobs of one namespace."""

    kind: Literal["TrainingJobPolicy"] = NAMESPACED_KIND
    spec: TrainingJobPolicySpec = Field(default_factory=TrainingJobPolicySpec)


def parse_policy(obj: dict[str, Any]) -> dict[str, Any]:
    """Validate a policy object (either kind) and give it back as the plain dict the pure modules read.

    Raises ``pydantic.ValidationError`` (a ``ValueError``) on a malformed policy and ``ValueError``
    on an object that is not a policy.
    """
    kind = obj.get("kind") if isinstance(obj, dict) else None
    model: type[_PolicyObject]
    if kind == CLUSTER_KIND:
        model = ClusterTrainingJobPolicy
    elif kind == NAMESPACED_KIND:
        model = TrainingJobPolicy
    else:
        raise ValueError(f"not a {GROUP} policy: kind {kind!r}")
    parsed = model.model_validate(obj).model_dump(exclude_none=True)
    # metadata is free-form: keep it as given (model_dump already copied it).
    return parsed
