"""A JobSet spec (``jobset.x-k8s.io/v1alpha2`` JobSetSpec) read as plain data: its replicated jobs, their Job
and pod templates, their replicas. The JobSet family's rules read a JobSet through these, and the trainer
family a runtime's ``spec.template.spec``, which is the same JobSetSpec (Kubeflow Trainer's CRDs carry
JobSet's schema there). Values of the wrong type read as empty (the schema check reports them).

Imports nothing: any family may read a JobSet spec without loading (or registering) the JobSet family.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# The CRD's default of a replicated job's replicas.
DEFAULT_REPLICAS = 1


def as_dict(value: Any) -> dict[str, Any]:
    return value if type(value) is dict else {}


def as_list(value: Any) -> list[Any]:
    return value if type(value) is list else []


def replicated_jobs(spec: Any) -> list[dict[str, Any]]:
    """The replicated jobs of a JobSetSpec, index for index (an item that is no object reads as ``{}``)."""
    return [job if type(job) is dict else {} for job in as_list(as_dict(spec).get("replicatedJobs"))]


def job_template(job: dict[str, Any]) -> dict[str, Any]:
    """A replicated job's Job template (batch/v1 JobTemplateSpec)."""
    return as_dict(job.get("template"))


def job_labels(job: dict[str, Any]) -> dict[str, Any]:
    """The labels of a replicated job's Job template."""
    return as_dict(as_dict(job_template(job).get("metadata")).get("labels"))


def job_spec(job: dict[str, Any]) -> dict[str, Any]:
    return as_dict(job_template(job).get("spec"))


def pod_template(job: dict[str, Any]) -> dict[str, Any]:
    return as_dict(job_spec(job).get("template"))


def pod_spec(job: dict[str, Any]) -> dict[str, Any]:
    return as_dict(pod_template(job).get("spec"))


def replicas(job: dict[str, Any]) -> int:
    """A replicated job's replicas (1 when unset or not an integer: JobSet's CRD default)."""
    value = job.get("replicas")
    return value if type(value) is int else DEFAULT_REPLICAS
