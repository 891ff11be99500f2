"""YAML and JSON manifests read exactly as ``kubectl`` reads them, fast.

kubectl converts YAML to JSON with sigs.k8s.io/yaml, which parses with go-yaml v2: YAML 1.1
scalars (``yes``/``on``/``y`` are booleans, ``0777`` is octal, underscores in numbers are
dropped, no sexagesimal), timestamps kept as the string written, ``!!binary`` decoded,
``<<`` merge keys, the last of duplicate keys kept, "excessive aliasing" refused; then JSON
turns every integral float into an integer, and ``.inf``/``.nan`` cannot be encoded at all.

Two paths produce exactly that data:

- the fast path, here, parses with yaml-rs (a Rust YAML 1.2 parser, about 50,000 small
  documents/s) and fixes its result in one walk. Documents where YAML 1.1 and 1.2 may
  disagree (``yes``, ``0777``, ``1_000``, a tag, a merge key, ...) take the exact path
  instead: a cheap pre-scan of the text and the walk over the result find them, because
  after parsing a quoted ``"yes"`` and a plain ``yes`` can no longer be told apart.
- the exact path (``offline.exact_yaml``) composes the document with ruamel.yaml and resolves
  every plain scalar with go-yaml v2's rules. It is ten times slower, so it serves only
  documents the fast path cannot take, and is imported only when one is met.

Lines are found only when a document has something to report: ``Locator`` has the exact path
compose it then and ``offline.lines`` follows each finding's path in the node graph.

A file's documents, the limits on reading them and ``LoadError`` are ``offline.documents``'s.
"""

from __future__ import annotations

import sys

from jobgate.offline.documents import (
    INT64_MAX,
    INT64_MIN,
    MAX_DEPTH,
    MAX_DOCUMENT_BYTES,
    Chunk,
    LoadError,
    NeedsExactPath,
    json_number,
    split_documents,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from typing import Any

    from jobgate.offline.lines import NodeLines

# Where YAML 1.1 (go-yaml v2) and YAML 1.2 (yaml-rs) read a plain scalar differently, and how
# the fast path notices (without a per-character regular expression, which costs more than the
# parse itself):
# - the 1.1 booleans (yes, on, y, ...) parse as strings in 1.2: every string value and key is
#   looked up in _YAML11_WORDS after parsing (a quoted "yes" goes the exact way too, harmless);
# - octal 0777, underscores (1_000, _1), signed or upper-case radix prefixes parse as other
#   numbers: _ZERO_HINT and each _ find candidates, _YAML11_NUMBER confirms the token;
# - tags (!!binary, !!str) and merge keys (<<): found by substring.
_YAML11_WORDS = frozenset(
    ("y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF")
)
# Kept as text: re compiles (and caches) each the first time it is used, and re itself is imported
# by the first document that needs it (with enum and functools, a third of a one-file check's
# instructions): most documents never do. _ZERO_HINT is found without re (``_zero_hints``).
_ZERO_HINT = r"0[0-9_xXoObB]"
_ZERO_HINT_NEXT = frozenset("0123456789_xXoObB")
_YAML11_NUMBER = (
    r"[-+]?(?:0[0-9_][0-9a-zA-Z_.+-]*|_[0-9a-zA-Z_.+-]*|[0-9][0-9.eE+-]*_[0-9a-zA-Z_.+-]*|0[XOB][0-9a-fA-F_]*)"
    r"|[-+]0[xXoObB][0-9a-fA-F_]*"
)
_TOKEN_DELIMITERS = frozenset(" \t\r\n[]{},#")
_SCALAR_PREFIX = r"[ \t]*(?:[-?:][ \t]+)*"
# yaml-rs exhausts its stack somewhere between 10,000 and 14,000 levels (a crash, not an
# exception), so only documents that cannot nest that deep take the fast path: nesting costs at
# least one character per level and, in block style, one more column every two levels, so a
# short document or one whose lines are all short stays far below it.
_FAST_PATH_ANY_SHAPE = 8000
_FAST_PATH_MAX_LINE = 2000


def _starts_scalar(text: str, position: int) -> bool:
    """Whether ``position`` begins a scalar: after indentation and block indicators, ``: `` or ``[ { ,``."""
    line_start = text.rfind("\n", 0, position) + 1
    prefix = text[line_start:position]
    import re

    if re.fullmatch(_SCALAR_PREFIX, prefix):
        return True
    return prefix.rstrip(" \t").endswith((":", "[", "{", ","))


def _token_at(text: str, position: int) -> tuple[int, str]:
    start = position
    while start > 0 and text[start - 1] not in _TOKEN_DELIMITERS:
        start -= 1
    end = position
    while end < len(text) and text[end] not in _TOKEN_DELIMITERS:
        end += 1
    token = text[start:end]
    if token.endswith(":"):
        token = token[:-1]
    # "key:value" is one plain scalar for YAML; only what follows a ": " is a value.
    colon = token.rfind(": ")
    if colon >= 0:
        start, token = start + colon + 2, token[colon + 2 :]
    return start, token


def _yaml11_number(token: str) -> bool:
    """``re.fullmatch(_YAML11_NUMBER, token)``, asked only of tokens that can match.

    Every branch of the pattern starts (after a sign) with 0 or _, or holds a _: other tokens,
    such as the 3600 that the hint 00 finds, are answered without compiling the pattern (more
    instructions than a one-file check's rules).
    """
    body = token[1:] if token.startswith(("+", "-")) else token
    if not body.startswith(("0", "_")) and "_" not in body:
        return False
    import re

    return re.fullmatch(_YAML11_NUMBER, token) is not None


def _zero_hints(text: str) -> Iterator[int]:
    """Where ``re.finditer(_ZERO_HINT, text)`` matches: each 0 followed by a digit, _ or a radix letter,
    a match's two characters never the start of the next one."""
    position = text.find("0")
    while position >= 0:
        if text[position + 1 : position + 2] in _ZERO_HINT_NEXT:
            yield position
            position = text.find("0", position + 2)
        else:
            position = text.find("0", position + 1)


def has_yaml11_numbers(text: str) -> bool:
    """Whether a plain scalar of ``text`` is a number YAML 1.1 reads differently (0777, 1_000, -0x1F)."""
    for hint in _zero_hints(text):
        start, token = _token_at(text, hint)
        if _yaml11_number(token) and _starts_scalar(text, start):
            return True
    # Each _ found with str.find (no pattern to compile for one character).
    position = text.find("_")
    while position >= 0:
        before = text[position - 1 : position]
        after = text[position + 1 : position + 2]
        if before.isdigit() or after.isdigit():  # not NCCL_DEBUG
            start, token = _token_at(text, position)
            if _yaml11_number(token) and _starts_scalar(text, start):
                return True
        position = text.find("_", position + 1)
    return False


def has_yaml11_tokens(text: str) -> bool:
    """What the fast path cannot see after parsing: tags, merge keys, 1.1-only numbers."""
    return "!" in text or "<<" in text or has_yaml11_numbers(text)


def load_document(chunk: Chunk, notes: list[tuple[int, str]] | None = None) -> Any:
    """The document as the plain JSON data kubectl sends (None for an empty document).

    ``notes`` receives (line, message) for what kubectl accepts silently but deserves a word:
    a duplicate key (kubectl keeps the last value).
    """
    text = chunk.text
    if len(text) > MAX_DOCUMENT_BYTES and len(text.encode("utf-8", "surrogatepass")) > MAX_DOCUMENT_BYTES:
        raise LoadError(f"document larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB", chunk.first_line)
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            return _fast_json(text)
        except NeedsExactPath:
            pass
    elif _fast_path_applies(text):
        try:
            return _fast_yaml(text)
        except NeedsExactPath:
            pass
    from jobgate.offline.exact_yaml import load_exact  # only documents the fast path cannot take

    return load_exact(chunk, notes)


# Characters YAML does not allow in a stream (go-yaml: "control characters are not allowed");
# yaml-rs lets some through, ruamel refuses them with their line.
_NOT_YAML_CHARACTERS = "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff\ufffe\uffff]"


# The ASCII characters YAML allows: the printable ones, tab, line feed and carriage return.
_YAML_ASCII = bytes(range(0x20, 0x7F)) + b"\t\n\r"


def _has_control_characters(text: str) -> bool:
    if text.isascii():
        # The common case: whatever is left once the allowed bytes are deleted. One pass in C, about a
        # quarter of the instructions of three replace() copies and isprintable() (54 k fewer per 1.2 KB file).
        return bool(text.encode("ascii").translate(None, _YAML_ASCII))
    import re

    return re.search(_NOT_YAML_CHARACTERS, text) is not None


def _fast_path_applies(text: str) -> bool:
    if has_yaml11_tokens(text) or _has_control_characters(text):
        return False
    return len(text) <= _FAST_PATH_ANY_SHAPE or max(map(len, text.splitlines())) <= _FAST_PATH_MAX_LINE


def _fast_json(text: str) -> Any:
    import orjson

    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise NeedsExactPath from None
    return _to_json_data(data, 0)


def _yaml_rs_parser() -> Callable[[str], Any]:
    """yaml-rs's parse function, found once.

    The package's Python layer (``yaml_rs/_lib.py``) imports pathlib and typing, which together
    cost a one-file check about a fifth of its wall time, only to wrap this call: the extension
    module is loaded by itself and registered under its name (a later ``import yaml_rs`` then
    uses it, so it is never initialised twice). Should a release of yaml-rs not have it, the
    package's own ``loads`` serves.
    """
    global _YAML_RS_PARSE  # noqa: PLW0603 - found once per process
    if _YAML_RS_PARSE is not None:
        return _YAML_RS_PARSE
    try:
        extension = sys.modules.get("yaml_rs._yaml_rs")
        if extension is None:
            finder = _path_finder()
            package = finder.find_spec("yaml_rs")
            spec = finder.find_spec("yaml_rs._yaml_rs", package.submodule_search_locations if package else None)
            if spec is None or spec.loader is None:
                raise ImportError("yaml_rs._yaml_rs")
            extension = spec.loader.create_module(spec)
            spec.loader.exec_module(extension)  # type: ignore[arg-type]
            sys.modules["yaml_rs._yaml_rs"] = extension
        raw = extension._loads

        def parse(text: str) -> Any:
            return raw(text, parse_datetime=False, alias_limits=None, duplicate_key_policy="error")

        parse("a: [1]\n")  # the private signature, checked once
        _YAML_RS_PARSE = parse
    except Exception:
        from functools import partial

        import yaml_rs

        _YAML_RS_PARSE = partial(yaml_rs.loads, parse_datetime=False)
    return _YAML_RS_PARSE


_YAML_RS_PARSE: Callable[[str], Any] | None = None


def _path_finder() -> Any:
    """``importlib.machinery.PathFinder``, without importing importlib.machinery.

    That import also imports importlib and warnings: a tenth of what a one-file check costs
    beyond the interpreter. The class is the import system's own, in the frozen module every
    interpreter has loaded at start (importlib.machinery re-exports it from there).
    """
    bootstrap = sys.modules.get("_frozen_importlib_external")
    finder = getattr(bootstrap, "PathFinder", None)
    if finder is None:
        from importlib.machinery import PathFinder as finder
    return finder


def _fast_yaml(text: str) -> Any:
    parse = _YAML_RS_PARSE or _yaml_rs_parser()
    try:
        data = parse(text)
    except Exception:
        # Parse errors, duplicate keys, aliasing past yaml-rs's limits, overlong integers, a key
        # that holds a list (TypeError: unhashable), whatever else yaml-rs may raise on hostile
        # text: the exact path (the reference) says what it is, with the line.
        raise NeedsExactPath from None
    return _to_json_data(data, 0)


def _to_json_data(data: Any, depth: int) -> Any:
    """yaml-rs's (or orjson's) result as JSON carries it, fixed in place; anything unusual takes the exact path.

    Integral floats become integers (Go's JSON writes ``2.0`` as ``2``); integers beyond int64,
    infinities, NaN, non-string keys and nesting past MAX_DEPTH are left to the exact path,
    which knows what kubectl does with each.
    """
    kind = type(data)
    if kind is dict or kind is list:
        _fix_container(data, depth)
        return data
    if kind is str and data in _YAML11_WORDS:
        raise NeedsExactPath
    if kind is float:
        return json_number(data)
    if kind is int and not INT64_MIN <= data <= INT64_MAX:
        raise NeedsExactPath
    return data


def _fix_container(container: Any, depth: int) -> None:
    # Hot: one call per mapping or list, leaves handled inline.
    if depth >= MAX_DEPTH:
        raise NeedsExactPath
    is_mapping = type(container) is dict
    items = container.items() if is_mapping else enumerate(container)
    words = _YAML11_WORDS
    for key, item in items:
        if is_mapping and (type(key) is not str or key in words):
            raise NeedsExactPath
        kind = type(item)
        if kind is str:
            if item in words:
                raise NeedsExactPath
            continue
        if kind is bool or item is None:
            continue
        if kind is dict or kind is list:
            _fix_container(item, depth + 1)
        elif kind is int:
            if not INT64_MIN <= item <= INT64_MAX:
                raise NeedsExactPath
        elif kind is float:
            container[key] = json_number(item)  # replaces a value: the size does not change
        else:
            raise NeedsExactPath


# --- lines, only for documents with something to report --------------------------------------


class Locator:
    """Field path → line of a document, composed on first use.

    ``loaded``: the chunk's data was read without error (``load_document``), which bounds its
    nesting; libyaml may then compose it whatever its size (see exact_yaml._LIBYAML_MAX_NESTING).
    """

    def __init__(self, chunk: Chunk, *, loaded: bool = False) -> None:
        self.chunk = chunk
        self.loaded = loaded
        self._lines: NodeLines | None = None
        self._composed = False

    def _node_lines(self) -> NodeLines | None:
        if not self._composed:
            self._composed = True
            from jobgate.offline.exact_yaml import take_composed  # the exact path's composer, not at start-up

            try:
                root = take_composed(self.chunk, self.loaded)
            except LoadError:
                root = None
            if root is not None:
                from jobgate.offline.lines import NodeLines  # only documents with findings need it

                self._lines = NodeLines(root, self.chunk.first_line)
        return self._lines

    @property
    def line(self) -> int:
        lines = self._node_lines()
        return self.chunk.first_line if lines is None else lines.line

    def line_of(self, path: Sequence[Any]) -> int:
        """Line of the deepest part of ``path`` that exists in the document."""
        lines = self._node_lines()
        return self.chunk.first_line if lines is None else lines.line_of(path)


def iter_documents(text: str) -> Iterator[tuple[Chunk, Any]]:
    """(chunk, data) for every document; a LoadError names the failing document's line."""
    for chunk in split_documents(text):
        yield chunk, load_document(chunk)
