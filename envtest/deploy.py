"""jobgate deployed on the in-cluster test node as users deploy it: its image imported into the
node's containerd, an overlay of ``manifests/overlays/`` applied with ``kubectl apply -k``
through a kustomization that changes only the image's name, then waited for (the certificate
Job, the Deployments' rollouts, the webhook answering through its Service).

Used by the end-to-end tests and by ``python -m envtest up --node --in-cluster --deploy``.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import yaml

from envtest.harness import ControlPlane
from envtest.node import Node

REPO = Path(__file__).resolve().parents[1]
SYSTEM_NAMESPACE = "jobgate-system"
PUBLISHED_IMAGE = "ghcr.io/jobgate/jobgate"  # the name manifests/base gives the image
# A valid job that only the webhook warns about (the CRDs' rules refuse what it refuses, but warn
# about nothing), so the warning proves the webhook answered through the Service.
PROBE = """
apiVersion: training.kubedl.io/v1alpha1
kind: TFJob
metadata: {{name: probe, namespace: {namespace}}}
spec:
  tfReplicaSpecs:
    Worker: {{template: {{spec: {{restartPolicy: Always, containers: [{{name: tensorflow, image: x}}]}}}}}}
"""
PROBE_SIGN = "overrides the pod template's restartPolicy"
# The admission-only overlays serve one family, whose CRDs (Volcano's, Kubeflow's) they do not
# ship: each gets a probe of its own family, and, on the test node where that project is not
# installed, jobgate's copies of its CRDs as stand-ins (without jobgate's rules: see stand_in).
OVERLAY_PROBES = {
    "volcano-admission-only": (
        """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: probe, namespace: {namespace}}}
spec:
  tasks:
    - {{name: worker, replicas: 1, template: {{spec: {{containers: [{{name: main, image: x}}]}}}}}}
    - {{name: worker, replicas: 1, template: {{spec: {{containers: [{{name: main, image: x}}]}}}}}}
""",
        "duplicated task name worker",
    ),
    # A rule the overlay's ValidatingAdmissionPolicies (manifests/kubeflow-policies) do not carry, so
    # that the denial is the webhook's: the policies run first and would answer for it otherwise.
    "kubeflow-admission-only": (
        """
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {{name: probe, namespace: {namespace}}}
spec:
  mpiReplicaSpecs:
    Launcher: {{template: {{spec: {{containers: [{{name: launcher, image: x}}]}}}}}}
    Worker: {{replicas: 1, template: {{spec: {{containers: [{{name: worker}}]}}}}}}
""",
        "spec.mpiReplicaSpecs[Worker].template.spec.containers[0].image: Required value",
    ),
    # A TrainJob whose runtime does not exist: refused by the webhook alone (it reads the runtimes).
    "trainer-admission-only": (
        """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {{name: probe, namespace: {namespace}}}
spec:
  runtimeRef: {{name: no-such-runtime}}
""",
        "specified clusterTrainingRuntime must be created before the TrainJob is created",
    ),
}
STAND_IN_CRDS = {
    "volcano-admission-only": [
        REPO / "manifests/base/crds/batch.volcano.sh_jobs.yaml",
        REPO / "manifests/base/crds/bus.volcano.sh_commands.yaml",
    ],
    "kubeflow-admission-only": sorted((REPO / "tests/e2e/crds/kubeflow").glob("kubeflow.org_*.yaml")),
    "trainer-admission-only": sorted((REPO / "tests/e2e/crds/trainer").glob("trainer.kubeflow.org_*.yaml")),
}


class DeployError(RuntimeError):
    pass


def without_jobgate_rules(documents: list[dict]) -> list[dict]:
    """The documents with each job kind's CRD as a peer's own would be (Volcano's, KubeDL's): the
    models' schema without jobgate's CEL rules and defaults (jobgate/generate/cel), so that only the
    webhook judges jobs of those kinds; no admission policies."""
    from jobgate.generate.manifests import plain_crd

    kept = []
    for document in documents:
        if document.get("kind") in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"):
            continue
        plain = plain_crd(document["metadata"]["name"]) if document.get("kind") == "CustomResourceDefinition" else None
        kept.append(plain or document)
    return kept


def stand_in(crd: Path) -> str:
    """A CRD file of jobgate's as the peer's own CRD would be (see without_jobgate_rules)."""
    return json.dumps(without_jobgate_rules([yaml.safe_load(crd.read_text())])[0])


def image_overlay(directory: Path, image: str, overlay: str = "self-signed") -> Path:
    """A kustomization of ``manifests/overlays/<overlay>`` that changes only the image's name."""
    name, _, tag = image.rpartition(":")
    directory.mkdir(parents=True, exist_ok=True)
    base = os.path.relpath(REPO / "manifests" / "overlays" / overlay, directory)  # kustomize takes relative bases only
    (directory / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\n"
        "kind: Kustomization\n"
        f"resources:\n  - {base}\n"
        f"images:\n  - name: {PUBLISHED_IMAGE}\n    newName: {name}\n    newTag: {tag}\n"
    )
    return directory


def _kubectl(plane: ControlPlane, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        plane.kubectl_command(*args), input=input, capture_output=True, text=True, timeout=300, check=False
    )


def _checked(plane: ControlPlane, *args: str, input: str | None = None) -> str:
    result = _kubectl(plane, *args, input=input)
    if result.returncode != 0:
        raise DeployError(f"kubectl {' '.join(args)}: {result.stderr.strip() or result.stdout.strip()}")
    return result.stdout


def deploy(
    node: Node,
    overlay: str = "self-signed",
    probe_namespace: str = "default",
    log=print,
) -> str:
    """Build (or take from the cache) jobgate's image, import it, apply ``overlay`` and wait until
    jobgate answers (a job only jobgate refuses, of a family the overlay serves, is refused);
    returns the image's name."""
    from envtest import image

    plane = node.plane
    if plane is None:
        raise DeployError("the node is not running")
    log("building (or finding) jobgate's image ...")
    name = image.import_image(node, image.build(log=log), log=log)
    for crd in STAND_IN_CRDS.get(overlay, []):
        found = _kubectl(plane, "get", "-f", str(crd))
        if found.returncode != 0:
            log(f"the cluster has no {crd.name.removesuffix('.yaml')}: applying jobgate's copy as a stand-in")
            _checked(plane, "apply", "--server-side", "-f", "-", input=stand_in(crd))
            _checked(plane, "wait", "--for=condition=Established", "-f", str(crd), "--timeout=60s")
    with tempfile.TemporaryDirectory(prefix="jobgate-overlay-") as directory:
        kustomization = image_overlay(Path(directory), name, overlay)
        log(f"kubectl apply --server-side -k manifests/overlays/{overlay} (image {name}) ...")
        # Server-side: the CRDs are too large for a client-side apply's last-applied annotation.
        _checked(plane, "apply", "--server-side", "-k", str(kustomization))
    deployments = _checked(plane, "get", "deployments", "-n", SYSTEM_NAMESPACE, "-o", "name").split()
    if _kubectl(plane, "get", "job/jobgate-certs", "-n", SYSTEM_NAMESPACE).returncode == 0:
        _checked(plane, "wait", "--for=condition=Complete", "job/jobgate-certs", "-n", SYSTEM_NAMESPACE,
                 "--timeout=180s")  # fmt: skip
    for deployment in deployments:
        _checked(plane, "rollout", "status", deployment, "-n", SYSTEM_NAMESPACE, "--timeout=180s")
    deadline = time.monotonic() + 60
    probe, denial = OVERLAY_PROBES.get(overlay, (PROBE, PROBE_SIGN))
    probe = probe.format(namespace=probe_namespace)
    while denial not in (answer := _kubectl(plane, "create", "--dry-run=server", "-f", "-", input=probe)).stderr:
        if time.monotonic() > deadline:
            raise DeployError(f"the in-cluster webhook never answered: {answer.stderr.strip()}")
        time.sleep(0.5)
    log(f"jobgate is running in {SYSTEM_NAMESPACE}: {', '.join(deployments)}")
    return name
