"""The Python meaning of the generic default forms (``DefaultField``, ``DefaultItemField``, a map's
value defaults).

Generated calls of these functions are in ``jobgate/_generated/declared/<family>.py``; see
``docs/rule-forms.md``.
"""

from __future__ import annotations

from jobgate.engine.jsonpatch import PatchRecorder, escape_pointer_token
from jobgate.forms.checks.common import MISSING, get
from jobgate.forms.checks.fields import segment
from jobgate.rules.dicts import as_int

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    FieldSteps = tuple[str, ...]
    Condition = tuple[tuple[str, ...], Any]


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
    if not (given is None or (empty_is_unset and is_empty(given, value))):
        return obj
    if unless and any(get(obj, other) not in (MISSING, None) for other in unless):
        return obj
    if when_set and any(get(obj, tuple(segment(s) for s in needed)) is MISSING for needed in when_set):
        return obj
    copied = dict(parent)
    own = list(value) if isinstance(value, list) else dict(value) if isinstance(value, dict) else value
    recorder.set(copied, path[-1], own, "/" + "/".join(path[:-1]))
    return replaced(obj, path[:-1], copied)


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
            if not (current is None or (empty_is_unset and is_empty(current, value))):
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
    return obj if defaulted is None else replaced(obj, path, defaulted)


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
    return replaced(obj, path, defaulted)


def is_empty(given: Any, value: Any) -> bool:
    """What ``empty_is_unset`` reads as unset: the zero of the default's type, "" or 0 (0.0 too: the
    same number in JSON), as a Go webhook that cannot tell a zero from an absent field reads it."""
    if isinstance(value, int) and not isinstance(value, bool):
        return as_int(given) == 0
    return bool(given == "")


def replaced(obj: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A copy of ``obj`` with ``value`` at ``path`` (not empty; the copies go no deeper than the path).
    Typed as the compiled build checks it: each level a dict, the value anything."""
    head = path[0]
    if len(path) == 1:
        return {**obj, head: value}
    inner = obj.get(head)
    return {**obj, head: replaced(inner if isinstance(inner, dict) else {}, path[1:], value)}
