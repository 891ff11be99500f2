"""Renewal decisions: when the CA and the serving certificate are replaced, and which CAs stay trusted."""

from __future__ import annotations

import dataclasses
import datetime

import pytest

from jobgate.certs.authority import service_dns_names, subject_alternative_names
from jobgate.certs.renewal import (
    CertificateState,
    Lifetimes,
    ServingPair,
    parse_duration,
    plan_renewal,
    signed_by,
)

NAMES = service_dns_names("jobgate-webhook", "jobgate-system")
T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
SHORT = Lifetimes(
    ca=datetime.timedelta(hours=2),
    ca_renew_before=datetime.timedelta(minutes=30),
    serving=datetime.timedelta(minutes=30),
    serving_renew_before=datetime.timedelta(minutes=10),
    ca_overlap=datetime.timedelta(minutes=15),
)
NOTHING = CertificateState(None, (), None)


def minutes(n: float) -> datetime.datetime:
    return T0 + datetime.timedelta(minutes=n)


def installed() -> CertificateState:
    return plan_renewal(NOTHING, NAMES, SHORT, T0).state


def test_the_first_run_creates_the_ca_and_a_serving_pair_it_signed():
    plan = plan_renewal(NOTHING, NAMES, SHORT, T0)
    state = plan.state
    assert plan.ca_changed and plan.serving_changed and plan.bundle_changed
    assert state.authority is not None and state.serving is not None
    assert signed_by(state.serving.cert, state.authority.cert)
    assert state.trusted == (state.authority.cert,)
    assert sorted(subject_alternative_names(state.serving.cert)[0]) == sorted(NAMES)
    assert state.serving.cert.not_valid_after_utc == minutes(30)


def test_nothing_changes_while_everything_is_outside_its_margin():
    state = installed()
    plan = plan_renewal(state, NAMES, SHORT, minutes(19))
    assert not (plan.ca_changed or plan.serving_changed or plan.bundle_changed)
    assert plan.reasons == [] and plan.state == state


def test_the_serving_certificate_is_reissued_inside_its_margin_by_the_same_ca():
    state = installed()
    plan = plan_renewal(state, NAMES, SHORT, minutes(21))
    assert plan.serving_changed and not plan.ca_changed and not plan.bundle_changed
    assert plan.state.serving is not None and plan.state.serving.cert != state.serving.cert  # type: ignore[union-attr]
    assert plan.state.authority == state.authority
    assert "expires" in plan.reasons[0]


def test_the_serving_certificate_is_reissued_when_the_names_change():
    plan = plan_renewal(installed(), service_dns_names("other", "jobgate-system"), SHORT, minutes(1))
    assert plan.serving_changed and "names" in plan.reasons[0]


def test_a_serving_key_that_is_not_the_certificates_is_replaced():
    state = installed()
    other = plan_renewal(NOTHING, NAMES, SHORT, T0).state.serving
    assert state.serving is not None and other is not None
    broken = CertificateState(state.authority, state.trusted, ServingPair(other.key, state.serving.cert))
    plan = plan_renewal(broken, NAMES, SHORT, minutes(1))
    assert plan.serving_changed and "does not match" in plan.reasons[0]


def test_the_ca_is_replaced_inside_its_margin_and_the_old_one_stays_trusted():
    state = installed()
    plan = plan_renewal(state, NAMES, SHORT, minutes(91))
    new = plan.state
    assert plan.ca_changed and plan.serving_changed and plan.bundle_changed
    assert new.authority is not None and state.authority is not None and new.serving is not None
    assert new.authority.cert != state.authority.cert
    assert signed_by(new.serving.cert, new.authority.cert)
    assert new.trusted == (new.authority.cert, state.authority.cert)


def test_rotation_on_request():
    state = installed()
    plan = plan_renewal(state, NAMES, SHORT, minutes(1), rotate_ca=True)
    assert plan.ca_changed and plan.state.trusted[1] == state.authority.cert  # type: ignore[union-attr]


def test_the_replaced_ca_is_dropped_once_the_overlap_is_over():
    rotated = plan_renewal(installed(), NAMES, SHORT, minutes(5), rotate_ca=True).state
    assert len(rotated.trusted) == 2
    assert len(plan_renewal(rotated, NAMES, SHORT, minutes(15)).state.trusted) == 2
    later = plan_renewal(rotated, NAMES, SHORT, minutes(21))
    assert later.bundle_changed and later.state.trusted == (rotated.authority.cert,)  # type: ignore[union-attr]
    assert "stopped trusting" in later.reasons[0]


def test_a_ca_that_signed_the_pair_in_place_stays_trusted_past_the_overlap():
    """A run that rotated the CA but failed before writing the serving pair: the pods still serve
    a certificate of the old CA, which must stay in the bundle until the pair is replaced."""
    state = installed()
    rotated = plan_renewal(state, NAMES, SHORT, minutes(5), rotate_ca=True).state
    half_done = CertificateState(rotated.authority, rotated.trusted, state.serving)
    plan = plan_renewal(half_done, NAMES, SHORT, minutes(25))
    assert plan.serving_changed and "not signed by the current CA" in plan.reasons[0]
    assert state.authority is not None and state.authority.cert in plan.state.trusted


def test_an_expired_ca_is_never_trusted():
    long_overlap = dataclasses.replace(SHORT, ca_overlap=datetime.timedelta(hours=1))
    state = installed()
    rotated = plan_renewal(state, NAMES, long_overlap, minutes(100)).state
    assert len(plan_renewal(rotated, NAMES, long_overlap, minutes(119)).state.trusted) == 2
    plan = plan_renewal(rotated, NAMES, long_overlap, minutes(121))
    assert state.authority is not None and state.authority.cert not in plan.state.trusted


def test_cas_trusted_before_jobgate_kept_its_ca_stay_trusted_through_the_overlap():
    """An installation whose Secret came from an earlier `certs setup` (no CA Secret): its CA is
    carried over, so the pods serving its certificate are not refused during the switch."""
    old = installed()
    assert old.serving is not None
    migrated = CertificateState(None, old.trusted, old.serving)
    plan = plan_renewal(migrated, NAMES, SHORT, minutes(1))
    assert plan.ca_changed and plan.serving_changed
    assert plan.state.trusted[1:] == old.trusted


@pytest.mark.parametrize(
    ("text", "seconds"), [("365d", 365 * 86400), ("12h", 43200), ("10m", 600), ("1h30m", 5400), ("45s", 45)]
)
def test_durations(text, seconds):
    assert parse_duration(text).total_seconds() == seconds


@pytest.mark.parametrize("text", ["", "10", "d", "0m", "1.5h", "10 m", "1h 30m", "-5m", "1w"])
def test_bad_durations(text):
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(text)


def test_margins_must_be_shorter_than_lifetimes():
    assert Lifetimes().problems() == []
    bad = Lifetimes(serving=datetime.timedelta(days=10), ca_renew_before=datetime.timedelta(days=400))
    assert len(bad.problems()) == 2
