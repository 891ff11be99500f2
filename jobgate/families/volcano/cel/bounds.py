"""The bounds of a Volcano job's lists and strings (``rules/families/volcano/bounds.py``) in the CRD."""

from __future__ import annotations

from jobgate.families.volcano.cel.common import MAX_TASKS, SPEC, TASK, TASKS
from jobgate.families.volcano.rules import bounds
from jobgate.generate.cel.catalogue import LIST_ITEMS, MAP_VALUES, Placement, Produces, Rule, Where

VOLUMES = (*SPEC, "volumes")
VOLUME = (*VOLUMES, LIST_ITEMS)


def bounds_rule() -> Rule:
    """The bounds of ``rules/families/volcano/bounds.py``, which the webhook checks too."""
    limits = bounds.VOLCANO_BOUNDS
    policies = ((*SPEC, "policies"), (*TASK, "policies"))
    keywords = [
        (TASKS, {"maxItems": limits["tasks"]}),
        *((at, {"maxItems": limits["policies"]}) for at in policies),
        *(((*at, LIST_ITEMS, "events"), {"maxItems": limits["events"]}) for at in policies),
        *(
            ((*at, LIST_ITEMS, key), {"maxLength": bounds.POLICY_STRING_MAX_LENGTH})
            for at in policies
            for key in ("action", "timeout")
        ),
        (VOLUMES, {"maxItems": limits["volumes"]}),
        ((*VOLUME, "mountPath"), {"maxLength": bounds.MOUNT_PATH_MAX_LENGTH}),
        ((*VOLUME, "volumeClaimName"), {"maxLength": bounds.VOLUME_CLAIM_NAME_MAX_LENGTH}),
        ((*SPEC, "plugins", MAP_VALUES), {"maxItems": limits["pluginArguments"]}),
        ((*SPEC, "plugins", MAP_VALUES, LIST_ITEMS), {"maxLength": bounds.PLUGIN_ARGUMENT_MAX_LENGTH}),
        ((*TASK, "dependsOn", "name"), {"maxItems": limits["dependsOn"]}),
        ((*TASK, "dependsOn", "name", LIST_ITEMS), {"maxLength": bounds.DEPENDENCY_NAME_MAX_LENGTH}),
    ]
    return Rule(
        "volcano/bounds",
        "lists and strings within bounds: "
        + ", ".join(f"{k} {v}" for k, v in limits.items())
        + f", mountPath {bounds.MOUNT_PATH_MAX_LENGTH}, plugin argument {bounds.PLUGIN_ARGUMENT_MAX_LENGTH}, "
        f"volumeClaimName {bounds.VOLUME_CLAIM_NAME_MAX_LENGTH}, dependency {bounds.DEPENDENCY_NAME_MAX_LENGTH}, "
        f"policy action and timeout {bounds.POLICY_STRING_MAX_LENGTH}",
        Where.SCHEMA,
        (
            Produces("spec.tasks", "TOO_MANY"),
            Produces("spec.policies", "TOO_MANY"),
            Produces("spec.policies[*].events", "TOO_MANY"),
            Produces("spec.tasks[*].policies", "TOO_MANY"),
            Produces("spec.tasks[*].policies[*].events", "TOO_MANY"),
            Produces("spec.policies[*].action", "TOO_LONG"),
            Produces("spec.policies[*].timeout", "TOO_LONG"),
            Produces("spec.tasks[*].policies[*].action", "TOO_LONG"),
            Produces("spec.tasks[*].policies[*].timeout", "TOO_LONG"),
            Produces("spec.volumes", "TOO_MANY"),
            Produces("spec.volumes[*].mountPath", "TOO_LONG"),
            Produces("spec.volumes[*].volumeClaimName", "TOO_LONG"),
            Produces("spec.plugins.*", "TOO_MANY"),
            Produces("spec.plugins.*[*]", "TOO_LONG"),
            Produces("spec.tasks[*].dependsOn.name", "TOO_MANY"),
            Produces("spec.tasks[*].dependsOn.name[*]", "TOO_LONG"),
        ),
        tuple(Placement(at, keyword) for at, keyword in keywords),
        why=f"bounds the CEL cost estimator needs (tasks: {MAX_TASKS}, as the shared pod-template rules allow); "
        "no real job comes near them, and the webhook refuses beyond them too",
    )
