"""The pod template's rules (``rules/podtemplate.py``) for the apiserver.

A job's pod templates are kept whole by the CRDs (``x-kubernetes-preserve-unknown-fields``), so
the apiserver sees nothing in them that CEL could read. Each template location gets the part of
a ``PodSpec`` that the rules read, typed, with every other field kept as it is, and the bounds
that the CEL cost estimator needs (``POD_TEMPLATE_BOUNDS``: lists a real pod never comes near;
the webhook refuses a longer list with the apiserver's words, so that both agree).

Most of the rules are structural-schema keywords (required fields, patterns, ranges, enums):
they cost no CEL. What needs more than one field (unique names, a mount of a declared volume,
requests within limits, the framework container) is CEL at the narrowest location that sees
every field it needs; such a rule on a list cannot name the item's index, so the apiserver
reports it at the list.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from jobgate.forms.catalogue import (
    LIST_ITEMS,
    MAP_VALUES,
    Location,
    Placement,
    PolicyValidation,
    Produces,
    Rule,
    Validation,
    Where,
    bound,
    cel_string,
    first_message,
    unique_field,
    unique_values,
)
from jobgate.forms.scopes import ScopeSite, scope_rules
from jobgate.rules.names import (
    LABEL_MAX_LENGTH,
)
from jobgate.rules.podtemplate import LIMIT_REQUIRED, POD_TEMPLATE_BOUNDS
from jobgate.rules.podtemplate_declared import (
    CONTAINER,
    CONTAINER_NAME,
    ENV_VAR,
    MOUNT,
    POD_SPEC,
    PORT,
    TEMPLATE,
    VOLUME,
)
from jobgate.rules.quantity import QUANTITY_MESSAGE


def _kept(properties: dict[str, Any], **keywords: Any) -> dict[str, Any]:
    """An object whose listed fields are typed and every other field is kept as it is."""
    return {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": properties, **keywords}


def _list_of(item: dict[str, Any], max_items: int) -> dict[str, Any]:
    return {"type": "array", "maxItems": max_items, "items": item}


# A quantity is a string or an integer, as in Kubernetes' own schemas.
QUANTITIES = {"type": "object", "additionalProperties": {"x-kubernetes-int-or-string": True}}


def _container() -> dict[str, Any]:
    bounds = POD_TEMPLATE_BOUNDS
    return _kept(
        {
            "name": {"type": "string"},
            "image": {"type": "string"},
            "ports": _list_of(
                _kept(
                    {
                        "containerPort": {"type": "integer", "format": "int32"},
                        "hostPort": {"type": "integer", "format": "int32"},
                        "protocol": {"type": "string"},
                        "name": {"type": "string"},
                    }
                ),
                bounds["ports"],
            ),
            "resources": _kept({"limits": copy.deepcopy(QUANTITIES), "requests": copy.deepcopy(QUANTITIES)}),
            # A mount's name is compared with the volumes' (at most 63 characters): one longer names none.
            "volumeMounts": _list_of(
                _kept({"name": {"type": "string", "maxLength": LABEL_MAX_LENGTH}, "mountPath": {"type": "string"}}),
                bounds["volumeMounts"],
            ),
            # No rule reads the list, only each name (a pattern): no bound needed.
            "env": {"type": "array", "items": _kept({"name": {"type": "string"}})},
        }
    )


def pod_template_schema(description: str) -> dict[str, Any]:
    """The schema of a template location: what the rules read, typed; the rest kept."""
    bounds = POD_TEMPLATE_BOUNDS
    return _kept(
        {
            "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "spec": _kept(
                {
                    "containers": _list_of(_container(), bounds["containers"]),
                    "initContainers": _list_of(_container(), bounds["initContainers"]),
                    "volumes": _list_of(_kept({"name": {"type": "string"}}), bounds["volumes"]),
                    "restartPolicy": {"type": "string"},
                }
            ),
        },
        description=description,
    )


class TemplateSite:
    """Where a kind keeps its pod templates, and the options its webhook checks them with."""

    __slots__ = ("location", "missing_containers_detail", "path", "required_container", "when_unnamed")

    def __init__(
        self,
        location: Location,
        path: str,
        *,
        required_container: tuple[str, str] | None = None,
        when_unnamed: bool = False,
        missing_containers_detail: str | None = None,
    ) -> None:
        self.location = location  # the template's location in the CRD schema
        self.path = path  # the template's field path, with wildcards
        self.required_container = required_container  # (name, the error's detail)
        self.when_unnamed = when_unnamed
        self.missing_containers_detail = missing_containers_detail or "must have at least one container"


def _dotted(location: Location) -> str:
    """A location as a declaration's path (``spec.tasks[*].template``, ``spec.tfReplicaSpecs{*}.template``)."""
    out = ""
    for step in location:
        out += "[*]" if step == LIST_ITEMS else "{*}" if step == MAP_VALUES else ("." if out else "") + step
    return out


def _named(variable: str, name: str) -> str:
    return f"(has({variable}.name) && {variable}.name == {name})"


_CONTAINER_LISTS = ("containers", "initContainers")


def pod_template_rules(site: TemplateSite) -> list[Rule]:
    """The rules of ``rules/podtemplate.py`` for the templates at ``site``."""
    at = site.location
    spec = (*at, "spec")
    path = f"{site.path}.spec"
    dotted = _dotted(at)
    bounds = POD_TEMPLATE_BOUNDS
    rules: list[Rule] = [
        *scope_rules(ScopeSite(TEMPLATE, dotted)),
        Rule(
            "pod-template/containers",
            "a pod spec has at least one container",
            Where.SCHEMA,
            (Produces(f"{path}.containers", "REQUIRED", f"^{re.escape(site.missing_containers_detail)}$"),),
            (Placement(spec, {"required": ["containers"]}), Placement((*spec, "containers"), {"minItems": 1})),
            why="the apiserver says it with its own words: Required value, or should have at least 1 items",
        ),
        Rule(
            "pod-template/bounds",
            "lists of a pod spec within bounds: " + ", ".join(f"{k} {v}" for k, v in bounds.items()),
            Where.SCHEMA,
            (Produces(f"{path}.**", "TOO_MANY"),),
            why="bounds the CEL cost estimator needs; no real pod comes near them",
        ),
    ]
    for key in _CONTAINER_LISTS:
        item = (*spec, key, LIST_ITEMS)
        each = f"{path}.{key}[*]"
        entries, names = f"{dotted}.spec.{key}[*]", (("list", key),)
        rules += [
            *scope_rules(ScopeSite(CONTAINER_NAME, entries, names), ScopeSite(CONTAINER, entries, names)),
            *scope_rules(ScopeSite(PORT, f"{entries}.ports[*]", names)),
            Rule(
                f"pod-template/{key}/port-names-unique",
                f"{key}: port names unique in a container",
                Where.CRD_RULE,
                (Produces(f"{each}.ports[*].name", "DUPLICATE", apiserver_drops=2),),
                (
                    Placement(
                        (*item, "ports"),
                        validation=unique_field("name", empty_counts=False),
                    ),
                ),
                why="reported at the container's ports (a rule on a list cannot name the item)",
            ),
            *scope_rules(ScopeSite(MOUNT, f"{entries}.volumeMounts[*]", names)),
            Rule(
                f"pod-template/{key}/mounted-volumes",
                f"{key}: every volume mount names a volume of the pod",
                Where.POLICY,
                (Produces(f"{each}.volumeMounts[*].name", "NOT_FOUND", apiserver_drops=4),),
                (Placement(spec, validation=_mounted_volumes(key)),),
                why="a ValidatingAdmissionPolicy: containers x mounts x volumes comparisons, the dearest rule of a "
                f"pod template, would bound the number of templates a CRD rule allows; reported at the pod's {key}",
            ),
            *scope_rules(ScopeSite(ENV_VAR, f"{entries}.env[*]", names)),
            *_resource_rules(key, item, each),
        ]
    rules += [
        Rule(
            "pod-template/container-names-unique",
            "container names unique in a pod (init containers included)",
            Where.CRD_RULE,
            tuple(Produces(f"{path}.{key}[*].name", "DUPLICATE", apiserver_drops=2) for key in _CONTAINER_LISTS),
            (
                Placement(
                    spec,
                    validation=Validation(
                        rule="!has(self.initContainers) || "
                        + unique_values("self.initContainers.map(c, has(c.name), c.name)"),
                        message="Duplicate value: init containers share a name",
                        field_path=".initContainers",
                    ),
                ),
                Placement(
                    spec,
                    validation=Validation(
                        rule="!has(self.containers) || ("
                        + unique_values("self.containers.map(c, has(c.name), c.name)")
                        + " && (!has(self.initContainers) || "
                        + bound(
                            "self.containers.map(c, has(c.name), c.name)",
                            "names",
                            "!self.initContainers.exists(d, has(d.name) && d.name in names)",
                        )
                        + "))",
                        message="Duplicate value: containers share a name (with each other or an init container)",
                        field_path=".containers",
                    ),
                ),
            ),
            why="reported at the list (a rule on a list cannot name the item)",
        ),
        *scope_rules(ScopeSite(VOLUME, f"{dotted}.spec.volumes[*]")),
        Rule(
            "pod-template/volume-names-unique",
            "volume names unique in a pod",
            Where.CRD_RULE,
            (Produces(f"{path}.volumes[*].name", "DUPLICATE", apiserver_drops=2),),
            (
                Placement(
                    (*spec, "volumes"),
                    validation=unique_field("name"),
                ),
            ),
            why="reported at the list (a rule on a list cannot name the item)",
        ),
        *scope_rules(ScopeSite(POD_SPEC, f"{dotted}.spec")),
    ]
    if site.required_container is not None:
        rules.append(_required_container_rule(site, spec, path))
    return rules


def _mounted_volumes(key: str) -> Validation:
    def missing(name: str) -> str:
        return f"!(has(self.volumes) && self.volumes.exists(v, has(v.name) && v.name == {name}))"

    unmounted = f"c.volumeMounts.exists(m, has(m.name) && m.name != '' && {missing('m.name')})"
    # The volumes' names listed once, each mount's looked up in it natively (not mounts x volumes reads).
    volume_names = "(has(self.volumes) ? self.volumes.map(v, has(v.name), v.name) : [])"
    return Validation(
        rule=f"!has(self.{key}) || "
        + bound(
            volume_names,
            "names",
            f"self.{key}.all(c, !has(c.volumeMounts) || "
            "c.volumeMounts.all(m, !has(m.name) || m.name == '' || m.name in names))",
        ),
        message_expression=f"'Not found: \"' + self.{key}.map(c, has(c.volumeMounts) && {unmounted} ? "
        f"c.volumeMounts.map(m, has(m.name) ? m.name : '').filter(n, n != '' && {missing('n')})[0] : '')"
        ".filter(n, n != '')[0] + '\": no volume of that name in the pod'",
        field_path=f".{key}",
    )


def _required_container_rule(site: TemplateSite, spec: Location, path: str) -> Rule:
    assert site.required_container is not None
    name, detail = site.required_container
    has_it = f"self.containers.exists(c, {_named('c', cel_string(name))})"
    if site.when_unnamed:
        rule = f"!has(self.containers) || size(self.containers) == 0 || {has_it}"
    else:
        rule = f"!has(self.containers) || !self.containers.exists(c, has(c.name) && c.name != '') || {has_it}"
    return Rule(
        "pod-template/framework-container",
        f"a container named {name}",
        Where.CRD_RULE,
        (Produces(f"{path}.containers", "REQUIRED", f"^{re.escape(detail)}$"),),
        (
            Placement(
                spec,
                validation=Validation(rule=rule, message=detail, field_path=".containers", reason="FieldValueRequired"),
            ),
        ),
    )


# --- resources -----------------------------------------------------------------------------------

# A quantity as a string, as apimachinery parses it (rules/quantity.py's grammar; the exponent of at
# most 18 digits it accepts), not negative: "-0" is zero.
_NUMBER = r"([0-9]+(\.[0-9]*)?|\.[0-9]+)"
_SUFFIX = r"(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?0*[0-9]{1,18}|[numkMGTPE]?)"
QUANTITY_PATTERN = rf"^(\+?{_NUMBER}|-(0+(\.0*)?|\.0+)){_SUFFIX}$"

# CEL of a quantity of the template (an integer, or a string the webhook trims as the apiserver's
# JSON decoding does), in ValidatingAdmissionPolicies: they have no static cost limit, where a CRD
# rule reading an int-or-string value is refused by Kubernetes 1.30's cost estimate.
_NATIVE = "(!{k}.contains('/') || {k}.contains('kubernetes.io/'))"
_OVERCOMMITTABLE = "(" + _NATIVE + " && !{k}.startsWith('hugepages-'))"


def quantity_of(v: str) -> str:
    """CEL of the quantity ``v`` holds (an integer, or a string the webhook trims)."""
    return f"(type({v}) == int ? quantity(string({v})) : quantity({v}.trim()))"


def is_quantity(v: str) -> str:
    """CEL true when ``v`` holds a quantity."""
    return f"(type({v}) == int || isQuantity({v}.trim()))"


def _counted(v: str, k: str) -> str:
    """The webhook compares only valid quantities: not negative, whole for extended resources."""
    valid = f"(type({v}) == int ? {v} >= 0 : (isQuantity({v}.trim()) && sign(quantity({v}.trim())) >= 0))"
    return f"({valid} && ({_NATIVE.format(k=k)} || type({v}) == int || {quantity_of(v)}.isInteger()))"


def _shown(v: str) -> str:
    """A value as the webhook's message shows it: a string quoted, a number bare."""
    return f"(type({v}) == int ? string({v}) : '\"' + {v} + '\"')"


def _bare(v: str) -> str:
    return f"(type({v}) == int ? string({v}) : {v})"


def _owner(container: str) -> str:
    """CEL of `` (container NAME)`` for a named container, '' otherwise (as the webhook's details)."""
    return f"(has({container}.name) && {container}.name != '' ? ' (container ' + {container}.name + ')' : '')"


def _first(messages: list[str]) -> str:
    return "([" + ", ".join(messages) + "].filter(m, m != '') + [''])[0]"


def _resource_rules(key: str, item: Location, each: str) -> list[Rule]:
    resources = (*item, "resources")
    produces_values = []
    placements = []
    for which in ("limits", "requests"):
        produces_values += [
            Produces(f"{each}.resources.{which}[*]", "INVALID", f"^{re.escape(QUANTITY_MESSAGE)}$"),
            Produces(f"{each}.resources.{which}[*]", "INVALID", "^must be greater than or equal to 0$"),
        ]
        placements.append(
            Placement((*resources, which, MAP_VALUES), {"pattern": QUANTITY_PATTERN, "minimum": 0}),
        )

    def fractional(container: str, path: str) -> str:
        messages = []
        for which in ("limits", "requests"):
            values = f"{container}.resources.{which}"
            value = f"{values}[k]"
            bad = (
                f"(type({value}) == int ? false : isQuantity({value}.trim()) && sign(quantity({value}.trim())) >= 0 && "
                f"!{_NATIVE.format(k='k')} && !quantity({value}.trim()).isInteger())"
            )
            message = (
                f"{path} + '.resources.{which}[' + k + ']: Invalid value: ' + {_shown(value)} + ': must be an integer'"
            )
            messages.append(
                f"(has({container}.resources) && has({values}) ? "
                f"({values}.map(k, {bad} ? {message} : '').filter(m, m != '') + [''])[0] : '')"
            )
        return _first(messages)

    def over(container: str, path: str) -> str:
        requests, limits = f"{container}.resources.requests", f"{container}.resources.limits"
        request, limit = f"{requests}[k]", f"{limits}[k]"
        overcommittable = _OVERCOMMITTABLE.format(k="k")
        bad = (
            f"k in {limits} && {_counted(request, 'k')} && {_counted(limit, 'k')} && "
            f"({overcommittable} ? {quantity_of(request)}.compareTo({quantity_of(limit)}) > 0 : "
            f"{quantity_of(request)}.compareTo({quantity_of(limit)}) != 0)"
        )
        message = (
            f"{path} + '.resources.requests[' + k + ']: Invalid value: ' + {_shown(request)} + ': must be ' + "
            f"({overcommittable} ? 'less than or equal to ' : 'equal to ') + k + ' limit of ' + {_bare(limit)} + "
            f"{_owner(container)}"
        )
        return (
            f"(has({container}.resources) && has({requests}) && has({limits}) ? "
            f"({requests}.map(k, {bad} ? {message} : '').filter(m, m != '') + [''])[0] : '')"
        )

    def unlimited(container: str, path: str) -> str:
        requests, limits = f"{container}.resources.requests", f"{container}.resources.limits"
        # Keys only: whatever the values, as the webhook reads them.
        bad = f"!{_OVERCOMMITTABLE.format(k='k')} && !(has({limits}) && k in {limits})"
        message = (
            f"{path} + '.resources.limits[' + k + ']: Required value: ' + k + ' is requested without a limit' + "
            f"{_owner(container)} + ': {LIMIT_REQUIRED}'"
        )
        return (
            f"(has({container}.resources) && has({requests}) ? "
            f"({requests}.map(k, {bad} ? {message} : '').filter(m, m != '') + [''])[0] : '')"
        )

    return [
        Rule(
            f"pod-template/{key}/quantities",
            f"{key}: resource quantities are valid and not negative",
            Where.SCHEMA,
            tuple(produces_values),
            tuple(placements),
            why="a pattern of the quantity's grammar (strings) and a minimum (integers)",
        ),
        Rule(
            f"pod-template/{key}/whole-extended-resources",
            f"{key}: extended resources (vendor/name) are whole numbers",
            Where.POLICY,
            tuple(
                Produces(f"{each}.resources.{which}[*]", "INVALID", "^must be an integer$")
                for which in ("limits", "requests")
            ),
            policy=(PolicyValidation(first_message(item, fractional)),),
            why="reads an integer-or-string value, which Kubernetes 1.30's CRD cost estimate cannot bound",
        ),
        Rule(
            f"pod-template/{key}/extended-resource-limits",
            f"{key}: extended resources and hugepages are requested with a limit (they cannot be overcommitted)",
            Where.POLICY,
            (Produces(f"{each}.resources.limits[*]", "REQUIRED", f"{re.escape(LIMIT_REQUIRED)}$"),),
            policy=(PolicyValidation(first_message(item, unlimited)),),
            why="reads the keys of a map without a size bound, which a CRD rule's cost estimate cannot bound",
        ),
        Rule(
            f"pod-template/{key}/requests-within-limits",
            f"{key}: requests at most their limits (equal for resources that cannot be overcommitted)",
            Where.POLICY,
            (Produces(f"{each}.resources.requests[*]", "INVALID", " limit of "),),
            policy=(PolicyValidation(first_message(item, over)),),
            why="reads integer-or-string values, which Kubernetes 1.30's CRD cost estimate cannot bound",
        ),
    ]
