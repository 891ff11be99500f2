"""YAML and JSON manifests read exactly as ``kubectl`` reads them, fast.

kubectl converts YAML to JSON with sigs.k8s.io/yaml, which parses with go-yaml v2: YAML 1.1
scalars (``yes``/``on``/``y`` are booleans, ``0777`` is octal, underscores in numbers are
dropped, no sexagesimal), timestamps kept as the string written, ``!!binary`` decoded,
``<<`` merge keys, the last of duplicate keys kept, "excessive aliasing" refused; then JSON
turns every integral float into an integer, and ``.inf``/``.nan`` cannot be encoded at all.

Two paths produce exactly that data:

- the fast path parses with yaml-rs (a Rust YAML 1.2 parser, about 50,000 small
  documents/s) and fixes its result in one walk. Documents where YAML 1.1 and 1.2 may
  disagree (``yes``, ``0777``, ``1_000``, a tag, a merge key, ...) take the exact path
  instead: a cheap pre-scan of the text and the walk over the result find them, because
  after parsing a quoted ``"yes"`` and a plain ``yes`` can no longer be told apart.
- the exact path composes the document with ruamel.yaml (which keeps each scalar's style
  and tag) and resolves every plain scalar with go-yaml v2's rules. It is ten times slower,
  so it serves only documents the fast path cannot take: the rare YAML 1.1 tokens, parse
  errors (its messages and lines are the better ones), duplicate keys, deep nesting.

Lines are found only when a document has something to report: ``Locator`` composes it then and
``webhook.lines`` follows each finding's path in the node graph.

Every input is bounded (the limits are in the README): a document over
``MAX_DOCUMENT_BYTES``, nesting deeper than ``MAX_DEPTH``, a number longer than
``MAX_NUMBER_DIGITS`` or excessive aliasing is refused with a one-line message
(``MAX_FILE_BYTES`` is enforced where files are read, ``webhook.sources``).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jobgate.webhook.lines import NodeLines

MAX_FILE_BYTES = 32 * 1024 * 1024
# The apiserver refuses request bodies over 3 MiB; a manifest larger than that cannot be applied.
MAX_DOCUMENT_BYTES = 3 * 1024 * 1024
MAX_DEPTH = 100
MAX_NUMBER_DIGITS = 1000

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_UINT64_MAX = 2**64 - 1

# Where YAML 1.1 (go-yaml v2) and YAML 1.2 (yaml-rs) read a plain scalar differently, and how
# the fast path notices (without a per-character regular expression, which costs more than the
# parse itself):
# - the 1.1 booleans (yes, on, y, ...) parse as strings in 1.2: every string value and key is
#   looked up in _YAML11_WORDS after parsing (a quoted "yes" goes the exact way too, harmless);
# - octal 0777, underscores (1_000, _1), signed or upper-case radix prefixes parse as other
#   numbers: _ZERO_HINT and _UNDERSCORE_HINT find candidates, _YAML11_NUMBER confirms the token;
# - tags (!!binary, !!str) and merge keys (<<): found by substring.
_YAML11_WORDS = frozenset(
    ("y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF")
)
# Patterns with a literal first character: the regular-expression engine skips to them at C speed.
_ZERO_HINT = re.compile(r"0[0-9_xXoObB]")
_UNDERSCORE_HINT = re.compile(r"_")
_YAML11_NUMBER = re.compile(
    r"[-+]?(?:0[0-9_][0-9a-zA-Z_.+-]*|_[0-9a-zA-Z_.+-]*|[0-9][0-9.eE+-]*_[0-9a-zA-Z_.+-]*|0[XOB][0-9a-fA-F_]*)"
    r"|[-+]0[xXoObB][0-9a-fA-F_]*"
)
_TOKEN_DELIMITERS = frozenset(" \t\r\n[]{},#")
_SCALAR_PREFIX = re.compile(r"[ \t]*(?:[-?:][ \t]+)*")
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
    if _SCALAR_PREFIX.fullmatch(prefix):
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


def has_yaml11_numbers(text: str) -> bool:
    """Whether a plain scalar of ``text`` is a number YAML 1.1 reads differently (0777, 1_000, -0x1F)."""
    for match in _ZERO_HINT.finditer(text):
        start, token = _token_at(text, match.start())
        if _YAML11_NUMBER.fullmatch(token) and _starts_scalar(text, start):
            return True
    for match in _UNDERSCORE_HINT.finditer(text):
        position = match.start()
        before = text[position - 1 : position]
        after = text[position + 1 : position + 2]
        if not (before.isdigit() or after.isdigit()):
            continue  # NCCL_DEBUG, not a number
        start, token = _token_at(text, position)
        if _YAML11_NUMBER.fullmatch(token) and _starts_scalar(text, start):
            return True
    return False


def has_yaml11_tokens(text: str) -> bool:
    """What the fast path cannot see after parsing: tags, merge keys, 1.1-only numbers."""
    return "!" in text or "<<" in text or has_yaml11_numbers(text)


_DOCUMENT_START = re.compile(r"^---(?=[ \t\r]|$)", re.MULTILINE)
_SURROGATE = re.compile("[\ud800-\udfff]")


class LoadError(Exception):
    """A document that kubectl could not turn into JSON, or one past a stated limit."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


class _NeedsExactPath(Exception):
    pass


@dataclass(frozen=True, slots=True)
class Chunk:
    """One document's text and the line (1-based) of the file it starts on."""

    text: str
    first_line: int

    @property
    def content_line(self) -> int:
        """The first line that is not blank or a comment: where the document starts for a reader."""
        position, line = 0, self.first_line
        while position < len(self.text):
            end = self.text.find("\n", position)
            end = len(self.text) if end < 0 else end
            stripped = self.text[position:end].strip()
            if stripped and not stripped.startswith(("#", "%")):
                return line
            position, line = end + 1, line + 1
        return self.first_line


def split_documents(text: str) -> list[Chunk]:
    """Split at ``---`` lines, as kubectl's YAML reader does (only a comment may follow them)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\n---" not in text and not text.startswith("---"):
        return [Chunk(text, 1)]
    chunks: list[Chunk] = []
    start, line = 0, 1
    for match in _DOCUMENT_START.finditer(text):
        end_of_line = text.find("\n", match.end())
        end_of_line = len(text) if end_of_line < 0 else end_of_line
        rest = text[match.end() : end_of_line].strip()
        separator_line = line + text.count("\n", start, match.start())
        if rest and not rest.startswith("#"):
            raise LoadError("invalid YAML document separator: only a comment may follow ---", separator_line)
        chunks.append(Chunk(text[start : match.start()], line))
        start, line = end_of_line + 1, separator_line + 1
    chunks.append(Chunk(text[start:], line))
    return chunks


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
        except _NeedsExactPath:
            pass
    elif _fast_path_applies(text):
        try:
            return _fast_yaml(text)
        except _NeedsExactPath:
            pass
    return _exact(chunk, notes)


# Characters YAML does not allow in a stream (go-yaml: "control characters are not allowed");
# yaml-rs lets some through, ruamel refuses them with their line.
_NOT_YAML_CHARACTERS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff\ufffe\uffff]")


def _has_control_characters(text: str) -> bool:
    if text.isascii():  # the common case, at C speed
        return not text.replace("\n", "").replace("\t", "").replace("\r", "").isprintable()
    return _NOT_YAML_CHARACTERS.search(text) is not None


def _fast_path_applies(text: str) -> bool:
    if has_yaml11_tokens(text) or _has_control_characters(text):
        return False
    return len(text) <= _FAST_PATH_ANY_SHAPE or max(map(len, text.splitlines())) <= _FAST_PATH_MAX_LINE


def _fast_json(text: str) -> Any:
    import orjson

    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise _NeedsExactPath from None
    return _to_json_data(data, 0)


def _fast_yaml(text: str) -> Any:
    import yaml_rs

    try:
        data = yaml_rs.loads(text, parse_datetime=False)
    except Exception:
        # Parse errors, duplicate keys, aliasing past yaml-rs's limits, overlong integers, a key
        # that holds a list (TypeError: unhashable), whatever else yaml-rs may raise on hostile
        # text: the exact path (the reference) says what it is, with the line.
        raise _NeedsExactPath from None
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
        raise _NeedsExactPath
    if kind is float:
        return _json_number(data)
    if kind is int and not _INT64_MIN <= data <= _INT64_MAX:
        raise _NeedsExactPath
    return data


def _fix_container(container: Any, depth: int) -> None:
    # Hot: one call per mapping or list, leaves handled inline.
    if depth >= MAX_DEPTH:
        raise _NeedsExactPath
    is_mapping = type(container) is dict
    items = container.items() if is_mapping else enumerate(container)
    words = _YAML11_WORDS
    for key, item in items:
        if is_mapping and (type(key) is not str or key in words):
            raise _NeedsExactPath
        kind = type(item)
        if kind is str:
            if item in words:
                raise _NeedsExactPath
            continue
        if kind is bool or item is None:
            continue
        if kind is dict or kind is list:
            _fix_container(item, depth + 1)
        elif kind is int:
            if not _INT64_MIN <= item <= _INT64_MAX:
                raise _NeedsExactPath
        elif kind is float:
            container[key] = _json_number(item)  # replaces a value: the size does not change
        else:
            raise _NeedsExactPath


def _json_number(value: float) -> int | float:
    if math.isinf(value) or math.isnan(value):
        raise _NeedsExactPath
    # Go's JSON writes an integral float without a fraction; the apiserver reads it as an integer.
    if value.is_integer() and _INT64_MIN <= value <= _INT64_MAX and abs(value) < 1e21:
        return int(value)
    return value


# --- the exact path: ruamel's node graph resolved with go-yaml v2's rules -------------------

_TAG = "tag:yaml.org,2002:"
# The tag our resolver gives every plain scalar without an explicit tag: resolved by go-yaml's rules.
_PLAIN = "tag:jobgate,plain"
_BOOLEANS = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE"), True),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE"), False),
}
_NULLS = frozenset(("", "~", "null", "Null", "NULL"))
_SPECIAL_FLOATS = {
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
}
_YAML_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_GO_INT = re.compile(r"[-+]?(?:0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)")


def _go_parse_int(text: str) -> int | None:
    """strconv.ParseInt/ParseUint with base 0, as go-yaml v2 calls them (underscores already gone)."""
    if _GO_INT.fullmatch(text) is None:
        return None
    sign = -1 if text[0] == "-" else 1
    digits = text.lstrip("+-")
    prefix = digits[:2].lower()
    if prefix in ("0x", "0o", "0b"):
        value = int(digits[2:], {"0x": 16, "0o": 8, "0b": 2}[prefix])
    elif len(digits) > 1 and digits[0] == "0":
        value = int(digits[1:], 8)
    else:
        value = int(digits)
    value *= sign
    if _INT64_MIN <= value <= _UINT64_MAX and not (sign < 0 and value < _INT64_MIN):
        return value
    return None


def resolve_plain(text: str, line: int | None = None) -> Any:
    """A plain (unquoted, untagged) scalar as go-yaml v2 resolves it and JSON then carries it."""
    if text in _BOOLEANS:
        return _BOOLEANS[text]
    if text in _NULLS:
        return None
    first = text[0]
    if first in "+-0123456789":
        plain = text.replace("_", "")
        if len(plain) > MAX_NUMBER_DIGITS and plain.lstrip("+-").replace(".", "").isdigit():
            raise LoadError(f"number of {len(plain)} characters is longer than {MAX_NUMBER_DIGITS}", line)
        integer = _go_parse_int(plain) if len(plain) <= 100 else None
        if integer is not None:
            # The apiserver reads integers beyond int64 as floats.
            return integer if integer <= _INT64_MAX else float(integer)
        if _YAML_FLOAT.fullmatch(plain):
            number = float(plain)
            if not math.isinf(number):  # Go's ParseFloat fails on overflow: the scalar stays a string
                return _json_number(number)
        elif plain.startswith(("0b", "-0b")):  # go-yaml v2's own binary fallback
            digits = plain[3:] if plain[0] == "-" else plain[2:]
            if digits and set(digits) <= {"0", "1"}:
                value = int(digits, 2) * (-1 if plain[0] == "-" else 1)
                if _INT64_MIN <= value <= _INT64_MAX:
                    return value
        if text.startswith(("+.", "-.")) and text in _SPECIAL_FLOATS:
            raise LoadError(f"json: unsupported value: {text} (kubectl cannot convert it to JSON)", line)
        return text
    if first == ".":
        if text in _SPECIAL_FLOATS:
            raise LoadError(f"json: unsupported value: {text} (kubectl cannot convert it to JSON)", line)
        if _YAML_FLOAT.fullmatch(text):  # go-yaml's "." hint: strconv.ParseFloat, no underscores
            return _json_number(float(text))
    return text


def _allowed_alias_ratio(decode_count: int) -> float:
    # go-yaml v2's bound on aliasing ("excessive aliasing"), which sigs.k8s.io/yaml inherits.
    if decode_count <= 400_000:
        return 0.99
    if decode_count >= 4_000_000:
        return 0.10
    return 0.99 - 0.89 * (decode_count - 400_000) / 3_600_000


class _Resolver:
    def __init__(self, first_line: int, notes: list[tuple[int, str]] | None = None) -> None:
        self.first_line = first_line
        self.notes = notes if notes is not None else []
        self.decoded = 0
        self.aliased = 0
        self.alias_depth = 0
        self.seen: set[int] = set()

    def line(self, node: Any) -> int:
        return self.first_line + node.start_mark.line

    def value(self, node: Any, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise LoadError(f"nesting deeper than {MAX_DEPTH} levels", self.line(node))
        self.decoded += 1
        identity = id(node)
        kind = node.id  # "scalar", "sequence" or "mapping": the same in ruamel's nodes and PyYAML's
        aliased = identity in self.seen and kind != "scalar"
        if aliased:
            self.alias_depth += 1
        self.seen.add(identity)
        if self.alias_depth:
            self.aliased += 1
            if (
                self.aliased > 100
                and self.decoded > 1000
                and self.aliased / self.decoded > _allowed_alias_ratio(self.decoded)
            ):
                raise LoadError("document contains excessive aliasing", self.line(node))
        try:
            if kind == "scalar":
                return self.scalar(node)
            if kind == "sequence":
                return [self.value(item, depth + 1) for item in node.value]
            if kind == "mapping":
                return self.mapping(node, depth)
            raise LoadError(f"unsupported YAML node {type(node).__name__}", self.line(node))
        finally:
            if aliased:
                self.alias_depth -= 1

    def scalar(self, node: Any) -> Any:
        tag = node.tag if isinstance(node.tag, str) else str(node.tag)
        text = node.value
        if _SURROGATE.search(text):
            # Go writes an escaped lone surrogate as bytes that JSON replaces with U+FFFD.
            text = _SURROGATE.sub("\ufffd", text)
        if tag == _PLAIN:
            return resolve_plain(text, self.line(node)) if text else None
        if tag == _TAG + "binary":
            try:
                decoded = base64.b64decode("".join(text.split()), validate=True)
            except (binascii.Error, ValueError):
                raise LoadError("!!binary value is not base64", self.line(node)) from None
            return decoded.decode("utf-8", "replace")
        if tag in (_TAG + "int", _TAG + "float", _TAG + "bool", _TAG + "null") and text:
            return resolve_plain(text, self.line(node))
        # !!str, !!timestamp (kept as written, like go-yaml v2 into an interface{}), custom tags.
        return text

    def mapping(self, node: Any, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        explicit: set[str] = set()
        for key_node, value_node in node.value:
            if str(key_node.tag) in (_TAG + "merge", _PLAIN) and key_node.value == "<<":
                sources = value_node.value if value_node.id == "sequence" else [value_node]
                for source in sources:
                    if source.id != "mapping":
                        raise LoadError("map merge requires map or sequence of maps as the value", self.line(source))
                    out.update(self.value(source, depth + 1))
                continue
            key = self.key(key_node, depth)
            if key in explicit:
                # kubectl (sigs.k8s.io/yaml, non-strict) keeps the last value, and so does the cluster.
                self.notes.append((self.line(key_node), f'duplicate key "{key}": kubectl keeps the last value'))
            explicit.add(key)
            out[key] = self.value(value_node, depth + 1)
        return out

    def key(self, node: Any, depth: int) -> str:
        if node.id != "scalar":
            raise LoadError("a mapping key must be a scalar (JSON has only string keys)", self.line(node))
        key = self.value(node, depth + 1)
        return _json_key(key, self.line(node))


def _json_key(key: Any, line: int) -> str:
    """sigs.k8s.io/yaml's conversion of a non-string key."""
    if isinstance(key, str):
        return key
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return go_format_float(key)
    raise LoadError(f"unsupported mapping key {key!r}", line)


def go_format_float(value: float) -> str:
    """strconv.FormatFloat(value, 'g', -1, 64)."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    from decimal import Decimal  # rare (float keys): not imported at start-up

    sign, digit_tuple, exponent = Decimal(repr(value)).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple)) or "0"
    assert isinstance(exponent, int)
    point = len(digits) + exponent  # position of the decimal point
    exp = point - 1
    neg = "-" if sign else ""
    if digits == "0":
        return neg + "0"
    if exp < -4 or exp >= 21:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{neg}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{neg}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return neg + digits + "0" * (point - len(digits))
    return f"{neg}{digits[:point]}.{digits[point:]}"


_RESOLVER: Any = None


def _plain_marking_resolver() -> Any:
    """ruamel's resolver, except that plain scalars keep a marker tag instead of YAML 1.2's types."""
    global _RESOLVER  # noqa: PLW0603 - built once, on the first document that needs it
    if _RESOLVER is None:
        from ruamel.yaml.nodes import ScalarNode
        from ruamel.yaml.resolver import VersionedResolver
        from ruamel.yaml.tag import Tag

        plain = Tag(suffix=_PLAIN)

        class PlainMarkingResolver(VersionedResolver):  # type: ignore[misc]
            def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
                if kind is ScalarNode and implicit[0]:
                    return plain
                return super().resolve(kind, value, implicit)

        _RESOLVER = PlainMarkingResolver
    return _RESOLVER


# The last chunk composed and its node: a document that took the exact path and then has
# findings to locate is composed once, not twice.
_LAST_COMPOSED: list[Any] = [None, None]


def _compose(chunk: Chunk, nesting_checked: bool = False) -> Any:
    if _LAST_COMPOSED[0] is chunk:
        return _LAST_COMPOSED[1]
    node = _compose_uncached(chunk, nesting_checked)
    _LAST_COMPOSED[0], _LAST_COMPOSED[1] = chunk, node
    return node


# libyaml composes in C, about a hundred times faster than ruamel. It is used only where it reads
# a document exactly as ruamel does (tests/unit/test_loader_libyaml.py compares both node graphs,
# lines included, over the examples and the fuzzer's inputs); everything else goes to ruamel,
# whose error messages are the reference:
# - non-ASCII text (YAML 1.1 and 1.2 differ on the line breaks \x85, \u2028, \u2029);
# - a document libyaml refuses, or one with a tab (libyaml accepts some that ruamel refuses);
# - an empty plain value (``key:`` and nothing): libyaml puts it on the key's line, ruamel on
#   the next token's, and a message may name that line;
# - a document that may nest deeper than _LIBYAML_MAX_NESTING levels (each level needs one of
#   ``[{-?:`` or a line break): libyaml's composer recurses in C without a limit (a segmentation
#   fault past ~100,000 levels). That count is a crude bound, passed by any large document; a
#   document whose data was read without error nests at most MAX_DEPTH levels (1,024 for a value
#   that orjson read and a later duplicate key replaced), so it may skip the count unless a
#   document end marker (``...``) hides further, unread documents after it.
_LIBYAML_MAX_NESTING = 20_000
_NESTING_CHARACTERS = "[{-?:\n"
_LIBYAML_LOADER: Any = None


def _libyaml_loader() -> Any:
    global _LIBYAML_LOADER  # noqa: PLW0603 - built once, on the first document that needs it
    if _LIBYAML_LOADER is None:
        try:
            from yaml import ScalarNode
            from yaml.cyaml import CParser
            from yaml.resolver import BaseResolver
        except ImportError:  # PyYAML built without libyaml: ruamel does all the work
            _LIBYAML_LOADER = False
            return _LIBYAML_LOADER

        class PlainMarkingCLoader(CParser, BaseResolver):  # type: ignore[misc]
            def __init__(self, stream: str) -> None:
                CParser.__init__(self, stream)
                BaseResolver.__init__(self)
                self.empty_plain_scalars = False

            def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
                if kind is ScalarNode and implicit[0]:
                    if not value:
                        self.empty_plain_scalars = True
                    return _PLAIN
                return super().resolve(kind, value, implicit)

        _LIBYAML_LOADER = PlainMarkingCLoader
    return _LIBYAML_LOADER


def _compose_libyaml(text: str, nesting_checked: bool = False) -> tuple[bool, Any]:
    """(True, node) when libyaml composes ``text`` as ruamel would; (False, None) to ask ruamel.

    ``nesting_checked``: the document's data was read without error (see _LIBYAML_MAX_NESTING).
    """
    if not text.isascii() or "\t" in text:
        return False, None
    bounded = nesting_checked and not (text.startswith("...") or "\n..." in text)
    if not bounded and sum(map(text.count, _NESTING_CHARACTERS)) > _LIBYAML_MAX_NESTING:
        return False, None
    loader_class = _libyaml_loader()
    if not loader_class:
        return False, None
    loader = loader_class(text)
    try:
        nodes = []
        while loader.check_node():
            nodes.append(loader.get_node())
    except Exception:  # any refusal is ruamel's to explain
        return False, None
    finally:
        loader.dispose()
    if loader.empty_plain_scalars:
        return False, None
    return True, nodes[0] if nodes else None


def _compose_uncached(chunk: Chunk, nesting_checked: bool = False) -> Any:
    composed, node = _compose_libyaml(chunk.text, nesting_checked)
    if composed:
        return node
    return _compose_ruamel(chunk)


# ruamel's scanner keeps a possible simple key for every flow level (a ``[`` may start a key) until
# it is resolved or stale (past the line or 1,024 characters), and walks all of them for every
# token: ``[`` * 50,000 took 16 s before its composer ran out of recursion. The scanner below
# applies ruamel's rules in constant (amortised) time per token, and stops flow nesting where
# ruamel's composer, which recurses at least twice per level, could not finish at Python's
# default recursion limit (1,000 frames): the answer is the one its RecursionError gives, found
# before a deep graph is built.
_RUAMEL_MAX_FLOW_LEVEL = 1000


class _FlowTooDeep(Exception):
    pass


_SCANNER: Any = None


def _bounded_scanner() -> Any:
    global _SCANNER  # noqa: PLW0603 - built once, on the first document that needs it
    if _SCANNER is None:
        from ruamel.yaml.scanner import RoundTripScanner, ScannerError

        # possible_simple_keys (flow level → key) gains a key only after removing that level's
        # old one, so its order is the text's: the first key is the nearest, and the stale ones
        # (an earlier line, or more than 1,024 characters back) come first.
        class BoundedScanner(RoundTripScanner):  # type: ignore[misc]
            def fetch_flow_collection_start(self, TokenClass: Any, to_push: str) -> None:
                if self.flow_level >= _RUAMEL_MAX_FLOW_LEVEL:
                    raise _FlowTooDeep
                super().fetch_flow_collection_start(TokenClass, to_push)

            def next_possible_simple_key(self) -> int | None:
                for key in self.possible_simple_keys.values():
                    return int(key.token_number)
                return None

            def stale_possible_simple_keys(self) -> None:
                keys = self.possible_simple_keys
                reader = self.reader
                while keys:
                    level = next(iter(keys))
                    key = keys[level]
                    if key.line == reader.line and reader.index - key.index <= 1024:
                        return  # and so are all later keys
                    if key.required:
                        raise ScannerError(
                            "while scanning a simple key", key.mark, "could not find expected ':'", reader.get_mark()
                        )
                    del keys[level]

        _SCANNER = BoundedScanner
    return _SCANNER


def _compose_ruamel(chunk: Chunk) -> Any:
    import warnings

    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, ReusedAnchorWarning, YAMLError

    yaml = YAML(typ="rt")
    yaml.Resolver = _plain_marking_resolver()
    yaml.Scanner = _bounded_scanner()
    try:
        with warnings.catch_warnings():
            # go-yaml lets an anchor be defined again (the latest counts), as ruamel does; its
            # warning would only add a multi-line report to a one-line answer.
            warnings.simplefilter("ignore", ReusedAnchorWarning)
            nodes = list(yaml.compose_all(chunk.text))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = chunk.first_line + mark.line if mark is not None else chunk.first_line
        problem = exc.problem or exc.context or "invalid YAML"
        raise LoadError(f"cannot parse YAML: {problem}", line) from None
    except YAMLError as exc:
        raise LoadError(f"cannot parse YAML: {str(exc).splitlines()[0]}", chunk.first_line) from None
    except (RecursionError, _FlowTooDeep):
        raise LoadError(f"nesting deeper than {MAX_DEPTH} levels", chunk.first_line) from None
    # go-yaml reads the first document of a chunk; a chunk has one unless ``...`` ends it early.
    return nodes[0] if nodes else None


def _exact(chunk: Chunk, notes: list[tuple[int, str]] | None = None) -> Any:
    node = _compose(chunk)
    if node is None:
        return None
    try:
        return _Resolver(chunk.first_line, notes).value(node, 0)
    except RecursionError:
        raise LoadError(f"nesting deeper than {MAX_DEPTH} levels", chunk.first_line) from None


def load_exact(chunk: Chunk, notes: list[tuple[int, str]] | None = None) -> Any:
    """The exact path alone (for tests that compare both paths)."""
    return _exact(chunk, notes)


# --- lines, only for documents with something to report --------------------------------------


class Locator:
    """Field path → line of a document, composed on first use.

    ``loaded``: the chunk's data was read without error (``load_document``), which bounds its
    nesting; libyaml may then compose it whatever its size (see _LIBYAML_MAX_NESTING).
    """

    def __init__(self, chunk: Chunk, *, loaded: bool = False) -> None:
        self.chunk = chunk
        self.loaded = loaded
        self._lines: NodeLines | None = None
        self._composed = False

    def _node_lines(self) -> NodeLines | None:
        if not self._composed:
            self._composed = True
            try:
                root = _compose(self.chunk, self.loaded)
            except LoadError:
                root = None
            if _LAST_COMPOSED[0] is self.chunk:
                # Located once: the graph now lives as long as this locator, not until the next
                # document is composed (or, for the last one, until the interpreter exits, where
                # freeing a large graph cost seconds).
                _LAST_COMPOSED[0] = _LAST_COMPOSED[1] = None
            if root is not None:
                from jobgate.webhook.lines import NodeLines  # only documents with findings need it

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
