"""Structural schemas from the API models, and a checker that walks objects against them.

The same structural schema is emitted into the CRDs (``jobgate manifests generate``) and used
here for type, enum and range checks, so the offline validator and the cluster agree on
every field by construction. Messages follow the apiserver's wording, but the checker runs
in the mutating webhook, before the apiserver's own schema validation, so users see
jobgate's message with every violation at once.

Building a schema from a pydantic model costs tens of milliseconds, too much for a command
that checks one file: ``jobgate manifests generate`` also writes every served model's schema
to ``structural_schemas.json`` (a test fails when it is stale), and ``schema_checker`` reads
that table first, so the models are neither imported nor built at start-up.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

from webhook.rules.fielderrors import FieldError, FieldPath, Key, invalid, not_supported, required
from webhook.rules.modelref import model_class, model_key

if TYPE_CHECKING:
    from pydantic import BaseModel

SCHEMA_TABLE = os.path.join(os.path.dirname(__file__), "structural_schemas.json")

Schema = dict[str, Any]

_KEPT_KEYWORDS = (
    "description",
    "type",
    "format",
    "enum",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "minProperties",
    "maxLength",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-int-or-string",
)


def structural_schema(model: Any) -> Schema:
    """The model (a class or a ModelRef) as an apiextensions.k8s.io/v1 structural schema
    (no $ref, no anyOf, no nulls), built from pydantic."""
    return _built_schema(model_class(model))


@cache
def _built_schema(model: type[BaseModel]) -> Schema:
    raw = model.model_json_schema(by_alias=True, mode="validation")
    return _to_structural(raw, raw.get("$defs", {}))


@cache
def schema_table() -> dict[str, Schema]:
    """The schemas written ahead of time by ``jobgate manifests generate``, by model key."""
    try:
        with open(SCHEMA_TABLE, "rb") as handle:
            text = handle.read()
    except OSError:
        return {}
    import json

    table: dict[str, Schema] = json.loads(text)
    return table


def schema_table_text(models: list[Any]) -> str:
    """The content of ``structural_schemas.json`` for these models (sorted, stable)."""
    import json

    table = {model_key(m): structural_schema(m) for m in models}
    return json.dumps(dict(sorted(table.items())), indent=1, sort_keys=True) + "\n"


def schema_of(model: Any) -> Schema:
    """The model's structural schema: from the generated table, else built from pydantic."""
    found = schema_table().get(model_key(model))
    return found if found is not None else structural_schema(model)


def _to_structural(node: Schema, defs: dict[str, Schema]) -> Schema:
    overrides = {k: node[k] for k in ("description",) if k in node}
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        return {**_to_structural(target, defs), **overrides}
    if "anyOf" in node:
        branches = [b for b in node["anyOf"] if b.get("type") != "null"]
        if len(branches) != 1:
            raise ValueError(f"cannot express a union in a structural schema: {node}")
        merged = {**node, **branches[0]}
        del merged["anyOf"]
        return {**_to_structural(merged, defs), **overrides}

    out: Schema = {k: node[k] for k in _KEPT_KEYWORDS if k in node}
    if "exclusiveMinimum" in node:
        out["minimum"] = node["exclusiveMinimum"]
        out["exclusiveMinimum"] = True
    if "properties" in node:
        out["type"] = "object"
        out["properties"] = {name: _to_structural(sub, defs) for name, sub in node["properties"].items()}
        if node.get("required"):
            out["required"] = list(node["required"])
    additional = node.get("additionalProperties")
    if isinstance(additional, dict) and not out.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = _to_structural(additional, defs)
    if "items" in node:
        out["items"] = _to_structural(node["items"], defs)
    return out


Checker = Callable[[Any, FieldPath, list[FieldError], list[FieldPath]], None]


_CHECKERS: dict[str, Checker] = {}


def schema_checker(model: Any) -> Checker:
    """The model's (class or ModelRef) structural schema compiled into nested closures, once per model."""
    key = model_key(model)
    checker = _CHECKERS.get(key)
    if checker is None:
        checker = _CHECKERS[key] = compile_schema(schema_of(model))
    return checker


def check_against_schema(
    value: Any, schema: Schema, path: FieldPath, errors: list[FieldError], unknown: list[FieldPath]
) -> None:
    """Append an error for every type, enum, range and required violation under ``path``.

    Fields the schema does not know are collected in ``unknown`` (the apiserver prunes them,
    or rejects them under strict field validation), never reported as errors here.
    """
    compile_schema(schema)(value, path, errors, unknown)


def compile_schema(schema: Schema) -> Checker:
    # Compiled once, the checks run without looking anything up in the schema: this is on
    # the webhook's hot path, once per review.
    kind = schema.get("type")
    if kind == "object":
        return _object_checker(schema)
    if kind == "array":
        return _array_checker(schema)
    if kind == "integer":
        return _integer_checker(schema)
    if kind == "string":
        return _string_checker(schema)
    if kind == "boolean":
        return _type_checker(lambda v: isinstance(v, bool), "boolean")
    if kind == "number":
        return _type_checker(lambda v: isinstance(v, int | float) and not isinstance(v, bool), "number")
    return _accept_anything


def _accept_anything(value: Any, path: FieldPath, errors: list[FieldError], unknown: list[FieldPath]) -> None:
    return None


def _type_checker(accepts: Callable[[Any], bool], name: str) -> Checker:
    def check(value: Any, path: FieldPath, errors: list[FieldError], unknown: list[FieldPath]) -> None:
        if not accepts(value):
            errors.append(invalid(path, value, f"must be of type {name}"))

    return check


def _object_checker(schema: Schema) -> Checker:
    properties = (
        {name: compile_schema(sub) for name, sub in schema["properties"].items()} if "properties" in schema else None
    )
    required_names = tuple(schema.get("required", ()))
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    additional = compile_schema(schema["additionalProperties"]) if "additionalProperties" in schema else None
    min_properties = schema.get("minProperties", 0)

    def check(value: Any, path: FieldPath, errors: list[FieldError], unknown: list[FieldPath]) -> None:
        if type(value) is not dict and not isinstance(value, dict):
            errors.append(invalid(path, value, "must be of type object"))
            return
        if properties is not None:
            for name in required_names:
                if value.get(name) is None:
                    errors.append(required((*path, name)))
            for name, item in value.items():
                sub = properties.get(name)
                if sub is None:
                    if not preserve:
                        unknown.append((*path, name))
                elif item is not None:
                    # A null optional field is pruned by the apiserver, i.e. treated as unset.
                    sub(item, (*path, name), errors, unknown)
        if additional is not None:
            for name, item in value.items():
                if item is None:
                    errors.append(invalid((*path, Key(name)), None, "must not be null"))
                else:
                    additional(item, (*path, Key(name)), errors, unknown)
        if len(value) < min_properties:
            errors.append(required(path, "must not be empty"))

    return check


def _array_checker(schema: Schema) -> Checker:
    items = compile_schema(schema["items"]) if "items" in schema else None
    min_items = schema.get("minItems", 0)

    def check(value: Any, path: FieldPath, errors: list[FieldError], unknown: list[FieldPath]) -> None:
        if not isinstance(value, list):
            errors.append(invalid(path, value, "must be of type array"))
            return
        if len(value) < min_items:
            errors.append(required(path, f"must have at least {min_items} item(s)"))
        if items is not None:
            for index, item in enumerate(value):
                if item is None:
                    errors.append(invalid((*path, index), None, "must not be null"))
                else:
                    items(item, (*path, index), errors, unknown)

    return check


def _integer_checker(schema: Schema) -> Checker:
    minimum = schema.get("minimum")
    exclusive = bool(schema.get("exclusiveMinimum"))
    maximum = schema.get("maximum")
    low = -math.inf if minimum is None else minimum + 1 if exclusive else minimum
    high = math.inf if maximum is None else maximum

    def check(value: Any, path: FieldPath, errors: list[FieldError], unknown: list[FieldPath]) -> None:
        if type(value) is int and low <= value <= high:
            return
        if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, float) and value.is_integer())):
            errors.append(invalid(path, value, "must be of type integer"))
        elif value < low:
            bound = f"greater than {minimum}" if exclusive else f"greater than or equal to {minimum}"
            errors.append(invalid(path, value, f"must be {bound}"))
        elif value > high:
            errors.append(invalid(path, value, f"must be less than or equal to {maximum}"))

    return check


def _string_checker(schema: Schema) -> Checker:
    enum: list[str] | None = schema.get("enum")
    allowed = frozenset(enum) if enum is not None else None

    def check(value: Any, path: FieldPath, errors: list[FieldError], unknown: list[FieldPath]) -> None:
        if type(value) is not str and not isinstance(value, str):
            errors.append(invalid(path, value, "must be of type string"))
        elif allowed is not None and value not in allowed:
            errors.append(not_supported(path, value, enum or ()))

    return check
