"""The rule catalogue: each rule of the webhook, where the apiserver enforces it, and how.

jobgate's rules run in Python (the webhook, ``jobgate validate``); this catalogue gives each of
them a name and says where else it holds:

- ``CRD schema``: structural-schema keywords (type, enum, bounds, pattern, required), checked by
  the apiserver for every write, no webhook needed;
- ``CRD validation rule`` / ``CRD transition rule``: CEL in the CRD's ``x-kubernetes-validations``
  (a transition rule reads ``oldSelf``, the stored object, on UPDATE);
- ``ValidatingAdmissionPolicy``: CEL in a generated policy, for what a CRD rule cannot reach;
- ``webhook only``: with the reason (it reads another object, no cost bound admits it, ...).

A rule also says which of the webhook's field errors it produces (``Produces``), so that every
error jobgate reports is traced to one rule, and the differential end-to-end suite can check
that the apiserver refuses the same job at the same field. The CEL is generated into the CRDs
and policies by ``jobgate manifests generate`` (``jobgate/generate/cel/generate.py``); nothing is
written by hand in ``manifests/``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from jobgate.engine.fielderrors import FieldError, render_path
from jobgate.engine.pathpattern import PathPattern, rule_anchor

__all__ = ["PathPattern", "rule_anchor"]  # re-exported: the catalogue's readers find them here


class Where(Enum):
    SCHEMA = "CRD schema"
    CRD_RULE = "CRD validation rule"
    TRANSITION = "CRD transition rule"
    POLICY = "ValidatingAdmissionPolicy"
    MUTATING_POLICY = "MutatingAdmissionPolicy"
    SCHEMA_DEFAULT = "CRD schema default + MutatingAdmissionPolicy"
    WEBHOOK = "webhook only"

    @property
    def in_apiserver(self) -> bool:
        return self is not Where.WEBHOOK


# A place in a CRD's openAPIV3Schema: property names, "*" for a map's values
# (additionalProperties) and "[]" for a list's items.
Location = tuple[str, ...]
MAP_VALUES = "*"
LIST_ITEMS = "[]"


@dataclass(frozen=True)
class Validation:
    """One ``x-kubernetes-validations`` entry (``self`` is the value at its location)."""

    rule: str
    message: str = ""
    message_expression: str = ""
    field_path: str = ""
    reason: str = ""  # FieldValueInvalid (default), FieldValueRequired, FieldValueForbidden, FieldValueDuplicate
    optional_old_self: bool = False

    def as_schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule}
        if self.message:
            out["message"] = self.message
        if self.message_expression:
            out["messageExpression"] = self.message_expression
        if self.field_path:
            out["fieldPath"] = self.field_path
        if self.reason:
            out["reason"] = self.reason
        if self.optional_old_self:
            out["optionalOldSelf"] = True
        return out


@dataclass(frozen=True)
class Placement:
    """What a rule adds to the CRD schema at one location: keywords, a CEL validation, or both."""

    at: Location
    keywords: Mapping[str, Any] = field(default_factory=dict)
    validation: Validation | None = None


@dataclass(frozen=True)
class PolicyValidation:
    """One validation of a generated ValidatingAdmissionPolicy: ``message`` is CEL (``object``,
    ``oldObject``) of the webhook's line for the first violation (``<field>: <error>``), or '' when
    there is none. A policy's denial names no field: its message carries it, in the webhook's words,
    and it reports the first violation only."""

    message: str
    # (name, CEL) the message reads as variables.<name>: evaluated once per request, not per item.
    variables: tuple[tuple[str, str], ...] = ()


def bound(value: str, name: str, body: str) -> str:
    """CEL of ``body`` with ``name`` bound to ``value``, computed once: an ``all`` over a list of one
    (Kubernetes 1.30 has no ``cel.bind``; its ``optMap`` does not compile over a list made by
    ``map`` and leaves the cost estimator no size of the bound list, where this one keeps it)."""
    return f"[{value}].all({name}, {body})"


def unique_values(values: str) -> str:
    """CEL true when the list ``values`` holds no value twice.

    The list is made once (a field read per item), each value then looked up in it by the native
    ``indexOf``/``lastIndexOf``: a loop in Go over values already converted. A pairwise
    comprehension (``all`` of ``exists_one``) reads every field n² times through the object's
    conversion: 32 ports in each of 64 containers cost 0.8 s of apiserver CPU (docs/performance.md)."""
    return bound(values, "values", "values.all(x, values.indexOf(x) == values.lastIndexOf(x))")


def unique_field(field: str = "name", *, empty_counts: bool = True) -> Validation:
    """On a list of objects (``self``): no two items with the same ``field``; an item without it (or,
    unless ``empty_counts``, with it empty) counts for nothing. Reported at the list, the message
    naming the first value used twice.

    CEL's cost estimator knows the size of a string taken from a list made by map(), not from one
    made by filter(): a message quotes a value as list.map(x, x.field).filter(...)[0], never as
    list.filter(...)[0].field (which the estimator counts as unbounded, refusing the CRD)."""
    counted = f"has(a.{field})" if empty_counts else f"has(a.{field}) && a.{field} != ''"
    return Validation(
        rule=unique_values(f"self.map(a, {counted}, a.{field})"),
        message_expression=f"'Duplicate value: \"' + self.map(a, has(a.{field}) ? a.{field} : '').filter(n, n != '' && "
        f"self.filter(b, has(b.{field}) && b.{field} == n).size() > 1)[0] + '\"'",
    )


def policy_message(at: Location, validation: Validation) -> str:
    """A CRD-style validation (``self`` the value at ``at``) carried by a ValidatingAdmissionPolicy
    instead: CEL of '<field>: <message>' for the first value that breaks it. For rules whose reads
    the CRD cost estimate of Kubernetes 1.30 cannot bound (integer-or-string quantities)."""
    field_path = re.sub(r"\['([^']*)'\]", r"[\1]", validation.field_path)

    def body(value: str, path: str) -> str:
        def bound(text: str) -> str:
            return re.sub(r"\bself\b", value, text)

        message = (
            bound(validation.message_expression) if validation.message_expression else cel_string(validation.message)
        )
        field = f"{path} + {cel_string(field_path)}" if field_path else path
        return f"(({bound(validation.rule)}) ? '' : {field} + ': Invalid value: ' + {message})"

    return first_message(at, body)


def first_message(location: Location, body: Callable[[str, str], str], *, root: str = "object") -> str:
    """CEL of the first non-empty message ``body(value, path)`` gives for each value at ``location``
    (every map value, every list item on the way), '' when none: ``value`` is CEL of the value,
    ``path`` CEL of its field path as the webhook writes it. Written for Kubernetes 1.30's CEL (no
    two-variable comprehensions, no flatten): each level keeps its first message."""

    def walk(steps: Location, value: str, path: str, depth: int) -> str:
        if not steps:
            return body(value, path)
        step, rest = steps[0], steps[1:]
        name = f"v{depth}"
        if step == MAP_VALUES:
            inner = walk(rest, f"{value}[{name}]", f"{path} + '[' + {name} + ']'", depth + 1)
            return f"({value}.map({name}, {inner}).filter(m, m != '') + [''])[0]"
        if step == LIST_ITEMS:
            inner = walk(rest, name, f"{path} + '[' + string({value}.indexOf({name})) + ']'", depth + 1)
            return f"({value}.map({name}, {inner}).filter(m, m != '') + [''])[0]"
        joined = f"{path} + '.{step}'" if path != "''" else f"'{step}'"
        return f"(has({value}.{step}) ? {walk(rest, f'{value}.{step}', joined, depth)} : '')"

    return walk(location, root, "''", 0)


@dataclass(frozen=True)
class Produces:
    """A field error of the webhook that the rule explains: its path, type and detail.

    ``apiserver_drops``: how many trailing segments the apiserver's field lacks (a CEL rule
    placed on a list or map cannot name the item's index or key; the rule sits on the list).
    """

    path: str
    type: str  # an ErrorType name: REQUIRED, INVALID, NOT_SUPPORTED, FORBIDDEN, DUPLICATE, NOT_FOUND, TOO_MANY, ...
    detail: str = ""  # a regular expression searched in the error's detail
    apiserver_drops: int = 0
    # Another field at which the apiserver may report it instead (its own check of the same value).
    apiserver_instead: str = ""

    def explains(self, error: FieldError) -> bool:
        if error.type.name != self.type or not PathPattern(self.path).matches(error.path):
            return False
        return not self.detail or re.search(self.detail, error.detail) is not None

    def apiserver_fields(self, error: FieldError) -> tuple[str, ...]:
        """The fields at which the apiserver reports the error this explains (one of them)."""
        path = error.path[: len(error.path) - self.apiserver_drops] if self.apiserver_drops else error.path
        return (render_path(path), self.apiserver_instead) if self.apiserver_instead else (render_path(path),)


@dataclass(frozen=True)
class Rule:
    """One rule of the webhook and where the apiserver enforces it."""

    id: str
    summary: str
    where: Where
    produces: tuple[Produces, ...]
    placements: tuple[Placement, ...] = ()
    policy: tuple[PolicyValidation, ...] = ()
    why: str = ""  # webhook only: the reason; otherwise a note on how the apiserver reports it

    def __post_init__(self) -> None:
        if self.where is Where.WEBHOOK and not self.why:
            raise ValueError(f"rule {self.id}: a webhook-only rule must say why")
        if self.where in (Where.CRD_RULE, Where.TRANSITION) and not any(p.validation for p in self.placements):
            raise ValueError(f"rule {self.id}: enforced by a CRD rule but places no validation")
        if self.where is Where.POLICY and not (self.policy or any(p.validation for p in self.placements)):
            raise ValueError(f"rule {self.id}: enforced by a policy but has no policy validation")

    def explains(self, error: FieldError) -> Produces | None:
        return next((p for p in self.produces if p.explains(error)), None)


def explaining_rule(rules: Iterable[Rule], error: FieldError) -> tuple[Rule, Produces] | None:
    """The first rule that explains the error, with the pattern that matched."""
    for rule in rules:
        produced = rule.explains(error)
        if produced is not None:
            return rule, produced
    return None


@dataclass(frozen=True)
class Default:
    """A default of the mutating webhook and where the apiserver applies it.

    ``patches``: CEL expressions of a MutatingAdmissionPolicy (``object``, ``oldObject``), each a
    list of JSONPatch operations, run in order, each on the object the previous ones made.
    ``placements``: structural-schema ``default`` keywords, which also serve clusters without
    MutatingAdmissionPolicy (before 1.36) for a field that is absent; the policy still covers the
    rest (a field set to "", a default that depends on another field).
    """

    id: str
    summary: str
    where: Where
    patches: tuple[str, ...] = ()
    placements: tuple[Placement, ...] = ()
    why: str = ""

    def __post_init__(self) -> None:
        if self.where is Where.WEBHOOK and not self.why:
            raise ValueError(f"default {self.id}: a webhook-only default must say why")
        if self.where in (Where.MUTATING_POLICY, Where.SCHEMA_DEFAULT) and not self.patches:
            raise ValueError(f"default {self.id}: applied by a policy but has no patch")
        if self.where is Where.SCHEMA_DEFAULT and not self.placements:
            raise ValueError(f"default {self.id}: a schema default places none")


# --- writing CEL ---------------------------------------------------------------------------------


def cel_string(text: str) -> str:
    """A CEL string literal."""
    escaped = text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
    return f"'{escaped}'"


def cel_list(items: Iterable[str]) -> str:
    return "[" + ", ".join(cel_string(i) for i in items) + "]"


def cel_raw_string(pattern: str) -> str:
    """A regular expression as a CEL raw string (no escapes to double)."""
    if "'" in pattern:
        raise ValueError(f"pattern with a quote: {pattern}")
    return f"r'{pattern}'"
