"""The Python meaning of each rule form (``jobgate/rules/forms.py``): one function per form.

A declared rule is not run from its declaration: ``jobgate manifests generate`` writes, for each
kind, a module of its checks with the declaration's values as literals
(``jobgate/_generated/declared_rules.py``), as it writes the schema table: the forms every review
runs written out, the others as calls of these functions. Checking a job then
imports neither the declarations nor ``dataclasses``, and the calls compile with mypyc as the
family's rules do. The same forms compile to the apiserver's CEL (``jobgate/generate/forms.py``),
so each form's meaning is written twice, once here and once there, instead of once per rule.

Every function reads the *defaulted* object (the engine validates after defaulting), returns its
field errors in a stable order and ignores values of the wrong type (the schema check names them).
"""

from __future__ import annotations

import sys

from jobgate.engine.fielderrors import (
    ErrorType,
    FieldError,
    Key,
    duplicate,
    forbidden,
    invalid,
    not_found,
    not_supported,
    render_path,
    required,
    too_long,
    too_many,
)
from jobgate.engine.jsonpatch import PatchRecorder, escape_pointer_token
from jobgate.rules.jobmeta import as_int
from jobgate.rules.names import (
    dns1123_label_problems,
    dns1123_subdomain_problems,
    env_var_name_problems,
    is_dns1123_label,
    is_env_var_name,
    is_port_name,
    port_name_problems,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from jobgate.engine.fielderrors import FieldPath

    FieldSteps = tuple[str, ...]
    Condition = tuple[tuple[str, ...], Any]

MISSING: Any = object()
MUST_BE_STRING = "must be of type string"


def get(obj: Any, path: tuple[str, ...]) -> Any:
    """The value at ``path`` (field names from the object's root), MISSING when any step is absent."""
    value = obj
    for step in path:
        if not isinstance(value, dict) or step not in value:
            return MISSING
        value = value[step]
    return value


def holds(obj: Any, when: tuple[tuple[str, ...], Any] | None) -> bool:
    """A rule's condition: the field at ``when[0]`` equals ``when[1]`` (None: always)."""
    return when is None or get(obj, when[0]) == when[1]


def _items(obj: Any, path: tuple[str, ...]) -> list[tuple[int, dict[str, Any]]] | None:
    items = get(obj, path)
    if not isinstance(items, list):
        return None
    return [(index, item) for index, item in enumerate(items) if isinstance(item, dict)]


def _first_of_each(items: list[tuple[int, dict[str, Any]]], key: str, among: tuple[str, ...]) -> dict[str, int]:
    """The index of the first entry of each role (a known value of ``key``)."""
    first: dict[str, int] = {}
    for index, item in items:
        role = item.get(key)
        if isinstance(role, str) and role in among and role not in first:
            first[role] = index
    return first


# --- defaults ------------------------------------------------------------------------------------


def default_field(
    obj: dict[str, Any],
    recorder: PatchRecorder,
    path: tuple[str, ...],
    value: Any,
    empty_is_unset: bool,
    *,
    unless: tuple[tuple[str, ...], ...] = (),
    when_set: tuple[tuple[str, ...], ...] = (),
) -> dict[str, Any]:
    """``DefaultField``: the field at ``path`` (under an object that exists) set when unset, when
    none of the fields ``unless`` names is set and each of ``when_set`` is there."""
    parent = get(obj, path[:-1])
    if not isinstance(parent, dict):
        return obj
    given = parent.get(path[-1])
    if not (given is None or (empty_is_unset and _is_empty(given, value))):
        return obj
    if unless and any(get(obj, other) not in (MISSING, None) for other in unless):
        return obj
    if when_set and any(get(obj, tuple(_segment(s) for s in needed)) is MISSING for needed in when_set):
        return obj
    copied = dict(parent)
    own = list(value) if isinstance(value, list) else dict(value) if isinstance(value, dict) else value
    recorder.set(copied, path[-1], own, "/" + "/".join(path[:-1]))
    return _replaced(obj, path[:-1], copied)


def default_item_fields(
    obj: dict[str, Any],
    recorder: PatchRecorder,
    path: tuple[str, ...],
    fields: tuple[tuple[str, Any, bool, str], ...],
    base: str = "",
) -> dict[str, Any]:
    """``DefaultItemField``s of one list: each entry's (field, value, empty_is_unset, from_field) in
    order; with ``from_field``, the entry's value of it when that is one of ``value``. ``base``: the
    pointer of ``obj`` itself (a map's value, ``default_map_values``). Copy on write: the list, an
    entry and the objects on the way to the list are copied when an entry changes, ``obj`` itself
    returned when none does."""
    items = get(obj, path)
    if not isinstance(items, list):
        return obj
    defaulted: list[Any] | None = None
    pointer = ""
    for index, given in enumerate(items):
        if not isinstance(given, dict):
            continue
        item = given
        for field, value, empty_is_unset, from_field in fields:
            holder: Any = item
            name, outer = field, ""
            if "." in field:
                # A field of an object of the entry: set when that object exists (copied, then).
                outer, name = field.split(".", 1)
                holder = item.get(outer)
                if not isinstance(holder, dict):
                    continue
            current = holder.get(name)
            if not (current is None or (empty_is_unset and _is_empty(current, value))):
                continue
            if from_field:
                new = holder.get(from_field)
                if not (isinstance(new, str) and new in value):
                    continue
            else:
                # A list or object value is each entry's own (the patch writes it once per entry too).
                new = list(value) if isinstance(value, list) else dict(value) if isinstance(value, dict) else value
            if item is given:
                item = dict(given)
            if not pointer:
                pointer = base + "/" + "/".join(path)
            at = f"{pointer}/{index}"
            if outer:
                holder = item[outer] = dict(holder)
                at = f"{at}/{outer}"
            else:
                holder = item
            recorder.set(holder, name, new, at)
        if item is not given:
            if defaulted is None:
                defaulted = list(items)
            defaulted[index] = item
    return obj if defaulted is None else _replaced(obj, path, defaulted)


def default_map_values(
    obj: dict[str, Any],
    recorder: PatchRecorder,
    path: tuple[str, ...],
    default_value: Callable[[str, dict[str, Any], str, PatchRecorder, tuple[str, ...]], dict[str, Any]],
    only: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The defaults of each value of the map at ``path`` that is an object, value by value (each
    value's patches before the next one's): ``default_value`` (a kind's generated
    ``default_value_<kind>_<group>``) given the key, a copy of the value, its pointer and ``only``.
    The map and its values copied, the other values kept."""
    entries = get(obj, path)
    if not isinstance(entries, dict):
        return obj
    at = "/" + "/".join(path) + "/"
    defaulted = {
        key: default_value(key, dict(value), at + escape_pointer_token(key), recorder, only)
        if isinstance(value, dict)
        else value
        for key, value in entries.items()
    }
    return _replaced(obj, path, defaulted)


def _is_empty(given: Any, value: Any) -> bool:
    """What ``empty_is_unset`` reads as unset: the zero of the default's type, "" or 0 (0.0 too: the
    same number in JSON), as a Go webhook that cannot tell a zero from an absent field reads it."""
    if isinstance(value, int) and not isinstance(value, bool):
        return as_int(given) == 0
    return bool(given == "")


def _replaced(obj: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A copy of ``obj`` with ``value`` at ``path`` (not empty; the copies go no deeper than the path).
    Typed as the compiled build checks it: each level a dict, the value anything."""
    head = path[0]
    if len(path) == 1:
        return {**obj, head: value}
    inner = obj.get(head)
    return {**obj, head: _replaced(inner if isinstance(inner, dict) else {}, path[1:], value)}


# --- rules ---------------------------------------------------------------------------------------


def max_items(obj: Any, lists: tuple[tuple[tuple[str, ...], int], ...]) -> list[FieldError]:
    """``MaxItems``: each list of at most its limit of entries."""
    errors = []
    for path, limit in lists:
        items = get(obj, path)
        if isinstance(items, list) and len(items) > limit:
            errors.append(too_many(path, len(items), limit))
    return errors


def unique_by(obj: Any, path: tuple[str, ...], key: str, among: tuple[str, ...]) -> list[FieldError]:
    """``UniqueBy``: no two entries with the same ``key``; each later one is a duplicate. With
    ``among``, only those values count (another is the schema's to name)."""
    errors: list[FieldError] = []
    seen: set[str] = set()
    for index, item in _items(obj, path) or ():
        value = item.get(key)
        if not isinstance(value, str) or value == "" or (among and value not in among):
            continue
        if value in seen:
            errors.append(duplicate((*path, index, key), value))
        else:
            seen.add(value)
    return errors


def required_roles(
    obj: Any,
    *,
    path: tuple[str, ...],
    key: str,
    among: tuple[str, ...],
    roles: tuple[str, ...],
    when: tuple[tuple[str, ...], Any] | None,
    message: str,
) -> list[FieldError]:
    """``RequiredRoles``: when ``when`` holds, an entry of each of ``roles``; reported at the list."""
    items = _items(obj, path)
    if items is None or not holds(obj, when):
        return []
    present = _first_of_each(items, key, among)
    return [required(path, message.format(role=role)) for role in roles if role not in present]


def forbidden_roles(
    obj: Any,
    *,
    path: tuple[str, ...],
    key: str,
    among: tuple[str, ...],
    roles: tuple[str, ...],
    when: tuple[tuple[str, ...], Any] | None,
    message: str,
) -> list[FieldError]:
    """``ForbiddenRoles``: when ``when`` holds, no entry of ``roles``; reported at the first entry's key."""
    items = _items(obj, path)
    if items is None or not holds(obj, when):
        return []
    present = _first_of_each(items, key, among)
    return [invalid((*path, present[role], key), role, message) for role in roles if role in present]


def role_field_bound(
    obj: Any,
    *,
    path: tuple[str, ...],
    key: str,
    among: tuple[str, ...],
    role: str,
    field: str,
    bounds: tuple[int | None, int | None],
    every: bool,
    when: tuple[tuple[str, ...], Any] | None,
    message: str,
) -> list[FieldError]:
    """``RoleFieldBound``: an integer field of the role's entry (of each, with ``every``) within
    (minimum, maximum), when ``when`` holds; reported at the field."""
    items = _items(obj, path)
    if items is None or not holds(obj, when):
        return []
    if every:
        chosen = [(i, item) for i, item in items if item.get(key) == role]
    else:
        first = _first_of_each(items, key, among).get(role)
        chosen = [(i, item) for i, item in items if i == first]
    low, high = bounds
    errors = []
    for index, item in chosen:
        value = as_int(item.get(field))
        if value is not None and ((low is not None and value < low) or (high is not None and value > high)):
            errors.append(invalid((*path, index, field), value, message))
    return errors


def at_most_sum(
    obj: Any,
    old: Any,
    *,
    path: tuple[str, ...],
    items_path: tuple[str, ...],
    field: str,
    unset: int,
    message: str,
    update_message: str,
) -> list[FieldError]:
    """``AtMostSum``: the integer at ``path`` is at most the sum of ``field`` over the list's entries
    (an entry without it counts ``unset``; no list sums to 0); on UPDATE in ``update_message``'s words
    when given."""
    value = as_int(get(obj, path))
    if value is None:
        return []
    total = 0
    for _, item in _items(obj, items_path) or ():
        count = as_int(item.get(field))
        total += unset if count is None else count
    if value <= total:
        return []
    return [invalid(path, value, update_message if old is not None and update_message else message)]


def immutable(obj: Any, old: Any, path: tuple[str, ...], message: str) -> list[FieldError]:
    """``Immutable``: on UPDATE, the field is neither set, removed nor changed (a null is no value:
    the apiserver drops it)."""
    if old is None:
        return []
    new_value, old_value = get(obj, path), get(old, path)
    new_value = None if new_value is MISSING else new_value
    old_value = None if old_value is MISSING else old_value
    return [forbidden(path, message)] if new_value != old_value else []


# --- generic field forms -------------------------------------------------------------------------
#
# A field form's path comes compiled as (scope, target, when): ``scope`` the steps to each object
# it checks (through ``[*]``, every list item, and ``{*}``, every map value), ``target`` the steps
# from there to the field (a field name, or ``[key]`` for one key of a map), ``when`` the condition
# read from the same object (steps, value) or None.


def _segment(step: str) -> str:
    """A target step as a field path segment: ``[key]`` is a map key."""
    return Key(step[1:-1]) if step.startswith("[") else step


def _scoped(obj: Any, scope: FieldSteps, when: Condition | None) -> list[tuple[FieldPath, Any]]:
    """(field path, object) of each object ``scope`` reaches (list items and map values expanded in
    order) where the condition holds."""
    reached: list[tuple[FieldPath, Any]] = [((), obj)]
    for step in scope:
        found: list[tuple[FieldPath, Any]] = []
        for path, value in reached:
            if step == "[*]":
                if isinstance(value, list):
                    found.extend(((*path, index), item) for index, item in enumerate(value))
            elif step == "{*}":
                if isinstance(value, dict):
                    found.extend(((*path, Key(name)), item) for name, item in value.items())
            elif isinstance(value, dict) and _segment(step) in value:
                found.append(((*path, _segment(step)), value[_segment(step)]))
        reached = found
    return [(path, value) for path, value in reached if isinstance(value, dict) and _condition(value, when)]


def _condition(node: dict[str, Any], when: Condition | None) -> bool:
    if when is None:
        return True
    steps, expected = when
    return get(node, tuple(_segment(s) for s in steps)) == expected


def _targets(obj: Any, scope: FieldSteps, target: FieldSteps, when: Condition | None) -> list[tuple[FieldPath, Any]]:
    """(field path, value or MISSING) of the target field under each object of the scope whose
    target's parent exists (None, which the apiserver drops, is MISSING)."""
    segments = tuple(_segment(s) for s in target)
    out = []
    for path, node in _scoped(obj, scope, when):
        parent = get(node, segments[:-1])
        if not isinstance(parent, dict):
            continue
        value = parent.get(segments[-1])
        out.append(((*path, *segments), MISSING if value is None else value))
    return out


def field_presence(
    obj: Any,
    *,
    scope: FieldSteps,
    target: FieldSteps,
    when: Condition | None,
    empty_is_unset: bool,
    message: str,
    must_be_set: bool,
    string: bool = False,
) -> list[FieldError]:
    """``RequiredField`` (``must_be_set``: the field set, not "" with ``empty_is_unset``; with
    ``string``, a string) and ``ForbiddenField`` (not set, "" unset with ``empty_is_unset``), where
    the condition holds."""
    errors = []
    for path, value in _targets(obj, scope, target, when):
        unset = value is MISSING or (empty_is_unset and value == "")
        if must_be_set and unset:
            errors.append(required(path, message))
        elif must_be_set and string and type(value) is not str:
            errors.append(invalid(path, value, MUST_BE_STRING))
        elif not must_be_set and not unset:
            errors.append(forbidden(path, message))
    return errors


def rebased(base: FieldPath, error: FieldError) -> FieldError:
    """The error of a check run on an entry (a scope's), at the entry's path ``base``."""
    return FieldError(error.type, (*base, *error.path), error.value, error.detail)


def required_field(obj: Any, **where: Any) -> list[FieldError]:
    """``RequiredField``: ``field_presence`` of a field that must be set."""
    return field_presence(obj, must_be_set=True, **where)


def forbidden_field(obj: Any, **where: Any) -> list[FieldError]:
    """``ForbiddenField``: ``field_presence`` of a field that must not be set."""
    return field_presence(obj, must_be_set=False, **where)


def field_bound(
    obj: Any,
    *,
    scope: FieldSteps,
    target: FieldSteps,
    when: Condition | None,
    bounds: tuple[int | None, int | None],
    message: str,
    integer: bool = False,
) -> list[FieldError]:
    """``FieldBound``: an integer within bounds; ``message``, or the apiserver's words for them.
    ``integer``: another type is refused with ``message`` too."""
    low, high = bounds
    errors = []
    for path, given in _targets(obj, scope, target, when):
        if integer:
            if type(given) is not int or (low is not None and given < low) or (high is not None and given > high):
                errors.append(invalid(path, given, message))
            continue
        value = as_int(given)
        if value is None:
            continue
        if low is not None and value < low:
            detail = message or f"{render_path(path)} in body should be greater than or equal to {low}"
        elif high is not None and value > high:
            detail = message or f"{render_path(path)} in body should be less than or equal to {high}"
        else:
            continue
        errors.append(invalid(path, value, detail))
    return errors


def string_field(
    obj: Any,
    *,
    scope: FieldSteps,
    target: FieldSteps,
    when: Condition | None,
    pattern: str,
    lengths: tuple[int | None, int | None],
    enum: tuple[str, ...],
    message: str,
    label: bool = False,
    syntax: str = "",
    string: bool = False,
) -> list[FieldError]:
    """``StringField``: a string of the pattern, lengths and values; with ``message`` one error
    saying it, else each broken check in the apiserver's words for its schema keyword. ``label``
    (``syntax``: "port-name", "env-var-name"): a DNS-1123 label, each problem in Kubernetes' words
    ("" passes). ``string``: another type refused (``Unsupported value`` with ``enum``)."""
    low, high = lengths
    errors: list[FieldError] = []
    for path, value in _targets(obj, scope, target, when):
        if not isinstance(value, str):
            if string and value is not MISSING:
                errors.append(not_supported(path, value, enum) if enum else invalid(path, value, MUST_BE_STRING))
            continue
        if label or syntax:
            if value and not _SYNTAXES[syntax or "label"][0](value):
                errors.extend(invalid(path, value, problem) for problem in _SYNTAXES[syntax or "label"][1](value))
            continue
        # The schema keyword's own words, in the order the apiserver's validator checks them.
        problems: list[FieldError] = []
        if high is not None and len(value) > high:
            problems.append(too_long(path, high))
        if low is not None and len(value) < low:
            problems.append(invalid(path, value, f"{render_path(path)} in body should be at least {low} chars long"))
        if pattern:
            # Imported when a pattern is checked: ``re`` is no import of a job without one (start-up).
            import re

            # CEL's matches() and the schema's pattern both search, unanchored.
            if re.search(pattern, value) is None:
                problems.append(invalid(path, value, f"{render_path(path)} in body should match '{pattern}'"))
        if enum and value not in enum:
            problems.append(not_supported(path, value, enum))
        if problems:
            errors.extend([invalid(path, value, message)] if message else problems)
    return errors


# The names of Kubernetes' validation a StringField's ``syntax`` (or ``label``) checks: (whether a value
# is one, its problems in Kubernetes' words).
_SYNTAXES = {
    "label": (is_dns1123_label, dns1123_label_problems),
    "port-name": (is_port_name, port_name_problems),
    "env-var-name": (is_env_var_name, env_var_name_problems),
}


def at_most_one_of(
    obj: Any, *, scope: FieldSteps, target: FieldSteps, fields: tuple[str, ...], message: str
) -> list[FieldError]:
    """``AtMostOneOf``: at most one of the object's fields (or map keys) set."""
    segments = tuple(_segment(s) for s in target)
    errors = []
    for path, node in _scoped(obj, scope, None):
        holder = get(node, segments)
        if isinstance(holder, dict) and sum(holder.get(_segment(f)) is not None for f in fields) > 1:
            errors.append(forbidden((*path, *segments), message))
    return errors


# --- forms only Volcano's rules use ---------------------------------------------------------------


def acyclic(
    obj: Any,
    old: Any,
    *,
    path: tuple[str, ...],
    key: str,
    depends: tuple[str, ...],
    message: str,
    missing: str,
    create_only: bool,
) -> list[FieldError]:
    """``Acyclic``: the entries' dependencies name entries and form no cycle (Kahn's algorithm, as
    Volcano's topological sort); each entry left unsorted reported at its dependencies."""
    if create_only and old is not None:
        return []
    items = _items(obj, path) or []
    edges: dict[int, list[str]] = {}
    for index, item in items:
        holder = item.get(depends[0])
        if holder is None:
            continue
        names = get(holder, depends[1:])
        edges[index] = [n for n in names if isinstance(n, str)] if isinstance(names, list) else []
    if not edges:
        return []
    names_of = {index: _name(item, key) for index, item in items}
    known = set(names_of.values())
    remaining = {index: set(edges.get(index, ())) for index, _ in items}
    done: set[str] = set()
    progress = True
    while progress:
        progress = False
        for index in list(remaining):
            if remaining[index] <= done and names_of[index] not in remaining[index]:
                done.add(names_of[index])
                del remaining[index]
                progress = True
    errors = []
    for index in sorted(remaining):
        absent = sorted(n for n in remaining[index] if n not in known)
        why = missing.format(names=", ".join(absent)) if absent and missing else ""
        errors.append(invalid((*path, index, *depends), edges.get(index, []), message + why))
    return errors


def _name(item: dict[str, Any], key: str) -> str:
    name = item.get(key)
    return name if isinstance(name, str) else ""


def known_keys(obj: Any, path: tuple[str, ...], keys: tuple[str, ...], message: str) -> list[FieldError]:
    """``KnownKeys``: each key of the map not among ``keys``, reported at itself."""
    found = get(obj, path)
    if not isinstance(found, dict):
        return []
    return [invalid((*path, Key(k)), k, message.format(key=k)) for k in found if k not in keys]


def fixed_count(obj: Any, old: Any, path: tuple[str, ...], message: str) -> list[FieldError]:
    """``FixedCount``: on UPDATE the list keeps its number of entries (unset: none)."""
    if old is None:
        return []
    new_items, old_items = get(obj, path), get(old, path)
    new_count = len(new_items) if isinstance(new_items, list) else 0
    old_count = len(old_items) if isinstance(old_items, list) else 0
    return [forbidden(path, message)] if new_count != old_count else []


def subdomain(obj: Any, old: Any, path: tuple[str, ...], create_only: bool) -> list[FieldError]:
    """``Subdomain``: a string (not "") that is a DNS-1123 subdomain, each problem reported."""
    if create_only and old is not None:
        return []
    value = get(obj, path)
    if not isinstance(value, str) or not value:
        return []
    return [invalid(path, value, problem) for problem in dns1123_subdomain_problems(value)]


def flag_names_entry(
    obj: Any,
    old: Any,
    *,
    map_path: tuple[str, ...],
    name: str,
    flag: str,
    default: str,
    items_path: tuple[str, ...],
    key: str,
    message: str,
    create_only: bool,
) -> list[FieldError]:
    """``FlagNamesEntry``: the flag's value in ``map[name]`` (``default`` when none) names an entry."""
    if create_only and old is not None:
        return []
    found = get(obj, map_path)
    if not isinstance(found, dict) or name not in found:
        return []
    value = _flag_value(found.get(name), flag) or default
    if value in {_name(item, key) for _, item in _items(obj, items_path) or ()}:
        return []
    return [invalid((*map_path, Key(name)), value, message)]


def _flag_value(arguments: Any, flag: str) -> str | None:
    """The value of ``--flag=v``, ``-flag=v`` or ``--flag v`` in the arguments (Go's flag syntax)."""
    if not isinstance(arguments, list):
        return None
    args = [a for a in arguments if isinstance(a, str)]
    for position, argument in enumerate(args):
        bare = argument.lstrip("-")
        if not argument.startswith("-"):
            continue
        if bare.startswith(f"{flag}="):
            return bare.split("=", 1)[1]
        if bare == flag and position + 1 < len(args):
            return args[position + 1]
    return None


def default_indexed(
    obj: dict[str, Any],
    recorder: PatchRecorder,
    path: tuple[str, ...],
    *,
    field: str,
    prefix: str,
    empty_is_unset: bool,
) -> dict[str, Any]:
    """``DefaultIndexed``: each entry's field, when unset, the prefix and the entry's index."""
    items = get(obj, path)
    if not isinstance(items, list):
        return obj
    pointer = "/" + "/".join(path)
    defaulted = []
    for index, given in enumerate(items):
        item = given
        if isinstance(given, dict):
            current = given.get(field)
            if current is None or (empty_is_unset and current == ""):
                item = dict(given)
                recorder.set(item, field, f"{prefix}{index}", f"{pointer}/{index}")
        defaulted.append(item)
    return _replaced(obj, path, defaulted)


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def json_count(value: int) -> int | float:
    """A computed count as the apiserver's JSON carries it: beyond int64 only as a float.

    A count of 1e20 arrives as an integral float; a default copied from it (or summed over it) must
    stay writable in the patch, and /validate then reports it like the count it came from.
    """
    if _INT64_MIN <= value <= _INT64_MAX:
        return value
    # A product of two such floats can pass even the float range: the largest float stands for it.
    if abs(value) <= int(sys.float_info.max):
        return float(value)
    return sys.float_info.max if value > 0 else -sys.float_info.max


def default_sum(
    obj: dict[str, Any],
    recorder: PatchRecorder,
    path: tuple[str, ...],
    *,
    items_path: tuple[str, ...],
    field: str,
    empty_is_unset: bool,
) -> dict[str, Any]:
    """``DefaultSum``: the integer, when unset (or 0), the sum of the entries' field (when it differs)."""
    items = get(obj, items_path)
    parent = get(obj, path[:-1])
    if not isinstance(items, list) or not isinstance(parent, dict):
        return obj
    total = sum(as_int(item.get(field)) or 0 for item in items if isinstance(item, dict))
    given = parent.get(path[-1])
    if not (given is None or (empty_is_unset and _is_empty(given, 0))) or given == total:
        return obj
    copied = dict(parent)
    recorder.set(copied, path[-1], json_count(total), "/" + "/".join(path[:-1]))
    return _replaced(obj, path[:-1], copied)


def implied_keys(
    obj: dict[str, Any],
    recorder: PatchRecorder,
    path: tuple[str, ...],
    implies: tuple[tuple[str, tuple[str, ...]], ...],
) -> dict[str, Any]:
    """``ImpliedKeys``: each absent key a present key implies, added with an empty list."""
    found = get(obj, path)
    if not isinstance(found, dict):
        return obj
    copied = dict(found)
    for key, implied in implies:
        if key in copied:
            for other in implied:
                if other not in copied:
                    recorder.set(copied, other, [], "/" + "/".join(path))
    return _replaced(obj, path, copied)


def lifecycle_policies(
    obj: Any,
    *,
    lists: tuple[tuple[str, ...], ...],
    events: tuple[str, ...],
    actions: tuple[str, ...],
    any_event: str,
    words: tuple[str, str, str, str, str, str, str, str],
) -> list[FieldError]:
    """``LifecyclePolicies``: each list (scope steps to its holder, then its field) as Volcano's
    validatePolicies checks it. ``words``: both, neither, action, event, event_twice, zero,
    code_twice, not_alone."""
    errors: list[FieldError] = []
    for steps in lists:
        for holder_path, holder in _scoped(obj, steps[:-1], None):
            policies = holder.get(steps[-1])
            if isinstance(policies, list):
                errors.extend(
                    _policies(
                        policies,
                        (*holder_path, steps[-1]),
                        events=events,
                        actions=actions,
                        any_event=any_event,
                        words=words,
                    )
                )
    return errors


def _policies(
    policies: list[Any],
    path: FieldPath,
    *,
    events: tuple[str, ...],
    actions: tuple[str, ...],
    any_event: str,
    words: tuple[str, str, str, str, str, str, str, str],
) -> list[FieldError]:
    both, neither, bad_action, bad_event, event_twice, zero, code_twice, not_alone = words
    errors: list[FieldError] = []
    seen_events: set[str] = set()
    seen_codes: set[int] = set()
    for index, policy in enumerate(policies):
        if not isinstance(policy, dict):
            continue
        policy_path = (*path, index)
        located = _policy_events(policy, policy_path)
        exit_code = as_int(policy.get("exitCode"))
        if located and policy.get("exitCode") is not None:
            errors.append(forbidden((*policy_path, "exitCode"), both))
            continue
        if not located and policy.get("exitCode") is None:
            errors.append(required(policy_path, neither))
            continue
        action = policy.get("action")
        if located:
            if action not in actions:
                errors.append(invalid((*policy_path, "action"), action or "", bad_action))
            for event, event_path in located:
                if event not in events:
                    errors.append(invalid(event_path, event, bad_event))
                elif event in seen_events:
                    errors.append(FieldError(ErrorType.DUPLICATE, event_path, event, event_twice.format(event=event)))
                seen_events.add(event)
        elif exit_code is not None:
            if exit_code == 0:
                errors.append(invalid((*policy_path, "exitCode"), 0, zero))
            elif exit_code in seen_codes:
                errors.append(
                    FieldError(
                        ErrorType.DUPLICATE, (*policy_path, "exitCode"), exit_code, code_twice.format(code=exit_code)
                    )
                )
            seen_codes.add(exit_code)
    if any_event in seen_events and len(seen_events) > 1:
        errors.append(invalid(path, any_event, not_alone))
    return errors


def _policy_events(policy: dict[str, Any], path: FieldPath) -> list[tuple[str, FieldPath]]:
    """(event, where it is written) for ``events`` then ``event``, each event once."""
    seen: set[str] = set()
    located: list[tuple[str, FieldPath]] = []
    listed = policy.get("events")
    if isinstance(listed, list):
        for index, event in enumerate(listed):
            if isinstance(event, str) and event and event not in seen:
                seen.add(event)
                located.append((event, (*path, "events", index)))
    event = policy.get("event")
    if isinstance(event, str) and event and event not in seen:
        located.append((event, (*path, "event")))
    return located


def bounds(obj: Any, nodes: tuple[Any, ...]) -> list[FieldError]:
    """``Bounds``: every list and string beyond its bound, in the order of the walk. A node, as the
    generated call passes it: (steps, limit, string, children)."""
    errors: list[FieldError] = []
    _bounds_under(obj, (), nodes, errors)
    return errors


def _bounds_under(value: Any, path: FieldPath, nodes: tuple[Any, ...], errors: list[FieldError]) -> None:
    for steps, limit, string, children in nodes:
        for at, found in _reached(value, path, steps):
            if limit is not None:
                if string and isinstance(found, str) and len(found.encode()) > limit:
                    errors.append(too_long(at, limit))
                elif not string and isinstance(found, list) and len(found) > limit:
                    errors.append(too_many(at, len(found), limit))
            if children and isinstance(found, list):
                for index, item in enumerate(found):
                    _bounds_under(item, (*at, index), children, errors)


def _reached(value: Any, path: FieldPath, steps: tuple[str, ...]) -> list[tuple[FieldPath, Any]]:
    """(path, value) of what the steps reach; ``{*}`` each value of a map, its key a field."""
    reached: list[tuple[FieldPath, Any]] = [(path, value)]
    for step in steps:
        found: list[tuple[FieldPath, Any]] = []
        for at, node in reached:
            if not isinstance(node, dict):
                continue
            if step == "{*}":
                found.extend(((*at, name), item) for name, item in node.items())
            elif step in node:
                found.append(((*at, step), node[step]))
        reached = found
    return reached


def required_item_field(obj: Any, path: tuple[str, ...], field: str, message: str) -> list[FieldError]:
    """``RequiredItemField``: each entry without the field (or null), in order."""
    return [
        required((*path, index, field), message.format(index=index))
        for index, item in _items(obj, path) or ()
        if item.get(field) is None
    ]


def unique_name(obj: Any, path: tuple[str, ...], key: str, message: str) -> list[FieldError]:
    """``UniqueName``: each entry whose key (a string, else "") an earlier entry has, a duplicate."""
    errors: list[FieldError] = []
    seen: set[str] = set()
    for index, item in _items(obj, path) or ():
        value = item.get(key)
        name = value if isinstance(value, str) else ""
        if name in seen:
            errors.append(FieldError(ErrorType.DUPLICATE, (*path, index, key), name, message.format(name=name)))
        seen.add(name)
    return errors


def required_list(obj: Any, path: tuple[str, ...], message: str) -> list[FieldError]:
    """``RequiredList``: the list under an object that exists, set and not empty."""
    parent = get(obj, path[:-1])
    if not isinstance(parent, dict):
        return []
    value = parent.get(path[-1])
    return [required(path, message)] if value is None or (isinstance(value, list) and not value) else []


def not_both(obj: Any, paths: tuple[FieldSteps, ...], first: str, second: str, message: str) -> list[FieldError]:
    """``NotBoth``: under each object of each path, ``second`` (set, not "") not beside ``first``."""
    errors = []
    for steps in paths:
        for path, node in _scoped(obj, steps, None):
            if node.get(first) is not None and node.get(second) not in (None, ""):
                errors.append(forbidden((*path, second), message))
    return errors


def claim_volumes(
    obj: Any,
    path: tuple[str, ...],
    *,
    fields: tuple[str, str, str],
    words: tuple[str, str, str, str, str],
) -> list[FieldError]:
    """``ClaimVolumes``: each volume, in order (``fields``: mount, claim, claim_name; ``words``:
    mount_required, mount_twice, neither, both, bad_name)."""
    volumes = get(obj, path)
    if not isinstance(volumes, list):
        return []
    mount, claim_field, name_field = fields
    mount_required, mount_twice, neither, both, bad_name = words
    errors: list[FieldError] = []
    mount_paths: set[str] = set()
    for index, volume in enumerate(volumes):
        if not isinstance(volume, dict):
            continue
        at: FieldPath = (*path, index)
        mount_path = volume.get(mount)
        if mount_path == "":
            # The apiserver's words for the CRD's minLength, which it says before any webhook runs.
            errors.append(
                invalid((*at, mount), "", f"{render_path((*at, mount))} in body should be at least 1 chars long")
            )
        if mount_path in (None, ""):
            errors.append(required((*at, mount), mount_required))
        elif isinstance(mount_path, str):
            if mount_path in mount_paths:
                errors.append(
                    FieldError(ErrorType.DUPLICATE, (*at, mount), mount_path, mount_twice.format(path=mount_path))
                )
            mount_paths.add(mount_path)
        claim = volume.get(claim_field)
        claim_name = volume.get(name_field)
        if claim is None and claim_name in (None, ""):
            errors.append(required(at, neither))
        elif claim is not None and claim_name not in (None, ""):
            errors.append(invalid((*at, name_field), claim_name, both))
        elif isinstance(claim_name, str) and claim_name:
            problems = dns1123_subdomain_problems(claim_name)
            if problems:
                errors.append(
                    invalid(
                        (*at, name_field), claim_name, bad_name.format(name=claim_name, problems=", ".join(problems))
                    )
                )
    return errors


def default_item_when(
    obj: dict[str, Any],
    recorder: PatchRecorder,
    path: tuple[str, ...],
    *,
    field: tuple[str, ...],
    value: Any,
    when: tuple[str, Any],
    empty_is_unset: bool,
) -> dict[str, Any]:
    """``DefaultItemWhen``: each entry's field, when unset and the field beside it holds ``when``'s value."""
    items = get(obj, path)
    if not isinstance(items, list):
        return obj
    beside, expected = when
    defaulted = []
    for index, given in enumerate(items):
        item = given
        holder = get(given, field[:-1]) if isinstance(given, dict) else MISSING
        if isinstance(holder, dict):
            condition = holder.get(beside)
            # Of the value's type too: 1 is not true (a Go bool field).
            met = type(condition) is type(expected) and condition == expected
            current = holder.get(field[-1])
            if met and (current is None or (empty_is_unset and _is_empty(current, value))):
                copied = dict(holder)
                recorder.set(copied, field[-1], value, "/" + "/".join((*path, str(index), *field[:-1])))
                item = _replaced(given, field[:-1], copied)
        defaulted.append(item)
    return _replaced(obj, path, defaulted)


def default_item_product(
    obj: dict[str, Any],
    recorder: PatchRecorder,
    path: tuple[str, ...],
    *,
    field: str,
    factors: tuple[tuple[str, ...], ...],
    otherwise: tuple[str, ...],
) -> dict[str, Any]:
    """``DefaultItemProduct``: each entry's unset integer, the product of the factors when the first
    is above 0, else its other field."""
    items = get(obj, path)
    if not isinstance(items, list):
        return obj
    pointer = "/" + "/".join(path)
    defaulted = []
    for index, given in enumerate(items):
        item = given
        if isinstance(given, dict) and given.get(field) is None:
            values = [as_int(get(given, f)) or 0 for f in factors]
            total = values[0]
            for factor in values[1:]:
                total *= factor
            item = dict(given)
            chosen = total if values[0] > 0 else as_int(get(given, otherwise)) or 0
            recorder.set(item, field, json_count(chosen), f"{pointer}/{index}")
        defaulted.append(item)
    return _replaced(obj, path, defaulted)


def unchanged(
    obj: Any,
    old: Any,
    *,
    path: tuple[str, ...],
    mutable: tuple[str, ...],
    mutable_entries: tuple[tuple[str, tuple[str, ...]], ...],
    written: tuple[tuple[str, str, str], ...],
    maps: tuple[str, ...],
    depth: int,
    counted: str,
    message: str,
) -> list[FieldError]:
    """``Unchanged``: on UPDATE, each change under ``path`` but the mutable fields, reported."""
    if old is None:
        return []
    new = get(obj, path)
    if not isinstance(new, dict):
        return []
    before = get(old, path)
    before = before if isinstance(before, dict) else {}
    recount = False
    if counted:
        new_items, old_items = new.get(counted), before.get(counted)
        new_count = len(new_items) if isinstance(new_items, list) else 0
        recount = new_count != (len(old_items) if isinstance(old_items, list) else 0)
    views = [_unchanged_view(v, mutable, mutable_entries, written, frozenset(maps)) for v in (before, new)]
    errors = []
    for changed in _changed_paths(views[0], views[1], path, len(path) + depth - 1):
        if recount and changed[: len(path) + 1] == (*path, counted):
            continue  # the FixedCount's: the lists cannot be compared entry by entry
        errors.append(forbidden(changed, message))
    return errors


def _unchanged_view(
    value: dict[str, Any],
    mutable: tuple[str, ...],
    mutable_entries: tuple[tuple[str, tuple[str, ...]], ...],
    written: tuple[tuple[str, str, str], ...],
    maps: frozenset[str],
) -> Any:
    """The object without what may change, nil and empty treated alike (Go's Semantic.DeepEqual)."""
    view = {k: v for k, v in value.items() if k not in mutable}
    for name, fields in mutable_entries:
        items = view.get(name)
        if isinstance(items, list):
            view[name] = [{k: v for k, v in e.items() if k not in fields} if isinstance(e, dict) else e for e in items]
    for name, field, beside in written:
        items = view.get(name)
        if isinstance(items, list):
            view[name] = [
                {k: v for k, v in e.items() if k != field} if isinstance(e, dict) and e.get(beside) is not None else e
                for e in items
            ]
    return _semantic(view, maps)


def _semantic(value: Any, maps: frozenset[str], *, is_map: bool = False) -> Any:
    # A Go map among the fields: a key with an empty value differs from no key (unlike a struct field).
    if isinstance(value, dict):
        cleaned = {k: _semantic(v, maps, is_map=k in maps) for k, v in value.items()}
        if is_map:
            return {k: v for k, v in cleaned.items() if v is not None}
        return {k: v for k, v in cleaned.items() if v is not None and v not in ({}, [])}
    if isinstance(value, list):
        return [_semantic(v, maps) for v in value]
    return value


def _changed_paths(old: Any, new: Any, path: tuple[str | int, ...], deepest: int) -> list[tuple[str | int, ...]]:
    """Where ``new`` differs from ``old``: object keys and list entries, down to paths of ``deepest``
    + 1 steps."""
    if old == new:
        return []
    if isinstance(old, dict) and isinstance(new, dict) and len(path) <= deepest:
        found = []
        for key in list(old) + [k for k in new if k not in old]:
            found += _changed_paths(old.get(key), new.get(key), (*path, key), deepest)
        return found
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new) and len(path) <= deepest:
        found = []
        for index, (before, after) in enumerate(zip(old, new, strict=True)):
            found += _changed_paths(before, after, (*path, index), deepest)
        return found
    return [path]


# --- forms only the kinds of a map of replica types use (jobgate/rules/replicajobs.py) ---------------


def known_types(obj: Any, path: tuple[str, ...], types: tuple[str, ...], any_case: bool) -> list[FieldError]:
    """``KnownTypes``: each key of the map that is no type, in the map's order."""
    found = get(obj, path)
    if not isinstance(found, dict) or found.keys() <= set(types):
        return []
    canonical = {t.casefold(): t for t in types}
    errors: list[FieldError] = []
    for key in found:
        if key in types:
            continue
        spelled = canonical.get(key.casefold())
        at = (*path, Key(key))
        if (
            spelled is not None
            and any_case
            and any(other != key and canonical.get(other.casefold()) == spelled for other in found)
        ):
            errors.append(duplicate(at, key))
        else:
            errors.append(not_supported(at, key, list(types)))
    return errors


def with_port(
    replica: dict[str, Any],
    recorder: PatchRecorder,
    pointer: str,
    *,
    container: str,
    port: tuple[str, int],
    named: bool,
) -> dict[str, Any]:
    """``DefaultTemplatePort`` on one value of the map (``replica``, at ``pointer``): the port on the
    container named ``container`` (``named``: only there; else the first container), unless a port of
    its name is there; the value copied down to the container when it changes. Anything of an
    unexpected type is validation's."""
    template = replica.get("template")
    spec = template.get("spec") if isinstance(template, dict) else None
    containers = spec.get("containers") if isinstance(spec, dict) else None
    if not isinstance(template, dict) or not isinstance(spec, dict) or not isinstance(containers, list):
        return replica
    target = -1
    for index, candidate in enumerate(containers):
        if isinstance(candidate, dict) and candidate.get("name") == container:
            target = index
            break
    if target < 0:
        if named or not containers:
            return replica
        target = 0
    given = containers[target]
    if not isinstance(given, dict):
        return replica
    ports = given.get("ports")
    if ports is not None and not isinstance(ports, list):
        return replica
    name, number = port
    for existing in ports or ():
        if isinstance(existing, dict) and existing.get("name") == name:
            return replica
    copied = dict(given)
    recorder.append(
        copied, "ports", {"name": name, "containerPort": number}, f"{pointer}/template/spec/containers/{target}"
    )
    changed = list(containers)
    changed[target] = copied
    return {**replica, "template": {**template, "spec": {**spec, "containers": changed}}}


def _run_policy(spec: dict[str, Any], place: str) -> tuple[dict[str, Any], FieldPath]:
    """The run policy (``RUN_POLICY_PLACES``) and its path."""
    separate = spec.get("runPolicy")
    if place == "runPolicy":
        return (separate if isinstance(separate, dict) else {}), ("spec", "runPolicy")
    if place == "either" and isinstance(separate, dict):
        return separate, ("spec", "runPolicy")
    return spec, ("spec",)


def _run_policy_value(spec: dict[str, Any], field: tuple[str, ...], place: str) -> tuple[Any, FieldPath]:
    """The run policy's field ("" read as None) and its path."""
    policy, path = _run_policy(spec, place)
    value = get(policy, field)
    return (None if value in (MISSING, "") else value), (*path, *field)


def run_policy_immutable(obj: Any, old: Any, field: tuple[str, ...], place: str, message: str) -> list[FieldError]:
    """``RunPolicyImmutable``: on UPDATE the field as it was (unset and "" alike)."""
    if old is None or not isinstance(obj.get("spec"), dict) or not isinstance(old.get("spec"), dict):
        return []
    new_value, new_path = _run_policy_value(obj["spec"], field, place)
    old_value, old_path = _run_policy_value(old["spec"], field, place)
    if new_value == old_value:
        return []
    return [invalid(new_path if new_value is not None else old_path, new_value, message)]


def run_policy_at_most_total(
    obj: Any, field: tuple[str, ...], path: tuple[str, ...], place: str, message: str
) -> list[FieldError]:
    """``RunPolicyAtMostTotal``, on the defaulted job: the replicas as they are."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return []
    policy, at = _run_policy(spec, place)
    parent = get(policy, field[:-1])
    if not isinstance(parent, dict):
        return []
    bound = as_int(parent.get(field[-1]))
    if bound is None:
        return []
    entries = get(obj, path)
    counts = (
        [as_int(r.get("replicas")) for r in entries.values() if isinstance(r, dict)]
        if isinstance(entries, dict)
        else []
    )
    total = sum(n for n in counts if n is not None and n > 0)
    if bound <= total:
        return []
    return [invalid((*at, *field), bound, f"{message} ({total})")]


def default_type_spelling(
    obj: dict[str, Any], recorder: PatchRecorder, path: tuple[str, ...], types: tuple[str, ...], old: Any
) -> dict[str, Any]:
    """``DefaultTypeSpelling``: ``worker``/``WORKER`` -> ``Worker`` in a copy of the map, unless that
    would overwrite an existing key; ``old``: the stored job (None on CREATE)."""
    entries = get(obj, path)
    if not isinstance(entries, dict):
        return obj
    previous = get(old, path) if old is not None else None
    return _replaced(obj, path, respelled_types(entries, recorder, "/" + "/".join(path), types, previous))


def respelled_types(
    entries: dict[str, Any], recorder: PatchRecorder, pointer: str, types: tuple[str, ...], previous: Any
) -> dict[str, Any]:
    """``DefaultTypeSpelling`` on the map itself (``entries``, at the JSON pointer ``pointer``; ``previous``:
    the stored job's map, or anything else when there is none): its renamed copy."""
    if entries.keys() <= set(types):
        # Every key spelled as its type (the usual job): nothing to rename, nothing stale.
        return dict(entries)
    spelled = {t.casefold(): t for t in types}
    canonical_of = {
        key: canonical
        for key in entries
        if isinstance(key, str) and (canonical := spelled.get(key.casefold())) not in (None, key)
    }
    # Two other spellings of one type (``worker`` and ``WORKER``): neither is renamed, whichever
    # came first in the object; both are duplicates then.
    spellings: dict[str, int] = {}
    for canonical in canonical_of.values():
        spellings[canonical] = spellings.get(canonical, 0) + 1
    canonical_of = {key: canonical for key, canonical in canonical_of.items() if spellings[canonical] == 1}
    stale = {
        canonical
        for key, canonical in canonical_of.items()
        if canonical in entries
        and isinstance(previous, dict)
        and key not in previous
        and previous.get(canonical) == entries[canonical]
    }
    for canonical in stale:
        recorder.remove(pointer, canonical)
    renamed: dict[str, Any] = {}
    for key, entry in entries.items():
        if key in stale:
            continue
        canonical = canonical_of.get(key)
        if canonical is not None and (canonical not in entries or canonical in stale) and canonical not in renamed:
            recorder.move(pointer, key, canonical)
            renamed[canonical] = entry
        else:
            renamed[key] = entry
    return renamed


# --- forms only T9k's and DI-engine's rules use ---------------------------------------------------


def refers_to(
    obj: Any,
    *,
    paths: tuple[tuple[str, ...], ...],
    key: str,
    items_path: tuple[str, ...],
    by: str,
    message: str,
    unique: bool,
) -> list[FieldError]:
    """``RefersTo``: each entry's key names an entry of the list (``Not found``, the known values in
    ``message``) and, with ``unique``, each named value once per list; entry by entry."""
    known: dict[str, None] = {}
    for _, item in _items(obj, items_path) or ():
        value = item.get(by)
        if isinstance(value, str) and value:
            known.setdefault(value, None)
    detail = message.format(known=", ".join(known) or "none")
    errors: list[FieldError] = []
    for path in paths:
        seen: set[str] = set()
        for index, item in _items(obj, path) or ():
            value = item.get(key)
            if not isinstance(value, str) or value == "":
                continue
            if value not in known:
                errors.append(not_found((*path, index, key), value, detail))
            elif unique and value in seen:
                errors.append(duplicate((*path, index, key), value))
            else:
                seen.add(value)
    return errors


def index_maps(
    obj: Any,
    *,
    paths: tuple[tuple[str, ...], ...],
    items_path: tuple[str, ...],
    by: str,
    count: str,
    unset: int,
    messages: tuple[str, str, str, str, str],
    bounds: tuple[int, int],
) -> list[FieldError]:
    """``IndexMaps``: each map names entries (by ``by``) of the list, each name one of them, listing
    indices below its count; ``messages`` (empty, unknown, unlisted, below, none); ``bounds``: the
    most maps and names (``Too many``). Map by map, name by name."""
    empty, unknown, unlisted, below, none = messages
    max_maps, max_names = bounds
    counts: dict[str, int] = {}
    for _, item in _items(obj, items_path) or ():
        name = item.get(by)
        if isinstance(name, str) and name and name not in counts:
            stated = as_int(item.get(count))
            counts[name] = unset if stated is None else stated
    detail = unknown.format(known=", ".join(counts) or "none")
    errors: list[FieldError] = []
    for path in paths:
        maps = get(obj, path)
        if not isinstance(maps, list):
            continue  # absent (nothing to check) or mistyped (the schema check says so)
        if len(maps) > max_maps:
            errors.append(too_many(path, len(maps), max_maps))
        for index, entry in enumerate(maps):
            at: FieldPath = (*path, index)
            if not isinstance(entry, dict):
                continue
            listed = {k: v for k, v in entry.items() if v is not None}
            if not listed:
                errors.append(required(at, empty))
                continue
            if len(listed) > max_names:
                errors.append(too_many(at, len(listed), max_names))
            for name, indices in listed.items():
                name_path: FieldPath = (*at, Key(name))
                if name not in counts:
                    errors.append(not_found(name_path, name, detail))
                    continue
                if not isinstance(indices, list):
                    continue
                if not indices:
                    errors.append(required(name_path, unlisted))
                replicas = counts[name]
                # Not the name of the int read above: mypyc types a name once, and an index may be any value.
                for position, listed_index in enumerate(indices):
                    value = as_int(listed_index)
                    if value is not None and (value < 0 or value >= replicas):
                        if replicas > 0:
                            words = below.format(count=replicas, name=name, last=replicas - 1)
                        else:
                            words = none.format(name=name)
                        errors.append(invalid((*name_path, position), value, words))
    return errors


def named_entries(
    obj: Any,
    *,
    path: tuple[str, ...],
    name: str,
    type_field: str,
    untyped: str,
    singletons: tuple[str, ...],
    messages: tuple[str, str, str],
    several: bool,
    label_stops: bool,
) -> list[FieldError]:
    """``NamedEntries``: entry by entry, a singleton type once, then the name set (``several``: in a
    list of more than one entry), a label, unique; ``messages``: (singleton, first, unnamed)."""
    singleton, first, unnamed = messages
    entries = get(obj, path)
    many = isinstance(entries, list) and len(entries) > 1
    errors: list[FieldError] = []
    typed: dict[str, int] = {}
    names: set[str] = set()
    for index, item in _items(obj, path) or ():
        at: FieldPath = (*path, index)
        kind = item.get(type_field) if type_field else None
        if isinstance(kind, str) and kind in singletons:
            if kind in typed:
                words = singleton.format(type=kind) + first.format(first=typed[kind])
                errors.append(invalid((*at, type_field), kind, words))
            else:
                typed[kind] = index
        value = item.get(name)
        if value is None or value == "":
            if many or not several:
                errors.append(required((*at, name), unnamed if not type_field or kind == untyped else ""))
            continue
        if not isinstance(value, str):
            continue  # the schema check reports the type
        if not is_dns1123_label(value):
            errors.extend(invalid((*at, name), value, problem) for problem in dns1123_label_problems(value))
            if label_stops:
                continue
        if value in names:
            errors.append(duplicate((*at, name), value))
            continue
        names.add(value)
    return errors


def entries_unchanged(
    obj: Any, old: Any, *, path: tuple[str, ...], fields: tuple[str, ...], message: str
) -> list[FieldError]:
    """``EntriesUnchanged``: on UPDATE, each entry's ``fields`` (a list of them, in order) as stored."""
    if old is None:
        return []

    def kept(version: Any) -> list[tuple[Any, ...]]:
        items = get(version, path)
        if not isinstance(items, list):
            return []
        padding = (None,) * (len(fields) - 1)
        return [tuple(i.get(f) for f in fields) if isinstance(i, dict) else (i, *padding) for i in items]

    return [forbidden(path, message)] if kept(obj) != kept(old) else []


def default_finish_rules(
    obj: dict[str, Any],
    recorder: PatchRecorder,
    previous: Any,
    *,
    path: tuple[str, ...],
    items_path: tuple[str, ...],
    by: str,
    count: str,
    unset: int,
    each: bool,
    bounds: tuple[int, int],
) -> dict[str, Any]:
    """``DefaultFinishRules``: the rules for the entries' counts when there are none, or when they are
    the defaults of the stored job's counts (``previous``, None on CREATE) and the counts changed."""
    parent = get(obj, path[:-1])
    if not isinstance(parent, dict):
        return obj
    counts = _finish_counts(get(obj, items_path), by, count, unset, bounds)
    if not counts:
        return obj
    old_counts = _finish_counts(get(previous, items_path), by, count, unset, bounds)
    given = parent.get(path[-1])
    rescaled = old_counts and old_counts != counts and given == _finish_rules(old_counts, each)
    if given is not None and not rescaled:
        return obj
    rules = _finish_rules(counts, each)
    if not rules:
        return obj
    parent = dict(parent)
    recorder.set(parent, path[-1], rules, "/" + "/".join(path[:-1]))
    return _replaced(obj, path[:-1], parent)


def _finish_counts(entries: Any, by: str, count: str, unset: int, bounds: tuple[int, int]) -> dict[str, int]:
    """Name -> count of each entry, in order; empty when an entry is no object, has no name of its own
    or a count below 0, or past the bounds (entries, replicas in all)."""
    counts: dict[str, int] = {}
    if not isinstance(entries, list):
        return counts
    for entry in entries:
        if not isinstance(entry, dict):
            return {}
        name, value = entry.get(by), entry.get(count)
        if not isinstance(name, str) or not name or name in counts:
            return {}
        number = as_int(value) if value is not None else unset
        if number is None or number < 0:
            return {}
        counts[name] = number
    if len(counts) > bounds[0] or sum(counts.values()) > bounds[1]:
        return {}
    return counts


def _finish_rules(counts: dict[str, int], each: bool) -> list[dict[str, list[int]]]:
    """One rule per replica (``each``), or one rule listing every replica (none when there is none)."""
    if each:
        return [{name: [index]} for name, number in counts.items() for index in range(number)]
    every = {name: list(range(number)) for name, number in counts.items() if number > 0}
    return [every] if every else []
