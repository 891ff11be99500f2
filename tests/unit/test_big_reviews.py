"""The largest reviews: a denial lists at most MAX_LISTED_ERRORS causes, and its verdict stays exact."""

from __future__ import annotations

import copy

import orjson

from jobgate.engine.fielderrors import MAX_LISTED_ERRORS, aggregate_message, invalid_status, required
from jobgate.review import kind_of, review_job
from jobgate.webhook.admission import Webhook, review_body
from testkit.big_jobs import FAMILIES, review, types_job


def _errors(count: int) -> list:
    return [required(("spec", f"f{index}")) for index in range(count)]


def test_a_denial_with_up_to_the_limit_lists_every_error():
    status = invalid_status("g", "K", "n", _errors(MAX_LISTED_ERRORS))
    assert len(status["details"]["causes"]) == MAX_LISTED_ERRORS
    assert "not listed" not in status["message"]
    assert status["message"].endswith(f"spec.f{MAX_LISTED_ERRORS - 1}: Required value]")


def test_past_the_limit_the_rest_are_counted_not_listed():
    status = invalid_status("g", "K", "n", _errors(MAX_LISTED_ERRORS + 1))
    assert len(status["details"]["causes"]) == MAX_LISTED_ERRORS
    assert status["details"]["causes"][-1]["field"] == f"spec.f{MAX_LISTED_ERRORS - 1}"
    assert status["message"].endswith(f"spec.f{MAX_LISTED_ERRORS - 1}: Required value, and 1 more error not listed]")
    assert (status["code"], status["reason"]) == (422, "Invalid")
    many = invalid_status("g", "K", "n", _errors(MAX_LISTED_ERRORS + 250))
    assert many["message"].endswith(", and 250 more errors not listed]")


def test_the_aggregate_message_is_capped_too():
    message = aggregate_message(_errors(MAX_LISTED_ERRORS + 5))
    assert message.count("Required value") == MAX_LISTED_ERRORS
    assert message.endswith(", and 5 more errors not listed]")


def test_a_job_with_thousands_of_bad_replica_types_is_denied_with_an_exact_count():
    tfjob = next(f for f in FAMILIES if f.label.startswith("kubedl"))
    job = types_job(tfjob, count=1_500, broken=True)
    expected = review_job(kind_of(job), copy.deepcopy(job), with_patch=False).errors
    assert len(expected) > MAX_LISTED_ERRORS
    answer = orjson.loads(review_body(review(job), Webhook.VALIDATE))["response"]
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 422
    assert len(answer["status"]["details"]["causes"]) == MAX_LISTED_ERRORS
    assert answer["status"]["message"].endswith(f", and {len(expected) - MAX_LISTED_ERRORS} more errors not listed]")
