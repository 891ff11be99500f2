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
    cel_string,
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
    policy's are the family's declarations)."""
    field = kind.replicas_field
    replicas = f"object.spec.{field}"
    entry = "'/spec/" + field + "/' + jsonpatch.escapeKey(k)"
    roles = [role.name for role in kind.roles]
    defaults: list[Default] = []
    if kind.normalise_types:
        canonical = "{" + ", ".join(f"{cel_string(r.casefold())}: {cel_string(r)}" for r in roles) + "}"
        to = f"{canonical}[k.lowerAscii()]"
        old = "oldObject.spec." + field
        stale = (
            f"(oldObject != null && has(oldObject.spec.{field}) && !(k in {old}) && {to} in {old} && "
            f"{to} in {replicas} && {replicas}[{to}] == {old}[{to}])"
        )
        movable = (
            f"!(k in {cel_list(roles)}) && k.lowerAscii() in {cel_list(r.casefold() for r in roles)} && "
            f"{replicas}.filter(j, !(j in {cel_list(roles)}) && j.lowerAscii() == k.lowerAscii()).size() == 1 && "
            f"(!({to} in {replicas}) || {stale})"
        )
        defaults.append(
            Default(
                "replicas/type-spelling",
                f"a replica type spelled in another case ({roles[0].lower()}) takes the role's name ({roles[0]})",
                Where.MUTATING_POLICY,
                (
                    f"has({replicas}) ? {replicas}.filter(k, {movable}).map(k, "
                    f"({stale} ? [JSONPatch{{op: 'remove', path: '/spec/{field}/' + {to}}}] : []) + "
                    f"[JSONPatch{{op: 'move', from: {entry}, path: '/spec/{field}/' + {to}}}]).flatten() : []",
                ),
            )
        )
    defaults += replica_map_declarations(kind).defaults()
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
