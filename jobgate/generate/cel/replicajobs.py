"""The rules of jobs of a map of replica types (``rules/replicajobs.py``) for the apiserver, from the
same kind objects the webhook checks with: the roles, the replica map's field, the run policy's place.
"""

from __future__ import annotations

from jobgate.forms.base import Declarations
from jobgate.forms.catalogue import (
    MAP_VALUES,
    Default,
    Rule,
    cel_list,
)
from jobgate.generate.cel.jobmeta import NAME, derived_names_rule
from jobgate.generate.cel.podtemplate import (
    TemplateSite,
    pod_template_rules,
)
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


def replica_job_defaults(kind: ReplicaJobKind) -> list[Default]:
    """The defaults every replica-map kind shares, declared (replica_declarations): the replica types'
    spelling, each replica's count and restart policy, its pods' terminationMessagePolicy and
    framework port (the run policy's are the family's declarations)."""
    return replica_map_declarations(kind).defaults()
