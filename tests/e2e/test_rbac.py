"""The RBAC in manifests/ grants each service account what it uses and nothing more."""

from __future__ import annotations

import subprocess

import pytest
from ruamel.yaml import YAML

from jobgate.engine.registry import served_kinds
from jobgate.generate.manifests import admission_only
from tests.e2e.conftest import REPO, Cluster, WebhookProcess, install_queue_crd, jobgate, token_kubeconfig

RBAC_KINDS = {"Namespace", "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"}
WEBHOOK = "system:serviceaccount:jobgate-system:jobgate-webhook"
CERTS = "system:serviceaccount:jobgate-system:jobgate-certs"
CONTROLLER = "system:serviceaccount:jobgate-system:jobgate-controller"

# (who, verb, resource, namespace or None, allowed)
MATRIX = [
    *[
        (WEBHOOK, verb, resource, namespace, False)
        for verb, resource, namespace in [
            ("get", "pods", "default"),
            ("list", "secrets", "jobgate-system"),
            ("get", "secrets/jobgate-webhook-tls", "jobgate-system"),
            ("create", "tfjobs.training.kubedl.io", "default"),
            ("get", "mutatingwebhookconfigurations/jobgate-mutating", None),
            ("patch", "mutatingwebhookconfigurations/jobgate-mutating", None),
            ("list", "customresourcedefinitions.apiextensions.k8s.io", None),
        ]
    ],
    # The webhook's one right: the watch behind Volcano's queue check.
    (WEBHOOK, "list", "queues.scheduling.volcano.sh", None, True),
    (WEBHOOK, "watch", "queues.scheduling.volcano.sh", None, True),
    *[
        (WEBHOOK, verb, "queues.scheduling.volcano.sh", None, False)
        for verb in ("get", "create", "update", "patch", "delete", "deletecollection")
    ],
    (WEBHOOK, "list", "podgroups.scheduling.volcano.sh", None, False),
    # JobSet's check of existing PVCs: one PVC read by name, never listed, watched or changed.
    (WEBHOOK, "get", "persistentvolumeclaims", "team-a", True),
    *[
        (WEBHOOK, verb, "persistentvolumeclaims", "team-a", False)
        for verb in ("list", "watch", "create", "update", "delete")
    ],
    (CERTS, "list", "queues.scheduling.volcano.sh", None, False),
    (CONTROLLER, "list", "queues.scheduling.volcano.sh", None, False),
    (CERTS, "create", "secrets", "jobgate-system", True),
    (CERTS, "get", "secrets/jobgate-webhook-tls", "jobgate-system", True),
    (CERTS, "update", "secrets/jobgate-webhook-tls", "jobgate-system", True),
    (CERTS, "get", "secrets/jobgate-ca", "jobgate-system", True),
    (CERTS, "update", "secrets/jobgate-ca", "jobgate-system", True),
    (CERTS, "delete", "secrets/jobgate-ca", "jobgate-system", False),
    (WEBHOOK, "get", "secrets/jobgate-ca", "jobgate-system", False),
    (CONTROLLER, "get", "secrets/jobgate-ca", "jobgate-system", False),
    (CERTS, "get", "secrets/other", "jobgate-system", False),
    (CERTS, "update", "secrets/other", "jobgate-system", False),
    (CERTS, "delete", "secrets/jobgate-webhook-tls", "jobgate-system", False),
    (CERTS, "list", "secrets", "jobgate-system", False),
    (CERTS, "create", "secrets", "default", False),
    (CERTS, "get", "mutatingwebhookconfigurations/jobgate-mutating", None, True),
    (CERTS, "patch", "mutatingwebhookconfigurations/jobgate-mutating", None, True),
    (CERTS, "patch", "validatingwebhookconfigurations/jobgate-validating", None, True),
    (CERTS, "patch", "mutatingwebhookconfigurations/someone-else", None, False),
    (CERTS, "delete", "mutatingwebhookconfigurations/jobgate-mutating", None, False),
    (CERTS, "create", "mutatingwebhookconfigurations", None, False),
    (CERTS, "list", "validatingwebhookconfigurations", None, False),
    (CERTS, "get", "pods", "jobgate-system", False),
    (CONTROLLER, "list", "pods", None, True),
    (CONTROLLER, "watch", "services", None, True),
    (CONTROLLER, "create", "pods", "team-a", True),
    (CONTROLLER, "delete", "pods", "team-a", True),
    (CONTROLLER, "patch", "pods", "team-a", False),
    (CONTROLLER, "update", "pods", "team-a", False),
    (CONTROLLER, "create", "services", "team-a", True),
    (CONTROLLER, "delete", "services", "team-a", True),
    (CONTROLLER, "list", "tfjobs.training.kubedl.io", None, True),
    (CONTROLLER, "watch", "mxjobs.mxnet.mlkube.io", None, True),
    (CONTROLLER, "delete", "xgboostjobs.training.kubedl.io", "team-a", True),
    (CONTROLLER, "update", "tfjobs.training.kubedl.io", "team-a", False),
    (CONTROLLER, "patch", "tfjobs.training.kubedl.io", "team-a", False),
    (CONTROLLER, "create", "tfjobs.training.kubedl.io", "team-a", False),
    (CONTROLLER, "update", "tfjobs.training.kubedl.io/status", "team-a", True),
    (CONTROLLER, "update", "mxjobs.mxnet.mlkube.io/status", "team-a", True),
    (CONTROLLER, "create", "events", "team-a", True),
    (CONTROLLER, "create", "configmaps", "team-a", True),
    (CONTROLLER, "list", "configmaps", "team-a", False),
    (CONTROLLER, "delete", "configmaps", "team-a", False),
    (CONTROLLER, "get", "secrets", "team-a", False),
    (CONTROLLER, "create", "secrets", "team-a", True),  # Volcano's ssh plugin
    (CONTROLLER, "delete", "secrets", "team-a", False),
    (CONTROLLER, "list", "secrets", None, False),
    (CONTROLLER, "create", "podgroups.scheduling.volcano.sh", "team-a", True),
    (CONTROLLER, "watch", "podgroups.scheduling.volcano.sh", None, True),  # gating on the PodGroup phase
    (CONTROLLER, "update", "configmaps", "team-a", True),  # Volcano svc hosts after a scale
    (CONTROLLER, "create", "networkpolicies.networking.k8s.io", "team-a", True),  # Volcano svc plugin
    (CONTROLLER, "delete", "networkpolicies.networking.k8s.io", "team-a", False),
    # Volcano's Commands (the shipped CRD): the controller takes (deletes) them, never writes one.
    *[(CONTROLLER, verb, "commands.bus.volcano.sh", None, True) for verb in ("list", "watch")],
    (CONTROLLER, "delete", "commands.bus.volcano.sh", "team-a", True),
    *[
        (CONTROLLER, verb, "commands.bus.volcano.sh", "team-a", False)
        for verb in ("get", "create", "update", "patch", "deletecollection")
    ],
    *[(who, "list", "commands.bus.volcano.sh", None, False) for who in (WEBHOOK, CERTS)],
    (CONTROLLER, "create", "leases.coordination.k8s.io", "jobgate-system", True),
    (CONTROLLER, "update", "leases.coordination.k8s.io/jobgate-controller", "jobgate-system", True),
    (CONTROLLER, "update", "leases.coordination.k8s.io/someone-else", "jobgate-system", False),
    (CONTROLLER, "create", "leases.coordination.k8s.io", "team-a", False),
    (CONTROLLER, "create", "mutatingwebhookconfigurations", None, False),
    # The DRA objects GPU limits count (webhook/devices.py): read, never written.
    *[
        (WEBHOOK, verb, f"{plural}.resource.k8s.io", None, True)
        for plural in ("resourceclaimtemplates", "resourceclaims", "deviceclasses")
        for verb in ("get", "list", "watch")
    ],
    *[
        (WEBHOOK, verb, f"{plural}.resource.k8s.io", "team-a", False)
        for plural in ("resourceclaimtemplates", "resourceclaims")
        for verb in ("create", "update", "delete")
    ],
    (WEBHOOK, "get", "resourceslices.resource.k8s.io", None, False),
]


def _every_family_matrix() -> list[tuple[str, str, str, str | None, bool]]:
    """Every served kind's resources: the controller reads, deletes and writes status, nothing else;
    the webhook and the certificate job get nothing at all. Families added later are covered too."""
    rows: list[tuple[str, str, str, str | None, bool]] = []
    for kind in served_kinds():
        resource = f"{kind.plural}.{kind.gvk.group}"
        # Kubeflow's kinds are only admitted: Kubeflow's operator runs them, jobgate's controller gets nothing.
        runs = not admission_only(kind)
        for verb in ("get", "list", "watch", "delete"):
            rows.append((CONTROLLER, verb, resource, "team-a", runs))
        for verb in ("create", "update", "patch", "deletecollection"):
            rows.append((CONTROLLER, verb, resource, "team-a", False))
        rows.append((CONTROLLER, "update", f"{resource}/status", "team-a", runs))
        rows.append((CONTROLLER, "patch", f"{resource}/status", "team-a", False))
        for who in (WEBHOOK, CERTS):
            for verb in ("get", "list", "watch", "create", "update", "delete"):
                rows.append((who, verb, resource, "team-a", False))
            rows.append((who, "update", f"{resource}/status", "team-a", False))
    # Cluster-wide things nobody needs.
    for who in (WEBHOOK, CERTS, CONTROLLER):
        rows += [
            (who, "create", "clusterrolebindings.rbac.authorization.k8s.io", None, False),
            (who, "escalate", "clusterroles.rbac.authorization.k8s.io", None, False),
            (who, "impersonate", "users", None, False),
            (who, "create", "customresourcedefinitions.apiextensions.k8s.io", None, False),
            (who, "get", "nodes", None, False),
            (who, "delete", "nodes", None, False),
            (who, "get", "secrets", "kube-system", False),
        ]
    return rows


MATRIX += _every_family_matrix()


@pytest.fixture(scope="module")
def rbac(cluster: Cluster) -> Cluster:
    rendered = cluster.kubectl("kustomize", str(REPO / "manifests/overlays/self-signed"), check=True).stdout
    documents = [d for d in YAML(typ="safe").load_all(rendered) if d and d["kind"] in RBAC_KINDS]
    stream = __import__("io").StringIO()
    YAML(typ="safe").dump_all(documents, stream)
    cluster.kubectl("apply", "-f", "-", input=stream.getvalue(), check=True)
    install_queue_crd(cluster)  # can-i answers "no" for a resource the cluster does not serve
    return cluster


@pytest.mark.parametrize("case", MATRIX, ids=lambda c: f"{c[0].rsplit(':', 1)[1]}-{c[1]}-{c[2]}-{c[3]}")
def test_can_i(rbac: Cluster, case: tuple[str, str, str, str | None, bool]):
    who, verb, resource, namespace, allowed = case
    args = ["auth", "can-i", verb, resource.removesuffix("/status"), "--as", who]
    args += ["--subresource", "status"] if resource.endswith("/status") else []
    args += ["-n", namespace] if namespace else []
    result = rbac.kubectl(*args)
    assert result.stdout.strip() == ("yes" if allowed else "no"), (result.stdout, result.stderr)


def test_the_certs_job_can_do_its_work_with_its_own_identity(rbac: Cluster, webhook_process: WebhookProcess, tmp_path):
    kubeconfig = token_kubeconfig(rbac, "jobgate-certs", tmp_path / "certs.kubeconfig")
    tls_dir = webhook_process.tls_dir  # the webhook's own CA: injecting it changes nothing for the session
    command = [
        "certs", "inject", "--kubeconfig", kubeconfig, "--ca-file", str(tls_dir / "ca.crt"),
        "--webhook", "jobgate-mutating", "--webhook", "jobgate-validating",
        "--secret", "jobgate-system/jobgate-webhook-tls", "--tls-dir", str(tls_dir),
    ]  # fmt: skip
    first = jobgate(*command)
    assert first.returncode == 0, first.stderr
    assert "created Secret jobgate-system/jobgate-webhook-tls" in first.stdout
    second = jobgate(*command)
    assert second.returncode == 0, second.stderr
    assert "replaced Secret" in second.stdout
    secret = rbac.get_json("secret", "jobgate-webhook-tls", "-n", "jobgate-system")
    assert secret["type"] == "kubernetes.io/tls"
    assert set(secret["data"]) == {"tls.crt", "tls.key", "ca.crt"}


def test_the_webhook_identity_cannot_inject(rbac: Cluster, webhook_process: WebhookProcess, tmp_path):
    kubeconfig = token_kubeconfig(rbac, "jobgate-webhook", tmp_path / "webhook.kubeconfig")
    result = jobgate(
        "certs", "inject", "--kubeconfig", kubeconfig, "--ca-file", str(webhook_process.tls_dir / "ca.crt"),
        "--webhook", "jobgate-mutating",
    )  # fmt: skip
    assert result.returncode == 1
    assert "Forbidden" in result.stderr
    assert "no MutatingWebhookConfiguration or ValidatingWebhookConfiguration named jobgate-mutating" in result.stderr


def test_inject_names_a_missing_configuration(rbac: Cluster, webhook_process: WebhookProcess):
    result = jobgate(
        "certs", "inject", "--kubeconfig", rbac.kubeconfig, "--ca-file", str(webhook_process.tls_dir / "ca.crt"),
        "--webhook", "no-such-webhook",
    )  # fmt: skip
    assert result.returncode == 1
    assert "no MutatingWebhookConfiguration or ValidatingWebhookConfiguration named no-such-webhook" in result.stderr


def test_kubectl_is_the_built_one(cluster: Cluster):
    version = subprocess.run(
        [str(cluster.plane.kubectl), "version", "--client"], capture_output=True, text=True, check=True
    )
    assert "v1.36.3" in version.stdout
