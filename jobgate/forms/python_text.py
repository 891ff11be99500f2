"""The Python the forms write: the generated module of every kind's checks
(``jobgate/_generated/declared/<family>.py``: ``declared_module_text``), the modules it imports from
(``RUNTIME_MODULES``), the cost report, and the helpers the forms' own lines use (names of read
steps, unset tests)."""

from __future__ import annotations

import importlib
import io
import os
import re
import tokenize
from collections.abc import Iterable, Sequence

from jobgate import _generated
from jobgate.forms.base import Declarations, FormError, Scalar
from jobgate.forms.runtime_modules import RUNTIME_MODULES


def step_names(steps: Sequence[str], taken: frozenset[str]) -> list[str]:
    """Variable names for the objects reached by ``steps`` in generated code: the steps' own where they can be."""
    return [s if s.isidentifier() and s not in taken else f"at_{i}" for i, s in enumerate(steps)]


def read_lines(parents: Sequence[str], names: Sequence[str], steps: Sequence[str]) -> list[str]:
    """Generated lines reading each object on the way (``names[i]`` from ``parents[i]``), MISSING (no
    object) where one is not there. MISSING, not None: typed ``Any``, so that the compiled build's types
    need no test the code does not already make."""
    return [
        f"        {name} = {parent}.get({step!r}, MISSING)"
        + (f" if isinstance({parent}, dict) else MISSING" if i else "")
        for i, (parent, name, step) in enumerate(zip(parents, names, steps, strict=False))
    ]


# Names the generated checks use themselves.
CHECK_NAMES = frozenset(("obj", "old", "only", "errors", "found", "node", "parent", "holder", "value", "number"))

# Names the generated defaults use themselves.
DEFAULT_NAMES = frozenset(("obj", "recorder", "only", "previous"))


def python_unset(current: str, default: Scalar | list[Scalar] | dict[str, Scalar], empty_is_unset: bool) -> str:
    """Python true when the field read by ``current`` (a name) is unset: None, or with ``empty_is_unset``
    the zero of the default's type ("" or 0: declared.py's ``_is_empty``)."""
    if not empty_is_unset:
        return f"{current} is None"
    if isinstance(default, int) and not isinstance(default, bool):
        return f"({current} is None or as_int({current}) == 0)"
    return f"{current} in (None, '')"


# Names the generated defaults of a map's value use themselves.
VALUE_NAMES = frozenset(("value", "key", "pointer", "recorder", "only", "at", "index", "given", "item", "default"))


def value_list_reads(steps: Sequence[str], done: set[str]) -> tuple[list[str], list[str]]:
    """A list of a map's value (``steps`` from ``value``: ``template.spec.containers``) in the generated
    defaults of one value: (the lines reading it and the objects on the way, the names they read them
    into). The defaults of one value that change entries of the same list share one read and one copy:
    the lines are written once per function (``done`` remembers it), at the function's level, before the
    first default's own test of ``only``; ``given_<list>`` keeps the list as given, so that
    ``value_list_copy`` and ``value_entry_copy`` copy each object once, when a default first changes it."""
    names = step_names(steps, VALUE_NAMES)
    marker = "read " + ".".join(steps)
    if marker in done:
        return [], names
    done.add(marker)
    lines = [line[4:] for line in read_lines(["value", *names[:-1]], names, steps)]
    lines[-1] = lines[-1].replace(f"    {names[-1]} = ", f"    {names[-1]} = given_{names[-1]} = ", 1)
    return lines, names


def value_list_unread(steps: Sequence[str], done: set[str]) -> None:
    """After a default that may have replaced ``value`` (a runtime function's copy): the next default of
    the list at ``steps`` reads it again."""
    done.discard("read " + ".".join(steps))


def value_list_copy(steps: Sequence[str], names: Sequence[str], indent: str) -> list[str]:
    """The lines that make the objects on the way to the list (``value_list_reads``' names) and the list
    ``value``'s own copies, unless a default of the value made them already."""
    items = names[-1]
    return [
        f"{indent}if {items} is given_{items}:",
        *(
            f"{indent}    {name} = {parent}[{step!r}] = {'list' if name == items else 'dict'}({name})"
            for parent, name, step in zip(["value", *names[:-1]], names, steps, strict=True)
        ),
    ]


def value_entry_copy(items: str, entry: str, index: str, indent: str) -> list[str]:
    """The lines that make the entry ``entry`` (at ``index`` of the list ``items``, copied already:
    ``value_list_copy``) the list's own copy, unless a default of the value made it already."""
    return [f"{indent}if {entry} is given_{items}[{index}]:", f"{indent}    {entry} = {items}[{index}] = dict({entry})"]


# Found from the package, not from a module's __file__ (see jobgate/generate/schemas.py).
DECLARED_PACKAGE = os.path.join(os.path.dirname(_generated.__file__), "declared")


def declared_module_path(family: str) -> str:
    """The generated module of ``family``'s declared rules (``declared_module_text``)."""
    return os.path.join(DECLARED_PACKAGE, f"{family}.py")


def runtime_module(name: str) -> str:
    """The runtime module that defines ``name`` (a form's function or a shared constant)."""
    for module_name in RUNTIME_MODULES:
        module = importlib.import_module(module_name)
        value = vars(module).get(name, _ABSENT)
        if value is not _ABSENT and getattr(value, "__module__", module_name) == module_name:
            return module_name
    raise FormError(f"no runtime module defines {name}")


_ABSENT = object()


def _runtime_imports(names: Iterable[str]) -> list[str]:
    """The import lines of ``names`` from the runtime modules, one statement per module."""
    modules: dict[str, list[str]] = {}
    for name in names:
        modules.setdefault(runtime_module(name), []).append(name)
    return [line for m in sorted(modules) for line in (f"from {m} import (", *(f"    {n}," for n in modules[m]), ")")]


def function_name(group: str, kind: str) -> str:
    return re.sub(r"[^0-9A-Za-z]", "_", f"{kind}_{group}").lower()


# What the generated functions may call: the forms' runtime twins and shared constants (found in
# ``RUNTIME_MODULES``), the field errors' constructors, and the dict helpers. A family's module imports
# the ones it calls, and no other: a one-file check imports only its own family's runtime twins.
RUNTIME_NAMES = (
    "MISSING",
    "MUST_BE_STRING",
    "acyclic",
    "at_most_one_of",
    "at_most_sum",
    "bounds",
    "claim_volumes",
    "default_field",
    "default_finish_rules",
    "default_indexed",
    "default_item_fields",
    "default_item_product",
    "default_item_when",
    "default_map_values",
    "default_sum",
    "entries_unchanged",
    "field_bound",
    "fixed_count",
    "flag_names_entry",
    "forbidden_field",
    "forbidden_roles",
    "get",
    "immutable",
    "implied_keys",
    "index_maps",
    "known_keys",
    "lifecycle_policies",
    "known_types",
    "max_items",
    "not_both",
    "named_entries",
    "refers_to",
    "required_field",
    "ruled",
    "required_item_field",
    "required_list",
    "required_roles",
    "run_policy_at_most_total",
    "run_policy_immutable",
    "role_field_bound",
    "string_field",
    "subdomain",
    "unchanged",
    "unique_by",
    "unique_name",
    "with_port",
)
FIELD_ERROR_NAMES = ("Key", "forbidden", "invalid", "required")
DICT_HELPER_NAMES = ("as_int",)


def names_used(source: str) -> set[str]:
    """The names ``source`` reads: not an attribute (``value.get`` is not the runtime's ``get``), not a
    keyword argument (``bounds=``), nothing inside a string."""
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type != tokenize.NL]
    return {
        token.string
        for before, token, after in zip([None, *tokens[:-1]], tokens, [*tokens[1:], None], strict=True)
        if token.type == tokenize.NAME
        and not (before is not None and before.string == ".")
        and not (after is not None and after.string == "=")
    }


def declared_module_text(kinds: Iterable[tuple[str, str, Declarations]]) -> str:
    """One family's ``jobgate/_generated/declared/<family>.py`` (``declared_module_path``): for each
    (group, kind, declarations), a function ``default_<kind>_<group>`` and ``validate_<kind>_<group>``
    of calls to the forms' runtime twins (``RUNTIME_MODULES``)."""
    body: list[str] = []
    for group, kind, declarations in sorted(kinds, key=lambda k: (k[0], k[1])):
        name = function_name(group, kind)
        value_map = declarations.value_defaults()[0]
        defaults = declarations.python_default(f"default_value_{name}")
        if value_map:
            body += [
                "",
                f"def default_value_{name}(",
                "    key: str,",
                "    value: dict[str, Any],",
                "    pointer: str,",
                "    recorder: PatchRecorder,",
                "    only: tuple[str, ...] = (),",
                ") -> dict[str, Any]:",
                f'    """{kind} ({group}): the declared defaults of one value of {value_map} (``value``, a copy the'
                ' caller owns, at ``key`` and the JSON pointer ``pointer``), in order (``only``: these ids alone)."""',
                *declarations.python_value_default(),
                "    return value",
                "",
            ]
        body += [
            "",
            f"def default_{name}(",
            "    obj: dict[str, Any],",
            "    recorder: PatchRecorder,",
            "    only: tuple[str, ...] = (),",
            "    previous: dict[str, Any] | None = None,",
            ") -> dict[str, Any]:",
            f'    """{kind} ({group}): the declared defaults, in order (``only``: these ids alone; ``previous``:'
            ' the stored job on UPDATE, for the defaults that read it)."""',
            *defaults,
            "    return obj",
            "",
            "",
            f"def validate_{name}(",
            "    obj: dict[str, Any], old: dict[str, Any] | None, only: tuple[str, ...] = ()",
            ") -> list[FieldError]:",
            f'    """{kind} ({group}): the declared rules\' errors, in declaration order (``only``: of these ids'
            ' alone, for a family whose hand-written rules report around them)."""',
            "    errors: list[FieldError] = []",
            *declarations.python_validate(),
            "    return errors",
            "",
        ]
    called = names_used("\n".join(body))
    field_errors = [n for n in FIELD_ERROR_NAMES if n in called]
    helpers = [n for n in DICT_HELPER_NAMES if n in called]
    out = [
        '"""Generated by `jobgate manifests generate` from the rule declarations; do not edit.',
        "",
        "Each kind's declared defaults and rules (jobgate/forms/) with the declarations' values:",
        "the forms every review runs written out, the others as calls of the forms' functions",
        '(jobgate/forms/checks/)."""',
        "",
        "from __future__ import annotations",
        "",
        *([f"from jobgate.engine.fielderrors import {', '.join(field_errors)}"] if field_errors else []),
        *_runtime_imports(n for n in RUNTIME_NAMES if n in called),
        *([f"from jobgate.rules.dicts import {', '.join(helpers)}"] if helpers else []),
        "",
        "TYPE_CHECKING = False",
        "if TYPE_CHECKING:",
        "    from typing import Any",
        "",
        "    from jobgate.engine.fielderrors import FieldError",
        "    from jobgate.engine.jsonpatch import PatchRecorder",
        "",
        *body,
    ]
    return "\n".join(out)


def cost_report(kinds: Iterable[tuple[str, str, Declarations]]) -> list[str]:
    """One line per generated rule: its kind, id and how its apiserver check grows."""
    return [f"{kind} ({group}) {rule}: {growth}" for group, kind, d in kinds for rule, growth in d.cost()]
