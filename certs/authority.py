"""A small certificate authority for the webhook's serving certificate.

The apiserver verifies the webhook's certificate against the ``caBundle`` of the webhook
configuration, and by subject alternative name only (Go ignores the common name), so the
leaf must carry every name the apiserver dials: ``<svc>.<ns>.svc`` for an in-cluster
Service, an IP or host name for a webhook reached by URL.

Keys are ECDSA P-256: small, fast to handshake, accepted by Go's TLS stack.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_VALIDITY_DAYS = 3650
LEAF_VALIDITY_DAYS = 365
DEFAULT_RENEW_WITHIN_DAYS = 30
# Tolerate clocks that run a little behind ours.
BACKDATE = datetime.timedelta(minutes=5)

CA_CERT, CA_KEY, TLS_CERT, TLS_KEY = "ca.crt", "ca.key", "tls.crt", "tls.key"

PrivateKey = ec.EllipticCurvePrivateKey


def service_dns_names(service: str, namespace: str, cluster_domain: str | None = "cluster.local") -> list[str]:
    """The names a Service is reached by: ``svc``, ``svc.ns``, ``svc.ns.svc`` (and the cluster domain form)."""
    names = [service, f"{service}.{namespace}", f"{service}.{namespace}.svc"]
    if cluster_domain:
        names.append(f"{service}.{namespace}.svc.{cluster_domain}")
    return names


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def new_key() -> PrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def create_ca(
    common_name: str = "jobgate-ca",
    days: int = CA_VALIDITY_DAYS,
    *,
    lifetime: datetime.timedelta | None = None,
    now: datetime.datetime | None = None,
) -> tuple[PrivateKey, x509.Certificate]:
    """A self-signed CA; its common name carries its creation time, so rotated CAs tell apart."""
    key = new_key()
    now = now or _now()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{common_name} {now:%Y-%m-%dT%H:%M:%SZ}")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + (lifetime or datetime.timedelta(days=days)))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(signs_certificates=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _key_usage(*, signs_certificates: bool) -> x509.KeyUsage:
    """Digital signature for every certificate; certificate and CRL signing for the CA only."""
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=signs_certificates,
        crl_sign=signs_certificates,
        encipher_only=False,
        decipher_only=False,
    )


def _alternative_names(dns_names: Iterable[str], ip_addresses: Iterable[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in dict.fromkeys(dns_names)]
    names += [x509.IPAddress(ipaddress.ip_address(a)) for a in dict.fromkeys(ip_addresses)]
    if not names:
        raise ValueError("a serving certificate needs at least one DNS name or IP address")
    return names


def issue_serving_cert(
    ca_key: PrivateKey,
    ca_cert: x509.Certificate,
    dns_names: Sequence[str],
    ip_addresses: Sequence[str] = (),
    days: int = LEAF_VALIDITY_DAYS,
    *,
    lifetime: datetime.timedelta | None = None,
    now: datetime.datetime | None = None,
) -> tuple[PrivateKey, x509.Certificate]:
    key = new_key()
    alternative_names = _alternative_names(dns_names, ip_addresses)
    common_name = dns_names[0] if dns_names else str(ip_addresses[0])
    now = now or _now()
    not_after = min(now + (lifetime or datetime.timedelta(days=days)), ca_cert.not_valid_after_utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name[:64])]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(not_after)
        .add_extension(x509.SubjectAlternativeName(alternative_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(signs_certificates=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),  # type: ignore[arg-type]
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return key, cert


def key_pem(key: PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def cert_pem(*certs: x509.Certificate) -> bytes:
    return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certs)


def write_atomically(path: Path, data: bytes, mode: int) -> None:
    """Write to a temporary file in the same directory, then rename: readers never see half a file."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(descriptor, mode)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def load_cert_bundle(path: Path) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(path.read_bytes())


def load_key(path: Path) -> PrivateKey:
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{path}: expected an ECDSA private key")
    return key


def subject_alternative_names(cert: x509.Certificate) -> tuple[list[str], list[str]]:
    extension = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    dns = extension.get_values_for_type(x509.DNSName)
    ips = [str(a) for a in extension.get_values_for_type(x509.IPAddress)]
    return dns, ips


class CertificateExists(FileExistsError):
    pass


@dataclass(frozen=True)
class RenewResult:
    renewed: bool
    rotated_ca: bool
    not_after: datetime.datetime
    message: str


def init_directory(
    directory: Path,
    dns_names: Sequence[str],
    ip_addresses: Sequence[str],
    *,
    force: bool = False,
    ca_days: int = CA_VALIDITY_DAYS,
    leaf_days: int = LEAF_VALIDITY_DAYS,
) -> None:
    """Create ``ca.crt``, ``ca.key``, ``tls.crt``, ``tls.key`` in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    existing = [name for name in (CA_KEY, TLS_KEY) if (directory / name).exists()]
    if existing and not force:
        raise CertificateExists(f"{directory}: {', '.join(existing)} already exist; use --force to replace them")
    ca_key, ca_cert = create_ca(days=ca_days)
    key, cert = issue_serving_cert(ca_key, ca_cert, dns_names, ip_addresses, days=leaf_days)
    write_atomically(directory / CA_KEY, key_pem(ca_key), 0o600)
    write_atomically(directory / CA_CERT, cert_pem(ca_cert), 0o644)
    # The key first: a server watching the directory then sees a complete pair once tls.crt lands.
    write_atomically(directory / TLS_KEY, key_pem(key), 0o600)
    write_atomically(directory / TLS_CERT, cert_pem(cert), 0o644)


def renew_directory(
    directory: Path,
    *,
    within_days: int = DEFAULT_RENEW_WITHIN_DAYS,
    rotate_ca: bool = False,
    leaf_days: int = LEAF_VALIDITY_DAYS,
    ca_days: int = CA_VALIDITY_DAYS,
) -> RenewResult:
    """Re-issue the serving certificate when it expires within ``within_days`` (or always with ``rotate_ca``).

    With ``rotate_ca`` a new CA signs the new leaf and ``ca.crt`` becomes a bundle of the new and
    the previous CA, so clients holding either keep working while the new bundle is rolled out.
    """
    leaf = load_cert_bundle(directory / TLS_CERT)[0]
    bundle = load_cert_bundle(directory / CA_CERT)
    ca_key = load_key(directory / CA_KEY)
    now = _now()
    due = leaf.not_valid_after_utc - now <= datetime.timedelta(days=within_days)
    if not due and not rotate_ca:
        return RenewResult(
            False,
            False,
            leaf.not_valid_after_utc,
            f"{TLS_CERT} is valid until {leaf.not_valid_after_utc:%Y-%m-%d}; nothing to do",
        )
    dns_names, ip_addresses = subject_alternative_names(leaf)
    signing_cert = _matching_ca(bundle, ca_key)
    if rotate_ca:
        new_ca_key, new_ca_cert = create_ca(days=ca_days)
        kept = [c for c in [signing_cert] if c.not_valid_after_utc > now]
        write_atomically(directory / CA_KEY, key_pem(new_ca_key), 0o600)
        write_atomically(directory / CA_CERT, cert_pem(new_ca_cert, *kept), 0o644)
        ca_key, signing_cert = new_ca_key, new_ca_cert
    key, cert = issue_serving_cert(ca_key, signing_cert, dns_names, ip_addresses, days=leaf_days)
    write_atomically(directory / TLS_KEY, key_pem(key), 0o600)
    write_atomically(directory / TLS_CERT, cert_pem(cert), 0o644)
    what = "rotated the CA and re-issued" if rotate_ca else "re-issued"
    return RenewResult(
        True, rotate_ca, cert.not_valid_after_utc, f"{what} {TLS_CERT}, valid until {cert.not_valid_after_utc:%Y-%m-%d}"
    )


def _matching_ca(bundle: list[x509.Certificate], ca_key: PrivateKey) -> x509.Certificate:
    public = ca_key.public_key().public_numbers()
    for cert in bundle:
        key = cert.public_key()
        if isinstance(key, ec.EllipticCurvePublicKey) and key.public_numbers() == public:
            return cert
    raise ValueError(f"no certificate in {CA_CERT} matches {CA_KEY}")
