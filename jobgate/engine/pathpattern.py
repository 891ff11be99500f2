"""Field paths with wildcards, as the rule catalogue names the errors a rule produces, and the
anchor of a rule id in the generated rule reference.

In the engine so that both the catalogue (``jobgate.generate``) and the rule-id lookup of the
offline command (``jobgate.engine.ruleids``) match errors with one implementation.
"""

from __future__ import annotations

import re

from jobgate.engine.fielderrors import FieldPath, Key

_ANCHOR_UNSAFE = re.compile(r"[^a-z0-9-]")


def rule_anchor(rule_id: str) -> str:
    """The anchor of a rule in ``docs/rules/<family>.md``: the id lowercased, every character outside
    ``[a-z0-9-]`` replaced by ``-`` (``roles/one-leader`` -> ``roles-one-leader``)."""
    return _ANCHOR_UNSAFE.sub("-", rule_id.lower())


class PathPattern:
    """A field path with wildcards: ``spec.tasks[*].template.spec.containers[*].name``.

    ``[*]`` matches one map key or list index, ``*`` one field name, ``**`` any run of segments.
    """

    __slots__ = ("segments", "text")

    _TOKEN = re.compile(r"\[\*\]|\[[^\]]*\]|\*\*|[^.\[\]]+")

    def __init__(self, text: str) -> None:
        self.text = text
        self.segments: tuple[str, ...] = tuple(self._TOKEN.findall(text))

    def matches(self, path: FieldPath) -> bool:
        return _match(self.segments, tuple(path))

    def __repr__(self) -> str:
        return f"PathPattern({self.text!r})"


def _match(pattern: tuple[str, ...], path: FieldPath) -> bool:
    if not pattern:
        return not path
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_match(rest, path[i:]) for i in range(len(path) + 1))
    if not path:
        return False
    segment = path[0]
    keyed = isinstance(segment, Key | int)
    if head == "[*]":
        ok = keyed
    elif head == "*":
        ok = not keyed
    elif head.startswith("["):
        ok = keyed and str(segment) == head[1:-1]
    else:
        ok = not keyed and segment == head
    return ok and _match(rest, path[1:])
