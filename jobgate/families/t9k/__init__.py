"""T9k (batch.tensorstack.dev/v1beta1): GenericJob."""

from jobgate.api.constants import T9K_GROUP, T9K_VERSION
from jobgate.families import Family

FAMILY = Family(
    name="t9k",
    group=T9K_GROUP,
    version=T9K_VERSION,
    kinds=("GenericJob",),
    description=(
        "{kind} of the T9k API ({group}/{version}): a general-purpose batch job of replica types with finish "
        "rules and run modes, defaulted and validated by jobgate's admission webhooks and run by its "
        "controller."
    ),
    models="jobgate.families.t9k.models",
    rules="jobgate.families.t9k.rules",
    policy="jobgate.families.t9k.policy",
    declared="jobgate.families.t9k.declared",
    form_checks=("jobgate.families.t9k.form_checks",),
    cel="jobgate.families.t9k.cel",
    controller="jobgate.controller.adapters.t9k",
    compiled_modules=("jobgate.families.t9k.rules",),
)
