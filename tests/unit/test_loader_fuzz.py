"""A short fixed-seed slice of bench/fuzz_offline.py: no input crashes ``jobgate validate`` / ``review``."""

from __future__ import annotations

import collections

import pytest

from testkit.fuzzing.offline_mutator import check, inputs

# The mutator reuses anchors on purpose; ruamel's warning about each says nothing here.
pytestmark = pytest.mark.filterwarnings("ignore::ruamel.yaml.error.ReusedAnchorWarning")

SLICE_SEEDS = [1, 2]
SLICE_SIZE = 150


@pytest.mark.parametrize("seed", SLICE_SEEDS)
def test_fixed_seed_slice(seed):
    outcomes = collections.Counter(check(raw) for raw in inputs(seed, SLICE_SIZE))
    # The slice must reach the rules (admitted and denied files), not only the parser's refusals.
    assert outcomes["exit 0"] and outcomes["exit 1"] and outcomes["exit 2"], outcomes
