"""The objects a Volcano Job owns besides its pods: the svc plugin's Service, ConfigMap and
NetworkPolicy, the ssh plugin's Secret, the PodGroup."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from jobgate.families.volcano.rules.defaults import DEFAULT_QUEUE
from jobgate.rules.dicts import as_int

from ...lifecycle_policy import (
    JOB_NAME_KEY,
    JOB_NAMESPACE_KEY,
    POD_GROUP_API,
)
from .plugins import SSH_DEFAULT_PORT, _flag, _int_arg, env_key, task_hosts


def _metadata(identity: dict[str, Any], name: str, labels: dict[str, str]) -> dict[str, Any]:
    owner = {
        "apiVersion": identity["api_version"],
        "kind": identity["kind"],
        "name": identity["name"],
        "uid": identity["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return {"name": name, "namespace": identity["namespace"], "labels": dict(labels), "ownerReferences": [owner]}


def svc_service(identity: dict[str, Any], labels: dict[str, str], args: dict[str, str]) -> dict[str, Any]:
    name = identity["name"]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(identity, name, labels),
        "spec": {
            "clusterIP": "None",
            "selector": {JOB_NAME_KEY: name, JOB_NAMESPACE_KEY: identity["namespace"]},
            "publishNotReadyAddresses": _flag(args, "publish-not-ready-addresses", False),
        },
    }


def svc_config_map(identity: dict[str, Any], labels: dict[str, str], tasks: list[dict[str, Any]]) -> dict[str, Any]:
    data: dict[str, str] = {}
    for task in tasks:
        hosts = task_hosts(identity["name"], task)
        data[f"{task.get('name')}.host"] = "\n".join(hosts)
        data[f"{env_key(task.get('name') or '')}_HOSTS"] = ",".join(hosts)
        data[f"{env_key(task.get('name') or '')}_NUM"] = str(len(hosts))
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(identity, f"{identity['name']}-svc", labels),
        "data": data,
    }


def svc_network_policy(identity: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    """Volcano's svc NetworkPolicy ``<job>``: the job's pods accept traffic from the job's pods only."""
    job_pods = {"matchLabels": {JOB_NAME_KEY: identity["name"], JOB_NAMESPACE_KEY: identity["namespace"]}}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _metadata(identity, identity["name"], labels),
        "spec": {
            "podSelector": job_pods,
            "ingress": [{"from": [{"podSelector": job_pods}]}],
            "policyTypes": ["Ingress"],
        },
    }


def content_digest(obj: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(obj.get("data"), sort_keys=True).encode()).hexdigest()[:16]


def ssh_key_pair() -> tuple[str, str]:
    """A fresh RSA-2048 key: PKCS#1 PEM private key and OpenSSH public key."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    return private, public + "\n"


def ssh_secret(
    identity: dict[str, Any], labels: dict[str, str], tasks: list[dict[str, Any]], args: dict[str, str]
) -> dict[str, Any]:
    job = identity["name"]
    private, public = args.get("ssh-private-key"), args.get("ssh-public-key")
    if not private or not public:
        private, public = ssh_key_pair()
    port = _int_arg(args, "ssh-port", SSH_DEFAULT_PORT)
    config = ["StrictHostKeyChecking no", "UserKnownHostsFile /dev/null"]
    for task in tasks:
        for i in range(as_int(task.get("replicas")) or 0):
            pod = f"{job}-{task.get('name')}-{i}"
            config += [f"Host {pod}", f"  HostName {pod}.{job}", f"  Port {port}"]
    files = {"id_rsa": private, "id_rsa.pub": public, "authorized_keys": public, "config": "\n".join(config) + "\n"}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _metadata(identity, f"{job}-ssh", labels),
        "type": "Opaque",
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in files.items()},
    }


def pod_group(identity: dict[str, Any], labels: dict[str, str], spec: dict[str, Any]) -> dict[str, Any]:
    tasks = [t for t in spec.get("tasks") or [] if isinstance(t, dict)]
    group_spec: dict[str, Any] = {
        "minMember": as_int(spec.get("minAvailable")) or 0,
        "minTaskMember": {t.get("name"): as_int(t.get("minAvailable")) or 0 for t in tasks},
        "queue": spec.get("queue") or DEFAULT_QUEUE,
    }
    if spec.get("priorityClassName"):
        group_spec["priorityClassName"] = spec["priorityClassName"]
    return {
        "apiVersion": POD_GROUP_API,
        "kind": "PodGroup",
        "metadata": _metadata(identity, pod_group_name(identity), labels),
        "spec": group_spec,
    }


def pod_group_name(identity: dict[str, Any]) -> str:
    return f"{identity['name']}-{identity['uid']}"
