"""A short fixed-seed slice of bench/fuzz_offline.py: no input crashes the load-and-validate path."""

from __future__ import annotations

from hypothesis import HealthCheck, given, seed, settings

from bench.fuzz_offline import check_one, inputs


@seed(20261123)
@settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(inputs())
def test_no_input_crashes_validate_or_review(text):
    check_one(text)
