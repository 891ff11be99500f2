"""The T9k family's rules and defaults (``rules/families/t9k.py``: GenericJob) for the apiserver.

``replicaSpecs`` is a list of replica types, which the finish rules (maps of replica type to
indices), the debug and resume settings and the derived pod names refer to: those rules read the
replica types from ``spec``, the narrowest place that sees both, and report at the list they
check. What may not change on UPDATE (the replica types and pod templates, the resume settings)
is a transition rule on ``spec``.

The defaults, the finish rules' among them (one rule listing every replica, one rule per replica,
rescaled when the replica counts change: a MutatingAdmissionPolicy), are declared (declared.py).
"""

from __future__ import annotations

from jobgate.engine.registry import JobKind
from jobgate.families.t9k import rules as t9k
from jobgate.families.t9k.declared import REPLICA_SPEC
from jobgate.forms.base import Declarations
from jobgate.forms.catalogue import (
    LIST_ITEMS,
    Default,
    Placement,
    Produces,
    Rule,
    Where,
)
from jobgate.forms.scopes import ScopeSite, scope_rules
from jobgate.generate.cel.jobmeta import NAME, derived_names_rule, names_a_pod
from jobgate.generate.cel.podtemplate import TemplateSite, pod_template_rules
from jobgate.rules.names import LABEL_MAX_LENGTH

SPECS = ("spec", "replicaSpecs")
SPEC = (*SPECS, LIST_ITEMS)
PORTS = ("spec", "service", "ports")
# A DNS-1123 label or empty (an empty name is refused by the rule that requires one, with its words).
FINISH_RULES = t9k.FINISH_RULE_KEYS
# (mode, its list of per-type settings)
RUN_MODE_LISTS = (("debug", "replicaSpecs"), ("pause", "resumeSpecs"))


# What may not change on UPDATE is declared (declared.py), as far as a form says it; the rest is written here.


def _declared(declared: Declarations, ids: tuple[str, ...]) -> list[Rule]:
    """The declared rules of these ids, in the catalogue where the webhook reports them."""
    return [r for r in declared.rules() if r.id in ids]


def rules(kind: JobKind, declared: Declarations) -> list[Rule]:
    """The kind's rules, its declared ones (``declared``, compiled by the generator) in their places."""
    assert kind is t9k.GENERIC_JOB
    site = TemplateSite((*SPEC, "template"), "spec.replicaSpecs[*].template")
    return [
        _derived_names(),
        _bounds(),
        *scope_rules(ScopeSite(REPLICA_SPEC, "spec.replicaSpecs[*]")),
        *_declared(declared, t9k.FINISH_RULES),
        *_declared(declared, t9k.RUN_MODE_RULES),
        *_declared(declared, t9k.PORT_RULES),
        *_declared(declared, t9k.LAST_RULES),
        *pod_template_rules(site),
    ]


def _derived_names() -> Rule:
    """``<job>-<type>-<index>`` of every replica (the first replica spec of a type counts); a type
    that is no DNS-1123 label names no pod (its own rule refuses it)."""
    specs = "self.spec.replicaSpecs"
    named = names_a_pod("{r}.type")

    def length(replica: str) -> str:
        first = f"{specs}.filter(same, has(same.type) && same.type == {replica}.type)[0]"
        count = f"(has({first}.replicas) && {first}.replicas > 0 ? {first}.replicas : 1)"
        return f"(size({NAME}) + size({replica}.type) + size(string({count} - 1)) + 2)"

    longest = f"{specs}.map(q, {named.format(r='q')} ? {length('q')} : 0).max()"
    longest_type = (
        f"{specs}.map(r, {named.format(r='r')} && {length('r')} == {longest} ? r.type : '').filter(t, t != '')[0]"
    )
    return derived_names_rule(
        "job/derived-names",
        "the pods' and services' names (<job>-<type>-<index>) fit in 63 characters",
        f"{NAME} + '-' + {longest_type} + '-<index>'",
        f"!has({specs}) || {specs}.all(r, !{named.format(r='r')} || {length('r')} <= {LABEL_MAX_LENGTH})",
    )


def _bounds() -> Rule:
    finish = t9k.MAX_WRITTEN_RULE_REPLICAS
    replicas = t9k.MAX_REPLICA_SPECS
    return Rule(
        "genericjob/bounds",
        f"at most {replicas} replica specs, {finish} rules of each kind, {t9k.MAX_SERVICE_PORTS} service ports",
        Where.SCHEMA,
        (
            Produces("spec.replicaSpecs", "TOO_MANY"),
            *(Produces(f"spec.{key}", "TOO_MANY") for key in FINISH_RULES),
            *(Produces(f"spec.{key}[*]", "TOO_MANY") for key in FINISH_RULES),
            Produces("spec.service.ports", "TOO_MANY"),
        ),
        (
            Placement(SPECS, {"maxItems": replicas}),
            Placement(PORTS, {"maxItems": t9k.MAX_SERVICE_PORTS}),
            *(Placement(("spec", key), {"maxItems": finish}) for key in FINISH_RULES),
            # A finish rule names replica types, a debug or resume setting one: a valid job has no more
            # of them than replica specs (a longer one names a type twice or one that is not there).
            *(Placement(("spec", key, LIST_ITEMS), {"maxProperties": replicas}) for key in FINISH_RULES),
            *(Placement(("spec", "runMode", mode, items), {"maxItems": replicas}) for mode, items in RUN_MODE_LISTS),
            # A replica type is a label: a longer one names no replica spec.
            *(
                Placement(("spec", "runMode", mode, items, LIST_ITEMS, "type"), {"maxLength": LABEL_MAX_LENGTH})
                for mode, items in RUN_MODE_LISTS
            ),
        ),
        why="bounds the CEL cost estimator needs; no real job comes near them (the webhook checks those a valid "
        "job could reach: the replica specs, the finish rules the defaults write, the service ports)",
    )


def defaults(kind: JobKind) -> list[Default]:
    """Every default is declared (declared.py), the finish rules' too (``DefaultFinishRules``)."""
    assert kind is t9k.GENERIC_JOB
    return []
