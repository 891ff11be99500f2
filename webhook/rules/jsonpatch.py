"""RFC 6902 JSON Patch between the object as received and the object as defaulted.

Defaulting copies only the containers on the way to a change and shares everything else
with the input, so the diff skips shared subtrees by identity and costs little on large
pod templates. It emits ``add``/``replace`` only, plus ``remove`` for a key that defaulting
renamed (``worker`` -> ``Worker``); unknown fields are never removed because defaulting
never drops them.
"""

from __future__ import annotations

from typing import Any

Patch = list[dict[str, Any]]


def escape_pointer_token(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def json_patch(before: Any, after: Any) -> Patch:
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
        moved = _renamed_keys(before, after)
        for old_key, new_key in moved.items():
            child = f"{pointer}/{escape_pointer_token(new_key)}"
            ops.append({"op": "move", "from": f"{pointer}/{escape_pointer_token(old_key)}", "path": child})
            _diff(before[old_key], after[new_key], child, ops)
        renamed_to = set(moved.values())
        for key, value in after.items():
            if key in renamed_to:
                continue
            child = f"{pointer}/{escape_pointer_token(key)}"
            if key not in before:
                ops.append({"op": "add", "path": child, "value": value})
            else:
                _diff(before[key], value, child, ops)
        for key in before:
            if key not in after and key not in moved:
                ops.append({"op": "remove", "path": f"{pointer}/{escape_pointer_token(key)}"})
        return
    if isinstance(before, list) and isinstance(after, list) and len(after) >= len(before):
        for index, value in enumerate(before):
            _diff(value, after[index], f"{pointer}/{index}", ops)
        for index in range(len(before), len(after)):
            ops.append({"op": "add", "path": f"{pointer}/{index}", "value": after[index]})
        return
    if not _same(before, after):
        ops.append({"op": "replace", "path": pointer, "value": after})


def _renamed_keys(before: dict[str, Any], after: dict[str, Any]) -> dict[str, str]:
    """Keys that differ only in case between the two objects: old key -> new key."""
    removed = [k for k in before if k not in after]
    if not removed:
        return {}
    by_folded = {k.casefold(): k for k in removed if isinstance(k, str)}
    renamed = {}
    for key in after:
        if key not in before and isinstance(key, str):
            old_key = by_folded.pop(key.casefold(), None)
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
