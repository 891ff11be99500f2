"""Structural schemas from the API models, and a checker that walks objects against them.

The same structural schema is emitted into the CRDs (``jobgate manifests crds``) and used
here for type, enum and range checks, so the offline validator and the cluster agree on
every field by construction. Messages follow the apiserver's wording, but the checker runs
in the mutating webhook, before the apiserver's own schema validation, so users see
jobgate's message with every violation at once.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import BaseModel

from webhook.rules.fielderrors import FieldError, FieldPath, Key, invalid, not_supported, required

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


@cache
def structural_schema(model: type[BaseModel]) -> Schema:
    """The model as an apiextensions.k8s.io/v1 structural schema (no $ref, no anyOf, no nulls)."""
    raw = model.model_json_schema(by_alias=True, mode="validation")
    return _to_structural(raw, raw.get("$defs", {}))


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


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


_TYPE_CHECKS = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": _is_integer,
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
}


def check_against_schema(
    value: Any, schema: Schema, path: FieldPath, errors: list[FieldError], unknown: list[FieldPath]
) -> None:
    """Append an error for every type, enum, range and required violation under ``path``.

    Fields the schema does not know are collected in ``unknown`` (the apiserver prunes them,
    or rejects them under strict field validation), never reported as errors here.
    """
    expected = schema.get("type")
    if expected is not None and not _TYPE_CHECKS[expected](value):
        errors.append(invalid(path, value, f"must be of type {expected}"))
        return
    if expected == "object":
        _check_object(value, schema, path, errors, unknown)
    elif expected == "array":
        items = schema.get("items")
        if len(value) < schema.get("minItems", 0):
            errors.append(required(path, f"must have at least {schema['minItems']} item(s)"))
        if items is not None:
            for index, item in enumerate(value):
                if item is None:
                    errors.append(invalid((*path, index), None, "must not be null"))
                else:
                    check_against_schema(item, items, (*path, index), errors, unknown)
    else:
        _check_scalar(value, schema, path, errors)


def _check_object(
    value: dict[str, Any], schema: Schema, path: FieldPath, errors: list[FieldError], unknown: list[FieldPath]
) -> None:
    properties = schema.get("properties")
    if properties is not None:
        for name in schema.get("required", ()):
            if value.get(name) is None:
                errors.append(required((*path, name)))
        preserve = schema.get("x-kubernetes-preserve-unknown-fields", False)
        for name, item in value.items():
            sub = properties.get(name)
            if sub is None:
                if not preserve:
                    unknown.append((*path, name))
            elif item is not None:
                # A null optional field is pruned by the apiserver, i.e. treated as unset.
                check_against_schema(item, sub, (*path, name), errors, unknown)
    additional = schema.get("additionalProperties")
    if additional is not None:
        for name, item in value.items():
            if item is None:
                errors.append(invalid((*path, Key(name)), None, "must not be null"))
            else:
                check_against_schema(item, additional, (*path, Key(name)), errors, unknown)
    if len(value) < schema.get("minProperties", 0):
        errors.append(required(path, "must not be empty"))


def _check_scalar(value: Any, schema: Schema, path: FieldPath, errors: list[FieldError]) -> None:
    enum = schema.get("enum")
    if enum is not None and value not in enum:
        errors.append(not_supported(path, value, enum))
        return
    minimum = schema.get("minimum")
    if minimum is not None:
        if schema.get("exclusiveMinimum"):
            if value <= minimum:
                errors.append(invalid(path, value, f"must be greater than {minimum}"))
        elif value < minimum:
            errors.append(invalid(path, value, f"must be greater than or equal to {minimum}"))
    maximum = schema.get("maximum")
    if maximum is not None and value > maximum:
        errors.append(invalid(path, value, f"must be less than or equal to {maximum}"))
