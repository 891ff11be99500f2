"""The Python meaning of the forms only Volcano's rules use (``Bounds``, ``LifecyclePolicies``,
``ClaimVolumes``, ``Acyclic``, ``Unchanged``, its defaults and the rest of
``jobgate/families/volcano/forms/``).

Generated calls of these functions are in ``jobgate/_generated/declared/<family>.py``; see
``docs/rule-forms.md``.
"""

from __future__ import annotations

import sys

from jobgate.engine.fielderrors import (
    ErrorType,
    FieldError,
    Key,
    forbidden,
    invalid,
    render_path,
    required,
    too_long,
    too_many,
)
from jobgate.engine.jsonpatch import PatchRecorder
from jobgate.forms.checks.common import MISSING, get, object_items
from jobgate.forms.checks.defaults import is_empty, replaced
from jobgate.forms.checks.fields import scoped
from jobgate.rules.dicts import as_int
from jobgate.rules.names import dns1123_subdomain_problems

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any

    from jobgate.engine.fielderrors import FieldPath

    FieldSteps = tuple[str, ...]
    Condition = tuple[tuple[str, ...], Any]


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
    items = object_items(obj, path) or []
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
    if value in {_name(item, key) for _, item in object_items(obj, items_path) or ()}:
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
    return replaced(obj, path, defaulted)


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
    if not (given is None or (empty_is_unset and is_empty(given, 0))) or given == total:
        return obj
    copied = dict(parent)
    recorder.set(copied, path[-1], json_count(total), "/" + "/".join(path[:-1]))
    return replaced(obj, path[:-1], copied)


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
    return replaced(obj, path, copied)


def lifecycle_policies(
    obj: Any,
    *,
    lists: tuple[tuple[str, ...], ...],
    events: tuple[str, ...],
    actions: tuple[str, ...],
    any_event: str,
    words: tuple[str, str, str, str, str, str, str, str],
    rules: tuple[str, str, str, str, str, str, str],
) -> list[FieldError]:
    """``LifecyclePolicies``: each list (scope steps to its holder, then its field) as Volcano's
    validatePolicies checks it. ``words``: both, neither, action, event, event_twice, zero,
    code_twice, not_alone; ``rules``: the ids the errors carry (event or exit code, action, events,
    events unique, exit code, exit codes unique, any event alone)."""
    errors: list[FieldError] = []
    for steps in lists:
        for holder_path, holder in scoped(obj, steps[:-1], None):
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
                        rules=rules,
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
    rules: tuple[str, str, str, str, str, str, str],
) -> list[FieldError]:
    both, neither, bad_action, bad_event, event_twice, zero, code_twice, not_alone = words
    one_of_rule, action_rule, events_rule, events_unique_rule, code_rule, codes_unique_rule, alone_rule = rules
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
            errors.append(forbidden((*policy_path, "exitCode"), both, one_of_rule))
            continue
        if not located and policy.get("exitCode") is None:
            errors.append(required(policy_path, neither, one_of_rule))
            continue
        action = policy.get("action")
        if located:
            if action not in actions:
                errors.append(invalid((*policy_path, "action"), action or "", bad_action, action_rule))
            for event, event_path in located:
                if event not in events:
                    errors.append(invalid(event_path, event, bad_event, events_rule))
                elif event in seen_events:
                    errors.append(
                        FieldError(
                            ErrorType.DUPLICATE, event_path, event, event_twice.format(event=event), events_unique_rule
                        )
                    )
                seen_events.add(event)
        elif exit_code is not None:
            if exit_code == 0:
                errors.append(invalid((*policy_path, "exitCode"), 0, zero, code_rule))
            elif exit_code in seen_codes:
                errors.append(
                    FieldError(
                        ErrorType.DUPLICATE,
                        (*policy_path, "exitCode"),
                        exit_code,
                        code_twice.format(code=exit_code),
                        codes_unique_rule,
                    )
                )
            seen_codes.add(exit_code)
    if any_event in seen_events and len(seen_events) > 1:
        errors.append(invalid(path, any_event, not_alone, alone_rule))
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
        for index, item in object_items(obj, path) or ()
        if item.get(field) is None
    ]


def unique_name(obj: Any, path: tuple[str, ...], key: str, message: str) -> list[FieldError]:
    """``UniqueName``: each entry whose key (a string, else "") an earlier entry has, a duplicate."""
    errors: list[FieldError] = []
    seen: set[str] = set()
    for index, item in object_items(obj, path) or ():
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
        for path, node in scoped(obj, steps, None):
            if node.get(first) is not None and node.get(second) not in (None, ""):
                errors.append(forbidden((*path, second), message))
    return errors


def claim_volumes(
    obj: Any,
    path: tuple[str, ...],
    *,
    fields: tuple[str, str, str],
    words: tuple[str, str, str, str, str],
    rules: tuple[str, str, str, str, str],
) -> list[FieldError]:
    """``ClaimVolumes``: each volume, in order (``fields``: mount, claim, claim_name; ``words``:
    mount_required, mount_twice, neither, both, bad_name; ``rules``: the ids the errors carry, the
    mount path, unique, claim required, conflict, claim name)."""
    volumes = get(obj, path)
    if not isinstance(volumes, list):
        return []
    mount, claim_field, name_field = fields
    mount_required, mount_twice, neither, both, bad_name = words
    mount_rule, mount_unique_rule, claim_rule, conflict_rule, name_rule = rules
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
                invalid(
                    (*at, mount),
                    "",
                    f"{render_path((*at, mount))} in body should be at least 1 chars long",
                    mount_rule,
                )
            )
        if mount_path in (None, ""):
            errors.append(required((*at, mount), mount_required, mount_rule))
        elif isinstance(mount_path, str):
            if mount_path in mount_paths:
                errors.append(
                    FieldError(
                        ErrorType.DUPLICATE,
                        (*at, mount),
                        mount_path,
                        mount_twice.format(path=mount_path),
                        mount_unique_rule,
                    )
                )
            mount_paths.add(mount_path)
        claim = volume.get(claim_field)
        claim_name = volume.get(name_field)
        if claim is None and claim_name in (None, ""):
            errors.append(required(at, neither, claim_rule))
        elif claim is not None and claim_name not in (None, ""):
            errors.append(invalid((*at, name_field), claim_name, both, conflict_rule))
        elif isinstance(claim_name, str) and claim_name:
            problems = dns1123_subdomain_problems(claim_name)
            if problems:
                errors.append(
                    invalid(
                        (*at, name_field),
                        claim_name,
                        bad_name.format(name=claim_name, problems=", ".join(problems)),
                        name_rule,
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
            if met and (current is None or (empty_is_unset and is_empty(current, value))):
                copied = dict(holder)
                recorder.set(copied, field[-1], value, "/" + "/".join((*path, str(index), *field[:-1])))
                item = replaced(given, field[:-1], copied)
        defaulted.append(item)
    return replaced(obj, path, defaulted)


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
    return replaced(obj, path, defaulted)


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
