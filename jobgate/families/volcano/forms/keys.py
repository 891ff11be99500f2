"""Volcano's forms on keys and names: ``KnownKeys``, ``FixedCount``, ``Subdomain``,
``FlagNamesEntry``."""

from __future__ import annotations

from dataclasses import dataclass

from jobgate.families.volcano.forms.base import _create_only
from jobgate.forms.base import (
    Declaration,
    Declarations,
    FormError,
    escape_detail,
    exact_detail,
    path_steps,
    split_message,
)
from jobgate.forms.catalogue import (
    Placement,
    Produces,
    Rule,
    Validation,
    Where,
    cel_list,
    cel_raw_string,
    cel_string,
)
from jobgate.rules.names import (
    DNS1123_SUBDOMAIN,
    DNS1123_SUBDOMAIN_MESSAGE,
    SUBDOMAIN_MAX_LENGTH,
    max_length_message,
)


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
