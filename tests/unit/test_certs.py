"""Certificates: names, key permissions, chains, renewal window, CA rotation."""

from __future__ import annotations

import datetime
import ipaddress
import stat

import pytest
from cryptography import x509
from cryptography.x509.verification import PolicyBuilder, Store, VerificationError

from jobgate.certs.authority import (
    CertificateExists,
    create_ca,
    init_directory,
    issue_serving_cert,
    load_cert_bundle,
    renew_directory,
    service_dns_names,
    subject_alternative_names,
)
from jobgate.cli import main


def verify(leaf: x509.Certificate, trusted: list[x509.Certificate], name: str = "localhost") -> None:
    subject = x509.DNSName(name) if not name[0].isdigit() else x509.IPAddress(ipaddress.ip_address(name))
    verifier = PolicyBuilder().store(Store(trusted)).build_server_verifier(subject)
    verifier.verify(leaf, [])


def test_service_names():
    assert service_dns_names("jobgate-webhook", "jobgate-system") == [
        "jobgate-webhook",
        "jobgate-webhook.jobgate-system",
        "jobgate-webhook.jobgate-system.svc",
        "jobgate-webhook.jobgate-system.svc.cluster.local",
    ]
    assert service_dns_names("s", "n", cluster_domain=None) == ["s", "s.n", "s.n.svc"]


def test_init_writes_a_verifiable_chain_with_the_names(tmp_path):
    init_directory(tmp_path, ["localhost", "webhook.ns.svc"], ["127.0.0.1"])
    leaf = load_cert_bundle(tmp_path / "tls.crt")[0]
    (ca,) = load_cert_bundle(tmp_path / "ca.crt")
    assert subject_alternative_names(leaf) == (["localhost", "webhook.ns.svc"], ["127.0.0.1"])
    for name in ("localhost", "webhook.ns.svc", "127.0.0.1"):
        verify(leaf, [ca], name)
    with pytest.raises(VerificationError):
        verify(leaf, [ca], "other.example")
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False


def test_private_keys_are_0600(tmp_path):
    init_directory(tmp_path, ["localhost"], [])
    assert stat.S_IMODE((tmp_path / "ca.key").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "tls.key").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "tls.crt").stat().st_mode) == 0o644


def test_validity_periods(tmp_path):
    init_directory(tmp_path, ["localhost"], [])
    leaf = load_cert_bundle(tmp_path / "tls.crt")[0]
    (ca,) = load_cert_bundle(tmp_path / "ca.crt")
    leaf_days = (leaf.not_valid_after_utc - leaf.not_valid_before_utc).days
    ca_days = (ca.not_valid_after_utc - ca.not_valid_before_utc).days
    assert 365 <= leaf_days <= 366
    assert ca_days >= 3650


def test_existing_keys_are_not_overwritten_unless_forced(tmp_path):
    init_directory(tmp_path, ["localhost"], [])
    before = (tmp_path / "ca.key").read_bytes()
    with pytest.raises(CertificateExists):
        init_directory(tmp_path, ["localhost"], [])
    assert (tmp_path / "ca.key").read_bytes() == before
    init_directory(tmp_path, ["localhost"], [], force=True)
    assert (tmp_path / "ca.key").read_bytes() != before


def test_renew_only_inside_the_window(tmp_path):
    init_directory(tmp_path, ["localhost"], ["127.0.0.1"], leaf_days=60)
    original = (tmp_path / "tls.crt").read_bytes()
    assert renew_directory(tmp_path, within_days=30).renewed is False
    assert (tmp_path / "tls.crt").read_bytes() == original
    result = renew_directory(tmp_path, within_days=61)
    assert result.renewed and not result.rotated_ca
    leaf = load_cert_bundle(tmp_path / "tls.crt")[0]
    assert (tmp_path / "tls.crt").read_bytes() != original
    assert subject_alternative_names(leaf) == (["localhost"], ["127.0.0.1"])
    verify(leaf, load_cert_bundle(tmp_path / "ca.crt"))
    assert leaf.not_valid_after_utc - datetime.datetime.now(datetime.UTC) > datetime.timedelta(days=360)


def test_ca_rotation_keeps_both_cas_in_the_bundle(tmp_path):
    init_directory(tmp_path, ["localhost"], [])
    (old_ca,) = load_cert_bundle(tmp_path / "ca.crt")
    old_leaf = load_cert_bundle(tmp_path / "tls.crt")[0]
    result = renew_directory(tmp_path, rotate_ca=True)
    assert result.renewed and result.rotated_ca
    bundle = load_cert_bundle(tmp_path / "ca.crt")
    assert len(bundle) == 2
    new_ca = bundle[0]
    # Each CA's common name carries the second it was made (equal only when both fall in one second).
    common_names = [ca.subject.rfc4514_string() for ca in (new_ca, old_ca)]
    assert all(name.startswith("CN=jobgate-ca ") for name in common_names), common_names
    assert new_ca.public_key() != old_ca.public_key()
    assert bundle[1] == old_ca
    new_leaf = load_cert_bundle(tmp_path / "tls.crt")[0]
    verify(new_leaf, bundle)  # clients with the new bundle trust the new leaf
    verify(old_leaf, bundle)  # ... and the old one, still served by replicas not yet reloaded
    with pytest.raises(VerificationError):
        verify(new_leaf, [old_ca])  # which is why the bundle must roll out first
    renew_directory(tmp_path, rotate_ca=True)
    assert len(load_cert_bundle(tmp_path / "ca.crt")) == 2  # the oldest CA is dropped


def test_leaf_never_outlives_its_ca():
    ca_key, ca = create_ca(days=10)
    _, leaf = issue_serving_cert(ca_key, ca, ["localhost"], days=365)
    assert leaf.not_valid_after_utc <= ca.not_valid_after_utc


def test_a_leaf_needs_a_name():
    ca_key, ca = create_ca()
    with pytest.raises(ValueError):
        issue_serving_cert(ca_key, ca, [], [])


def test_cli_init_and_renew(tmp_path, capsys):
    out = tmp_path / "certs"
    assert (
        main(["certs", "init", "--out", str(out), "--service", "jobgate", "--namespace", "ops", "--ip", "10.0.0.1"])
        == 0
    )
    dns, ips = subject_alternative_names(load_cert_bundle(out / "tls.crt")[0])
    assert "jobgate.ops.svc" in dns and ips == ["10.0.0.1"]
    assert main(["certs", "init", "--out", str(out)]) == 1
    assert "already exist" in capsys.readouterr().err
    assert main(["certs", "renew", "--dir", str(out)]) == 0
    assert "nothing to do" in capsys.readouterr().out
    assert main(["certs", "renew", "--dir", str(out), "--rotate-ca"]) == 0
    assert main(["certs", "renew", "--dir", str(tmp_path / "missing")]) == 2
    assert main(["certs", "init", "--out", str(tmp_path / "bad"), "--ip", "not-an-ip"]) == 2


def test_cli_init_defaults_to_loopback_names(tmp_path):
    assert main(["certs", "init", "--out", str(tmp_path)]) == 0
    assert subject_alternative_names(load_cert_bundle(tmp_path / "tls.crt")[0]) == (["localhost"], ["127.0.0.1", "::1"])


CLUSTER_RENEW = ["certs", "renew", "--secret", "n/s", "--service", "s", "--webhook", "w"]


def test_certs_renew_in_the_cluster_without_a_usable_kubeconfig_says_so(tmp_path, capsys):
    code = main([*CLUSTER_RENEW, "--kubeconfig", str(tmp_path / "missing")])
    assert code == 1
    assert "no usable cluster configuration" in capsys.readouterr().err


def test_certs_renew_with_the_cluster_out_of_reach_says_so(tmp_path, capsys):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
        "current-context: c\n"
    )
    code = main([*CLUSTER_RENEW, "--kubeconfig", str(kubeconfig)])
    assert code == 1
    assert "cannot reach the cluster" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["certs", "renew", "--service", "s", "--webhook", "w"], "--secret"),
        (["certs", "renew", "--secret", "n/s", "--webhook", "w"], "--service"),
        ([*CLUSTER_RENEW, "--cert-lifetime", "ten days"], "is not a duration"),
        ([*CLUSTER_RENEW, "--cert-lifetime", "0d"], "is not a duration"),
        ([*CLUSTER_RENEW, "--cert-lifetime", "10m", "--cert-renew-before", "1h"], "margin must be shorter"),
        ([*CLUSTER_RENEW, "--ca-lifetime", "30d"], "the CA's renewal margin"),
        (["certs", "renew", "--secret", "no-slash", "--service", "s", "--webhook", "w"], "NAMESPACE/NAME"),
    ],
)
def test_certs_renew_refuses_bad_arguments_with_a_clear_line(argv, message, capsys, tmp_path):
    code = main([*argv, "--kubeconfig", str(tmp_path / "missing")])
    assert code in (1, 2)
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
