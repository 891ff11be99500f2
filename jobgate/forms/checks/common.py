"""Shared steps of the forms' runtime checks: reading a field by its path, a rule's condition, a list's
object items and the first entry of each role.

Generated calls of these functions are in ``jobgate/_generated/declared/<family>.py``; see
``docs/rule-forms.md``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any, Final

    from jobgate.engine.fielderrors import FieldError

    FieldSteps = tuple[str, ...]
    Condition = tuple[tuple[str, ...], Any]


# Final: compiled, every use reads a C static instead of looking the name up in a module dict.
MISSING: Final[Any] = object()
MUST_BE_STRING: Final = "must be of type string"


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


def object_items(obj: Any, path: tuple[str, ...]) -> list[tuple[int, dict[str, Any]]] | None:
    items = get(obj, path)
    if not isinstance(items, list):
        return None
    return [(index, item) for index, item in enumerate(items) if isinstance(item, dict)]


def first_of_each(items: list[tuple[int, dict[str, Any]]], key: str, among: tuple[str, ...]) -> dict[str, int]:
    """The index of the first entry of each role (a known value of ``key``)."""
    first: dict[str, int] = {}
    for index, item in items:
        role = item.get(key)
        if isinstance(role, str) and role in among and role not in first:
            first[role] = index
    return first


def ruled(rule: str, found: list[FieldError]) -> list[FieldError]:
    """The errors a declaration's check ``found``, labelled with its id (generated checks call it only
    when there are some, so a job without errors never pays for it)."""
    from jobgate.engine.fielderrors import FieldError

    return [FieldError(e.type, e.path, e.value, e.detail, rule) for e in found]
