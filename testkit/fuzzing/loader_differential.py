"""libyaml's reading of a document against ruamel's (the reference): node graphs, lines and data."""

from __future__ import annotations

from typing import Any

from jobgate.offline import exact_yaml
from jobgate.offline.documents import Chunk, LoadError, split_documents


def shape(node: Any, seen: dict[int, tuple[int, int]] | None = None) -> Any:
    """The node graph as plain tuples, the line of every node included (aliases by their anchor's position)."""
    if node is None:
        return None
    seen = {} if seen is None else seen
    if id(node) in seen:
        return ("alias", seen[id(node)])
    seen[id(node)] = (node.start_mark.line, node.start_mark.column)
    if node.id == "scalar":
        return ("scalar", str(node.tag), node.value, node.start_mark.line)
    if node.id == "sequence":
        return ("sequence", str(node.tag), node.start_mark.line, [shape(n, seen) for n in node.value])
    pairs = [(shape(k, seen), shape(v, seen)) for k, v in node.value]
    return ("mapping", str(node.tag), node.start_mark.line, pairs)


def _resolved(node: Any, chunk: Chunk) -> Any:
    try:
        return exact_yaml._Resolver(chunk.first_line).value(node, 0) if node is not None else None
    except LoadError as exc:
        return ("LoadError", exc.message, exc.line)
    except RecursionError:
        return ("RecursionError",)


def differences(text: str) -> str | None:
    """Why libyaml's reading of ``text`` differs from ruamel's, or None (also when libyaml declines)."""
    try:
        chunks = split_documents(text)
    except LoadError:
        return None
    for chunk in chunks:
        composed, node = exact_yaml._compose_libyaml(chunk.text)
        if not composed:
            continue
        try:
            reference = exact_yaml._compose_ruamel(chunk)
        except LoadError as exc:
            return f"libyaml composed what ruamel refuses: {exc.message} (line {exc.line})"
        except RecursionError:
            return "libyaml composed what ruamel cannot"
        if shape(node) != shape(reference):
            return "node graphs differ"
        if _resolved(node, chunk) != _resolved(reference, chunk):
            return "resolved data differ"
    return None
