"""``NamedEntries``, the entry form T9k and DI-engine share, and the helpers of the entry forms.
Each checks its entries in one pass, entry by entry, and reports several rules of the catalogue.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from jobgate.forms.base import (
    AT_LIST,
    Declaration,
    Declarations,
    FormError,
    escape_detail,
    exact_detail,
    path_steps,
    split_message,
)
from jobgate.forms.catalogue import (
    LIST_ITEMS,
    Placement,
    Produces,
    Rule,
    Validation,
    Where,
    cel_string,
    unique_field,
)
from jobgate.forms.fields import LABEL_PROBLEM, OPTIONAL_LABEL_PATTERN
from jobgate.rules.names import (
    LABEL_MAX_LENGTH,
)


@dataclass(frozen=True)
class NamedEntries(Declaration):
    """The entries of the list at ``path`` are named by their ``name`` (DI-engine's tasks, T9k's
    service ports). Up to four rules, checked in one pass, entry by entry (an entry's type, then its
    name); ``summaries``: one per rule, in this order:

    - with ``singleton_id``: at most one entry of each type (``type``, ``untyped`` when unset or "")
      of ``singletons`` (``Invalid value`` at a later one's type, ``singleton`` with ``{type}``, then
      ``first`` with ``{first}``, the first one's index: a CRD rule on the list, which says
      ``singleton`` only, cannot index a list by a computed value);
    - ``required_id``: every entry has a name (``Required value`` at it; ``unnamed``, or with a
      ``type`` no detail for a typed entry: a default names it after its type); with ``several``
      only in a list of more than one entry (a service's one port needs no name);
    - ``label_id``: a name is a DNS-1123 label (each problem in Kubernetes' words; schema keywords);
    - ``unique_id``: no two entries of one name (``Duplicate value`` at the later one's).

    A name missing or not a string is checked no further; one that is no label neither, unless
    ``label_stops`` is False (its duplicates are reported too)."""

    # Its rows of the table in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC = (
        (
            '`NamedEntries(summaries, path, name, required_id, unnamed, label_id, unique_id, type="", '
            'untyped="", singletons=(), singleton_id="", singleton="", first="", several=False, '
            "label_stops=True)`",
            "entries named by `name`: (with `singleton_id`) one entry of each type of `singletons`; a name "
            "set (`several`: only in a list of more than one entry); a DNS-1123 label; unique. A name that "
            "is no label is checked no further unless `label_stops=False`",
            "`Invalid value` at a later singleton's type (`singleton` + `first`, with `{type}`, `{first}`); "
            "`Required value` (`unnamed`; no detail for a typed entry, which a default names); the label's "
            "problems in Kubernetes' words; `Duplicate value`",
            "a CRD rule per singleton type on the list (`singleton` only: no index); the name required by a "
            "CRD rule on each entry through the type's default (`several`: on the list); `pattern` and "
            "`maxLength`; a CRD rule on the list for uniqueness",
        ),
    )

    summaries: tuple[str, ...]
    path: str
    name: str
    required_id: str
    unnamed: str
    label_id: str
    unique_id: str
    type: str = ""
    untyped: str = ""
    singletons: tuple[str, ...] = ()
    singleton_id: str = ""
    singleton: str = ""
    first: str = ""
    several: bool = False
    label_stops: bool = True

    @property
    def id(self) -> str:
        return self.singleton_id or self.required_id

    def rules(self, decls: Declarations) -> list[Rule]:
        return _named_entries_rules(self)

    def python_call(self) -> str:
        return (
            f"named_entries(obj, path={path_steps(self.path)!r}, name={self.name!r}, type_field={self.type!r}, "
            f"untyped={self.untyped!r}, singletons={self.singletons!r}, "
            f"messages={(self.singleton, self.first, self.unnamed)!r}, "
            f"several={self.several!r}, label_stops={self.label_stops!r}, "
            f"rules={(self.singleton_id, self.required_id, self.label_id, self.unique_id)!r})"
        )

    def check_ids(self) -> tuple[str, ...]:
        return tuple(i for i in (self.singleton_id, self.required_id, self.label_id, self.unique_id) if i)

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        return [
            *([(self.singleton_id, "linear per type (CRD rule on the list)")] if self.singleton_id else []),
            (
                self.required_id,
                "linear (CRD rule on the list)" if self.several else "constant (CRD rule on each entry)",
            ),
            (self.label_id, "constant (schema keyword)"),
            (self.unique_id, "quadratic, bounded by the list's maxItems (CRD rule)"),
        ]


def common_parent(paths: Sequence[str]) -> tuple[str, ...]:
    """The steps every path starts with, short of the last step of any: where a rule that reads them all sits."""
    split = [path_steps(p) for p in paths]
    common: list[str] = []
    for steps in zip(*split, strict=False):
        if len(set(steps)) > 1:
            break
        common.append(steps[0])
    return tuple(common[: min(len(s) for s in split) - 1])


def known_names(target: str, by: str, bound: int) -> str:
    """CEL of the entries' ``by`` joined by ', ', each entry written out up to ``bound`` (CEL's cost
    estimator cannot size join())."""
    parts = []
    for index in range(bound):
        value = f"(has({target}[{index}].{by}) ? {target}[{index}].{by} : '')"
        joined = value if index == 0 else "', ' + " + value
        parts.append(f"(size({target}) > {index} ? {joined} : '')")
    return "(" + " + ".join(parts) + ")"


def template_pattern(template: str) -> str:
    """The pattern of a message with ``{placeholders}``: its words exact, each placeholder any text."""
    return ".*".join(escape_detail(part) for part in re.split(r"\{\w+\}", template))


def cel_template(template: str, values: dict[str, str]) -> str:
    """CEL of a message with ``{placeholders}``, each the CEL (a string) ``values`` gives."""
    out = []
    for position, part in enumerate(re.split(r"\{(\w+)\}", template)):
        if position % 2:
            out.append(values[part])
        elif part:
            out.append(cel_string(part))
    return " + ".join(out) or "''"


def _named_entries_rules(d: NamedEntries) -> list[Rule]:
    """``NamedEntries``: a CRD rule per singleton type on the list; the name required by a CRD rule on
    each entry (reading the type through its default), or with ``several`` on the list; the label by
    schema keywords; the names' uniqueness by a CRD rule on the list."""
    path = path_steps(d.path)
    summaries = list(d.summaries)
    if len(summaries) != (4 if d.singleton_id else 3):
        raise FormError(f"{d.id}: a summary for each of its rules")
    if d.type and d.several:
        raise FormError(f"{d.id}: a name required of typed entries in a list of any length")
    out = []
    if d.singleton_id:
        before, after = split_message(d.singleton, "type")
        out.append(
            Rule(
                d.singleton_id,
                summaries.pop(0),
                Where.CRD_RULE,
                (
                    Produces(
                        f"{d.path}[*].{d.type}",
                        "INVALID",
                        f"^{escape_detail(before)}({'|'.join(d.singletons)}){escape_detail(after)}",
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
                (Produces(f"{d.path}[*].{d.name}", "REQUIRED", exact_detail(d.unnamed), apiserver_drops=2),),
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
        detail = exact_detail(d.unnamed)
        if d.type:
            kind = f"(has(self.{d.type}) && self.{d.type} != '' ? self.{d.type} : {cel_string(d.untyped)})"
            holds = f"{kind} != {cel_string(d.untyped)} || {holds}"
            detail = f"^({escape_detail(d.unnamed)})?$"  # a typed entry's name: no detail
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
