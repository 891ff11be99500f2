"""Write a CA into webhook configurations (``caBundle``) and a serving pair into a TLS Secret."""

from __future__ import annotations

import base64
import contextlib
import datetime
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509

from .authority import cert_pem, key_pem
from .renewal import (
    Authority,
    CertificateState,
    Lifetimes,
    RenewalPlan,
    ServingPair,
    authority_is_consistent,
    plan_renewal,
)


class InjectError(Exception):
    pass


@dataclass(frozen=True)
class Injected:
    configuration: str
    kind: str
    webhooks: int


def _client(kubeconfig: str | None) -> Any:
    from kubernetes import client, config

    try:
        if kubeconfig:
            config.load_kube_config(config_file=kubeconfig)
        else:
            try:
                config.load_incluster_config()
            except config.ConfigException:
                config.load_kube_config()
    except (config.ConfigException, OSError) as exc:
        where = kubeconfig or "in-cluster or ~/.kube/config"
        raise InjectError(f"no usable cluster configuration ({where}): {exc}") from None
    return client


def inject_ca_bundle(
    kubeconfig: str | None, bundle: bytes, names: list[str], source: str = "the bundle"
) -> list[Injected]:
    """Set ``clientConfig.caBundle`` of every webhook in the named configurations (mutating or validating)."""
    from kubernetes.client.exceptions import ApiException

    if b"BEGIN CERTIFICATE" not in bundle:
        raise InjectError(f"{source} holds no PEM certificate")
    encoded = base64.b64encode(bundle).decode("ascii")
    client = _client(kubeconfig)
    api = client.AdmissionregistrationV1Api()
    kinds = (
        (
            "MutatingWebhookConfiguration",
            api.read_mutating_webhook_configuration,
            api.patch_mutating_webhook_configuration,
        ),
        (
            "ValidatingWebhookConfiguration",
            api.read_validating_webhook_configuration,
            api.patch_validating_webhook_configuration,
        ),
    )
    done: list[Injected] = []
    for name in names:
        found = False
        refused: list[str] = []
        for kind, read, patch in kinds:
            try:
                configuration = read(name)
            except ApiException as exc:
                # Least-privilege RBAC names one kind per configuration: a refused probe of the
                # other kind just means "not this one".
                if exc.status == 403:
                    refused.append(kind)
                    continue
                if exc.status == 404:
                    continue
                raise InjectError(f"cannot read {kind} {name}: {exc.reason}") from None
            found = True
            webhooks = configuration.webhooks or []
            operations = [
                {"op": "add", "path": f"/webhooks/{index}/clientConfig/caBundle", "value": encoded}
                for index in range(len(webhooks))
            ]
            # Refuse to patch if the list changed since it was read, rather than patch the wrong entry.
            guard = [{"op": "test", "path": f"/webhooks/{i}/name", "value": w.name} for i, w in enumerate(webhooks)]
            try:
                patch(name, guard + operations)
            except ApiException as exc:
                raise InjectError(f"cannot patch {kind} {name}: {exc.reason}") from None
            done.append(Injected(name, kind, len(webhooks)))
        if not found:
            why = f" (reading {' and '.join(refused)} was Forbidden)" if refused else ""
            raise InjectError(f"no MutatingWebhookConfiguration or ValidatingWebhookConfiguration named {name}{why}")
    return done


def store_tls_secret(kubeconfig: str | None, secret: str, tls_dir: Path) -> str:
    """Create or replace ``namespace/name`` as a kubernetes.io/tls Secret from ``tls_dir``."""
    from kubernetes.client.exceptions import ApiException

    namespace, _, name = secret.partition("/")
    if not namespace or not name:
        raise InjectError(f"--secret must be NAMESPACE/NAME, not {secret!r}")
    data = {
        key: base64.b64encode((tls_dir / key).read_bytes()).decode("ascii")
        for key in ("tls.crt", "tls.key", "ca.crt")
        if (tls_dir / key).exists()
    }
    client = _client(kubeconfig)
    api = client.CoreV1Api()
    body = client.V1Secret(
        metadata=client.V1ObjectMeta(name=name, namespace=namespace, labels={"app.kubernetes.io/part-of": "jobgate"}),
        type="kubernetes.io/tls",
        data=data,
    )
    try:
        api.create_namespaced_secret(namespace, body)
        return "created"
    except ApiException as exc:
        if exc.status != 409:
            raise InjectError(f"cannot create Secret {secret}: {exc.reason}") from None
    try:
        api.replace_namespaced_secret(name, namespace, body)
    except ApiException as exc:
        raise InjectError(f"cannot replace Secret {secret}: {exc.reason}") from None
    return "replaced"


def _read_secret(api: Any, secret: str) -> tuple[dict[str, bytes], str] | None:
    """The data of ``namespace/name`` and its resourceVersion; None when there is no such Secret."""
    from kubernetes.client.exceptions import ApiException

    namespace, _, name = secret.partition("/")
    try:
        found = api.read_namespaced_secret(name, namespace)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise InjectError(f"cannot read Secret {secret}: {exc.reason}") from None
    data = {key: base64.b64decode(value) for key, value in (found.data or {}).items()}
    return data, found.metadata.resource_version


def _write_secret(
    client: Any, secret: str, secret_type: str, data: dict[str, bytes], resource_version: str | None
) -> None:
    """Create ``secret``, or replace the version that was read: a concurrent writer makes this run fail, not win."""
    from kubernetes.client.exceptions import ApiException

    namespace, _, name = secret.partition("/")
    api = client.CoreV1Api()
    body = client.V1Secret(
        metadata=client.V1ObjectMeta(
            name=name,
            namespace=namespace,
            labels={"app.kubernetes.io/part-of": "jobgate"},
            resource_version=resource_version,
        ),
        type=secret_type,
        data={key: base64.b64encode(value).decode("ascii") for key, value in data.items()},
    )
    try:
        if resource_version is None:
            api.create_namespaced_secret(namespace, body)
        else:
            api.replace_namespaced_secret(name, namespace, body)
    except ApiException as exc:
        if exc.status == 409:
            raise InjectError(f"Secret {secret} changed while this run read it (another run?); run again") from None
        raise InjectError(f"cannot write Secret {secret}: {exc.reason}") from None


def _secret_name(secret: str, flag: str) -> str:
    namespace, _, name = secret.partition("/")
    if not namespace or not name or "/" in name:
        raise InjectError(f"{flag} must be NAMESPACE/NAME, not {secret!r}")
    return secret


def _authority_from(data: dict[str, bytes], secret: str) -> tuple[Authority, tuple[x509.Certificate, ...]]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    try:
        cert = x509.load_pem_x509_certificate(data["ca.crt"])
        key = serialization.load_pem_private_key(data["ca.key"], password=None)
        trusted = tuple(x509.load_pem_x509_certificates(data["trusted.crt"])) if "trusted.crt" in data else (cert,)
    except (KeyError, ValueError) as exc:
        # Never replace a CA that cannot be read: pods may serve certificates it signed.
        raise InjectError(f"Secret {secret} does not hold a usable CA (ca.crt, ca.key): {exc}") from None
    authority = Authority(key, cert)  # type: ignore[arg-type]
    if not isinstance(key, ec.EllipticCurvePrivateKey) or not authority_is_consistent(authority):
        raise InjectError(f"Secret {secret}: ca.key is not the key of ca.crt")
    return authority, trusted


def _serving_from(data: dict[str, bytes]) -> tuple[ServingPair | None, tuple[x509.Certificate, ...]]:
    """The pair in place (None when unreadable: it is then re-issued) and the CAs its ca.crt trusts."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    trusted: tuple[x509.Certificate, ...] = ()
    with contextlib.suppress(ValueError):  # an unreadable bundle trusts nothing: the pair is re-issued
        trusted = tuple(x509.load_pem_x509_certificates(data["ca.crt"])) if "ca.crt" in data else ()
    try:
        cert = x509.load_pem_x509_certificates(data["tls.crt"])[0]
        key = serialization.load_pem_private_key(data["tls.key"], password=None)
    except (KeyError, ValueError, IndexError):
        return None, trusted
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        return None, trusted
    return ServingPair(key, cert), trusted


@dataclass(frozen=True)
class RenewalOutcome:
    plan: RenewalPlan
    injected: list[Injected]


def renew_in_cluster(
    kubeconfig: str | None,
    *,
    secret: str,
    ca_secret: str,
    dns_names: list[str],
    webhooks: list[str],
    lifetimes: Lifetimes,
    rotate_ca: bool = False,
    settle: float = 5.0,
    now: datetime.datetime | None = None,
) -> RenewalOutcome:
    """One renewal run against the cluster: read both Secrets, decide, then write the CA Secret, the
    caBundles and the serving Secret in that order (a new CA is trusted before anything it signed is served)."""
    import time

    _secret_name(secret, "--secret")
    _secret_name(ca_secret, "--ca-secret")
    client = _client(kubeconfig)
    core = client.CoreV1Api()
    ca_found = _read_secret(core, ca_secret)
    serving_found = _read_secret(core, secret)
    serving, trusted_by_serving = _serving_from(serving_found[0]) if serving_found else (None, ())
    if ca_found:
        authority, trusted = _authority_from(ca_found[0], ca_secret)
    else:
        # First run, or a Secret made before the CA was kept: the CAs its pods are trusted by stay
        # trusted through the overlap, so replacing them fails no admission.
        authority, trusted = None, trusted_by_serving
    current = CertificateState(authority, trusted, serving)
    plan = plan_renewal(current, dns_names, lifetimes, now or datetime.datetime.now(datetime.UTC), rotate_ca=rotate_ca)
    state = plan.state
    assert state.authority is not None and state.serving is not None
    bundle = cert_pem(*state.trusted)
    if plan.ca_changed or plan.bundle_changed or ca_found is None:
        _write_secret(
            client,
            ca_secret,
            "Opaque",
            {"ca.crt": cert_pem(state.authority.cert), "ca.key": key_pem(state.authority.key), "trusted.crt": bundle},
            ca_found[1] if ca_found else None,
        )
    injected = inject_ca_bundle(kubeconfig, bundle, webhooks)
    served_bundle = serving_found[0].get("ca.crt") if serving_found else None
    if plan.serving_changed or served_bundle != bundle:
        if plan.bundle_changed and plan.serving_changed:
            # The apiserver reads webhook configurations through an informer: let it see the new bundle.
            time.sleep(settle)
        _write_secret(
            client,
            secret,
            "kubernetes.io/tls",
            {"tls.crt": cert_pem(state.serving.cert), "tls.key": key_pem(state.serving.key), "ca.crt": bundle},
            serving_found[1] if serving_found else None,
        )
    return RenewalOutcome(plan, injected)
