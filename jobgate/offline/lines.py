"""The line a field is written on, found in a document's composed node graph.

Only documents with something to report are located, and every finding asks for its field's
line: a TFJob with 10,000 replica types has 10,000 findings in one mapping. Each mapping is
therefore indexed by key on its first visit, so that locating costs the size of the document
plus the length of the findings' paths, never the findings times the mapping's size.

The nodes are ruamel's or PyYAML's (libyaml): both have ``id``, ``value`` and
``start_mark.line``. Composing them is the exact path's business (``offline.exact_yaml``, for
``offline.loader.Locator``); this module parses nothing and imports nothing of jobgate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_Pair = tuple[Any, Any]  # (key node, value node)


class NodeLines:
    """Field path → line, over one composed document whose line 0 is ``first_line`` of the file."""

    __slots__ = ("_first_line", "_keys", "_root")

    def __init__(self, root: Any, first_line: int) -> None:
        self._root = root
        self._first_line = first_line
        # id(mapping node) → (keys as written, case-folded keys); the nodes live as long as the root.
        self._keys: dict[int, tuple[dict[str, _Pair], dict[str, _Pair]]] = {}

    @property
    def line(self) -> int:
        """Where the document's content starts."""
        return self._first_line + self._root.start_mark.line

    def line_of(self, path: Sequence[Any]) -> int:
        """Line of the deepest part of ``path`` that exists in the document."""
        node = self._root
        line = self._first_line + node.start_mark.line
        for segment in path:
            if node.id == "mapping":
                pair = self._pair(node, segment)
                if pair is None:
                    break
                line = self._first_line + pair[0].start_mark.line
                node = pair[1]
            elif node.id == "sequence" and isinstance(segment, int) and 0 <= segment < len(node.value):
                node = node.value[segment]
                line = self._first_line + node.start_mark.line
            else:
                break
        return line

    def _pair(self, node: Any, segment: Any) -> _Pair | None:
        keys = self._keys.get(id(node))
        if keys is None:
            keys = self._keys[id(node)] = _index(node)
        exact, folded = keys
        text = str(segment)
        pair = exact.get(text)
        if pair is None:
            # Defaulting renames replica types (worker -> Worker); point at the key as written.
            pair = folded.get(text.casefold())
        return pair


def _index(node: Any) -> tuple[dict[str, _Pair], dict[str, _Pair]]:
    """A mapping's pairs by key and by case-folded key; of duplicates, the first written (what a
    scan from the top finds)."""
    exact: dict[str, _Pair] = {}
    folded: dict[str, _Pair] = {}
    for pair in node.value:
        value = pair[0].value
        if not isinstance(value, str):  # a key that is a mapping or a list: no field path names it
            continue
        exact.setdefault(value, pair)
        folded.setdefault(value.casefold(), pair)
    return exact, folded
