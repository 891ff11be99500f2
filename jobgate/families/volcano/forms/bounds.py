"""Volcano's size bounds: ``Bounds`` of ``Bound`` nodes, schema keywords (``maxItems``, ``maxLength``)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from jobgate.forms.base import (
    Declaration,
    Declarations,
)
from jobgate.forms.catalogue import (
    LIST_ITEMS,
    MAP_VALUES,
    Location,
    Placement,
    Produces,
    Rule,
    Where,
)


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
