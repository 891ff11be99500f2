"""The generic field forms: ``RequiredField``, ``ForbiddenField``, ``FieldBound``, ``StringField``,
``AtMostOneOf`` (declaration, schema keyword or CRD rule, Python written out or called, cost).

A field form's path (``spec.tasks[*].name``, ``spec.tfReplicaSpecs{*}.restartPolicy``,
``spec.pytorchReplicaSpecs[Master].replicas``) is cut in two: the scope, the steps to each object
the check runs on (through list items and map values: where its CRD rule or keyword sits), and
the target, the field (or map key) from there. A condition is read from the same object.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from jobgate.engine.fielderrors import not_supported
from jobgate.forms.base import Declaration, Declarations, FormError, When, cel_literal, exact_detail
from jobgate.forms.catalogue import (
    LIST_ITEMS,
    MAP_VALUES,
    Placement,
    Produces,
    Rule,
    Validation,
    Where,
    cel_list,
    cel_raw_string,
    cel_string,
)
from jobgate.forms.python_text import CHECK_NAMES, read_lines, step_names
from jobgate.rules.names import (
    DNS1123_LABEL_MESSAGE,
    ENV_VAR_NAME_MESSAGE,
    LABEL_MAX_LENGTH,
    PORT_NAME_MAX_LENGTH,
    PORT_NAME_PROBLEMS,
    max_length_message,
)


class _FieldForm(Declaration):
    """What the field forms compile to alike: declarations of one id are one rule (its checks)."""

    ID_GROUP = "field"

    def rules(self, decls: Declarations) -> list[Rule]:
        group = [o for o in decls.declared if o.ID_GROUP == "field" and o.id == self.id]
        return [_field_rule(group)] if group[0] is self else []  # type: ignore[arg-type]

    def python_check(self, decls: Declarations) -> list[str]:
        return [line for path in field_paths(self) for line in _field_lines(self, Site(self, path))]  # type: ignore[arg-type]

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [(self.id, _field_cost(self))]  # type: ignore[arg-type]


@dataclass(frozen=True)
class RequiredField(_FieldForm):
    """When ``when`` holds, the field (or map key) is set (with ``empty_is_unset``, not "" either).
    ``Required value`` at the field, with ``message`` as its detail."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            '`RequiredField(id, summary, path, message="", empty_is_unset=False, when=...)`',
            "the field (or map key) is set under each object on the path that exists",
            "`Required value` at the field, `message` its detail",
            "the schema's `required` without a message or condition; otherwise a CRD rule on the field's object",
        ),
    )

    id: str
    summary: str
    path: str | tuple[str, ...]
    message: str = ""
    empty_is_unset: bool = False
    when: When | None = None
    why: str = ""
    # A string: another type is ``Invalid value: must be of type string`` (a field of an object the
    # CRD keeps whole, such as a pod template's, that no structural schema check reads).
    string: bool = False


@dataclass(frozen=True)
class ForbiddenField(_FieldForm):
    """When ``when`` holds, the field (or map key) is not set (with ``empty_is_unset``, "" is unset).
    ``Forbidden`` at the field, with ``message``."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`ForbiddenField(id, summary, path, message, empty_is_unset=False, when=...)`",
            "the field (or map key) is not set",
            "`Forbidden` at the field",
            "a CRD rule on the field's object",
        ),
    )

    id: str
    summary: str
    path: str | tuple[str, ...]
    message: str
    empty_is_unset: bool = False
    when: When | None = None
    why: str = ""


@dataclass(frozen=True)
class FieldBound(_FieldForm):
    """An integer field within [minimum, maximum] (an unset one passes). ``Invalid value`` at the
    field: ``message``, or without one the apiserver's words for ``minimum``/``maximum``."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            '`FieldBound(id, summary, path, minimum=, maximum=, message="", when=...)`',
            "an integer field within bounds (an unset one passes)",
            "`Invalid value` at the field: `message`, or the apiserver's `... in body should be greater than "
            "or equal to N`",
            "`minimum`/`maximum` without a message or condition; otherwise a CRD rule",
        ),
        (
            "`FieldBound(..., message=..., keyword=True)`",
            "a bound the webhook says in Kubernetes' words and the apiserver in its own",
            "`Invalid value: message`",
            "`minimum`/`maximum`",
        ),
    )

    id: str
    summary: str
    path: str | tuple[str, ...]
    minimum: int | None = None
    maximum: int | None = None
    message: str = ""
    when: When | None = None
    why: str = ""
    # An integer: another type is refused with ``message`` too (a field of an object the CRD keeps
    # whole, whose types no structural schema check reads).
    integer: bool = False
    # The schema's ``minimum``/``maximum`` even with a ``message``: the apiserver refuses the same
    # values in its own words (a pod's container port, which Kubernetes' validation words as the webhook does).
    keyword: bool = False


@dataclass(frozen=True)
class StringField(_FieldForm):
    """A string field that matches ``pattern``, is ``min_length`` to ``max_length`` characters
    long and is one of ``enum`` (each when given; an unset field passes). Without ``message`` each
    check is its schema keyword, in the apiserver's words (``Unsupported value``, ``... in body
    should match '<pattern>'``, ``Too long``, ``... should be at least N chars long``); with one, a
    CRD rule whose ``Invalid value`` says ``message``."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            '`StringField(id, summary, path, pattern=, min_length=, max_length=, enum=(), message="", when=...)`',
            "a string of the pattern (searched, as CEL and the schema do), lengths and values",
            "without `message` each check in its keyword's words (`... should match '<pattern>'`, `Too "
            "long`, `... should be at least N chars long`, `Unsupported value`); with one, `Invalid value: "
            "message`",
            "`pattern`, `minLength`, `maxLength`, `enum` without a message or condition; otherwise a CRD rule",
        ),
        (
            "`StringField(id, summary, path, label=True)`",
            'a DNS-1123 label; "" passes (a `RequiredField`\'s)',
            "`Invalid value` for each problem, in Kubernetes' validation's words",
            "`pattern` and `maxLength: 63` (the apiserver refuses the same values in its own words: no "
            "keyword says Kubernetes')",
        ),
        (
            '`StringField(id, summary, path, syntax="port-name"` or `"env-var-name")`',
            "as `label`, an IANA service name (a container port's) or an environment variable's name "
            "(printable ASCII but `=`)",
            "`Invalid value` for each problem, in Kubernetes' words; the record lists each message exactly",
            "`pattern` (and `maxLength: 15` for a port name)",
        ),
        (
            "`...(string=True)` on `RequiredField`, `StringField`; `FieldBound(integer=True)`",
            "a field of an object the CRD keeps whole (a pod template's), whose types no structural schema "
            "check reads: another type is refused",
            "`must be of type string` (`Unsupported value` with an `enum`); a bound's `message`",
            "the schema's `type`, given by the template's schema",
        ),
    )

    id: str
    summary: str
    path: str | tuple[str, ...]
    pattern: str = ""
    min_length: int | None = None
    max_length: int | None = None
    enum: tuple[str, ...] = ()
    message: str = ""
    when: When | None = None
    why: str = ""
    # A DNS-1123 label, each problem in Kubernetes' own words (its validation's, which no schema
    # keyword says: the keywords refuse the same values in theirs); "" passes (a RequiredField's).
    label: bool = False
    # Another name of Kubernetes' validation, as ``label``: "port-name" (IANA service name) or
    # "env-var-name" (printable ASCII but '='); "" passes (a RequiredField's).
    syntax: str = ""
    # A string: another type is refused, ``Unsupported value`` with an ``enum``, else ``Invalid value:
    # must be of type string`` (a field of an object the CRD keeps whole, whose types no structural
    # schema check reads).
    string: bool = False


@dataclass(frozen=True)
class AtMostOneOf(_FieldForm):
    """Of the fields (or map keys, ``[Chief]``) of the object at ``path``, at most one is set.
    ``Forbidden`` at the object, with ``message``."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`AtMostOneOf(id, summary, path, fields, message)`",
            "of the object's fields or map keys (`[Chief]`), at most one is set",
            "`Forbidden` at the object",
            "a CRD rule on the object",
        ),
    )

    id: str
    summary: str
    path: str
    fields: tuple[str, ...]
    message: str
    why: str = ""


FIELD_FORMS = (RequiredField, ForbiddenField, FieldBound, StringField, AtMostOneOf)
FieldForm = RequiredField | ForbiddenField | FieldBound | StringField | AtMostOneOf

# A DNS-1123 label or "" (an empty one is a RequiredField's to refuse, in its words), and what the
# webhook says of one that is not (jobgate.rules.names.dns1123_label_problems).
OPTIONAL_LABEL_PATTERN = "^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$"
LABEL_PROBLEM = "^(" + re.escape(DNS1123_LABEL_MESSAGE) + "|must be no more than 63 )"

# The names of Kubernetes' validation a StringField's ``syntax`` (``label``) checks: the schema
# keywords that refuse the same values (in the apiserver's words) and every problem the webhook says.
# The IANA service name rules without look-arounds (the schema's regular expressions are RE2): groups
# of letters and digits joined by single hyphens, one letter at least; empty means no name.
PORT_NAME_PATTERN = "^(([a-z0-9]+-)*[0-9]*[a-z][a-z0-9]*(-[a-z0-9]+)*)?$"
ENV_VAR_NAME_PATTERN = "^[ -<>-~]+$"  # printable ASCII except '='


SYNTAXES: dict[str, tuple[dict[str, object], tuple[str, ...]]] = {
    "label": (
        {"pattern": OPTIONAL_LABEL_PATTERN, "maxLength": LABEL_MAX_LENGTH},
        (max_length_message(LABEL_MAX_LENGTH), DNS1123_LABEL_MESSAGE),
    ),
    "port-name": (
        {"pattern": PORT_NAME_PATTERN, "maxLength": PORT_NAME_MAX_LENGTH},
        (max_length_message(PORT_NAME_MAX_LENGTH), *PORT_NAME_PROBLEMS),
    ),
    # "" is refused by the pattern too: such a name is a RequiredField's (empty_is_unset) in the webhook.
    "env-var-name": ({"pattern": ENV_VAR_NAME_PATTERN}, (ENV_VAR_NAME_MESSAGE,)),
}


_STEP = re.compile(r"\[\*\]|\{\*\}|\[[^\]*]+\]|[^.\[\]{}]+")
WILDCARDS = ("[*]", "{*}")


def field_steps(path: str) -> tuple[str, ...]:
    """The steps of a field form's path: names, ``[*]``, ``{*}`` and ``[key]``."""
    steps = tuple(_STEP.findall(path))
    if not steps or render_steps(steps, dots=True) != path or steps[0].startswith(("[", "{")):
        raise FormError(f"not a field path: {path!r}")
    return steps


def _is_key(step: str) -> bool:
    return step.startswith("[") and step not in WILDCARDS


def render_steps(steps: Sequence[str], *, dots: bool = False) -> str:
    """The path as written (``dots``) or as the catalogue's ``Produces`` matches it (``[*]`` for both
    wildcards)."""
    out = ""
    for step in steps:
        if step in WILDCARDS:
            out += step if dots else "[*]"
        elif _is_key(step):
            out += step
        else:
            out += ("." if out else "") + step
    return out


def field_paths(d: FieldForm) -> tuple[str, ...]:
    return (d.path,) if isinstance(d.path, str) else d.path


class Site:
    """One path of a field form: where it sits (``scope``), the field from there (``target``), its
    condition from there (``when``: steps, value)."""

    def __init__(self, d: FieldForm, path: str) -> None:
        steps = field_steps(path)
        if steps[-1] in WILDCARDS:
            raise FormError(f"{d.id}: {path} names every entry, not a field")
        # AtMostOneOf names the object whose fields it counts: the check sits on it.
        container = steps if isinstance(d, AtMostOneOf) else steps[:-1]
        when = None if isinstance(d, AtMostOneOf) else d.when
        when_steps = field_steps(when.path) if when is not None else None
        common = container
        if when_steps is not None:
            common = tuple(a for a, _ in _takewhile_equal(container, when_steps[:-1]))
        # A key is no place in the schema: the check sits on the map and reads the key.
        keys = [i for i, s in enumerate(common) if _is_key(s)]
        self.scope = common[: keys[0]] if keys else common
        self.target = steps[len(self.scope) :]
        self.when = None if when_steps is None or when is None else (when_steps[len(self.scope) :], when.value)
        beyond = [*self.target, *(self.when[0] if self.when else ())]
        if any(s in WILDCARDS for s in beyond):
            raise FormError(f"{d.id}: the condition {when.path if when else ''} is out of the reach of {path}")
        self.path = path
        self.produced = render_steps(steps)

    @property
    def location(self) -> tuple[str, ...]:
        return tuple({"[*]": LIST_ITEMS, "{*}": MAP_VALUES}.get(s, s) for s in self.scope)

    @property
    def plain(self) -> bool:
        """A single field of the scope's object, no condition: a schema keyword can say it."""
        return self.when is None and len(self.target) == 1 and not _is_key(self.target[0])

    def python(self) -> str:
        return f"scope={self.scope!r}, target={self.target!r}, when={self.when!r}"

    # CEL from the scope's object (self).
    def at(self, steps: Sequence[str]) -> str:
        out = "self"
        for step in steps:
            out += f"[{cel_string(step[1:-1])}]" if _is_key(step) else f".{step}"
        return out

    def present(self, steps: Sequence[str]) -> str:
        """CEL true when every step is there (the field, or the map's key)."""
        checks = []
        for i, step in enumerate(steps):
            checks.append(
                f"{cel_string(step[1:-1])} in {self.at(steps[:i])}"
                if _is_key(step)
                else f"has({self.at(steps[: i + 1])})"
            )
        return " && ".join(checks) or "true"

    def is_set(self) -> str:
        """CEL true when the target is there, its parent known to be (the guard says so)."""
        last = self.target[-1]
        if _is_key(last):
            return f"{cel_string(last[1:-1])} in {self.at(self.target[:-1])}"
        return f"has({self.at(self.target)})"

    def guard(self) -> str:
        """CEL true when the check does not apply: the condition fails or the field's parent is not there."""
        parts = []
        if self.when is not None:
            steps, value = self.when
            parts.append(f"!({self.present(steps)} && {self.at(steps)} == {cel_literal(value)})")
        if len(self.target) > 1:
            parts.append(f"!({self.present(self.target[:-1])})")
        return " || ".join(parts)

    def field_path(self) -> str:
        return "".join(f"[{cel_string(s[1:-1])}]" if _is_key(s) else f".{s}" for s in self.target)

    def validation(self, holds: str, message: str, reason: str = "") -> Validation:
        guard = self.guard()
        return Validation(
            rule=f"{guard} || {holds}" if guard else holds, message=message, field_path=self.field_path(), reason=reason
        )


def cel_present(root: str, steps: Sequence[str]) -> str:
    """CEL true when every step from ``root`` is there (a field, or a map's key)."""
    checks, at = [], root
    for step in steps:
        if _is_key(step):
            checks.append(f"{cel_string(step[1:-1])} in {at}")
            at += f"[{cel_string(step[1:-1])}]"
        else:
            at += f".{step}"
            checks.append(f"has({at})")
    return " && ".join(checks)


def _takewhile_equal(a: Sequence[str], b: Sequence[str]) -> list[tuple[str, str]]:
    out = []
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        out.append((x, y))
    return out


def _needs_message(d: FieldForm, site: Site) -> None:
    if not d.message:
        raise FormError(f"{d.id}: {site.path} needs a CRD rule (a condition, a map key), which needs a message")


def _field_parts(d: FieldForm) -> tuple[list[Produces], list[Placement], bool]:
    """(Produces, placements, whether any is a CRD rule) of one field declaration."""
    produces: list[Produces] = []
    placements: list[Placement] = []
    crd_rule = False
    for path in field_paths(d):
        site = Site(d, path)
        field = site.at(site.target)
        if isinstance(d, AtMostOneOf):
            holder = site.at(site.target)
            count = " + ".join(
                f"({cel_string(f[1:-1])} in {holder} ? 1 : 0)" if _is_key(f) else f"(has({holder}.{f}) ? 1 : 0)"
                for f in d.fields
            )
            there = site.present(site.target) if site.target else ""
            holds = f"{count} <= 1"
            produces.append(Produces(site.produced, "FORBIDDEN", exact_detail(d.message)))
            placements.append(
                Placement(
                    site.location,
                    validation=Validation(
                        rule=f"!({there}) || {holds}" if there else holds,
                        message=d.message,
                        field_path=site.field_path(),
                        reason="FieldValueForbidden",
                    ),
                )
            )
        elif isinstance(d, RequiredField):
            if site.plain and not d.message and (not d.empty_is_unset or d.string):
                produces.append(Produces(site.produced, "REQUIRED", "^$"))
                placements.append(Placement(site.location, {"required": [site.target[0]]}))
                if d.empty_is_unset:
                    # A string's "": the apiserver refuses it in its own words (at least 1 chars long).
                    placements.append(Placement((*site.location, site.target[0]), {"minLength": 1}))
                continue
            _needs_message(d, site)
            holds = f"{site.is_set()} && {field} != ''" if d.empty_is_unset else site.is_set()
            produces.append(Produces(site.produced, "REQUIRED", exact_detail(d.message)))
            placements.append(
                Placement(site.location, validation=site.validation(holds, d.message, "FieldValueRequired"))
            )
        elif isinstance(d, ForbiddenField):
            _needs_message(d, site)
            absent = f"!{site.is_set()}"
            holds = f"{absent} || {field} == ''" if d.empty_is_unset else absent
            produces.append(Produces(site.produced, "FORBIDDEN", exact_detail(d.message)))
            placements.append(
                Placement(site.location, validation=site.validation(holds, d.message, "FieldValueForbidden"))
            )
        elif isinstance(d, FieldBound):
            if d.minimum is None and d.maximum is None:
                raise FormError(f"{d.id}: a bound needs a minimum or a maximum")
            if site.plain and (not d.message or d.keyword):
                bounds = {k: v for k, v in (("minimum", d.minimum), ("maximum", d.maximum)) if v is not None}
                produces.append(
                    Produces(site.produced, "INVALID", exact_detail(d.message))
                    if d.message
                    else Produces(site.produced, "INVALID", "^.* in body should be (greater|less) than or equal to ")
                )
                placements.append(Placement((*site.location, site.target[0]), bounds))
                continue
            _needs_message(d, site)
            checks = [f"{field} >= {d.minimum}"] if d.minimum is not None else []
            checks += [f"{field} <= {d.maximum}"] if d.maximum is not None else []
            if d.minimum is not None and d.minimum == d.maximum:
                checks = [f"{field} == {d.minimum}"]
            holds = f"!{site.is_set()} || " + " && ".join(checks)
            produces.append(Produces(site.produced, "INVALID", exact_detail(d.message)))
            placements.append(Placement(site.location, validation=site.validation(holds, d.message)))
        else:
            if d.label or d.syntax:
                if d.pattern or d.enum or d.min_length is not None or d.max_length is not None or d.message:
                    raise FormError(f"{d.id}: a label says its own pattern, length and words")
                if not site.plain:
                    raise FormError(f"{d.id}: a label is checked by schema keywords: a field, no condition")
                if (d.syntax or "label") not in SYNTAXES or (d.label and d.syntax):
                    raise FormError(f"{d.id}: no syntax {d.syntax!r} (one of {sorted(SYNTAXES)})")
                keywords, messages = SYNTAXES[d.syntax or "label"]
                produces += [Produces(site.produced, "INVALID", exact_detail(m)) for m in messages]
                placements.append(Placement((*site.location, site.target[0]), dict(keywords)))
                continue
            if not (d.pattern or d.enum or d.min_length is not None or d.max_length is not None):
                raise FormError(f"{d.id}: a string form needs a pattern, a length or values")
            if site.plain and not d.message:
                keywords: dict[str, object] = {}
                if d.pattern:
                    keywords["pattern"] = d.pattern
                    produces.append(Produces(site.produced, "INVALID", "^.* in body should match "))
                if d.min_length is not None:
                    keywords["minLength"] = d.min_length
                    produces.append(Produces(site.produced, "INVALID", "^.* in body should be at least "))
                if d.max_length is not None:
                    keywords["maxLength"] = d.max_length
                    produces.append(Produces(site.produced, "TOO_LONG"))
                if d.enum:
                    keywords["enum"] = list(d.enum)
                    produces.append(
                        Produces(site.produced, "NOT_SUPPORTED", exact_detail(not_supported((), "", d.enum).detail))
                    )
                placements.append(Placement((*site.location, site.target[0]), keywords))
                continue
            _needs_message(d, site)
            checks = [f"size({field}) <= {d.max_length}"] if d.max_length is not None else []
            checks += [f"size({field}) >= {d.min_length}"] if d.min_length is not None else []
            checks += [f"{field}.matches({cel_raw_string(d.pattern)})"] if d.pattern else []
            checks += [f"{field} in {cel_list(d.enum)}"] if d.enum else []
            holds = f"!{site.is_set()} || " + " && ".join(checks)
            produces.append(Produces(site.produced, "INVALID", exact_detail(d.message)))
            placements.append(Placement(site.location, validation=site.validation(holds, d.message)))
        crd_rule = True
    return produces, placements, crd_rule


def _field_rule(parts: Sequence[FieldForm]) -> Rule:
    """The rule of the field declarations that share an id (in declaration order)."""
    produces: list[Produces] = []
    placements: list[Placement] = []
    crd_rule = False
    for d in parts:
        p, q, c = _field_parts(d)
        produces += p
        placements += q
        crd_rule = crd_rule or c
    first = parts[0]
    return Rule(
        first.id,
        first.summary,
        Where.CRD_RULE if crd_rule else Where.SCHEMA,
        tuple(produces),
        tuple(placements),
        why=next((d.why for d in parts if d.why), ""),
    )


def _field_lines(d: FieldForm, site: Site) -> list[str]:
    """The Python check of one path of a field declaration in a kind's generated check: written out
    where the path reaches one object (no list item or map value on the way), else the form's call."""
    if any(s in WILDCARDS for s in site.scope) or isinstance(d, StringField) or getattr(d, "integer", False):
        return [f"        errors.extend({_field_call(d, site)})"]
    steps = tuple(s[1:-1] if _is_key(s) else s for s in (*site.scope, *site.target))
    parts = [f"Key({s[1:-1]!r})" if _is_key(s) else repr(s) for s in (*site.scope, *site.target)]
    error_path = f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"
    lines = []
    if site.when is not None:
        when_steps = tuple(s[1:-1] if _is_key(s) else s for s in site.when[0])
        # The condition is read from the scope's object, as the form's function reads it.
        lines += [
            f"        node = get(obj, {steps[: len(site.scope)]!r})",
            f"        if isinstance(node, dict) and get(node, {when_steps!r}) == {site.when[1]!r}:",
        ]
        indent = "            "
        lines.append(f"{indent}parent = get(node, {steps[len(site.scope) : -1]!r})")
    else:
        # The objects on the way read one by one (MISSING where one is not there).
        indent = "        "
        reached = steps if isinstance(d, AtMostOneOf) else steps[:-1]
        written = (*site.scope, *site.target)
        # A map key names no variable: at_<i> then. The last object read is the one the check reads.
        names = [
            f"at_{i}" if _is_key(w) else n
            for i, (n, w) in enumerate(zip(step_names(reached, CHECK_NAMES), written, strict=False))
        ]
        last = "holder" if isinstance(d, AtMostOneOf) else "parent"
        if names:
            names[-1] = last
            lines += read_lines(["obj", *names[:-1]], names, reached)
        else:
            lines.append(f"{indent}{last} = obj")
    if isinstance(d, AtMostOneOf):
        counted = " + ".join(f"(holder.get({f[1:-1] if _is_key(f) else f!r}) is not None)" for f in d.fields)
        return [
            *lines,
            f"{indent}if isinstance(holder, dict) and {counted} > 1:",
            f"{indent}    errors.append(forbidden({error_path}, {d.message!r}))",
        ]
    lines.append(f"{indent}value = parent.get({steps[-1]!r}) if isinstance(parent, dict) else MISSING")
    if isinstance(d, RequiredField | ForbiddenField):
        unset = '(value is None or value == "")' if d.empty_is_unset else "value is None"
        if isinstance(d, ForbiddenField):
            return [*lines, f"{indent}if value is not MISSING and not {unset}:",
                    f"{indent}    errors.append(forbidden({error_path}, {d.message!r}))"]  # fmt: skip
        lines += [
            f"{indent}if value is not MISSING and {unset}:",
            f"{indent}    errors.append(required({error_path}, {d.message!r}))",
        ]
        if d.string:
            lines += [
                f"{indent}elif value is not MISSING and type(value) is not str:",
                f"{indent}    errors.append(invalid({error_path}, value, MUST_BE_STRING))",
            ]
        return lines
    assert isinstance(d, FieldBound)
    rendered = render_steps(site.scope + site.target)
    lines.append(f"{indent}number = as_int(value)")
    first = "if"
    for bound, compare, words in ((d.minimum, "<", "greater"), (d.maximum, ">", "less")):
        if bound is None:
            continue
        detail = d.message or f"{rendered} in body should be {words} than or equal to {bound}"
        lines += [
            f"{indent}{first} number is not None and number {compare} {bound}:",
            f"{indent}    errors.append(invalid({error_path}, number, {detail!r}))",
        ]
        first = "elif"
    return lines


def field_calls(d: FieldForm) -> list[str]:
    """The Python check of a field declaration by the form's function: one call per path."""
    return [_field_call(d, Site(d, path)) for path in field_paths(d)]


def _field_call(d: FieldForm, site: Site) -> str:
    """The call of the form's function that checks one path of a field declaration."""
    where = site.python()
    if isinstance(d, AtMostOneOf):
        where = f"scope={site.scope!r}, target={site.target!r}"
        return f"at_most_one_of(obj, {where}, fields={d.fields!r}, message={d.message!r})"
    if isinstance(d, RequiredField | ForbiddenField):
        function = "required_field" if isinstance(d, RequiredField) else "forbidden_field"
        string = ", string=True" if isinstance(d, RequiredField) and d.string else ""
        return f"{function}(obj, {where}, empty_is_unset={d.empty_is_unset!r}, message={d.message!r}{string})"
    if isinstance(d, FieldBound):
        integer = ", integer=True" if d.integer else ""
        return f"field_bound(obj, {where}, bounds={(d.minimum, d.maximum)!r}, message={d.message!r}{integer})"
    more = (f", syntax={d.syntax!r}" if d.syntax else "") + (", string=True" if d.string else "")
    return (
        f"string_field(obj, {where}, pattern={d.pattern!r}, lengths={(d.min_length, d.max_length)!r}, "
        f"enum={d.enum!r}, message={d.message!r}, label={d.label!r}{more})"
    )


def _field_cost(d: FieldForm) -> str:
    sites = [Site(d, p) for p in field_paths(d)]
    keyword = all(s.plain for s in sites) and not d.message and not getattr(d, "empty_is_unset", False)
    if keyword and not isinstance(d, ForbiddenField | AtMostOneOf):
        return "constant (schema keyword)"
    each = " on each entry" if any(s in WILDCARDS for site in sites for s in site.scope) else ""
    if isinstance(d, StringField) and d.pattern:
        return f"linear in the string's length (CRD rule{each})"
    return f"constant (CRD rule{each})"
