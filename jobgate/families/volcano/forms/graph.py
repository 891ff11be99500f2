"""Volcano's dependency graph form: ``Acyclic`` (the tasks' ``dependsOn`` make no cycle)."""

from __future__ import annotations

from dataclasses import dataclass

from jobgate.families.volcano.forms.base import ITEM_NOT_NAMED, _create_only
from jobgate.forms.base import (
    Declaration,
    Declarations,
    escape_detail,
    path_steps,
    split_message,
)
from jobgate.forms.catalogue import (
    Placement,
    Produces,
    Rule,
    Validation,
    Where,
    cel_string,
)


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
