"""KubeDL (training.kubedl.io/v1alpha1): TFJob, PyTorchJob, XGBoostJob, MPIJob, XDLJob, MarsJob."""

from jobgate.api.constants import KUBEDL_GROUP, KUBEDL_VERSION
from jobgate.families import Family

FAMILY = Family(
    name="kubedl",
    group=KUBEDL_GROUP,
    version=KUBEDL_VERSION,
    kinds=("TFJob", "PyTorchJob", "XGBoostJob", "MPIJob", "XDLJob", "MarsJob"),
    description=(
        "{kind} of the KubeDL API ({group}/{version}): a distributed training job of replica types, defaulted"
        " and validated by jobgate's admission webhooks and run by its controller."
    ),
    models="jobgate.families.kubedl.models",
    rules="jobgate.families.kubedl.rules",
    policy="jobgate.families.kubedl.policy",
    declared="jobgate.families.kubedl.declared",
    cel="jobgate.families.kubedl.cel",
    controller="jobgate.controller.adapters.kubedl",
    compiled_modules=("jobgate.families.kubedl.rules",),
)
