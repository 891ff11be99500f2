"""The rules of jobs of a map of replica types (``rules/replicajobs.py``) for the apiserver, from the
same kind objects the webhook checks with: the roles, the replica map's field, the run policy's place.
"""

from __future__ import annotations

import re

from jobgate.generate.cel.catalogue import (
    MAP_VALUES,
    Default,
    Rule,
    Where,
    cel_list,
)
from jobgate.generate.cel.jobmeta import NAME, derived_names_rule
from jobgate.generate.cel.podtemplate import (
    TemplatePatches,
    TemplateSite,
    framework_port_patch,
    pod_template_rules,
    termination_message_policy_patch,
)
from jobgate.generate.forms import Declarations
from jobgate.rules.names import LABEL_MAX_LENGTH
from jobgate.rules.replicajobs import MIN_AVAILABLE, QUEUE_IMMUTABLE, REPLICA_MAP_GROUP, TYPES, ReplicaJobKind
from jobgate.rules.replicajobs_declared import replica_declarations


def replica_map_declarations(kind: ReplicaJobKind) -> Declarations:
    return Declarations(replica_declarations(kind))


def declared_group(kind: ReplicaJobKind) -> str:
    """The group its replica map's functions are generated under (``rules/replicajobs.py`` calls them)."""
    return REPLICA_MAP_GROUP + kind.gvk.group


def _replicas(replica_map: str, replica_type: str, count_unset: str) -> str:
    """CEL of a replica type's count as the webhook counts it (its default when unset)."""
    entry = f"{replica_map}[{replica_type}]"
    return f"(has({entry}.replicas) ? {entry}.replicas : {count_unset})"


def replica_job_rules(kind: ReplicaJobKind, site: TemplateSite) -> list[Rule]:
    field = kind.replicas_field
    roles = [role.name for role in kind.roles]
    replica_map = f"self.spec.{field}"
    declared = {rule.id: rule for rule in replica_map_declarations(kind).rules()}
    rules = [
        declared[TYPES],
        declared[MIN_AVAILABLE],
        declared[QUEUE_IMMUTABLE],
        _derived_names(kind, replica_map, roles),
        *pod_template_rules(site),
    ]
    return rules


def _derived_names(kind: ReplicaJobKind, replica_map: str, roles: list[str]) -> Rule:
    """``<job>-<type>-<index>`` of every replica of a role fits in a label (``rules/jobmeta.check_job_name``)."""
    count = _replicas(replica_map, "t", "1")
    index = f"string(({count} > 0 ? {count} : 1) - 1)"
    length = f"(size({NAME}) + size(t) + size({index}) + 2)"
    counted = f"{replica_map}.filter(t, t in {cel_list(roles)})"
    longest_type = f"{counted}.filter(t, {length} == {counted}.map(t, {length}).max())[0]"
    fits = f"!has({replica_map}) || {counted}.all(t, {length} <= {LABEL_MAX_LENGTH})"
    return derived_names_rule(
        "job/derived-names",
        "the pods' and services' names (<job>-<type>-<index>) fit in 63 characters",
        f"{NAME} + '-' + {longest_type}.lowerAscii() + '-<index>'",
        fits,
    )


def replica_template_site(kind: ReplicaJobKind) -> TemplateSite:
    required = kind._required_container
    return TemplateSite(
        ("spec", kind.replicas_field, MAP_VALUES, "template"),
        f"spec.{kind.replicas_field}[*].template",
        required_container=required,
        when_unnamed=kind.required_container_when_unnamed,
        missing_containers_detail=kind._missing_containers,
    )


# --- defaults (ReplicaJobKind.default) ---------------------------------------------------------------


def replica_templates(kind: ReplicaJobKind) -> TemplatePatches:
    """Each replica's pod template, for the defaults' patches (``k``: the replica type)."""
    field = kind.replicas_field
    template = f"object.spec.{field}[k].template"
    pointer = f"'/spec/{field}/' + jsonpatch.escapeKey(k) + '/template'"

    def each(condition: str, body: str) -> str:
        def bind(text: str) -> str:
            return re.sub(r"\bpointer\b", pointer, re.sub(r"\btemplate\b", template, text))

        return (
            f"(has(object.spec.{field}) ? object.spec.{field}.filter(k, has({template}) && {bind(condition)})"
            f".map(k, {bind(body)}).flatten() : [])"
        )

    return TemplatePatches(each)


def replica_job_defaults(kind: ReplicaJobKind) -> list[Default]:
    """The defaults every replica-map kind shares: the replica types' spelling, each replica's
    count and restart policy, its pods' terminationMessagePolicy and framework port (the run
    policy's are the family's declarations): the first three declared (replica_declarations)."""
    defaults = replica_map_declarations(kind).defaults()
    templates = replica_templates(kind)
    if kind.termination_message_policy:
        defaults.append(
            Default(
                "pod-template/termination-message-policy",
                "every container's terminationMessagePolicy: FallbackToLogsOnError",
                Where.MUTATING_POLICY,
                (termination_message_policy_patch(templates),),
            )
        )
    port_roles = [role.name for role in kind.roles if role.gets_port]
    defaults.append(
        Default(
            "pod-template/framework-port",
            f"the {kind.port_name} port ({kind.port}) on the {kind.container} container of "
            + ", ".join(port_roles)
            + (
                ""
                if kind.port_requires_named_container
                else f" (the first container when none is named {kind.container})"
            ),
            Where.MUTATING_POLICY,
            (
                framework_port_patch(
                    templates,
                    f"k in {cel_list(port_roles)}",
                    kind.container,
                    kind.port_name,
                    kind.port,
                    requires_named=kind.port_requires_named_container,
                ),
            ),
        )
    )
    return defaults
