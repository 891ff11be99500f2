"""The Python meaning of ``NamedEntries``: named entries of lists, which T9k's and DI-engine's rules use.

Generated calls of these functions are in ``jobgate/_generated/declared/<family>.py``; see
``docs/rule-forms.md``.
"""

from __future__ import annotations

from jobgate.engine.fielderrors import (
    FieldError,
    duplicate,
    invalid,
    required,
)
from jobgate.forms.checks.common import get, object_items
from jobgate.rules.names import (
    dns1123_label_problems,
    is_dns1123_label,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any

    from jobgate.engine.fielderrors import FieldPath

    FieldSteps = tuple[str, ...]
    Condition = tuple[tuple[str, ...], Any]


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
    rules: tuple[str, str, str, str],
) -> list[FieldError]:
    """``NamedEntries``: entry by entry, a singleton type once, then the name set (``several``: in a
    list of more than one entry), a label, unique; ``messages``: (singleton, first, unnamed); ``rules``:
    the ids of these four rules, which their errors carry."""
    singleton, first, unnamed = messages
    singleton_rule, required_rule, label_rule, unique_rule = rules
    entries = get(obj, path)
    many = isinstance(entries, list) and len(entries) > 1
    errors: list[FieldError] = []
    typed: dict[str, int] = {}
    names: set[str] = set()
    for index, item in object_items(obj, path) or ():
        at: FieldPath = (*path, index)
        kind = item.get(type_field) if type_field else None
        if isinstance(kind, str) and kind in singletons:
            if kind in typed:
                words = singleton.format(type=kind) + first.format(first=typed[kind])
                errors.append(invalid((*at, type_field), kind, words, singleton_rule))
            else:
                typed[kind] = index
        value = item.get(name)
        if value is None or value == "":
            if many or not several:
                detail = unnamed if not type_field or kind == untyped else ""
                errors.append(required((*at, name), detail, required_rule))
            continue
        if not isinstance(value, str):
            continue  # the schema check reports the type
        if not is_dns1123_label(value):
            errors.extend(invalid((*at, name), value, problem, label_rule) for problem in dns1123_label_problems(value))
            if label_stops:
                continue
        if value in names:
            errors.append(duplicate((*at, name), value, unique_rule))
            continue
        names.add(value)
    return errors
