"""Reading manifests for the offline commands: files, directories, stdin; multi-document YAML.

Documents are parsed with ruamel.yaml's round-trip loader, which remembers where every
key and item came from, so an error on ``spec.tfReplicaSpecs[Worker].replicas`` can be
reported at the line of that ``replicas:`` key. The rules themselves see plain JSON data.
"""

from __future__ import annotations

import datetime
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from webhook.rules.fielderrors import FieldPath

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"


class SourceError(Exception):
    """A path that cannot be read or a document that cannot be parsed (exit status 2)."""

    def __init__(self, source: str, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.source = source
        self.line = line
        self.message = message

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}" if self.line else self.source
        return f"{where}: {self.message}"


@dataclass
class Document:
    source: str
    index: int
    tree: Any  # the ruamel tree, which carries positions
    data: Any  # the same document as plain JSON-compatible data

    @property
    def line(self) -> int:
        return _line_of(self.tree) or 1

    def line_of(self, path: FieldPath) -> int:
        """Line of the deepest part of ``path`` that exists in the document."""
        node = self.tree
        line = self.line
        for segment in path:
            if isinstance(node, dict):
                key = _matching_key(node, segment)
                if key is None:
                    break
                line = _key_line(node, key) or line
                node = node[key]
            elif isinstance(node, list) and isinstance(segment, int) and 0 <= segment < len(node):
                line = _item_line(node, segment) or line
                node = node[segment]
            else:
                break
        return line


def _matching_key(node: dict[Any, Any], segment: Any) -> Any:
    if segment in node:
        return segment
    if isinstance(segment, str):
        # Defaulting renames replica types (worker -> Worker); point at the key as written.
        folded = segment.casefold()
        return next((k for k in node if isinstance(k, str) and k.casefold() == folded), None)
    return None


def _line_of(node: Any) -> int | None:
    lc = getattr(node, "lc", None)
    return lc.line + 1 if lc is not None and lc.line is not None else None


def _key_line(node: Any, key: Any) -> int | None:
    try:
        return node.lc.key(key)[0] + 1
    except (AttributeError, KeyError, TypeError):
        return None


def _item_line(node: Any, index: int) -> int | None:
    try:
        return node.lc.item(index)[0] + 1
    except (AttributeError, KeyError, TypeError, IndexError):
        return None


def to_plain(node: Any) -> Any:
    """ruamel's tagged containers and scalars as plain JSON data, the way kubectl converts YAML."""
    if isinstance(node, dict):
        return {_plain_key(k): to_plain(v) for k, v in node.items()}
    if isinstance(node, list | tuple):
        return [to_plain(v) for v in node]
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, str):
        return str(node)
    if isinstance(node, datetime.datetime | datetime.date):
        return node.isoformat()
    if isinstance(node, bytes):
        import base64

        return base64.b64encode(node).decode("ascii")
    tagged = getattr(node, "value", None)
    return to_plain(tagged) if tagged is not None else str(node)


def _plain_key(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return str(key)


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    return yaml


def parse_documents(text: str, source: str) -> list[Document]:
    try:
        trees = [tree for tree in _yaml().load_all(text)]
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise SourceError(source, f"cannot parse YAML: {problem}", line) from None
    except YAMLError as exc:
        raise SourceError(source, f"cannot parse YAML: {exc}") from None
    return [Document(source, index, tree, to_plain(tree)) for index, tree in enumerate(trees)]


def expand_paths(paths: list[str]) -> Iterator[str]:
    """Files as given; directories walked recursively for manifests, in sorted order."""
    for raw in paths:
        if raw == STDIN:
            yield STDIN
            continue
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in MANIFEST_SUFFIXES)
            yield from (str(p) for p in found)
        elif path.exists():
            yield raw
        else:
            raise SourceError(raw, "no such file or directory")


def read_source(source: str) -> str:
    try:
        if source == STDIN:
            return sys.stdin.read()
        return Path(source).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SourceError(source, "not UTF-8 text") from None
    except OSError as exc:
        raise SourceError(source, f"cannot read: {exc.strerror or exc}") from None


def display_name(source: str) -> str:
    return "<stdin>" if source == STDIN else source
