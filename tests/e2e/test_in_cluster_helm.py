"""jobgate installed with ``helm install charts/jobgate`` and non-default values on a fresh
in-cluster node, as a user of the chart would: 3 webhook replicas, failurePolicy Ignore, a
namespaceSelector, a validating timeout, resources, one controller replica, a stricter PDB.

The namespace is created first and labelled for PodSecurity ``restricted`` (helm install stores
its release there before anything else). The certificate Job writes the Secret and both caBundles,
the three webhook pods become Ready under the restricted policy, and the values reach the cluster:
a valid job in a selected namespace is stored with jobgate's defaults, an invalid one is refused,
and the same invalid job in a namespace the selector leaves out is admitted unchecked. Then
``helm upgrade`` changes the replicas, and ``helm uninstall`` removes jobgate but keeps the CRDs.

The node is this module's own (module scope): the kustomize deployment of the other in-cluster
modules and this release never share a cluster.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from envtest.deploy import PROBE, PROBE_SIGN
from envtest.node import JOB_IMAGE
from tests.e2e.conftest import IN_CI, REPO, Cluster, jobgate, running_node, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.node]

SYSTEM = "jobgate-system"
CHECKED = "helm-checked"  # selected by the namespaceSelector below
UNCHECKED = "helm-unchecked"  # not selected: the webhooks never see its jobs
SELECTOR_LABEL = "jobgate.dev/admission"
VALUES = {
    "image": {"repository": "jobgate.local/jobgate", "pullPolicy": "Never"},
    "admission": {
        "failurePolicy": "Ignore",
        "namespaceSelector": {"matchLabels": {SELECTOR_LABEL: "enabled"}},
        "validatingTimeoutSeconds": 8,
    },
    "webhook": {
        "replicas": 3,
        "resources": {"requests": {"cpu": "50m", "memory": "96Mi"}, "limits": {"memory": "320Mi"}},
        "podDisruptionBudget": {"minAvailable": 2},
    },
    "controller": {"replicas": 1},
}


@pytest.fixture(scope="module")
def helm_node() -> Iterator[Cluster]:
    """A fresh in-cluster node of this module's own, with jobgate's image imported."""
    from envtest import image, tools
    from envtest.node import Node

    for reason in (tools.unavailable_reason(), image.build_unavailable_reason()):
        if reason and not IN_CI:
            pytest.skip(f"cannot install the chart here: {reason}")
    if Node.running is not None:  # a session node of modules that have run: it gives way
        Node.running.give_way = True
    with running_node(lambda: Node(in_cluster=True, give_way=True)) as node:
        assert node.plane is not None
        image.import_image(node, image.build(log=lambda _line: None), log=lambda _line: None)
        yield Cluster(node.plane)


@pytest.fixture(scope="module")
def helm(helm_node: Cluster, tmp_path_factory: pytest.TempPathFactory):
    from envtest import tools

    built = tools.build(log=lambda _line: None)
    environment = built.env(home=tmp_path_factory.mktemp("helm-home"))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [str(built.helm), "--kubeconfig", helm_node.kubeconfig, *args]
        return subprocess.run(command, capture_output=True, text=True, env=environment, timeout=600, check=False)

    return run


@pytest.fixture(scope="module")
def installed(helm_node: Cluster, helm, tmp_path_factory: pytest.TempPathFactory) -> Cluster:
    cluster = helm_node
    cluster.kubectl("create", "namespace", SYSTEM, check=True)
    cluster.kubectl("label", "namespace", SYSTEM, "pod-security.kubernetes.io/enforce=restricted", check=True)
    values: Path = tmp_path_factory.mktemp("values") / "values.yaml"
    values.write_text(json.dumps(VALUES))
    chart = str(REPO / "charts" / "jobgate")
    # --wait: every Deployment Ready, which needs the certificate Job's Secret first.
    result = helm("install", "jobgate", chart, "--namespace", SYSTEM, "--values", str(values), "--wait",
                  "--timeout", "5m")  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    for namespace, labels in ((CHECKED, [f"{SELECTOR_LABEL}=enabled"]), (UNCHECKED, [])):
        cluster.kubectl("create", "namespace", namespace, check=True)
        if labels:
            cluster.kubectl("label", "namespace", namespace, *labels, check=True)
    return cluster


def _pods(cluster: Cluster, selector: str) -> list[dict]:
    return cluster.get_json("pods", "-n", SYSTEM, "-l", selector)["items"]


def test_the_release_is_deployed_and_the_certificate_job_completed(installed: Cluster, helm):
    status = helm("status", "jobgate", "--namespace", SYSTEM, "-o", "json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["info"]["status"] == "deployed"
    installed.kubectl("wait", "--for=condition=Complete", "job/jobgate-certs", "-n", SYSTEM, "--timeout=120s",
                      check=True)  # fmt: skip
    secret = installed.get_json("secret", "jobgate-webhook-tls", "-n", SYSTEM)
    for kind, name in (("mutatingwebhookconfiguration", "jobgate-mutating"),
                       ("validatingwebhookconfiguration", "jobgate-validating")):  # fmt: skip
        (hook,) = installed.get_json(kind, name)["webhooks"]
        assert hook["clientConfig"]["caBundle"] == secret["data"]["ca.crt"]


def test_three_webhook_pods_are_ready_under_pod_security_restricted(installed: Cluster):
    webhooks = _pods(installed, "app.kubernetes.io/name=jobgate")
    assert len(webhooks) == 3
    for pod in webhooks:
        assert all(c["ready"] for c in pod["status"]["containerStatuses"]), pod["status"]
        (container,) = pod["spec"]["containers"]
        assert container["image"].startswith("jobgate.local/jobgate:") and container["imagePullPolicy"] == "Never"
        assert container["resources"] == VALUES["webhook"]["resources"]
    assert len(_pods(installed, "app.kubernetes.io/name=jobgate-controller")) == 1
    privileged = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "privileged", "namespace": SYSTEM},
        "spec": {"containers": [{"name": "c", "image": JOB_IMAGE, "securityContext": {"privileged": True}}]},
    }
    refused = installed.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(privileged))
    assert refused.returncode != 0 and "violates PodSecurity" in refused.stderr, refused.stderr


def test_the_values_reached_the_cluster(installed: Cluster):
    for kind, name, timeout in (("mutatingwebhookconfiguration", "jobgate-mutating", 3),
                                ("validatingwebhookconfiguration", "jobgate-validating", 8)):  # fmt: skip
        (hook,) = installed.get_json(kind, name)["webhooks"]
        assert hook["failurePolicy"] == "Ignore"
        assert hook["timeoutSeconds"] == timeout
        assert hook["namespaceSelector"] == VALUES["admission"]["namespaceSelector"]
    assert installed.get_json("pdb", "jobgate", "-n", SYSTEM)["spec"]["minAvailable"] == 2
    crd = installed.get_json("crd", "tfjobs.training.kubedl.io")
    assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"


def test_a_valid_job_is_admitted_with_jobgates_defaults(installed: Cluster):
    path = REPO / "examples" / "valid" / "xgboostjob-higgs.yaml"
    expected = json.loads(jobgate("default", "-o", "json", str(path)).stdout)
    job = yaml.safe_load(path.read_text())
    job["metadata"]["namespace"] = CHECKED  # the example says default, which the selector leaves out
    stored = installed.kubectl("create", "-f", "-", "-o", "json", input=json.dumps(job))
    assert stored.returncode == 0, stored.stderr
    assert json.loads(stored.stdout)["spec"] == expected["spec"]


def test_the_webhook_judges_jobs_in_a_selected_namespace_only(installed: Cluster):
    """The namespaceSelector selects where the webhook answers (its warning); the CRDs' own rules hold
    in every namespace."""

    def create(namespace: str) -> subprocess.CompletedProcess[str]:
        return installed.kubectl("create", "--dry-run=server", "-f", "-", input=PROBE.format(namespace=namespace))

    # The webhook pods can be Ready a moment before the apiserver's endpoints reach them.
    wait_until(lambda: PROBE_SIGN in create(CHECKED).stderr, 60, message="the webhook warning about the probe")
    admitted = create(UNCHECKED)
    assert admitted.returncode == 0 and PROBE_SIGN not in admitted.stderr, admitted.stderr


def test_helm_upgrade_changes_the_replicas(installed: Cluster, helm):
    chart = str(REPO / "charts" / "jobgate")
    result = helm("upgrade", "jobgate", chart, "--namespace", SYSTEM, "--reuse-values",
                  "--set", "webhook.replicas=2", "--wait", "--timeout", "3m")  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    wait_until(lambda: len(_pods(installed, "app.kubernetes.io/name=jobgate")) == 2, 60, message="two replicas")
    assert (
        PROBE_SIGN
        in installed.kubectl("create", "--dry-run=server", "-f", "-", input=PROBE.format(namespace=CHECKED)).stderr
    )


def test_helm_uninstall_keeps_the_crds(installed: Cluster, helm):
    result = helm("uninstall", "jobgate", "--namespace", SYSTEM, "--wait", "--timeout", "2m")
    assert result.returncode == 0, result.stdout + result.stderr
    assert installed.kubectl("get", "validatingwebhookconfiguration", "jobgate-validating").returncode != 0
    assert installed.kubectl("get", "crd", "tfjobs.training.kubedl.io").returncode == 0
    assert installed.kubectl("get", "xgboostjob", "-n", CHECKED, "-o", "name").stdout.strip()  # the job survives
