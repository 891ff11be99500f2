"""The test vectors of the catalogue (``tests/cel_vectors/<family>.yaml`` of a checkout), loaded:
for the tests, and for ``jobgate explain``'s examples when it runs from a checkout (the vectors are
test data, not installed with the wheel). The format is described in ``tests/cel_vectors``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml


@dataclass
class Vector:
    family: str
    name: str
    obj: dict[str, Any]
    old: dict[str, Any] | None
    rules: list[str]
    # The vector as written (name, base, patch, ...): what ``jobgate explain`` shows.
    entry: dict[str, Any] = field(default_factory=dict)

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


def _base(entry: dict[str, Any], repo: Path) -> dict[str, Any]:
    if "object" in entry:
        return copy.deepcopy(entry["object"])
    documents = [d for d in yaml.safe_load_all((repo / entry["base"]).read_text()) if d]
    return documents[entry.get("document", 0)]


def load_vectors(directory: Path, repo: Path, family: str | None = None) -> list[Vector]:
    """The vectors of ``directory`` (``tests/cel_vectors`` of a checkout ``repo``)."""
    found = []
    for path in sorted(directory.glob("*.yaml")):
        if family is not None and path.stem != family:
            continue
        for entry in yaml.safe_load_all(path.read_text()):
            if not entry:
                continue
            base = _base(entry, repo)
            obj = merge_patch(base, entry.get("patch", {}))
            old = None
            if "old" in entry:
                old = entry["old"]
            elif "old_patch" in entry:
                old = merge_patch(base, entry["old_patch"])
            found.append(Vector(path.stem, entry["name"], obj, old, list(entry.get("rules", [])), entry))
    return found
