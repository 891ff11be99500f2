"""The generic default forms: ``DefaultField`` and ``DefaultItemField`` (declaration, schema default
and policy patch, generated Python).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from jobgate.forms.base import (
    Declaration,
    Declarations,
    FormError,
    Scalar,
    ScalarList,
    ScalarMap,
    cel_has_chain,
    cel_literal,
    cel_zero,
    path_steps,
    summary_value,
)
from jobgate.forms.catalogue import (
    LIST_ITEMS,
    Default,
    Placement,
    Where,
    cel_list,
)
from jobgate.forms.fields import cel_present, field_steps
from jobgate.forms.python_text import (
    DEFAULT_NAMES,
    python_unset,
    read_lines,
    step_names,
    value_entry_copy,
    value_list_copy,
    value_list_reads,
    value_list_unread,
)


@dataclass(frozen=True)
class DefaultField(Declaration):
    """A field set to ``value`` when unset (or, with ``empty_is_unset``, ""): a schema default, and a
    MutatingAdmissionPolicy patch for what a schema default cannot cover ("")."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`DefaultField(id, path, value, empty_is_unset=False)`",
            'the field set when unset (or "") under an object that exists',
            "— (a patch)",
            "schema `default` and a MutatingAdmissionPolicy patch",
        ),
        (
            "`DefaultField(..., unless=(path, ...))`",
            "the field set when unset and none of the other fields is set (a default another field replaces)",
            "— (a patch)",
            "a MutatingAdmissionPolicy patch only",
        ),
        (
            "`DefaultField(..., when_set=(path, ...))`",
            "the field set when unset and each of the other fields or map keys "
            "(`spec.marsReplicaSpecs[Worker]`) is there: a role's default; `DefaultField`s of one id are one "
            "default (an object when absent, else each of its fields)",
            "— (a patch)",
            "a MutatingAdmissionPolicy patch only",
        ),
    )

    id: str
    path: str
    value: Scalar | ScalarList | ScalarMap
    empty_is_unset: bool = False
    summary: str = ""
    # Fields (paths from the root) any of which, set, means no default: a default another field
    # replaces (XDLJob's minFinishWorkRate, unless minFinishWorkNum). A policy patch only: no schema
    # default can say it.
    unless: tuple[str, ...] = ()
    # Fields or map keys (``spec.marsReplicaSpecs[Worker]``) each of which must be there (a key even
    # when null) for the default to apply: a default of one role. A policy patch only, too. Defaults
    # that share an id are one default (an object when absent, else each of its fields).
    when_set: tuple[str, ...] = ()

    IS_DEFAULT = True
    ID_GROUP = "field-default"

    def default_record(self, decls: Declarations) -> Default:
        return _field_default(self)

    def python_default(self, decls: Declarations, done: set[str]) -> list[str]:
        return [f"    if not only or {self.id!r} in only:", *_field_default_lines(self)]

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [(self.id, "constant")]


@dataclass(frozen=True)
class DefaultItemField(Declaration):
    """A field of every entry of the list at ``list`` set to ``value`` when unset (or "").

    A derived default: with ``from_field``, the value is the entry's ``from_field`` when that is one
    of ``value``'s strings (``value`` then a tuple); a policy patch only, no schema default can say it.
    Defaults of one list may share an ``id``: one default of the catalogue (an object and its fields).
    A ``list`` through ``{*}`` (``spec.replicaSpecs{*}.template.spec.containers``) is the list in each
    value of that map that holds one: a policy patch only, as its entries are in an object the CRD keeps
    whole (a pod template), which has no schema to hold a default."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`DefaultItemField(id, list, field, value, empty_is_unset=False, entry=...)`",
            "each entry's field set when unset; the defaults of one list are applied entry by entry in "
            "declaration order",
            "— (a patch)",
            "schema `default` on the items and a patch",
        ),
        (
            "`DefaultItemField(..., value=(values...), from_field=f)`",
            "derived: the entry's field copied from its field `f` when that is one of `values`",
            "— (a patch)",
            "a patch only",
        ),
        (
            "`DefaultItemField(..., value=[...])`",
            "a list value (a command), each entry its own copy",
            "— (a patch)",
            "schema `default` on the items and a patch",
        ),
        (
            '`DefaultItemField(..., list="spec.m{*}.template.spec.containers")`',
            "the list in each value of a map (one `{*}`): each replica's containers' "
            "`terminationMessagePolicy` (KubeDL's)",
            "— (a patch)",
            "a patch only (the pod template is kept whole, no schema to hold a default)",
        ),
        (
            '`DefaultItemField(..., field="a.b", value={...})`',
            "a field of an object of each entry (set when that object exists), an object value; defaults of "
            "one list may share an id: one default (an object when absent, else each of its fields)",
            "— (a patch)",
            "schema `default`s and a patch each",
        ),
    )

    id: str
    list: str
    # A field of the entry, or of an object of it ("restartPolicy.policy": set when that object exists).
    field: str
    # A list or object value ([...], {...}: of scalars) is written as a whole: a command, a policy.
    value: Scalar | tuple[str, ...] | ScalarList | ScalarMap
    empty_is_unset: bool = False
    # How the summary names an entry ("replica spec", "task").
    entry: str = "entry"
    from_field: str = ""
    summary: str = ""

    IS_DEFAULT = True
    ID_GROUP = "item-default"

    def default_record(self, decls: Declarations) -> Default:
        return _item_field_default(self)

    def value_map(self) -> str:
        return self.list.partition("{*}")[0] if "{*}" in self.list else ""

    def python_value_default(self, decls: Declarations, done: set[str]) -> list[str]:
        if self.list in done:
            return []
        done.add(self.list)
        return _value_list_lines(
            [o for o in decls.declared if isinstance(o, DefaultItemField) and o.list == self.list], done
        )

    def python_default(self, decls: Declarations, done: set[str]) -> list[str]:
        if self.list in done:
            return []
        done.add(self.list)
        group = [o for o in decls.declared if isinstance(o, DefaultItemField) and o.list == self.list]
        fields = tuple((o.field, o.value, o.empty_is_unset, o.from_field) for o in group)
        ids = tuple(o.id for o in group)
        call = f"default_item_fields(obj, recorder, {path_steps(self.list)!r}, "
        # No variable: mypy types each tuple literal as it is written (the compiled build).
        return [
            "    if not only:",
            f"        obj = {call}{fields!r})",
            f"    elif any(i in only for i in {ids!r}):",
            f"        obj = {call}tuple(f for i, f in zip({ids!r}, {fields!r}, strict=True) if i in only))",
        ]

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [(self.id, "linear (policy patch)")]


def _map_item_default(d: DefaultItemField, literal: str, unset: str, also: str) -> Default:
    """A ``DefaultItemField`` of the list in each value of a map (``{*}``): a policy patch, the map's
    keys in order, each value's list where every object on its way is there."""
    in_map, _, in_value = d.list.partition("{*}.")
    if "{*}" in in_value or d.from_field or "." in d.field:
        raise FormError(f"{d.id}: a default through a map's values sets a field of the entry, one map deep")
    value = f"object.{in_map}[k]"
    items = f"{value}.{in_value}"
    pointer = "/" + "/".join(path_steps(in_map)) + "/' + jsonpatch.escapeKey(k) + '/" + "/".join(path_steps(in_value))
    patch = (
        f"(has(object.{in_map}) ? object.{in_map}.filter(k, {cel_has_chain(value, path_steps(in_value))})"
        f".map(k, {items}.transformList(i, e, {unset}, "
        f"JSONPatch{{op: 'add', path: '{pointer}/' + string(i) + '/{d.field}', value: {literal}}})).flatten() : [])"
    )
    return Default(
        d.id,
        d.summary or f"each {d.entry}'s {d.field}: {summary_value(d.value)}{also}",
        Where.MUTATING_POLICY,
        (patch,),
    )


def _field_default_lines(d: DefaultField) -> list[str]:
    """The Python ``DefaultField``, written out: the objects on the way read, and when the field is
    unset the field's object copied with it set and ``obj`` rebuilt down to it. With conditions on
    other fields (``unless``, ``when_set``), the form's function (``default_field``)."""
    steps = path_steps(d.path)
    if d.unless or d.when_set:
        unless = f", unless={tuple(path_steps(o) for o in d.unless)!r}" if d.unless else ""
        unless += f", when_set={tuple(field_steps(o) for o in d.when_set)!r}" if d.when_set else ""
        return [f"        obj = default_field(obj, recorder, {steps!r}, {d.value!r}, {d.empty_is_unset!r}{unless})"]
    names = step_names(steps[:-1], DEFAULT_NAMES)
    parents = ["obj", *names]
    lines = read_lines(parents, names, steps)
    holder = parents[-1]
    unset = python_unset(f"{holder}.get({steps[-1]!r})", d.value, d.empty_is_unset)
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


def _value_list_lines(group: Sequence[DefaultItemField], done: set[str]) -> list[str]:
    """The Python defaults of the entries of one list of a map's value (``{*}.template.spec.containers``),
    written out: the list read once for the value's defaults (``value_list_reads``), and when an entry
    changes, the objects on the way to the list and the list copied into ``value`` (a copy the caller
    owns) and the entry copied, each once. A default of an entry's object's field or from another field
    of the entry is the form's function's (``default_item_fields``)."""
    ids = tuple(o.id for o in group)
    steps = path_steps(group[0].list.partition("{*}.")[2])
    guard = "not only" + (f" or {ids[0]!r} in only" if len(ids) == 1 else f" or any(i in only for i in {ids!r})")
    if any("." in o.field or o.from_field for o in group):
        fields = tuple((o.field, o.value, o.empty_is_unset, o.from_field) for o in group)
        chosen = f"tuple(f for i, f in zip({ids!r}, {fields!r}, strict=True) if not only or i in only)"
        # It may replace ``value``: a later default of the list reads it again.
        value_list_unread(steps, done)
        return [
            f"    if {guard}:",
            f"        value = default_item_fields(value, recorder, {steps!r}, {chosen}, pointer)",
        ]
    lines, names = value_list_reads(steps, done)
    items = names[-1]
    lines += [
        f"    if {guard}:",
        f"        if isinstance({items}, list):",
        f"            at = pointer + {'/' + '/'.join(steps) + '/'!r}",
        f"            for index, item in enumerate({items}):",
        "                if not isinstance(item, dict):",
        "                    continue",
    ]
    for o in group:
        only = f"(not only or {o.id!r} in only) and " if len(group) > 1 else ""
        lines += [
            f"                if {only}{python_unset(f'item.get({o.field!r})', o.value, o.empty_is_unset)}:",
            *value_list_copy(steps, names, "                    "),
            *value_entry_copy(items, "item", "index", "                    "),
            # A list or object literal is a new one each time: each entry's own.
            f"                    recorder.set(item, {o.field!r}, {o.value!r}, at + str(index))",
        ]
    return lines


def _field_default(d: DefaultField) -> Default:
    literal = cel_literal(d.value) if not isinstance(d.value, tuple) else ""
    empty = cel_zero(d.value)
    also = f" (also when {'0' if empty == '0' else chr(34) * 2})" if d.empty_is_unset else ""
    path = path_steps(d.path)
    if len(path) < 2:
        raise FormError(f"{d.id}: a default sits under an object (spec), not at the root")
    field = "object." + d.path
    unset = f"!has({field})" + (f" || {field} == {empty}" if d.empty_is_unset else "")
    if len(path) > 2:
        # Under an object that exists: a default never creates its parents.
        unset = f"{cel_has_chain('object.' + path[0], path[1:-1])} && ({unset})"
    pointer = "/" + "/".join(path)
    if d.unless or d.when_set:
        # Another field replaces the default, or it is a role's: a policy patch only.
        others = [
            f"!has(object.{o})"
            if len(path_steps(o)) <= 2
            else f"!{cel_has_chain('object.' + path_steps(o)[0], path_steps(o)[1:])}"
            for o in d.unless
        ]
        others += [cel_present("object", field_steps(o)) for o in d.when_set]
        guarded = f"({unset})" if "||" in unset else unset
        patch = (
            f"{' && '.join(others)} && {guarded} ? [JSONPatch{{op: 'add', path: '{pointer}', value: {literal}}}] : []"
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


def _item_field_default(d: DefaultItemField) -> Default:
    literal = cel_literal(d.value) if not isinstance(d.value, tuple) else ""
    empty = cel_zero(d.value)
    also = f" (also when {'0' if empty == '0' else chr(34) * 2})" if d.empty_is_unset else ""
    path = path_steps(d.list)
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
    there = f"has(object.{d.list})" if len(path) <= 2 else cel_has_chain("object." + path[0], path[1:])
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
        d.summary or f"each {d.entry}'s {d.field}: {summary_value(d.value)}{also}",
        Where.SCHEMA_DEFAULT,
        (patch,),
        (Placement((*path, LIST_ITEMS, *d.field.split(".")), {"default": d.value}),),
    )
