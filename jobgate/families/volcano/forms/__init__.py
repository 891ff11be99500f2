"""The forms only Volcano's rules use (``jobgate/families/volcano/declared.py``): declarations and
their compilation.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from jobgate.forms.base import (
    Declaration,
    Declarations,
    FormError,
    Scalar,
    When,
    cel_has_chain,
    cel_literal,
    cel_zero,
    escape_detail,
    exact_detail,
    path_steps,
    split_message,
)
from jobgate.forms.catalogue import (
    LIST_ITEMS,
    MAP_VALUES,
    Default,
    Location,
    Placement,
    Produces,
    Rule,
    Validation,
    Where,
    cel_list,
    cel_raw_string,
    cel_string,
)
from jobgate.forms.fields import field_steps, render_steps
from jobgate.rules.names import (
    DNS1123_SUBDOMAIN,
    DNS1123_SUBDOMAIN_MESSAGE,
    SUBDOMAIN_MAX_LENGTH,
    max_length_message,
)


class _VolcanoDefault(Declaration):
    """Volcano's defaults: a policy patch each (no schema default says any), a call of its function."""

    IS_DEFAULT = True

    def python_default_call(self) -> str:
        """The generated defaulting's call of the default's function."""
        raise FormError(f"{self.id}: no call of its own")

    def python_default(self, decls: Declarations, done: set[str]) -> list[str]:
        return [f"    if not only or {self.id!r} in only:", f"        obj = {self.python_default_call()}"]

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [(self.id, "linear (policy patch)")]


@dataclass(frozen=True)
class Acyclic(Declaration):
    """The entries of ``list`` depend on others, named by ``depends`` (a list of names under each
    entry, ``dependsOn.name``) and found by ``key``: the names exist and form no cycle, as a
    topological sort (Kahn's) finds them. Each entry the sort leaves is reported at its
    dependencies in ``message``, with ``missing`` (``{names}``) when it names no entry. The CEL
    sorts in at most ``bound`` rounds: the list's maxItems. CREATE only with ``create_only``."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            '`Acyclic(id, summary, list, key, depends, message, bound, missing="", create_only=False)`',
            "the entries' dependencies (a list of names under each entry, `dependsOn.name`) name entries by "
            "`key` and form no cycle (Kahn's algorithm, as Volcano's topological sort)",
            "`Invalid value` at each unsorted entry's dependencies, `missing` (`{names}`) added when it names no entry",
            "a CRD rule on the list's parent: the sort in `bound` rounds (the list's maxItems), each round "
            "bound once (`[x].all(s, ...)`: 1.30 has no `cel.bind`)",
        ),
    )

    id: str
    summary: str
    list: str
    key: str
    depends: str
    message: str
    bound: int
    missing: str = ""
    create_only: bool = False
    why: str = ""

    def rule(self, decls: Declarations) -> Rule:
        return _acyclic(self)

    def python_call(self) -> str:
        return (
            f"acyclic(obj, old, path={path_steps(self.list)!r}, key={self.key!r}, "
            f"depends={path_steps(self.depends)!r}, "
            f"message={self.message!r}, missing={self.missing!r}, create_only={self.create_only!r})"
        )

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [(self.id, f"quadratic per round, {self.bound} rounds, bounded by {self.bound} entries")]


@dataclass(frozen=True)
class KnownKeys(Declaration):
    """The keys of the map at ``path`` are among ``keys``; each other key is reported at itself,
    ``message`` formatted with ``{key}``. The map then has at most ``len(keys)`` keys: its
    ``maxProperties``, which bounds the CEL cost."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`KnownKeys(id, summary, path, keys, message)`",
            "the map's keys are among `keys`",
            "`Invalid value` at the key (`spec.plugins[gang]`), `{key}` in the message",
            "`maxProperties: len(keys)` and a CRD rule on the map",
        ),
    )

    id: str
    summary: str
    path: str
    keys: tuple[str, ...]
    message: str
    why: str = ""

    def rule(self, decls: Declarations) -> Rule:
        return _known_keys(self)

    def python_call(self) -> str:
        return f"known_keys(obj, {path_steps(self.path)!r}, {self.keys!r}, {self.message!r})"


@dataclass(frozen=True)
class FixedCount(Declaration):
    """On UPDATE the list at ``path`` keeps its number of entries (unset counts 0)."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`FixedCount(id, summary, path, message)`",
            "on UPDATE the list keeps its number of entries (unset: 0)",
            "`Forbidden` at the list",
            "a transition rule on its parent",
        ),
    )

    id: str
    summary: str
    path: str
    message: str

    def rule(self, decls: Declarations) -> Rule:
        parent, name = self.path.rsplit(".", 1)
        count = "(has({v}.{n}) ? size({v}.{n}) : 0)"
        return Rule(
            self.id,
            self.summary,
            Where.TRANSITION,
            (Produces(self.path, "FORBIDDEN", exact_detail(self.message)),),
            (
                Placement(
                    path_steps(parent),
                    validation=Validation(
                        rule=f"{count.format(v='self', n=name)} == {count.format(v='oldSelf', n=name)}",
                        message=self.message,
                        field_path=f".{name}",
                        reason="FieldValueForbidden",
                    ),
                ),
            ),
        )

    def python_call(self) -> str:
        return f"fixed_count(obj, old, {path_steps(self.path)!r}, {self.message!r})"

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [(self.id, "constant")]


@dataclass(frozen=True)
class Subdomain(Declaration):
    """A string field, when set and not "", is a DNS-1123 subdomain: each problem (its length, its
    characters) reported in Kubernetes' words. CREATE only with ``create_only``."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`Subdomain(id, summary, path, create_only=False)`",
            'a string (set, not "") is a DNS-1123 subdomain',
            "`Invalid value`, each problem in Kubernetes' words",
            "two CRD rules (length, pattern) on its parent",
        ),
    )

    id: str
    summary: str
    path: str
    create_only: bool = False
    why: str = ""

    def rule(self, decls: Declarations) -> Rule:
        return _subdomain(self)

    def python_call(self) -> str:
        return f"subdomain(obj, old, {path_steps(self.path)!r}, {self.create_only!r})"

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [(self.id, "constant")]


@dataclass(frozen=True)
class FlagNamesEntry(Declaration):
    """A flag in the argument list ``map[name]`` (Go's syntax: ``--flag=v``, ``-flag=v``, ``--flag v``;
    ``default`` when it is not there or empty) names an entry of ``list`` by its ``key``. Reported at
    the arguments with ``message``; the map and the list are beside each other. The CEL walks at
    most ``bound`` arguments (their maxItems). CREATE only with ``create_only``."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`FlagNamesEntry(id, summary, map, name, flag, default, list, key, message, bound, create_only=False)`",
            "a Go-syntax flag (`--flag=v`, `-flag v`) in the argument list `map[name]`, else `default`, "
            "names an entry of `list` by `key`",
            "`Invalid value` at `map[name]`",
            "a CRD rule on their parent, the arguments walked by index up to `bound`",
        ),
    )

    id: str
    summary: str
    map: str
    name: str
    flag: str
    default: str
    list: str
    key: str
    message: str
    bound: int
    create_only: bool = False
    why: str = ""

    def rule(self, decls: Declarations) -> Rule:
        return _flag_names_entry(self)

    def python_call(self) -> str:
        return (
            f"flag_names_entry(obj, old, map_path={path_steps(self.map)!r}, name={self.name!r}, flag={self.flag!r}, "
            f"default={self.default!r}, items_path={path_steps(self.list)!r}, key={self.key!r}, "
            f"message={self.message!r}, "
            f"create_only={self.create_only!r})"
        )

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [(self.id, f"linear in the arguments (at most {self.bound}) and the list")]


@dataclass(frozen=True)
class DefaultIndexed(_VolcanoDefault):
    """Each entry's ``field`` set, when unset (or, with ``empty_is_unset``, ""), to ``prefix`` and
    the entry's index (``default0``): a policy patch (no schema default knows the index)."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`DefaultIndexed(id, summary, list, field, prefix, empty_is_unset=False)`",
            "each entry's field, when unset, the prefix and the entry's index (`default0`)",
            "— (a patch)",
            "a MutatingAdmissionPolicy patch",
        ),
    )

    id: str
    summary: str
    list: str
    field: str
    prefix: str
    empty_is_unset: bool = False

    def default_record(self, decls: Declarations) -> Default:
        parent = "object." + self.list.rsplit(".", 1)[0]
        items = f"object.{self.list}"
        unset = f"!has(e.{self.field})" + (f" || e.{self.field} == ''" if self.empty_is_unset else "")
        pointer = cel_string("/" + self.list.replace(".", "/") + "/") + f" + string(i) + {cel_string('/' + self.field)}"
        patch = (
            f"has({parent}) && has({items}) ? {items}.transformList(i, e, {unset}, "
            f"{_patch(pointer, cel_string(self.prefix) + ' + string(i)')}) : []"
        )
        return Default(self.id, self.summary, Where.MUTATING_POLICY, (patch,))

    def python_default_call(self) -> str:
        return (
            f"default_indexed(obj, recorder, {path_steps(self.list)!r}, field={self.field!r}, prefix={self.prefix!r}, "
            f"empty_is_unset={self.empty_is_unset!r})"
        )


@dataclass(frozen=True)
class DefaultSum(_VolcanoDefault):
    """The integer at ``path`` set, when unset (or, with ``empty_is_unset``, 0) and the list exists,
    to the sum of ``field`` over the list's entries (an entry without it counts 0), read once they
    are defaulted: a policy patch after theirs."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`DefaultSum(id, summary, path, list, field, empty_is_unset=False)`",
            "the integer, when unset (or 0) and the list exists, the sum of the entries' field once they are defaulted",
            "— (a patch)",
            "a patch",
        ),
    )

    id: str
    summary: str
    path: str
    list: str
    field: str
    empty_is_unset: bool = False

    def default_record(self, decls: Declarations) -> Default:
        parent = self.path.rsplit(".", 1)[0]
        items = f"object.{self.list}"
        field = f"object.{self.path}"
        total = f"{items}.map(t, has(t.{self.field}) ? t.{self.field} : 0).sum()"
        unset = f"!has({field})" + (f" || ({field} == 0 && {total} != 0)" if self.empty_is_unset else "")
        patch = (
            f"has(object.{parent}) && has({items}) && ({unset}) ? "
            f"[{_patch(cel_string('/' + self.path.replace('.', '/')), total)}] : []"
        )
        return Default(self.id, self.summary, Where.MUTATING_POLICY, (patch,))

    def python_default_call(self) -> str:
        return (
            f"default_sum(obj, recorder, {path_steps(self.path)!r}, items_path={path_steps(self.list)!r}, "
            f"field={self.field!r}, "
            f"empty_is_unset={self.empty_is_unset!r})"
        )


@dataclass(frozen=True)
class ImpliedKeys(_VolcanoDefault):
    """Keys of the map at ``path`` that imply others (``implies``: (key, (implied key, ...)), ...):
    each implied key that is absent is added with an empty list (a policy patch)."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`ImpliedKeys(id, summary, path, implies)`",
            "each absent key that a present key of the map implies, added with `[]`",
            "— (a patch)",
            "a patch",
        ),
    )

    id: str
    summary: str
    path: str
    implies: tuple[tuple[str, tuple[str, ...]], ...]

    def default_record(self, decls: Declarations) -> Default:
        # ImpliedKeys: the implied keys in order of their names, each when a key that implies it is there.
        found = f"object.{self.path}"
        implied = sorted({k for _, keys in self.implies for k in keys})
        needs = {
            k: " || ".join(f"{cel_string(f)} in {found}" for f, keys in self.implies if k in keys) for k in implied
        }
        missing = " + ".join(
            f"(!({cel_string(k)} in {found}) && ({needs[k]}) ? "
            f"[{_patch(cel_string('/' + self.path.replace('.', '/') + '/' + k), '[]')}] : [])"
            for k in implied
        )
        parent = "object." + self.path.rsplit(".", 1)[0]
        return Default(
            self.id, self.summary, Where.MUTATING_POLICY, (f"has({parent}) && has({found}) ? {missing} : []",)
        )

    def python_default_call(self) -> str:
        return f"implied_keys(obj, recorder, {path_steps(self.path)!r}, {self.implies!r})"


@dataclass(frozen=True)
class Same:
    """``Unchanged``'s CEL: the field (dotted under the object compared) set in both and equal, or in
    neither; ``non_empty``: an empty list or map counts as unset."""

    field: str
    non_empty: bool = False


@dataclass(frozen=True)
class SameAll:
    """Each of ``parts`` the same (in parentheses with ``parens``)."""

    parts: tuple[Shape, ...]
    parens: bool = False


@dataclass(frozen=True)
class SameEach:
    """A list (unset and empty alike) of as many entries, each the same as ``item`` says; CEL walks at
    most ``bound`` indexes (its maxItems), by the variable ``<first letter>i``."""

    field: str
    bound: int
    item: Shape


@dataclass(frozen=True)
class SameUnlessBoth:
    """The field the same unless both objects have ``both`` (then another writes it: a controller)."""

    field: str
    both: str


Shape = Same | SameAll | SameEach | SameUnlessBoth


@dataclass(frozen=True)
class Unchanged(Declaration):
    """On UPDATE nothing under ``path`` changes but its fields ``mutable``, the fields ``(list,
    fields)`` of each entry of its lists in ``mutable_entries``, and an entry's field ``(list, field,
    beside)`` in ``written`` when the entry has ``beside`` (another writes it). Compared as Go's
    semantic equality: unset, null, empty lists and objects alike, except in the Go maps ``maps``.
    Each change is reported (``Forbidden``, ``message``) down to ``depth`` levels below ``path``;
    not under ``counted`` when its entries are not as many (a ``FixedCount`` says that).

    The CEL cannot see into unknown fields, so it compares what ``fields`` lists, one transition
    rule each (``(field, shape)``), and with ``entries`` ``(list, bound, ((field, shape), ...))`` each
    field of the list's entries, one rule each, when the entries are as many."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`Unchanged(id, summary, path, message, mutable, mutable_entries, written, maps, depth, counted, "
            "fields, entries)`",
            "on UPDATE nothing under `path` changes but the fields `mutable`, the entries' fields of "
            "`mutable_entries` and a field `written` by another beside its `beside`; compared as Go's "
            "semantic equality (unset, null, empty alike, except in the Go maps `maps`)",
            "`Forbidden` at each change, down to `depth` levels below `path`; none under `counted` when its "
            "entries are not as many (a `FixedCount`'s)",
            "a transition rule per field of `fields` (`Same`, `SameAll`, `SameEach`, `SameUnlessBoth`) and "
            "per field of the entries of `entries` when they are as many: CEL cannot see into unknown fields",
        ),
    )

    id: str
    summary: str
    path: str
    message: str
    mutable: tuple[str, ...]
    mutable_entries: tuple[tuple[str, tuple[str, ...]], ...]
    written: tuple[tuple[str, str, str], ...]
    maps: tuple[str, ...]
    depth: int
    counted: str
    fields: tuple[tuple[str, Shape], ...]
    entries: tuple[str, int, tuple[tuple[str, Shape], ...]]
    why: str = ""

    def rule(self, decls: Declarations) -> Rule:
        return _unchanged(self)

    def python_call(self) -> str:
        return (
            f"unchanged(obj, old, path={path_steps(self.path)!r}, mutable={self.mutable!r}, "
            f"mutable_entries={self.mutable_entries!r}, written={self.written!r}, maps={self.maps!r}, "
            f"depth={self.depth!r}, "
            f"counted={self.counted!r}, message={self.message!r})"
        )

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [(self.id, f"linear: each field, its lists walked by index (at most {self.entries[1]} entries)")]


@dataclass(frozen=True)
class DefaultItemWhen(_VolcanoDefault):
    """Each entry's ``field`` (dotted under the entry, ``template.spec.dnsPolicy``: set when the
    objects on the way exist) set to ``value`` when unset (or, with ``empty_is_unset``, "") and the
    field ``when`` beside it (``When("hostNetwork", True)``) holds the value, of its type: a policy
    patch (no schema default has a condition)."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`DefaultItemWhen(id, summary, list, field, value, when=When(beside, value), empty_is_unset=False)`",
            "each entry's field (`template.spec.dnsPolicy`, under objects that exist) set when unset and the "
            "field beside it holds the value, of its type (`hostNetwork: true`)",
            "— (a patch)",
            "a patch",
        ),
    )

    id: str
    summary: str
    list: str
    field: str
    value: Scalar
    when: When
    empty_is_unset: bool = False

    def default_record(self, decls: Declarations) -> Default:
        return _item_patch(self)

    def python_default_call(self) -> str:
        return (
            f"default_item_when(obj, recorder, {path_steps(self.list)!r}, field={path_steps(self.field)!r}, "
            f"value={self.value!r}, "
            f"when={(self.when.path, self.when.value)!r}, empty_is_unset={self.empty_is_unset!r})"
        )


@dataclass(frozen=True)
class DefaultItemProduct(_VolcanoDefault):
    """Each entry's integer ``field``, when unset, the product of ``factors`` (integer fields of the
    entry, dotted; unset counts 0) when the first is above 0, else its field ``otherwise`` (unset: 0):
    a policy patch (no schema default reads another field)."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`DefaultItemProduct(id, summary, list, field, factors, otherwise)`",
            "each entry's integer, when unset, the product of its `factors` (unset: 0) when the first is "
            "above 0, else its field `otherwise`",
            "— (a patch)",
            "a patch",
        ),
    )

    id: str
    summary: str
    list: str
    field: str
    factors: tuple[str, ...]
    otherwise: str

    def default_record(self, decls: Declarations) -> Default:
        return _item_patch(self)

    def python_default_call(self) -> str:
        return (
            f"default_item_product(obj, recorder, {path_steps(self.list)!r}, field={self.field!r}, "
            f"factors={tuple(path_steps(f) for f in self.factors)!r}, otherwise={path_steps(self.otherwise)!r})"
        )


@dataclass(frozen=True)
class LifecyclePolicies(Declaration):
    """Lists of lifecycle policies (``lists``: ``spec.policies``, ``spec.tasks[*].policies``) as
    Volcano's validatePolicies checks each: a policy names events (``events``, ``event``) or an exit
    code, not both (``both``) and not neither (``neither``); a policy on events has an action of
    ``actions`` (``action``) and events of ``events`` (``event``), each named by one policy of the list
    (``event_twice``, with ``{event}``); an exit code is not 0 (``zero``) and is named by one policy
    (``code_twice``, with ``{code}``); ``any_event`` is alone in its list (``not_alone``). Policy by
    policy, each stopping at its first problem of naming, as Volcano's loop. One declaration, a rule of
    the catalogue per check: ``<id>/event-or-exit-code``, ``/action``, ``/events``, ``/exit-code``,
    ``/events-unique``, ``/exit-codes-unique`` and ``/any-event-alone``."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`LifecyclePolicies(id, lists, events, actions, any_event, both=, neither=, action=, event=, "
            "event_twice=, zero=, code_twice=, not_alone=)`",
            "lists of lifecycle policies checked as Volcano's validatePolicies: events or an exit code, not "
            "both; an action and events among the known ones; an event or exit code (not 0) named once in a "
            "list; the any-event alone; policy by policy, in Volcano's order",
            "per check: `Forbidden` at `exitCode`, `Required value` at the policy, `Invalid value` at the "
            "action, event or exit code, `Duplicate value` (`{event}`, `{code}`), `Invalid value` at the list",
            "a CRD rule per check on each policy or list: seven rules, `<id>/event-or-exit-code` ... "
            "`<id>/any-event-alone`",
        ),
    )

    id: str
    lists: tuple[str, ...]
    events: tuple[str, ...]
    actions: tuple[str, ...]
    any_event: str
    both: str
    neither: str
    action: str
    event: str
    event_twice: str
    zero: str
    code_twice: str
    not_alone: str

    def rules(self, decls: Declarations) -> list[Rule]:
        return _lifecycle_policies(self)

    def python_call(self) -> str:
        words = (
            self.both,
            self.neither,
            self.action,
            self.event,
            self.event_twice,
            self.zero,
            self.code_twice,
            self.not_alone,
        )
        return (
            f"lifecycle_policies(obj, lists={tuple(field_steps(p) for p in self.lists)!r}, events={self.events!r}, "
            f"actions={self.actions!r}, any_event={self.any_event!r}, words={words!r})"
        )

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [(self.id, "quadratic in a list's policies (its uniqueness rules), bounded by its maxItems")]


@dataclass(frozen=True)
class ClaimVolumes(Declaration):
    """A list of volumes mounted at ``mount`` and backed by a claim, ``claim`` (one to create) or
    ``claim_name`` (one that exists), as Volcano's validateIO checks each, volume by volume: the
    mount path set (``mount_required``; "" is also too short, in the apiserver's words) and once in
    the list (``mount_twice``, with ``{path}``); a claim or a claim's name (``neither``), not both
    (``both``: CREATE only, the controller writes the name of the claim it creates); a claim's name
    a DNS-1123 subdomain (``bad_name``, with ``{name}`` and ``{problems}``). One declaration, a rule
    of the catalogue per check: ``<id>/mount-path``, ``/mount-paths-unique``, ``/claim-required``,
    ``/claim-conflict`` and ``/claim-name``."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`ClaimVolumes(id, list, mount, claim, claim_name, mount_required=, mount_twice=, neither=, "
            "both=, bad_name=)`",
            "volumes checked as Volcano's validateIO, volume by volume: a mount path, once in the list; a "
            "claim or a claim's name, not both (CREATE only); the claim's name a DNS-1123 subdomain",
            'per check: `Invalid value` (`""`: too short, the apiserver\'s words) and `Required value` at the '
            "mount path, `Duplicate value` (`{path}`), `Required value` at the volume, `Invalid value` at "
            "the claim's name (`{name}`, `{problems}`)",
            "five rules, `<id>/mount-path` (`minLength`) ... `<id>/claim-name`, CRD rules on each volume, "
            "the list or its parent",
        ),
    )

    id: str
    list: str
    mount: str
    claim: str
    claim_name: str
    mount_required: str
    mount_twice: str
    neither: str
    both: str
    bad_name: str

    def rules(self, decls: Declarations) -> list[Rule]:
        return _claim_volumes(self)

    def python_call(self) -> str:
        words = (self.mount_required, self.mount_twice, self.neither, self.both, self.bad_name)
        fields = (self.mount, self.claim, self.claim_name)
        return f"claim_volumes(obj, {path_steps(self.list)!r}, fields={fields!r}, words={words!r})"

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [(self.id, "quadratic in the volumes (distinct mount paths), bounded by their maxItems")]


@dataclass(frozen=True)
class NotBoth(Declaration):
    """Under each object ``path`` reaches (``spec.tasks[*].partitionPolicy.networkTopology``), the field
    ``second``, when set and not "", is not beside a ``first`` that is set: ``Forbidden`` at ``second``."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`NotBoth(id, summary, path, first, second, message)`",
            'under each object the path reaches (`[*]`), `second` (set, not "") is not beside a `first` that is set',
            "`Forbidden` at `second`",
            "a CRD rule on each object",
        ),
    )

    id: str
    summary: str
    path: str | tuple[str, ...]
    first: str
    second: str
    message: str

    def rule(self, decls: Declarations) -> Rule:
        return _not_both(self)

    def python_call(self) -> str:
        paths = tuple(field_steps(p) for p in ((self.path,) if isinstance(self.path, str) else self.path))
        return f"not_both(obj, {paths!r}, {self.first!r}, {self.second!r}, {self.message!r})"

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [(self.id, "constant (CRD rule on each object)")]


@dataclass(frozen=True)
class RequiredList(Declaration):
    """The list at ``path`` (under an object that exists) is set and not empty: ``Required value`` at
    the list with ``message``. The apiserver's CRD rule refuses it unset; an empty one is the schema's
    ``minItems`` to refuse, in its words."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`RequiredList(id, summary, path, message)`",
            "the list (under an object that exists) is set and not empty",
            "`Required value` at the list",
            "a CRD rule on its parent (`has`); an empty list is the schema's `minItems` to refuse",
        ),
    )

    id: str
    summary: str
    path: str
    message: str
    why: str = ""

    def rule(self, decls: Declarations) -> Rule:
        parent, name = self.path.rsplit(".", 1)
        return Rule(
            self.id,
            self.summary,
            Where.CRD_RULE,
            (Produces(self.path, "REQUIRED", exact_detail(self.message)),),
            (
                Placement(
                    path_steps(parent),
                    validation=Validation(
                        rule=f"has(self.{name})",
                        message=self.message,
                        field_path=f".{name}",
                        reason="FieldValueRequired",
                    ),
                ),
            ),
            why=self.why,
        )

    def python_call(self) -> str:
        return f"required_list(obj, {path_steps(self.path)!r}, {self.message!r})"

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [(self.id, "constant")]


@dataclass(frozen=True)
class UniqueName(Declaration):
    """No two entries of the list with the same ``key`` (a string, else ""), each later one reported
    at its key with ``message`` (``{name}``), as Volcano's loop over its tasks does it. The CRD rule
    (on the list: it cannot name the entry) counts the keys that are set and not "", all a defaulted
    job has."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`UniqueName(id, summary, list, key, message)`",
            'no two entries with the same key (a string, else ""): each later one a duplicate',
            "`Duplicate value` at `<list>[i].<key>`, `{name}` in the message",
            'a CRD rule on the list (keys set and not ""), quadratic, bounded by its maxItems',
        ),
    )

    id: str
    summary: str
    list: str
    key: str
    message: str

    def rule(self, decls: Declarations) -> Rule:
        key = self.key
        before, after = split_message(self.message, "name")
        first = (
            f"self.map(t, (has(t.{key}) ? t.{key} : '')).filter(n, n != '' && "
            f"self.filter(u, has(u.{key}) && u.{key} == n).size() > 1)[0]"
        )
        shown = f"{cel_string(before)} + {first}" + (f" + {cel_string(after)}" if after else "")
        return Rule(
            self.id,
            self.summary,
            Where.CRD_RULE,
            (Produces(f"{self.list}[*].{key}", "DUPLICATE", "^" + escape_detail(before), apiserver_drops=2),),
            (
                Placement(
                    path_steps(self.list),
                    validation=Validation(
                        rule=f"self.all(t, !(has(t.{key}) && t.{key} != '') || "
                        f"self.exists_one(u, has(u.{key}) && u.{key} == t.{key}))",
                        message_expression=shown,
                    ),
                ),
            ),
            why=ITEM_NOT_NAMED,
        )

    def python_call(self) -> str:
        return f"unique_name(obj, {path_steps(self.list)!r}, {self.key!r}, {self.message!r})"

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [(self.id, "quadratic, bounded by the list's maxItems (CRD rule)")]


@dataclass(frozen=True)
class RequiredItemField(Declaration):
    """Each entry of the list has ``field`` (null is unset): ``Required value`` at it with ``message``,
    ``{index}`` the entry's index (Volcano's words). The schema's ``required``, which the apiserver says
    in its words."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`RequiredItemField(id, summary, list, field, message)`",
            "each entry has the field (null is unset)",
            "`Required value` at it, `{index}` in the message",
            "the schema's `required` on the items (the apiserver's words)",
        ),
    )

    id: str
    summary: str
    list: str
    field: str
    message: str
    why: str = ""

    def rule(self, decls: Declarations) -> Rule:
        before, after = split_message(self.message, "index")
        return Rule(
            self.id,
            self.summary,
            Where.SCHEMA,
            (
                Produces(
                    f"{self.list}[*].{self.field}",
                    "REQUIRED",
                    "^" + escape_detail(before) + r"\d+" + escape_detail(after) + "$",
                ),
            ),
            (Placement((*path_steps(self.list), LIST_ITEMS), {"required": [self.field]}),),
            why=self.why,
        )

    def python_call(self) -> str:
        return f"required_item_field(obj, {path_steps(self.list)!r}, {self.field!r}, {self.message!r})"

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [(self.id, "constant (schema keyword)")]


@dataclass(frozen=True)
class Bound:
    """A node of ``Bounds``: the value at ``path`` (dotted from the parent's object or entry, through
    ``{*}``, a map's values, named as fields as the schema's errors name them; "" the entry itself),
    a list of at most ``limit`` entries or, with ``string``, a string of at most ``limit`` bytes (None:
    no bound of its own); ``each`` checked under each of its entries."""

    path: str
    limit: int | None = None
    string: bool = False
    each: tuple[Bound, ...] = ()


@dataclass(frozen=True)
class Bounds(Declaration):
    """Lists and strings within bounds (``Too many``, ``Too long`` in the apiserver's words), walked in
    the order of ``bounds``, each node's entries before the next node: the schema's ``maxItems`` and
    ``maxLength``, which the CEL cost estimate needs."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            "`Bounds(id, summary, (Bound(path, limit, string=False, each=(...)), ...))`",
            "lists of at most `limit` entries and strings of at most `limit` bytes, walked in the declared "
            "order, each node's entries (`each`, paths from the entry; `{*}` a map's values, named as "
            'fields; "" the entry itself) before the next node',
            "`Too many`, `Too long` (the apiserver's words)",
            "`maxItems`, `maxLength`",
        ),
    )

    id: str
    summary: str
    bounds: tuple[Bound, ...]
    why: str = ""

    def rule(self, decls: Declarations) -> Rule:
        walked = list(_bound_places(self.bounds, (), ""))
        return Rule(
            self.id,
            self.summary,
            Where.SCHEMA,
            tuple(Produces(shown, kind) for _, _, shown, kind in walked),
            tuple(Placement(at, keyword) for at, keyword, _, _ in walked),
            why=self.why,
        )

    def python_call(self) -> str:
        return f"bounds(obj, {_bound_nodes(self.bounds)!r})"

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [(self.id, "constant (schema keyword)")]


VolcanoForm = (
    Acyclic
    | KnownKeys
    | FixedCount
    | Subdomain
    | FlagNamesEntry
    | Unchanged
    | LifecyclePolicies
    | ClaimVolumes
    | NotBoth
    | RequiredList
    | UniqueName
    | RequiredItemField
    | Bounds
)


CREATE_ONLY = "oldSelf.hasValue() || "
ITEM_NOT_NAMED = "reported at the list (a rule on a list cannot name the item)"


def _create_only(rule: str, create_only: bool) -> str:
    """CEL of ``rule`` on CREATE and true on UPDATE (with ``optionalOldSelf``), or ``rule``."""
    return CREATE_ONLY + "(" + rule + ")" if create_only else rule


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
        before, after = split_message(d.missing, "names")
        message += (
            f" + (size({first_missing}) > 0 ? {cel_string(before)} + {first_missing}[0] + {cel_string(after)} : '')"
        )
    return Rule(
        d.id,
        d.summary,
        Where.CRD_RULE,
        (
            Produces(
                f"{d.list}[*].{d.depends}", "INVALID", "^" + escape_detail(d.message), apiserver_drops=1 + len(steps)
            ),
        ),
        (
            Placement(
                path_steps(parent),
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
    before, after = split_message(d.message, "key")
    shown = cel_string(before) + " + self.filter(k, !(k in " + known + "))[0]"
    if after:
        shown += " + " + cel_string(after)
    return Rule(
        d.id,
        d.summary,
        Where.CRD_RULE,
        (Produces(f"{d.path}[*]", "INVALID", "^" + escape_detail(before), apiserver_drops=1),),
        (
            # Each known key once at most: the bound the CEL cost estimate needs.
            Placement(path_steps(d.path), {"maxProperties": len(d.keys)}),
            Placement(
                path_steps(d.path), validation=Validation(rule=f"self.all(k, k in {known})", message_expression=shown)
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
        (Produces(d.path, "INVALID", f"^({escape_detail(too_long)}|{escape_detail(DNS1123_SUBDOMAIN_MESSAGE)})$"),),
        tuple(
            Placement(
                path_steps(parent),
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
        (Produces(f"{d.map}[{d.name}]", "INVALID", exact_detail(d.message)),),
        (
            Placement(
                path_steps(parent),
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


def _item_patch(d: DefaultItemWhen | DefaultItemProduct) -> Default:
    """A patch of each entry (``t``, its index ``ti``) whose field is unset (and whose condition holds)."""
    path = path_steps(d.list)
    steps = d.field.split(".")
    field = f"t.{d.field}"
    pointer = cel_string("/" + "/".join(path) + "/") + f" + string(ti) + {cel_string('/' + '/'.join(steps))}"
    if isinstance(d, DefaultItemWhen):
        beside = ".".join((*steps[:-1], d.when.path))
        unset = f"!has({field})" + (f" || {field} == {cel_zero(d.value)}" if d.empty_is_unset else "")
        condition = f"{cel_has_chain('t', beside.split('.'))} && t.{beside} == {cel_literal(d.when.value)} && ({unset})"
        value = cel_literal(d.value)
    else:

        def read(name: str) -> str:
            return f"({cel_has_chain('t', name.split('.'))} ? t.{name} : 0)"

        first, *others = (read(f) for f in d.factors)
        product = " * ".join((first, *others))
        condition = f"!has({field})"
        value = f"({first} > 0 ? {product} : {read(d.otherwise)})"
    items = f"object.{d.list}"
    patch = (
        f"{cel_has_chain('object', path)} ? {items}.transformList(ti, t, {condition}, {_patch(pointer, value)}) : []"
    )
    return Default(d.id, d.summary, Where.MUTATING_POLICY, (patch,))


def _same(a: str, b: str, path: str, *, non_empty: bool = False) -> str:
    """CEL true when the field at ``path`` is set (``non_empty``: and not empty) in both and equal,
    or in neither."""
    steps = path.split(".")
    set_a, set_b = cel_has_chain(a, steps), cel_has_chain(b, steps)
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
                f"{d.path}.{shape}",
                "FORBIDDEN",
                exact_detail(d.message),
                apiserver_drops=shape.count(".") + shape.count("["),
            )
            for shape in shapes
        ),
        tuple(
            Placement(
                path_steps(d.path),
                validation=Validation(
                    rule=rule, message=d.message, field_path=f".{field}", reason="FieldValueForbidden"
                ),
            )
            for field, rule in rules
        ),
        why=d.why,
    )


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
        places.append((tuple({"[*]": LIST_ITEMS}.get(s, s) for s in steps), render_steps(steps)))
    events, actions = cel_list(d.events), cel_list(d.actions)
    checked = _checked_events("self")

    def each(check: str, at: Location, message: str, field_path: str = "", reason: str = "") -> Placement:
        return Placement(
            (*at, LIST_ITEMS), validation=Validation(rule=check, message=message, field_path=field_path, reason=reason)
        )

    def rule(name: str, summary: str, produces: list[Produces], placements: list[Placement], why: str = "") -> Rule:
        return Rule(f"{d.id}/{name}", summary, Where.CRD_RULE, tuple(produces), tuple(placements), why=why)

    twice = f"self.filter(p, {_checked_events('p')} && {_names_event('p', 'e')}).size() > 1"
    event_before, event_after = split_message(d.event_twice, "event")
    code_before, _ = split_message(d.code_twice, "code")
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
                    Produces(f"{path}[*]", "REQUIRED", exact_detail(d.neither)),
                    Produces(f"{path}[*].exitCode", "FORBIDDEN", exact_detail(d.both)),
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
            [Produces(f"{path}[*].action", "INVALID", exact_detail(d.action)) for _, path in places],
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
                    Produces(f"{path}[*].events[*]", "INVALID", exact_detail(d.event), apiserver_drops=1),
                    Produces(f"{path}[*].event", "INVALID", exact_detail(d.event)),
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
            [Produces(f"{path}[*].exitCode", "INVALID", exact_detail(d.zero)) for _, path in places],
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
                    Produces(f"{path}[*].events[*]", "DUPLICATE", "^" + escape_detail(event_before), apiserver_drops=3),
                    Produces(f"{path}[*].event", "DUPLICATE", "^" + escape_detail(event_before), apiserver_drops=2),
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
                Produces(f"{path}[*].exitCode", "DUPLICATE", "^" + escape_detail(code_before), apiserver_drops=2)
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
            [Produces(path, "INVALID", exact_detail(d.not_alone)) for _, path in places],
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
    located = [
        (tuple({"[*]": LIST_ITEMS}.get(s, s) for s in field_steps(p)), render_steps(field_steps(p))) for p in paths
    ]
    return Rule(
        d.id,
        d.summary,
        Where.CRD_RULE,
        tuple(Produces(f"{path}.{d.second}", "FORBIDDEN", exact_detail(d.message)) for _, path in located),
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
    items = (*path_steps(d.list), LIST_ITEMS)
    mount, claim, claim_name = d.mount, d.claim, d.claim_name
    before_twice, after_twice = split_message(d.mount_twice, "path")
    first_twice = (
        f"self.map(v, has(v.{mount}) ? v.{mount} : '')"
        f".filter(p, p != '' && self.filter(w, has(w.{mount}) && w.{mount} == p).size() > 1)[0]"
    )
    name_set = f"has(self.{claim_name}) && self.{claim_name} != ''"
    before_name, rest = split_message(d.bad_name, "name")
    between, after = split_message(rest, "problems")
    too_long = max_length_message(SUBDOMAIN_MAX_LENGTH)
    return [
        Rule(
            f"{d.id}/mount-path",
            "a volume has a mount path",
            Where.SCHEMA,
            (
                Produces(f"{d.list}[*].{mount}", "REQUIRED", exact_detail(d.mount_required)),
                Produces(f"{d.list}[*].{mount}", "INVALID", "should be at least 1 chars long$"),
            ),
            (Placement((*items, mount), {"minLength": 1}),),
            why="as Volcano's CRD does it (required, minLength 1)",
        ),
        Rule(
            f"{d.id}/mount-paths-unique",
            "volumes have distinct mount paths",
            Where.CRD_RULE,
            (Produces(f"{d.list}[*].{mount}", "DUPLICATE", "^" + escape_detail(before_twice), apiserver_drops=2),),
            (
                Placement(
                    path_steps(d.list),
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
            (Produces(f"{d.list}[*]", "REQUIRED", exact_detail(d.neither)),),
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
            (Produces(f"{d.list}[*].{claim_name}", "INVALID", exact_detail(d.both), apiserver_drops=2),),
            (
                Placement(
                    path_steps(parent),
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
            (Produces(f"{d.list}[*].{claim_name}", "INVALID", "^" + escape_detail(before_name)),),
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


# Its table of docs/rule-forms.md, and the forms it lists there (their ``DOC`` rows), in order.
DOC_TABLE = "volcano-forms"
FORMS = (
    Acyclic,
    KnownKeys,
    FixedCount,
    Subdomain,
    FlagNamesEntry,
    Unchanged,
    LifecyclePolicies,
    ClaimVolumes,
    RequiredList,
    UniqueName,
    RequiredItemField,
    Bounds,
    NotBoth,
    DefaultIndexed,
    DefaultSum,
    ImpliedKeys,
    DefaultItemWhen,
    DefaultItemProduct,
)
