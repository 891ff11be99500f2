"""Per-entry scopes: field declarations relative to one entry (a container, a port), compiled once
relative to the entry, to the Python function the hand-written loop calls per entry
(``jobgate/_generated/scoped_rules.py``), and once per site, as the same declarations with the
site's path in front, to the catalogue's records and placements.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from jobgate import _generated
from jobgate.engine.schema import SCHEMA_TYPES
from jobgate.forms.base import Declaration, Declarations, FormError, When
from jobgate.forms.catalogue import (
    Rule,
)
from jobgate.forms.fields import (
    FIELD_FORMS,
    AtMostOneOf,
    FieldBound,
    FieldForm,
    RequiredField,
    Site,
    StringField,
    field_calls,
    field_paths,
)
from jobgate.forms.python_text import runtime_module


@dataclass(frozen=True)
class Scope:
    """Field declarations (``RequiredField``, ``ForbiddenField``, ``FieldBound``, ``StringField``,
    ``AtMostOneOf``) whose paths are relative to one entry (``entry`` names it: "container"). Their
    ids and summaries may hold ``{placeholders}`` that each site fills (``pod-template/{list}/image``)."""

    name: str
    entry: str
    declared: tuple[FieldForm, ...]
    # Also ``check_each_<name>(items, path, errors)``: the checks over a whole list, for a loop that
    # reports nothing between its entries (one call per list, not per entry).
    each: bool = False
    # Where the word of each placeholder of the ids is in an entry's path, counted from its end
    # (``(("list", -2),)``: a container's list, ``...containers[0]``): the generated function labels
    # its errors with the ids it fills from the path, so that its callers pass nothing for them.
    words: tuple[tuple[str, int], ...] = ()
    # With ``each``, the list's own checks between one entry's errors and the next's, so that a loop
    # with them is the generated one too: ``unique``, a field of the entry no two entries give the same
    # string (``Duplicate value`` at the later one, after its own errors; ``check_each_`` returns the
    # strings); ``refers`` (field, detail), a field that names one of the strings the caller gives
    # (``names``: ``Not found`` with the detail, before the entry's own errors). Their records are the
    # caller's rules' (a scope's declarations are field forms of one entry).
    unique: str = ""
    refers: tuple[str, str] | None = None
    # The ids the list's own checks label their errors with (placeholders as in the declarations').
    unique_rule: str = ""
    refers_rule: str = ""


@dataclass(frozen=True)
class ScopeSite:
    """Where a scope's entries are: ``path`` from the object's root (``spec.tasks[*]``,
    ``spec.tfReplicaSpecs{*}.template.spec.containers[*]``) and ``names``, the words of its
    placeholders (``(("list", "containers"),)``)."""

    scope: Scope
    path: str
    names: tuple[tuple[str, str], ...] = ()


SCOPED_TABLE = os.path.join(os.path.dirname(_generated.__file__), "scoped_rules.py")


def _prefixed(path: str | tuple[str, ...], prefix: str) -> str | tuple[str, ...]:
    if isinstance(path, str):
        return f"{prefix}.{path}"
    return tuple(f"{prefix}.{p}" for p in path)


class ScopeDeclarations:
    """A scope's declarations: its generated function, and its rules at each site."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        if not re.fullmatch(r"[a-z][a-z0-9_]*", scope.name):
            raise FormError(f"a scope's name is a Python name: {scope.name!r}")
        if (scope.unique or scope.refers) and not scope.each:
            raise FormError(f"scope {scope.name}: unique and refers are checks of its list's loop (each=True)")
        for d in scope.declared:
            if not isinstance(d, FIELD_FORMS):
                raise FormError(f"{d.id}: a scope holds field declarations (paths relative to the entry)")
            for path in field_paths(d):
                Site(d, path)  # refuses a path or condition its form cannot compile
        words = dict(scope.words)
        for placeholder in {p for d in scope.declared for p in re.findall(r"{(\w+)}", d.id)}:
            if words.get(placeholder, 0) > -2:
                raise FormError(
                    f"scope {scope.name}: the word of {{{placeholder}}} in its ids is a step of the entry's "
                    "path before its own (words: offset -2 or less)"
                )
        # The ids as one site fills them: checked as a kind's are (field forms may share one).
        self.at(ScopeSite(scope, "spec.entries[*]", ()))

    def at(self, site: ScopeSite) -> Declarations:
        """The declarations at ``site``: paths from the object's root, ids and summaries filled."""
        if site.scope != self.scope:
            raise FormError(f"a site of {site.scope.name} given to {self.scope.name}")
        names = _Names(site.names)
        out: list[Declaration] = []
        for d in self.scope.declared:
            changes: dict[str, object] = {
                "id": d.id.format_map(names),
                "summary": d.summary.format_map(names),
                "path": _prefixed(d.path, site.path),
            }
            when = getattr(d, "when", None)
            if when is not None:
                changes["when"] = When(f"{site.path}.{when.path}", when.value)
            out.append(dataclasses.replace(d, **changes))  # type: ignore[arg-type]
        return Declarations(out)

    def rules_at(self, site: ScopeSite) -> list[Rule]:
        """The catalogue's records of the scope at ``site`` (in declaration order)."""
        return self.at(site).rules()

    def cost(self, site: ScopeSite) -> list[tuple[str, str]]:
        return self.at(site).cost()

    def python_function(self) -> tuple[list[str], set[str]]:
        """The lines of ``check_<name>`` and the names it imports."""
        name = self.scope.name
        lines = [
            "",
            "",
            f"def check_{name}(",
            "    entry: dict[str, Any],",
            "    path: FieldPath,",
            "    errors: list[FieldError],",
            "    index: int = -1,",
            "    only: tuple[str, ...] = (),",
            ") -> None:",
            f'    """One {self.scope.entry} at ``path`` (with ``index``, the entry ``index`` of the list at ``path``:',
            "    the entry's path is built only for an error): its declared rules' errors added to ``errors``,",
            "    in declaration order (``only``: of these ids alone, for a loop that reports around them),",
            "    each labelled with its rule's id (a placeholder's word read from the entry's path; a value of",
            '    the wrong type is the schema\'s rule\'s, as the catalogue says)."""',
        ]
        body, imports = self._body(each=False)
        lines += body
        if not self.scope.each:
            return lines, imports
        # The same checks over a whole list, for a loop that reports nothing between its entries
        # but the list's own checks (``unique``, ``refers``).
        scope = self.scope
        names = ", names: AbstractSet[str]" if scope.refers else ""
        returned = "set[str]" if scope.unique else "None"
        lines += [
            "",
            "",
            f"def check_each_{name}(items: list[Any], path: FieldPath, errors: list[FieldError]{names}) -> {returned}:",
            f'    """Each {scope.entry} of the list at ``path``, as ``check_{name}``; an entry that is no object',
            "    is refused (``must be of type object``, a type error of the schema's rule)"
            + (";" if scope.unique or scope.refers else '."""'),
        ]
        if scope.refers:
            end = ";" if scope.unique else '."""'
            lines.append(
                f"    a {scope.refers[0]} not among ``names``: ``Not found``, before the entry's own errors{end}"
            )
        if scope.unique:
            lines += [
                f"    a {scope.unique} an earlier entry has: ``Duplicate value``, after the entry's own errors. The",
                f'    {scope.unique}s."""',
                "    seen: set[str] = set()",
            ]
        lines += [
            "    for index, entry in enumerate(items):",
            "        if type(entry) is not dict:",
            f'            errors.append(invalid((*path, index), entry, "must be of type object", {SCHEMA_TYPES!r}))',
            "            continue",
        ]
        more = {"invalid"}
        fetched = ""
        if scope.refers:
            field, detail = scope.refers
            fetched = f"value = entry.get({field!r})"
            lines += [
                f"        {fetched}",
                "        if type(value) is str and value and value not in names:",
                f"            errors.append(not_found((*path, index, {field!r}), value, {detail!r}, "
                f"{self.label(scope.refers_rule, each=True)}))",
            ]
            more.add("not_found")
        body, needs = self._body(each=True, fetched=fetched)
        lines += [f"    {line}" for line in body]
        if scope.unique:
            read = f"value = entry.get({scope.unique!r})"
            last = [line.strip() for line in body if line.startswith("    value = ")]
            if (last[-1] if last else fetched) != read:
                lines.append(f"        {read}")
            lines += [
                "        if type(value) is str and value:",
                "            if value in seen:",
                f"                errors.append(duplicate((*path, index, {scope.unique!r}), value, "
                f"{self.label(scope.unique_rule, each=True)}))",
                "            seen.add(value)",
                "    return seen",
            ]
            more.add("duplicate")
        return lines, imports | needs | more

    def label(self, rule: str, *, each: bool) -> str:
        """The expression of the id ``rule`` in the generated function: a literal, or an f-string whose
        placeholders read their words from the entry's path (``path`` with ``index``, or the entry's own)."""
        words = dict(self.scope.words)
        if "{" not in rule:
            return repr(rule)

        def word(match: re.Match[str]) -> str:
            offset = words[match.group(1)]
            return f"{{path[{offset + 1}]}}" if each else f"{{path[{offset}] if index < 0 else path[{offset + 1}]}}"

        return "f" + repr(re.sub(r"{(\w+)}", word, rule))

    def _body(self, *, each: bool, fetched: str = "") -> tuple[list[str], set[str]]:
        """The lines of the checks of one entry (``each``: in the loop over the list, where no test of
        ``only`` stands between two reads; ``fetched``: the read of ``value`` before them)."""
        lines: list[str] = []
        imports: set[str] = set()
        current = ""
        for d in self.scope.declared:
            body, needs = _scoped_python(d, self.label(d.id, each=each), each=each)
            imports |= needs
            if d.id != current:
                # Declarations of one id side by side are one test of ``only`` (none over a list).
                if not each:
                    lines.append(f"    if not only or {d.id!r} in only:")
                    fetched = ""
                current = d.id
            if body[0].startswith("value = ") and body[0] == fetched:
                body = body[1:]  # the same field, read once (no check writes it)
            fetched = body[0] if body[0].startswith("value = ") else fetched
            lines += [("    " if each else "        ") + line for line in body]
        return lines, imports


class _Names(dict[str, str]):
    """A site's words for the placeholders; one it does not fill stays as written."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def scope_rules(*sites: ScopeSite) -> list[Rule]:
    """The catalogue's records of scopes at their sites, compiled together: declarations of one id
    are one rule, wherever they are (a loop that reports between two checks of an entry calls two
    scopes, whose declarations may be one rule's)."""
    declared: list[Declaration] = []
    for site in sites:
        declared += ScopeDeclarations(site.scope).at(site).declared
    return Declarations(declared).rules()


def _inline_site(d: FieldForm) -> str | None:
    """The entry's own field that ``d`` checks, when its check can be written inline (one field of
    the entry, no condition, no map key): the hot path of a loop over entries."""
    if isinstance(d, AtMostOneOf) or not isinstance(d.path, str):
        return None
    site = Site(d, d.path)
    if site.scope or not site.plain:
        return None
    return site.target[0]


def _scoped_python(d: FieldForm, rule: str, *, each: bool = False) -> tuple[list[str], set[str]]:
    """The lines that check one declaration of a scope on ``entry`` at ``path`` (``each``: the entry
    ``index`` of the list at ``path``), its errors labelled ``rule`` (an expression), and their imports.
    Inline for the forms of the hot path (a field of the entry); otherwise the form's function, run on
    the entry, its errors rebased."""
    field = _inline_site(d)
    at = f"(*path, index, {field!r})" if each else f"((*path, {field!r}) if index < 0 else (*path, index, {field!r}))"
    if field is not None and isinstance(d, RequiredField):
        message = f", {d.message!r}" if d.message else ""
        unset = 'value is None or value == ""' if d.empty_is_unset else "value is None"
        if d.string:
            valid = "type(value) is not str or not value" if d.empty_is_unset else "type(value) is not str"
            # Valid values take the shortest way: one type test.
            return [
                f"value = entry.get({field!r})",
                f"if {valid}:",
                f"    if {unset}:",
                f"        errors.append(required({at}{message}, rule={rule}))",
                "    else:",
                f'        errors.append(invalid({at}, value, "must be of type string", {SCHEMA_TYPES!r}))',
            ], {"required", "invalid"}
        return [
            f"value = entry.get({field!r})",
            f"if {unset}:",
            f"    errors.append(required({at}{message}, rule={rule}))",
        ], {"required"}
    if field is not None and isinstance(d, StringField) and (d.label or d.syntax):
        is_one, problems = _SYNTAX_FUNCTIONS[d.syntax or "label"]
        lines = [
            f"value = entry.get({field!r})",
            "if type(value) is str:",
            f"    if value and not {is_one}(value):",
            f"        errors.extend([invalid({at}, value, problem, {rule}) for problem in {problems}(value)])",
        ]
        if d.string:
            lines += [
                "elif value is not None:",
                f'    errors.append(invalid({at}, value, "must be of type string", {SCHEMA_TYPES!r}))',
            ]
        return lines, {"invalid", is_one, problems}
    only_enum = isinstance(d, StringField) and d.enum and not (d.pattern or d.message or d.min_length or d.max_length)
    if field is not None and isinstance(d, StringField) and only_enum:
        # A string (or, with ``string``, anything but null) that is none of the values.
        given = "value is not None" if d.string else "type(value) is str"
        return [
            f"value = entry.get({field!r})",
            f"if {given} and value not in {d.enum!r}:",
            f"    errors.append(not_supported({at}, value, {d.enum!r}, {rule}))",
        ], {"not_supported"}
    if field is not None and isinstance(d, FieldBound) and d.integer and d.message:
        within = (
            (f"{d.minimum} <= " if d.minimum is not None else "")
            + "value"
            + (f" <= {d.maximum}" if d.maximum is not None else "")
        )
        # Valid values take the shortest way: a type test and a comparison.
        return [
            f"value = entry.get({field!r})",
            f"if value is not None and not (type(value) is int and {within}):",
            f"    errors.append(invalid({at}, value, {d.message!r}, {rule}))",
        ], {"invalid"}
    calls = field_calls(d)
    lines = []
    entry_path = "(*path, index)" if each else "((*path, index) if index >= 0 else path)"
    for call in calls:
        lines += [
            f"for error in ruled({rule}, {call.replace('(obj, ', '(entry, ', 1)}):",
            f"    errors.append(rebased({entry_path}, error))",
        ]
    function = calls[0].split("(", 1)[0]
    return lines, {function, "rebased", "ruled"}


_SYNTAX_FUNCTIONS = {
    "label": ("is_dns1123_label", "dns1123_label_problems"),
    "port-name": ("is_port_name", "port_name_problems"),
    "env-var-name": ("is_env_var_name", "env_var_name_problems"),
}


_SCOPED_IMPORTS = {
    "is_port_name": "jobgate.rules.names",
    "port_name_problems": "jobgate.rules.names",
    "is_env_var_name": "jobgate.rules.names",
    "env_var_name_problems": "jobgate.rules.names",
    "required": "jobgate.engine.fielderrors",
    "invalid": "jobgate.engine.fielderrors",
    "not_supported": "jobgate.engine.fielderrors",
    "not_found": "jobgate.engine.fielderrors",
    "duplicate": "jobgate.engine.fielderrors",
    "is_dns1123_label": "jobgate.rules.names",
    "dns1123_label_problems": "jobgate.rules.names",
}


def scoped_module_text(scopes: Iterable[Scope]) -> str:
    """``jobgate/_generated/scoped_rules.py``: a function ``check_<name>`` per scope. It imports only
    what its checks call (no declaration, no ``dataclasses`` or ``typing`` at run time: start-up)."""
    functions: list[str] = []
    imports: set[str] = set()
    scopes = sorted(scopes, key=lambda s: s.name)
    for scope in scopes:
        lines, needs = ScopeDeclarations(scope).python_function()
        functions += lines
        imports |= needs
    modules: dict[str, list[str]] = {}
    for name in sorted(imports):
        modules.setdefault(_SCOPED_IMPORTS.get(name) or runtime_module(name), []).append(name)
    out = [
        '"""Generated by `jobgate manifests generate` from the per-entry scopes; do not edit.',
        "",
        "Each scope's declared rules (jobgate/forms/scopes.py's Scope) as one function that a hand-written",
        'loop calls for each entry, where the checks of the entry run (docs/rule-forms.md)."""',
        "",
        "from __future__ import annotations",
        "",
    ]
    for module in sorted(modules):
        out += [f"from {module} import (", *(f"    {n}," for n in modules[module]), ")"]
    out += [
        "",
        "TYPE_CHECKING = False",
        "if TYPE_CHECKING:",
        *(["    from collections.abc import Set as AbstractSet"] if any(scope.refers for scope in scopes) else []),
        "    from typing import Any",
        "",
        "    from jobgate.engine.fielderrors import FieldError, FieldPath",
        *functions,
        "",
    ]
    return "\n".join(out)
