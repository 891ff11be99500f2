"""Test vectors of the rules the apiserver enforces: jobs of each family, valid and invalid, each
naming the rules (``webhook/cel`` catalogue ids) its errors come from.

A family's vectors are ``<family>.yaml``: documents of

    name: what the case shows
    base: examples/valid/tfjob-mnist.yaml    # a job to start from (a path from the repository), or
    object: {...}                            # the job itself
    patch: {...}                             # a JSON merge patch (RFC 7386) applied to the base
    old: {...} | old_patch: {...}            # an UPDATE: the stored job (old_patch: of the base)
    rules: [replicas/types, ...]             # the rules the webhook's errors come from; [] when valid

``tests/unit/test_cel_vectors.py`` holds each vector to the webhook's verdict (offline);
``tests/e2e/test_cel_enforcement.py`` sends each to a real apiserver with only the generated CRDs
and policies in force.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


@dataclass
class Vector:
    family: str
    name: str
    obj: dict[str, Any]
    old: dict[str, Any] | None
    rules: list[str]

    @property
    def id(self) -> str:
        return f"{self.family}:{self.name}"


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge, null removes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _base(entry: dict[str, Any]) -> dict[str, Any]:
    if "object" in entry:
        return copy.deepcopy(entry["object"])
    documents = [d for d in yaml.safe_load_all((REPO / entry["base"]).read_text()) if d]
    return documents[entry.get("document", 0)]


def vectors(family: str | None = None) -> list[Vector]:
    found = []
    for path in sorted(HERE.glob("*.yaml")):
        if family is not None and path.stem != family:
            continue
        for entry in yaml.safe_load_all(path.read_text()):
            if not entry:
                continue
            base = _base(entry)
            obj = merge_patch(base, entry.get("patch", {}))
            old = None
            if "old" in entry:
                old = entry["old"]
            elif "old_patch" in entry:
                old = merge_patch(base, entry["old_patch"])
            found.append(Vector(path.stem, entry["name"], obj, old, list(entry.get("rules", []))))
    return found


def example_files() -> list[Path]:
    return sorted((REPO / "examples").glob("*/*.yaml"))
