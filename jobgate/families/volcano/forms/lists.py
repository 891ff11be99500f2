"""Volcano's forms on lists and their items: ``RequiredList``, ``UniqueName``, ``RequiredItemField``,
``NotBoth``."""

from __future__ import annotations

from dataclasses import dataclass

from jobgate.families.volcano.forms.base import ITEM_NOT_NAMED
from jobgate.forms.base import (
    Declaration,
    Declarations,
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
)
from jobgate.forms.fields import field_steps, render_steps


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
