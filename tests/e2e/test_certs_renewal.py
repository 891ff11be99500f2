"""`jobgate certs renew` against a real apiserver: what each run writes, and what it leaves alone.

The session's own webhook configurations stay untouched: these runs manage a pair of
configurations and Secrets of their own (the certificate Job's RBAC, which names jobgate's
objects only, is checked in test_rbac.py and exercised by the in-cluster suite).
"""

from __future__ import annotations

import base64
import datetime
import time

import pytest
from cryptography import x509

from jobgate.certs.authority import BACKDATE
from jobgate.certs.renewal import signed_by
from tests.e2e.conftest import Cluster, jobgate

pytestmark = pytest.mark.e2e

NS = "renewal-test"
MUTATING, VALIDATING = "renewal-test-mutating", "renewal-test-validating"
CONFIGURATIONS = f"""
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {{name: {MUTATING}}}
webhooks:
  - name: m.renewal.test
    clientConfig: {{service: {{name: renewal, namespace: {NS}, path: /mutate}}}}
    rules: [{{apiGroups: [renewal.test], apiVersions: [v1], operations: [CREATE], resources: [nothings]}}]
    sideEffects: None
    admissionReviewVersions: [v1]
    failurePolicy: Ignore
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {{name: {VALIDATING}}}
webhooks:
  - name: v1.renewal.test
    clientConfig: {{service: {{name: renewal, namespace: {NS}, path: /validate}}}}
    rules: [{{apiGroups: [renewal.test], apiVersions: [v1], operations: [CREATE], resources: [nothings]}}]
    sideEffects: None
    admissionReviewVersions: [v1]
    failurePolicy: Ignore
  - name: v2.renewal.test
    clientConfig: {{service: {{name: renewal, namespace: {NS}, path: /validate}}}}
    rules: [{{apiGroups: [renewal.test], apiVersions: [v1], operations: [UPDATE], resources: [nothings]}}]
    sideEffects: None
    admissionReviewVersions: [v1]
    failurePolicy: Ignore
"""


@pytest.fixture(scope="module")
def renewal(cluster: Cluster) -> Cluster:
    cluster.kubectl("create", "namespace", NS)
    cluster.kubectl("apply", "-f", "-", input=CONFIGURATIONS, check=True)
    return cluster


def renew(cluster: Cluster, *extra: str):
    return jobgate(
        "certs", "renew", "--kubeconfig", cluster.kubeconfig, "--secret", f"{NS}/renewal-tls",
        "--ca-secret", f"{NS}/renewal-ca", "--service", "renewal", "--webhook", MUTATING, "--webhook", VALIDATING,
        *extra,
    )  # fmt: skip


def secret(cluster: Cluster, name: str) -> tuple[dict[str, bytes], str]:
    found = cluster.get_json("secret", name, "-n", NS)
    return {k: base64.b64decode(v) for k, v in found["data"].items()}, found["metadata"]["resourceVersion"]


def bundles(cluster: Cluster) -> list[bytes]:
    found = []
    for kind, name in (("mutatingwebhookconfiguration", MUTATING), ("validatingwebhookconfiguration", VALIDATING)):
        for webhook in cluster.get_json(kind, name)["webhooks"]:
            found.append(base64.b64decode(webhook["clientConfig"]["caBundle"]))
    return found


def state(cluster: Cluster) -> tuple[list[x509.Certificate], x509.Certificate, x509.Certificate, bytes]:
    """The trusted CAs, the current CA, the serving certificate, and the bundle every holder must agree on."""
    ca, _ = secret(cluster, "renewal-ca")
    tls, _ = secret(cluster, "renewal-tls")
    assert tls["ca.crt"] == ca["trusted.crt"]
    assert set(bundles(cluster)) == {ca["trusted.crt"]}, "a webhook's caBundle is not the trusted bundle"
    return (
        x509.load_pem_x509_certificates(ca["trusted.crt"]),
        x509.load_pem_x509_certificate(ca["ca.crt"]),
        x509.load_pem_x509_certificates(tls["tls.crt"])[0],
        ca["trusted.crt"],
    )


def versions(cluster: Cluster) -> list[str]:
    return [
        secret(cluster, "renewal-ca")[1],
        secret(cluster, "renewal-tls")[1],
        cluster.get_json("mutatingwebhookconfiguration", MUTATING)["metadata"]["resourceVersion"],
        cluster.get_json("validatingwebhookconfiguration", VALIDATING)["metadata"]["resourceVersion"],
    ]


def test_the_first_run_creates_the_ca_the_pair_and_every_ca_bundle(renewal: Cluster):
    result = renew(renewal)
    assert result.returncode == 0, result.stderr
    assert "no CA yet" in result.stdout and "caBundle current on 2 webhook(s)" in result.stdout
    trusted, ca, serving, _ = state(renewal)
    assert trusted == [ca] and signed_by(serving, ca)
    names = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "renewal.renewal-test.svc" in names.get_values_for_type(x509.DNSName)
    assert renewal.get_json("secret", "renewal-tls", "-n", NS)["type"] == "kubernetes.io/tls"


def test_a_run_with_nothing_due_writes_nothing(renewal: Cluster):
    before = versions(renewal)
    result = renew(renewal)
    assert result.returncode == 0, result.stderr
    assert "nothing to do" in result.stdout
    assert versions(renewal) == before


def test_a_serving_certificate_inside_its_margin_is_reissued_by_the_same_ca(renewal: Cluster):
    # A fresh 10-minute pair, due 3 s after it is made (a rotation makes one now; its overlap is 1 s).
    short = ("--cert-lifetime", "10m", "--cert-renew-before", "9m57s", "--ca-overlap", "1s")
    result = renew(renewal, "--rotate-ca", *short)
    assert result.returncode == 0, result.stderr
    _, ca, serving, _ = state(renewal)
    time.sleep(4)
    result = renew(renewal, *short)
    assert result.returncode == 0, result.stderr
    assert "the serving certificate expires" in result.stdout
    trusted, ca_after, serving_after, _ = state(renewal)
    assert ca_after == ca and trusted == [ca]
    assert serving_after.serial_number != serving.serial_number and signed_by(serving_after, ca)


def test_ca_rotation_trusts_both_cas_then_only_the_new_one_after_the_overlap(renewal: Cluster):
    _, old_ca, _, _ = state(renewal)
    overlap = ("--ca-overlap", "20s")
    result = renew(renewal, "--rotate-ca", *overlap)
    assert result.returncode == 0, result.stderr
    trusted, ca, serving, _ = state(renewal)
    assert ca != old_ca and trusted == [ca, old_ca] and signed_by(serving, ca)
    assert renew(renewal, *overlap).returncode == 0
    assert state(renewal)[0] == [ca, old_ca], "the old CA was dropped before the overlap ended"
    overlap_end = ca.not_valid_before_utc + BACKDATE + datetime.timedelta(seconds=20)
    time.sleep(max(0.0, (overlap_end - datetime.datetime.now(datetime.UTC)).total_seconds()) + 1)
    result = renew(renewal, *overlap)
    assert result.returncode == 0, result.stderr
    assert "stopped trusting the CA" in result.stdout
    assert state(renewal)[0] == [ca]


def test_a_ca_secret_that_cannot_be_read_is_never_replaced(renewal: Cluster):
    renewal.kubectl("create", "secret", "generic", "broken-ca", "-n", NS, "--from-literal=ca.crt=garbage", check=True)
    result = jobgate(
        "certs", "renew", "--kubeconfig", renewal.kubeconfig, "--secret", f"{NS}/renewal-tls",
        "--ca-secret", f"{NS}/broken-ca", "--service", "renewal", "--webhook", MUTATING,
    )  # fmt: skip
    assert result.returncode == 1
    assert f"Secret {NS}/broken-ca does not hold a usable CA" in result.stderr and "Traceback" not in result.stderr
    assert secret(renewal, "broken-ca")[0] == {"ca.crt": b"garbage"}
