"""The runtimes a TrainJob is judged against, and the family's own small view of a runtime's JobSet template.

A TrainJob's validation reads its runtime (``spec.runtimeRef``): a TrainingRuntime in the job's
namespace or a ClusterTrainingRuntime. The review's context carries a ``RuntimeView``
(``jobgate/families/trainer/views.py``): the webhook's is an informer over both kinds
(``webhook/trainer_runtimes.py``), ``jobgate validate`` / ``review`` build a :class:`RuntimeSnapshot`
from ``--cluster-objects`` and the runtimes given beside the jobs.

A runtime's ``spec.template`` is a JobSet template (``jobset.x-k8s.io/v1alpha2`` JobSetSpec): this
module reads what the trainer rules need of it (replicated jobs, their ancestor label, their pod
templates and containers) as plain data, through the jobset family's reader of a JobSet spec
(``jobgate/families/jobset/shape.py``, which imports nothing: reading a template neither loads nor
registers the JobSet family).
"""

from __future__ import annotations

from jobgate.families.jobset import shape

# Read by the other rules modules as rt.job_spec, rt.replicas, ...: the same thing in a runtime as in a JobSet.
from jobgate.families.jobset.shape import job_labels, job_spec, pod_spec, pod_template, replicas  # noqa: F401

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any


TRAINER_GROUP = "trainer.kubeflow.org"
TRAINING_RUNTIME = "TrainingRuntime"
CLUSTER_TRAINING_RUNTIME = "ClusterTrainingRuntime"
RUNTIME_KINDS = (TRAINING_RUNTIME, CLUSTER_TRAINING_RUNTIME)

# Labels and names with meaning to Trainer (pkg/constants).
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
ANCESTOR_TRAINER = "trainer"
DATASET_INITIALIZER = "dataset-initializer"
MODEL_INITIALIZER = "model-initializer"
NODE = "node"
LAUNCHER = "launcher"
INITIALIZER_VOLUME = "initializer"
SUPPORT_LABEL = "trainer.kubeflow.org/support"
SUPPORT_DEPRECATED = "deprecated"
WEBHOOK_VALIDATION_LABEL = "trainer.kubeflow.org/webhook-validation"


OFFLINE_HINT = (
    "offline, give the runtime with --cluster-objects FILE|DIR (`kubectl get clustertrainingruntimes,"
    "trainingruntimes -A -o yaml`) or as a document beside the TrainJob"
)


# Added to a Volcano runtime's "PriorityClass ... not found" offline (T24).
PRIORITY_CLASS_HINT = (
    " (offline, give the PriorityClasses with --cluster-objects FILE|DIR: `kubectl get priorityclasses -o yaml`)"
)


class RuntimeSnapshot:
    """A ``RuntimeView`` over runtime objects given at once (``--cluster-objects``, documents beside the
    jobs, tests), with the JobSets and PriorityClasses some checks read. A TrainingRuntime without a
    namespace is taken as in ``default_namespace``."""

    __slots__ = ("_cluster", "_jobsets", "_namespaced", "_priority_classes", "default_namespace", "offline_hint")

    def __init__(
        self, objects: Iterable[Mapping[str, Any]] = (), default_namespace: str = "default", offline_hint: str = ""
    ) -> None:
        self._cluster: dict[str, Mapping[str, Any]] = {}
        self._namespaced: dict[tuple[str, str], Mapping[str, Any]] = {}
        # The TrainJobs' child JobSets (jobset.x-k8s.io), whose active jobs freeze a suspended job's patches.
        self._jobsets: dict[tuple[str, str], Mapping[str, Any]] = {}
        # PriorityClasses (scheduling.k8s.io), which a Volcano runtime's pods name (T24).
        self._priority_classes: dict[str, Mapping[str, Any]] = {}
        self.default_namespace = default_namespace
        self.offline_hint = offline_hint
        for obj in objects:
            self.add(obj)

    def add(self, obj: Mapping[str, Any]) -> bool:
        """Take one runtime, JobSet or PriorityClass (anything else is ignored); whether it was taken."""
        if is_priority_class(obj):
            metadata = obj.get("metadata")
            name = metadata.get("name") if isinstance(metadata, dict) else None
            if not isinstance(name, str) or not name:
                return False
            self._priority_classes[name] = obj
            return True
        if is_jobset(obj):
            metadata = obj.get("metadata")
            metadata = metadata if isinstance(metadata, dict) else {}
            name, namespace = metadata.get("name"), metadata.get("namespace")
            if not isinstance(name, str):
                return False
            self._jobsets[(namespace if isinstance(namespace, str) and namespace else self.default_namespace, name)] = (
                obj
            )
            return True
        if not is_runtime(obj):
            return False
        metadata = obj.get("metadata")
        name = metadata.get("name") if isinstance(metadata, dict) else None
        if not isinstance(name, str) or not name:
            return False
        if obj.get("kind") == CLUSTER_TRAINING_RUNTIME:
            self._cluster[name] = obj
        else:
            namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
            key = (namespace if isinstance(namespace, str) and namespace else self.default_namespace, name)
            self._namespaced[key] = obj
        return True

    def remove(self, obj: Mapping[str, Any]) -> None:
        metadata = obj.get("metadata")
        name = metadata.get("name") if isinstance(metadata, dict) else None
        if obj.get("kind") == CLUSTER_TRAINING_RUNTIME:
            self._cluster.pop(name, None)  # type: ignore[arg-type]
        else:
            namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
            self._namespaced.pop((namespace or self.default_namespace, name), None)  # type: ignore[arg-type]

    def runtime(self, kind: str, namespace: str | None, name: str) -> Mapping[str, Any] | None:
        if kind == CLUSTER_TRAINING_RUNTIME:
            return self._cluster.get(name)
        return self._namespaced.get((namespace or self.default_namespace, name))

    def jobset(self, namespace: str | None, name: str) -> Mapping[str, Any] | None:
        return self._jobsets.get((namespace or self.default_namespace, name))

    def priority_class(self, name: str) -> Mapping[str, Any] | None:
        return self._priority_classes.get(name)

    def __len__(self) -> int:
        return len(self._cluster) + len(self._namespaced) + len(self._jobsets) + len(self._priority_classes)


JOBSET_API_VERSION = "jobset.x-k8s.io/v1alpha2"


def is_jobset(obj: Any) -> bool:
    return isinstance(obj, dict) and obj.get("apiVersion") == JOBSET_API_VERSION and obj.get("kind") == "JobSet"


def is_priority_class(obj: Any) -> bool:
    return (
        isinstance(obj, dict) and obj.get("apiVersion") == "scheduling.k8s.io/v1" and obj.get("kind") == "PriorityClass"
    )


def is_runtime(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    api_version = obj.get("apiVersion")
    return (
        isinstance(api_version, str)
        and api_version.rpartition("/")[0] == TRAINER_GROUP
        and obj.get("kind") in RUNTIME_KINDS
    )


# --- the JobSet template, read as plain data ------------------------------------------------------


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def runtime_spec(runtime: Mapping[str, Any] | None) -> dict[str, Any]:
    return _dict(runtime.get("spec")) if runtime is not None else {}


def ml_policy(runtime: Mapping[str, Any] | None) -> dict[str, Any]:
    return _dict(runtime_spec(runtime).get("mlPolicy"))


def replicated_jobs(template_spec: Any) -> list[dict[str, Any]]:
    """The replicated jobs of a JobSetSpec that are objects (anything else skipped: the schema refuses it)."""
    return [rj for rj in shape.as_list(shape.as_dict(template_spec).get("replicatedJobs")) if type(rj) is dict]


def runtime_replicated_jobs(runtime: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    return replicated_jobs(_dict(runtime_spec(runtime).get("template")).get("spec"))


def ancestor(rjob: dict[str, Any]) -> str | None:
    value = job_labels(rjob).get(ANCESTOR_LABEL)
    return value if isinstance(value, str) else None


def containers(rjob: dict[str, Any], field: str = "containers") -> list[dict[str, Any]]:
    return [c for c in _list(pod_spec(rjob).get(field)) if isinstance(c, dict)]


def container_names(rjob: dict[str, Any]) -> set[str]:
    """Names of the init containers and containers of a replicated job's pods (one set, as Trainer's)."""
    names = (c.get("name") for c in (*containers(rjob, "initContainers"), *containers(rjob)))
    return {name for name in names if isinstance(name, str)}


def find_job(jobs: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    return next((rj for rj in jobs if rj.get("name") == name), None)


def find_container(rjob: dict[str, Any] | None, name: str) -> dict[str, Any] | None:
    if rjob is None:
        return None
    return next((c for c in (*containers(rjob, "initContainers"), *containers(rjob)) if c.get("name") == name), None)


def int_or(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def node_resources(runtime_jobs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The runtime's ``node`` container resources (Trainer's ExtractResourcePerNodeFromRuntime): the
    first job named ``node`` or labelled ancestor=trainer with a ``node`` container that has resources."""
    for rjob in runtime_jobs:
        if rjob.get("name") == NODE or ancestor(rjob) == ANCESTOR_TRAINER:
            for container in containers(rjob):
                resources = container.get("resources")
                if container.get("name") == NODE and isinstance(resources, dict):
                    return resources
    return None


def merge_resources(base: Mapping[str, Any] | None, override: Mapping[str, Any] | None) -> dict[str, Any]:
    """``override`` strategic-merged per key onto ``base`` (limits, requests: each resource name; claims whole)."""
    merged: dict[str, Any] = dict(base or {})
    for key, value in _dict(override).items():
        if key in ("limits", "requests") and isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged
