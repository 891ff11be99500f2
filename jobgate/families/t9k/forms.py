"""The forms only T9k's rules use: ``RefersTo``, ``IndexMaps``, ``EntriesUnchanged``,
``DefaultFinishRules`` (declarations and their compilation).
"""

from __future__ import annotations

from dataclasses import dataclass

from jobgate.forms.base import (
    Declaration,
    Declarations,
    FormError,
    cel_has_chain,
    escape_detail,
    exact_detail,
    path_steps,
    split_message,
)
from jobgate.forms.catalogue import (
    LIST_ITEMS,
    Default,
    Placement,
    PolicyValidation,
    Produces,
    Rule,
    Validation,
    Where,
    cel_string,
    first_message,
)
from jobgate.forms.entries import cel_template, common_parent, known_names, template_pattern


@dataclass(frozen=True)
class RefersTo(Declaration):
    """Each entry of the lists at ``paths`` names by its ``key`` an entry of ``list`` (by the entries'
    ``by``): another value is ``Not found`` at the key, ``message`` formatted with ``{known}`` (the
    values ``list`` has, each once, ", "-joined; "none"). With ``unique_id``, each value that names an
    entry is named once per list: a later one is ``Duplicate value``, a rule of that id. Checked in
    one pass, entry by entry (an entry's error before the next entry's); an entry without the key
    (or "") passes (a ``RequiredField``'s). The CEL sits on the lists' common parent and writes the
    known values out up to ``bound`` (the maxItems of ``list``: CEL's cost estimator cannot size
    join())."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            '`RefersTo(id, summary, paths, key, list, by, message, bound, unique_id="", unique_summary="")`',
            "each entry of the lists `paths` names by `key` an entry of `list` (by its `by`); with "
            "`unique_id`, each value that names one once per list. One pass, entry by entry, so a denial "
            "lists an entry's error before the next entry's; a missing or \"\" key passes (a `RequiredField`'s)",
            "`Not found` at the key, `message` with `{known}` (the list's values, each once, or `none`); "
            "`Duplicate value` at a later one (the `unique_id` rule)",
            "a CRD rule per list on the lists' common parent, reported at the list; the known values written "
            "out up to `bound` (the list's maxItems: CEL cannot size `join()`)",
        ),
    )

    id: str
    summary: str
    paths: tuple[str, ...]
    key: str
    list: str
    by: str
    message: str
    bound: int
    unique_id: str = ""
    unique_summary: str = ""
    why: str = ""

    def rules(self, decls: Declarations) -> list[Rule]:
        return _entry_rules(self)

    def python_call(self) -> str:
        return (
            f"refers_to(obj, paths={tuple(path_steps(p) for p in self.paths)!r}, key={self.key!r}, "
            f"items_path={path_steps(self.list)!r}, by={self.by!r}, message={self.message!r}, "
            f"rules={(self.id, self.unique_id)!r})"
        )

    def check_ids(self) -> tuple[str, ...]:
        return (self.id, self.unique_id) if self.unique_id else (self.id,)

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        growth = f"quadratic: each entry looked up in the list, bounded by its maxItems ({self.bound})"
        return [(self.id, growth), *([(self.unique_id, growth)] if self.unique_id else [])]


@dataclass(frozen=True)
class IndexMaps(Declaration):
    """Each entry of the lists at ``paths`` maps names of entries of ``list`` (their ``by``; the first
    entry of a name counts) to indices of that entry's replicas, 0 to its ``count`` - 1 (``unset``
    when it has none): T9k's finish rules. Four rules, checked in one pass, map by map and name by
    name (a map's errors before the next map's):

    - ``id``: the map names an entry at least (``Required value`` at the map, ``empty``);
    - ``unknown_id``: a name is an entry's (``Not found`` at the name, ``unknown`` with ``{known}``:
      the names there are, each once, or "none");
    - ``unlisted_id``: a name lists an index at least (``Required value`` at the name, ``unlisted``);
    - ``index_id``: each index is one of the entry's (``Invalid value`` at the index, ``below`` with
      ``{count}``, ``{name}`` and ``{last}``; ``none`` with ``{name}`` when the count is 0), a
      ValidatingAdmissionPolicy: up to ``max_maps`` maps of as many indices, each compared with its
      entry's count, cost more than a CRD rule may (``index_why``).

    ``max_maps`` and ``max_names`` bound the lists and the maps (``Too many``), reported where these
    rules are, in the words of the schema's ``maxItems``/``maxProperties`` that another rule places
    (``bounds_id``: the kind's bounds). ``bound``: the maxItems of ``list``, to which the CEL writes
    the known names out (CEL's cost estimator cannot size join())."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`IndexMaps(id, summary, paths, list, by, count, unset, empty, unknown_id, ..., unknown, "
            "unlisted_id, ..., unlisted, index_id, ..., below, none, bound, max_maps, max_names, bounds_id, "
            'index_why="")`',
            "each entry of the lists `paths` maps names of entries of `list` (their `by`) to indices below "
            "that entry's `count` (`unset` when absent): T9k's finish rules",
            "`Required value` at an empty map (`empty`, rule `id`); `Not found` at an unknown name "
            "(`unknown`, `{known}`); `Required value` at a name listing no index (`unlisted`); `Invalid "
            "value` at an index past the count (`below` with `{count}`, `{name}`, `{last}`, or `none`); `Too "
            "many` past `max_maps`/`max_names` (the records of `bounds_id`, which places the keywords)",
            "CRD rules on each map (empty, unlisted), a CRD rule per list on their common parent (unknown "
            "names, known ones written out to `bound`), a ValidatingAdmissionPolicy for the indices (each "
            "entry's count read once per request)",
        ),
    )

    id: str
    summary: str
    paths: tuple[str, ...]
    list: str
    by: str
    count: str
    unset: int
    empty: str
    unknown_id: str
    unknown_summary: str
    unknown: str
    unlisted_id: str
    unlisted_summary: str
    unlisted: str
    index_id: str
    index_summary: str
    below: str
    none: str
    bound: int
    max_maps: int
    max_names: int
    bounds_id: str
    index_why: str = ""

    def rules(self, decls: Declarations) -> list[Rule]:
        return _index_maps_rules(self)

    def python_call(self) -> str:
        return (
            f"index_maps(obj, paths={tuple(path_steps(p) for p in self.paths)!r}, "
            f"items_path={path_steps(self.list)!r}, "
            f"by={self.by!r}, count={self.count!r}, unset={self.unset!r}, "
            f"messages={(self.empty, self.unknown, self.unlisted, self.below, self.none)!r}, "
            f"bounds={(self.max_maps, self.max_names)!r}, "
            f"rules={(self.id, self.unknown_id, self.unlisted_id, self.index_id, self.bounds_id)!r})"
        )

    def check_ids(self) -> tuple[str, ...]:
        return (self.id, self.unknown_id, self.unlisted_id, self.index_id)

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [
            (self.id, "constant (CRD rule on each map)"),
            (self.unknown_id, f"linear in the maps' names, each looked up in the list (at most {self.bound})"),
            (self.unlisted_id, "linear in the map's names (CRD rule on each map)"),
            (self.index_id, "linear in the indices (ValidatingAdmissionPolicy)"),
        ]


@dataclass(frozen=True)
class EntriesUnchanged(Declaration):
    """On UPDATE the entries of the list at ``path`` keep ``fields`` (T9k's replica types and pod
    templates): the list of each entry's fields, in order, is the stored one's (a list unset counts as
    none; an entry that is no object as itself). ``Forbidden`` at the list, ``message``. A transition
    rule on the list's parent, which holds when either version lacks the list; a field not in
    ``required`` (the schema requires those) is a string, read as "" when unset."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`EntriesUnchanged(id, summary, path, fields, required, message)`",
            "on UPDATE the entries of the list keep `fields` (each entry's, in order; an unset list counts "
            "as none): T9k's replica types and pod templates",
            "`Forbidden` at the list",
            "a transition rule on the list's parent, which holds when either version lacks the list; a field "
            'not in `required` is a string, read as "" when unset',
        ),
    )

    id: str
    summary: str
    path: str
    fields: tuple[str, ...]
    required: tuple[str, ...]
    message: str

    def rule(self, decls: Declarations) -> Rule:
        return _entries_unchanged_rule(self)

    def python_call(self) -> str:
        return (
            f"entries_unchanged(obj, old, path={path_steps(self.path)!r}, fields={self.fields!r}, "
            f"message={self.message!r})"
        )

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [(self.id, "linear in the entries (transition rule)")]


@dataclass(frozen=True)
class DefaultFinishRules(Declaration):
    """One family uses it: T9k's default finish rules (``successRules``, ``failureRules``). The list at
    ``path`` (maps of names of entries of ``list``, their ``by``, to indices of that entry's replicas)
    set, when unset, to one rule listing every replica of each entry (``each=False``: success when all
    succeeded), or to one rule per replica (``each``: failure when any failed); an entry's ``count`` is
    ``unset`` when absent, an entry of count 0 is named by no rule, and no rules are written when that
    would be none. Written only when every entry has a name of its own and a count of 0 at least, and
    there are at most ``max_entries`` entries of at most ``max_replicas`` replicas in all (a rule's size
    follows the counts, not the object's: ``replicas: 2000000000`` would make a patch of gigabytes).

    On UPDATE, rules that are these defaults of the stored job's counts (themselves within the bounds)
    are rewritten for the new counts when those differ: the defaults follow a scale, rules a user wrote
    never change. A MutatingAdmissionPolicy patch (it reads every entry, and ``oldObject``); the
    generated defaults take the stored job (``previous``). ``path`` and ``list`` are fields of one
    object."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`DefaultFinishRules(id, summary, path, list, by, count, unset, each, max_entries, max_replicas)`",
            "one family uses it (T9k's `successRules`, `failureRules`): the list set, when unset, to one "
            "rule listing every replica of `list`'s entries (named by `by`, `count` replicas, `unset` when "
            "absent), or (`each`) to one rule per replica; only when each entry has a name of its own and a "
            "count of 0 at least, at most `max_entries` entries and `max_replicas` replicas in all. On "
            "UPDATE, rules that are the defaults of the stored counts are rewritten when the counts change; "
            "rules a user wrote never change",
            "— (a patch: `add`, `replace` when rescaled)",
            "a MutatingAdmissionPolicy patch only (it reads every entry and `oldObject`); the generated "
            "default takes the stored job (`previous`)",
        ),
    )

    id: str
    summary: str
    path: str
    list: str
    by: str
    count: str
    unset: int
    each: bool
    max_entries: int
    max_replicas: int

    IS_DEFAULT = True

    def default_record(self, decls: Declarations) -> Default:
        return _finish_rules_default(self)

    def python_default(self, decls: Declarations, done: set[str]) -> list[str]:
        return [f"    if not only or {self.id!r} in only:", f"        obj = {_finish_rules_call(self)}"]

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        growth = (
            f"quadratic in the entries, bounded by {self.max_entries}; linear in the replicas written, "
            f"bounded by {self.max_replicas} (policy patch)"
        )
        return [(self.id, growth)]


def _index_maps_rules(d: IndexMaps) -> list[Rule]:
    """``IndexMaps``: the map's emptiness and its names' index lists by CRD rules on each map; its
    names by a CRD rule per list on the lists' common parent (reported at the list); the indices by
    a ValidatingAdmissionPolicy that reads each entry's count once per request."""
    at = common_parent((d.list, *d.paths))
    target = "self." + ".".join(path_steps(d.list)[len(at) :])
    known = f"{target}.exists(r, has(r.{d.by}) && r.{d.by} == t)"
    before, after = split_message(d.unknown, "known")
    lists = []
    for path in d.paths:
        steps = path_steps(path)[len(at) :]
        present = f"!has(self.{steps[0]})" if len(steps) == 1 else f"!{cel_has_chain('self', steps)}"
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
        below = cel_template(d.below, {"count": f"string({replicas})", "name": "t", "last": f"string({replicas} - 1)"})
        detail = f"({replicas} > 0 ? {below} : {cel_template(d.none, {'name': 't'})})"
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
            tuple(Produces(f"{p}[*]", "REQUIRED", exact_detail(d.empty)) for p in d.paths),
            tuple(
                Placement(
                    (*path_steps(p), LIST_ITEMS),
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
                Produces(
                    f"{p}[*][*]", "NOT_FOUND", f"^{escape_detail(before)}.*{escape_detail(after)}$", apiserver_drops=2
                )
                for p in d.paths
            ),
            tuple(
                Placement(
                    at,
                    validation=Validation(
                        rule=f"{absent} || !has({target}) || {items}.all(rule, rule.all(t, {known}))",
                        # The webhook names the name too: CEL's cost estimator cannot size a key of a map in a list.
                        message_expression=f"{cel_string('Not found: ' + before)} + "
                        f"{known_names(target, d.by, d.bound)}" + (f" + {cel_string(after)}" if after else ""),
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
            tuple(Produces(f"{p}[*][*]", "REQUIRED", exact_detail(d.unlisted), apiserver_drops=1) for p in d.paths),
            tuple(
                Placement(
                    (*path_steps(p), LIST_ITEMS),
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
                Produces(f"{p}[*][*][*]", "INVALID", f"^({template_pattern(d.below)}|{template_pattern(d.none)})$")
                for p in d.paths
            ),
            policy=tuple(
                PolicyValidation(first_message((*path_steps(p), LIST_ITEMS), bad_index), variables=variables)
                for p in d.paths
            ),
            why=d.index_why,
        ),
    ]


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
        (Produces(d.path, "FORBIDDEN", exact_detail(d.message)),),
        (
            Placement(
                path_steps(parent),
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
    at = common_parent((d.list, *d.paths))
    target = "self." + ".".join(path_steps(d.list)[len(at) :])
    by, key = d.by, d.key

    def known(value: str) -> str:
        return f"{target}.exists(r, has(r.{by}) && r.{by} == {value})"

    known_text = known_names(target, by, d.bound)
    before, after = split_message(d.message, "known")
    # CEL of the webhook's words for a value that names no entry (``unknown``: CEL of it).
    shown = "'Not found: \"' + {unknown} + " + cel_string('": ' + before) + " + " + known_text
    shown += f" + {cel_string(after)}" if after else ""
    lists = []
    for path in d.paths:
        steps = path_steps(path)[len(at) :]
        items = "self." + ".".join(steps)
        lists.append((path, "." + ".".join(steps), f"!{cel_has_chain('self', steps)} || !has({target})", items))
    why = d.why or REFERS_AT_LIST
    out = [
        Rule(
            d.id,
            d.summary,
            Where.CRD_RULE,
            tuple(
                Produces(
                    f"{p}[*].{key}",
                    "NOT_FOUND",
                    f"^{escape_detail(before)}.*{escape_detail(after)}$",
                    apiserver_drops=2,
                )
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


def _finish_rules_default(d: DefaultFinishRules) -> Default:
    """``DefaultFinishRules``: a policy patch, the rules written out for the counts, when there are none,
    or when they are the defaults of ``oldObject``'s counts and the counts changed."""
    at, items = path_steps(d.path), path_steps(d.list)
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
        f"default_finish_rules(obj, recorder, previous, path={path_steps(d.path)!r}, "
        f"items_path={path_steps(d.list)!r}, "
        f"by={d.by!r}, count={d.count!r}, unset={d.unset!r}, each={d.each!r}, "
        f"bounds={(d.max_entries, d.max_replicas)!r})"
    )


# Its table of docs/rule-forms.md, and the forms it lists there (their ``DOC`` rows), in order.
DOC_TABLE = "entry-forms"
FORMS = (
    RefersTo,
    IndexMaps,
    EntriesUnchanged,
    DefaultFinishRules,
)
