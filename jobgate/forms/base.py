"""The rule language's ground: the form base (``Declaration``: what every form compiles to, each
form overriding the outputs it has), one kind's declarations compiled (``Declarations``: a loop that
asks each declaration, never which form it is), conditions and role lists, and the CEL literals forms
share.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jobgate.forms.catalogue import (
    Default,
    Rule,
    Where,
    cel_string,
)

Scalar = int | str | bool
ScalarList = list[Scalar]
ScalarMap = dict[str, Scalar]


@dataclass(frozen=True)
class When:
    """A rule's condition: the field at ``path`` equals ``value``. For a field form the path may
    reach through the same list items and map values as the rule's own (``spec.tasks[*].type``):
    the condition is then read in the same entry."""

    path: str
    value: Scalar


@dataclass(frozen=True)
class Roles:
    """A list whose entries are roles named by ``key``; ``among`` the known roles (another value is
    the schema's to refuse, and counts for no rule)."""

    path: str
    key: str
    among: tuple[str, ...]


AT_LIST = "reported at the list (a rule on a list cannot name the item)"


class FormError(ValueError):
    """A declaration its form cannot compile (a condition out of the rule's reach, ...)."""


def path_steps(text: str) -> tuple[str, ...]:
    return tuple(text.split("."))


def exact_detail(message: str) -> str:
    """The ``Produces`` detail of a message known in full: the message itself, anchored."""
    return "^" + escape_detail(message) + "$"


def escape_detail(text: str) -> str:
    """``re.escape`` of the characters a pattern reads, not of spaces and commas: the catalogue's
    details are shown in the docs' rule tables, which should read as the message."""
    return re.sub(r"([.^$*+?{}\[\]\\|()])", r"\\\1", text)


def cel_literal(value: Scalar | list[Scalar] | dict[str, Scalar]) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(cel_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        # dyn(): a CEL map literal's values are of one type otherwise.
        return "{" + ", ".join(f"{cel_string(k)}: dyn({cel_literal(v)})" for k, v in value.items()) + "}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return cel_string(value)


def cel_has_chain(variable: str, steps: Sequence[str]) -> str:
    """CEL true when every field of the path is there (``has`` of each step)."""
    parts = [f"has({variable}.{'.'.join(steps[: i + 1])})" for i in range(len(steps))]
    return "(" + " && ".join(parts) + ")"


def cel_zero(value: Scalar | tuple[str, ...]) -> str:
    """CEL of what ``empty_is_unset`` reads as unset: the zero of the default's type ("" or 0), as a
    Go webhook that cannot tell a zero from an absent field reads it."""
    return "0" if isinstance(value, int) and not isinstance(value, bool) else "''"


def summary_value(value: Scalar | list[Scalar] | dict[str, Scalar]) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def python_condition(when: When | None) -> tuple[tuple[str, ...], Scalar] | None:
    return None if when is None else (path_steps(when.path), when.value)


def split_message(message: str, field: str) -> tuple[str, str]:
    """The words of a message before and after its ``{field}``."""
    before, _, after = message.partition("{" + field + "}")
    return before, after


class Declaration:
    """A declaration of a form: a frozen dataclass of the form's values (a subclass), and the outputs it
    compiles to as methods, each form overriding those it has. ``Declarations`` (below)
    loops over a kind's declarations and asks each; it never asks which form one is.

    Not a dataclass itself: its subclasses are, and its attributes below are class attributes."""

    id: str
    # Its rows of the tables in docs/rule-forms.md (form, meaning, Python error, apiserver).
    DOC: tuple[tuple[str, str, str, str], ...] = ()
    # A default (a patch the defaulting applies), not a check.
    IS_DEFAULT = False
    # Declarations of one id that are one record: "field" (the field forms' checks), "item-default" and
    # "field-default" (the defaults of one list or object); "": each id declared once.
    ID_GROUP = ""
    # Whether the generated defaulting runs it (a type's spelling is run by the engine itself).
    RUNS_IN_PYTHON = True

    def rules(self, decls: Declarations) -> list[Rule]:
        """The catalogue's records of a check (in declaration order; a default has none)."""
        return [self.rule(decls)]

    def rule(self, decls: Declarations) -> Rule:
        raise FormError(f"{self.id}: not a rule form")

    def default_record(self, decls: Declarations) -> Default:
        """The catalogue's record of a default (``IS_DEFAULT``)."""
        raise FormError(f"{self.id}: not a default form")

    def python_call(self) -> str:
        """The generated check's call of the form's runtime twin ("" for none)."""
        return ""

    def python_check(self, decls: Declarations) -> list[str]:
        """The lines of the kind's generated check that run it (``errors`` extended)."""
        call = self.python_call()
        return [f"        errors.extend({call})"] if call else []

    def check_ids(self) -> tuple[str, ...]:
        """The ids of the rules its one check reports (``only`` runs it for any of them)."""
        return (self.id,)

    def python_default(self, decls: Declarations, done: set[str]) -> list[str]:
        """The lines of the kind's generated defaulting that apply it (``done``: lists already written)."""
        return []

    def value_map(self) -> str:
        """The map whose every value it defaults (``spec.tfReplicaSpecs``), "" for another declaration."""
        return ""

    def python_value_default(self, decls: Declarations, done: set[str]) -> list[str]:
        """The lines of the generated defaults of one value of ``value_map()``."""
        return []

    def cost(self, decls: Declarations) -> list[tuple[str, str]]:
        """(id, how its apiserver check grows in the list it reads) of each of its rules."""
        return [(self.id, "linear")]


# The error helpers the generated checks call (jobgate.engine.fielderrors), each taking ``rule=``.
_ERROR_HELPERS = ("invalid(", "required(", "forbidden(", "not_supported(")


def with_rule(line: str, rule: str) -> list[str]:
    """A generated check's line with the errors it adds labelled with ``rule``, its declaration's id: an
    error made in place gets ``rule=``; a runtime twin's errors, when there are any, are labelled by
    ``ruled`` (jobgate/forms/checks/common.py), so that a job without errors pays nothing for the label."""
    code = line.lstrip()
    indent = line[: len(line) - len(code)]
    if code.startswith("errors.extend(") and code.endswith(")"):
        found = code[len("errors.extend(") : -1]
        return [f"{indent}found = {found}", f"{indent}if found:", f"{indent}    errors.extend(ruled({rule!r}, found))"]
    if (
        code.startswith("errors.append(")
        and code.endswith("))")
        and code[len("errors.append(") :].startswith(_ERROR_HELPERS)
    ):
        return [f"{line[:-2]}, rule={rule!r}))"]
    if code.startswith(("errors.append(", "errors.extend(")):
        raise FormError(f"{rule}: cannot label the errors of the generated line {code!r}")
    return [line]


class Declarations:
    """One kind's declarations: the rules and defaults they compile to, in declaration order. Each
    declaration compiles itself (``jobgate/forms/base.py``'s ``Declaration``); this is the loop."""

    def __init__(self, declared: Sequence[Declaration]) -> None:
        self.declared = tuple(declared)
        # A rule and a default may share an id (a field's default and its rule, as the catalogue has
        # them): the ids are checked among the rules and among the defaults. Field forms that share an
        # id are one rule (its checks); so may the defaults of one list or field be (an object and its
        # fields); any other id is declared once.
        for defaults in (True, False):
            kind = [d for d in self.declared if defaults == d.IS_DEFAULT]
            ids = [d.id for d in kind]
            twice = {i for i in ids if ids.count(i) > 1}
            shared = {d.id for d in kind if d.ID_GROUP}
            others = {d.id for d in kind if not d.ID_GROUP}

            def group(name: str, kind: list[Declaration] = kind) -> set[str]:
                return {d.id for d in kind if name == d.ID_GROUP}

            mixed = (group("field") & group("item-default")) | (group("field-default") & group("item-default"))
            lists = {
                d.id: {getattr(o, "list", "") for o in kind if o.ID_GROUP == "item-default" and o.id == d.id}
                for d in kind
            }
            bad = (twice - shared) | (twice & others) | mixed | {i for i in twice if len(lists.get(i, ())) > 1}
            if bad:
                raise FormError(f"a declaration id twice: {sorted(bad)}")

    # --- reading through defaults ----------------------------------------------------------------

    def item_default(self, list_path: str, field: str) -> Any:
        """The declared default (a ``DefaultItemField``) of each entry's ``field`` in the list at ``list_path``,
        None when there is none."""
        found = next(
            (
                d
                for d in self.declared
                if d.ID_GROUP == "item-default"
                and getattr(d, "list", "") == list_path
                and getattr(d, "field", "") == field
            ),
            None,
        )
        return found

    def key(self, roles: Roles | Any, entry: str) -> str:
        """CEL of an entry's key as the webhook reads it once defaulted: a CRD rule may see a job
        that no policy defaulted (1.30 has no MutatingAdmissionPolicy; a schema default leaves "")."""
        list_path = roles.path if isinstance(roles, Roles) else roles.list  # a UniqueBy's
        default = self.item_default(list_path, roles.key)
        field = f"{entry}.{roles.key}"
        if default is None or isinstance(default.value, tuple):
            # No constant default (a derived one reads another field): the key as written.
            return f"(has({field}) ? {field} : '')"
        unset = f"!has({field}) || {field} == ''" if default.empty_is_unset else f"!has({field})"
        return f"({unset} ? {cel_literal(default.value)} : {field})"

    # --- the catalogue ---------------------------------------------------------------------------

    def rules(self) -> list[Rule]:
        return [rule for d in self.declared if not d.IS_DEFAULT for rule in d.rules(self)]

    def defaults(self) -> list[Default]:
        out: list[Default] = []
        for d in self.declared:
            if not d.IS_DEFAULT:
                continue
            compiled = d.default_record(self)
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

    # --- Python ----------------------------------------------------------------------------------

    def python_validate(self) -> list[str]:
        """The body lines of the kind's generated check (``errors`` extended, in declaration order)."""
        lines = []
        for d in self.declared:
            body = d.python_check(self)
            if not body:
                continue
            ids = d.check_ids()
            if len(ids) > 1:
                # One check of several rules (entry by entry): any of their ids runs it.
                lines.append(f"    if not only or any(i in only for i in {ids!r}):")
            else:
                lines.append(f"    if not only or {d.id!r} in only:")
            if len(ids) == 1 and {r.id for r in d.rules(self)} <= {d.id}:
                lines += [labelled for line in body for labelled in with_rule(line, d.id)]
            else:
                # A check whose errors are of several rules (Volcano's policies: one record per
                # problem) leaves them unlabelled: which rule an error is, the catalogue's table says.
                lines += body
        return lines

    def value_defaults(self) -> tuple[str, list[Declaration]]:
        """(the map, its defaults) of the defaults of each value of one map (a replica map's count,
        restart policy, containers' fields, port), which run value by value: ("", []) when there are none.
        Declared one after another (as run, each value's defaults before the next value's)."""
        found = [d for d in self.declared if d.value_map()]
        maps = {d.value_map() for d in found}
        if len(maps) > 1:
            raise FormError(f"defaults of the values of more than one map: {sorted(maps)}")
        defaults = [d for d in self.declared if d.IS_DEFAULT and d.RUNS_IN_PYTHON]
        if found and defaults[defaults.index(found[0]) : defaults.index(found[-1]) + 1] != found:
            raise FormError(f"the defaults of {maps.pop()}'s values are declared apart: {[d.id for d in found]}")
        return (maps.pop() if maps else ""), found

    def python_value_default(self) -> list[str]:
        """The body lines of the generated defaults of one value of the map (``value_defaults``): on
        ``value`` (a copy the caller owns), its key ``key`` and pointer ``pointer``, in declaration order,
        written out for the kind (its types and values as literals, no table read per review)."""
        lines: list[str] = []
        done: set[str] = set()
        for d in self.value_defaults()[1]:
            lines += d.python_value_default(self, done)
        return lines

    def python_default(self, value_function: str = "") -> list[str]:
        """The body lines of the kind's generated defaulting (``obj`` replaced, in declaration order:
        the defaults of one list applied entry by entry, as the patch lists them; those of a map's
        values value by value, by ``value_function``: the generated ``python_value_default``)."""
        lines: list[str] = []
        done: set[str] = set()
        value_map, by_value = self.value_defaults()
        for d in self.declared:
            if any(d is o for o in by_value):
                if d is by_value[0]:
                    steps = path_steps(value_map)
                    lines += [f"    obj = default_map_values(obj, recorder, {steps!r}, {value_function}, only)"]
            else:
                lines += d.python_default(self, done)
        return lines

    # --- cost ------------------------------------------------------------------------------------

    def cost(self) -> list[tuple[str, str]]:
        """(id, the growth of its apiserver check in the list it reads) of each rule."""
        report = [entry for d in self.declared for entry in d.cost(self)]
        # Declarations that share an id are one rule: each growth of it once.
        return list(dict.fromkeys(report))
