"""jobgate deployed as users deploy it: its image on the real node, ``manifests/overlays/self-signed``
applied with ``kubectl apply -k`` through a test overlay that changes only the image's name.

The certificate Job writes the Secret and the caBundle, the webhook pods become Ready behind
their Service (the apiserver reaches them through kube-proxy, as in any cluster), a controller
replica takes the Lease, every pod of jobgate-system runs under PodSecurity ``restricted``; then
jobs of all five families go through ``kubectl apply --dry-run=server`` and ``kubectl apply``:
the stored object is what ``jobgate default`` prints, invalid jobs are refused with their field
errors, and a job's pods run to completion under the in-cluster controller.
"""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from envtest.cel_differential import Apiserver, Case, run_case
from envtest.node import JOB_IMAGE
from tests.e2e.conftest import REPO, Cluster, examples_with_crds, jobgate, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.node]

SYSTEM = "jobgate-system"
NS = "in-cluster-jobs"
EXAMPLES = REPO / "examples"
# One example of each family, valid and invalid (the invalid ones are denied by the webhook).
VALID = ("xgboostjob-higgs.yaml", "mxjob-local.yaml", "t9k-genericjob-ps.yaml", "dijob-gobigger.yaml",
         "volcano-pytorch.yaml")  # fmt: skip


@pytest.fixture(scope="module")
def deployed(jobgate_in_cluster: Cluster) -> Cluster:
    jobgate_in_cluster.kubectl("create", "namespace", NS, check=True)
    return jobgate_in_cluster


def pods(cluster: Cluster, namespace: str, selector: str | None = None) -> list[dict]:
    args = ["pods", "-n", namespace]
    return cluster.get_json(*args, *(["-l", selector] if selector else []))["items"]


def test_the_certificate_job_set_the_secret_and_both_ca_bundles(deployed: Cluster):
    secret = deployed.get_json("secret", "jobgate-webhook-tls", "-n", SYSTEM)
    assert secret["type"] == "kubernetes.io/tls"
    assert {"tls.crt", "tls.key", "ca.crt"} <= set(secret["data"])
    for kind, name in (("mutatingwebhookconfiguration", "jobgate-mutating"),
                       ("validatingwebhookconfiguration", "jobgate-validating")):  # fmt: skip
        configuration = deployed.get_json(kind, name)
        assert all(w["clientConfig"].get("caBundle") == secret["data"]["ca.crt"] for w in configuration["webhooks"])
    # The CA's key is kept apart, in a Secret no webhook pod mounts.
    authority = deployed.get_json("secret", "jobgate-ca", "-n", SYSTEM)
    assert set(authority["data"]) == {"ca.crt", "ca.key", "trusted.crt"}
    assert authority["data"]["trusted.crt"] == secret["data"]["ca.crt"]
    for pod in pods(deployed, SYSTEM, "app.kubernetes.io/name=jobgate"):
        mounted = {v.get("secret", {}).get("secretName") for v in pod["spec"]["volumes"]}
        assert "jobgate-ca" not in mounted and "jobgate-webhook-tls" in mounted


def test_the_renewal_cronjob_runs_the_install_jobs_pod_template(deployed: Cluster):
    job = deployed.get_json("job", "jobgate-certs", "-n", SYSTEM)
    cronjob = deployed.get_json("cronjob", "jobgate-certs-renew", "-n", SYSTEM)
    assert cronjob["spec"]["concurrencyPolicy"] == "Forbid" and not cronjob["spec"].get("suspend")
    container = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == job["spec"]["template"]["spec"]["containers"][0]["args"]
    assert container["args"][:2] == ["certs", "renew"]


def test_every_jobgate_pod_runs_under_pod_security_restricted(deployed: Cluster):
    namespace = deployed.get_json("namespace", SYSTEM)
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    running = [p for p in pods(deployed, SYSTEM) if p["status"]["phase"] == "Running"]
    names = {p["metadata"]["labels"].get("app.kubernetes.io/name") for p in running}
    assert names == {"jobgate", "jobgate-controller"}
    assert len(running) == 4  # two webhook replicas, two controller replicas
    for pod in running:
        assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
        for container in pod["spec"]["containers"]:
            assert container["image"].startswith("jobgate.local/jobgate:")
            assert container["securityContext"]["readOnlyRootFilesystem"] is True
    # The namespace's policy is enforced, not only declared: a pod that breaks it is refused.
    privileged = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "privileged", "namespace": SYSTEM},
        "spec": {"containers": [{"name": "c", "image": JOB_IMAGE, "securityContext": {"privileged": True}}]},
    }
    refused = deployed.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(privileged))
    assert refused.returncode != 0 and "violates PodSecurity" in refused.stderr, refused.stderr


def test_one_controller_replica_holds_the_lease(deployed: Cluster):
    controllers = {p["metadata"]["name"] for p in pods(deployed, SYSTEM, "app.kubernetes.io/name=jobgate-controller")}

    def holder() -> str:
        lease = deployed.kubectl("get", "lease", "jobgate-controller", "-n", SYSTEM, "-o", "json")
        return json.loads(lease.stdout)["spec"].get("holderIdentity", "") if lease.returncode == 0 else ""

    wait_until(lambda: any(holder().startswith(name) for name in controllers), 60, message="a leader")


@pytest.mark.parametrize("example", VALID)
def test_a_valid_job_is_stored_as_jobgate_default_prints_it(deployed: Cluster, example: str):
    path = EXAMPLES / "valid" / example
    expected = json.loads(jobgate("default", "-o", "json", str(path)).stdout)
    stored = deployed.kubectl("apply", "--dry-run=server", "-f", str(path), "-o", "json")  # namespace: default
    assert stored.returncode == 0, stored.stderr
    assert json.loads(stored.stdout)["spec"] == expected["spec"]


# The admission-only families' jobs (no CRD of jobgate's): test_in_cluster_admission_only.py and their suites.
@pytest.mark.parametrize("example", [p.name for p in examples_with_crds("invalid")])
def test_an_invalid_job_is_refused_with_its_field_errors(deployed: Cluster, example: str):
    """Refused in both modes; each of the webhook's errors reported at its field. With the base's
    CRD rules in force, the apiserver refuses first what they enforce (at the field the catalogue
    gives, envtest/cel_differential.py); the webhook's lines come for the rest."""
    path = EXAMPLES / "invalid" / example
    for mode in ("--dry-run=server", "--dry-run=none"):
        answer = deployed.kubectl("create", mode, "-f", str(path))
        assert answer.returncode == 1, f"{example} was admitted: {answer.stdout}"
    apiserver = Apiserver(deployed.kubeconfig)
    for index, document in enumerate(d for d in yaml.safe_load_all(path.read_text()) if d):
        outcome = run_case(apiserver, Case(f"{example}#{index}", document), "default")
        assert not outcome.apiserver_allowed
        assert not outcome.disagreements, "\n".join(outcome.disagreements)


def test_a_job_runs_to_completion_under_the_in_cluster_controller(deployed: Cluster):
    job = {
        "apiVersion": "training.kubedl.io/v1alpha1",
        "kind": "TFJob",
        "metadata": {"name": "in-cluster-run", "namespace": NS},
        "spec": {
            # Both pods stay to be counted: with the default (Running) worker 1 is deleted if it
            # is still running when worker 0's success ends the job.
            "cleanPodPolicy": "None",
            "tfReplicaSpecs": {
                "Worker": {
                    "replicas": 2,
                    "restartPolicy": "Never",
                    "template": {
                        "spec": {
                            "terminationGracePeriodSeconds": 1,
                            "containers": [
                                {
                                    "name": "tensorflow",
                                    "image": JOB_IMAGE,
                                    "imagePullPolicy": "Never",
                                    "command": ["python3", "-c", "import os; print(os.environ['TF_CONFIG'])"],
                                }
                            ],
                        }
                    },
                }
            },
        },
    }
    created = deployed.kubectl("create", "-f", "-", input=json.dumps(job))
    assert created.returncode == 0, created.stderr

    def succeeded() -> bool:
        status = deployed.get_json("tfjob", "in-cluster-run", "-n", NS).get("status", {})
        return any(c["type"] == "Succeeded" and c["status"] == "True" for c in status.get("conditions", []))

    wait_until(succeeded, 120, message="the TFJob to succeed")
    children = pods(deployed, NS, "job-name=in-cluster-run")
    assert len(children) == 2
    assert all(p["metadata"]["ownerReferences"][0]["name"] == "in-cluster-run" for p in children)
    logs = deployed.kubectl("logs", "-n", NS, children[0]["metadata"]["name"])
    assert '"cluster"' in logs.stdout, logs.stdout + logs.stderr


def test_the_image_is_what_the_pods_run(deployed: Cluster):
    """The webhook's own log line names the compiled rule engine the image ships."""
    webhook = pods(deployed, SYSTEM, "app.kubernetes.io/name=jobgate")[0]["metadata"]["name"]
    logs = subprocess.run(
        deployed.plane.kubectl_command("logs", "-n", SYSTEM, webhook), capture_output=True, text=True, check=False
    )
    assert "compiled (mypyc)" in logs.stdout + logs.stderr
