"""mxnet-operator (mxnet.mlkube.io/v1beta1): MxJob."""

from jobgate.api.constants import MLKUBE_GROUP, MLKUBE_VERSION
from jobgate.families import Family

FAMILY = Family(
    name="mlkube",
    group=MLKUBE_GROUP,
    version=MLKUBE_VERSION,
    kinds=("MxJob",),
    description=(
        "{kind} of the mxnet-operator API ({group}/{version}): an MXNet training job in local or dist "
        "(parameter-server) mode, defaulted and validated by jobgate's admission webhooks and run by its "
        "controller."
    ),
    models="jobgate.families.mlkube.models",
    rules="jobgate.families.mlkube.rules",
    policy="jobgate.families.mlkube.policy",
    declared="jobgate.families.mlkube.declared",
    cel="jobgate.families.mlkube.cel",
    controller="jobgate.controller.adapters.mlkube",
    compiled_modules=("jobgate.families.mlkube.rules",),
)
