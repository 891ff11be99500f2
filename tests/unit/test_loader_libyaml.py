"""libyaml composes a document only where it reads it exactly as ruamel (the reference) does.

Both node graphs are compared (kinds, tags, scalar values, the line of every node) and so is the
data resolved from them, over the examples and a fixed-seed slice of the offline fuzzer's inputs;
``python -m bench.fuzz_offline --differential`` runs the same comparison over many more.
"""

from __future__ import annotations

import pytest

from jobgate.offline import exact_yaml, loader
from jobgate.offline.documents import Chunk
from testkit.fuzzing.loader_differential import differences
from testkit.fuzzing.offline_mutator import example_texts, inputs


@pytest.mark.parametrize("index", range(len(example_texts())))
def test_examples_read_the_same(index):
    text = example_texts()[index]
    assert exact_yaml._compose_libyaml(text)[0]
    assert differences(text) is None


@pytest.mark.parametrize("seed", [11, 12])
def test_fuzzed_inputs_read_the_same(seed):
    for raw in inputs(seed, 150):
        text = raw.decode("utf-8", "replace")
        assert differences(text) is None, text[:2000]


@pytest.mark.parametrize(
    "text",
    [
        "a: \\u00e9\n",  # ASCII only: YAML 1.1 and 1.2 disagree on the non-ASCII line breaks
        "a: [" * 10_001 + "]" * 10_001,  # may nest deeper than libyaml's C recursion allows
        "a: 1\n  b: 2\n",  # refused: ruamel's message is the reference
        "a:\n  b:\nc: 1\n",  # empty values: libyaml and ruamel give them different lines
        "a:\tb\n",  # tabs: libyaml accepts some that ruamel refuses
    ],
)
def test_left_to_ruamel(text):
    text = text.replace("\\u00e9", "\u00e9")
    assert not exact_yaml._compose_libyaml(text)[0]


def test_lines_of_a_document_composed_by_libyaml():
    text = "# c\napiVersion: v1\nkind: X\nspec:\n  list:\n  - a: 1\n    b: [1,\n      2]\n"
    composed, _ = exact_yaml._compose_libyaml(text)
    locator = loader.Locator(Chunk(text, 10))
    assert composed
    assert locator.line == 11
    assert [locator.line_of(p) for p in (("kind",), ("spec", "list", 0, "b"), ("spec", "list", 0, "b", 1))] == [
        12,
        16,
        17,
    ]
    assert differences(text) is None
