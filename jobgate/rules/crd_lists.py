"""What the apiserver checks of a CRD's lists beyond types: ``maxItems`` and the keys of list-maps.

Shared by the families whose peers' CRDs jobgate does not ship (JobSet, Kubeflow Trainer, whose runtimes
carry JobSet's schema): offline there is no CRD, so ``jobgate validate`` checks what the apiserver would.

- ``maxItems``: read from a model's structural schema (the engine's schema check reads no list bound);
  ``<path>: Too many: <n>: must have at most <max> items``.
- list-maps (``x-kubernetes-list-type: map``): two items with the same keys are refused at the later
  item, ``<path>[i]: Duplicate value: {"name":"node"}``. jobgate's models keep pod templates whole, so
  the list-maps are given as a tree (``ListMaps``), core/v1's pod spec included (``POD_SPEC_LIST_MAPS``).
  On UPDATE the apiserver checks them only when the stored object has no such duplicate
  (``duplicate_keys_ratcheted``).
- ratcheting of the other errors on UPDATE (CRDValidationRatcheting, on by default since Kubernetes
  1.30): ``ratcheted``.
"""

from __future__ import annotations

from jobgate.engine.fielderrors import FieldError, FieldPath, duplicate, too_many
from jobgate.engine.schema import schema_of

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

    # An object's fields that are (or lead to) list-maps: to a ListMap, or to the tree of a nested object.
    ListMaps = dict[str, Any]

    from jobgate.engine.modelref import ModelRef

# --- maxItems --------------------------------------------------------------------------------------


# Each model's pruned schema, found once (a dict, not functools.cache: a one-file check imports no functools).
_BOUNDED: dict[ModelRef, dict[str, Any] | None] = {}


def _bounded(model: ModelRef) -> dict[str, Any] | None:
    """The model's structural schema pruned to the branches that hold a maxItems (None: no bound)."""
    if model not in _BOUNDED:
        _BOUNDED[model] = _prune(schema_of(model))
    return _BOUNDED[model]


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


def list_bound_errors(value: Any, model: ModelRef, path: FieldPath, rule: str) -> list[FieldError]:
    """Every list under ``value`` (checked against ``model``'s schema at ``path``) longer than its maxItems,
    as the apiserver reports it, labelled ``rule``."""
    bounded = _bounded(model)
    errors: list[FieldError] = []
    if bounded is not None:
        _walk(value, bounded, path, errors, rule)
    return errors


def _walk(value: Any, node: dict[str, Any], path: FieldPath, errors: list[FieldError], rule: str) -> None:
    if type(value) is list:
        limit = node.get("maxItems")
        if limit is not None and len(value) > limit:
            errors.append(too_many(path, len(value), limit, rule))
        items = node.get("items")
        if items is not None:
            for index, item in enumerate(value):
                _walk(item, items, (*path, index), errors, rule)
    elif type(value) is dict:
        properties = node.get("properties")
        if properties is not None:
            for name, sub in properties.items():
                child = value.get(name)
                if child is not None:
                    _walk(child, sub, (*path, name), errors, rule)
        additional = node.get("additionalProperties")
        if additional is not None:
            for name, child in value.items():
                if child is not None:
                    _walk(child, additional, (*path, name), errors, rule)


# --- list-map keys ---------------------------------------------------------------------------------


class ListMap:
    """A list-map: its keys, the defaults the CRD gives a missing key, and the list-maps inside an item."""

    __slots__ = ("defaults", "items", "keys")

    def __init__(
        self, keys: tuple[str, ...], items: ListMaps | None = None, defaults: Mapping[str, Any] | None = None
    ) -> None:
        self.keys = keys
        self.items: ListMaps = items or {}
        self.defaults: Mapping[str, Any] = defaults or {}


_BY_NAME = ("name",)
_CONTAINER: ListMaps = {
    "env": ListMap(_BY_NAME),
    "ports": ListMap(("containerPort", "protocol"), defaults={"protocol": "TCP"}),
    "resources": {"claims": ListMap(_BY_NAME)},
    "volumeDevices": ListMap(("devicePath",)),
    "volumeMounts": ListMap(("mountPath",)),
}
# core/v1 PodSpec's list-maps, as its OpenAPI (and so every CRD embedding a pod template) declares them.
POD_SPEC_LIST_MAPS: ListMaps = {
    "containers": ListMap(_BY_NAME, _CONTAINER),
    "initContainers": ListMap(_BY_NAME, _CONTAINER),
    "ephemeralContainers": ListMap(_BY_NAME, _CONTAINER),
    "hostAliases": ListMap(("ip",)),
    "imagePullSecrets": ListMap(_BY_NAME),
    "resourceClaims": ListMap(_BY_NAME),
    "resources": {"claims": ListMap(_BY_NAME)},
    "schedulingGates": ListMap(_BY_NAME),
    "topologySpreadConstraints": ListMap(("topologyKey", "whenUnsatisfiable")),
    "volumes": ListMap(_BY_NAME),
}
# JobSet v0.12.0's JobSetSpec (a JobSet's spec, a Trainer runtime's spec.template.spec).
JOBSET_SPEC_LIST_MAPS: ListMaps = {
    "replicatedJobs": ListMap(
        _BY_NAME,
        {
            "dependsOn": ListMap(_BY_NAME),
            "template": {"spec": {"template": {"spec": POD_SPEC_LIST_MAPS}}},
        },
    ),
}

_KEY_TYPES = (str, int, bool)


def duplicate_key_errors(value: Any, tree: ListMaps, path: FieldPath, rule: str) -> list[FieldError]:
    """Every item of a list-map under ``value`` (an object at ``path``) whose keys an earlier item has.

    An item whose keys are missing (without a default) or not scalars is left to the schema check, which
    refuses it; so is an item that is no object."""
    errors: list[FieldError] = []
    _duplicates(value, tree, path, errors, rule)
    return errors


def _duplicates(value: Any, tree: ListMaps, path: FieldPath, errors: list[FieldError], rule: str) -> None:
    if type(value) is not dict:
        return
    for name, sub in tree.items():
        child = value.get(name)
        if child is None:
            continue
        if type(sub) is dict:
            _duplicates(child, sub, (*path, name), errors, rule)
        elif type(child) is list:
            _list_map(child, sub, (*path, name), errors, rule)


def _list_map(items: list[Any], spec: ListMap, path: FieldPath, errors: list[FieldError], rule: str) -> None:
    seen: set[tuple[Any, ...]] = set()
    for index, item in enumerate(items):
        if type(item) is not dict:
            continue
        key = {k: item.get(k, spec.defaults.get(k)) for k in spec.keys}
        if all(type(v) in _KEY_TYPES for v in key.values()):
            # Typed: 1 and true are different keys (Python's hash would join them).
            identity = tuple((type(v).__name__, v) for v in key.values())
            if identity in seen:
                errors.append(duplicate((*path, index), key, rule))
            seen.add(identity)
        if spec.items:
            _duplicates(item, spec.items, (*path, index), errors, rule)


def duplicate_keys_ratcheted(errors: list[FieldError], rule: str, old_has_duplicates: bool) -> list[FieldError]:
    """``errors`` of an UPDATE as the apiserver reports them: it checks list-map keys only when the stored
    object passes that check (apiextensions' strategy, ValidateUpdate)."""
    if not old_has_duplicates:
        return errors
    return [e for e in errors if e.rule != rule]


# --- ratcheting ------------------------------------------------------------------------------------


def ratcheted(
    errors: Iterable[FieldError],
    new: Any,
    old: Any,
    rules: frozenset[str],
    list_map_keys: Mapping[str, tuple[str, ...]],
) -> list[FieldError]:
    """``errors`` of an UPDATE without those of ``rules`` the apiserver ratchets: an error is dropped when a
    value on the way to its field (the object, then each correlated child) is unchanged from the stored
    object, reached through object fields and the keys of list-maps (``list_map_keys``, by the list's
    field name; any other list is atomic: its items are compared only as the whole list)."""
    return [e for e in errors if e.rule not in rules or not _unchanged_along(e.path, new, old, list_map_keys)]


def _unchanged_along(path: FieldPath, new: Any, old: Any, list_map_keys: Mapping[str, tuple[str, ...]]) -> bool:
    previous: Any = None
    for segment in path:
        if new is not None and new == old:
            return True
        if type(segment) is int:
            keys = list_map_keys.get(previous) if isinstance(previous, str) else None
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
