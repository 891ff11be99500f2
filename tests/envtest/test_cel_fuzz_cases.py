"""The jobs ``python -m bench.cel_fuzz`` sends (its generator only; the plane is the bench's)."""

from __future__ import annotations

from jobgate.review import kind_of
from testkit.fuzzing.cel_cases import cases


def test_the_cases_are_reproducible_jobs_of_served_kinds():
    first = list(cases(seed=3, count=300))
    assert [c.obj for c in first] == [c.obj for c in cases(seed=3, count=300)]
    assert len(first) > 250
    for case in first:
        assert kind_of(case.obj) is not None, case.name
        assert case.obj["metadata"]["name"], case.name
        if case.old is not None:  # an UPDATE replaces the stored job of the same name
            assert case.old["metadata"]["name"] == case.obj["metadata"]["name"]
    updates = sum(c.old is not None for c in first)
    assert 30 < updates < 120
    assert sum(c.obj != c.old for c in first if c.old is not None) > updates // 2  # most updates change something
