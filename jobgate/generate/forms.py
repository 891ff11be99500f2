"""Compiling rule forms (``jobgate/rules/forms.py``): to the catalogue's ``Rule``/``Default`` with
their apiserver placements and CEL, to the Python module the engine runs, and to a cost report.

Each form is compiled here once; a family lists declarations, never CEL or a check of its own.
"""

from __future__ import annotations

import dataclasses
import importlib
import itertools
import os
import re
from collections.abc import Iterable, Sequence

from jobgate import _generated
from jobgate.engine.fielderrors import not_supported
from jobgate.forms.catalogue import (
    LIST_ITEMS,
    MAP_VALUES,
    Default,
    Location,
    Placement,
    PolicyValidation,
    Produces,
    Rule,
    Validation,
    Where,
    cel_list,
    cel_raw_string,
    cel_string,
    first_message,
    unique_field,
)
from jobgate.rules.forms import (
    DEFAULT_FORMS,
    ENTRY_FORMS,
    FIELD_FORMS,
    REPLICA_MAP_DEFAULT_FORMS,
    RUN_POLICY_PLACES,
    VOLCANO_DEFAULT_FORMS,
    VOLCANO_FORMS,
    Acyclic,
    AtMostOneOf,
    AtMostSum,
    Bound,
    Bounds,
    ClaimVolumes,
    Declaration,
    DefaultField,
    DefaultFinishRules,
    DefaultIndexed,
    DefaultItemField,
    DefaultItemProduct,
    DefaultItemWhen,
    DefaultSum,
    DefaultTemplatePort,
    DefaultTypeField,
    DefaultTypeSpelling,
    EntriesUnchanged,
    FieldBound,
    FieldForm,
    FixedCount,
    FlagNamesEntry,
    ForbiddenField,
    ForbiddenRoles,
    Immutable,
    ImpliedKeys,
    IndexMaps,
    KnownKeys,
    KnownTypes,
    LifecyclePolicies,
    MaxItems,
    NamedEntries,
    NotBoth,
    RefersTo,
    RequiredField,
    RequiredItemField,
    RequiredList,
    RequiredRoles,
    RoleFieldBound,
    Roles,
    RunPolicyAtMostTotal,
    RunPolicyImmutable,
    Same,
    SameAll,
    SameUnlessBoth,
    Scalar,
    Scope,
    ScopeSite,
    Shape,
    StringField,
    Subdomain,
    Unchanged,
    UniqueBy,
    UniqueName,
    VolcanoForm,
    When,
)
from jobgate.rules.names import (
    DNS1123_LABEL_MESSAGE,
    DNS1123_SUBDOMAIN,
    DNS1123_SUBDOMAIN_MESSAGE,
    ENV_VAR_NAME_MESSAGE,
    LABEL_MAX_LENGTH,
    PORT_NAME_MAX_LENGTH,
    PORT_NAME_PROBLEMS,
    SUBDOMAIN_MAX_LENGTH,
    max_length_message,
)

# Found from the package, not from a module's __file__ (see jobgate/generate/schemas.py).
DECLARED_TABLE = os.path.join(os.path.dirname(_generated.__file__), "declared_rules.py")
AT_LIST = "reported at the list (a rule on a list cannot name the item)"


class FormError(ValueError):
    """A declaration its form cannot compile (a condition out of the rule's reach, ...)."""


def _path(text: str) -> tuple[str, ...]:
    return tuple(text.split("."))


def _exact(message: str) -> str:
    """The ``Produces`` detail of a message known in full: the message itself, anchored."""
    return "^" + _escape(message) + "$"


def _escape(text: str) -> str:
    """``re.escape`` of the characters a pattern reads, not of spaces and commas: the catalogue's
    details are shown in the docs' rule tables, which should read as the message."""
    return re.sub(r"([.^$*+?{}\[\]\\|()])", r"\\\1", text)


def _literal(value: Scalar | list[Scalar] | dict[str, Scalar]) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        # dyn(): a CEL map literal's values are of one type otherwise.
        return "{" + ", ".join(f"{cel_string(k)}: dyn({_literal(v)})" for k, v in value.items()) + "}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return cel_string(value)


class Declarations:
    """One kind's declarations: the rules and defaults they compile to, in declaration order."""

    def __init__(self, declared: Sequence[Declaration]) -> None:
        self.declared = tuple(declared)
        # A rule and a default may share an id (a field's default and its rule, as the catalogue has
        # them): the ids are checked among the rules and among the defaults. Field forms that share an
        # id are one rule (its checks); so may the defaults of one list or field be (an object and its
        # fields); any other id is declared once.
        for defaults in (True, False):
            kind = [d for d in self.declared if isinstance(d, DEFAULT_FORMS) == defaults]
            ids = [d.id for d in kind]
            twice = {i for i in ids if ids.count(i) > 1}
            shared = {d.id for d in kind if isinstance(d, (*FIELD_FORMS, DefaultItemField, DefaultField))}
            others = {d.id for d in kind if not isinstance(d, (*FIELD_FORMS, DefaultItemField, DefaultField))}
            mixed = {d.id for d in kind if isinstance(d, FIELD_FORMS)} & {
                d.id for d in kind if isinstance(d, DefaultItemField)
            }
            mixed |= {d.id for d in kind if isinstance(d, DefaultField)} & {
                d.id for d in kind if isinstance(d, DefaultItemField)
            }
            lists = {d.id: {o.list for o in kind if isinstance(o, DefaultItemField) and o.id == d.id} for d in kind}
            bad = (twice - shared) | (twice & others) | mixed | {i for i in twice if len(lists.get(i, ())) > 1}
            if bad:
                raise FormError(f"a declaration id twice: {sorted(bad)}")

    # --- reading through defaults ----------------------------------------------------------------

    def _item_default(self, list_path: str, field: str) -> DefaultItemField | None:
        return next(
            (d for d in self.declared if isinstance(d, DefaultItemField) and d.list == list_path and d.field == field),
            None,
        )

    def key(self, roles: Roles | UniqueBy, entry: str) -> str:
        """CEL of an entry's key as the webhook reads it once defaulted: a CRD rule may see a job
        that no policy defaulted (1.30 has no MutatingAdmissionPolicy; a schema default leaves "")."""
        list_path = roles.path if isinstance(roles, Roles) else roles.list
        default = self._item_default(list_path, roles.key)
        field = f"{entry}.{roles.key}"
        if default is None or isinstance(default.value, tuple):
            # No constant default (a derived one reads another field): the key as written.
            return f"(has({field}) ? {field} : '')"
        unset = f"!has({field}) || {field} == ''" if default.empty_is_unset else f"!has({field})"
        return f"({unset} ? {_literal(default.value)} : {field})"

    # --- the catalogue ---------------------------------------------------------------------------

    def rules(self) -> list[Rule]:
        out = []
        done: set[str] = set()
        for d in self.declared:
            if isinstance(d, DEFAULT_FORMS) or d.id in done:
                continue
            if isinstance(d, FIELD_FORMS):
                done.add(d.id)
                out.append(_field_rule([o for o in self.declared if isinstance(o, FIELD_FORMS) and o.id == d.id]))
            elif isinstance(d, LifecyclePolicies):
                out.extend(_lifecycle_policies(d))
            elif isinstance(d, ClaimVolumes):
                out.extend(_claim_volumes(d))
            elif isinstance(d, RefersTo):
                out += _entry_rules(d)
            elif isinstance(d, IndexMaps):
                out += _index_maps_rules(d)
            elif isinstance(d, NamedEntries):
                out += _named_entries_rules(d)
            elif isinstance(d, EntriesUnchanged):
                out.append(_entries_unchanged_rule(d))
            else:
                out.append(self._rule(d))
        return out

    def defaults(self) -> list[Default]:
        out: list[Default] = []
        for d in self.declared:
            if not isinstance(d, DEFAULT_FORMS):
                continue
            compiled = self._default(d)
            shared = next((i for i, o in enumerate(out) if o.id == d.id), None)
            if shared is None:
                out.append(compiled)
                continue
            # Defaults of one list that share an id: one default, its patches and placements in order.
            first = out[shared]
            placements = (*first.placements, *compiled.placements)
            out[shared] = Default(
                first.id,
                first.summary,
                Where.SCHEMA_DEFAULT if placements else Where.MUTATING_POLICY,
                (*first.patches, *compiled.patches),
                placements,
            )
        return out

    def _default(
        self,
        d: DefaultField
        | DefaultItemField
        | DefaultIndexed
        | DefaultSum
        | ImpliedKeys
        | DefaultItemWhen
        | DefaultItemProduct
        | DefaultTypeField
        | DefaultTypeSpelling
        | DefaultTemplatePort
        | DefaultFinishRules,
    ) -> Default:
        if isinstance(d, VOLCANO_DEFAULT_FORMS):
            return _volcano_default(d)
        if isinstance(d, DefaultTypeField):
            return _type_field_default(d)
        if isinstance(d, DefaultTypeSpelling):
            return _type_spelling_default(d)
        if isinstance(d, DefaultTemplatePort):
            return _template_port_default(d)
        if isinstance(d, DefaultFinishRules):
            return _finish_rules_default(d)
        literal = _literal(d.value) if not isinstance(d.value, tuple) else ""
        empty = _empty(d.value)
        also = f" (also when {'0' if empty == '0' else chr(34) * 2})" if d.empty_is_unset else ""
        if isinstance(d, DefaultField):
            path = _path(d.path)
            if len(path) < 2:
                raise FormError(f"{d.id}: a default sits under an object (spec), not at the root")
            field = "object." + d.path
            unset = f"!has({field})" + (f" || {field} == {empty}" if d.empty_is_unset else "")
            if len(path) > 2:
                # Under an object that exists: a default never creates its parents.
                unset = f"{_has_chain('object.' + path[0], path[1:-1])} && ({unset})"
            pointer = "/" + "/".join(path)
            if d.unless or d.when_set:
                # Another field replaces the default, or it is a role's: a policy patch only.
                others = [
                    f"!has(object.{o})"
                    if len(_path(o)) <= 2
                    else f"!{_has_chain('object.' + _path(o)[0], _path(o)[1:])}"
                    for o in d.unless
                ]
                others += [_present("object", field_steps(o)) for o in d.when_set]
                guarded = f"({unset})" if "||" in unset else unset
                patch = (
                    f"{' && '.join(others)} && {guarded} ? "
                    f"[JSONPatch{{op: 'add', path: '{pointer}', value: {literal}}}] : []"
                )
                return Default(d.id, d.summary or f"{path[-1]}: {literal}{also}", Where.MUTATING_POLICY, (patch,))
            patch = f"{unset} ? [JSONPatch{{op: 'add', path: '{pointer}', value: {literal}}}] : []"
            return Default(
                d.id,
                d.summary or f"{path[-1]}: {literal}{also}",
                Where.SCHEMA_DEFAULT,
                (patch,),
                (Placement(path, {"default": d.value}),),
            )
        path = _path(d.list)
        field = f"e.{d.field}"
        unset = f"!has({field})" + (f" || {field} == {empty}" if d.empty_is_unset else "")
        pointer = "/" + "/".join(path)
        if d.from_field:
            # Derived from another field of the entry: a policy patch only (a schema default is a constant).
            if not isinstance(d.value, tuple):
                raise FormError(f"{d.id}: a derived default lists the values it copies")
            source = f"e.{d.from_field}"
            patch = (
                f"has(object.{d.list}) ? object.{d.list}.transformList(i, e, ({unset}) && has({source}) && "
                f"{source} in {cel_list(d.value)}, "
                f"JSONPatch{{op: 'add', path: '{pointer}/' + string(i) + '/{d.field}', value: {source}}}) : []"
            )
            return Default(
                d.id,
                d.summary or f"{d.entry}'s {d.field}: its {d.from_field} when one of " + ", ".join(d.value),
                Where.MUTATING_POLICY,
                (patch,),
            )
        if isinstance(d.value, tuple):
            raise FormError(f"{d.id}: a tuple value is for a derived default (from_field)")
        if "{*}" in d.list:
            return _map_item_default(d, literal, unset, also)
        # A list below spec's own fields: a default never creates its parents.
        there = f"has(object.{d.list})" if len(path) <= 2 else _has_chain("object." + path[0], path[1:])
        if "." in d.field:
            # A field of an object of the entry: set when that object exists.
            unset = f"has(e.{d.field.split('.')[0]}) && ({unset})"
        patch = (
            f"{there} ? object.{d.list}.transformList(i, e, {unset}, "
            f"JSONPatch{{op: 'add', path: '{pointer}/' + string(i) + '/{d.field.replace('.', '/')}', "
            f"value: {literal}}}) : []"
        )
        return Default(
            d.id,
            d.summary or f"each {d.entry}'s {d.field}: {_summary_value(d.value)}{also}",
            Where.SCHEMA_DEFAULT,
            (patch,),
            (Placement((*path, LIST_ITEMS, *d.field.split(".")), {"default": d.value}),),
        )

    def _rule(self, d: Declaration) -> Rule:
        if isinstance(d, MaxItems):
            return Rule(
                d.id,
                d.summary or "; ".join(f"{path}: at most {limit} entries" for path, limit in d.lists),
                Where.SCHEMA,
                tuple(
                    Produces(path, "TOO_MANY", _exact(f"must have at most {limit} items")) for path, limit in d.lists
                ),
                tuple(Placement(_path(path), {"maxItems": limit}) for path, limit in d.lists),
                why=d.why,
            )
        if isinstance(d, UniqueBy):
            return self._unique(d)
        if isinstance(d, RequiredRoles):
            return self._required_roles(d)
        if isinstance(d, ForbiddenRoles):
            return self._forbidden_roles(d)
        if isinstance(d, RoleFieldBound):
            return self._role_bound(d)
        if isinstance(d, AtMostSum):
            return self._at_most_sum(d)
        if isinstance(d, Immutable):
            return self._immutable(d)
        if isinstance(d, VOLCANO_FORMS):
            return _volcano_rule(d)
        if isinstance(d, KnownTypes):
            return _known_types(d)
        if isinstance(d, RunPolicyImmutable):
            return _run_policy_immutable(d)
        if isinstance(d, RunPolicyAtMostTotal):
            return _run_policy_at_most_total(d)
        raise FormError(f"{d.id}: not a rule form")  # pragma: no cover - the union is exhaustive

    def _unique(self, d: UniqueBy) -> Rule:
        path = _path(d.list)
        summary = d.summary or f"{d.list}: each {d.key} once"
        default = self._item_default(d.list, d.key)
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
        key_r, key_q = self.key(d, "r"), self.key(d, "q")
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
                        f"self.map(r, {key_r}).filter(t, self.filter(q, {self.key(d, 'q')} == t).size() > 1)[0] + '\"'",
                    ),
                ),
            ),
            why=AT_LIST,
        )

    def _site(self, roles_path: str, when: When | None, rule_id: str) -> tuple[Location, str, str]:
        """Where a rule over a list (and its condition) sits: the list's parent, which sees both.
        (placement, CEL of the list from there, CEL of the condition or 'true')."""
        parent, name = roles_path.rsplit(".", 1)
        condition = "true"
        if when is not None:
            when_parent, when_name = when.path.rsplit(".", 1)
            if when_parent != parent:
                raise FormError(f"{rule_id}: the condition {when.path} is not beside {roles_path}")
            condition = f"(has(self.{when_name}) && self.{when_name} == {_literal(when.value)})"
        return _path(parent), f"self.{name}", condition

    def _required_roles(self, d: RequiredRoles) -> Rule:
        at, items, condition = self._site(d.of.path, d.when, d.id)
        name = items.removeprefix("self.")
        prefix = _escape(d.message.split("{role}")[0])
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
                        f"{items}.exists(r, {self.key(d.of, 'r')} == {cel_string(role)})",
                        message=d.message.format(role=role),
                        field_path=f".{name}",
                        reason="FieldValueRequired",
                    ),
                )
                for role in d.roles
            ),
        )

    def _forbidden_roles(self, d: ForbiddenRoles) -> Rule:
        at, items, condition = self._site(d.of.path, d.when, d.id)
        name = items.removeprefix("self.")
        return Rule(
            d.id,
            d.summary,
            Where.CRD_RULE,
            (Produces(f"{d.of.path}[*].{d.of.key}", "INVALID", _exact(d.message), apiserver_drops=2),),
            (
                Placement(
                    at,
                    validation=Validation(
                        rule=f"!{condition} || !has({items}) || "
                        f"!{items}.exists(r, {self.key(d.of, 'r')} in {cel_list(d.roles)})",
                        message=d.message,
                        field_path=f".{name}",
                    ),
                ),
            ),
            why=AT_LIST,
        )

    def _role_bound(self, d: RoleFieldBound) -> Rule:
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
                (Produces(produced, "INVALID", _exact(d.message)),),
                (
                    Placement(
                        (*_path(d.of.path), LIST_ITEMS),
                        validation=Validation(
                            rule=f"{self.key(d.of, 'self')} != {role} || !has(self.{d.field}) || "
                            f"{within('self.' + d.field)}",
                            message=d.message,
                            field_path=f".{d.field}",
                        ),
                    ),
                ),
                why=d.why,
            )
        at, items, condition = self._site(d.of.path, d.when, d.id)
        first = f"{items}.filter(r, {self.key(d.of, 'r')} == {role})[0]"
        return Rule(
            d.id,
            d.summary,
            Where.CRD_RULE,
            (Produces(produced, "INVALID", _exact(d.message), apiserver_drops=2),),
            (
                Placement(
                    at,
                    validation=Validation(
                        # The webhook reads the first entry of the role (a second is a duplicate).
                        rule=f"!{condition} || !has({items}) || !{items}.exists(r, {self.key(d.of, 'r')} == {role}) || "
                        f"!has({first}.{d.field}) || {within(first + '.' + d.field)}",
                        message=d.message,
                        field_path=f".{items.removeprefix('self.')}",
                    ),
                ),
            ),
            why=d.why or AT_LIST,
        )

    def _at_most_sum(self, d: AtMostSum) -> Rule:
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
            tuple(Produces(d.path, "INVALID", _exact(m)) for m in (d.message, d.update_message) if m),
            tuple(
                Placement(
                    _path(parent),
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

    def _immutable(self, d: Immutable) -> Rule:
        # On the field's first step (spec), which every version of the job has: a transition rule
        # lower down would not run when an object on the way was added or removed.
        top, *rest = _path(d.path)
        if not rest:
            raise FormError(f"{d.id}: an immutable field below {top}")
        field = ".".join(rest)
        has_new, has_old = _has_chain("self", rest), _has_chain("oldSelf", rest)
        return Rule(
            d.id,
            d.summary,
            Where.TRANSITION,
            (Produces(d.path, "FORBIDDEN", _exact(d.message)),),
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

    # --- Python ----------------------------------------------------------------------------------

    def python_validate(self) -> list[str]:
        """The body lines of the kind's generated check (``errors`` extended, in declaration order)."""
        lines = []
        for d in self.declared:
            if isinstance(d, FIELD_FORMS):
                body = [line for path in _paths(d) for line in _field_lines(d, _Site(d, path))]
            elif isinstance(d, KnownTypes):
                body = _known_types_lines(d)
            elif isinstance(d, RunPolicyAtMostTotal):
                body = _at_most_total_lines(d)
            else:
                call = _python_call(d)
                body = [f"        errors.extend({call})"] if call else []
            if not body:
                continue
            if isinstance(d, ENTRY_FORMS) and len(_entry_ids(d)) > 1:
                # One check of several rules (entry by entry): any of their ids runs it.
                lines.append(f"    if not only or any(i in only for i in {_entry_ids(d)!r}):")
            else:
                lines.append(f"    if not only or {d.id!r} in only:")
            lines += body
        return lines

    def value_defaults(self) -> tuple[str, list[Declaration]]:
        """(the map, its defaults) of the defaults of each value of one map (a replica map's count,
        restart policy, containers' fields, port), which run value by value: ("", []) when there are none.
        Declared one after another (as run, each value's defaults before the next value's)."""
        found = [d for d in self.declared if _value_map(d)]
        maps = {_value_map(d) for d in found}
        if len(maps) > 1:
            raise FormError(f"defaults of the values of more than one map: {sorted(maps)}")
        defaults = [d for d in self.declared if isinstance(d, DEFAULT_FORMS) and _runs_in_python(d)]
        if found and defaults[defaults.index(found[0]) : defaults.index(found[-1]) + 1] != found:
            raise FormError(f"the defaults of {maps.pop()}'s values are declared apart: {[d.id for d in found]}")
        return (maps.pop() if maps else ""), found

    def python_value_default(self) -> list[str]:
        """The body lines of the generated defaults of one value of the map (``value_defaults``): on
        ``value`` (a copy the caller owns), its key ``key`` and pointer ``pointer``, in declaration order,
        written out for the kind (its types and values as literals, no table read per review)."""
        lines = []
        done: set[str] = set()
        for d in self.value_defaults()[1]:
            if isinstance(d, DefaultTypeField):
                lines += [f"    if not only or {d.id!r} in only:", *_type_field_lines(d)]
            elif isinstance(d, DefaultTemplatePort):
                # Its roles, and with ``others`` every key that is no known type: the known types but its roles.
                role = f" and key in {d.roles!r}"
                if d.others:
                    without = tuple(k for k in d.known if k not in d.roles)
                    role = f" and key not in {without!r}" if without else ""
                lines += [f"    if (not only or {d.id!r} in only){role}:", *_port_lines(d)]
            elif isinstance(d, DefaultItemField) and d.list not in done:
                done.add(d.list)
                group = [o for o in self.declared if isinstance(o, DefaultItemField) and o.list == d.list]
                lines += _value_list_lines(group)
        return lines

    def python_default(self, value_function: str = "") -> list[str]:
        """The body lines of the kind's generated defaulting (``obj`` replaced, in declaration order:
        the defaults of one list applied entry by entry, as the patch lists them; those of a map's
        values value by value, by ``value_function``: the generated ``python_value_default``)."""
        lines = []
        done: set[str] = set()
        value_map, by_value = self.value_defaults()
        for d in self.declared:
            if any(d is o for o in by_value):
                if d is by_value[0]:
                    lines += [
                        f"    obj = default_map_values(obj, recorder, {_path(value_map)!r}, {value_function}, only)"
                    ]
            elif isinstance(d, DefaultField):
                lines += [f"    if not only or {d.id!r} in only:", *_field_default_lines(d)]
            elif isinstance(d, VOLCANO_DEFAULT_FORMS):
                lines += [f"    if not only or {d.id!r} in only:", f"        obj = {_volcano_default_call(d)}"]
            elif isinstance(d, DefaultFinishRules):
                lines += [f"    if not only or {d.id!r} in only:", f"        obj = {_finish_rules_call(d)}"]
            elif isinstance(d, DefaultItemField) and d.list not in done:
                done.add(d.list)
                group = [o for o in self.declared if isinstance(o, DefaultItemField) and o.list == d.list]
                fields = tuple((o.field, o.value, o.empty_is_unset, o.from_field) for o in group)
                ids = tuple(o.id for o in group)
                call = f"default_item_fields(obj, recorder, {_path(d.list)!r}, "
                # No variable: mypy types each tuple literal as it is written (the compiled build).
                lines += [
                    "    if not only:",
                    f"        obj = {call}{fields!r})",
                    f"    elif any(i in only for i in {ids!r}):",
                    f"        obj = {call}tuple(f for i, f in zip({ids!r}, {fields!r}, strict=True) if i in only))",
                ]
        return lines

    # --- cost ------------------------------------------------------------------------------------

    def cost(self) -> list[tuple[str, str]]:
        """(id, the growth of its apiserver check in the list it reads) of each rule."""
        report = []
        for d in self.declared:
            if isinstance(d, FIELD_FORMS):
                report.append((d.id, _field_cost(d)))
                continue
            if isinstance(d, (*VOLCANO_DEFAULT_FORMS, *REPLICA_MAP_DEFAULT_FORMS)):
                growth = "linear (policy patch)"
            elif isinstance(d, DefaultFinishRules):
                growth = (
                    f"quadratic in the entries, bounded by {d.max_entries}; linear in the replicas written, "
                    f"bounded by {d.max_replicas} (policy patch)"
                )
            elif isinstance(d, RunPolicyImmutable):
                growth = "constant"
            elif isinstance(d, RunPolicyAtMostTotal):
                growth = "linear in the map's keys"
            elif isinstance(d, KnownTypes):
                growth = f"linear, bounded by {len(d.types)} keys (maxProperties)" + (
                    "; quadratic in them for another spelling" if d.any_case else ""
                )
            elif isinstance(d, DefaultField | DefaultItemField | MaxItems | Immutable):
                growth = "constant" if not isinstance(d, DefaultItemField) else "linear (policy patch)"
            elif isinstance(d, Unchanged):
                growth = f"linear: each field, its lists walked by index (at most {d.entries[1]} entries)"
            elif isinstance(d, FixedCount | Subdomain):
                growth = "constant"
            elif isinstance(d, FlagNamesEntry):
                growth = f"linear in the arguments (at most {d.bound}) and the list"
            elif isinstance(d, Acyclic):
                growth = f"quadratic per round, {d.bound} rounds, bounded by {d.bound} entries"
            elif isinstance(d, LifecyclePolicies):
                growth = "quadratic in a list's policies (its uniqueness rules), bounded by its maxItems"
            elif isinstance(d, ClaimVolumes):
                growth = "quadratic in the volumes (distinct mount paths), bounded by their maxItems"
            elif isinstance(d, NotBoth):
                growth = "constant (CRD rule on each object)"
            elif isinstance(d, RequiredList):
                growth = "constant"
            elif isinstance(d, UniqueName):
                growth = "quadratic, bounded by the list's maxItems (CRD rule)"
            elif isinstance(d, RequiredItemField | Bounds):
                growth = "constant (schema keyword)"
            elif isinstance(d, RefersTo):
                growth = f"quadratic: each entry looked up in the list, bounded by its maxItems ({d.bound})"
                report += [(d.id, growth), *([(d.unique_id, growth)] if d.unique_id else [])]
                continue
            elif isinstance(d, EntriesUnchanged):
                report.append((d.id, "linear in the entries (transition rule)"))
                continue
            elif isinstance(d, NamedEntries):
                report += [
                    *([(d.singleton_id, "linear per type (CRD rule on the list)")] if d.singleton_id else []),
                    (
                        d.required_id,
                        "linear (CRD rule on the list)" if d.several else "constant (CRD rule on each entry)",
                    ),
                    (d.label_id, "constant (schema keyword)"),
                    (d.unique_id, "quadratic, bounded by the list's maxItems (CRD rule)"),
                ]
                continue
            elif isinstance(d, IndexMaps):
                report += [
                    (d.id, "constant (CRD rule on each map)"),
                    (d.unknown_id, f"linear in the maps' names, each looked up in the list (at most {d.bound})"),
                    (d.unlisted_id, "linear in the map's names (CRD rule on each map)"),
                    (d.index_id, "linear in the indices (ValidatingAdmissionPolicy)"),
                ]
                continue
            elif isinstance(d, UniqueBy):
                default = self._item_default(d.list, d.key)
                linear = (default is None or not default.empty_is_unset) and d.list_map
                if not d.list_map and not (default is not None and default.empty_is_unset):
                    report.append((d.id, "quadratic, bounded by the list's maxItems (CRD rule)"))
                    continue
                growth = "linear (list-map key)" if linear else f"quadratic, bounded by {len(d.among)} entries"
            else:
                growth = "linear"
            report.append((d.id, growth))
        # Declarations that share an id are one rule: each growth of it once.
        return list(dict.fromkeys(report))


def _map_item_default(d: DefaultItemField, literal: str, unset: str, also: str) -> Default:
    """A ``DefaultItemField`` of the list in each value of a map (``{*}``): a policy patch, the map's
    keys in order, each value's list where every object on its way is there."""
    in_map, _, in_value = d.list.partition("{*}.")
    if "{*}" in in_value or d.from_field or "." in d.field:
        raise FormError(f"{d.id}: a default through a map's values sets a field of the entry, one map deep")
    value = f"object.{in_map}[k]"
    items = f"{value}.{in_value}"
    pointer = "/" + "/".join(_path(in_map)) + "/' + jsonpatch.escapeKey(k) + '/" + "/".join(_path(in_value))
    patch = (
        f"(has(object.{in_map}) ? object.{in_map}.filter(k, {_has_chain(value, _path(in_value))})"
        f".map(k, {items}.transformList(i, e, {unset}, "
        f"JSONPatch{{op: 'add', path: '{pointer}/' + string(i) + '/{d.field}', value: {literal}}})).flatten() : [])"
    )
    return Default(
        d.id,
        d.summary or f"each {d.entry}'s {d.field}: {_summary_value(d.value)}{also}",
        Where.MUTATING_POLICY,
        (patch,),
    )


def _has_chain(variable: str, steps: Sequence[str]) -> str:
    """CEL true when every field of the path is there (``has`` of each step)."""
    parts = [f"has({variable}.{'.'.join(steps[: i + 1])})" for i in range(len(steps))]
    return "(" + " && ".join(parts) + ")"


def _empty(value: Scalar | tuple[str, ...]) -> str:
    """CEL of what ``empty_is_unset`` reads as unset: the zero of the default's type ("" or 0), as a
    Go webhook that cannot tell a zero from an absent field reads it."""
    return "0" if isinstance(value, int) and not isinstance(value, bool) else "''"


def _summary_value(value: Scalar | list[Scalar] | dict[str, Scalar]) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _when(when: When | None) -> tuple[tuple[str, ...], Scalar] | None:
    return None if when is None else (_path(when.path), when.value)


def _python_call(d: Declaration) -> str:
    if isinstance(d, MaxItems):
        return f"max_items(obj, {tuple((_path(path), limit) for path, limit in d.lists)!r})"
    if isinstance(d, UniqueBy):
        return f"unique_by(obj, {_path(d.list)!r}, {d.key!r}, {d.among!r})"
    if isinstance(d, RequiredRoles | ForbiddenRoles):
        function = "required_roles" if isinstance(d, RequiredRoles) else "forbidden_roles"
        return (
            f"{function}(obj, path={_path(d.of.path)!r}, key={d.of.key!r}, among={d.of.among!r}, roles={d.roles!r}, "
            f"when={_when(d.when)!r}, message={d.message!r})"
        )
    if isinstance(d, RoleFieldBound):
        return (
            f"role_field_bound(obj, path={_path(d.of.path)!r}, key={d.of.key!r}, among={d.of.among!r}, "
            f"role={d.role!r}, field={d.field!r}, bounds={(d.minimum, d.maximum)!r}, every={d.every!r}, "
            f"when={_when(d.when)!r}, message={d.message!r})"
        )
    if isinstance(d, AtMostSum):
        return (
            f"at_most_sum(obj, old, path={_path(d.path)!r}, items_path={_path(d.list)!r}, field={d.field!r}, "
            f"unset={d.unset!r}, message={d.message!r}, update_message={d.update_message!r})"
        )
    if isinstance(d, Immutable):
        return f"immutable(obj, old, {_path(d.path)!r}, {d.message!r})"
    if isinstance(d, VOLCANO_FORMS):
        return _volcano_call(d)
    if isinstance(d, KnownTypes):
        return f"known_types(obj, {_path(d.path)!r}, {d.types!r}, {d.any_case!r})"
    if isinstance(d, RunPolicyImmutable):
        return f"run_policy_immutable(obj, old, {_path(d.field)!r}, {d.place!r}, {d.message!r})"
    if isinstance(d, RunPolicyAtMostTotal):
        return f"run_policy_at_most_total(obj, {_path(d.field)!r}, {_path(d.path)!r}, {d.place!r}, {d.message!r})"
    if isinstance(d, EntriesUnchanged):
        return f"entries_unchanged(obj, old, path={_path(d.path)!r}, fields={d.fields!r}, message={d.message!r})"
    if isinstance(d, NamedEntries):
        return (
            f"named_entries(obj, path={_path(d.path)!r}, name={d.name!r}, type_field={d.type!r}, "
            f"untyped={d.untyped!r}, singletons={d.singletons!r}, messages={(d.singleton, d.first, d.unnamed)!r}, "
            f"several={d.several!r}, label_stops={d.label_stops!r})"
        )
    if isinstance(d, IndexMaps):
        return (
            f"index_maps(obj, paths={tuple(_path(p) for p in d.paths)!r}, items_path={_path(d.list)!r}, by={d.by!r}, "
            f"count={d.count!r}, unset={d.unset!r}, messages={(d.empty, d.unknown, d.unlisted, d.below, d.none)!r}, "
            f"bounds={(d.max_maps, d.max_names)!r})"
        )
    if isinstance(d, RefersTo):
        return (
            f"refers_to(obj, paths={tuple(_path(p) for p in d.paths)!r}, key={d.key!r}, items_path={_path(d.list)!r}, "
            f"by={d.by!r}, message={d.message!r}, unique={bool(d.unique_id)!r})"
        )
    return ""


# The forms' runtime twins (docs/rule-forms.md): the modules the generated checks import from.
RUNTIME_MODULES = (
    "jobgate.forms.checks.common",
    "jobgate.forms.checks.defaults",
    "jobgate.forms.checks.roles",
    "jobgate.forms.checks.fields",
    "jobgate.forms.checks.replica_maps",
    "jobgate.forms.checks.entries",
    "jobgate.forms.checks.t9k",
    "jobgate.forms.checks.volcano",
)


def runtime_module(name: str) -> str:
    """The runtime module that defines ``name`` (a form's function or a shared constant)."""
    for module_name in RUNTIME_MODULES:
        module = importlib.import_module(module_name)
        value = vars(module).get(name, _ABSENT)
        if value is not _ABSENT and getattr(value, "__module__", module_name) == module_name:
            return module_name
    raise FormError(f"no runtime module defines {name}")


_ABSENT = object()


def _runtime_imports(names: Iterable[str]) -> list[str]:
    """The import lines of ``names`` from the runtime modules, one statement per module."""
    modules: dict[str, list[str]] = {}
    for name in names:
        modules.setdefault(runtime_module(name), []).append(name)
    return [line for m in sorted(modules) for line in (f"from {m} import (", *(f"    {n}," for n in modules[m]), ")")]


def function_name(group: str, kind: str) -> str:
    return re.sub(r"[^0-9A-Za-z]", "_", f"{kind}_{group}").lower()


def declared_module_text(kinds: Iterable[tuple[str, str, Declarations]]) -> str:
    """``jobgate/_generated/declared_rules.py``: for each (group, kind, declarations), a function
    ``default_<kind>_<group>`` and ``validate_<kind>_<group>`` of calls to the forms' runtime twins
    (``RUNTIME_MODULES``)."""
    out = [
        '"""Generated by `jobgate manifests generate` from the rule declarations; do not edit.',
        "",
        "Each kind's declared defaults and rules (jobgate/rules/forms.py) with the declarations' values:",
        "the forms every review runs written out, the others as calls of the forms' functions",
        '(jobgate/forms/checks/)."""',
        "",
        "from __future__ import annotations",
        "",
        "from jobgate.engine.fielderrors import Key, forbidden, invalid, required",
        *_runtime_imports(
            (
                "MISSING",
                "MUST_BE_STRING",
                "acyclic",
                "at_most_one_of",
                "at_most_sum",
                "bounds",
                "claim_volumes",
                "default_field",
                "default_finish_rules",
                "default_indexed",
                "default_item_fields",
                "default_item_product",
                "default_item_when",
                "default_map_values",
                "default_sum",
                "entries_unchanged",
                "field_bound",
                "fixed_count",
                "flag_names_entry",
                "forbidden_field",
                "forbidden_roles",
                "get",
                "immutable",
                "implied_keys",
                "index_maps",
                "known_keys",
                "lifecycle_policies",
                "known_types",
                "max_items",
                "not_both",
                "named_entries",
                "refers_to",
                "required_field",
                "required_item_field",
                "required_list",
                "required_roles",
                "run_policy_at_most_total",
                "run_policy_immutable",
                "role_field_bound",
                "string_field",
                "subdomain",
                "unchanged",
                "unique_by",
                "unique_name",
                "with_port",
            )
        ),
        "from jobgate.rules.jobmeta import as_int",
        "",
        "TYPE_CHECKING = False",
        "if TYPE_CHECKING:",
        "    from typing import Any",
        "",
        "    from jobgate.engine.fielderrors import FieldError",
        "    from jobgate.engine.jsonpatch import PatchRecorder",
        "",
    ]
    for group, kind, declarations in sorted(kinds, key=lambda k: (k[0], k[1])):
        name = function_name(group, kind)
        value_map = declarations.value_defaults()[0]
        defaults = declarations.python_default(f"default_value_{name}")
        if value_map:
            out += [
                "",
                f"def default_value_{name}(",
                "    key: str,",
                "    value: dict[str, Any],",
                "    pointer: str,",
                "    recorder: PatchRecorder,",
                "    only: tuple[str, ...] = (),",
                ") -> dict[str, Any]:",
                f'    """{kind} ({group}): the declared defaults of one value of {value_map} (``value``, a copy the'
                ' caller owns, at ``key`` and the JSON pointer ``pointer``), in order (``only``: these ids alone)."""',
                *declarations.python_value_default(),
                "    return value",
                "",
            ]
        out += [
            "",
            f"def default_{name}(",
            "    obj: dict[str, Any],",
            "    recorder: PatchRecorder,",
            "    only: tuple[str, ...] = (),",
            "    previous: dict[str, Any] | None = None,",
            ") -> dict[str, Any]:",
            f'    """{kind} ({group}): the declared defaults, in order (``only``: these ids alone; ``previous``:'
            ' the stored job on UPDATE, for the defaults that read it)."""',
            *defaults,
            "    return obj",
            "",
            "",
            f"def validate_{name}(",
            "    obj: dict[str, Any], old: dict[str, Any] | None, only: tuple[str, ...] = ()",
            ") -> list[FieldError]:",
            f'    """{kind} ({group}): the declared rules\' errors, in declaration order (``only``: of these ids'
            ' alone, for a family whose hand-written rules report around them)."""',
            "    errors: list[FieldError] = []",
            *declarations.python_validate(),
            "    return errors",
            "",
        ]
    return "\n".join(out)


def cost_report(kinds: Iterable[tuple[str, str, Declarations]]) -> list[str]:
    """One line per generated rule: its kind, id and how its apiserver check grows."""
    return [f"{kind} ({group}) {rule}: {growth}" for group, kind, d in kinds for rule, growth in d.cost()]


# --- generic field forms ---------------------------------------------------------------------------
#
# A field form's path (``spec.tasks[*].name``, ``spec.tfReplicaSpecs{*}.restartPolicy``,
# ``spec.pytorchReplicaSpecs[Master].replicas``) is cut in two: the scope, the steps to each object
# the check runs on (through list items and map values: where its CRD rule or keyword sits), and
# the target, the field (or map key) from there. A condition is read from the same object.

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
    if not steps or _render(steps, dots=True) != path or steps[0].startswith(("[", "{")):
        raise FormError(f"not a field path: {path!r}")
    return steps


def _is_key(step: str) -> bool:
    return step.startswith("[") and step not in WILDCARDS


def _render(steps: Sequence[str], *, dots: bool = False) -> str:
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


def _paths(d: FieldForm) -> tuple[str, ...]:
    return (d.path,) if isinstance(d.path, str) else d.path


class _Site:
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
        self.produced = _render(steps)

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
            parts.append(f"!({self.present(steps)} && {self.at(steps)} == {_literal(value)})")
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


def _present(root: str, steps: Sequence[str]) -> str:
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


def _needs_message(d: FieldForm, site: _Site) -> None:
    if not d.message:
        raise FormError(f"{d.id}: {site.path} needs a CRD rule (a condition, a map key), which needs a message")


def _field_parts(d: FieldForm) -> tuple[list[Produces], list[Placement], bool]:
    """(Produces, placements, whether any is a CRD rule) of one field declaration."""
    produces: list[Produces] = []
    placements: list[Placement] = []
    crd_rule = False
    for path in _paths(d):
        site = _Site(d, path)
        field = site.at(site.target)
        if isinstance(d, AtMostOneOf):
            holder = site.at(site.target)
            count = " + ".join(
                f"({cel_string(f[1:-1])} in {holder} ? 1 : 0)" if _is_key(f) else f"(has({holder}.{f}) ? 1 : 0)"
                for f in d.fields
            )
            there = site.present(site.target) if site.target else ""
            holds = f"{count} <= 1"
            produces.append(Produces(site.produced, "FORBIDDEN", _exact(d.message)))
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
            produces.append(Produces(site.produced, "REQUIRED", _exact(d.message)))
            placements.append(
                Placement(site.location, validation=site.validation(holds, d.message, "FieldValueRequired"))
            )
        elif isinstance(d, ForbiddenField):
            _needs_message(d, site)
            absent = f"!{site.is_set()}"
            holds = f"{absent} || {field} == ''" if d.empty_is_unset else absent
            produces.append(Produces(site.produced, "FORBIDDEN", _exact(d.message)))
            placements.append(
                Placement(site.location, validation=site.validation(holds, d.message, "FieldValueForbidden"))
            )
        elif isinstance(d, FieldBound):
            if d.minimum is None and d.maximum is None:
                raise FormError(f"{d.id}: a bound needs a minimum or a maximum")
            if site.plain and (not d.message or d.keyword):
                bounds = {k: v for k, v in (("minimum", d.minimum), ("maximum", d.maximum)) if v is not None}
                produces.append(
                    Produces(site.produced, "INVALID", _exact(d.message))
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
            produces.append(Produces(site.produced, "INVALID", _exact(d.message)))
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
                produces += [Produces(site.produced, "INVALID", _exact(m)) for m in messages]
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
                        Produces(site.produced, "NOT_SUPPORTED", _exact(not_supported((), "", d.enum).detail))
                    )
                placements.append(Placement((*site.location, site.target[0]), keywords))
                continue
            _needs_message(d, site)
            checks = [f"size({field}) <= {d.max_length}"] if d.max_length is not None else []
            checks += [f"size({field}) >= {d.min_length}"] if d.min_length is not None else []
            checks += [f"{field}.matches({cel_raw_string(d.pattern)})"] if d.pattern else []
            checks += [f"{field} in {cel_list(d.enum)}"] if d.enum else []
            holds = f"!{site.is_set()} || " + " && ".join(checks)
            produces.append(Produces(site.produced, "INVALID", _exact(d.message)))
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


def _field_lines(d: FieldForm, site: _Site) -> list[str]:
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
            for i, (n, w) in enumerate(zip(_step_names(reached, _CHECK_NAMES), written, strict=False))
        ]
        last = "holder" if isinstance(d, AtMostOneOf) else "parent"
        if names:
            names[-1] = last
            lines += _read_lines(["obj", *names[:-1]], names, reached)
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
    rendered = _render(site.scope + site.target)
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


def _field_calls(d: FieldForm) -> list[str]:
    """The Python check of a field declaration by the form's function: one call per path."""
    return [_field_call(d, _Site(d, path)) for path in _paths(d)]


def _field_call(d: FieldForm, site: _Site) -> str:
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
    sites = [_Site(d, p) for p in _paths(d)]
    keyword = all(s.plain for s in sites) and not d.message and not getattr(d, "empty_is_unset", False)
    if keyword and not isinstance(d, ForbiddenField | AtMostOneOf):
        return "constant (schema keyword)"
    each = " on each entry" if any(s in WILDCARDS for site in sites for s in site.scope) else ""
    if isinstance(d, StringField) and d.pattern:
        return f"linear in the string's length (CRD rule{each})"
    return f"constant (CRD rule{each})"


# --- per-entry scopes (jobgate/rules/forms.py's Scope) ------------------------------------------------
#
# A scope's declarations are compiled twice: once relative to the entry, to the Python function the
# hand-written loop calls per entry, and once per site, as the same declarations with the site's path
# in front, to the catalogue's records and placements (so a scope says at each site what a family's
# own declaration there would).

SCOPED_TABLE = os.path.join(os.path.dirname(_generated.__file__), "scoped_rules.py")


def _prefixed(path: str | tuple[str, ...], prefix: str) -> str | tuple[str, ...]:
    if isinstance(path, str):
        return f"{prefix}.{path}"
    return tuple(f"{prefix}.{p}" for p in path)


class ScopeDeclarations:
    """A scope's declarations: its generated function, and its rules at each site."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        if not re.fullmatch(r"[a-z][a-z0-9_]*", scope.name):
            raise FormError(f"a scope's name is a Python name: {scope.name!r}")
        for d in scope.declared:
            if not isinstance(d, FIELD_FORMS):
                raise FormError(f"{d.id}: a scope holds field declarations (paths relative to the entry)")
            for path in _paths(d):
                _Site(d, path)  # refuses a path or condition its form cannot compile
        # The ids as one site fills them: checked as a kind's are (field forms may share one).
        self.at(ScopeSite(scope, "spec.entries[*]", ()))

    def at(self, site: ScopeSite) -> Declarations:
        """The declarations at ``site``: paths from the object's root, ids and summaries filled."""
        if site.scope != self.scope:
            raise FormError(f"a site of {site.scope.name} given to {self.scope.name}")
        names = _Names(site.names)
        out: list[Declaration] = []
        for d in self.scope.declared:
            changes: dict[str, object] = {
                "id": d.id.format_map(names),
                "summary": d.summary.format_map(names),
                "path": _prefixed(d.path, site.path),
            }
            when = getattr(d, "when", None)
            if when is not None:
                changes["when"] = When(f"{site.path}.{when.path}", when.value)
            out.append(dataclasses.replace(d, **changes))  # type: ignore[arg-type]
        return Declarations(out)

    def rules_at(self, site: ScopeSite) -> list[Rule]:
        """The catalogue's records of the scope at ``site`` (in declaration order)."""
        return self.at(site).rules()

    def cost(self, site: ScopeSite) -> list[tuple[str, str]]:
        return self.at(site).cost()

    def python_function(self) -> tuple[list[str], set[str]]:
        """The lines of ``check_<name>`` and the names it imports."""
        name = self.scope.name
        lines = [
            "",
            "",
            f"def check_{name}(",
            "    entry: dict[str, Any],",
            "    path: FieldPath,",
            "    errors: list[FieldError],",
            "    index: int = -1,",
            "    only: tuple[str, ...] = (),",
            ") -> None:",
            f'    """One {self.scope.entry} at ``path`` (with ``index``, the entry ``index`` of the list at ``path``:',
            "    the entry's path is built only for an error): its declared rules' errors added to ``errors``,",
            '    in declaration order (``only``: of these ids alone, for a loop that reports around them)."""',
        ]
        body, imports = self._body(each=False)
        lines += body
        if not self.scope.each:
            return lines, imports
        # The same checks over a whole list, for a loop that reports nothing between its entries.
        lines += [
            "",
            "",
            f"def check_each_{name}(items: list[Any], path: FieldPath, errors: list[FieldError]) -> None:",
            f'    """Each {self.scope.entry} of the list at ``path``, as ``check_{name}``; an entry that is no object',
            '    is refused (``must be of type object``)."""',
            "    for index, entry in enumerate(items):",
            "        if type(entry) is not dict:",
            '            errors.append(invalid((*path, index), entry, "must be of type object"))',
            "            continue",
        ]
        body, more = self._body(each=True)
        lines += [f"    {line}" for line in body]
        return lines, imports | more | {"invalid"}

    def _body(self, *, each: bool) -> tuple[list[str], set[str]]:
        lines: list[str] = []
        imports: set[str] = set()
        current, fetched = "", ""
        for d in self.scope.declared:
            body, needs = _scoped_python(d, each=each)
            imports |= needs
            if d.id != current:
                # Declarations of one id side by side are one test of ``only`` (none over a list).
                if not each:
                    lines.append(f"    if not only or {d.id!r} in only:")
                current, fetched = d.id, ""
            if body[0].startswith("value = ") and body[0] == fetched:
                body = body[1:]  # the same field, read once (no check writes it)
            fetched = body[0] if body[0].startswith("value = ") else fetched
            lines += [("    " if each else "        ") + line for line in body]
        return lines, imports


class _Names(dict[str, str]):
    """A site's words for the placeholders; one it does not fill stays as written."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def scope_rules(*sites: ScopeSite) -> list[Rule]:
    """The catalogue's records of scopes at their sites, compiled together: declarations of one id
    are one rule, wherever they are (a loop that reports between two checks of an entry calls two
    scopes, whose declarations may be one rule's)."""
    declared: list[Declaration] = []
    for site in sites:
        declared += ScopeDeclarations(site.scope).at(site).declared
    return Declarations(declared).rules()


def _inline_site(d: FieldForm) -> str | None:
    """The entry's own field that ``d`` checks, when its check can be written inline (one field of
    the entry, no condition, no map key): the hot path of a loop over entries."""
    if isinstance(d, AtMostOneOf) or not isinstance(d.path, str):
        return None
    site = _Site(d, d.path)
    if site.scope or not site.plain:
        return None
    return site.target[0]


def _scoped_python(d: FieldForm, *, each: bool = False) -> tuple[list[str], set[str]]:
    """The lines that check one declaration of a scope on ``entry`` at ``path`` (``each``: the entry
    ``index`` of the list at ``path``), and their imports. Inline for the forms of the hot path (a
    field of the entry); otherwise the form's function, run on the entry, its errors rebased."""
    field = _inline_site(d)
    at = f"(*path, index, {field!r})" if each else f"((*path, {field!r}) if index < 0 else (*path, index, {field!r}))"
    if field is not None and isinstance(d, RequiredField):
        message = f", {d.message!r}" if d.message else ""
        unset = 'value is None or value == ""' if d.empty_is_unset else "value is None"
        if d.string:
            valid = "type(value) is not str or not value" if d.empty_is_unset else "type(value) is not str"
            # Valid values take the shortest way: one type test.
            return [
                f"value = entry.get({field!r})",
                f"if {valid}:",
                f"    if {unset}:",
                f"        errors.append(required({at}{message}))",
                "    else:",
                f'        errors.append(invalid({at}, value, "must be of type string"))',
            ], {"required", "invalid"}
        return [
            f"value = entry.get({field!r})",
            f"if {unset}:",
            f"    errors.append(required({at}{message}))",
        ], {"required"}
    if field is not None and isinstance(d, StringField) and (d.label or d.syntax):
        is_one, problems = _SYNTAX_FUNCTIONS[d.syntax or "label"]
        lines = [
            f"value = entry.get({field!r})",
            "if type(value) is str:",
            f"    if value and not {is_one}(value):",
            f"        errors.extend([invalid({at}, value, problem) for problem in {problems}(value)])",
        ]
        if d.string:
            lines += ["elif value is not None:", f'    errors.append(invalid({at}, value, "must be of type string"))']
        return lines, {"invalid", is_one, problems}
    only_enum = isinstance(d, StringField) and d.enum and not (d.pattern or d.message or d.min_length or d.max_length)
    if field is not None and isinstance(d, StringField) and only_enum:
        # A string (or, with ``string``, anything but null) that is none of the values.
        given = "value is not None" if d.string else "type(value) is str"
        return [
            f"value = entry.get({field!r})",
            f"if {given} and value not in {d.enum!r}:",
            f"    errors.append(not_supported({at}, value, {d.enum!r}))",
        ], {"not_supported"}
    if field is not None and isinstance(d, FieldBound) and d.integer and d.message:
        within = (
            (f"{d.minimum} <= " if d.minimum is not None else "")
            + "value"
            + (f" <= {d.maximum}" if d.maximum is not None else "")
        )
        # Valid values take the shortest way: a type test and a comparison.
        return [
            f"value = entry.get({field!r})",
            f"if value is not None and not (type(value) is int and {within}):",
            f"    errors.append(invalid({at}, value, {d.message!r}))",
        ], {"invalid"}
    calls = _field_calls(d)
    lines = []
    entry_path = "(*path, index)" if each else "((*path, index) if index >= 0 else path)"
    for call in calls:
        lines += [
            f"for error in {call.replace('(obj, ', '(entry, ', 1)}:",
            f"    errors.append(rebased({entry_path}, error))",
        ]
    function = calls[0].split("(", 1)[0]
    return lines, {function, "rebased"}


_SYNTAX_FUNCTIONS = {
    "label": ("is_dns1123_label", "dns1123_label_problems"),
    "port-name": ("is_port_name", "port_name_problems"),
    "env-var-name": ("is_env_var_name", "env_var_name_problems"),
}
_SCOPED_IMPORTS = {
    "is_port_name": "jobgate.rules.names",
    "port_name_problems": "jobgate.rules.names",
    "is_env_var_name": "jobgate.rules.names",
    "env_var_name_problems": "jobgate.rules.names",
    "required": "jobgate.engine.fielderrors",
    "invalid": "jobgate.engine.fielderrors",
    "not_supported": "jobgate.engine.fielderrors",
    "is_dns1123_label": "jobgate.rules.names",
    "dns1123_label_problems": "jobgate.rules.names",
}


def scoped_module_text(scopes: Iterable[Scope]) -> str:
    """``jobgate/_generated/scoped_rules.py``: a function ``check_<name>`` per scope. It imports only
    what its checks call (no declaration, no ``dataclasses`` or ``typing`` at run time: start-up)."""
    functions: list[str] = []
    imports: set[str] = set()
    for scope in sorted(scopes, key=lambda s: s.name):
        lines, needs = ScopeDeclarations(scope).python_function()
        functions += lines
        imports |= needs
    modules: dict[str, list[str]] = {}
    for name in sorted(imports):
        modules.setdefault(_SCOPED_IMPORTS.get(name) or runtime_module(name), []).append(name)
    out = [
        '"""Generated by `jobgate manifests generate` from the per-entry scopes; do not edit.',
        "",
        "Each scope's declared rules (jobgate/rules/forms.py's Scope) as one function that a hand-written",
        'loop calls for each entry, where the checks of the entry run (docs/rule-forms.md)."""',
        "",
        "from __future__ import annotations",
        "",
    ]
    for module in sorted(modules):
        out += [f"from {module} import (", *(f"    {n}," for n in modules[module]), ")"]
    out += [
        "",
        "TYPE_CHECKING = False",
        "if TYPE_CHECKING:",
        "    from typing import Any",
        "",
        "    from jobgate.engine.fielderrors import FieldError, FieldPath",
        *functions,
        "",
    ]
    return "\n".join(out)


# --- forms only Volcano's rules use (jobgate/rules/forms.py's last block) ---------------------------

CREATE_ONLY = "oldSelf.hasValue() || "
ITEM_NOT_NAMED = "reported at the list (a rule on a list cannot name the item)"


def _create_only(rule: str, create_only: bool) -> str:
    """CEL of ``rule`` on CREATE and true on UPDATE (with ``optionalOldSelf``), or ``rule``."""
    return CREATE_ONLY + "(" + rule + ")" if create_only else rule


def _split(message: str, field: str) -> tuple[str, str]:
    """The words of a message before and after its ``{field}``."""
    before, _, after = message.partition("{" + field + "}")
    return before, after


def _volcano_rule(
    d: VolcanoForm,
) -> Rule:
    if isinstance(d, Bounds):
        walked = list(_bound_places(d.bounds, (), ""))
        return Rule(
            d.id,
            d.summary,
            Where.SCHEMA,
            tuple(Produces(shown, kind) for _, _, shown, kind in walked),
            tuple(Placement(at, keyword) for at, keyword, _, _ in walked),
            why=d.why,
        )
    if isinstance(d, RequiredItemField):
        before, after = _split(d.message, "index")
        return Rule(
            d.id,
            d.summary,
            Where.SCHEMA,
            (Produces(f"{d.list}[*].{d.field}", "REQUIRED", "^" + _escape(before) + r"\d+" + _escape(after) + "$"),),
            (Placement((*_path(d.list), LIST_ITEMS), {"required": [d.field]}),),
            why=d.why,
        )
    if isinstance(d, UniqueName):
        key = d.key
        before, after = _split(d.message, "name")
        first = (
            f"self.map(t, (has(t.{key}) ? t.{key} : '')).filter(n, n != '' && "
            f"self.filter(u, has(u.{key}) && u.{key} == n).size() > 1)[0]"
        )
        shown = f"{cel_string(before)} + {first}" + (f" + {cel_string(after)}" if after else "")
        return Rule(
            d.id,
            d.summary,
            Where.CRD_RULE,
            (Produces(f"{d.list}[*].{key}", "DUPLICATE", "^" + _escape(before), apiserver_drops=2),),
            (
                Placement(
                    _path(d.list),
                    validation=Validation(
                        rule=f"self.all(t, !(has(t.{key}) && t.{key} != '') || "
                        f"self.exists_one(u, has(u.{key}) && u.{key} == t.{key}))",
                        message_expression=shown,
                    ),
                ),
            ),
            why=ITEM_NOT_NAMED,
        )
    if isinstance(d, RequiredList):
        parent, name = d.path.rsplit(".", 1)
        return Rule(
            d.id,
            d.summary,
            Where.CRD_RULE,
            (Produces(d.path, "REQUIRED", _exact(d.message)),),
            (
                Placement(
                    _path(parent),
                    validation=Validation(
                        rule=f"has(self.{name})", message=d.message, field_path=f".{name}", reason="FieldValueRequired"
                    ),
                ),
            ),
            why=d.why,
        )
    if isinstance(d, NotBoth):
        return _not_both(d)
    if isinstance(d, LifecyclePolicies | ClaimVolumes):
        raise FormError(f"{d.id}: a rule per check (Declarations.rules)")  # pragma: no cover
    if isinstance(d, Acyclic):
        return _acyclic(d)
    if isinstance(d, Unchanged):
        return _unchanged(d)
    if isinstance(d, FlagNamesEntry):
        return _flag_names_entry(d)
    if isinstance(d, KnownKeys):
        return _known_keys(d)
    if isinstance(d, FixedCount):
        parent, name = d.path.rsplit(".", 1)
        count = "(has({v}.{n}) ? size({v}.{n}) : 0)"
        return Rule(
            d.id,
            d.summary,
            Where.TRANSITION,
            (Produces(d.path, "FORBIDDEN", _exact(d.message)),),
            (
                Placement(
                    _path(parent),
                    validation=Validation(
                        rule=f"{count.format(v='self', n=name)} == {count.format(v='oldSelf', n=name)}",
                        message=d.message,
                        field_path=f".{name}",
                        reason="FieldValueForbidden",
                    ),
                ),
            ),
        )
    return _subdomain(d)


def _acyclic(d: Acyclic) -> Rule:
    """Kahn's algorithm in at most ``bound`` rounds: round k keeps the names of the entries whose
    dependencies are all among the names of round k-1. CEL of 1.30 has no cel.bind: each round's
    list is bound to a variable as the one item of a list (``[x].all(s, ...)``), so that it is
    computed once, not once per use."""
    parent, name = d.list.rsplit(".", 1)
    items, depends = f"self.{name}", f"t.{d.depends}"
    steps = d.depends.split(".")
    deps = " && ".join(f"has(t.{'.'.join(steps[: i + 1])})" for i in range(len(steps)))
    key = f"(has(t.{d.key}) ? t.{d.key} : '')"

    def sortable(names: str) -> str:
        return f"!({deps} && ({key} in {depends} || {depends}.exists(d, !(d in {names}))))"

    expression = f"{items}.all(t, {sortable(f's{d.bound}')})"
    for k in range(d.bound, 0, -1):
        previous = "[]" if k == 1 else f"s{k - 1}"
        expression = f"[{items}.filter(t, {sortable(previous)}).map(t, {key})].all(s{k}, {expression})"
    missing = f"!{items}.exists(u, has(u.{d.key}) && u.{d.key} == d)"
    first_missing = (
        f"{items}.map(t, {deps} && {depends}.exists(d, {missing}) ? "
        f"{depends}.filter(d, {missing})[0] : '').filter(n, n != '')"
    )
    message = cel_string(d.message)
    if d.missing:
        before, after = _split(d.missing, "names")
        message += (
            f" + (size({first_missing}) > 0 ? {cel_string(before)} + {first_missing}[0] + {cel_string(after)} : '')"
        )
    return Rule(
        d.id,
        d.summary,
        Where.CRD_RULE,
        (Produces(f"{d.list}[*].{d.depends}", "INVALID", "^" + _escape(d.message), apiserver_drops=1 + len(steps)),),
        (
            Placement(
                _path(parent),
                validation=Validation(
                    rule=_create_only(f"!has({items}) || {expression}", d.create_only),
                    message_expression=message,
                    field_path=f".{name}",
                    optional_old_self=d.create_only,
                ),
            ),
        ),
        why=d.why or ITEM_NOT_NAMED,
    )


def _known_keys(d: KnownKeys) -> Rule:
    known = cel_list(d.keys)
    before, after = _split(d.message, "key")
    shown = cel_string(before) + " + self.filter(k, !(k in " + known + "))[0]"
    if after:
        shown += " + " + cel_string(after)
    return Rule(
        d.id,
        d.summary,
        Where.CRD_RULE,
        (Produces(f"{d.path}[*]", "INVALID", "^" + _escape(before), apiserver_drops=1),),
        (
            # Each known key once at most: the bound the CEL cost estimate needs.
            Placement(_path(d.path), {"maxProperties": len(d.keys)}),
            Placement(
                _path(d.path), validation=Validation(rule=f"self.all(k, k in {known})", message_expression=shown)
            ),
        ),
        why=d.why or "reported at the map (a rule on a map cannot name the key)",
    )


def _subdomain(d: Subdomain) -> Rule:
    parent, name = d.path.rsplit(".", 1)
    field = f"self.{name}"
    unset = f"!has({field}) || {field} == '' || "
    too_long = max_length_message(SUBDOMAIN_MAX_LENGTH)
    checks = (
        (f"size({field}) <= {SUBDOMAIN_MAX_LENGTH}", too_long),
        (f"{field}.matches({cel_raw_string('^' + DNS1123_SUBDOMAIN + '$')})", DNS1123_SUBDOMAIN_MESSAGE),
    )
    return Rule(
        d.id,
        d.summary,
        Where.CRD_RULE,
        (Produces(d.path, "INVALID", f"^({_escape(too_long)}|{_escape(DNS1123_SUBDOMAIN_MESSAGE)})$"),),
        tuple(
            Placement(
                _path(parent),
                validation=Validation(
                    rule=_create_only(unset + rule, d.create_only),
                    message=message,
                    field_path=f".{name}",
                    optional_old_self=d.create_only,
                ),
            )
            for rule, message in checks
        ),
        why=d.why,
    )


def _flag_names_entry(d: FlagNamesEntry) -> Rule:
    """CEL of 1.30 has no index in a comprehension: the arguments are walked by the literal list of
    the indexes their maxItems allows, and the first that sets the flag is bound by its index
    (``[ps[0]].all(p, ...)``): an integer, which the cost estimator sizes."""
    parent, map_name = d.map.rsplit(".", 1)
    list_parent, list_name = d.list.rsplit(".", 1)
    if parent != list_parent:
        raise FormError(f"{d.id}: {d.map} and {d.list} are not beside each other")
    args = f"self.{map_name}[{cel_string(d.name)}]"
    with_value = cel_raw_string(f"^-+{d.flag}=")
    bare = cel_raw_string(f"^-+{d.flag}$")
    indexes = "[" + ", ".join(str(i) for i in range(d.bound)) + "]"
    sets = (
        f"p < size({args}) && ({args}[p].matches({with_value}) || ({args}[p].matches({bare}) && p + 1 < size({args})))"
    )
    value = f"({args}[p].matches({with_value}) ? {args}[p].substring({args}[p].indexOf('=') + 1) : {args}[p + 1])"
    default = cel_string(d.default)
    chosen = f"({value} == '' ? {default} : {value})"

    def named(name: str) -> str:
        items = f"self.{list_name}"
        return f"(has({items}) && {items}.exists(t, has(t.{d.key}) && t.{d.key} == {name}))"

    rule = (
        f"!has(self.{map_name}) || !({cel_string(d.name)} in self.{map_name}) || [{indexes}.filter(p, {sets})]"
        f".all(ps, size(ps) == 0 ? {named(default)} : [ps[0]].all(p, {named(chosen)}))"
    )
    return Rule(
        d.id,
        d.summary,
        Where.CRD_RULE,
        (Produces(f"{d.map}[{d.name}]", "INVALID", _exact(d.message)),),
        (
            Placement(
                _path(parent),
                validation=Validation(
                    rule=_create_only(rule, d.create_only),
                    message=d.message,
                    field_path=f".{map_name}[{cel_string(d.name)}]",
                    optional_old_self=d.create_only,
                ),
            ),
        ),
        why=d.why,
    )


def _patch(path: str, value: str) -> str:
    return f"JSONPatch{{op: 'add', path: {path}, value: {value}}}"


def _volcano_default(
    d: DefaultIndexed | DefaultSum | ImpliedKeys | DefaultItemWhen | DefaultItemProduct,
) -> Default:
    """A policy patch each: no schema default says any of them."""
    if isinstance(d, DefaultItemWhen | DefaultItemProduct):
        return _item_patch(d)
    if isinstance(d, DefaultIndexed):
        parent = "object." + d.list.rsplit(".", 1)[0]
        items = f"object.{d.list}"
        unset = f"!has(e.{d.field})" + (f" || e.{d.field} == ''" if d.empty_is_unset else "")
        pointer = cel_string("/" + d.list.replace(".", "/") + "/") + f" + string(i) + {cel_string('/' + d.field)}"
        patch = (
            f"has({parent}) && has({items}) ? {items}.transformList(i, e, {unset}, "
            f"{_patch(pointer, cel_string(d.prefix) + ' + string(i)')}) : []"
        )
        return Default(d.id, d.summary, Where.MUTATING_POLICY, (patch,))
    if isinstance(d, DefaultSum):
        parent = d.path.rsplit(".", 1)[0]
        items = f"object.{d.list}"
        field = f"object.{d.path}"
        total = f"{items}.map(t, has(t.{d.field}) ? t.{d.field} : 0).sum()"
        unset = f"!has({field})" + (f" || ({field} == 0 && {total} != 0)" if d.empty_is_unset else "")
        patch = (
            f"has(object.{parent}) && has({items}) && ({unset}) ? "
            f"[{_patch(cel_string('/' + d.path.replace('.', '/')), total)}] : []"
        )
        return Default(d.id, d.summary, Where.MUTATING_POLICY, (patch,))
    # ImpliedKeys: the implied keys in order of their names, each when a key that implies it is there.
    found = f"object.{d.path}"
    implied = sorted({k for _, keys in d.implies for k in keys})
    needs = {k: " || ".join(f"{cel_string(f)} in {found}" for f, keys in d.implies if k in keys) for k in implied}
    missing = " + ".join(
        f"(!({cel_string(k)} in {found}) && ({needs[k]}) ? "
        f"[{_patch(cel_string('/' + d.path.replace('.', '/') + '/' + k), '[]')}] : [])"
        for k in implied
    )
    parent = "object." + d.path.rsplit(".", 1)[0]
    return Default(d.id, d.summary, Where.MUTATING_POLICY, (f"has({parent}) && has({found}) ? {missing} : []",))


def _item_patch(d: DefaultItemWhen | DefaultItemProduct) -> Default:
    """A patch of each entry (``t``, its index ``ti``) whose field is unset (and whose condition holds)."""
    path = _path(d.list)
    steps = d.field.split(".")
    field = f"t.{d.field}"
    pointer = cel_string("/" + "/".join(path) + "/") + f" + string(ti) + {cel_string('/' + '/'.join(steps))}"
    if isinstance(d, DefaultItemWhen):
        beside = ".".join((*steps[:-1], d.when.path))
        unset = f"!has({field})" + (f" || {field} == {_empty(d.value)}" if d.empty_is_unset else "")
        condition = f"{_has_chain('t', beside.split('.'))} && t.{beside} == {_literal(d.when.value)} && ({unset})"
        value = _literal(d.value)
    else:

        def read(name: str) -> str:
            return f"({_has_chain('t', name.split('.'))} ? t.{name} : 0)"

        first, *others = (read(f) for f in d.factors)
        product = " * ".join((first, *others))
        condition = f"!has({field})"
        value = f"({first} > 0 ? {product} : {read(d.otherwise)})"
    items = f"object.{d.list}"
    patch = f"{_has_chain('object', path)} ? {items}.transformList(ti, t, {condition}, {_patch(pointer, value)}) : []"
    return Default(d.id, d.summary, Where.MUTATING_POLICY, (patch,))


def _volcano_default_call(d: DefaultIndexed | DefaultSum | ImpliedKeys | DefaultItemWhen | DefaultItemProduct) -> str:
    if isinstance(d, DefaultItemWhen):
        return (
            f"default_item_when(obj, recorder, {_path(d.list)!r}, field={_path(d.field)!r}, value={d.value!r}, "
            f"when={(d.when.path, d.when.value)!r}, empty_is_unset={d.empty_is_unset!r})"
        )
    if isinstance(d, DefaultItemProduct):
        return (
            f"default_item_product(obj, recorder, {_path(d.list)!r}, field={d.field!r}, "
            f"factors={tuple(_path(f) for f in d.factors)!r}, otherwise={_path(d.otherwise)!r})"
        )
    if isinstance(d, DefaultIndexed):
        return (
            f"default_indexed(obj, recorder, {_path(d.list)!r}, field={d.field!r}, prefix={d.prefix!r}, "
            f"empty_is_unset={d.empty_is_unset!r})"
        )
    if isinstance(d, DefaultSum):
        return (
            f"default_sum(obj, recorder, {_path(d.path)!r}, items_path={_path(d.list)!r}, field={d.field!r}, "
            f"empty_is_unset={d.empty_is_unset!r})"
        )
    return f"implied_keys(obj, recorder, {_path(d.path)!r}, {d.implies!r})"


def _same(a: str, b: str, path: str, *, non_empty: bool = False) -> str:
    """CEL true when the field at ``path`` is set (``non_empty``: and not empty) in both and equal,
    or in neither."""
    steps = path.split(".")
    set_a, set_b = _has_chain(a, steps), _has_chain(b, steps)
    if non_empty:
        set_a, set_b = f"({set_a} && size({a}.{path}) > 0)", f"({set_b} && size({b}.{path}) > 0)"
    return f"({set_a} == {set_b} && (!{set_a} || {a}.{path} == {b}.{path}))"


def _indexes(bound: int) -> str:
    """CEL of 1.30 has no lists.range(): the literal list of every index a list's maxItems allows."""
    return "[" + ", ".join(str(i) for i in range(bound)) + "]"


def _same_shape(shape: Shape, a: str, b: str) -> str:
    """CEL true when ``a`` and ``b`` are the same as ``shape`` compares them."""
    if isinstance(shape, Same):
        return _same(a, b, shape.field, non_empty=shape.non_empty)
    if isinstance(shape, SameAll):
        joined = " && ".join(_same_shape(part, a, b) for part in shape.parts)
        return f"({joined})" if shape.parens else joined
    if isinstance(shape, SameUnlessBoth):
        return f"((has({a}.{shape.both}) && has({b}.{shape.both})) || {_same(a, b, shape.field)})"
    # Two lists (empty and unset alike) of the same length, the same at each index (a variable
    # distinct from any enclosing one).
    list_a, list_b, index = f"{a}.{shape.field}", f"{b}.{shape.field}", shape.field[0] + "i"
    size_a, size_b = f"(has({list_a}) ? size({list_a}) : 0)", f"(has({list_b}) ? size({list_b}) : 0)"
    item = _same_shape(shape.item, f"{list_a}[{index}]", f"{list_b}[{index}]")
    return (
        f"({size_a} == {size_b} && ({size_a} == 0 || "
        f"{_indexes(shape.bound)}.all({index}, {index} >= {size_a} || {item})))"
    )


def _unchanged(d: Unchanged) -> Rule:
    """A transition rule on the object per field it compares, and per field of its list's entries
    (when they are as many: else the count is reported)."""
    name, bound, entry_fields = d.entries
    count = "(has({v}.{n}) ? size({v}.{n}) : 0)"
    same_count = f"{count.format(v='self', n=name)} == {count.format(v='oldSelf', n=name)}"
    index = name[0] + "i"
    rules = [(field, _same_shape(shape, "self", "oldSelf")) for field, shape in d.fields]
    rules += [
        (
            name,
            f"!({same_count}) || !has(self.{name}) || {_indexes(bound)}.all({index}, {index} >= size(self.{name}) || "
            f"({_same_shape(shape, f'self.{name}[{index}]', f'oldSelf.{name}[{index}]')}))",
        )
        for _, shape in entry_fields
    ]
    # The webhook names the changed field down to ``depth`` levels below the object; the apiserver
    # names the object's field: as many segments fewer.
    shapes = ["*" + "".join(rest) for n in range(d.depth) for rest in itertools.product((".*", "[*]"), repeat=n)]
    return Rule(
        d.id,
        d.summary,
        Where.TRANSITION,
        tuple(
            Produces(
                f"{d.path}.{shape}", "FORBIDDEN", _exact(d.message), apiserver_drops=shape.count(".") + shape.count("[")
            )
            for shape in shapes
        ),
        tuple(
            Placement(
                _path(d.path),
                validation=Validation(
                    rule=rule, message=d.message, field_path=f".{field}", reason="FieldValueForbidden"
                ),
            )
            for field, rule in rules
        ),
        why=d.why,
    )


def _volcano_call(
    d: VolcanoForm,
) -> str:
    if isinstance(d, Bounds):
        return f"bounds(obj, {_bound_nodes(d.bounds)!r})"
    if isinstance(d, RequiredItemField):
        return f"required_item_field(obj, {_path(d.list)!r}, {d.field!r}, {d.message!r})"
    if isinstance(d, UniqueName):
        return f"unique_name(obj, {_path(d.list)!r}, {d.key!r}, {d.message!r})"
    if isinstance(d, RequiredList):
        return f"required_list(obj, {_path(d.path)!r}, {d.message!r})"
    if isinstance(d, NotBoth):
        paths = tuple(field_steps(p) for p in ((d.path,) if isinstance(d.path, str) else d.path))
        return f"not_both(obj, {paths!r}, {d.first!r}, {d.second!r}, {d.message!r})"
    if isinstance(d, ClaimVolumes):
        words = (d.mount_required, d.mount_twice, d.neither, d.both, d.bad_name)
        return f"claim_volumes(obj, {_path(d.list)!r}, fields={(d.mount, d.claim, d.claim_name)!r}, words={words!r})"
    if isinstance(d, LifecyclePolicies):
        words = (d.both, d.neither, d.action, d.event, d.event_twice, d.zero, d.code_twice, d.not_alone)
        return (
            f"lifecycle_policies(obj, lists={tuple(field_steps(p) for p in d.lists)!r}, events={d.events!r}, "
            f"actions={d.actions!r}, any_event={d.any_event!r}, words={words!r})"
        )
    if isinstance(d, Acyclic):
        return (
            f"acyclic(obj, old, path={_path(d.list)!r}, key={d.key!r}, depends={_path(d.depends)!r}, "
            f"message={d.message!r}, missing={d.missing!r}, create_only={d.create_only!r})"
        )
    if isinstance(d, KnownKeys):
        return f"known_keys(obj, {_path(d.path)!r}, {d.keys!r}, {d.message!r})"
    if isinstance(d, FixedCount):
        return f"fixed_count(obj, old, {_path(d.path)!r}, {d.message!r})"
    if isinstance(d, Unchanged):
        return (
            f"unchanged(obj, old, path={_path(d.path)!r}, mutable={d.mutable!r}, "
            f"mutable_entries={d.mutable_entries!r}, written={d.written!r}, maps={d.maps!r}, depth={d.depth!r}, "
            f"counted={d.counted!r}, message={d.message!r})"
        )
    if isinstance(d, FlagNamesEntry):
        return (
            f"flag_names_entry(obj, old, map_path={_path(d.map)!r}, name={d.name!r}, flag={d.flag!r}, "
            f"default={d.default!r}, items_path={_path(d.list)!r}, key={d.key!r}, message={d.message!r}, "
            f"create_only={d.create_only!r})"
        )
    return f"subdomain(obj, old, {_path(d.path)!r}, {d.create_only!r})"


def _on_events(p: str) -> str:
    return f"((has({p}.events) && {p}.events.exists(e, e != '')) || (has({p}.event) && {p}.event != ''))"


def _names_event(p: str, event: str) -> str:
    return f"((has({p}.events) && {event} in {p}.events) || (has({p}.event) && {p}.event == {event}))"


def _checked_events(p: str) -> str:
    """A policy whose events Volcano counts: on events, without an exit code."""
    return f"({_on_events(p)} && !has({p}.exitCode))"


def _exit_code_only(p: str) -> str:
    return f"(!{_on_events(p)} && has({p}.exitCode))"


def _lifecycle_policies(d: LifecyclePolicies) -> list[Rule]:
    """A rule per check: what a policy says on the policy, what the policies of a list say together
    on the list, which the apiserver names (a rule on a list cannot name the item)."""
    places = []
    for path in d.lists:
        steps = field_steps(path)
        places.append((tuple({"[*]": LIST_ITEMS}.get(s, s) for s in steps), _render(steps)))
    events, actions = cel_list(d.events), cel_list(d.actions)
    checked = _checked_events("self")

    def each(check: str, at: Location, message: str, field_path: str = "", reason: str = "") -> Placement:
        return Placement(
            (*at, LIST_ITEMS), validation=Validation(rule=check, message=message, field_path=field_path, reason=reason)
        )

    def rule(name: str, summary: str, produces: list[Produces], placements: list[Placement], why: str = "") -> Rule:
        return Rule(f"{d.id}/{name}", summary, Where.CRD_RULE, tuple(produces), tuple(placements), why=why)

    twice = f"self.filter(p, {_checked_events('p')} && {_names_event('p', 'e')}).size() > 1"
    event_before, event_after = _split(d.event_twice, "event")
    code_before, _ = _split(d.code_twice, "code")
    any_event = cel_string(d.any_event)
    other = (
        f"((has(p.events) && p.events.exists(e, e != '' && e != {any_event})) || "
        f"(has(p.event) && p.event != '' && p.event != {any_event}))"
    )
    return [
        rule(
            "event-or-exit-code",
            "a policy names events or an exit code, not both",
            [
                p
                for _, path in places
                for p in (
                    Produces(f"{path}[*]", "REQUIRED", _exact(d.neither)),
                    Produces(f"{path}[*].exitCode", "FORBIDDEN", _exact(d.both)),
                )
            ],
            [
                p
                for at, _ in places
                for p in (
                    each(f"{_on_events('self')} || has(self.exitCode)", at, d.neither, reason="FieldValueRequired"),
                    each(
                        f"!({_on_events('self')} && has(self.exitCode))",
                        at,
                        d.both,
                        field_path=".exitCode",
                        reason="FieldValueForbidden",
                    ),
                )
            ],
        ),
        rule(
            "action",
            "a policy on events has an action of " + ", ".join(d.actions),
            [Produces(f"{path}[*].action", "INVALID", _exact(d.action)) for _, path in places],
            [
                each(f"!{checked} || (has(self.action) && self.action in {actions})", at, d.action, ".action")
                for at, _ in places
            ],
        ),
        rule(
            "events",
            "a policy's events are " + ", ".join(d.events),
            [
                p
                for _, path in places
                for p in (
                    Produces(f"{path}[*].events[*]", "INVALID", _exact(d.event), apiserver_drops=1),
                    Produces(f"{path}[*].event", "INVALID", _exact(d.event)),
                )
            ],
            [
                p
                for at, _ in places
                for p in (
                    each(
                        f"!{checked} || !has(self.events) || self.events.all(e, e == '' || e in {events})",
                        at,
                        d.event,
                        ".events",
                    ),
                    # An event also in ``events`` is reported there only.
                    each(
                        f"!{checked} || !has(self.event) || self.event == '' || "
                        f"(has(self.events) && self.event in self.events) || self.event in {events}",
                        at,
                        d.event,
                        ".event",
                    ),
                )
            ],
            why="an unknown one in events is reported at the list (a rule on a list cannot name the item)",
        ),
        rule(
            "exit-code",
            "a policy's exit code is not 0",
            [Produces(f"{path}[*].exitCode", "INVALID", _exact(d.zero)) for _, path in places],
            [
                each(f"{_on_events('self')} || !has(self.exitCode) || self.exitCode != 0", at, d.zero, ".exitCode")
                for at, _ in places
            ],
        ),
        rule(
            "events-unique",
            "an event is named by one policy of the list at most",
            [
                p
                for _, path in places
                for p in (
                    Produces(f"{path}[*].events[*]", "DUPLICATE", "^" + _escape(event_before), apiserver_drops=3),
                    Produces(f"{path}[*].event", "DUPLICATE", "^" + _escape(event_before), apiserver_drops=2),
                )
            ],
            [
                Placement(
                    at,
                    validation=Validation(
                        rule=f"!{events}.exists(e, {twice})",
                        message_expression=f"{cel_string(event_before)} + {events}.filter(e, {twice})[0] + "
                        f"{cel_string(event_after)}",
                    ),
                )
                for at, _ in places
            ],
            why=ITEM_NOT_NAMED,
        ),
        rule(
            "exit-codes-unique",
            "an exit code is named by one policy of the list at most",
            [
                Produces(f"{path}[*].exitCode", "DUPLICATE", "^" + _escape(code_before), apiserver_drops=2)
                for _, path in places
            ],
            [
                Placement(
                    at,
                    validation=Validation(
                        rule=f"self.all(p, !{_exit_code_only('p')} || p.exitCode == 0 || "
                        f"self.exists_one(q, {_exit_code_only('q')} && q.exitCode == p.exitCode))",
                        # CEL's cost estimator cannot size string(int): the message cannot quote the code.
                        message=f"{code_before.strip()}: two policies of the list have the same exitCode",
                    ),
                )
                for at, _ in places
            ],
            why=ITEM_NOT_NAMED,
        ),
        rule(
            "any-event-alone",
            f"a list with a policy on {d.any_event} has no policy on another event",
            [Produces(path, "INVALID", _exact(d.not_alone)) for _, path in places],
            [
                Placement(
                    at,
                    validation=Validation(
                        rule=f"!self.exists(p, {_checked_events('p')} && {_names_event('p', any_event)}) || "
                        f"!self.exists(p, {_checked_events('p')} && {other})",
                        message=d.not_alone,
                    ),
                )
                for at, _ in places
            ],
        ),
    ]


def _bound_steps(path: str) -> tuple[str, ...]:
    return tuple(s for s in re.split(r"\.|(?=\{\*\})", path) if s) if path else ()


def _bound_nodes(nodes: tuple[Bound, ...]) -> tuple[object, ...]:
    """The generated call's form of the nodes: (steps, limit, string, children)."""
    return tuple((_bound_steps(n.path), n.limit, n.string, _bound_nodes(n.each)) for n in nodes)


def _bound_places(
    nodes: tuple[Bound, ...], at: Location, shown: str
) -> Iterable[tuple[Location, dict[str, object], str, str]]:
    """(location, schema keyword, the path as Produces reads it, error type) of each bound, in walk order."""
    for node in nodes:
        steps = _bound_steps(node.path)
        where: Location = (*at, *({"{*}": MAP_VALUES}.get(s, s) for s in steps))
        named = shown + "".join(".*" if s == "{*}" else ("." if shown or i else "") + s for i, s in enumerate(steps))
        if node.limit is not None:
            keyword = "maxLength" if node.string else "maxItems"
            yield where, {keyword: node.limit}, named, "TOO_LONG" if node.string else "TOO_MANY"
        yield from _bound_places(node.each, (*where, LIST_ITEMS), named + "[*]")


def _not_both(d: NotBoth) -> Rule:
    """A CRD rule on each object, which names the field."""
    paths = (d.path,) if isinstance(d.path, str) else d.path
    located = [(tuple({"[*]": LIST_ITEMS}.get(s, s) for s in field_steps(p)), _render(field_steps(p))) for p in paths]
    return Rule(
        d.id,
        d.summary,
        Where.CRD_RULE,
        tuple(Produces(f"{path}.{d.second}", "FORBIDDEN", _exact(d.message)) for _, path in located),
        tuple(
            Placement(
                at,
                validation=Validation(
                    rule=f"!(has(self.{d.first}) && has(self.{d.second}) && self.{d.second} != '')",
                    message=d.message,
                    field_path=f".{d.second}",
                    reason="FieldValueForbidden",
                ),
            )
            for at, _ in located
        ),
    )


def _claim_volumes(d: ClaimVolumes) -> list[Rule]:
    """A rule per check: on each volume where it can name the field, else on the list or its parent."""
    parent, name = d.list.rsplit(".", 1)
    items = (*_path(d.list), LIST_ITEMS)
    mount, claim, claim_name = d.mount, d.claim, d.claim_name
    before_twice, after_twice = _split(d.mount_twice, "path")
    first_twice = (
        f"self.map(v, has(v.{mount}) ? v.{mount} : '')"
        f".filter(p, p != '' && self.filter(w, has(w.{mount}) && w.{mount} == p).size() > 1)[0]"
    )
    name_set = f"has(self.{claim_name}) && self.{claim_name} != ''"
    before_name, rest = _split(d.bad_name, "name")
    between, after = _split(rest, "problems")
    too_long = max_length_message(SUBDOMAIN_MAX_LENGTH)
    return [
        Rule(
            f"{d.id}/mount-path",
            "a volume has a mount path",
            Where.SCHEMA,
            (
                Produces(f"{d.list}[*].{mount}", "REQUIRED", _exact(d.mount_required)),
                Produces(f"{d.list}[*].{mount}", "INVALID", "should be at least 1 chars long$"),
            ),
            (Placement((*items, mount), {"minLength": 1}),),
            why="as Volcano's CRD does it (required, minLength 1)",
        ),
        Rule(
            f"{d.id}/mount-paths-unique",
            "volumes have distinct mount paths",
            Where.CRD_RULE,
            (Produces(f"{d.list}[*].{mount}", "DUPLICATE", "^" + _escape(before_twice), apiserver_drops=2),),
            (
                Placement(
                    _path(d.list),
                    validation=Validation(
                        rule=f"self.all(v, !has(v.{mount}) || v.{mount} == '' || "
                        f"self.exists_one(w, has(w.{mount}) && w.{mount} == v.{mount}))",
                        message_expression=f"{cel_string(before_twice)} + {first_twice} + {cel_string(after_twice)}",
                    ),
                ),
            ),
            why=ITEM_NOT_NAMED,
        ),
        Rule(
            f"{d.id}/claim-required",
            f"a volume has a {claim} or a {claim_name}",
            Where.CRD_RULE,
            (Produces(f"{d.list}[*]", "REQUIRED", _exact(d.neither)),),
            (
                Placement(
                    items,
                    validation=Validation(
                        rule=f"has(self.{claim}) || ({name_set})", message=d.neither, reason="FieldValueRequired"
                    ),
                ),
            ),
        ),
        Rule(
            f"{d.id}/claim-conflict",
            f"a volume has a {claim} or a {claim_name}, not both",
            Where.CRD_RULE,
            (Produces(f"{d.list}[*].{claim_name}", "INVALID", _exact(d.both), apiserver_drops=2),),
            (
                Placement(
                    _path(parent),
                    validation=Validation(
                        rule=_create_only(
                            f"!has(self.{name}) || !self.{name}.exists(v, has(v.{claim}) && "
                            f"has(v.{claim_name}) && v.{claim_name} != '')",
                            True,
                        ),
                        message=d.both,
                        field_path=f".{name}",
                        optional_old_self=True,
                    ),
                ),
            ),
            why="CREATE only (the controller writes the name of the claim it creates); reported at the volumes "
            "(a rule on a list cannot name the item)",
        ),
        Rule(
            f"{d.id}/claim-name",
            f"a {claim_name} (without a {claim}) is a DNS-1123 subdomain",
            Where.CRD_RULE,
            (Produces(f"{d.list}[*].{claim_name}", "INVALID", "^" + _escape(before_name)),),
            tuple(
                Placement(
                    items,
                    validation=Validation(
                        rule=f"has(self.{claim}) || !({name_set}) || {rule}",
                        message_expression=f"{cel_string(before_name)} + self.{claim_name} + "
                        f"{cel_string(between + problem + after)}",
                        field_path=f".{claim_name}",
                    ),
                )
                for rule, problem in (
                    (f"size(self.{claim_name}) <= {SUBDOMAIN_MAX_LENGTH}", too_long),
                    (
                        f"self.{claim_name}.matches({cel_raw_string('^' + DNS1123_SUBDOMAIN + '$')})",
                        DNS1123_SUBDOMAIN_MESSAGE,
                    ),
                )
            ),
            why=f"not with a {claim}, whose claim's name the controller writes on UPDATE",
        ),
    ]


# --- forms only the kinds of a map of replica types use (KubeDL's, Kubeflow's) ---------------------


def _known_types(d: KnownTypes) -> Rule:
    """Rules on the map (a rule on a map cannot name the key): the message names it."""
    lowered = {t.casefold(): t for t in d.types}
    if d.any_case:
        # Another spelling (``worker``) is the defaults' to rename when no Worker is there; beside a
        # Worker it is a duplicate, and so are two other spellings of one type (neither renamed).
        unsupported = f"!(k.lowerAscii() in {cel_list(lowered)})"
        canonical = "{" + ", ".join(f"{cel_string(k)}: {cel_string(v)}" for k, v in lowered.items()) + "}"
        duplicate = (
            f"!(k in {cel_list(d.types)}) && k.lowerAscii() in {cel_list(lowered)} && "
            f"({canonical}[k.lowerAscii()] in self || self.exists(j, j != k && j.lowerAscii() == k.lowerAscii()))"
        )
    else:
        unsupported = f"!(k in {cel_list(d.types)})"
    supported = ", ".join(f'"{t}"' for t in d.types)
    at = _path(d.path)
    placements = [
        # A valid job has each type once at most: the bound the CEL cost estimate needs.
        Placement(at, {"maxProperties": len(d.types)}),
        Placement(
            at,
            validation=Validation(
                rule=f"!self.exists(k, {unsupported})",
                message_expression=f"'Unsupported value: \"' + self.filter(k, {unsupported})[0] + "
                f"'\": supported values: {supported}'",
            ),
        ),
    ]
    produces = [Produces(f"{d.path}[*]", "NOT_SUPPORTED", apiserver_drops=1)]
    if d.any_case:
        placements.append(
            Placement(
                at,
                validation=Validation(
                    rule=f"!self.exists(k, {duplicate})",
                    message_expression=f"'Duplicate value: \"' + self.filter(k, {duplicate})[0] + '\"'",
                ),
            )
        )
        produces.append(Produces(f"{d.path}[*]", "DUPLICATE", apiserver_drops=1))
    return Rule(d.id, d.summary, Where.CRD_RULE, tuple(produces), tuple(placements), why=d.why)


def _run_policy_places(place: str) -> tuple[tuple[str, str, str], ...]:
    """Where the run policy is (``RUN_POLICY_PLACES``): (CEL of it from spec's ``{v}``, its fieldPath
    from spec, CEL true when it is there). CEL cannot pick one of two differently typed objects: a rule
    is written per place."""
    if place not in RUN_POLICY_PLACES:
        raise FormError(f"the run policy is at one of {RUN_POLICY_PLACES}, not {place!r}")
    separate = ("{v}.runPolicy", ".runPolicy", "has({v}.runPolicy)")
    if place == "either":
        return (separate, ("{v}", "", "!has({v}.runPolicy)"))
    return (separate,) if place == "runPolicy" else (("{v}", "", "true"),)


def _run_policy_at_most_total(d: RunPolicyAtMostTotal) -> Rule:
    """A CRD rule on spec per place of the run policy."""
    top, *rest = _path(d.path)
    if top != "spec" or len(rest) != 1:
        raise FormError(f"{d.id}: the map is a field of spec, not {d.path}")
    entries = f"self.{rest[0]}"
    unset = " : ".join(f"t == {cel_string(name)} ? {n}" for name, n in d.counts) + f" : {d.others}"
    count = f"(has({entries}[t].replicas) ? {entries}[t].replicas : ({unset}))"
    total = f"{entries}.map(t, {count} > 0 ? {count} : 0).sum()"
    steps = d.field.split(".")
    placements = []
    produces = []
    for of, field_path, holds in _run_policy_places(d.place):
        policy = of.format(v="self")
        absent = " || ".join(f"!has({policy}.{'.'.join(steps[: i + 1])})" for i in range(len(steps)))
        placements.append(
            Placement(
                ("spec",),
                validation=Validation(
                    rule=f"!{holds.format(v='self')} || {absent} || !has({entries}) || {policy}.{d.field} <= {total}",
                    message=d.message,
                    field_path=f"{field_path}.{d.field}",
                ),
            )
        )
        produces.append(Produces(f"spec{field_path}.{d.field}", "INVALID", "^" + _escape(d.message) + r"( \(\d+\))?$"))
    return Rule(d.id, d.summary, Where.CRD_RULE, tuple(produces), tuple(placements))


def _run_policy_immutable(d: RunPolicyImmutable) -> Rule:
    """Transition rules on spec: the error where the new value is, else where the old one was."""
    places = _run_policy_places(d.place)
    steps = d.field.split(".")

    def value(place: tuple[str, str, str], variable: str) -> str:
        policy = place[0].format(v=variable)
        present = " && ".join(f"has({policy}.{'.'.join(steps[: i + 1])})" for i in range(len(steps)))
        return f"({present} ? {policy}.{d.field} : '')"

    def either(variable: str) -> str:
        if len(places) == 1:
            return value(places[0], variable)
        first, second = places
        return f"({first[2].format(v=variable)} ? {value(first, variable)} : {value(second, variable)})"

    new, old = either("self"), either("oldSelf")
    placements = []
    produces = []
    for place in places:
        here = f"{place[1]}.{d.field}"
        here_now, here_before = place[2].format(v="self"), place[2].format(v="oldSelf")
        for condition in (f"{new} != '' && {here_now}", f"{new} == '' && {here_before}"):
            placements.append(
                Placement(
                    ("spec",),
                    validation=Validation(rule=f"!({condition}) || {new} == {old}", message=d.message, field_path=here),
                )
            )
        produces.append(Produces(f"spec{here}", "INVALID", _exact(d.message)))
    return Rule(d.id, d.summary, Where.TRANSITION, tuple(produces), tuple(placements))


def _type_field_default(d: DefaultTypeField) -> Default:
    """A patch of each value whose key has a value (``k``: the key); a schema default on the map's
    values as well when all of them get one value, "" is no unset one and no other key gets one (a
    schema default cannot tell the keys apart: the types' defaults agree, the other keys' are refused)."""
    entries = f"object.{d.path}"
    pointer = f"'/{d.path.replace('.', '/')}/' + jsonpatch.escapeKey(k)"
    types = [t for t, _ in d.values]
    if d.others is None:
        known = f"k in {cel_list(types)}"
        value = "{" + ", ".join(f"{cel_string(t)}: {_literal(v)}" for t, v in d.values) + "}[k]"
    else:
        known = "true"
        value = "(" + " : ".join(f"k == {cel_string(t)} ? {_literal(v)}" for t, v in d.values)
        value += f" : {_literal(d.others)})"
    field = f"{entries}[k].{d.field}"
    unset = f"(!has({field}) || {field} == {_empty(d.values[0][1])})" if d.empty_is_unset else f"!has({field})"
    patch = (
        f"has({entries}) ? {entries}.filter(k, {known} && {unset})"
        f".map(k, JSONPatch{{op: 'add', path: {pointer} + '/{d.field}', value: {value}}}) : []"
    )
    uniform = _schema_defaulted(d)
    return Default(
        d.id,
        d.summary,
        Where.SCHEMA_DEFAULT if uniform else Where.MUTATING_POLICY,
        (patch,),
        (Placement((*_path(d.path), MAP_VALUES, d.field), {"default": d.values[0][1]}),) if uniform else (),
    )


def _type_spelling_default(d: DefaultTypeSpelling) -> Default:
    """A policy patch of a move (and, on UPDATE, a remove of the stale entry) per other spelling."""
    entries, before = f"object.{d.path}", f"oldObject.{d.path}"
    pointer = "/" + d.path.replace(".", "/") + "/"
    entry = f"'{pointer}' + jsonpatch.escapeKey(k)"
    canonical = "{" + ", ".join(f"{cel_string(t.casefold())}: {cel_string(t)}" for t in d.types) + "}"
    to = f"{canonical}[k.lowerAscii()]"
    stale = (
        f"(oldObject != null && has({before}) && !(k in {before}) && {to} in {before} && "
        f"{to} in {entries} && {entries}[{to}] == {before}[{to}])"
    )
    movable = (
        f"!(k in {cel_list(d.types)}) && k.lowerAscii() in {cel_list(t.casefold() for t in d.types)} && "
        f"{entries}.filter(j, !(j in {cel_list(d.types)}) && j.lowerAscii() == k.lowerAscii()).size() == 1 && "
        f"(!({to} in {entries}) || {stale})"
    )
    patch = (
        f"has({entries}) ? {entries}.filter(k, {movable}).map(k, "
        f"({stale} ? [JSONPatch{{op: 'remove', path: '{pointer}' + {to}}}] : []) + "
        f"[JSONPatch{{op: 'move', from: {entry}, path: '{pointer}' + {to}}}]).flatten() : []"
    )
    return Default(d.id, d.summary, Where.MUTATING_POLICY, (patch,))


def _schema_defaulted(d: DefaultTypeField) -> bool:
    """Whether the CRD's schema gives the field its default (every type's value the same, no other
    key's, "" no unset one): a schema default cannot tell the keys apart."""
    return len({v for _, v in d.values}) == 1 and d.others is None and not d.empty_is_unset


def _field_default_lines(d: DefaultField) -> list[str]:
    """The Python ``DefaultField``, written out: the objects on the way read, and when the field is
    unset the field's object copied with it set and ``obj`` rebuilt down to it. With conditions on
    other fields (``unless``, ``when_set``), the form's function (``default_field``)."""
    steps = _path(d.path)
    if d.unless or d.when_set:
        unless = f", unless={tuple(_path(o) for o in d.unless)!r}" if d.unless else ""
        unless += f", when_set={tuple(field_steps(o) for o in d.when_set)!r}" if d.when_set else ""
        return [f"        obj = default_field(obj, recorder, {steps!r}, {d.value!r}, {d.empty_is_unset!r}{unless})"]
    names = _step_names(steps[:-1], _DEFAULT_NAMES)
    parents = ["obj", *names]
    lines = _read_lines(parents, names, steps)
    holder = parents[-1]
    unset = _unset(f"{holder}.get({steps[-1]!r})", d.value, d.empty_is_unset)
    lines += [
        f"        if isinstance({holder}, dict) and {unset}:",
        f"            {holder} = dict({holder})",
        # A list or object literal is a new one each time: the job's own.
        f"            recorder.set({holder}, {steps[-1]!r}, {d.value!r}, {'/' + '/'.join(steps[:-1])!r})",
    ]
    rebuilt = holder
    for parent, step in reversed(list(zip(parents[:-1], steps[:-1], strict=True))):
        rebuilt = f"{{**{parent}, {step!r}: {rebuilt}}}"
    lines.append(f"            obj = {rebuilt}")
    return lines


def _step_names(steps: Sequence[str], taken: frozenset[str]) -> list[str]:
    """Variable names for the objects reached by ``steps`` in generated code: the steps' own where they can be."""
    return [s if s.isidentifier() and s not in taken else f"at_{i}" for i, s in enumerate(steps)]


def _read_lines(parents: Sequence[str], names: Sequence[str], steps: Sequence[str]) -> list[str]:
    """Generated lines reading each object on the way (``names[i]`` from ``parents[i]``), MISSING (no
    object) where one is not there. MISSING, not None: typed ``Any``, so that the compiled build's types
    need no test the code does not already make."""
    return [
        f"        {name} = {parent}.get({step!r}, MISSING)"
        + (f" if isinstance({parent}, dict) else MISSING" if i else "")
        for i, (parent, name, step) in enumerate(zip(parents, names, steps, strict=False))
    ]


def _known_types_lines(d: KnownTypes) -> list[str]:
    """The Python ``KnownTypes``, written out: the map read object by object and its keys looked up
    among the types (a literal); at the first other key the form's function reports them all."""
    steps = _path(d.path)
    names = _step_names(steps, _CHECK_NAMES)
    return [
        *_read_lines(["obj", *names], names, steps),
        f"        if isinstance({names[-1]}, dict):",
        f"            for key in {names[-1]}:",
        f"                if key not in {d.types!r}:",
        f"                    errors.extend(known_types(obj, {steps!r}, {d.types!r}, {d.any_case!r}))",
        "                    break",
    ]


def _at_most_total_lines(d: RunPolicyAtMostTotal) -> list[str]:
    """The Python ``RunPolicyAtMostTotal``, written out: the bound read where the run policy is
    (``place``), and only when it is set the replicas counted (``run_policy_at_most_total``'s reading)."""
    field = _path(d.field)
    steps = _path(d.path)
    if d.place == "spec":
        policy = ["            policy = spec"]
        at = f"{('spec', *field)!r}"
    elif d.place == "runPolicy":
        policy = ["            policy = spec.get('runPolicy', MISSING)"]
        at = f"{('spec', 'runPolicy', *field)!r}"
    else:  # "either": spec.runPolicy when it is an object, else spec
        policy = [
            "            policy = spec.get('runPolicy', MISSING)",
            "            separate = isinstance(policy, dict)",
            "            if not separate:",
            "                policy = spec",
        ]
        at = f"({('spec', 'runPolicy', *field)!r} if separate else {('spec', *field)!r})"
    parents = _step_names(field[:-1], _CHECK_NAMES | {"spec", "policy", "separate"})
    holder = parents[-1] if parents else "policy"
    reads = [
        f"            {name} = {parent}.get({step!r}, MISSING)"
        + (f" if isinstance({parent}, dict) else MISSING" if i else "")
        for i, (parent, name, step) in enumerate(zip(["policy", *parents], parents, field[:-1], strict=False))
    ]
    if d.place == "runPolicy" and reads:
        reads[0] += " if isinstance(policy, dict) else MISSING"
    bound = f"as_int({holder}.get({field[-1]!r}))"
    # The map from spec when it is under spec (read already), else from the job.
    start, rest = ("spec", steps[1:]) if steps[0] == "spec" else ("obj", steps)
    maps = _step_names(rest, _CHECK_NAMES | {"spec", "policy", "separate", *parents}) if rest else []
    entries = maps[-1] if maps else start
    map_reads = [
        f"                {name} = {parent}.get({step!r}, MISSING)"
        + (f" if isinstance({parent}, dict) else MISSING" if i or parent != "spec" else "")
        for i, (parent, name, step) in enumerate(zip([start, *maps], maps, rest, strict=False))
    ]
    return [
        "        spec = obj.get('spec', MISSING)",
        "        if isinstance(spec, dict):",
        *policy,
        *reads,
        f"            number = {bound} if isinstance({holder}, dict) else None",
        "            if number is not None:",
        *map_reads,
        "                total = 0",
        f"                if isinstance({entries}, dict):",
        f"                    for entry in {entries}.values():",
        "                        count = as_int(entry.get('replicas')) if isinstance(entry, dict) else None",
        "                        if count is not None and count > 0:",
        "                            total += count",
        "                if number > total:",
        f"                    errors.append(invalid({at}, number, {d.message + ' ('!r} + str(total) + ')'))",
    ]


# Names the generated checks use themselves.
_CHECK_NAMES = frozenset(("obj", "old", "only", "errors", "node", "parent", "holder", "value", "number"))
# Names the generated defaults use themselves.
_DEFAULT_NAMES = frozenset(("obj", "recorder", "only", "previous"))


def _unset(current: str, default: Scalar | list[Scalar] | dict[str, Scalar], empty_is_unset: bool) -> str:
    """Python true when the field read by ``current`` (a name) is unset: None, or with ``empty_is_unset``
    the zero of the default's type ("" or 0: declared.py's ``_is_empty``)."""
    if not empty_is_unset:
        return f"{current} is None"
    if isinstance(default, int) and not isinstance(default, bool):
        return f"({current} is None or as_int({current}) == 0)"
    return f"{current} in (None, '')"


def _port_lines(d: DefaultTemplatePort) -> list[str]:
    """The Python ``DefaultTemplatePort`` of one value of the map, written out (``with_port``'s reading):
    the port on the container named ``container`` (with ``requires_named``: only there; else the
    first container) unless a port of its name is there, the objects on the way copied into ``value``
    (a copy the caller owns) only then. Its locals are its own (``port_*``): mypyc gives a local one
    type for the whole function, and another block of the generated function may hold a dict in a
    local of the same name, which would turn a non-object here into a TypeError."""
    lines = [
        "        port_template = value.get('template', MISSING)",
        "        port_spec = port_template.get('spec', MISSING) if isinstance(port_template, dict) else MISSING",
        "        port_containers = port_spec.get('containers', MISSING) if isinstance(port_spec, dict) else MISSING",
        "        if isinstance(port_containers, list) and port_containers:",
        "            port_target = -1",
        "            for port_index, port_given in enumerate(port_containers):",
        f"                if isinstance(port_given, dict) and port_given.get('name') == {d.container!r}:",
        "                    port_target = port_index",
        "                    break",
    ]
    if not d.requires_named:
        lines += ["            if port_target < 0:", "                port_target = 0"]
    return [
        *lines,
        "            port_item = port_containers[port_target] if port_target >= 0 else MISSING",
        "            port_list = port_item.get('ports') if isinstance(port_item, dict) else MISSING",
        "            if port_list is None or isinstance(port_list, list):",
        "                for port_existing in port_list or ():",
        f"                    if isinstance(port_existing, dict) and port_existing.get('name') == {d.port_name!r}:",
        "                        break",
        "                else:",
        "                    port_template = value['template'] = dict(port_template)",
        "                    port_spec = port_template['spec'] = dict(port_spec)",
        "                    port_containers = port_spec['containers'] = list(port_containers)",
        "                    port_item = port_containers[port_target] = dict(port_item)",
        f"                    port = {{'name': {d.port_name!r}, 'containerPort': {d.port!r}}}",
        "                    at = pointer + '/template/spec/containers/' + str(port_target)",
        "                    recorder.append(port_item, 'ports', port, at)",
    ]


def _value_list_lines(group: Sequence[DefaultItemField]) -> list[str]:
    """The Python defaults of the entries of one list of a map's value (``{*}.template.spec.containers``),
    written out: the objects on the way to the list and the list copied into ``value`` (a copy the
    caller owns), an entry copied when it changes. A default of an entry's object's field or from
    another field of the entry is the form's function's (``default_item_fields``)."""
    ids = tuple(o.id for o in group)
    steps = _path(group[0].list.partition("{*}.")[2])
    guard = "not only" + (f" or {ids[0]!r} in only" if len(ids) == 1 else f" or any(i in only for i in {ids!r})")
    if any("." in o.field or o.from_field for o in group):
        fields = tuple((o.field, o.value, o.empty_is_unset, o.from_field) for o in group)
        chosen = f"tuple(f for i, f in zip({ids!r}, {fields!r}, strict=True) if not only or i in only)"
        return [
            f"    if {guard}:",
            f"        value = default_item_fields(value, recorder, {steps!r}, {chosen}, pointer)",
        ]
    names = _step_names(steps, _VALUE_NAMES)
    parents = ["value", *names[:-1]]
    lines = [f"    if {guard}:", *_read_lines(parents, names, steps)]
    items = names[-1]
    lines.append(f"        if isinstance({items}, list):")
    for parent, name, step in zip(parents, names, steps, strict=True):
        copy = "list" if name == items else "dict"
        lines.append(f"            {name} = {parent}[{step!r}] = {copy}({name})")
    lines += [
        f"            at = pointer + {'/' + '/'.join(steps) + '/'!r}",
        f"            for index, given in enumerate({items}):",
        "                if not isinstance(given, dict):",
        "                    continue",
        "                item = given",
    ]
    for o in group:
        only = f"(not only or {o.id!r} in only) and " if len(group) > 1 else ""
        lines += [
            f"                if {only}{_unset(f'item.get({o.field!r})', o.value, o.empty_is_unset)}:",
            "                    if item is given:",
            f"                        item = {items}[index] = dict(given)",
            # A list or object literal is a new one each time: each entry's own.
            f"                    recorder.set(item, {o.field!r}, {o.value!r}, at + str(index))",
        ]
    return lines


# Names the generated defaults of a map's value use themselves.
_VALUE_NAMES = frozenset(("value", "key", "pointer", "recorder", "only", "at", "index", "given", "item", "default"))


def _type_field_lines(d: DefaultTypeField) -> list[str]:
    """The Python default of one value's field by its key (``key``), unset (or empty, with
    ``empty_is_unset``) in ``value``: the key's value chosen by literal tests of the key."""
    # Where the schema defaults the field, the apiserver gives every key of the map the value, other
    # keys too, before any webhook or rule sees the job: so does the Python default.
    others = d.values[0][1] if _schema_defaulted(d) else d.others
    by_value: dict[Scalar, list[str]] = {}
    for key, value in d.values:
        by_value.setdefault(value, []).append(key)
    unset = _unset(f"value.get({d.field!r})", d.values[0][1], d.empty_is_unset)
    if len(by_value) == 1 and others in (None, d.values[0][1]):
        value, keys = next(iter(by_value.items()))
        guard = "" if others is not None else f"key in {tuple(keys)!r} and "
        return [f"        if {guard}{unset}:", f"            recorder.set(value, {d.field!r}, {value!r}, pointer)"]
    chosen = " else ".join(f"{value!r} if key in {tuple(keys)!r}" for value, keys in by_value.items())
    guard = "default is not None and " if others is None else ""
    return [
        f"        default = {chosen} else {others!r}",
        f"        if {guard}{unset}:",
        f"            recorder.set(value, {d.field!r}, default, pointer)",
    ]


def _template_port_default(d: DefaultTemplatePort) -> Default:
    """A policy patch per role's template: the port appended to the named container's ports (or the
    first container's), or its ports made of it."""
    entries = f"object.{d.path}"
    template = f"{entries}[k].template"
    containers = f"{template}.spec.containers"
    pointer = f"'/{d.path.replace('.', '/')}/' + jsonpatch.escapeKey(k) + '/template'"
    named = f"has(c.name) && c.name == {cel_string(d.container)}"
    needs = f"!(has(c.ports) && c.ports.exists(p, has(p.name) && p.name == {cel_string(d.port_name)}))"
    # The apiserver's CEL wants literals of one type: the port's name and number are made dyn.
    value = f"{{'name': dyn({cel_string(d.port_name)}), 'containerPort': dyn({d.port})}}"
    at = f"{pointer} + '/spec/containers/' + string(i) + '/ports"
    add = (
        f"(has(c.ports) ? JSONPatch{{op: 'add', path: {at}/-', value: {value}}} : "
        f"JSONPatch{{op: 'add', path: {at}', value: [{value}]}})"
    )
    on_named = f"{containers}.transformList(i, c, {named} && {needs}, {add})"
    on_first = "[]" if d.requires_named else f"{containers}.transformList(i, c, i == 0 && {needs}, {add})"
    role = f"k in {cel_list(d.roles)}"
    if d.others:
        role = f"({role} || !(k in {cel_list(d.known)}))"
    patch = (
        f"(has({entries}) ? {entries}.filter(k, has({template}) && {role} && has({template}.spec) && "
        f"has({containers}) && size({containers}) > 0)"
        f".map(k, ({containers}.exists(c, {named}) ? {on_named} : {on_first})).flatten() : [])"
    )
    return Default(d.id, d.summary, Where.MUTATING_POLICY, (patch,))


def _value_map(d: Declaration) -> str:
    """The map whose every value ``d`` defaults (``spec.tfReplicaSpecs``), "" for another declaration."""
    if isinstance(d, DefaultTypeField | DefaultTemplatePort):
        return d.path
    if isinstance(d, DefaultItemField) and "{*}" in d.list:
        return d.list.partition("{*}")[0]
    return ""


def _runs_in_python(d: Declaration) -> bool:
    """Whether the generated defaulting runs ``d`` (a type's spelling is run by the engine itself)."""
    return not isinstance(d, DefaultTypeSpelling)


# --- forms only T9k's and DI-engine's rules use (jobgate/rules/forms.py's last block) -------------------


def _common_parent(paths: Sequence[str]) -> tuple[str, ...]:
    """The steps every path starts with, short of the last step of any: where a rule that reads them all sits."""
    split = [_path(p) for p in paths]
    common: list[str] = []
    for steps in zip(*split, strict=False):
        if len(set(steps)) > 1:
            break
        common.append(steps[0])
    return tuple(common[: min(len(s) for s in split) - 1])


def _entry_ids(d: RefersTo | IndexMaps | NamedEntries | EntriesUnchanged) -> tuple[str, ...]:
    """The ids of the rules one check of these forms reports."""
    if isinstance(d, IndexMaps):
        return (d.id, d.unknown_id, d.unlisted_id, d.index_id)
    if isinstance(d, NamedEntries):
        return tuple(i for i in (d.singleton_id, d.required_id, d.label_id, d.unique_id) if i)
    if isinstance(d, RefersTo) and d.unique_id:
        return (d.id, d.unique_id)
    return (d.id,)


def _known_names(target: str, by: str, bound: int) -> str:
    """CEL of the entries' ``by`` joined by ', ', each entry written out up to ``bound`` (CEL's cost
    estimator cannot size join())."""
    parts = []
    for index in range(bound):
        value = f"(has({target}[{index}].{by}) ? {target}[{index}].{by} : '')"
        joined = value if index == 0 else "', ' + " + value
        parts.append(f"(size({target}) > {index} ? {joined} : '')")
    return "(" + " + ".join(parts) + ")"


def _template_pattern(template: str) -> str:
    """The pattern of a message with ``{placeholders}``: its words exact, each placeholder any text."""
    return ".*".join(_escape(part) for part in re.split(r"\{\w+\}", template))


def _cel_template(template: str, values: dict[str, str]) -> str:
    """CEL of a message with ``{placeholders}``, each the CEL (a string) ``values`` gives."""
    out = []
    for position, part in enumerate(re.split(r"\{(\w+)\}", template)):
        if position % 2:
            out.append(values[part])
        elif part:
            out.append(cel_string(part))
    return " + ".join(out) or "''"


def _index_maps_rules(d: IndexMaps) -> list[Rule]:
    """``IndexMaps``: the map's emptiness and its names' index lists by CRD rules on each map; its
    names by a CRD rule per list on the lists' common parent (reported at the list); the indices by
    a ValidatingAdmissionPolicy that reads each entry's count once per request."""
    at = _common_parent((d.list, *d.paths))
    target = "self." + ".".join(_path(d.list)[len(at) :])
    known = f"{target}.exists(r, has(r.{d.by}) && r.{d.by} == t)"
    before, after = _split(d.unknown, "known")
    lists = []
    for path in d.paths:
        steps = _path(path)[len(at) :]
        present = f"!has(self.{steps[0]})" if len(steps) == 1 else f"!{_has_chain('self', steps)}"
        lists.append((path, steps, present, "self." + ".".join(steps)))
    # Each entry's name and count, computed once per request (the most maps, the defaults' count, read them).
    variables = (
        ("replicaTypes", f"has(object.{d.list}) ? object.{d.list}.map(r, has(r.{d.by}) ? r.{d.by} : '') : []"),
        (
            "replicaCounts",
            f"has(object.{d.list}) ? object.{d.list}.map(r, has(r.{d.count}) ? r.{d.count} : {d.unset}) : []",
        ),
    )
    replicas = "variables.replicaCounts[variables.replicaTypes.indexOf(t)]"

    def bad_index(rule: str, path: str) -> str:
        """CEL of the webhook's line for the first index of a map that is no replica of its name, ''
        when none."""
        below = _cel_template(d.below, {"count": f"string({replicas})", "name": "t", "last": f"string({replicas} - 1)"})
        detail = f"({replicas} > 0 ? {below} : {_cel_template(d.none, {'name': 't'})})"
        line = (
            f"{path} + '[' + t + '][' + string({rule}[t].indexOf(i)) + ']: Invalid value: ' + string(i) + ': ' + "
            + detail
        )
        per_name = f"(({rule}[t].map(i, i < 0 || i >= {replicas} ? {line} : '').filter(m, m != '') + [''])[0])"
        return f"(({rule}.map(t, t in variables.replicaTypes ? {per_name} : '').filter(m, m != '') + [''])[0])"

    return [
        Rule(
            d.id,
            d.summary,
            Where.CRD_RULE,
            tuple(Produces(f"{p}[*]", "REQUIRED", _exact(d.empty)) for p in d.paths),
            tuple(
                Placement(
                    (*_path(p), LIST_ITEMS),
                    validation=Validation(rule="size(self) > 0", message=d.empty, reason="FieldValueRequired"),
                )
                for p in d.paths
            ),
        ),
        Rule(
            d.unknown_id,
            d.unknown_summary,
            Where.CRD_RULE,
            tuple(
                Produces(f"{p}[*][*]", "NOT_FOUND", f"^{_escape(before)}.*{_escape(after)}$", apiserver_drops=2)
                for p in d.paths
            ),
            tuple(
                Placement(
                    at,
                    validation=Validation(
                        rule=f"{absent} || !has({target}) || {items}.all(rule, rule.all(t, {known}))",
                        # The webhook names the name too: CEL's cost estimator cannot size a key of a map in a list.
                        message_expression=f"{cel_string('Not found: ' + before)} + "
                        f"{_known_names(target, d.by, d.bound)}" + (f" + {cel_string(after)}" if after else ""),
                        field_path="." + ".".join(steps),
                    ),
                )
                for _, steps, absent, items in lists
            ),
            why="reported at the list of maps (a rule on their parent, which sees the names, cannot name the item)",
        ),
        Rule(
            d.unlisted_id,
            d.unlisted_summary,
            Where.CRD_RULE,
            tuple(Produces(f"{p}[*][*]", "REQUIRED", _exact(d.unlisted), apiserver_drops=1) for p in d.paths),
            tuple(
                Placement(
                    (*_path(p), LIST_ITEMS),
                    validation=Validation(
                        rule="self.all(t, size(self[t]) > 0)",
                        message_expression=f"self.filter(t, size(self[t]) == 0)[0] + {cel_string(': ' + d.unlisted)}",
                        reason="FieldValueRequired",
                    ),
                )
                for p in d.paths
            ),
            why="reported at the map (a rule on a map cannot name the key)",
        ),
        Rule(
            d.index_id,
            d.index_summary,
            Where.POLICY,
            tuple(
                Produces(f"{p}[*][*][*]", "INVALID", f"^({_template_pattern(d.below)}|{_template_pattern(d.none)})$")
                for p in d.paths
            ),
            policy=tuple(
                PolicyValidation(first_message((*_path(p), LIST_ITEMS), bad_index), variables=variables)
                for p in d.paths
            ),
            why=d.index_why,
        ),
    ]


def _named_entries_rules(d: NamedEntries) -> list[Rule]:
    """``NamedEntries``: a CRD rule per singleton type on the list; the name required by a CRD rule on
    each entry (reading the type through its default), or with ``several`` on the list; the label by
    schema keywords; the names' uniqueness by a CRD rule on the list."""
    path = _path(d.path)
    summaries = list(d.summaries)
    if len(summaries) != (4 if d.singleton_id else 3):
        raise FormError(f"{d.id}: a summary for each of its rules")
    if d.type and d.several:
        raise FormError(f"{d.id}: a name required of typed entries in a list of any length")
    out = []
    if d.singleton_id:
        before, after = _split(d.singleton, "type")
        out.append(
            Rule(
                d.singleton_id,
                summaries.pop(0),
                Where.CRD_RULE,
                (
                    Produces(
                        f"{d.path}[*].{d.type}",
                        "INVALID",
                        f"^{_escape(before)}({'|'.join(d.singletons)}){_escape(after)}",
                        apiserver_drops=2,
                    ),
                ),
                tuple(
                    Placement(
                        path,
                        validation=Validation(
                            rule=f"self.filter(t, has(t.{d.type}) && t.{d.type} == {cel_string(value)}).size() <= 1",
                            # The webhook also names the first entry of the type: CEL's cost estimator cannot
                            # size an index.
                            message=d.singleton.format(type=value),
                        ),
                    )
                    for value in d.singletons
                ),
                why=AT_LIST,
            )
        )
    required, label, unique = summaries
    named = "(has({e}.{n}) && {e}.{n} != '')"
    if d.several:
        out.append(
            Rule(
                d.required_id,
                required,
                Where.CRD_RULE,
                (Produces(f"{d.path}[*].{d.name}", "REQUIRED", _exact(d.unnamed), apiserver_drops=2),),
                (
                    Placement(
                        path,
                        validation=Validation(
                            rule=f"size(self) <= 1 || self.all(p, has(p.{d.name}) && p.{d.name} != '')",
                            message=d.unnamed,
                            reason="FieldValueRequired",
                        ),
                    ),
                ),
                why=AT_LIST,
            )
        )
    else:
        holds = named.format(e="self", n=d.name)
        detail = _exact(d.unnamed)
        if d.type:
            kind = f"(has(self.{d.type}) && self.{d.type} != '' ? self.{d.type} : {cel_string(d.untyped)})"
            holds = f"{kind} != {cel_string(d.untyped)} || {holds}"
            detail = f"^({_escape(d.unnamed)})?$"  # a typed entry's name: no detail
        out.append(
            Rule(
                d.required_id,
                required,
                Where.CRD_RULE,
                (Produces(f"{d.path}[*].{d.name}", "REQUIRED", detail),),
                (
                    Placement(
                        (*path, LIST_ITEMS),
                        validation=Validation(
                            rule=holds, message=d.unnamed, field_path=f".{d.name}", reason="FieldValueRequired"
                        ),
                    ),
                ),
            )
        )
    out += [
        Rule(
            d.label_id,
            label,
            Where.SCHEMA,
            (Produces(f"{d.path}[*].{d.name}", "INVALID", LABEL_PROBLEM),),
            (
                Placement(
                    (*path, LIST_ITEMS, d.name), {"pattern": OPTIONAL_LABEL_PATTERN, "maxLength": LABEL_MAX_LENGTH}
                ),
            ),
        ),
        Rule(
            d.unique_id,
            unique,
            Where.CRD_RULE,
            (Produces(f"{d.path}[*].{d.name}", "DUPLICATE", apiserver_drops=2),),
            (Placement(path, validation=unique_field(d.name, empty_counts=False)),),
            why=AT_LIST,
        ),
    ]
    return out


def _entries_unchanged_rule(d: EntriesUnchanged) -> Rule:
    """``EntriesUnchanged``: a transition rule on the list's parent, comparing each field's list."""
    parent, name = d.path.rsplit(".", 1)

    def of(version: str, field: str) -> str:
        value = f"r.{field}" if field in d.required else f"has(r.{field}) ? r.{field} : ''"
        return f"{version}.{name}.map(r, {value})"

    same = " && ".join(f"{of('self', f)} == {of('oldSelf', f)}" for f in d.fields)
    return Rule(
        d.id,
        d.summary,
        Where.TRANSITION,
        (Produces(d.path, "FORBIDDEN", _exact(d.message)),),
        (
            Placement(
                _path(parent),
                validation=Validation(
                    rule=f"!has(oldSelf.{name}) || !has(self.{name}) || ({same})",
                    message=d.message,
                    field_path=f".{name}",
                    reason="FieldValueForbidden",
                ),
            ),
        ),
    )


REFERS_AT_LIST = "reported at the list (a rule on the lists' parent, which sees both, cannot name the item)"


def _entry_rules(d: RefersTo) -> list[Rule]:
    """``RefersTo``: a CRD rule per list on the lists' common parent, reported at the list (a rule
    there cannot name the entry); the duplicate's too, with ``unique_id``."""
    at = _common_parent((d.list, *d.paths))
    target = "self." + ".".join(_path(d.list)[len(at) :])
    by, key = d.by, d.key

    def known(value: str) -> str:
        return f"{target}.exists(r, has(r.{by}) && r.{by} == {value})"

    known_text = _known_names(target, by, d.bound)
    before, after = _split(d.message, "known")
    # CEL of the webhook's words for a value that names no entry (``unknown``: CEL of it).
    shown = "'Not found: \"' + {unknown} + " + cel_string('": ' + before) + " + " + known_text
    shown += f" + {cel_string(after)}" if after else ""
    lists = []
    for path in d.paths:
        steps = _path(path)[len(at) :]
        items = "self." + ".".join(steps)
        lists.append((path, "." + ".".join(steps), f"!{_has_chain('self', steps)} || !has({target})", items))
    why = d.why or REFERS_AT_LIST
    out = [
        Rule(
            d.id,
            d.summary,
            Where.CRD_RULE,
            tuple(
                Produces(f"{p}[*].{key}", "NOT_FOUND", f"^{_escape(before)}.*{_escape(after)}$", apiserver_drops=2)
                for p, *_ in lists
            ),
            tuple(
                Placement(
                    at,
                    validation=Validation(
                        rule=f"{absent} || {items}.all(e, !has(e.{key}) || e.{key} == '' || {known('e.' + key)})",
                        message_expression=shown.replace(
                            "{unknown}",
                            f"{items}.map(e, has(e.{key}) ? e.{key} : '').filter(t, t != '' && !{known('t')})[0]",
                        ),
                        field_path=field_path,
                    ),
                )
                for _, field_path, absent, items in lists
            ),
            why=why,
        )
    ]
    if d.unique_id:
        once = "{items}.exists_one(f, has(f.{key}) && f.{key} == e.{key}))"
        out.append(
            Rule(
                d.unique_id,
                d.unique_summary,
                Where.CRD_RULE,
                tuple(Produces(f"{p}[*].{key}", "DUPLICATE", apiserver_drops=2) for p, *_ in lists),
                tuple(
                    Placement(
                        at,
                        validation=Validation(
                            # A value that names no entry is not found, not twice.
                            rule=f"{absent} || {items}.all(e, !has(e.{key}) || !{known('e.' + key)} || "
                            + once.format(items=items, key=key),
                            message_expression="'Duplicate value: \"' + "
                            f"{items}.map(e, has(e.{key}) ? e.{key} : '').filter(t, {known('t')} && "
                            f"{items}.filter(f, has(f.{key}) && f.{key} == t).size() > 1)[0] + '\"'",
                            field_path=field_path,
                        ),
                    )
                    for _, field_path, absent, items in lists
                ),
                why=why,
            )
        )
    return out


__all__ = ["Declarations", "FormError", "cost_report", "declared_module_text", "field_steps"]


def _finish_rules_default(d: DefaultFinishRules) -> Default:
    """``DefaultFinishRules``: a policy patch, the rules written out for the counts, when there are none,
    or when they are the defaults of ``oldObject``'s counts and the counts changed."""
    at, items = _path(d.path), _path(d.list)
    if len(at) < 2 or at[:-1] != items[:-1]:
        raise FormError(f"{d.id}: the rules ({d.path}) and the entries ({d.list}) are fields of one object")
    given = f"object.{d.path}"
    pointer = "/" + "/".join(at)
    new, old = f"object.{d.list}", f"oldObject.{d.list}"
    name = f"r.{d.by}"

    def count(entry: str) -> str:
        return f"(has({entry}.{d.count}) ? {entry}.{d.count} : {d.unset})"

    def counted(entries: str) -> str:
        """CEL true when the entries' counts are those rules are written for (``_finish_counts``). Unlike the
        webhook, no rules past ``max_entries`` entries (the CRD's bound, the same): the job is refused for
        its entries alone, not also for a rule naming more of them than a rule may."""
        return (
            f"(has({entries}) && size({entries}) > 0 && size({entries}) <= {d.max_entries} && "
            f"{entries}.all(r, has({name}) && {name} != '' && (!has(r.{d.count}) || r.{d.count} >= 0) && "
            f"{entries}.exists_one(q, has(q.{d.by}) && q.{d.by} == {name})) && "
            f"{entries}.map(r, {count('r')}).sum() <= {d.max_replicas})"
        )

    def each_rules(entries: str) -> str:
        return f"{entries}.map(r, lists.range({count('r')}).map(i, {{{name}: [i]}})).flatten()"

    if d.each:
        matches_old = f"{given} == {each_rules(old)}"
        write = (
            f"({new}.map(r, {count('r')}).sum() == 0 ? [] : "
            f"[JSONPatch{{op: 'add', path: '{pointer}', value: {each_rules(new)}}}])"
        )
    else:
        # The stored counts' one rule: each entry of a count above 0 with its indices, no other name.
        listed = f"{old}.filter(r, {count('r')} > 0)"
        matches_old = (
            f"({listed}.size() == 0 ? size({given}) == 0 : "
            f"(size({given}) == 1 && size({given}[0]) == {listed}.size() && "
            f"{listed}.all(r, {name} in {given}[0] && {given}[0][{name}] == lists.range({count('r')}))))"
        )
        positive = f"{new}.filter(r, {count('r')} > 0)"
        write = (
            f"({positive}.size() == 0 ? [] : [JSONPatch{{op: 'add', path: '{pointer}', value: [{{}}]}}] + "
            f"{positive}.map(r, JSONPatch{{op: 'add', path: '{pointer}/0/' + jsonpatch.escapeKey({name}), "
            f"value: lists.range({count('r')})}}))"
        )
    old_parents = " && ".join(f"has(oldObject.{'.'.join(items[: i + 1])})" for i in range(len(items) - 1))
    same = f"q.{d.by} == {name} && {count('q')} == {count('r')}"
    differ = f"(size({new}) != size({old}) || {new}.exists(r, !{old}.exists(q, {same})))"
    # Rules written for the stored counts follow a scale; rules a user wrote never change.
    rescaled = f"(oldObject != null && {old_parents} && {counted(old)} && {differ} && has({given}) && {matches_old})"
    patch = f"{counted(new)} && (!has({given}) || {rescaled}) ? {write} : []"
    return Default(d.id, d.summary, Where.MUTATING_POLICY, (patch,))


def _finish_rules_call(d: DefaultFinishRules) -> str:
    return (
        f"default_finish_rules(obj, recorder, previous, path={_path(d.path)!r}, items_path={_path(d.list)!r}, "
        f"by={d.by!r}, count={d.count!r}, unset={d.unset!r}, each={d.each!r}, "
        f"bounds={(d.max_entries, d.max_replicas)!r})"
    )
