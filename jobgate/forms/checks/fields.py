"""The Python meaning of the generic field forms (``RequiredField``, ``ForbiddenField``, ``FieldBound``,
``StringField``, ``AtMostOneOf``).

Generated calls of these functions are in ``jobgate/_generated/declared/<family>.py``; see
``docs/rule-forms.md``.
"""

from __future__ import annotations

from jobgate.engine.fielderrors import (
    FieldError,
    Key,
    forbidden,
    invalid,
    not_supported,
    render_path,
    required,
    too_long,
)
from jobgate.forms.checks.common import MISSING, MUST_BE_STRING, get
from jobgate.rules.dicts import as_int
from jobgate.rules.names import (
    dns1123_label_problems,
    env_var_name_problems,
    is_dns1123_label,
    is_env_var_name,
    is_port_name,
    port_name_problems,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any, Final

    from jobgate.engine.fielderrors import FieldPath

    FieldSteps = tuple[str, ...]
    Condition = tuple[tuple[str, ...], Any]


#
# A field form's path comes compiled as (scope, target, when): ``scope`` the steps to each object
# it checks (through ``[*]``, every list item, and ``{*}``, every map value), ``target`` the steps
# from there to the field (a field name, or ``[key]`` for one key of a map), ``when`` the condition
# read from the same object (steps, value) or None.


def segment(step: str) -> str:
    """A target step as a field path segment: ``[key]`` is a map key."""
    return Key(step[1:-1]) if step.startswith("[") else step


def scoped(obj: Any, scope: FieldSteps, when: Condition | None) -> list[tuple[FieldPath, Any]]:
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
            elif isinstance(value, dict) and segment(step) in value:
                found.append(((*path, segment(step)), value[segment(step)]))
        reached = found
    return [(path, value) for path, value in reached if isinstance(value, dict) and condition_holds(value, when)]


def condition_holds(node: dict[str, Any], when: Condition | None) -> bool:
    if when is None:
        return True
    steps, expected = when
    return get(node, tuple(segment(s) for s in steps)) == expected


def targets(obj: Any, scope: FieldSteps, target: FieldSteps, when: Condition | None) -> list[tuple[FieldPath, Any]]:
    """(field path, value or MISSING) of the target field under each object of the scope whose
    target's parent exists (None, which the apiserver drops, is MISSING)."""
    segments = tuple(segment(s) for s in target)
    out = []
    for path, node in scoped(obj, scope, when):
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
    for path, value in targets(obj, scope, target, when):
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
    return FieldError(error.type, (*base, *error.path), error.value, error.detail, error.rule)


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
    for path, given in targets(obj, scope, target, when):
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
    for path, value in targets(obj, scope, target, when):
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
_SYNTAXES: Final = {
    "label": (is_dns1123_label, dns1123_label_problems),
    "port-name": (is_port_name, port_name_problems),
    "env-var-name": (is_env_var_name, env_var_name_problems),
}


def at_most_one_of(
    obj: Any, *, scope: FieldSteps, target: FieldSteps, fields: tuple[str, ...], message: str
) -> list[FieldError]:
    """``AtMostOneOf``: at most one of the object's fields (or map keys) set."""
    segments = tuple(segment(s) for s in target)
    errors = []
    for path, node in scoped(obj, scope, None):
        holder = get(node, segments)
        if isinstance(holder, dict) and sum(holder.get(segment(f)) is not None for f in fields) > 1:
            errors.append(forbidden((*path, *segments), message))
    return errors
