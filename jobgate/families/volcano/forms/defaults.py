"""Volcano's defaults, each a policy patch: ``DefaultIndexed``, ``DefaultSum``, ``ImpliedKeys``,
``DefaultItemWhen``, ``DefaultItemProduct``."""

from __future__ import annotations

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
    path_steps,
)
from jobgate.forms.catalogue import (
    Default,
    Where,
    cel_string,
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
