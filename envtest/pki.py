"""Certificates and keys for a throwaway control plane: a CA, serving and client certs, SA keys."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from jobgate.certs.authority import cert_pem, create_ca, key_pem


def _leaf(
    ca_key: ec.EllipticCurvePrivateKey,
    ca_cert: x509.Certificate,
    subject: x509.Name,
    *,
    usage: x509.ObjectIdentifier,
    alternative_names: list[x509.GeneralName] | None = None,
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if alternative_names:
        builder = builder.add_extension(x509.SubjectAlternativeName(alternative_names), critical=False)
    return key, builder.sign(ca_key, hashes.SHA256())


def _write(path: Path, data: bytes, mode: int = 0o600) -> Path:
    path.write_bytes(data)
    path.chmod(mode)
    return path


def create_pki(directory: Path, service_ip: str = "10.0.0.1") -> dict[str, Path]:
    """Write every file the control plane and its clients need; returns them by role."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = create_ca("jobgate-envtest-ca")
    names: list[x509.GeneralName] = [
        x509.DNSName("localhost"),
        x509.DNSName("kubernetes"),
        x509.DNSName("kubernetes.default"),
        x509.DNSName("kubernetes.default.svc"),
        x509.DNSName("kubernetes.default.svc.cluster.local"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        x509.IPAddress(ipaddress.ip_address(service_ip)),
    ]
    serving_key, serving_cert = _leaf(
        ca_key,
        ca_cert,
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]),
        usage=ExtendedKeyUsageOID.SERVER_AUTH,
        alternative_names=names,
    )
    files = {
        "ca.crt": _write(directory / "ca.crt", cert_pem(ca_cert), 0o644),
        "ca.key": _write(directory / "ca.key", key_pem(ca_key)),
        "apiserver.crt": _write(directory / "apiserver.crt", cert_pem(serving_cert), 0o644),
        "apiserver.key": _write(directory / "apiserver.key", key_pem(serving_key)),
    }
    for name, common_name, organization in (
        ("admin", "jobgate-envtest-admin", "system:masters"),
        # The garbage collector deletes dependents of any kind, custom resources included.
        ("controller-manager", "system:kube-controller-manager", "system:masters"),
    ):
        attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
        if organization:
            attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
        key, cert = _leaf(ca_key, ca_cert, x509.Name(attributes), usage=ExtendedKeyUsageOID.CLIENT_AUTH)
        files[f"{name}.crt"] = _write(directory / f"{name}.crt", cert_pem(cert), 0o644)
        files[f"{name}.key"] = _write(directory / f"{name}.key", key_pem(key))
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    files["sa.key"] = _write(
        directory / "sa.key",
        sa_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
        ),
    )
    files["sa.pub"] = _write(
        directory / "sa.pub",
        sa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo),
        0o644,
    )
    return files


def kubeconfig(server: str, ca_file: Path, cert_file: Path, key_file: Path, user: str) -> str:
    return f"""apiVersion: v1
kind: Config
clusters:
- name: envtest
  cluster:
    server: {server}
    certificate-authority: {ca_file}
users:
- name: {user}
  user:
    client-certificate: {cert_file}
    client-key: {key_file}
contexts:
- name: envtest
  context:
    cluster: envtest
    user: {user}
    namespace: default
current-context: envtest
"""
