"""The rules of jobs of a map of replica types (``rules/replicajobs.py``) for the apiserver, from the
same kind objects the webhook checks with: the roles, the replica map's field, the run policy's place.
"""

from __future__ import annotations

import re

from jobgate.generate.cel.catalogue import (
    MAP_VALUES,
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
from jobgate.generate.cel.podtemplate import (
    TemplatePatches,
    TemplateSite,
    framework_port_patch,
    pod_template_rules,
    termination_message_policy_patch,
)
from jobgate.rules.names import LABEL_MAX_LENGTH
from jobgate.rules.replicajobs import ReplicaJobKind


class RunPolicyPlace:
    """Where a kind's run policy is: ``spec`` itself, ``spec.runPolicy``, or either (KubeDL's MPIJob
    reads spec.runPolicy when it is there). CEL cannot pick one of two differently typed objects, so
    each rule on the run policy is written once per place, guarded by ``when``."""

    __slots__ = ("field_path", "self_path", "when")

    def __init__(self, self_path: str, field_path: str, when: str) -> None:
        self.self_path = self_path  # CEL of the run policy, from spec's self (or oldSelf: "{self}")
        self.field_path = field_path  # its fieldPath from spec
        self.when = when  # CEL true when this is where the run policy is ("{self}": self or oldSelf)

    def of(self, variable: str) -> str:
        return self.self_path.format(self=variable)

    def holds(self, variable: str) -> str:
        return self.when.format(self=variable)


def run_policy_places(kind: ReplicaJobKind) -> tuple[RunPolicyPlace, ...]:
    inline = RunPolicyPlace("{self}", "", "true")
    separate = RunPolicyPlace("{self}.runPolicy", ".runPolicy", "has({self}.runPolicy)")
    if kind.separate_run_policy:
        return (separate, RunPolicyPlace("{self}", "", "!has({self}.runPolicy)"))
    return (inline,)


def _replicas(replica_map: str, replica_type: str, count_unset: str) -> str:
    """CEL of a replica type's count as the webhook counts it (its default when unset)."""
    entry = f"{replica_map}[{replica_type}]"
    return f"(has({entry}.replicas) ? {entry}.replicas : {count_unset})"


def replica_job_rules(kind: ReplicaJobKind, site: TemplateSite) -> list[Rule]:
    field = kind.replicas_field
    roles = [role.name for role in kind.roles]
    replica_map = f"self.spec.{field}"
    rules = [
        _types_rule(kind),
        _min_available_rule(kind),
        _queue_rule(kind),
        _derived_names(kind, replica_map, roles),
        *pod_template_rules(site),
    ]
    return rules


def _types_rule(kind: ReplicaJobKind) -> Rule:
    roles = [role.name for role in kind.roles]
    lowered = {role.casefold(): role for role in roles}
    field = kind.replicas_field
    if kind.normalise_types:
        # ``worker`` is renamed Worker by the defaults when no Worker is there; beside a Worker it is a
        # duplicate, and so are two other spellings of one type (``worker``, ``WORKER``: neither renamed).
        unsupported = f"!(k.lowerAscii() in {cel_list(lowered)})"
        canonical = "{" + ", ".join(f"{cel_string(k)}: {cel_string(v)}" for k, v in lowered.items()) + "}"
        duplicate = (
            f"!(k in {cel_list(roles)}) && k.lowerAscii() in {cel_list(lowered)} && "
            f"({canonical}[k.lowerAscii()] in self || self.exists(j, j != k && j.lowerAscii() == k.lowerAscii()))"
        )
    else:
        unsupported = f"!(k in {cel_list(roles)})"
        duplicate = "false"
    supported = ", ".join(f'"{r}"' for r in roles)
    placements = [
        # A valid job has each role once at most: the bound the CEL cost estimate needs.
        Placement(("spec", field), {"maxProperties": len(roles)}),
        Placement(
            ("spec", field),
            validation=Validation(
                rule=f"!self.exists(k, {unsupported})",
                message_expression=f"'Unsupported value: \"' + self.filter(k, {unsupported})[0] + "
                f"'\": supported values: {supported}'",
            ),
        ),
    ]
    produces = [Produces(f"spec.{field}[*]", "NOT_SUPPORTED", apiserver_drops=1)]
    if kind.normalise_types:
        placements.append(
            Placement(
                ("spec", field),
                validation=Validation(
                    rule=f"!self.exists(k, {duplicate})",
                    message_expression=f"'Duplicate value: \"' + self.filter(k, {duplicate})[0] + '\"'",
                ),
            )
        )
        produces.append(Produces(f"spec.{field}[*]", "DUPLICATE", apiserver_drops=1))
    return Rule(
        "replicas/types",
        f"replica types are {', '.join(roles)}" + (" (any case, once each)" if kind.normalise_types else ""),
        Where.CRD_RULE,
        tuple(produces),
        tuple(placements),
        why="reported at the map (a rule on a map cannot name the key)",
    )


def _total(kind: ReplicaJobKind, replica_map: str) -> str:
    """CEL of the total of all replicas, as the webhook adds them after defaulting."""
    defaults = {role.name: role.default_replicas for role in kind.roles}
    unknown = 1 if kind.unknown_type_restart_policy() is not None else 0
    unset = " : ".join(f"t == {cel_string(name)} ? {n}" for name, n in defaults.items()) + f" : {unknown}"
    count = _replicas(replica_map, "t", f"({unset})")
    return f"{replica_map}.map(t, {count} > 0 ? {count} : 0).sum()"


def _min_available_rule(kind: ReplicaJobKind) -> Rule:
    field = kind.replicas_field
    replica_map = f"self.{field}"
    total = _total(kind, replica_map)
    placements = []
    produces = []
    for place in run_policy_places(kind):
        policy = place.of("self")
        scheduling = f"{policy}.schedulingPolicy"
        placements.append(
            Placement(
                ("spec",),
                validation=Validation(
                    rule=f"!{place.holds('self')} || !has({scheduling}) || !has({scheduling}.minAvailable) || "
                    f"!has({replica_map}) || {scheduling}.minAvailable <= {total}",
                    # CEL's cost estimator cannot size string(int): the message cannot quote the total.
                    message="must be less than or equal to the total number of replicas",
                    field_path=f"{place.field_path}.schedulingPolicy.minAvailable",
                ),
            )
        )
        produces.append(
            Produces(f"spec{place.field_path}.schedulingPolicy.minAvailable", "INVALID", "total number of replicas")
        )
    return Rule(
        "run-policy/min-available",
        "the gang (schedulingPolicy.minAvailable) is at most the total of all replicas",
        Where.CRD_RULE,
        tuple(produces),
        tuple(placements),
    )


def _queue(place: RunPolicyPlace, variable: str) -> str:
    scheduling = f"{place.of(variable)}.schedulingPolicy"
    return f"(has({scheduling}) && has({scheduling}.queue) ? {scheduling}.queue : '')"


def _queue_rule(kind: ReplicaJobKind) -> Rule:
    """schedulingPolicy.queue never changes; the error is where the new queue is, else where the old was."""
    places = run_policy_places(kind)
    new = _either(places, "self")
    old = _either(places, "oldSelf")
    placements = []
    produces = []
    for place in places:
        here = f"{place.field_path}.schedulingPolicy.queue"
        for condition in (f"{new} != '' && {place.holds('self')}", f"{new} == '' && {place.holds('oldSelf')}"):
            placements.append(
                Placement(
                    ("spec",),
                    validation=Validation(
                        rule=f"!({condition}) || {new} == {old}",
                        message="field is immutable",
                        field_path=here,
                    ),
                )
            )
        produces.append(Produces(f"spec{place.field_path}.schedulingPolicy.queue", "INVALID", "^field is immutable$"))
    return Rule(
        "run-policy/queue-immutable",
        "schedulingPolicy.queue does not change once the job exists",
        Where.TRANSITION,
        tuple(produces),
        tuple(placements),
    )


def _either(places: tuple[RunPolicyPlace, ...], variable: str) -> str:
    if len(places) == 1:
        return _queue(places[0], variable)
    first, second = places
    return f"({first.holds(variable)} ? {_queue(first, variable)} : {_queue(second, variable)})"


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


def place_pointer(place: RunPolicyPlace) -> str:
    return "/spec" + place.field_path.replace(".", "/")


def run_policy_default(kind: ReplicaJobKind, name: str, value: str, *, empty_is_unset: bool) -> str:
    """CEL patches setting the run policy's ``name`` to ``value`` (CEL) where it is unset."""
    parts = []
    for place in run_policy_places(kind):
        policy = place.of("object.spec")
        unset = f"!has({policy}.{name})" + (f" || {policy}.{name} == ''" if empty_is_unset else "")
        parts.append(
            f"({place.holds('object.spec')} && ({unset}) ? "
            f"[JSONPatch{{op: 'add', path: '{place_pointer(place)}/{name}', value: {value}}}] : [])"
        )
    return " + ".join(parts)


def replica_job_defaults(kind: ReplicaJobKind, clean_pod_policy: str | None) -> list[Default]:
    """The defaults every replica-map kind shares: the replica types' spelling, each replica's
    count and restart policy, its pods' terminationMessagePolicy and framework port, and the run
    policy's cleanPodPolicy (``clean_pod_policy``; None: the family leaves it)."""
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
    counts = {role.name: role.default_replicas for role in kind.roles}
    policies = {role.name: role.restart_policy for role in kind.roles}
    known = f"k in {cel_list(roles)}" if kind.unknown_type_restart_policy() is None else "true"

    def per_role(table: dict[str, object], unknown: object) -> str:
        if kind.unknown_type_restart_policy() is None:
            return "{" + ", ".join(f"{cel_string(k)}: {_cel_value(v)}" for k, v in table.items()) + "}[k]"
        cases = " : ".join(f"k == {cel_string(k)} ? {_cel_value(v)}" for k, v in table.items())
        return f"({cases} : {_cel_value(unknown)})"

    uniform_count = len(set(counts.values())) == 1 and kind.unknown_type_restart_policy() is None
    defaults += [
        Default(
            "replicas/count",
            "each replica type's replicas: " + ", ".join(f"{k} {v}" for k, v in counts.items()),
            Where.SCHEMA_DEFAULT if uniform_count else Where.MUTATING_POLICY,
            (
                f"has({replicas}) ? {replicas}.filter(k, {known} && !has({replicas}[k].replicas))"
                f".map(k, JSONPatch{{op: 'add', path: {entry} + '/replicas', value: {per_role(counts, 1)}}}) : []",
            ),
            (Placement(("spec", field, MAP_VALUES, "replicas"), {"default": next(iter(counts.values()))}),)
            if uniform_count
            else (),
        ),
        Default(
            "replicas/restart-policy",
            "each replica type's restartPolicy: " + ", ".join(f"{k} {v}" for k, v in policies.items()),
            Where.MUTATING_POLICY,
            (
                f"has({replicas}) ? {replicas}.filter(k, {known} && (!has({replicas}[k].restartPolicy) || "
                f"{replicas}[k].restartPolicy == '')).map(k, JSONPatch{{op: 'add', path: {entry} + '/restartPolicy', "
                f"value: {per_role(policies, kind.unknown_type_restart_policy())}}}) : []",
            ),
        ),
    ]
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
    if clean_pod_policy is not None:
        places = run_policy_places(kind)
        defaults.append(
            Default(
                "run-policy/clean-pod-policy",
                f"cleanPodPolicy: {clean_pod_policy}",
                Where.SCHEMA_DEFAULT if len(places) == 1 else Where.MUTATING_POLICY,
                (run_policy_default(kind, "cleanPodPolicy", cel_string(clean_pod_policy), empty_is_unset=True),),
                (
                    Placement(
                        ("spec", *places[0].field_path.split(".")[1:], "cleanPodPolicy"), {"default": clean_pod_policy}
                    ),
                )
                if len(places) == 1
                else (),
            )
        )
    return defaults


def _cel_value(value: object) -> str:
    if isinstance(value, str):
        return cel_string(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
