"""The Python meaning of the forms only T9k's rules use (``RefersTo``, ``IndexMaps``,
``EntriesUnchanged``, ``DefaultFinishRules``).

Generated calls of these functions are in ``jobgate/_generated/declared/<family>.py``; see
``docs/rule-forms.md``.
"""

from __future__ import annotations

from jobgate.engine.fielderrors import (
    FieldError,
    Key,
    duplicate,
    forbidden,
    invalid,
    not_found,
    required,
    too_many,
)
from jobgate.engine.jsonpatch import PatchRecorder
from jobgate.forms.checks.common import get, object_items
from jobgate.forms.checks.defaults import replaced
from jobgate.rules.dicts import as_int

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any

    from jobgate.engine.fielderrors import FieldPath

    FieldSteps = tuple[str, ...]
    Condition = tuple[tuple[str, ...], Any]


def refers_to(
    obj: Any,
    *,
    paths: tuple[tuple[str, ...], ...],
    key: str,
    items_path: tuple[str, ...],
    by: str,
    message: str,
    rules: tuple[str, str],
) -> list[FieldError]:
    """``RefersTo``: each entry's key names an entry of the list (``Not found``, the known values in
    ``message``) and, when ``rules`` names a second rule (the unique one), each named value once per
    list; entry by entry. ``rules``: the ids the errors carry (refers, unique or "")."""
    refers_rule, unique_rule = rules
    known: dict[str, None] = {}
    for _, item in object_items(obj, items_path) or ():
        value = item.get(by)
        if isinstance(value, str) and value:
            known.setdefault(value, None)
    detail = message.format(known=", ".join(known) or "none")
    errors: list[FieldError] = []
    for path in paths:
        seen: set[str] = set()
        for index, item in object_items(obj, path) or ():
            value = item.get(key)
            if not isinstance(value, str) or value == "":
                continue
            if value not in known:
                errors.append(not_found((*path, index, key), value, detail, rule=refers_rule))
            elif unique_rule and value in seen:
                errors.append(duplicate((*path, index, key), value, rule=unique_rule))
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
    rules: tuple[str, str, str, str, str],
) -> list[FieldError]:
    """``IndexMaps``: each map names entries (by ``by``) of the list, each name one of them, listing
    indices below its count; ``messages`` (empty, unknown, unlisted, below, none); ``bounds``: the
    most maps and names (``Too many``). Map by map, name by name. ``rules``: the ids the errors
    carry (empty, unknown, unlisted, index, bounds)."""
    empty, unknown, unlisted, below, none = messages
    empty_rule, unknown_rule, unlisted_rule, index_rule, bounds_rule = rules
    max_maps, max_names = bounds
    counts: dict[str, int] = {}
    for _, item in object_items(obj, items_path) or ():
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
            errors.append(too_many(path, len(maps), max_maps, rule=bounds_rule))
        for index, entry in enumerate(maps):
            at: FieldPath = (*path, index)
            if not isinstance(entry, dict):
                continue
            listed = {k: v for k, v in entry.items() if v is not None}
            if not listed:
                errors.append(required(at, empty, rule=empty_rule))
                continue
            if len(listed) > max_names:
                errors.append(too_many(at, len(listed), max_names, rule=bounds_rule))
            for name, indices in listed.items():
                name_path: FieldPath = (*at, Key(name))
                if name not in counts:
                    errors.append(not_found(name_path, name, detail, rule=unknown_rule))
                    continue
                if not isinstance(indices, list):
                    continue
                if not indices:
                    errors.append(required(name_path, unlisted, rule=unlisted_rule))
                replicas = counts[name]
                # Not the name of the int read above: mypyc types a name once, and an index may be any value.
                for position, listed_index in enumerate(indices):
                    value = as_int(listed_index)
                    if value is not None and (value < 0 or value >= replicas):
                        if replicas > 0:
                            words = below.format(count=replicas, name=name, last=replicas - 1)
                        else:
                            words = none.format(name=name)
                        errors.append(invalid((*name_path, position), value, words, rule=index_rule))
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
    return replaced(obj, path[:-1], parent)


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
