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
    webhook_only_reason=(
        "Kubeflow's CRDs are Kubeflow's, not jobgate's (it installs none for kubeflow.org): its rules would "
        "need admission policies over another project's kinds, which jobgate does not generate"
    ),
    catalogue="jobgate.families.kubeflow.catalogue",
    admission_only=True,
    compiled_modules=("jobgate.families.kubeflow.rules",),
)
