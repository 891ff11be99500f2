"""The T9k family's rules and defaults (``rules/families/t9k.py``: GenericJob) for the apiserver.

``replicaSpecs`` is a list of replica types, which the finish rules (maps of replica type to
indices), the debug and resume settings and the derived pod names refer to: those rules read the
replica types from ``spec``, the narrowest place that sees both, and report at the list they
check. What may not change on UPDATE (the replica types and pod templates, the resume settings)
is a transition rule on ``spec``.

The defaults of the finish rules (one rule listing every replica, one rule per replica) and
their rescaling when the replica counts change are a MutatingAdmissionPolicy: they depend on
every replica spec, and on the stored job.
"""

from __future__ import annotations

from jobgate.engine.registry import JobKind
from jobgate.families.t9k import rules as t9k
from jobgate.families.t9k.declared import GENERIC_JOB, REPLICA_SPEC
from jobgate.generate.cel.catalogue import (
    LIST_ITEMS,
    Default,
    Placement,
    Produces,
    Rule,
    Where,
)
from jobgate.generate.cel.jobmeta import NAME, derived_names_rule, names_a_pod
from jobgate.generate.cel.podtemplate import TemplateSite, pod_template_rules
from jobgate.generate.forms import Declarations, scope_rules
from jobgate.rules.forms import ScopeSite
from jobgate.rules.names import LABEL_MAX_LENGTH

SPECS = ("spec", "replicaSpecs")
SPEC = (*SPECS, LIST_ITEMS)
PORTS = ("spec", "service", "ports")
# A DNS-1123 label or empty (an empty name is refused by the rule that requires one, with its words).
FINISH_RULES = t9k.FINISH_RULE_KEYS
# (mode, its list of per-type settings)
RUN_MODE_LISTS = (("debug", "replicaSpecs"), ("pause", "resumeSpecs"))


# What may not change on UPDATE is declared (declared.py), as far as a form says it; the rest is written here.
DECLARED = Declarations(GENERIC_JOB)
# The rules checked replica spec by replica spec (jobgate manifests generate writes their check).
SCOPES = (REPLICA_SPEC,)


def declared(kind: JobKind) -> Declarations:
    assert kind is t9k.GENERIC_JOB
    return DECLARED


def _declared(ids: tuple[str, ...]) -> list[Rule]:
    """The declared rules of these ids, in the catalogue where the webhook reports them."""
    return [r for r in DECLARED.rules() if r.id in ids]


def rules(kind: JobKind) -> list[Rule]:
    assert kind is t9k.GENERIC_JOB
    site = TemplateSite((*SPEC, "template"), "spec.replicaSpecs[*].template")
    return [
        _derived_names(),
        _bounds(),
        *scope_rules(ScopeSite(REPLICA_SPEC, "spec.replicaSpecs[*]")),
        *_declared(t9k.FINISH_RULES),
        *_declared(t9k.RUN_MODE_RULES),
        *_declared(t9k.PORT_RULES),
        *_declared(t9k.LAST_RULES),
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


# --- defaults (GenericJobKind.default) -----------------------------------------------------------

OBJECT_SPECS = "object.spec.replicaSpecs"
OLD_SPECS = "oldObject.spec.replicaSpecs"


def _count(replica: str) -> str:
    return f"(has({replica}.replicas) ? {replica}.replicas : 1)"


def _counted(specs: str) -> str:
    """CEL true when the replica counts are what the webhook writes rules for (replica_counts, _writable):
    every replica spec with a type of its own and a count of at least 0, at most MAX_WRITTEN_RULE_REPLICAS in all.
    Unlike the webhook, no rules for more replica specs than the CRD admits: the job is refused for its replica
    specs alone, not also for a rule naming more types than a rule may (their bound is the same)."""
    return (
        f"(has({specs}) && size({specs}) > 0 && size({specs}) <= {t9k.MAX_REPLICA_SPECS} && "
        f"{specs}.all(r, has(r.type) && r.type != '' && "
        f"(!has(r.replicas) || r.replicas >= 0) && {specs}.exists_one(q, has(q.type) && q.type == r.type)) && "
        f"{specs}.map(r, {_count('r')}).sum() <= {t9k.MAX_WRITTEN_RULE_REPLICAS})"
    )


def _success_matches(rules: str, specs: str) -> str:
    """CEL true when ``rules`` are the default success rules of ``specs``' counts."""
    counted = f"{specs}.filter(r, {_count('r')} > 0)"
    return (
        f"({counted}.size() == 0 ? size({rules}) == 0 : (size({rules}) == 1 && size({rules}[0]) == {counted}.size() && "
        f"{counted}.all(r, r.type in {rules}[0] && {rules}[0][r.type] == lists.range({_count('r')}))))"
    )


def _failure_rules(specs: str) -> str:
    return f"{specs}.map(r, lists.range({_count('r')}).map(i, {{r.type: [i]}})).flatten()"


def _counts_differ(new: str, old: str) -> str:
    return (
        f"(size({new}) != size({old}) || "
        f"{new}.exists(r, !{old}.exists(q, q.type == r.type && {_count('q')} == {_count('r')})))"
    )


def _finish_rules_default(key: str) -> str:
    given = f"object.spec.{key}"
    if key == "successRules":
        matches_old = _success_matches(given, OLD_SPECS)
        positive = f"{OBJECT_SPECS}.filter(r, {_count('r')} > 0)"
        write = (
            f"({positive}.size() == 0 ? [] : [JSONPatch{{op: 'add', path: '/spec/{key}', value: [{{}}]}}] + "
            f"{positive}.map(r, JSONPatch{{op: 'add', path: '/spec/{key}/0/' + jsonpatch.escapeKey(r.type), "
            f"value: lists.range({_count('r')})}}))"
        )
    else:
        matches_old = f"{given} == {_failure_rules(OLD_SPECS)}"
        write = (
            f"({OBJECT_SPECS}.map(r, {_count('r')}).sum() == 0 ? [] : "
            f"[JSONPatch{{op: 'add', path: '/spec/{key}', value: {_failure_rules(OBJECT_SPECS)}}}])"
        )
    # Rules jobgate wrote for the stored replica counts follow a scale; rules a user wrote never change.
    rescaled = (
        f"(oldObject != null && has(oldObject.spec) && {_counted(OLD_SPECS)} && "
        f"{_counts_differ(OBJECT_SPECS, OLD_SPECS)} && has({given}) && {matches_old})"
    )
    return f"{_counted(OBJECT_SPECS)} && (!has({given}) || {rescaled}) ? {write} : []"


def defaults(kind: JobKind) -> list[Default]:
    assert kind is t9k.GENERIC_JOB
    return [
        *DECLARED.defaults(),
        Default(
            "genericjob/success-rules",
            "successRules: one rule listing every replica (rewritten when the replica counts change, if they were "
            "the defaults of the stored counts)",
            Where.MUTATING_POLICY,
            (_finish_rules_default("successRules"),),
        ),
        Default(
            "genericjob/failure-rules",
            "failureRules: one rule per replica (rewritten when the replica counts change, if they were the "
            "defaults of the stored counts)",
            Where.MUTATING_POLICY,
            (_finish_rules_default("failureRules"),),
        ),
    ]
