"""Kubeflow's training-operator (kubeflow.org/v1), admission only: Kubeflow's operator runs the jobs."""

from jobgate.api.constants import KUBEFLOW_GROUP, KUBEFLOW_VERSION
from jobgate.families import Family

FAMILY = Family(
    name="kubeflow",
    group=KUBEFLOW_GROUP,
    version=KUBEFLOW_VERSION,
    kinds=("TFJob", "PyTorchJob", "XGBoostJob", "PaddleJob", "JAXJob", "MPIJob"),
    description=(
        "{kind} of Kubeflow's training-operator API ({group}/{version}), as jobgate's models describe it: a "
        "stand-in for Kubeflow's own CRD in jobgate's end-to-end tests (jobgate ships no Kubeflow CRD)."
    ),
    models="jobgate.families.kubeflow.models",
    rules="jobgate.families.kubeflow.rules",
    policy="jobgate.families.kubeflow.policy",
    # The reason of the rules its catalogue leaves to the webhook that have none of their own (the
    # structural schema's): Kubeflow's job-only rules are ValidatingAdmissionPolicies (catalogue.py).
    webhook_only_reason=(
        "jobgate ships no CRD for kubeflow.org (Kubeflow's CRDs are Kubeflow's): the structural schema that "
        "checks these fields is Kubeflow's CRD's, and jobgate's rules reach Kubeflow's jobs only as "
        "ValidatingAdmissionPolicies (manifests/kubeflow-policies)"
    ),
    catalogue="jobgate.families.kubeflow.catalogue",
    admission_only=True,
    compiled_modules=("jobgate.families.kubeflow.rules",),
)
