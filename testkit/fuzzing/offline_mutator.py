"""Mutations of manifest files, and the oracle every ``jobgate validate`` / ``review`` answer must pass.

Shared by the CI slice (``tests/unit/test_loader_fuzz.py``, fixed seeds) and the bench run
(``bench/fuzz_offline.py``, a million inputs). Seeds are the files in ``examples/``.

Inputs are bytes, as a file holds them, made by a seeded loop (reproducible input by input):

- text mutations of an example: hostile tokens (YAML 1.1 words, octal, tags, anchors and
  aliases, merge keys, flow brackets, huge numbers, control characters, surrogates) inserted
  at random places or as a value; lines cut, duplicated, swapped, re-indented; documents
  spliced from other examples; truncation; ``---`` separators; alias bombs and deep nesting;
- structure mutations: an example's data mutated with the review fuzzer's tree operations
  (types swapped, subtrees moved, keys renamed, deep values) and written back as YAML or JSON;
- damage below the text: invalid UTF-8, a BOM, CRLF line ends.

The oracle: what the command does with one file must end in a defined way: a result per
document (admitted, denied, skipped, or an error with a one-line reason), exit 0/1/2, output
that prints as UTF-8; ``jobgate review`` on the same text either a one-line refusal or an
AdmissionReview that is not an internal error. Anything else raises: a finding.
"""

from __future__ import annotations

import contextlib
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from testkit.fuzzing.review_mutator import Finding, containers_of, random_value, review_of
from testkit.fuzzing.review_mutator import _mutate_node as mutate_node

REPO = Path(__file__).resolve().parents[2]
SOURCE = "fuzz.yaml"

_HOSTILE_SCALARS = [
    "yes", "no", "on", "Off", "y", "N", "0777", "-0777", "0o17", "0x1F", "-0x1F", "+0b101", "0b2", "1_000",
    "_1", "1__0", "1_0.5_0", ".inf", "-.Inf", "+.inf", ".nan", ".5", "1e400", "-1e400", "1e-400", "1.0",
    "2.0e3", "~", "null", "Null", "''", '""', "true", "FALSE", "2001-12-14t21:59:43.10-05:00",
    "2002-12-14", "!!binary aGVsbG8=", "!!binary ***", "!!str 1", "!!int 12", "!!float 1", "!!bool yes",
    "!!null x", "!!map {}", "!foo bar", '"\\ud800"', '"\\udfff x"', '"\\x00"', '"\\U0001F600"', "'it''s'",
    "9" * 19, "9" * 20, "9" * 1000, "9" * 1001, "-" + "9" * 1001, "1" + "0" * 400, "[]", "{}", "[1, [2]]",
    "{a: 1, a: 2}", "|\n  block", ">-\n  folded", "&anchor value", "*anchor", "*undefined",
    "Worker", "worker", "Never", "ExitCode", "-1", "0", "2147483648", "9223372036854775808",
    "18446744073709551616", "100Mi", "1e300", "0.000000000000000000001", "nvidia.com/gpu",
]  # fmt: skip
_HOSTILE_TOKENS = [
    *_HOSTILE_SCALARS,
    "<<: *a", "<<: {x: 1}", "<<: [*a]", "<<: 1", "? [a]", "? {a: 1}", "? a", "[", "]", "{", "}", ",", "- ",
    "---", "...", "%YAML 1.1\n---\n", "%TAG ! tag:x,2000:\n---\n", "'", '"', "\t", "\x00", "\x07", "\x1b",
    "\x7f", "\x85", "\u2028", "\ufeff", "\ufffe", "\ud800", "\U0001f600", "é", "#", ": ", ":", "|", ">",
    "\\", "%", "@", "`", "&a", "*a", "&a [1]", "\r", "\r\n", "\n", "\n\n", " " * 3,
]  # fmt: skip


def example_texts() -> list[str]:
    return [p.read_text() for p in sorted((REPO / "examples").rglob("*.yaml"))]


def example_documents(texts: list[str]) -> list[Any]:
    return [d for text in texts for d in yaml.safe_load_all(text) if isinstance(d, dict)]


def _alias_bomb(rng: random.Random) -> str:
    width, levels = rng.choice([(2, 4), (9, 3), (9, 9), (10, 6), (3, 20)])
    lines = ["a0: &a0 [x, y]"]
    for level in range(1, levels + 1):
        aliases = ", ".join([f"*a{level - 1}"] * width)
        lines.append(f"a{level}: &a{level} [{aliases}]")
    return "\n".join(lines) + "\n"


def _deep(rng: random.Random) -> str:
    # Deep documents cost the parser time in proportion to the square of their depth (ruamel's
    # scanner); a few very deep ones are enough to keep the classes covered.
    levels = rng.choice([50, 99, 100, 101, 102, 150, 300] * 8 + [1000, 5000])
    style = rng.randrange(3)
    if style == 0:
        return "[" * levels + "]" * levels
    if style == 1:
        return "{a: " * levels + "1" + "}" * levels
    return "".join(f"{'  ' * n}- \n" for n in range(min(levels, 300)))


def mutate_text(text: str, texts: list[str], rng: random.Random) -> str:
    for _ in range(rng.choice([1, 1, 2, 3, 5])):
        lines = text.split("\n")
        op = rng.randrange(14)
        line = rng.randrange(len(lines))
        if op == 0:  # a hostile token anywhere
            position = rng.randrange(len(text) + 1)
            text = text[:position] + rng.choice(_HOSTILE_TOKENS) + text[position:]
            continue
        if op <= 2:  # a hostile value where a value was
            current = lines[line]
            colon = current.find(": ")
            if colon >= 0:
                lines[line] = current[: colon + 2] + rng.choice(_HOSTILE_SCALARS)
            elif current.lstrip().startswith("- "):
                lines[line] = current[: current.index("- ") + 2] + rng.choice(_HOSTILE_SCALARS)
            else:
                lines[line] = current + rng.choice(_HOSTILE_TOKENS)
        elif op == 3:  # a span cut
            position = rng.randrange(len(text) + 1)
            text = text[:position] + text[position + rng.randrange(1, 60) :]
            continue
        elif op == 4:  # lines duplicated (duplicate keys, repeated items)
            end = min(len(lines), line + rng.choice([1, 1, 3, 8]))
            lines[line:line] = lines[line:end] * rng.choice([1, 1, 2, 2, 50])
        elif op == 5:
            other = rng.randrange(len(lines))
            lines[line], lines[other] = lines[other], lines[line]
        elif op == 6:  # indentation changed
            current = lines[line]
            stripped = current.lstrip(" ")
            indent = len(current) - len(stripped) + rng.choice([-2, -1, 1, 2, 4])
            lines[line] = rng.choice([" ", "\t"]) * max(indent, 0) + stripped
        elif op == 7:  # truncated
            return text[: rng.randrange(len(text) + 1)]
        elif op == 8:  # spliced with another example
            other = rng.choice(texts).split("\n")
            start = rng.randrange(len(other))
            lines[line:line] = other[start : start + rng.randrange(1, 30)]
        elif op == 9:  # more documents
            lines.insert(line, rng.choice(["---", "--- # c", "---x", "...", "--- |", "---\t"]))
        elif op == 10:  # anchors and aliases, merge keys
            current = lines[line]
            if current.rstrip().endswith(":"):
                lines[line] = current + " &a"
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(["x: *a", "<<: *a", "- *a", "  <<: *a", "*a"]))
        elif op == 11 and rng.random() < 0.25:  # rare: the slowest inputs to check
            lines.insert(line, rng.choice([_alias_bomb(rng), _deep(rng)]))
        elif op == 12:  # one character replaced by an odd one
            position = rng.randrange(len(text) + 1)
            odd = rng.choice(["\x00", "\x01", "\x0b", "\x85", "\u2028", "\ud800", "\U0010ffff", "\t", "'", '"', ":"])
            text = text[:position] + odd + text[position + 1 :]
            continue
        else:  # a key renamed (case, unknown fields)
            current = lines[line]
            colon = current.find(":")
            if colon > 0:
                key = current[:colon]
                lines[line] = rng.choice([key.upper(), key.lower(), key + "x", key + key]) + current[colon:]
        text = "\n".join(lines)
    return text


def _dump(document: Any, rng: random.Random) -> str:
    try:
        if rng.random() < 0.3:
            return json.dumps(document, indent=rng.choice([None, 2]), ensure_ascii=rng.random() < 0.5)
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        return str(yaml.dump(document, Dumper=dumper, default_flow_style=rng.random() < 0.1, allow_unicode=True))
    except (RecursionError, ValueError, TypeError, yaml.YAMLError):
        return json.dumps(str(document)[:2000])


# Mutations may share one subtree among several parents; a few of them nested give a graph whose
# written form grows exponentially (a run once spent 20 minutes in json.dumps on one input).
MAX_WRITTEN_NODES = 20_000


def _bounded(tree: Any, budget: list[int]) -> Any:
    """A copy of ``tree`` as it would be written, cut (to null) after ``MAX_WRITTEN_NODES`` nodes."""
    budget[0] -= 1
    if budget[0] < 0:
        return None
    if isinstance(tree, dict):
        return {key: _bounded(value, budget) for key, value in tree.items()}
    if isinstance(tree, list):
        return [_bounded(value, budget) for value in tree]
    return tree


def mutate_structure(document: Any, rng: random.Random) -> str:
    tree = json.loads(json.dumps(document))
    if rng.random() < 0.05:
        tree = review_of(tree)  # a hand-written review: what ``jobgate review`` reads
    everything = containers_of(tree)
    for _ in range(rng.choice([1, 1, 2, 3])):
        if not everything:
            tree = random_value(rng)
            break
        mutate_node(rng.choice(everything), rng, everything if len(everything) < 500 else [])
    if rng.random() < 0.03:
        tree = {"apiVersion": "v1", "kind": "List", "items": [tree, random_value(rng)]}
    with contextlib.suppress(RecursionError):  # nesting deeper than Python's stack: _dump copes
        tree = _bounded(tree, [MAX_WRITTEN_NODES])
    return _dump(tree, rng)


def damage(raw: bytes, rng: random.Random) -> bytes:
    choice = rng.random()
    if choice < 0.94:
        return raw
    position = rng.randrange(len(raw) + 1)
    if choice < 0.97:
        return raw[:position] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xc0\x80", b"\xf8"]) + raw[position:]
    if choice < 0.985:
        return b"\xef\xbb\xbf" + raw
    return raw.replace(b"\n", b"\r\n")


# Larger inputs would only measure the parser's speed: size limits have their own tests.
MAX_INPUT_BYTES = 64 * 1024


def inputs(seed: int, count: int) -> Iterator[bytes]:
    rng = random.Random(seed)
    texts = example_texts()
    documents = example_documents(texts)
    for _ in range(count):
        if rng.random() < 0.6:
            text = mutate_text(rng.choice(texts), texts, rng)
        else:
            text = mutate_structure(rng.choice(documents), rng)
        raw = damage(text.encode("utf-8", "surrogatepass"), rng)
        yield raw[:MAX_INPUT_BYTES]


def check(raw: bytes) -> str:
    """What ``jobgate validate`` and ``jobgate review`` do with one file; the outcome class, or ``Finding``."""
    from jobgate.cli.offline import _as_json
    from jobgate.offline.report import render
    from jobgate.offline.results import FieldValidation, Outcome, Run, check_text
    from jobgate.offline.sources import SourceError, _decode
    from jobgate.webhook.admission import BadReview, Webhook
    from testkit.fuzzing.review_mutator import check as check_review

    try:
        text = _decode(SOURCE, raw)
    except SourceError as exc:
        _one_line(exc.message)
        return "unreadable"
    run = Run()
    for result in check_text(text, SOURCE, FieldValidation.STRICT):
        if result.outcome is Outcome.ERROR:
            _one_line(result.reason)
        run.add(result)
    if run.exit_code not in (0, 1, 2):
        raise Finding(f"undefined exit code {run.exit_code}")
    render(run, "text").encode("utf-8")  # printing must not fail either
    outcome = f"exit {run.exit_code}"
    stripped = text.lstrip()
    if stripped.startswith(("{", "apiVersion: admission", '{"apiVersion":"admission')) or "AdmissionReview" in text:
        try:
            body = _as_json(text)
            review = [check_review(body, webhook) for webhook in (Webhook.MUTATE, Webhook.VALIDATE)]  # type: ignore[arg-type]
        except (BadReview, RecursionError):  # the CLI's refusals (exit 2)
            review = ["400"]
        outcome += f", review {'/'.join(review)}"
    return outcome


def _one_line(message: str) -> None:
    if not message or "\n" in message or "Traceback" in message:
        raise Finding(f"refusal is not one clear line: {message!r}")
