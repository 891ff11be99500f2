"""What Trainer's CRDs check beyond the engine's schema check, and the apiserver's ratcheting of both.

The engine's check (``check_spec_schema``) reads types, enums, ranges and required fields from the
models; a runtime's ``spec.template.spec`` is JobSet v0.12.0's ``JobSetSpec`` there, taken from the jobset
family's models, and a TrainJob's ``runtimePatches`` are Trainer's patch types. Two things the apiserver
does with Trainer's CRDs are added here:

- ``maxItems`` (the engine reads no list bound): ``runtimePatches`` ≤ 16, a template's ``dependsOn`` ≤ 5,
  ``volumeClaimPolicies`` ≤ 50, a patch's containers ≤ 64, ...; read from the same structural schema.
- ratcheting on UPDATE (CRDValidationRatcheting, on by default since Kubernetes 1.30): an error of the
  CRD's schema or of a CEL rule without ``oldSelf`` is dropped when the value it is found in is unchanged
  from the stored object, reached from the root through object fields and the keys of list-maps (an
  atomic list's items are compared only as the whole list).
"""

from __future__ import annotations

from functools import cache

from jobgate.engine.fielderrors import FieldError, FieldPath, too_many
from jobgate.engine.schema import SCHEMA_ENUMS, SCHEMA_RANGES, SCHEMA_REQUIRED, SCHEMA_TYPES, schema_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from jobgate.engine.modelref import ModelRef

LIST_BOUNDS = "trainer/list-bounds"

# The rules whose errors the apiserver ratchets: the CRDs' structural schema (types, enums, ranges,
# required fields, lengths, list bounds) and the CEL rules that do not read oldSelf. Webhook errors
# are not ratcheted (a webhook sees every request whole).
RATCHETED_RULES = frozenset(
    (
        SCHEMA_TYPES,
        SCHEMA_ENUMS,
        SCHEMA_RANGES,
        SCHEMA_REQUIRED,
        LIST_BOUNDS,
        "trainer/lengths",
        "trainer/jobset-rules",
        "trainer/ml-policy-one",
        "trainer/env-injection-node",
    )
)

# The list-maps of Trainer's CRDs (x-kubernetes-list-type: map) whose items jobgate's models type, by
# the list's field name: their keys. Any other list is atomic for ratcheting.
LIST_MAP_KEYS: dict[str, tuple[str, ...]] = {
    "runtimePatches": ("manager",),
    "replicatedJobs": ("name",),
    "dependsOn": ("name",),
    "containers": ("name",),
    "initContainers": ("name",),
    "volumes": ("name",),
    "imagePullSecrets": ("name",),
    "schedulingGates": ("name",),
    "env": ("name",),
    "volumeMounts": ("name",),
    "targets": ("jobName",),
}


# --- maxItems --------------------------------------------------------------------------------------


@cache
def _bounded(model: ModelRef) -> dict[str, Any] | None:
    """The model's structural schema pruned to the branches that hold a maxItems (None: no bound)."""
    return _prune(schema_of(model))


def _prune(node: dict[str, Any]) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    if "maxItems" in node:
        out["maxItems"] = node["maxItems"]
    properties = {}
    for name, sub in node.get("properties", {}).items():
        pruned = _prune(sub)
        if pruned is not None:
            properties[name] = pruned
    if properties:
        out["properties"] = properties
    for key in ("items", "additionalProperties"):
        sub = node.get(key)
        if isinstance(sub, dict):
            pruned = _prune(sub)
            if pruned is not None:
                out[key] = pruned
    return out or None


def list_bound_errors(value: Any, model: ModelRef, path: FieldPath) -> list[FieldError]:
    """Every list under ``value`` (checked against ``model``'s schema at ``path``) longer than its maxItems,
    as the apiserver reports it: ``<path>: Too many: <n>: must have at most <max> items``."""
    bounded = _bounded(model)
    errors: list[FieldError] = []
    if bounded is not None:
        _walk(value, bounded, path, errors)
    return errors


def _walk(value: Any, node: dict[str, Any], path: FieldPath, errors: list[FieldError]) -> None:
    if type(value) is list:
        limit = node.get("maxItems")
        if limit is not None and len(value) > limit:
            errors.append(too_many(path, len(value), limit, LIST_BOUNDS))
        items = node.get("items")
        if items is not None:
            for index, item in enumerate(value):
                _walk(item, items, (*path, index), errors)
    elif type(value) is dict:
        properties = node.get("properties")
        if properties is not None:
            for name, sub in properties.items():
                child = value.get(name)
                if child is not None:
                    _walk(child, sub, (*path, name), errors)
        additional = node.get("additionalProperties")
        if additional is not None:
            for name, child in value.items():
                if child is not None:
                    _walk(child, additional, (*path, name), errors)


# --- ratcheting ------------------------------------------------------------------------------------


def ratcheted(errors: Iterable[FieldError], new: Any, old: Any) -> list[FieldError]:
    """``errors`` of an UPDATE without those the apiserver ratchets (see the module's docstring)."""
    return [e for e in errors if e.rule not in RATCHETED_RULES or not _unchanged_along(e.path, new, old)]


def _unchanged_along(path: FieldPath, new: Any, old: Any) -> bool:
    """Whether some value on the way to ``path`` (the object, then each correlated child) is unchanged."""
    previous: Any = None
    for segment in path:
        if new is not None and new == old:
            return True
        if type(segment) is int:
            keys = LIST_MAP_KEYS.get(previous) if isinstance(previous, str) else None
            if keys is None or type(new) is not list or type(old) is not list or not 0 <= segment < len(new):
                return False
            new = new[segment]
            old = _correlated(new, old, keys)
        else:
            if type(new) is not dict or type(old) is not dict:
                return False
            new, old = new.get(segment), old.get(segment)
        previous = segment
    return new is not None and new == old


def _correlated(item: Any, old_items: list[Any], keys: tuple[str, ...]) -> Any:
    """The stored list-map item with ``item``'s keys (None when it has none or its keys are no strings)."""
    if type(item) is not dict:
        return None
    wanted = tuple(item.get(k) for k in keys)
    if any(type(v) is not str for v in wanted):
        return None
    for candidate in old_items:
        if type(candidate) is dict and tuple(candidate.get(k) for k in keys) == wanted:
            return candidate
    return None
