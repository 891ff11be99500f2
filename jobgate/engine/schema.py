"""Structural schemas from the API models, and a checker that walks objects against them.

The same structural schema is emitted into the CRDs (``jobgate manifests generate``) and used
here for type, enum and range checks, so the offline validator and the cluster agree on
every field by construction. The apiserver checks this schema itself, after the mutating
webhooks and before any validating webhook, so a job that breaks it is refused with the
apiserver's own lines: this checker writes exactly those lines (dotted paths through maps,
``<path> in body should be ...``), so ``jobgate validate`` shows what ``kubectl`` shows.
Null values of fields and map entries are pruned by the apiserver when it decodes a custom
resource, so they count as unset here; a null inside a list is an error, as there.

Building a schema from a pydantic model costs tens of milliseconds, too much for a command
that checks one file: ``jobgate manifests generate`` also writes every served model's schema
to ``jobgate/_generated/structural_schemas.py`` (a test fails when it is stale), and ``schema_checker`` takes
it from there first, so the models are neither imported nor built at start-up.
"""

from __future__ import annotations

from jobgate.engine.fielderrors import FieldError, FieldPath, invalid, not_supported, render_path, required
from jobgate.engine.modelref import model_class, model_key

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Final, TypeAlias

    from pydantic import BaseModel

# The ids of the catalogue's records of the structural schema's checks (jobgate/generate/cel/jobmeta.py),
# which its errors carry. A family whose own rule claims some of them (a field its rule types) relabels
# those where it runs the check.
SCHEMA_TYPES: Final = "schema/types"
SCHEMA_ENUMS: Final = "schema/enums"
SCHEMA_RANGES: Final = "schema/ranges"
SCHEMA_REQUIRED: Final = "schema/required"

INFINITY: Final = float("inf")  # math.inf, without loading the math module (a shared library) at start-up

# "Any" quoted: aliases are evaluated at run time, where typing is not imported.
Schema = dict[str, "Any"]

_KEPT_KEYWORDS: Final = (
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
    "x-kubernetes-map-type",
)


def structural_schema(model: Any) -> Schema:
    """The model (a class or a ModelRef) as an apiextensions.k8s.io/v1 structural schema
    (no $ref, no anyOf, no nulls), built from pydantic."""
    return _built_schema(model_class(model))


# Each model's schema, built once (a dict, not functools.cache: functools is not imported for a
# one-file check).
_BUILT_SCHEMAS: Final[dict[type[BaseModel], Schema]] = {}


def _built_schema(model: type[BaseModel]) -> Schema:
    schema = _BUILT_SCHEMAS.get(model)
    if schema is None:
        raw = model.model_json_schema(by_alias=True, mode="validation")
        schema = _BUILT_SCHEMAS[model] = _to_structural(raw, raw.get("$defs", {}))
    return schema


def _schema_builders() -> dict[str, Callable[[], Schema]]:
    """The generated table: a function per model key that builds its schema; {} before the first
    ``jobgate manifests generate``."""
    try:
        from jobgate._generated.structural_schemas import SCHEMAS
    except ImportError:
        return {}
    return SCHEMAS


_SCHEMA_TABLE: Final[dict[str, Schema]] = {}


def schema_table() -> dict[str, Schema]:
    """The schemas written ahead of time by ``jobgate manifests generate``, by model key (built once)."""
    if not _SCHEMA_TABLE:
        _SCHEMA_TABLE.update((key, build()) for key, build in _schema_builders().items())
    return _SCHEMA_TABLE


def schema_of(model: Any) -> Schema:
    """The model's structural schema: from the generated table, else built from pydantic."""
    build = _schema_builders().get(model_key(model))
    return build() if build is not None else structural_schema(model)


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


# Text: at run time neither typing nor collections.abc is imported (start-up).
Checker: TypeAlias = "Callable[[Any, FieldPath, list[FieldError], list[FieldPath]], None]"


_CHECKERS: Final[dict[str, Checker]] = {}


# The checker of each model object a kind holds, found by identity: model_key and the hash of a
# ModelRef cost more than the look-up itself, and schema_checker runs once per review. The
# entry keeps its model alive, so that no later object can be given the same id; kinds hold a
# few dozen models, and objects beyond the bound are simply found by key.
_CHECKERS_BY_ID: Final[dict[int, tuple[Any, Checker]]] = {}
_CHECKERS_BY_ID_MAX: Final = 256


def schema_checker(model: Any) -> Checker:
    """The model's (class or ModelRef) structural schema compiled into nested closures, once per model."""
    known = _CHECKERS_BY_ID.get(id(model))
    if known is not None and known[0] is model:
        return known[1]
    key = model_key(model)
    checker = _CHECKERS.get(key)
    if checker is None:
        checker = _CHECKERS[key] = compile_schema(schema_of(model))
    if len(_CHECKERS_BY_ID) < _CHECKERS_BY_ID_MAX:
        _CHECKERS_BY_ID[id(model)] = (model, checker)
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
    if kind in ("boolean", "number"):
        return _leaf_checker(kind, schema.get("format"))
    return _accept_anything


def _accept_anything(value: Any, path: FieldPath, errors: list[FieldError], unknown: list[FieldPath]) -> None:
    return None


def _in_body(path: FieldPath, problem: str) -> str:
    return f"{render_path(path)} in body {problem}"


def _json_type(value: Any) -> tuple[str, str]:
    """(type, format) of a decoded JSON value, as the apiserver's OpenAPI validator names them."""
    if value is None:
        return "null", ""
    if isinstance(value, bool):
        return "boolean", ""
    if isinstance(value, int):
        return "integer", "int64"
    if isinstance(value, float):
        return "number", "float64"
    if isinstance(value, str):
        return "string", ""
    if isinstance(value, list):
        return "array", ""
    return "object", ""


def type_error(
    value: Any, path: FieldPath, expected: str, expected_format: str | None, rule: str = SCHEMA_TYPES
) -> FieldError | None:
    """The apiserver's error for a value of the wrong JSON type (labelled ``rule``: the schema's, or the
    rule of a family that types the field itself), or None when the type is right.

    A field with a format is checked against the format first for anything but strings and
    lists (go-openapi's order), which is why a boolean in an int32 field reads
    ``must be of type int32: ""``; an integral float passes as an integer, as in JSON.
    """
    actual, actual_format = _json_type(value)
    # -inf < value < inf: math.isfinite, without loading the math module (a shared library) at start-up.
    finite = actual == "number" and -INFINITY < value < INFINITY
    float_int = finite and expected == "integer" and float(value).is_integer()
    int_float = actual == "integer" and expected == "number"
    compatible = actual == expected or float_int or int_float
    if (
        expected_format
        and actual not in ("string", "array", "null")
        and not compatible
        and actual_format != expected_format
    ):
        import json  # only a message needs it: not imported at start-up (see fielderrors.format_value)

        return invalid(
            path,
            actual_format,
            _in_body(path, f"must be of type {expected_format}: {json.dumps(actual_format)}"),
            rule,
        )
    if not compatible:
        import json

        return invalid(path, actual, _in_body(path, f"must be of type {expected}: {json.dumps(actual)}"), rule)
    return None


def _leaf_checker(kind: str, fmt: str | None) -> Checker:
    def check(value: Any, path: FieldPath, errors: list[FieldError], unknown: list[FieldPath]) -> None:
        error = type_error(value, path, kind, fmt)
        if error is not None:
            errors.append(error)

    return check


def _object_checker(schema: Schema) -> Checker:
    properties = (
        {name: compile_schema(sub) for name, sub in schema["properties"].items()} if "properties" in schema else None
    )
    required_names = tuple(schema.get("required", ()))
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    additional = compile_schema(schema["additionalProperties"]) if "additionalProperties" in schema else None
    min_properties = schema.get("minProperties", 0)
    # Leaf properties whose valid values are known without calling their checker (which would
    # build the child's path first): strings (with their enum, if any) and bounded integers.
    # Only values their checker provably accepts in silence skip it.
    string_values: dict[str, frozenset[str] | None] = {}
    integer_bounds: dict[str, tuple[Any, Any]] = {}
    for name, sub_schema in schema.get("properties", {}).items():
        if sub_schema.get("type") == "string":
            enum = sub_schema.get("enum")
            string_values[name] = frozenset(enum) if enum is not None else None
        elif sub_schema.get("type") == "integer":
            integer_bounds[name] = _integer_bounds(sub_schema)

    def check(value: Any, path: FieldPath, errors: list[FieldError], unknown: list[FieldPath]) -> None:
        if type(value) is not dict and not isinstance(value, dict):
            wrong = type_error(value, path, "object", None) or invalid(path, value, "must be an object", SCHEMA_TYPES)
            errors.append(wrong)
            return
        if properties is not None:
            for name in required_names:
                if value.get(name) is None:
                    errors.append(required((*path, name), rule=SCHEMA_REQUIRED))
            for name, item in value.items():
                sub = properties.get(name)
                if sub is None:
                    if not preserve:
                        unknown.append((*path, name))
                elif item is not None:
                    if type(item) is str:
                        if name in string_values:
                            allowed = string_values[name]
                            if allowed is None or item in allowed:
                                continue
                    elif type(item) is int and name in integer_bounds:
                        low, high = integer_bounds[name]
                        if low <= item <= high:
                            continue
                    sub(item, (*path, name), errors, unknown)
        if additional is not None:
            for name, item in value.items():
                if item is not None:
                    additional(item, (*path, name), errors, unknown)
        if min_properties and (present := sum(item is not None for item in value.values())) < min_properties:
            detail = _in_body(path, f"should have at least {min_properties} properties")
            errors.append(invalid(path, present, detail, SCHEMA_RANGES))

    return check


def _array_checker(schema: Schema) -> Checker:
    items = compile_schema(schema["items"]) if "items" in schema else None
    item_type = schema.get("items", {}).get("type", "object")
    min_items = schema.get("minItems", 0)

    def check(value: Any, path: FieldPath, errors: list[FieldError], unknown: list[FieldPath]) -> None:
        if not isinstance(value, list):
            wrong = type_error(value, path, "array", None) or invalid(path, value, "must be an array", SCHEMA_TYPES)
            errors.append(wrong)
            return
        if len(value) < min_items:
            errors.append(
                invalid(path, len(value), _in_body(path, f"should have at least {min_items} items"), SCHEMA_RANGES)
            )
        if items is not None:
            for index, item in enumerate(value):
                if item is None:
                    item_path = (*path, index)
                    errors.append(
                        invalid(
                            item_path, "null", _in_body(item_path, f'must be of type {item_type}: "null"'), SCHEMA_TYPES
                        )
                    )
                else:
                    items(item, (*path, index), errors, unknown)

    return check


def _integer_bounds(schema: Schema) -> tuple[Any, Any]:
    """(lowest, highest) integer the schema accepts; infinite when unbounded."""
    minimum = schema.get("minimum")
    maximum = schema.get("maximum")
    low = -INFINITY if minimum is None else minimum + 1 if schema.get("exclusiveMinimum") else minimum
    return low, INFINITY if maximum is None else maximum


def _integer_checker(schema: Schema) -> Checker:
    minimum = schema.get("minimum")
    exclusive = bool(schema.get("exclusiveMinimum"))
    maximum = schema.get("maximum")
    fmt = schema.get("format")
    low, high = _integer_bounds(schema)

    def check(value: Any, path: FieldPath, errors: list[FieldError], unknown: list[FieldPath]) -> None:
        if type(value) is int and low <= value <= high:
            return
        error = type_error(value, path, "integer", fmt)
        if error is not None:
            errors.append(error)
        elif value < low:
            bound = f"greater than {minimum}" if exclusive else f"greater than or equal to {minimum}"
            errors.append(invalid(path, value, _in_body(path, f"should be {bound}"), SCHEMA_RANGES))
        elif value > high:
            errors.append(
                invalid(path, value, _in_body(path, f"should be less than or equal to {maximum}"), SCHEMA_RANGES)
            )

    return check


def _string_checker(schema: Schema) -> Checker:
    enum: list[str] | None = schema.get("enum")
    allowed = frozenset(enum) if enum is not None else None

    def check(value: Any, path: FieldPath, errors: list[FieldError], unknown: list[FieldPath]) -> None:
        if type(value) is not str and not isinstance(value, str):
            error = type_error(value, path, "string", None)
            if error is not None:
                errors.append(error)
            if allowed is not None:  # the apiserver checks the enum on its own, whatever the type
                errors.append(not_supported(path, value, enum or (), SCHEMA_ENUMS))
        elif allowed is not None and value not in allowed:
            errors.append(not_supported(path, value, enum or (), SCHEMA_ENUMS))

    return check
