"""The mlkube family's rules and defaults (``rules/families/mlkube.py``: MxJob) for the apiserver.

``replicaSpecs`` is a list whose entries name their role (``mxReplicaType``, WORKER when unset);
a valid job holds each of the three roles once at most, which bounds the list for the CEL cost
estimate (``maxItems: 3``: a longer list always holds a duplicate, which the webhook refuses too).
"""

from __future__ import annotations

from jobgate.api.constants import MX_REPLICA_TYPES
from jobgate.engine.registry import JobKind
from jobgate.families.mlkube import rules as mlkube
from jobgate.generate.cel.catalogue import (
    LIST_ITEMS,
    Default,
    Placement,
    Produces,
    Rule,
    Validation,
    Where,
    cel_list,
    cel_string,
)
from jobgate.generate.cel.jobmeta import NAME, derived_names_rule
from jobgate.generate.cel.podtemplate import TemplateSite, pod_template_rules
from jobgate.rules.names import LABEL_MAX_LENGTH

REPLICAS = ("spec", "replicaSpecs")
ITEM = (*REPLICAS, LIST_ITEMS)
LIST = "self.spec.replicaSpecs"
DEFAULT_TYPE = cel_string(mlkube.DEFAULT_REPLICA_TYPE)


def _type(replica: str) -> str:
    """CEL of an entry's replica type as the webhook reads it once defaulted (WORKER when unset)."""
    return f"(has({replica}.mxReplicaType) && {replica}.mxReplicaType != '' ? {replica}.mxReplicaType : {DEFAULT_TYPE})"


def rules(kind: JobKind) -> list[Rule]:
    assert kind is mlkube.MXJOB
    site = TemplateSite((*ITEM, "template"), "spec.replicaSpecs[*].template")
    return [
        _derived_names(),
        _types_unique(),
        _framework_container(),
        _scheduler_replicas(),
        *_local_mode(),
        _dist_mode(),
        *pod_template_rules(site),
    ]


def _derived_names() -> Rule:
    """``<job>-<type>-<index>`` of every replica (rules/jobmeta.check_job_name with the known types)."""
    count = "(has(r.replicas) && r.replicas > 0 ? r.replicas : 1)"
    length = f"(size({NAME}) + size({_type('r')}) + size(string({count} - 1)) + 2)"
    longest = f"{LIST}.map(r, {length})"
    longest_type = f"{LIST}.map(r, {length} == {longest}.max() ? {_type('r')} : '').filter(t, t != '')[0].lowerAscii()"
    return derived_names_rule(
        "job/derived-names",
        "the pods' and services' names (<job>-<type>-<index>) fit in 63 characters",
        f"{NAME} + '-' + {longest_type} + '-<index>'",
        f"!has({LIST}) || {LIST}.all(r, {length} <= {LABEL_MAX_LENGTH})",
    )


def _types_unique() -> Rule:
    duplicated = f"self.exists_one(q, {_type('q')} == {_type('r')})"
    return Rule(
        "mxjob/types-unique",
        "each replica type once (an entry without mxReplicaType is a WORKER)",
        Where.CRD_RULE,
        (Produces("spec.replicaSpecs[*].mxReplicaType", "DUPLICATE", apiserver_drops=2),),
        (
            # Three roles, each once: the bound the CEL cost estimate needs (a longer list holds a duplicate).
            Placement(REPLICAS, {"maxItems": len(MX_REPLICA_TYPES)}),
            Placement(
                REPLICAS,
                validation=Validation(
                    rule=f"self.all(r, {duplicated})",
                    message_expression="'Duplicate value: \"' + "
                    f"self.map(r, {_type('r')}).filter(t, self.filter(q, {_type('q')} == t).size() > 1)[0] + '\"'",
                ),
            ),
        ),
        why="reported at the list (a rule on a list cannot name the item)",
    )


def _framework_container() -> Rule:
    """A container named mxnet in every template whose containers have names (rules/podtemplate's
    required_container; the detail names the replica type, which the template's own rules cannot see)."""
    containers = "self.template.spec.containers"
    has_containers = f"has(self.template) && has(self.template.spec) && has({containers})"
    named = f"{containers}.exists(c, has(c.name) && c.name != '')"
    mxnet = f"{containers}.exists(c, has(c.name) && c.name == {cel_string(mlkube.MXNET_CONTAINER)})"
    return Rule(
        "pod-template/framework-container",
        f"a container named {mlkube.MXNET_CONTAINER} (when the containers have names)",
        Where.CRD_RULE,
        (
            Produces(
                "spec.replicaSpecs[*].template.spec.containers",
                "REQUIRED",
                f"^Replica type .* is missing a container for {mlkube.MXNET_CONTAINER}$",
            ),
        ),
        (
            Placement(
                ITEM,
                validation=Validation(
                    rule=f"!({has_containers}) || !{named} || {mxnet}",
                    message_expression=f"'Replica type ' + {_type('self')} + "
                    f"' is missing a container for {mlkube.MXNET_CONTAINER}'",
                    field_path=".template.spec.containers",
                    reason="FieldValueRequired",
                ),
            ),
        ),
    )


def _scheduler_replicas() -> Rule:
    return Rule(
        "mxjob/scheduler-replicas",
        "the SCHEDULER has one replica",
        Where.CRD_RULE,
        (Produces("spec.replicaSpecs[*].replicas", "INVALID", "^The SCHEDULER must have Replicas = 1$"),),
        (
            Placement(
                ITEM,
                validation=Validation(
                    rule=f"{_type('self')} != 'SCHEDULER' || !has(self.replicas) || self.replicas == 1",
                    message="The SCHEDULER must have Replicas = 1",
                    field_path=".replicas",
                ),
            ),
        ),
        why="the webhook checks the first SCHEDULER only (a second is a duplicate); the apiserver checks each",
    )


def _local_mode() -> list[Rule]:
    local = "!has(self.jobMode) || self.jobMode != 'local' || !has(self.replicaSpecs)"
    others = cel_list(t for t in MX_REPLICA_TYPES if t != "WORKER")
    return [
        Rule(
            "mxjob/local-mode-workers-only",
            "job mode local: no SCHEDULER, no SERVER",
            Where.CRD_RULE,
            (
                Produces(
                    "spec.replicaSpecs[*].mxReplicaType",
                    "INVALID",
                    "^job mode is local, but its replicas set have replicas type other than worker$",
                    apiserver_drops=2,
                ),
            ),
            (
                Placement(
                    ("spec",),
                    validation=Validation(
                        rule=f"{local} || !self.replicaSpecs.exists(r, {_type('r')} in {others})",
                        message="job mode is local, but its replicas set have replicas type other than worker",
                        field_path=".replicaSpecs",
                    ),
                ),
            ),
            why="reported at the list (a rule on a list cannot name the item)",
        ),
        Rule(
            "mxjob/local-mode-one-worker",
            "job mode local: one WORKER replica at most",
            Where.CRD_RULE,
            (
                Produces(
                    "spec.replicaSpecs[*].replicas",
                    "INVALID",
                    "^job mode is local, but it has more than 1 worker$",
                    apiserver_drops=2,
                ),
            ),
            (
                Placement(
                    ("spec",),
                    validation=Validation(
                        # The webhook reads the first WORKER entry (a second is a duplicate).
                        rule=f"{local} || !self.replicaSpecs.exists(r, {_type('r')} == 'WORKER') || "
                        f"!has(self.replicaSpecs.filter(r, {_type('r')} == 'WORKER')[0].replicas) || "
                        f"self.replicaSpecs.filter(r, {_type('r')} == 'WORKER')[0].replicas <= 1",
                        message="job mode is local, but it has more than 1 worker",
                        field_path=".replicaSpecs",
                    ),
                ),
            ),
            why="reported at the list (a rule on a list cannot name the item)",
        ),
    ]


def _dist_mode() -> Rule:
    return Rule(
        "mxjob/dist-mode-roles",
        "job mode dist: a SCHEDULER, a SERVER and a WORKER",
        Where.CRD_RULE,
        (Produces("spec.replicaSpecs", "REQUIRED", "^dist job mode without replica type "),),
        tuple(
            Placement(
                ("spec",),
                validation=Validation(
                    rule="!has(self.jobMode) || self.jobMode != 'dist' || !has(self.replicaSpecs) || "
                    f"self.replicaSpecs.exists(r, {_type('r')} == {cel_string(role)})",
                    message=f"dist job mode without replica type {role}",
                    field_path=".replicaSpecs",
                    reason="FieldValueRequired",
                ),
            )
            for role in MX_REPLICA_TYPES
        ),
    )


# --- defaults (MxJobKind.default: the operator's SetDefaults) --------------------------------------


def _each_replica(condition: str, field: str, value: str) -> str:
    return (
        "has(object.spec.replicaSpecs) ? object.spec.replicaSpecs.transformList(i, r, "
        f"{condition}, JSONPatch{{op: 'add', "
        f"path: '/spec/replicaSpecs/' + string(i) + '/{field}', value: {value}}}) : []"
    )


def defaults(kind: JobKind) -> list[Default]:
    assert kind is mlkube.MXJOB
    return [
        Default(
            "replicas/count",
            "each replica spec's replicas: 1",
            Where.SCHEMA_DEFAULT,
            (_each_replica("!has(r.replicas)", "replicas", "1"),),
            (Placement((*ITEM, "replicas"), {"default": 1}),),
        ),
        Default(
            "mxjob/ps-root-port",
            f"each replica spec's PsRootPort: {mlkube.DEFAULT_PS_ROOT_PORT}",
            Where.SCHEMA_DEFAULT,
            (_each_replica("!has(r.PsRootPort)", "PsRootPort", str(mlkube.DEFAULT_PS_ROOT_PORT)),),
            (Placement((*ITEM, "PsRootPort"), {"default": mlkube.DEFAULT_PS_ROOT_PORT}),),
        ),
        Default(
            "mxjob/replica-type",
            f'each replica spec\'s mxReplicaType: {mlkube.DEFAULT_REPLICA_TYPE} (also when "")',
            Where.SCHEMA_DEFAULT,
            (_each_replica("!has(r.mxReplicaType) || r.mxReplicaType == ''", "mxReplicaType", DEFAULT_TYPE),),
            (Placement((*ITEM, "mxReplicaType"), {"default": mlkube.DEFAULT_REPLICA_TYPE}),),
        ),
    ]
