"""DI-orchestrator (diengine.opendilab.org/v2alpha1): DIJob."""

from jobgate.api.constants import DIENGINE_GROUP, DIENGINE_VERSION
from jobgate.families import Family

FAMILY = Family(
    name="diengine",
    group=DIENGINE_GROUP,
    version=DIENGINE_VERSION,
    kinds=("DIJob",),
    description=(
        "{kind} of the DI-orchestrator API ({group}/{version}): a DI-engine job of learner, collector, "
        "evaluator and other tasks, defaulted and validated by jobgate's admission webhooks and run by its "
        "controller."
    ),
    models="jobgate.families.diengine.models",
    rules="jobgate.families.diengine.rules",
    policy="jobgate.families.diengine.policy",
    declared="jobgate.families.diengine.declared",
    cel="jobgate.families.diengine.cel",
    controller="jobgate.controller.adapters.diengine",
    compiled_modules=("jobgate.families.diengine.rules",),
)
