"""The role and list forms: ``MaxItems``, ``UniqueBy``, ``RequiredRoles``, ``ForbiddenRoles``,
``RoleFieldBound``, ``AtMostSum``, ``Immutable`` (declaration, CEL and placement, Python call, cost).
"""

from __future__ import annotations

from dataclasses import dataclass

from jobgate.forms.base import (
    AT_LIST,
    Declaration,
    Declarations,
    FormError,
    Roles,
    When,
    cel_has_chain,
    cel_literal,
    escape_detail,
    exact_detail,
    path_steps,
    python_condition,
)
from jobgate.forms.catalogue import (
    LIST_ITEMS,
    Location,
    Placement,
    Produces,
    Rule,
    Validation,
    Where,
    cel_list,
    cel_string,
    unique_field,
)


@dataclass(frozen=True)
class MaxItems(Declaration):
    """Lists of at most so many entries, ``(path, limit)`` each (a schema keyword; a bound the CEL
    cost estimate needs)."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`MaxItems(id, ((path, limit), ...))`",
            "lists of at most so many entries",
            "`Too many` at the list",
            "`maxItems`",
        ),
    )

    id: str
    lists: tuple[tuple[str, int], ...]
    summary: str = ""
    why: str = ""

    def rule(self, decls: Declarations) -> Rule:
        return Rule(
            self.id,
            self.summary or "; ".join(f"{path}: at most {limit} entries" for path, limit in self.lists),
            Where.SCHEMA,
            tuple(
                Produces(path, "TOO_MANY", exact_detail(f"must have at most {limit} items"))
                for path, limit in self.lists
            ),
            tuple(Placement(path_steps(path), {"maxItems": limit}) for path, limit in self.lists),
            why=self.why,
        )

    def python_call(self) -> str:
        return f"max_items(obj, {tuple((path_steps(path), limit) for path, limit in self.lists)!r})"

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [(self.id, "constant")]


@dataclass(frozen=True)
class UniqueBy(Declaration):
    """No two entries of a list with the same ``key`` (the later one is the duplicate).

    Where the key is required by the schema and has no "" that a default reads as another value,
    it compiles to a list-map key (``x-kubernetes-list-type: map``), which the apiserver checks in
    linear time; otherwise to a CRD rule. ``among``: only these values count, and the list then has
    at most ``len(among)`` entries (a longer one holds a duplicate)."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`UniqueBy(id, list, key, among=())`",
            "no two entries with the same key; the later one is the duplicate",
            "`Duplicate value` at `<list>[i].<key>`",
            'a list-map key (`x-kubernetes-list-type: map`), linear, when no default rereads "" as another '
            "key; otherwise a CRD rule through the default, the list bounded by `len(among)`",
        ),
        (
            "`UniqueBy(..., list_map=False)`",
            "as `UniqueBy`, for a list whose entries the key does not identify (or may lack it)",
            "`Duplicate value` at `<list>[i].<key>`",
            "a CRD rule on the list, quadratic, bounded by its `maxItems`",
        ),
    )

    id: str
    list: str
    key: str
    among: tuple[str, ...] = ()
    summary: str = ""
    # False: a CRD rule even where a list-map key could say it, for a list whose entries the key does
    # not identify for server-side apply (or whose key may be missing): no two entries with the same
    # non-empty key, reported at the list, bounded by the list's maxItems.
    list_map: bool = True

    def rule(self, decls: Declarations) -> Rule:
        return _unique(decls, self)

    def python_call(self) -> str:
        return f"unique_by(obj, {path_steps(self.list)!r}, {self.key!r}, {self.among!r})"

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        default = decls.item_default(self.list, self.key)
        linear = (default is None or not default.empty_is_unset) and self.list_map
        if not self.list_map and not (default is not None and default.empty_is_unset):
            return [(self.id, "quadratic, bounded by the list's maxItems (CRD rule)")]
        return [(self.id, "linear (list-map key)" if linear else f"quadratic, bounded by {len(self.among)} entries")]


@dataclass(frozen=True)
class RequiredRoles(Declaration):
    """When ``when`` holds, the list holds an entry of each of ``roles``; reported at the list,
    ``message`` formatted with ``{role}``."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`RequiredRoles(id, summary, roles, (role...), message, when=When(path, value))`",
            "when the condition holds, an entry of each role",
            "`Required value` at the list, `{role}` in the message",
            "a CRD rule per role on the list's parent",
        ),
    )

    id: str
    summary: str
    of: Roles
    roles: tuple[str, ...]
    message: str
    when: When | None = None

    def rule(self, decls: Declarations) -> Rule:
        return _required_roles(decls, self)

    def python_call(self) -> str:
        return (
            f"required_roles(obj, path={path_steps(self.of.path)!r}, key={self.of.key!r}, among={self.of.among!r}, "
            f"roles={self.roles!r}, when={python_condition(self.when)!r}, message={self.message!r})"
        )


@dataclass(frozen=True)
class ForbiddenRoles(Declaration):
    """When ``when`` holds, the list holds no entry of ``roles``; reported at that entry's key."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`ForbiddenRoles(id, summary, roles, (role...), message, when=...)`",
            "when the condition holds, no entry of these roles",
            "`Invalid value` at the first entry's key",
            "a CRD rule on the list's parent",
        ),
    )

    id: str
    summary: str
    of: Roles
    roles: tuple[str, ...]
    message: str
    when: When | None = None

    def rule(self, decls: Declarations) -> Rule:
        return _forbidden_roles(decls, self)

    def python_call(self) -> str:
        return (
            f"forbidden_roles(obj, path={path_steps(self.of.path)!r}, key={self.of.key!r}, among={self.of.among!r}, "
            f"roles={self.roles!r}, when={python_condition(self.when)!r}, message={self.message!r})"
        )


@dataclass(frozen=True)
class RoleFieldBound(Declaration):
    """An integer field of the role's entry within [minimum, maximum] (an unset field passes).
    ``every``: of each entry of the role (a duplicate too), else of the first."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`RoleFieldBound(id, summary, roles, role, field, message, minimum=, maximum=, every=False, when=...)`",
            "an integer field of the role's first entry (`every`: of each) within bounds",
            "`Invalid value` at the field",
            "a CRD rule on the entry (`every`) or on the list's parent",
        ),
    )

    id: str
    summary: str
    of: Roles
    role: str
    field: str
    message: str
    minimum: int | None = None
    maximum: int | None = None
    every: bool = False
    when: When | None = None
    why: str = ""

    def rule(self, decls: Declarations) -> Rule:
        return _role_bound(decls, self)

    def python_call(self) -> str:
        return (
            f"role_field_bound(obj, path={path_steps(self.of.path)!r}, key={self.of.key!r}, among={self.of.among!r}, "
            f"role={self.role!r}, field={self.field!r}, bounds={(self.minimum, self.maximum)!r}, every={self.every!r}, "
            f"when={python_condition(self.when)!r}, message={self.message!r})"
        )


@dataclass(frozen=True)
class AtMostSum(Declaration):
    """The integer at ``path`` is at most the sum of ``field`` over the entries of ``list`` (an entry
    without it counts ``unset``; no list sums to 0): a count across replicas. ``update_message``:
    the words on UPDATE, when they differ (Volcano says it otherwise)."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`AtMostSum(id, summary, path, list, field, message, unset=0)`",
            "an integer at most the sum of a field over a list's entries",
            "`Invalid value` at the integer",
            "a CRD rule on their parent",
        ),
    )

    id: str
    summary: str
    path: str
    list: str
    field: str
    message: str
    unset: int = 0
    update_message: str = ""

    def rule(self, decls: Declarations) -> Rule:
        return _at_most_sum(decls, self)

    def python_call(self) -> str:
        return (
            f"at_most_sum(obj, old, path={path_steps(self.path)!r}, items_path={path_steps(self.list)!r}, "
            f"field={self.field!r}, "
            f"unset={self.unset!r}, message={self.message!r}, update_message={self.update_message!r})"
        )


@dataclass(frozen=True)
class Immutable(Declaration):
    """On UPDATE the field is neither set, removed nor changed (a CRD transition rule)."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            '`Immutable(id, summary, path, message="field is immutable")`',
            "on UPDATE the field is neither set, removed nor changed (null counts as unset)",
            "`Forbidden` at the field",
            "a transition rule on `spec`, which every version of the job has",
        ),
    )

    id: str
    summary: str
    path: str
    message: str = "field is immutable"

    def rule(self, decls: Declarations) -> Rule:
        return _immutable(decls, self)

    def python_call(self) -> str:
        return f"immutable(obj, old, {path_steps(self.path)!r}, {self.message!r})"

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [(self.id, "constant")]


def _unique(decls: Declarations, d: UniqueBy) -> Rule:
    path = path_steps(d.list)
    summary = d.summary or f"{d.list}: each {d.key} once"
    default = decls.item_default(d.list, d.key)
    if not d.list_map and (default is None or not default.empty_is_unset):
        # Each non-empty key once, by a CRD rule on the list (quadratic, bounded by its maxItems).
        return Rule(
            d.id,
            summary,
            Where.CRD_RULE,
            (Produces(f"{d.list}[*].{d.key}", "DUPLICATE", apiserver_drops=2),),
            (Placement(path, validation=unique_field(d.key, empty_counts=False)),),
            why=AT_LIST,
        )
    if default is None or not default.empty_is_unset:
        # A key the schema requires (or defaults) and that no default rereads: a list-map key,
        # which the apiserver checks in linear time and reports at the duplicate entry.
        return Rule(
            d.id,
            summary,
            Where.SCHEMA,
            (Produces(f"{d.list}[*].{d.key}", "DUPLICATE", apiserver_drops=1),),
            (Placement(path, {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": [d.key]}),),
            why="reported at the duplicate entry (a list-map key names the entry, not its key)",
        )
    # "" reads as the default, which a list-map key would count as another value: a CRD rule that
    # reads through the default instead; bounded by the known values (a longer list holds a duplicate).
    if not d.among:
        raise FormError(f"{d.id}: a key read through a default needs its known values (among) for a bound")
    key_r, key_q = decls.key(d, "r"), decls.key(d, "q")
    return Rule(
        d.id,
        summary,
        Where.CRD_RULE,
        (Produces(f"{d.list}[*].{d.key}", "DUPLICATE", apiserver_drops=2),),
        (
            Placement(path, {"maxItems": len(d.among)}),
            Placement(
                path,
                validation=Validation(
                    rule=f"self.all(r, self.exists_one(q, {key_q} == {key_r}))",
                    message_expression="'Duplicate value: \"' + "
                    f"self.map(r, {key_r}).filter(t, self.filter(q, {decls.key(d, 'q')} == t).size() > 1)[0] + '\"'",
                ),
            ),
        ),
        why=AT_LIST,
    )


def _site(decls: Declarations, roles_path: str, when: When | None, rule_id: str) -> tuple[Location, str, str]:
    """Where a rule over a list (and its condition) sits: the list's parent, which sees both.
    (placement, CEL of the list from there, CEL of the condition or 'true')."""
    parent, name = roles_path.rsplit(".", 1)
    condition = "true"
    if when is not None:
        when_parent, when_name = when.path.rsplit(".", 1)
        if when_parent != parent:
            raise FormError(f"{rule_id}: the condition {when.path} is not beside {roles_path}")
        condition = f"(has(self.{when_name}) && self.{when_name} == {cel_literal(when.value)})"
    return path_steps(parent), f"self.{name}", condition


def _required_roles(decls: Declarations, d: RequiredRoles) -> Rule:
    at, items, condition = _site(decls, d.of.path, d.when, d.id)
    name = items.removeprefix("self.")
    prefix = escape_detail(d.message.split("{role}")[0])
    return Rule(
        d.id,
        d.summary,
        Where.CRD_RULE,
        (Produces(d.of.path, "REQUIRED", "^" + prefix + "(" + "|".join(d.roles) + ")$"),),
        tuple(
            Placement(
                at,
                validation=Validation(
                    rule=f"!{condition} || !has({items}) || "
                    f"{items}.exists(r, {decls.key(d.of, 'r')} == {cel_string(role)})",
                    message=d.message.format(role=role),
                    field_path=f".{name}",
                    reason="FieldValueRequired",
                ),
            )
            for role in d.roles
        ),
    )


def _forbidden_roles(decls: Declarations, d: ForbiddenRoles) -> Rule:
    at, items, condition = _site(decls, d.of.path, d.when, d.id)
    name = items.removeprefix("self.")
    return Rule(
        d.id,
        d.summary,
        Where.CRD_RULE,
        (Produces(f"{d.of.path}[*].{d.of.key}", "INVALID", exact_detail(d.message), apiserver_drops=2),),
        (
            Placement(
                at,
                validation=Validation(
                    rule=f"!{condition} || !has({items}) || "
                    f"!{items}.exists(r, {decls.key(d.of, 'r')} in {cel_list(d.roles)})",
                    message=d.message,
                    field_path=f".{name}",
                ),
            ),
        ),
        why=AT_LIST,
    )


def _role_bound(decls: Declarations, d: RoleFieldBound) -> Rule:
    def within(value: str) -> str:
        checks = []
        if d.minimum is not None:
            checks.append(f"{value} >= {d.minimum}")
        if d.maximum is not None:
            checks.append(f"{value} <= {d.maximum}")
        if d.minimum is not None and d.minimum == d.maximum:
            checks = [f"{value} == {d.minimum}"]
        return " && ".join(checks) or "true"

    role = cel_string(d.role)
    produced = f"{d.of.path}[*].{d.field}"
    if d.every:
        # Each entry of the role: a rule on the entry, which names the field.
        if d.when is not None:
            raise FormError(f"{d.id}: a bound on every entry takes no condition")
        return Rule(
            d.id,
            d.summary,
            Where.CRD_RULE,
            (Produces(produced, "INVALID", exact_detail(d.message)),),
            (
                Placement(
                    (*path_steps(d.of.path), LIST_ITEMS),
                    validation=Validation(
                        rule=f"{decls.key(d.of, 'self')} != {role} || !has(self.{d.field}) || "
                        f"{within('self.' + d.field)}",
                        message=d.message,
                        field_path=f".{d.field}",
                    ),
                ),
            ),
            why=d.why,
        )
    at, items, condition = _site(decls, d.of.path, d.when, d.id)
    first = f"{items}.filter(r, {decls.key(d.of, 'r')} == {role})[0]"
    return Rule(
        d.id,
        d.summary,
        Where.CRD_RULE,
        (Produces(produced, "INVALID", exact_detail(d.message), apiserver_drops=2),),
        (
            Placement(
                at,
                validation=Validation(
                    # The webhook reads the first entry of the role (a second is a duplicate).
                    rule=f"!{condition} || !has({items}) || !{items}.exists(r, {decls.key(d.of, 'r')} == {role}) || "
                    f"!has({first}.{d.field}) || {within(first + '.' + d.field)}",
                    message=d.message,
                    field_path=f".{items.removeprefix('self.')}",
                ),
            ),
        ),
        why=d.why or AT_LIST,
    )


def _at_most_sum(decls: Declarations, d: AtMostSum) -> Rule:
    parent, name = d.path.rsplit(".", 1)
    list_parent, list_name = d.list.rsplit(".", 1)
    if parent != list_parent:
        raise FormError(f"{d.id}: {d.path} and {d.list} are not beside each other")
    items = f"self.{list_name}"
    total = f"(has({items}) ? {items}.map(e, has(e.{d.field}) ? e.{d.field} : {d.unset}).sum() : 0)"
    holds = f"!has(self.{name}) || self.{name} <= {total}"
    # The words of the operation, when they differ: a rule that reads oldSelf (optional, so that it
    # runs on CREATE too) knows which.
    cases = (
        (("oldSelf.hasValue()", d.message), ("!oldSelf.hasValue()", d.update_message))
        if d.update_message
        else (("false", d.message),)
    )
    return Rule(
        d.id,
        d.summary,
        Where.CRD_RULE,
        tuple(Produces(d.path, "INVALID", exact_detail(m)) for m in (d.message, d.update_message) if m),
        tuple(
            Placement(
                path_steps(parent),
                validation=Validation(
                    rule=holds if unless == "false" else f"{unless} || {holds}",
                    message=message,
                    field_path=f".{name}",
                    optional_old_self=unless != "false",
                ),
            )
            for unless, message in cases
        ),
    )


def _immutable(decls: Declarations, d: Immutable) -> Rule:
    # On the field's first step (spec), which every version of the job has: a transition rule
    # lower down would not run when an object on the way was added or removed.
    top, *rest = path_steps(d.path)
    if not rest:
        raise FormError(f"{d.id}: an immutable field below {top}")
    field = ".".join(rest)
    has_new, has_old = cel_has_chain("self", rest), cel_has_chain("oldSelf", rest)
    return Rule(
        d.id,
        d.summary,
        Where.TRANSITION,
        (Produces(d.path, "FORBIDDEN", exact_detail(d.message)),),
        (
            Placement(
                (top,),
                validation=Validation(
                    rule=f"{has_new} == {has_old} && (!{has_new} || self.{field} == oldSelf.{field})",
                    message=d.message,
                    field_path=f".{field}",
                    reason="FieldValueForbidden",
                ),
            ),
        ),
    )
