"""A malformed policy's errors in the apiserver's words, from pydantic's.

The models of :mod:`.models` repeat the CRDs' schema and CEL rules; when they refuse a policy, the
user should read what ``kubectl apply`` would print (``spec.limits.maxGPUsPerJob: Invalid value:
-1: must be greater than or equal to 0``, ``unknown field "spec.limit"``), one line per error, each
with its field path, never pydantic's own text or class names.

Pure: pydantic's error entries (``loc``, ``type``, ``input``, ``ctx``, ``msg``) in, (path, line of
text) out. Imported only when a policy is malformed.
"""

from __future__ import annotations

import json
import re

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

# Path segments whose children are map keys, written ``[key]`` as the apiserver writes them.
_MAP_FIELDS = frozenset(("matchLabels", "labels", "annotations"))

# The JSON type each pydantic type error expects, in the schema's words.
_TYPES = {
    "string_type": "string",
    "int_type": "integer",
    "int_parsing": "integer",
    "int_from_float": "integer",
    "float_type": "number",
    "float_parsing": "number",
    "bool_type": "boolean",
    "bool_parsing": "boolean",
    "list_type": "array",
    "dict_type": "object",
    "model_type": "object",
    "model_attributes_type": "object",
}

# YAML 1.1 (kubectl's reader) turns these unquoted words into booleans.
_YAML_BOOLEANS = "y, yes, on, n, no, off, true, false"

_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'")
# A validator's message naming a field of the object it checks: "imageRegistries: 'x' must be ...".
_FIELD_PREFIX = re.compile(r"^([A-Za-z][A-Za-z0-9]*): (.*)$", re.S)
# A validator's message starting with the offending value: "'a*b' must be a resource name ...".
# The label checks of defaults.labels: "label key 'k' is not ...", "label value 'v' of 'k' is not ...".
_LABEL_ERROR = re.compile(r"^label (?:key '(.*)' is not|value '.*' of '(.*)' is not)", re.S)
_VALUE_PREFIX = re.compile(r"^'((?:[^'\\]|\\.)*)' (.*)$", re.S)


class SchemaError:
    """One error of a policy object: its field path (segments) and its line as the apiserver prints it."""

    __slots__ = ("field", "path", "text")

    def __init__(self, path: tuple[Any, ...], field: str, text: str) -> None:
        self.path = path  # segments into the object (for the line it is written on)
        self.field = field  # e.g. spec.limits.gpuResources[0].name ("" for an unknown field's line)
        self.text = text  # e.g. spec.limits.maxGPUsPerJob: Invalid value: -1: must be greater than or equal to 0

    def __repr__(self) -> str:
        return f"SchemaError(path={self.path!r}, field={self.field!r}, text={self.text!r})"


def field_path(path: Iterable[Any]) -> str:
    """``spec.require.labels[0].key``, ``spec.namespaceSelector.matchLabels[team]``: the apiserver's spelling."""
    out = ""
    previous: Any = None
    for segment in path:
        if isinstance(segment, int) or (previous in _MAP_FIELDS and out.endswith(previous)):
            out += f"[{segment}]"
        else:
            out += f".{segment}" if out else str(segment)
        previous = segment
    return out


def show_value(value: Any) -> str:
    """A value as the apiserver shows it in ``Invalid value: ...`` (Go's %#v of JSON data, roughly)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return '"object"'
    if isinstance(value, list):
        return '"array"'
    return json.dumps(str(value), ensure_ascii=False)


def _quoted_values(expected: str) -> list[str]:
    return [match.group(1) for match in _QUOTED.finditer(expected)]


def _clean_loc(loc: Iterable[Any]) -> tuple[Any, ...]:
    # pydantic names its validator wrappers in the location ("function-after[...]"): no field of the object.
    return tuple(p for p in loc if not (isinstance(p, str) and p.startswith(("function-", "tagged-union["))))


def schema_error(entry: Mapping[str, Any]) -> SchemaError:
    """One pydantic error entry in the apiserver's words."""
    path = _clean_loc(entry.get("loc") or ())
    kind = str(entry.get("type") or "")
    value = entry.get("input")
    ctx = entry.get("ctx") or {}
    if kind == "extra_forbidden":
        field = field_path(path)
        return SchemaError(path, field, f'unknown field "{field}"')
    if kind == "missing":
        field = field_path(path)
        return SchemaError(path, field, f"{field}: Required value")
    if kind in ("value_error", "assertion_error"):
        return _validator_error(path, value, str(entry.get("msg") or ""))
    field = field_path(path) or "<root>"
    if kind in _TYPES:
        expected = _TYPES[kind]
        detail = f"must be of type {expected}"
        if kind == "int_from_float":
            detail = "must be of type integer (a whole number)"
        if expected == "string" and isinstance(value, bool):
            detail += f" (YAML reads the unquoted words {_YAML_BOOLEANS} as booleans: quote the value)"
        return SchemaError(path, field, f"{field}: Invalid value: {show_value(value)}: {detail}")
    if kind in ("literal_error", "enum"):
        supported = ", ".join(json.dumps(v) for v in _quoted_values(str(ctx.get("expected") or "")))
        return SchemaError(
            path, field, f"{field}: Unsupported value: {show_value(value)}: supported values: {supported}"
        )
    bounds = {
        "greater_than_equal": ("ge", "must be greater than or equal to"),
        "greater_than": ("gt", "must be greater than"),
        "less_than_equal": ("le", "must be less than or equal to"),
        "less_than": ("lt", "must be less than"),
    }
    if kind in bounds:
        key, words = bounds[kind]
        return SchemaError(path, field, f"{field}: Invalid value: {show_value(value)}: {words} {_number(ctx.get(key))}")
    if kind == "string_too_short":
        limit = ctx.get("min_length")
        return SchemaError(
            path, field, f"{field}: Invalid value: {show_value(value)}: must be at least {limit} characters long"
        )
    if kind == "string_too_long":
        return SchemaError(path, field, f"{field}: Too long: may not be more than {ctx.get('max_length')} bytes")
    if kind == "too_long":
        count = ctx.get("actual_length")
        limit = ctx.get("max_length")
        return SchemaError(path, field, f"{field}: Too many: {count}: must have at most {limit} items")
    if kind == "too_short":
        return SchemaError(
            path,
            field,
            f"{field}: Invalid value: {show_value(value)}: must have at least {ctx.get('min_length')} items",
        )
    if kind == "string_pattern_mismatch":
        pattern = ctx.get("pattern")
        return SchemaError(path, field, f"{field}: Invalid value: {show_value(value)}: must match {pattern}")
    # A kind of error the models do not give today: still the apiserver's shape, with pydantic's
    # sentence reworded from "Input should" to the apiserver's "must".
    message = str(entry.get("msg") or "is invalid")
    message = re.sub(r"^Input should", "must", message)
    return SchemaError(path, field, f"{field}: Invalid value: {show_value(value)}: {message}")


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _validator_error(path: tuple[Any, ...], value: Any, message: str) -> SchemaError:
    """A model's own rule (the CRD's CEL rule): its message, at the field it names when it names one."""
    message = message.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    label = _LABEL_ERROR.match(message)
    if label and isinstance(value, dict):
        key = label.group(2) or label.group(1)
        what = "label value" if label.group(2) else "qualified name"
        path, value = (*path, key), value.get(key) if label.group(2) else label.group(1)
        field = field_path(path)
        return SchemaError(path, field, f"{field}: Invalid value: {show_value(value)}: must be a valid {what}")
    named = _FIELD_PREFIX.match(message)
    if named and isinstance(value, dict):
        path, message = (*path, named.group(1)), named.group(2)
        if named.group(1) not in value:
            field = field_path(path)
            return SchemaError(path, field, f"{field}: Required value: {message}")
        value = value[named.group(1)]
    shown = _VALUE_PREFIX.match(message)
    if shown:
        offending, message = shown.group(1), shown.group(2)
        if isinstance(value, list) and offending in value:
            index = value.index(offending)
            path, value = (*path, index), value[index]
        elif not isinstance(value, str):
            value = offending
        if message.startswith("is not a "):
            message = "must be a " + message.removeprefix("is not a ")
    field = field_path(path) or "<root>"
    return SchemaError(path, field, f"{field}: Invalid value: {show_value(value)}: {message}")


def schema_errors(entries: Iterable[Mapping[str, Any]]) -> list[SchemaError]:
    """Every error of a ``pydantic.ValidationError.errors()`` list, in the apiserver's words.

    A model's rule stops at the first entry it refuses, while the CRD checks each entry of a list or
    map on its own: for the registries and the default labels, every refused entry is listed."""
    out: list[SchemaError] = []
    for entry in entries:
        out.extend(_each_entry(entry) or [schema_error(entry)])
    return out


def _each_entry(entry: Mapping[str, Any]) -> list[SchemaError]:
    """The errors of every refused entry behind one validator error (empty: not such an error)."""
    from jobgate.policy.plain import label_key_valid, label_value_valid, registry_valid

    if entry.get("type") != "value_error":
        return []
    path = _clean_loc(entry.get("loc") or ())
    value = entry.get("input")
    message = str(entry.get("msg") or "").removeprefix("Value error, ")
    out: list[SchemaError] = []
    registries = value.get("imageRegistries") if isinstance(value, dict) else None
    if message.startswith("imageRegistries: '") and isinstance(registries, list):
        detail = _VALUE_PREFIX.match(message.removeprefix("imageRegistries: "))
        for index, registry in enumerate(registries):
            if isinstance(registry, str) and not registry_valid(registry) and detail:
                where = (*path, "imageRegistries", index)
                field = field_path(where)
                out.append(
                    SchemaError(where, field, f"{field}: Invalid value: {show_value(registry)}: {detail.group(2)}")
                )
    elif _LABEL_ERROR.match(message) and isinstance(value, dict):
        for key, label in value.items():
            where = (*path, key)
            field = field_path(where)
            if not isinstance(key, str) or not label_key_valid(key):
                out.append(
                    SchemaError(
                        where, field, f"{field}: Invalid value: {show_value(key)}: must be a valid qualified name"
                    )
                )
            elif isinstance(label, str) and not label_value_valid(label):
                out.append(
                    SchemaError(
                        where, field, f"{field}: Invalid value: {show_value(label)}: must be a valid label value"
                    )
                )
    return out
