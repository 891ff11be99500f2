"""The Deployments in manifests/base run under PodSecurity admission at ``restricted``.

Their pod templates are created as Pods (server-side dry run) in a namespace that enforces
``restricted``, on the real control plane: the apiserver's own PodSecurity plugin judges them.
"""

from __future__ import annotations

import json

import pytest
from ruamel.yaml import YAML

from tests.e2e.conftest import REPO, Cluster

NAMESPACE = "jobgate-psa-restricted"
LEVEL = "restricted"


@pytest.fixture(scope="module")
def restricted_namespace(cluster: Cluster) -> str:
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": NAMESPACE,
            "labels": {
                "pod-security.kubernetes.io/enforce": LEVEL,
                "pod-security.kubernetes.io/enforce-version": "latest",
                "pod-security.kubernetes.io/warn": LEVEL,
            },
        },
    }
    cluster.kubectl("apply", "-f", "-", input=json.dumps(namespace), check=True)
    return NAMESPACE


def deployments() -> list[dict]:
    documents = []
    for path in sorted((REPO / "manifests" / "base").rglob("*.yaml")):
        for document in YAML(typ="safe").load_all(path.read_text()):
            if isinstance(document, dict) and document.get("kind") == "Deployment":
                documents.append(document)
    return documents


def pod_from(deployment: dict, namespace: str) -> dict:
    template = deployment["spec"]["template"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": deployment["metadata"]["name"], "namespace": namespace},
        "spec": template["spec"],
    }


def test_there_are_deployments_to_check():
    assert {d["metadata"]["name"] for d in deployments()} >= {"jobgate", "jobgate-controller"}


@pytest.mark.parametrize("deployment", deployments(), ids=lambda d: d["metadata"]["name"])
def test_deployment_pod_is_admitted_at_restricted(cluster: Cluster, restricted_namespace: str, deployment: dict):
    pod = pod_from(deployment, restricted_namespace)
    result = cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=json.dumps(pod))
    assert result.returncode == 0, result.stderr
    assert "PodSecurity" not in result.stderr, result.stderr


@pytest.mark.parametrize("deployment", deployments(), ids=lambda d: d["metadata"]["name"])
def test_deployment_itself_draws_no_pod_security_warning(cluster: Cluster, restricted_namespace: str, deployment: dict):
    manifest = json.loads(json.dumps(deployment))
    manifest["metadata"]["namespace"] = restricted_namespace
    result = cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=json.dumps(manifest))
    assert result.returncode == 0, result.stderr
    assert "would violate PodSecurity" not in result.stderr, result.stderr


def test_the_namespace_does_enforce(cluster: Cluster, restricted_namespace: str):
    # Without this, a namespace that enforced nothing would let the tests above pass vacuously.
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "unrestricted", "namespace": restricted_namespace},
        "spec": {"containers": [{"name": "c", "image": "example/image:1"}]},
    }
    result = cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=json.dumps(pod))
    assert result.returncode != 0
    assert 'violates PodSecurity "restricted:latest"' in result.stderr, result.stderr
