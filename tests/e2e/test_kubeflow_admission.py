"""manifests/overlays/kubeflow-admission-only on a real control plane, beside a Kubeflow validating webhook.

A control plane of its own (etcd + kube-apiserver, no node): Kubeflow's kinds served by the CRDs
generated for the tests (tests/e2e/crds/kubeflow), jobgate's webhook configurations rendered from the
overlay (pointed at a local ``jobgate webhook --families=kubeflow``), and a stand-in for Kubeflow's
PyTorchJob validating webhook (``validator.pytorchjob.training-operator.kubeflow.org``): a small HTTPS
server in this test that applies Kubeflow v1.9's PyTorchJob rules to the object exactly as it receives
it and denies as controller-runtime does (403, the ErrorList's aggregate). Kubeflow's operator is not
built here; the stand-in records what the apiserver sent it, which shows the order of the webhooks.
"""

from __future__ import annotations

import base64
import json
import re
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from envtest.deploy import stand_in
from envtest.harness import ControlPlane, free_port
from jobgate.certs.authority import init_directory
from tests.e2e.conftest import KUBEFLOW_TEST_CRDS, REPO, Cluster, WebhookProcess, by_url, jobgate

pytestmark = pytest.mark.e2e

OVERLAY = REPO / "manifests/overlays/kubeflow-admission-only"
KUBEFLOW_VALIDATOR = "validator.pytorchjob.training-operator.kubeflow.org"
NAMESPACE = "team-kf"
PT = "spec.pytorchReplicaSpecs"


# --- a stand-in for Kubeflow v1.9's PyTorchJob validating webhook ----------------------------------


def kubeflow_pytorch_errors(job: dict) -> list[str]:
    """pkg/webhooks/pytorch validatePyTorchReplicaSpecs of v1.9.0, on the object as given."""
    specs = (job.get("spec") or {}).get("pytorchReplicaSpecs")
    if specs is None:
        return [f"{PT}: Required value: must be required"]
    errors = []
    for kind, replica in specs.items():
        path = f"{PT}[{kind}]"
        if kind not in ("Master", "Worker"):
            errors.append(f'{path}: Unsupported value: "{kind}": supported values: "Master", "Worker"')
        containers = ((replica.get("template") or {}).get("spec") or {}).get("containers") or []
        if not containers:
            errors.append(f"{path}.template.spec.containers: Required value: must be specified")
        for index, container in enumerate(containers):
            if not container.get("image"):
                errors.append(f"{path}.template.spec.containers[{index}].image: Required value: must be required")
        if not any(c.get("name") == "pytorch" for c in containers):
            errors.append(
                f"{path}.template.spec.containers: Required value: must have at least one container with name pytorch"
            )
        count = replica.get("replicas")
        if kind == "Master" and count != 1:
            errors.append(f"{path}.replicas: Forbidden: must be 1")
        elif kind != "Master" and count is not None and count < 1:
            errors.append(f"{path}.replicas: Forbidden: must be at least 1")
    return errors


class KubeflowValidator:
    def __init__(self, tls_dir: Path) -> None:
        self.seen: list[dict] = []
        validator = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                request = review["request"]
                validator.seen.append(request["object"])
                errors = kubeflow_pytorch_errors(request["object"])
                response: dict = {"uid": request["uid"], "allowed": not errors}
                if errors:
                    # controller-runtime: admission.Denied(err.Error()) of field.ErrorList.ToAggregate().
                    message = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
                    response["status"] = {"code": 403, "reason": "Forbidden", "message": message}
                body = json.dumps(
                    {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
                )
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *args: object) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tls_dir / "tls.crt", tls_dir / "tls.key")
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self.server.server_address[1]


# --- the cluster -----------------------------------------------------------------------------------


def rendered_overlay(cluster: Cluster) -> list[dict]:
    return [d for d in yaml.safe_load_all(cluster.kubectl("kustomize", str(OVERLAY), check=True).stdout) if d]


def kubeflow_configuration(port: int, ca: bytes) -> dict:
    """Kubeflow's own registration of its PyTorchJob validator (its kubebuilder marker), by URL."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "validating-webhook-configuration"},
        "webhooks": [
            {
                "name": KUBEFLOW_VALIDATOR,
                "clientConfig": {"url": f"https://127.0.0.1:{port}/validate-kubeflow-org-v1-pytorchjob",
                                 "caBundle": base64.b64encode(ca).decode()},
                "rules": [{"apiGroups": ["kubeflow.org"], "apiVersions": ["v1"], "resources": ["pytorchjobs"],
                           "operations": ["CREATE", "UPDATE"]}],
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Fail",
            }
        ],
    }  # fmt: skip


class Setup:
    def __init__(self, cluster: Cluster, validator: KubeflowValidator, webhook_log: Path) -> None:
        self.cluster = cluster
        self.validator = validator
        self.webhook_log = webhook_log


@pytest.fixture(scope="module")
def kubeflow_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    from envtest.build import cached_binaries

    if cached_binaries() is None:
        pytest.skip("no cached etcd/kube-apiserver (run the e2e suite once to build them)")
    work = tmp_path_factory.mktemp("kubeflow")
    tls = work / "tls"
    init_directory(tls, ["localhost"], ["127.0.0.1"])
    ca = (tls / "ca.crt").read_bytes()
    plane = ControlPlane()
    plane.start()
    cluster = Cluster(plane)
    webhook = WebhookProcess(tls, free_port())
    webhook.extra = ("--families=kubeflow",)
    validator = KubeflowValidator(tls)
    validator.thread.start()
    try:
        webhook.start()
        # Kubeflow's CRDs (the tests' stand-ins) and its validating webhook, installed before jobgate.
        cluster.kubectl("apply", "-k", str(KUBEFLOW_TEST_CRDS), check=True)
        cluster.kubectl("wait", "--for=condition=Established", "crd", "-l", "app.kubernetes.io/part-of=jobgate",
                        "--timeout=60s", check=True)  # fmt: skip
        cluster.kubectl("apply", "-f", "-", input=json.dumps(kubeflow_configuration(validator.port, ca)), check=True)
        # jobgate's webhook configurations as the overlay renders them, pointed at the local webhook.
        configurations = [d for d in rendered_overlay(cluster) if d["kind"].endswith("WebhookConfiguration")]
        cluster.kubectl("apply", "-f", "-", input=by_url(configurations, webhook.port, ca), check=True)
        cluster.kubectl("create", "namespace", NAMESPACE, check=True)
        setup = Setup(cluster, validator, webhook.log)
        wait_for_both(setup)
        yield setup
    finally:
        validator.server.shutdown()
        webhook.stop()
        plane.stop()


def pytorchjob(name: str, replicas: dict) -> dict:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"pytorchReplicaSpecs": replicas},
    }


def replica(count: int | None = None, name: str = "pytorch") -> dict:
    out: dict = {"template": {"spec": {"containers": [{"name": name, "image": "pytorch/pytorch:2.4.0"}]}}}
    if count is not None:
        out["replicas"] = count
    return out


def wait_for_both(setup: Setup, timeout: float = 60) -> None:
    """Webhook configurations take effect a moment after they are written: until both answer."""
    probe = json.dumps(pytorchjob("probe", {"Master": replica(1), "Worker": replica(0)}))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = setup.cluster.kubectl("create", "--dry-run=server", "-f", "-", input=probe)
        if "must be at least 1" in result.stderr and setup.validator.seen and "probe" in setup.webhook_log.read_text():
            return
        time.sleep(0.5)
    raise AssertionError(f"the webhooks never answered: {result.stderr}")


def apply(setup: Setup, obj: dict) -> subprocess.CompletedProcess[str]:
    return setup.cluster.kubectl("apply", "-f", "-", input=json.dumps(obj))


# --- the tests -------------------------------------------------------------------------------------


def test_the_overlay_ships_no_crd_no_controller_and_serves_kubeflow_only(kubeflow_cluster: Setup):
    documents = rendered_overlay(kubeflow_cluster.cluster)
    # No job CRD (Kubeflow's serve kubeflow.org/v1); only platform policy's own (the policies and
    # their exceptions), which apply to Kubeflow's jobs too.
    crds = sorted(d["metadata"]["name"] for d in documents if d["kind"] == "CustomResourceDefinition")
    assert crds == [
        "clustertrainingjobpolicies.policy.jobgate.io",
        "trainingjobpolicies.policy.jobgate.io",
        "trainingjobpolicyexceptions.policy.jobgate.io",
    ]
    (deployment,) = [d for d in documents if d["kind"] == "Deployment"]
    assert deployment["metadata"]["name"] == "jobgate"
    assert "--families=kubeflow" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    for configuration in (d for d in documents if d["kind"].endswith("WebhookConfiguration")):
        (rule,) = configuration["webhooks"][0]["rules"]
        assert rule["apiGroups"] == ["kubeflow.org"] and rule["apiVersions"] == ["v1"]
        assert set(rule["resources"]) == {"tfjobs", "pytorchjobs", "xgboostjobs", "paddlejobs", "jaxjobs", "mpijobs"}
    # Kubeflow's job-only rules as policies over its kinds (manifests/kubeflow-policies), each bound.
    plurals = ("jaxjobs", "mpijobs", "paddlejobs", "pytorchjobs", "tfjobs", "xgboostjobs")
    for kind in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"):
        names = {d["metadata"]["name"] for d in documents if d["kind"] == kind}
        assert {f"jobgate.{p}.kubeflow.org" for p in plurals} <= names, kind


def test_apply_gets_kubeflows_defaults_before_kubeflows_validator_sees_the_job(kubeflow_cluster: Setup, tmp_path):
    # Kubeflow's webhook alone refuses this job (a Master without replicas, a `worker` key);
    # jobgate's /mutate runs first, so Kubeflow's validator sees it defaulted and admits it.
    job = pytorchjob("kf-defaults", {"Master": replica(), "worker": replica(2)})
    assert kubeflow_pytorch_errors(job)  # the stand-in's own verdict on the job as written
    result = apply(kubeflow_cluster, job)
    assert result.returncode == 0, result.stderr
    seen = [o for o in kubeflow_cluster.validator.seen if o["metadata"]["name"] == "kf-defaults"][-1]
    assert seen["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] == 1
    assert set(seen["spec"]["pytorchReplicaSpecs"]) == {"Master", "Worker"}
    spec = kubeflow_cluster.cluster.get_json("pytorchjobs.kubeflow.org", "kf-defaults", "-n", NAMESPACE)["spec"]
    assert spec["runPolicy"] == {"cleanPodPolicy": "None", "suspend": False}
    assert spec["nprocPerNode"] == "auto"
    worker = spec["pytorchReplicaSpecs"]["Worker"]
    assert (worker["replicas"], worker["restartPolicy"]) == (2, "OnFailure")
    assert worker["template"]["spec"]["containers"][0]["ports"] == [{"name": "pytorchjob-port", "containerPort": 23456}]
    # Offline gives the stored object.
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    offline = json.loads(jobgate("default", "-o", "json", str(path)).stdout)
    assert offline["spec"] == spec


def test_when_both_deny_kubectl_shows_one_of_the_two_denials(kubeflow_cluster: Setup):
    job = pytorchjob("kf-two-masters", {"Master": replica(2), "Worker": replica(1)})
    result = apply(kubeflow_cluster, job)
    assert result.returncode != 0
    line = f"{PT}[Master].replicas: Forbidden: must be 1"
    jobgate_denial = 'The PyTorchJob "kf-two-masters" is invalid' in result.stderr
    kubeflow_denial = f'admission webhook "{KUBEFLOW_VALIDATOR}" denied the request: {line}' in result.stderr
    assert jobgate_denial != kubeflow_denial, result.stderr  # one of them, never both
    assert line in result.stderr
    # Both were asked (in parallel); the apiserver returned the first answer it got.
    assert any(o["metadata"]["name"] == "kf-two-masters" for o in kubeflow_cluster.validator.seen)
    assert re.search(r"kf-two-masters.*denied", kubeflow_cluster.webhook_log.read_text())


def test_what_only_jobgate_refuses(kubeflow_cluster: Setup):
    # An MPIJob (no Kubeflow webhook) without a Launcher, and a managedBy change (Kubeflow v1.9's
    # deployed PyTorchJob webhook never compares with the old object).
    mpijob = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MPIJob",
        "metadata": {"name": "kf-no-launcher", "namespace": NAMESPACE},
        "spec": {"mpiReplicaSpecs": {"Worker": replica(2, name="worker")}},
    }
    result = apply(kubeflow_cluster, mpijob)
    assert result.returncode != 0
    assert (
        "spec.mpiReplicaSpecs[Launcher]: Required value: must be present (MPIReplicaSpec is not valid" in result.stderr
    )
    job = pytorchjob("kf-managed", {"Master": replica(1)})
    job["spec"]["runPolicy"] = {"managedBy": "kueue.x-k8s.io/multikueue"}
    assert apply(kubeflow_cluster, job).returncode == 0
    job["spec"]["runPolicy"] = {"managedBy": "kubeflow.org/training-operator"}
    result = apply(kubeflow_cluster, job)
    assert result.returncode != 0
    assert "spec.runPolicy.managedBy: Invalid value" in result.stderr and "field is immutable" in result.stderr


def test_jobs_of_the_other_families_are_untouched(kubeflow_cluster: Setup):
    cluster = kubeflow_cluster.cluster
    # KubeDL's own CRD, as KubeDL installs it: without jobgate's rules and defaults.
    crd = stand_in(REPO / "manifests/base/crds/training.kubedl.io_tfjobs.yaml")
    cluster.kubectl("apply", "-f", "-", input=crd, check=True)
    cluster.kubectl("wait", "--for=condition=Established", "crd/tfjobs.training.kubedl.io", check=True)
    # Invalid for jobgate's kubedl family (no tensorflow container): admitted as written, no defaults.
    tfjob = {
        "apiVersion": "training.kubedl.io/v1alpha1",
        "kind": "TFJob",
        "metadata": {"name": "kubedl-untouched", "namespace": NAMESPACE},
        "spec": {"tfReplicaSpecs": {"Worker": replica(1, name="main")}},
    }
    result = cluster.kubectl("apply", "-f", "-", input=json.dumps(tfjob))
    assert result.returncode == 0, result.stderr
    spec = cluster.get_json("tfjobs.training.kubedl.io", "kubedl-untouched", "-n", NAMESPACE)["spec"]
    assert "cleanPodPolicy" not in spec
    assert "kubedl-untouched" not in kubeflow_cluster.webhook_log.read_text()


@pytest.mark.parametrize("path", sorted((REPO / "examples").glob("*/kubeflow-*.yaml")), ids=lambda p: p.name)
def test_kubeflow_examples_get_the_offline_verdict_and_object(kubeflow_cluster: Setup, path: Path):
    cluster = kubeflow_cluster.cluster
    manifest = yaml.safe_load(path.read_text())
    manifest["metadata"]["namespace"] = NAMESPACE
    report = json.loads(jobgate("validate", "-o", "json", str(path)).stdout)["documents"][0]
    result = cluster.kubectl("apply", "-f", "-", input=json.dumps(manifest))
    if path.parent.name == "valid":
        assert result.returncode == 0, result.stderr
        assert report["outcome"] == "admitted"
        resource = f"{manifest['kind'].lower()}s.kubeflow.org"
        stored_spec = cluster.get_json(resource, manifest["metadata"]["name"], "-n", NAMESPACE)["spec"]
        offline = json.loads(jobgate("default", "-o", "json", str(path)).stdout)
        assert stored_spec == offline["spec"]
    else:
        assert result.returncode != 0
        assert report["outcome"] == "denied"
        # jobgate's denial or Kubeflow's (the PyTorchJob): every field error shown is one offline reports.
        offline_messages = {e["message"] for e in report["errors"]}
        shown = [line for line in offline_messages if line in result.stderr]
        assert shown, (result.stderr, sorted(offline_messages))
