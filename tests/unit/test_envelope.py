"""The hand-written envelope check answers exactly as the pydantic schema of the envelope would."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobgate.webhook import envelope_schema
from jobgate.webhook.admission import AdmissionReview, BadReview, parse_review
from testkit.builders import admission_review, tfjob

# Values a field of the envelope may be given: right and wrong JSON types, convertible and not.
ODD_VALUES: list[Any] = [
    None, "", "x", "CREATE", "UPDATE", "DELETE", "CONNECT", "create", "admission.k8s.io/v1",
    "admission.k8s.io/v1beta1", "AdmissionReview", "true", "false", "yes", "1", "0", "on", 0, 1, 2, -1, 1.0, 0.0,
    0.5, True, False, [], ["x"], {}, {"version": "v1", "kind": "X"}, "\u00e9\u4e2d", " CREATE",
]  # fmt: skip
MISSING = object()
ENVELOPE_FIELDS = [
    ("apiVersion",), ("kind",), ("request",), ("request", "uid"), ("request", "kind"), ("request", "kind", "group"),
    ("request", "kind", "version"), ("request", "kind", "kind"), ("request", "name"), ("request", "namespace"),
    ("request", "operation"), ("request", "object"), ("request", "oldObject"), ("request", "dryRun"),
]  # fmt: skip


def reference(document: Any) -> AdmissionReview | str:
    """What the pydantic schema alone makes of a decoded body: the review, or the 400 message."""
    if not isinstance(document, dict):
        return "not a JSON object"
    try:
        return envelope_schema.checked_review(document)
    except BadReview as exc:
        return str(exc)


def parsed(document: Any) -> AdmissionReview | str:
    try:
        return parse_review(orjson.dumps(document))
    except BadReview as exc:
        return "not a JSON object" if "must be a JSON object" in str(exc) else str(exc)


def with_value(document: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    changed = json.loads(json.dumps(document))
    parent = changed
    for key in path[:-1]:
        if not isinstance(parent.get(key), dict):
            return changed
        parent = parent[key]
    if value is MISSING:
        parent.pop(path[-1], None)
    else:
        parent[path[-1]] = value
    return changed


BASE = admission_review(tfjob(), uid="uid-1")
BASE["request"]["dryRun"] = False


@pytest.mark.parametrize("path", ENVELOPE_FIELDS, ids=".".join)
@pytest.mark.parametrize("value", [*ODD_VALUES, MISSING], ids=repr)
def test_one_field_changed(path, value):
    document = with_value(BASE, path, value)
    assert parsed(document) == reference(document)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(ENVELOPE_FIELDS), st.sampled_from([*ODD_VALUES, MISSING])), min_size=1, max_size=5
    )
)
def test_several_fields_changed(changes):
    document = BASE
    for path, value in changes:
        document = with_value(document, path, value)
    assert parsed(document) == reference(document)


def test_well_formed_reviews_do_not_need_the_schema(monkeypatch):
    def refuse(document):
        raise AssertionError("the schema was asked about a well-formed review")

    monkeypatch.setattr(envelope_schema.ReviewSchema, "model_validate", refuse)
    review = parse_review(orjson.dumps(BASE))
    assert review.request.uid == "uid-1"
    assert review.request.kind.kind == "TFJob"
    assert review.request.object == BASE["request"]["object"]


def test_a_converted_value_is_taken_as_pydantic_takes_it():
    review = parse_review(orjson.dumps(with_value(BASE, ("request", "dryRun"), "true")))
    assert review.request.dryRun is True
