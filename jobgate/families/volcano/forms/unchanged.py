"""Volcano's UPDATE form: ``Unchanged`` and the shapes it compares (``Same``, ``SameAll``,
``SameEach``, ``SameUnlessBoth``)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from jobgate.forms.base import (
    Declaration,
    Declarations,
    cel_has_chain,
    exact_detail,
    path_steps,
)
from jobgate.forms.catalogue import (
    Placement,
    Produces,
    Rule,
    Validation,
    Where,
)


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
