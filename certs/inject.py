"""Write a CA into webhook configurations (``caBundle``) and a serving pair into a TLS Secret."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path
from typing import Any


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


def inject_ca_bundle(kubeconfig: str | None, ca_file: Path, names: list[str]) -> list[Injected]:
    """Set ``clientConfig.caBundle`` of every webhook in the named configurations (mutating or validating)."""
    from kubernetes.client.exceptions import ApiException

    bundle = ca_file.read_bytes()
    if b"BEGIN CERTIFICATE" not in bundle:
        raise InjectError(f"{ca_file} holds no PEM certificate")
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
