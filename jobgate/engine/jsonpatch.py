"""RFC 6902 JSON Patch: recorded while defaulting, applied by the CLI, diffed by the tests.

The mutating webhook's patch is the difference between the object as received and as
defaulted. Defaulting records each change as it makes it (``PatchRecorder``): on the
webhook's hot path that costs far less than diffing two 5 KB objects afterwards. The
generic ``json_patch`` diff stays as the reference the tests hold the recorder to. Only
``add``, ``replace`` and ``move`` (a replica type renamed ``worker`` -> ``Worker``) are
recorded, and ``remove`` in one case: on UPDATE, a stored ``Worker`` that a re-applied
``worker`` replaces. Defaulting never removes a field it does not know.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any, Final

# "Any" quoted: the alias is evaluated at run time, where typing is not imported.
Patch = list[dict[str, "Any"]]


_MISSING: Final[Any] = object()


def escape_pointer_token(token: str) -> str:
    if "~" in token or "/" in token:
        return token.replace("~", "~0").replace("/", "~1")
    return token


class PatchRecorder:
    """Applies defaults to copy-on-write containers and records the matching operations."""

    __slots__ = ("ops",)

    def __init__(self) -> None:
        self.ops: Patch = []

    def set(self, target: dict[str, Any], key: str, value: Any, pointer: str) -> None:
        op = "replace" if key in target else "add"
        self.ops.append({"op": op, "path": f"{pointer}/{escape_pointer_token(key)}", "value": value})
        target[key] = value

    def append(self, target: dict[str, Any], key: str, item: Any, pointer: str) -> None:
        """Append to the list at ``key`` (a new list: the input's list is never modified)."""
        existing = target.get(key)
        if isinstance(existing, list):
            path = f"{pointer}/{escape_pointer_token(key)}/{len(existing)}"
            self.ops.append({"op": "add", "path": path, "value": item})
            target[key] = [*existing, item]
        else:
            self.set(target, key, [item], pointer)

    def remove(self, pointer: str, key: str) -> None:
        """Record removing ``key`` (the caller builds the new container without it)."""
        self.ops.append({"op": "remove", "path": f"{pointer}/{escape_pointer_token(key)}"})

    def move(self, pointer: str, old_key: str, new_key: str) -> None:
        self.ops.append(
            {
                "op": "move",
                "from": f"{pointer}/{escape_pointer_token(old_key)}",
                "path": f"{pointer}/{escape_pointer_token(new_key)}",
            }
        )


class NoPatch(PatchRecorder):
    """Defaults without recording (the old object on UPDATE, /validate, the controller)."""

    __slots__ = ()

    def set(self, target: dict[str, Any], key: str, value: Any, pointer: str) -> None:
        target[key] = value

    def append(self, target: dict[str, Any], key: str, item: Any, pointer: str) -> None:
        existing = target.get(key)
        target[key] = [*existing, item] if isinstance(existing, list) else [item]

    def remove(self, pointer: str, key: str) -> None:
        return None

    def move(self, pointer: str, old_key: str, new_key: str) -> None:
        return None


NO_PATCH: Final = NoPatch()


def json_patch(before: Any, after: Any) -> Patch:
    """The patch that turns ``before`` into ``after`` (the tests' reference for PatchRecorder)."""
    ops: Patch = []
    _diff(before, after, "", ops)
    return ops


def _same(a: Any, b: Any) -> bool:
    # 1 == 1.0 == True in Python, but not in JSON: the types must agree too.
    return type(a) is type(b) and a == b


def _diff(before: Any, after: Any, pointer: str, ops: Patch) -> None:
    if before is after:
        return
    if isinstance(before, dict) and isinstance(after, dict):
        _diff_objects(before, after, pointer, ops)
        return
    if isinstance(before, list) and isinstance(after, list) and len(after) >= len(before):
        for index, value in enumerate(before):
            if value is not after[index]:
                _diff(value, after[index], f"{pointer}/{index}", ops)
        for index in range(len(before), len(after)):
            ops.append({"op": "add", "path": f"{pointer}/{index}", "value": after[index]})
        return
    if not _same(before, after):
        ops.append({"op": "replace", "path": pointer, "value": after})


def _diff_objects(before: dict[str, Any], after: dict[str, Any], pointer: str, ops: Patch) -> None:
    added = []
    for key, value in after.items():
        old = before.get(key, _MISSING)
        if old is value:
            continue
        if old is _MISSING:
            added.append(key)
        else:
            _diff(old, value, f"{pointer}/{escape_pointer_token(key)}", ops)
    kept = len(after) - len(added)
    removed = [k for k in before if k not in after] if len(before) > kept else []
    renamed = _renamed_keys(removed, added) if removed and added else {}
    for old_key, new_key in renamed.items():
        child = f"{pointer}/{escape_pointer_token(new_key)}"
        ops.append({"op": "move", "from": f"{pointer}/{escape_pointer_token(old_key)}", "path": child})
        _diff(before[old_key], after[new_key], child, ops)
    renamed_to = set(renamed.values())
    for key in added:
        if key not in renamed_to:
            ops.append({"op": "add", "path": f"{pointer}/{escape_pointer_token(key)}", "value": after[key]})
    for key in removed:
        if key not in renamed:
            ops.append({"op": "remove", "path": f"{pointer}/{escape_pointer_token(key)}"})


def _renamed_keys(removed: list[str], added: list[str]) -> dict[str, str]:
    """Keys that differ only in case between the two objects: old key -> new key."""
    by_folded = {k.casefold(): k for k in removed if isinstance(k, str)}
    renamed = {}
    for key in added:
        old_key = by_folded.pop(key.casefold(), None) if isinstance(key, str) else None
        if old_key is not None:
            renamed[old_key] = key
    return renamed


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def apply_patch(document: Any, patch: Patch) -> Any:
    """Apply add/replace/remove operations to a deep copy of ``document`` (tests and the CLI)."""
    import copy

    result = copy.deepcopy(document)
    for op in patch:
        if op["op"] == "move":
            result = _move(result, op["from"], op["path"])
            continue
        tokens = [_unescape(t) for t in op["path"].split("/")[1:]]
        if not tokens:
            if op["op"] in ("add", "replace"):
                result = copy.deepcopy(op["value"])
            continue
        parent = result
        for token in tokens[:-1]:
            parent = parent[int(token)] if isinstance(parent, list) else parent[token]
        last = tokens[-1]
        if isinstance(parent, list):
            index = len(parent) if last == "-" else int(last)
            if op["op"] == "add":
                parent.insert(index, copy.deepcopy(op["value"]))
            elif op["op"] == "replace":
                parent[index] = copy.deepcopy(op["value"])
            else:
                del parent[index]
        elif op["op"] in ("add", "replace"):
            parent[last] = copy.deepcopy(op["value"])
        else:
            del parent[last]
    return result


def _move(document: Any, source: str, target: str) -> Any:
    source_tokens = [_unescape(t) for t in source.split("/")[1:]]
    target_tokens = [_unescape(t) for t in target.split("/")[1:]]
    parent = document
    for token in source_tokens[:-1]:
        parent = parent[int(token)] if isinstance(parent, list) else parent[token]
    if source_tokens[:-1] == target_tokens[:-1] and isinstance(parent, dict) and hasattr(parent, "insert"):
        # A rename within one mapping of a round-trip YAML tree: keep the key where it was.
        position = list(parent).index(source_tokens[-1])
        value = parent.pop(source_tokens[-1])
        parent.insert(position, target_tokens[-1], value)
        return document
    value = parent.pop(int(source_tokens[-1])) if isinstance(parent, list) else parent.pop(source_tokens[-1])
    return apply_patch(document, [{"op": "add", "path": target, "value": value}])
