"""Volcano (batch.volcano.sh/v1alpha1): Job."""

from jobgate.api.constants import VOLCANO_GROUP, VOLCANO_VERSION
from jobgate.families import Family

FAMILY = Family(
    name="volcano",
    group=VOLCANO_GROUP,
    version=VOLCANO_VERSION,
    kinds=("Job",),
    description=(
        "{kind} of Volcano's batch API ({group}/{version}): tasks of pods scheduled together, with lifecycle "
        "policies and plugins, defaulted and validated by jobgate's admission webhooks, run by its "
        "controller."
    ),
    models="jobgate.families.volcano.models",
    rules="jobgate.families.volcano.rules",
    policy="jobgate.families.volcano.policy",
    declared="jobgate.families.volcano.declared",
    form_checks=("jobgate.families.volcano.form_checks",),
    cel="jobgate.families.volcano.cel",
    controller="jobgate.controller.adapters.volcano",
    compiled_modules=(
        "jobgate.families.volcano.rules.defaults",
        "jobgate.families.volcano.rules.tasks",
        "jobgate.families.volcano.rules.job",
        "jobgate.families.volcano.rules.update",
        "jobgate.families.volcano.rules.policies",
        "jobgate.families.volcano.rules.plugins",
        "jobgate.families.volcano.rules.resources",
        "jobgate.families.volcano.rules.queue_check",
        "jobgate.families.volcano.rules.bounds",
    ),
)
