"""The Python meaning of the role and list forms (``UniqueBy``, ``RequiredRoles``, ``ForbiddenRoles``,
``RoleFieldBound``, ``AtMostSum``, ``MaxItems``, ``Immutable``).

Generated calls of these functions are in ``jobgate/_generated/declared/<family>.py``; see
``docs/rule-forms.md``.
"""

from __future__ import annotations

from jobgate.engine.fielderrors import (
    FieldError,
    duplicate,
    forbidden,
    invalid,
    required,
    too_many,
)
from jobgate.forms.checks.common import MISSING, first_of_each, get, holds, object_items
from jobgate.rules.dicts import as_int

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any

    FieldSteps = tuple[str, ...]
    Condition = tuple[tuple[str, ...], Any]


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
    for index, item in object_items(obj, path) or ():
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
    items = object_items(obj, path)
    if items is None or not holds(obj, when):
        return []
    present = first_of_each(items, key, among)
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
    items = object_items(obj, path)
    if items is None or not holds(obj, when):
        return []
    present = first_of_each(items, key, among)
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
    items = object_items(obj, path)
    if items is None or not holds(obj, when):
        return []
    if every:
        chosen = [(i, item) for i, item in items if item.get(key) == role]
    else:
        first = first_of_each(items, key, among).get(role)
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
    for _, item in object_items(obj, items_path) or ():
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
