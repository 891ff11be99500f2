"""The labels' check (``schema/labels``) against apimachinery's own cases for IsQualifiedName and
IsValidLabelValue (k8s.io/apimachinery/pkg/util/validation), and its place in a review."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from jobgate.engine.fielderrors import ErrorType
from jobgate.review import kind_of, review_job
from jobgate.rules.jobmeta import label_errors
from jobgate.rules.names import label_value_problems, qualified_name_problems

GOOD_KEYS = [
    "simple",
    "now-with-dashes",
    "1-starts-with-num",
    "1234",
    "simple/simple",
    "now-with-dashes/simple",
    "now-with-dashes/now-with-dashes",
    "now.with.dots/simple",
    "now-with.dashes-and.dots/simple",
    "1-num.2-num/3-num",
    "1234/5678",
    "1.2.3.4/5678",
    "Uppercase_Is_OK_123",
    "example.com/Uppercase_Is_OK_123",
    "requests.storage-foo",
    "a" * 63,
    "a" * 253 + "/" + "a" * 63,
]
BAD_KEYS = [
    "nospecialchars%^=@",
    "cantendwithadash-",
    "-cantstartwithadash-",
    "only/one/slash",
    "Example.com/abc",
    "example_com/abc",
    "example.com/",
    "/simple",
    "a" * 64,
    "a" * 254 + "/abc",
]
GOOD_VALUES = ["simple", "now-with-dashes", "1-starts-with-num", "end-with-num-1", "1234", "a" * 63, ""]
BAD_VALUES = [
    "nospecialchars%^=@",
    "Tama-nui-te-rā.is_Māori.sun",
    "\\backslashes\\are\\bad",
    "-starts-with-dash",
    "ends-with-dash-",
    ".starts.with.dot",
    "ends.with.dot.",
    "a" * 64,
]


@pytest.mark.parametrize("key", GOOD_KEYS)
def test_a_qualified_name_passes(key: str) -> None:
    assert qualified_name_problems(key) == []


@pytest.mark.parametrize("key", BAD_KEYS)
def test_no_qualified_name_is_refused(key: str) -> None:
    assert qualified_name_problems(key)


@pytest.mark.parametrize("value", GOOD_VALUES)
def test_a_label_value_passes(value: str) -> None:
    assert label_value_problems(value) == []


@pytest.mark.parametrize("value", BAD_VALUES)
def test_no_label_value_is_refused(value: str) -> None:
    assert label_value_problems(value)


def test_the_apiserver_words_and_field() -> None:
    errors = label_errors({"labels": {"a/b/c": "x", "team": "v" * 64, "ok": "-x"}})
    assert [(e.field, e.type, e.detail) for e in errors] == [
        (
            "metadata.labels",
            ErrorType.INVALID,
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
            "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix "
            "and '/' (e.g. 'example.com/MyName')",
        ),
        ("metadata.labels", ErrorType.INVALID, "must be no more than 63 characters"),
        (
            "metadata.labels",
            ErrorType.INVALID,
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
            "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
            "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ),
    ]


def test_a_review_refuses_a_bad_label_on_create_and_update() -> None:
    job = yaml.safe_load(Path("examples/valid/tfjob-mnist.yaml").read_text())
    kind = kind_of(job)
    bad = copy.deepcopy(job)
    bad["metadata"]["labels"] = {"team": "v" * 64}
    assert review_job(kind, job).allowed
    for old in (None, job):
        verdict = review_job(kind, bad, old)
        assert not verdict.allowed
        assert [e.field for e in verdict.errors] == ["metadata.labels"]


def test_a_label_checked_before_is_judged_the_same() -> None:
    """Valid pairs are remembered; a pair never is when it has a problem, nor a key with another value."""
    labels = {"team": "vision", "a/b/c": "x", "ok": "-x"}
    first = [str(e) for e in label_errors({"labels": labels})]
    assert len(first) == 2
    assert [str(e) for e in label_errors({"labels": labels})] == first
    assert [str(e) for e in label_errors({"labels": {"team": "-vision"}})] == [
        str(e) for e in label_errors({"labels": {"ok": "-vision"}})
    ]
    assert label_errors({"labels": {"team": "vision"}}) == []
