"""Fuzzing the offline command's load-and-validate path (and ``jobgate review``'s parsing).

    python -m bench.fuzz_offline [--seconds 300] [--seed N]

Inputs are seeded from ``examples/`` and mutated in structure and type (hypothesis):
values replaced by deep nesting, huge or odd numbers, YAML 1.1 words, aliases, tags;
text cut, spliced and sprinkled with hostile tokens and bytes. Every input goes through
what ``jobgate validate`` does with a file (``check_text``) and through ``review_body``;
any exception other than the defined refusals is a crash. The run is bounded in time and
prints inputs/s and the crashes (0 expected). ``tests/unit/test_loader_fuzz.py`` runs a
short fixed-seed slice of the same strategies in CI.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(p.read_text() for p in (REPO / "examples").rglob("*.yaml"))

HOSTILE_TOKENS = [
    "yes", "on", "n", "0777", "1_000", "_1", "0x1F", "-0b1", ".inf", "-.Inf", ".nan", "1e400", "~", "",
    "!!binary aGVsbG8=", "!!str", "!foo", "&a", "*a", "<<: *a", "? [a]", "? {a: 1}", "[", "]", "{", "}",
    "- ", "---", "...", "%YAML 1.1", "'", '"', '"\\ud800"', "\t", "\x00", "\x85", "\ufeff", "\ud800",
    "9" * 5000, "[" * 300, "- " * 300, "#", ": ", "|", ">", "|-\n  x", "\\", "%", "@", "`",
]  # fmt: skip


def scalars() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=20),
        st.sampled_from(["yes", "on", "0777", "1_000", "1e400", "-1", "0", "Never", "ExitCode", "nvidia.com/gpu"]),
    )


def values() -> st.SearchStrategy[Any]:
    return st.recursive(
        scalars(),
        lambda children: st.one_of(
            st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)
        ),
        max_leaves=20,
    )


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for key, item in node.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(node, list):
        for index, item in enumerate(node):
            found += _paths(item, (*prefix, index))
    return found


def _replace(node: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(node, dict):
        return {**node, head: _replace(node[head], rest, value)}
    copy = list(node)
    copy[head] = _replace(node[head], rest, value)
    return copy


def _nested(depth: int, leaf: Any) -> Any:
    for _ in range(depth):
        leaf = [leaf]
    return leaf


@st.composite
def structured_inputs(draw: st.DrawFn) -> str:
    """An example job with values replaced at random places, written as YAML or JSON."""
    from webhook.loader import load_document, split_documents

    text = draw(st.sampled_from(EXAMPLES))
    documents = [load_document(c) for c in split_documents(text)]
    document = next((d for d in documents if isinstance(d, dict)), {})
    for _ in range(draw(st.integers(1, 4))):
        paths = _paths(document)
        path = draw(st.sampled_from(paths))
        replacement = draw(
            st.one_of(
                values(),
                st.builds(_nested, st.integers(90, 400), scalars()),
                st.sampled_from([{}, [], None, "", 0, -1, 2**63, 10**30, "9" * 40]),
            )
        )
        document = _replace(document, path, replacement)
    try:
        if draw(st.booleans()):
            return json.dumps(document)
        import io

        from ruamel.yaml import YAML

        yaml = YAML(typ="safe", pure=True)
        buffer = io.StringIO()
        yaml.dump(document, buffer)
        return buffer.getvalue()
    except (RecursionError, ValueError, TypeError):
        return json.dumps(str(document)[:1000])


@st.composite
def textual_inputs(draw: st.DrawFn) -> str:
    """An example's text cut, spliced and sprinkled with hostile tokens."""
    text = draw(st.sampled_from(EXAMPLES))
    for _ in range(draw(st.integers(1, 6))):
        position = draw(st.integers(0, len(text)))
        operation = draw(st.sampled_from(["insert", "cut", "duplicate", "truncate"]))
        if operation == "insert":
            token = draw(st.one_of(st.sampled_from(HOSTILE_TOKENS), st.text(max_size=6)))
            text = text[:position] + token + text[position:]
        elif operation == "cut":
            end = draw(st.integers(position, min(len(text), position + 40)))
            text = text[:position] + text[end:]
        elif operation == "duplicate":
            line_start = text.rfind("\n", 0, position) + 1
            line_end = text.find("\n", position)
            line = text[line_start : line_end if line_end >= 0 else len(text)]
            text = text[:line_start] + line + "\n" + text[line_start:]
        else:
            text = text[:position]
    return text


def inputs() -> st.SearchStrategy[str]:
    return st.one_of(structured_inputs(), textual_inputs())


def check_one(text: str) -> None:
    """What ``jobgate validate`` and ``jobgate review`` do with one file's text; raises on a crash."""
    from webhook.admission import BadReview, Webhook, review_body
    from webhook.cli import _as_json
    from webhook.offline import FieldValidation, Outcome, check_text
    from webhook.sources import printable

    for mode in (FieldValidation.STRICT,):
        for result in check_text(text, "fuzz.yaml", mode):
            # Printing must not crash either: every field is printable.
            rendered = " ".join([result.reason, *(f.message for f in result.errors), result.title])
            rendered.encode("utf-8")
            assert printable(rendered) == rendered
            assert result.outcome in Outcome
    for webhook in (Webhook.MUTATE, Webhook.VALIDATE):
        with contextlib.suppress(BadReview, RecursionError):
            review_body(_as_json(text), webhook)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=300.0, help="time budget (default: 300)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    deadline = time.monotonic() + args.seconds
    counted = {"inputs": 0}
    crashes: list[tuple[str, str]] = []

    @seed(args.seed)
    @settings(
        max_examples=10**9,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=["generate"],
    )
    @given(inputs())
    def fuzz(text: str) -> None:
        if time.monotonic() > deadline:
            raise _TimeUp
        counted["inputs"] += 1
        try:
            check_one(text)
        except Exception:  # a crash: recorded, the run goes on
            crashes.append((text[:300], traceback.format_exc(limit=4)))

    started = time.monotonic()
    with contextlib.suppress(_TimeUp):
        fuzz()
    elapsed = time.monotonic() - started
    rate = counted["inputs"] / elapsed
    print(f"{counted['inputs']:,} inputs in {elapsed:.0f} s ({rate:,.0f}/s), {len(crashes)} crashes")
    for text, trace in crashes[:10]:
        print(f"--- input: {text!r}\n{trace}")
    return 1 if crashes else 0


class _TimeUp(Exception):
    pass


if __name__ == "__main__":
    sys.exit(main())
