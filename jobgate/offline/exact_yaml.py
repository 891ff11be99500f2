"""The exact path: a YAML document composed into a node graph and resolved with go-yaml v2's rules.

kubectl converts YAML to JSON with sigs.k8s.io/yaml, which parses with go-yaml v2 (YAML 1.1);
``offline.loader``'s fast path reads with a YAML 1.2 parser and hands here every document where
the two may disagree or that it cannot read: the rare YAML 1.1 tokens, parse errors, duplicate
keys, deep nesting. This path is about ten times slower and the reference for both.

The document is composed with ruamel.yaml, which keeps each scalar's style and tag (by libyaml
instead, in C, where it composes exactly as ruamel does), and every plain scalar is resolved as
go-yaml v2 resolves it (``resolve_plain``); the same node graphs give a document's lines
(``offline.loader.Locator``). ruamel's error messages and lines are the ones reported.

Every reading is bounded: nesting deeper than ``MAX_DEPTH`` (flow nesting is stopped while
scanning), a number longer than ``MAX_NUMBER_DIGITS`` and excessive aliasing are refused with
a one-line ``LoadError``.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from typing import Any

from jobgate.offline.documents import (
    INT64_MAX,
    INT64_MIN,
    MAX_DEPTH,
    MAX_NUMBER_DIGITS,
    Chunk,
    LoadError,
    json_number,
)

_UINT64_MAX = 2**64 - 1
_SURROGATE = re.compile("[\ud800-\udfff]")

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
    if INT64_MIN <= value <= _UINT64_MAX and not (sign < 0 and value < INT64_MIN):
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
            return integer if integer <= INT64_MAX else float(integer)
        if _YAML_FLOAT.fullmatch(plain):
            number = float(plain)
            if not math.isinf(number):  # Go's ParseFloat fails on overflow: the scalar stays a string
                return json_number(number)
        elif plain.startswith(("0b", "-0b")):  # go-yaml v2's own binary fallback
            digits = plain[3:] if plain[0] == "-" else plain[2:]
            if digits and set(digits) <= {"0", "1"}:
                value = int(digits, 2) * (-1 if plain[0] == "-" else 1)
                if INT64_MIN <= value <= INT64_MAX:
                    return value
        if text.startswith(("+.", "-.")) and text in _SPECIAL_FLOATS:
            raise LoadError(f"json: unsupported value: {text} (kubectl cannot convert it to JSON)", line)
        return text
    if first == ".":
        if text in _SPECIAL_FLOATS:
            raise LoadError(f"json: unsupported value: {text} (kubectl cannot convert it to JSON)", line)
        if _YAML_FLOAT.fullmatch(text):  # go-yaml's "." hint: strconv.ParseFloat, no underscores
            number = float(text)
            if not math.isinf(number):  # Go's ParseFloat fails on overflow: the scalar stays a string
                return json_number(number)
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


def load_exact(chunk: Chunk, notes: list[tuple[int, str]] | None = None) -> Any:
    """The document as the plain JSON data kubectl sends (None for an empty document).

    ``notes`` as for ``offline.loader.load_document``.
    """
    node = _compose(chunk)
    if node is None:
        return None
    try:
        return _Resolver(chunk.first_line, notes).value(node, 0)
    except RecursionError:
        raise LoadError(f"nesting deeper than {MAX_DEPTH} levels", chunk.first_line) from None


def take_composed(chunk: Chunk, nesting_checked: bool = False) -> Any:
    """The document's node graph (None for an empty document), which the caller keeps.

    ``nesting_checked``: the document's data was read without error (see _LIBYAML_MAX_NESTING).
    """
    try:
        return _compose(chunk, nesting_checked)
    finally:
        if _LAST_COMPOSED[0] is chunk:
            # Taken once: the graph now lives as long as the caller keeps it, not until the next
            # document is composed (or, for the last one, until the interpreter exits, where
            # freeing a large graph cost seconds).
            _LAST_COMPOSED[0] = _LAST_COMPOSED[1] = None
