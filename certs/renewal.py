"""What a renewal run must change, decided from the certificates alone (no cluster, no clock of its own).

The CA lives apart from the serving pair (the webhook pods never mount its key). A run:

1. creates the CA when there is none, and replaces it when it expires within its margin (or on
   request); the replaced CA stays *trusted* — in the ``caBundle`` and in the Secret's ``ca.crt``
   — for ``ca_overlap`` after the switch, and always while the serving certificate in place was
   signed by it, so a pod still serving the old certificate is never refused;
2. re-issues the serving certificate when it is missing, expires within its margin, was not
   signed by the current CA, or does not carry exactly the names wanted.

The transport (``certs.inject``) writes the CA, then the ``caBundle``, then the serving pair:
the new CA is trusted before any pod can serve a certificate it signed.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import ec

from .authority import (
    BACKDATE,
    PrivateKey,
    create_ca,
    issue_serving_cert,
    subject_alternative_names,
)

_DURATION = re.compile(r"(\d+)([smhd])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> datetime.timedelta:
    """``365d``, ``12h``, ``90m``, ``1h30m``: a positive duration in days, hours, minutes, seconds."""
    position, seconds = 0, 0
    for match in _DURATION.finditer(text):
        if match.start() != position:
            break
        seconds += int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    if not text or position != len(text) or seconds <= 0:
        raise ValueError(f"{text!r} is not a duration such as 365d, 12h, 10m or 1h30m")
    return datetime.timedelta(seconds=seconds)


@dataclass(frozen=True)
class Lifetimes:
    """How long certificates live, and how long before their end they are replaced."""

    ca: datetime.timedelta = datetime.timedelta(days=365)
    ca_renew_before: datetime.timedelta = datetime.timedelta(days=60)
    serving: datetime.timedelta = datetime.timedelta(days=150)
    serving_renew_before: datetime.timedelta = datetime.timedelta(days=30)
    # How long a replaced CA stays trusted: longer than the kubelet takes to put a new Secret
    # into the pods (about a minute) plus the webhook's reload, with room for a failed run.
    ca_overlap: datetime.timedelta = datetime.timedelta(hours=24)

    def problems(self) -> list[str]:
        found = []
        if self.ca_renew_before >= self.ca:
            found.append("the CA's renewal margin must be shorter than its lifetime")
        if self.serving_renew_before >= self.serving:
            found.append("the serving certificate's renewal margin must be shorter than its lifetime")
        return found


@dataclass(frozen=True)
class Authority:
    key: PrivateKey
    cert: x509.Certificate


@dataclass(frozen=True)
class ServingPair:
    key: PrivateKey
    cert: x509.Certificate


@dataclass(frozen=True)
class CertificateState:
    """What is in place: the CA (with its key), the CAs trusted beside it, the serving pair."""

    authority: Authority | None
    trusted: tuple[x509.Certificate, ...]
    serving: ServingPair | None


@dataclass(frozen=True)
class RenewalPlan:
    state: CertificateState
    ca_changed: bool
    bundle_changed: bool
    serving_changed: bool
    reasons: list[str] = field(default_factory=list)


def _fingerprint(cert: x509.Certificate) -> bytes:
    from cryptography.hazmat.primitives import hashes

    return cert.fingerprint(hashes.SHA256())


def _same_key(key: PrivateKey, cert: x509.Certificate) -> bool:
    public = cert.public_key()
    wanted = key.public_key().public_numbers()
    return isinstance(public, ec.EllipticCurvePublicKey) and public.public_numbers() == wanted


def signed_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _when_switched(ca: x509.Certificate) -> datetime.datetime:
    """When a CA took over: its certificate is back-dated by ``BACKDATE`` at creation."""
    return ca.not_valid_before_utc + BACKDATE


def plan_renewal(
    current: CertificateState,
    dns_names: Sequence[str],
    lifetimes: Lifetimes,
    now: datetime.datetime,
    *,
    rotate_ca: bool = False,
) -> RenewalPlan:
    reasons: list[str] = []
    authority = current.authority
    ca_changed = False
    if authority is None:
        reasons.append("no CA yet: created one")
        ca_changed = True
    elif authority.cert.not_valid_after_utc - now <= lifetimes.ca_renew_before:
        reasons.append(f"the CA expires {authority.cert.not_valid_after_utc:%Y-%m-%d %H:%M:%S}Z: replaced it")
        ca_changed = True
    elif rotate_ca:
        reasons.append("CA rotation requested: replaced it")
        ca_changed = True
    if ca_changed:
        key, cert = create_ca(lifetime=lifetimes.ca, now=now)
        authority = Authority(key, cert)
    assert authority is not None

    serving = current.serving
    wanted = sorted(dict.fromkeys(dns_names))
    why_serving = _serving_reason(serving, authority, wanted, lifetimes, now)
    if why_serving:
        key, cert = issue_serving_cert(authority.key, authority.cert, wanted, lifetime=lifetimes.serving, now=now)
        serving = ServingPair(key, cert)
        reasons.append(f"{why_serving}: re-issued it, valid until {cert.not_valid_after_utc:%Y-%m-%d %H:%M:%S}Z")
    assert serving is not None

    trusted = [authority.cert]
    seen = {_fingerprint(authority.cert)}
    # The previous CA of this run's rotation, or of a rotation within the overlap.
    previous = [c for c in current.trusted if _fingerprint(c) not in seen]
    if ca_changed and current.authority is not None and _fingerprint(current.authority.cert) not in seen:
        previous.insert(0, current.authority.cert)
    for cert in previous:
        fingerprint = _fingerprint(cert)
        if fingerprint in seen:
            continue
        expired = cert.not_valid_after_utc <= now
        within_overlap = now < _when_switched(authority.cert) + lifetimes.ca_overlap
        # The pair in place until this run may still be served by pods that have not reloaded.
        signs_served = current.serving is not None and signed_by(current.serving.cert, cert)
        if not expired and (within_overlap or signs_served):
            trusted.append(cert)
            seen.add(fingerprint)
        else:
            reasons.append(f"stopped trusting the CA {cert.serial_number:x} (replaced, overlap over or expired)")
    bundle_changed = [_fingerprint(c) for c in trusted] != [_fingerprint(c) for c in current.trusted]
    if not reasons and bundle_changed:
        reasons.append("the trusted CA bundle was not what it should be: rewrote it")
    return RenewalPlan(
        CertificateState(authority, tuple(trusted), serving),
        ca_changed=ca_changed,
        bundle_changed=bundle_changed,
        serving_changed=bool(why_serving),
        reasons=reasons,
    )


def _serving_reason(
    serving: ServingPair | None,
    authority: Authority,
    wanted: list[str],
    lifetimes: Lifetimes,
    now: datetime.datetime,
) -> str:
    if serving is None:
        return "no serving certificate yet"
    cert = serving.cert
    if not _same_key(serving.key, cert):
        return "the serving key does not match its certificate"
    if not signed_by(cert, authority.cert):
        return "the serving certificate was not signed by the current CA"
    if cert.not_valid_after_utc - now <= lifetimes.serving_renew_before:
        return f"the serving certificate expires {cert.not_valid_after_utc:%Y-%m-%d %H:%M:%S}Z"
    dns, ips = subject_alternative_names(cert)
    if sorted(dns) != wanted or ips:
        return "the serving certificate's names are not the Service's"
    return ""


def authority_is_consistent(authority: Authority) -> bool:
    return _same_key(authority.key, authority.cert)
