"""The mlkube family's rules and defaults (``rules/families/mlkube.py``: MxJob) for the apiserver.

``replicaSpecs`` is a list whose entries name their role (``mxReplicaType``, WORKER when unset);
a valid job holds each of the three roles once at most, which bounds the list for the CEL cost
estimate (``maxItems: 3``: a longer list always holds a duplicate, which the webhook refuses too).
"""

from __future__ import annotations

from jobgate.engine.registry import JobKind
from jobgate.families.mlkube import rules as mlkube
from jobgate.families.mlkube.declared import ROLES
from jobgate.forms.base import Declarations
from jobgate.forms.catalogue import (
    LIST_ITEMS,
    Default,
    Placement,
    Produces,
    Rule,
    Validation,
    Where,
    cel_string,
)
from jobgate.generate.cel.jobmeta import NAME, derived_names_rule
from jobgate.generate.cel.podtemplate import TemplateSite, pod_template_rules
from jobgate.rules.names import LABEL_MAX_LENGTH

REPLICAS = ("spec", "replicaSpecs")
ITEM = (*REPLICAS, LIST_ITEMS)
LIST = "self.spec.replicaSpecs"
# The defaults and the role and job-mode rules are declared (declared.py); the rest is written here.


def _type(declared: Declarations, replica: str) -> str:
    """CEL of an entry's replica type as the webhook reads it once defaulted (WORKER when unset)."""
    return declared.key(ROLES, replica)


def rules(kind: JobKind, declared: Declarations) -> list[Rule]:
    """The kind's rules, its declared ones (``declared``, compiled by the generator) among them."""
    assert kind is mlkube.MXJOB
    site = TemplateSite((*ITEM, "template"), "spec.replicaSpecs[*].template")
    return [_derived_names(declared), _framework_container(declared), *declared.rules(), *pod_template_rules(site)]


def _derived_names(declared: Declarations) -> Rule:
    """``<job>-<type>-<index>`` of every replica (rules/jobmeta.check_job_name with the known types)."""
    count = "(has(r.replicas) && r.replicas > 0 ? r.replicas : 1)"
    length = f"(size({NAME}) + size({_type(declared, 'r')}) + size(string({count} - 1)) + 2)"
    longest = f"{LIST}.map(r, {length})"
    longest_type = (
        f"{LIST}.map(r, {length} == {longest}.max() ? {_type(declared, 'r')} : '').filter(t, t != '')[0].lowerAscii()"
    )
    return derived_names_rule(
        "job/derived-names",
        "the pods' and services' names (<job>-<type>-<index>) fit in 63 characters",
        f"{NAME} + '-' + {longest_type} + '-<index>'",
        f"!has({LIST}) || {LIST}.all(r, {length} <= {LABEL_MAX_LENGTH})",
    )


def _framework_container(declared: Declarations) -> Rule:
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
                    message_expression=f"'Replica type ' + {_type(declared, 'self')} + "
                    f"' is missing a container for {mlkube.MXNET_CONTAINER}'",
                    field_path=".template.spec.containers",
                    reason="FieldValueRequired",
                ),
            ),
        ),
    )


def defaults(kind: JobKind) -> list[Default]:
    """Every default is declared (declared.py): none written here."""
    assert kind is mlkube.MXJOB
    return []
