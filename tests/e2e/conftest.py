"""End-to-end fixtures: a real etcd + kube-apiserver (+ kube-controller-manager), jobgate's webhook
on loopback registered by URL, and kubectl.

Locally these tests skip when the binaries cannot be built (no Go toolchain); with CI=true a
missing control plane is a failure, never a skip.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml

from envtest.deploy import PROBE as DEPLOY_PROBE
from envtest.deploy import PROBE_SIGN, without_jobgate_rules
from envtest.harness import ControlPlane, free_port
from jobgate.certs.authority import init_directory

if TYPE_CHECKING:
    from envtest.node import Node

REPO = Path(__file__).resolve().parents[2]
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
NAMESPACE = "e2e"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


@dataclass
class Cluster:
    plane: ControlPlane

    def kubectl(self, *args: str, input: str | None = None, check: bool = False) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            self.plane.kubectl_command(*args), input=input, capture_output=True, text=True, timeout=120, check=False
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed:\n{result.stdout}{result.stderr}")
        return result

    def get_json(self, *args: str) -> dict:
        return json.loads(self.kubectl("get", *args, "-o", "json", check=True).stdout)

    @property
    def kubeconfig(self) -> str:
        return str(self.plane.kubeconfig)


@contextlib.contextmanager
def started(plane: ControlPlane) -> Iterator[ControlPlane]:
    """The plane, started and stopped; locally a plane that cannot be built or started skips the
    tests with the reason, with CI=true it fails them."""
    from envtest.build import cached_binaries

    cached = cached_binaries(plane.version, controller_manager=plane.controller_manager)
    if shutil.which("go") is None and not IN_CI and cached is None:
        pytest.skip(f"no Go toolchain to build Kubernetes {plane.version}, and no cached binaries")
    try:
        plane.start()
    except Exception as exc:  # a build or start failure
        plane.stop()
        if IN_CI:
            raise
        pytest.skip(f"the {plane.version} control plane could not be started here: {exc}")
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def control_plane() -> Iterator[Cluster]:
    with started(ControlPlane()) as plane:
        yield Cluster(plane)


class WebhookProcess:
    """``jobgate webhook`` on 127.0.0.1, restartable on the same port."""

    def __init__(self, tls_dir: Path, port: int) -> None:
        self.tls_dir = tls_dir
        self.port = port
        self.process: subprocess.Popen | None = None
        self.log = tls_dir.parent / "webhook.log"
        self.extra: tuple[str, ...] = ()  # more flags (e.g. --kubeconfig), kept across restarts

    def start(self) -> None:
        command = [sys.executable, "-m", "jobgate", "webhook", "--tls-dir", str(self.tls_dir)]
        command += ["--host", "127.0.0.1", "--port", str(self.port), "--cert-check-interval", "0.5", *self.extra]
        self.process = subprocess.Popen(command, cwd=REPO, stderr=self.log.open("ab"))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"webhook exited: {self.log.read_text()[-2000:]}")
            if re.search(rf"https://127\.0\.0\.1:{self.port}", self.log.read_text()):
                return
            time.sleep(0.1)
        raise AssertionError("webhook did not start")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=20)
        self.process = None


@pytest.fixture(scope="session")
def webhook_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookProcess]:
    tls_dir = tmp_path_factory.mktemp("webhook") / "tls"
    init_directory(tls_dir, ["localhost"], ["127.0.0.1"])
    process = WebhookProcess(tls_dir, free_port())
    process.start()
    try:
        yield process
    finally:
        process.stop()


def examples_with_crds(folder: str) -> list[Path]:
    """The examples of ``examples/<folder>`` whose kinds jobgate's CRDs define: not those of an
    admission-only family (named after it), whose peer's kinds a cluster of jobgate alone lacks; each
    such family's own suite applies them (test_kubeflow_admission.py, test_jobset_admission.py, ...)."""
    from jobgate.families import every_family

    admission_only = tuple(f"{f.name}-" for f in every_family() if f.admission_only)
    return sorted(p for p in (REPO / "examples" / folder).glob("*.yaml") if not p.name.startswith(admission_only))


def fits_queue_verdict(
    run: Callable[..., subprocess.CompletedProcess[str]], work: Path, queue_kinds: str, namespace: str, job: dict
) -> subprocess.CompletedProcess[str]:
    """``jobgate validate`` of ``job`` under a policy requiring ``fitsQueue`` in ``namespace``, with the
    namespaces and ``queue_kinds`` (kubectl's resource list) exported from the cluster ``run`` reaches:
    the offline verdict the agreement tests hold a scheduler to."""
    exported = run("get", f"namespaces,{queue_kinds}", "-A", "-o", "yaml")
    objects = work / "cluster-objects.yaml"
    objects.write_text(exported.stdout)
    policy = work / "policy.yaml"
    policy.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "policy.jobgate.io/v1alpha1",
                "kind": "ClusterTrainingJobPolicy",
                "metadata": {"name": "agreement-fits-queue"},
                "spec": {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                    "require": {"fitsQueue": True},
                },
            }
        )
    )
    path = work / f"{job['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump(job))
    return jobgate("validate", str(path), "--policies", str(policy), "--cluster-objects", str(objects))


@contextlib.contextmanager
def admission_only_cluster(
    work: Path, overlay: Path, install: Callable[[Cluster, list[dict]], None], *flags: str, kubeconfig: bool = False
) -> Iterator[tuple[Cluster, WebhookProcess]]:
    """A control plane of its own with a peer's kinds (``install``, given the overlay's rendered
    objects, puts them in), then ``jobgate webhook`` on loopback (``flags``; with ``kubeconfig``, the
    plane's, for the webhook's informers) and the overlay's webhook configurations pointed at it."""
    tls = work / "tls"
    init_directory(tls, ["localhost"], ["127.0.0.1"])
    plane = ControlPlane()
    plane.start()
    cluster = Cluster(plane)
    webhook = WebhookProcess(tls, free_port())
    webhook.extra = (*flags, *(("--kubeconfig", str(plane.kubeconfig)) if kubeconfig else ()))
    try:
        rendered = [d for d in yaml.safe_load_all(cluster.kubectl("kustomize", str(overlay), check=True).stdout) if d]
        install(cluster, rendered)
        webhook.start()
        configurations = [d for d in rendered if d["kind"].endswith("WebhookConfiguration")]
        cluster.kubectl("apply", "-f", "-", input=by_url(configurations, webhook.port, (tls / "ca.crt").read_bytes()),
                        check=True)  # fmt: skip
        yield cluster, webhook
    finally:
        webhook.stop()
        plane.stop()


@contextlib.contextmanager
def crds_only_cluster(crds: Callable[[], list[Path]], what: str, namespace: str) -> Iterator[Cluster]:
    """A control plane of its own with a peer's CRDs only (``crds`` reads them from the peer's Go
    module) and ``namespace``: what the apiserver alone says, for offline agreement tests."""
    from envtest.build import cached_binaries
    from envtest.upstream import UpstreamUnavailable

    if cached_binaries() is None and not IN_CI:
        pytest.skip("no cached etcd/kube-apiserver (run the e2e suite once to build them)")
    try:
        paths = crds()
    except UpstreamUnavailable as exc:
        if IN_CI:
            raise
        pytest.skip(f"{what} not available: {exc}")
    with started(ControlPlane()) as plane:
        cluster = Cluster(plane)
        for path in paths:
            cluster.kubectl("apply", "--server-side", "-f", str(path), check=True)
        wait_established(cluster)
        cluster.kubectl("create", "namespace", namespace, check=True)
        yield cluster


def wait_established(cluster: Cluster, timeout: float = 60) -> None:
    """Until every CRD is Established (``kubectl wait`` fails on a CRD whose status is not written yet)."""
    deadline = time.monotonic() + timeout
    while True:
        result = cluster.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=10s")
        if result.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise AssertionError(result.stdout + result.stderr)
        time.sleep(0.5)


def store_under_loosened_crd(cluster: Cluster, loose: dict, real: Path, obj: dict) -> None:
    """Store ``obj`` while the CRD is ``loose`` (a schema that admits it), then put the ``real`` CRD
    back: a stored object the real schema refuses, for ratcheting cases."""
    try:
        cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=json.dumps(loose), check=True)
        wait_established(cluster)
        cluster.kubectl("create", "-f", "-", input=json.dumps(obj), check=True)
    finally:
        cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(real), check=True)
        wait_established(cluster)


def by_url(configurations: list[dict], port: int, ca: bytes) -> str:
    """Webhook configurations as an overlay renders them, pointed at a webhook on 127.0.0.1:``port``
    trusted through ``ca`` and asked for every namespace: a kubectl List."""
    import base64

    bundle = base64.b64encode(ca).decode()
    for configuration in configurations:
        for webhook in configuration["webhooks"]:
            path = webhook["clientConfig"]["service"]["path"]
            webhook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": bundle}
            webhook.pop("namespaceSelector", None)
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": configurations})


def url_overlay(port: int) -> str:
    """The url overlay, rendered by kubectl's kustomize, pointed at the webhook's port, its CRDs
    without jobgate's CEL rules, schema keywords and defaults (the models' schema alone): the suites
    on this cluster test the webhook's own answers, its every line; the rules in the apiserver are
    tested by test_cel_enforcement.py (alone) and the in-cluster suites (with the webhook, as the
    base installs them)."""
    from envtest.build import cached_binaries

    binaries = cached_binaries()
    assert binaries is not None
    rendered = subprocess.run(
        [str(binaries["kubectl"]), "kustomize", str(REPO / "manifests/overlays/url")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    documents = without_jobgate_rules([d for d in yaml.safe_load_all(rendered) if d])
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": documents}).replace(
        "https://127.0.0.1:9443/", f"https://127.0.0.1:{port}/"
    )


def jobgate(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jobgate", *args], cwd=REPO, capture_output=True, text=True, input=input, check=False
    )


def jobgate_update_response(new: dict, old: dict) -> dict:
    """``jobgate review validate``'s response (the webhook's own answer, no server) to the UPDATE from
    ``old`` to ``new``."""
    from testkit.builders import admission_review

    review = admission_review(new, operation="UPDATE", old=old, uid="ratchet")
    if "namespace" not in new.get("metadata", {}):
        del review["request"]["namespace"]  # a cluster-scoped object's request names none
    answered = jobgate("review", "validate", "-", input=json.dumps(review))
    assert answered.returncode == 0, answered.stderr
    return json.loads(answered.stdout)["response"]


def volcano_scheduling_crd(kind: str, short_name: str, scope: str, status_subresource: bool) -> str:
    """A ``scheduling.volcano.sh`` CRD reduced to an open spec and status: what jobgate reads of them."""
    plural = kind.lower() + "s"
    subresources = "\n    subresources: {status: {}}" if status_subresource else ""
    return f"""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: {plural}.scheduling.volcano.sh}}
spec:
  group: scheduling.volcano.sh
  names: {{kind: {kind}, listKind: {kind}List, plural: {plural}, singular: {kind.lower()}, shortNames: [{short_name}]}}
  scope: {scope}
  versions:
  - name: v1beta1
    served: true
    storage: true{subresources}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
          status: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
"""


# Volcano's PodGroup API, reduced to what the controller uses: enough for gang-scheduling tests.
POD_GROUP_CRD = volcano_scheduling_crd("PodGroup", "pg", "Namespaced", status_subresource=True)


# CRDs of Kubeflow's kinds generated from jobgate's models (jobgate ships none): see docs/families.md, Kubeflow
# section. Not installed in the shared cluster: beside the KubeDL CRDs they would make `kubectl get tfjobs`
# ambiguous; tests/e2e/test_kubeflow_admission.py installs them on a control plane of its own.
KUBEFLOW_TEST_CRDS = REPO / "tests/e2e/crds/kubeflow"


@pytest.fixture(scope="session")
def cluster(control_plane: Cluster, webhook_process: WebhookProcess) -> Cluster:
    """CRDs and webhook configurations installed, caBundle injected, webhook answering."""
    return install_jobgate(control_plane, webhook_process)


def install_jobgate(control_plane: Cluster, webhook_process: WebhookProcess) -> Cluster:
    """CRDs and webhook configurations installed, caBundle injected, webhook answering."""
    control_plane.kubectl("apply", "-f", "-", input=POD_GROUP_CRD, check=True)
    control_plane.kubectl("apply", "-f", "-", input=url_overlay(webhook_process.port), check=True)
    injected = jobgate(
        "certs", "inject", "--kubeconfig", control_plane.kubeconfig,
        "--ca-file", str(webhook_process.tls_dir / "ca.crt"),
        "--webhook", "jobgate-mutating", "--webhook", "jobgate-validating",
    )  # fmt: skip
    assert injected.returncode == 0, injected.stderr
    control_plane.kubectl("wait", "--for=condition=Established", "crd", "-l", "app.kubernetes.io/part-of=jobgate",
                          "--timeout=60s", check=True)  # fmt: skip
    control_plane.kubectl("wait", "--for=condition=Established", "crd/podgroups.scheduling.volcano.sh", check=True)
    control_plane.kubectl("create", "namespace", NAMESPACE, check=True)
    wait_for_webhook(control_plane)
    return control_plane


# A warning only the webhook gives: it proves the webhook answered (envtest/deploy.py).
PROBE = DEPLOY_PROBE.format(namespace=NAMESPACE)


def wait_for_webhook(cluster: Cluster, timeout: float = 60) -> None:
    """Webhook configurations take effect a moment after they are written; wait until they do."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = cluster.kubectl("create", "--dry-run=server", "-f", "-", input=PROBE)
        if PROBE_SIGN in result.stderr:
            return
        time.sleep(0.5)
    raise AssertionError(f"the webhook never answered: {result.stderr}")


RBAC_KINDS = {"Namespace", "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"}


def apply_rbac_from(cluster: Cluster, overlay: str) -> None:
    """Only the RBAC objects of an overlay (its webhook configurations would replace the test's)."""
    import io

    from ruamel.yaml import YAML

    rendered = cluster.kubectl("kustomize", str(REPO / overlay), check=True).stdout
    documents = [d for d in YAML(typ="safe").load_all(rendered) if d and d["kind"] in RBAC_KINDS]
    stream = io.StringIO()
    YAML(typ="safe").dump_all(documents, stream)
    cluster.kubectl("apply", "-f", "-", input=stream.getvalue(), check=True)


def token_kubeconfig(cluster: Cluster, account: str, path: Path) -> str:
    """A kubeconfig that authenticates as a service account of jobgate-system."""
    token = cluster.kubectl("create", "token", account, "-n", "jobgate-system", "--duration=24h", check=True)
    ca = cluster.plane.work_dir / "pki" / "ca.crt"
    path.write_text(
        f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "{cluster.plane.server}", certificate-authority: "{ca}"}}}}]
users: [{{name: {account}, user: {{token: "{token.stdout.strip()}"}}}}]
contexts: [{{name: c, context: {{cluster: c, user: {account}}}}}]
current-context: c
"""
    )
    return str(path)


def controller_namespace(cluster: Cluster, namespace: str, directory: Path) -> str:
    """A namespace for a module's controller tests; returns a kubeconfig of the controller's own account."""
    apply_rbac_from(cluster, "manifests/base")
    cluster.kubectl("create", "namespace", namespace)
    return token_kubeconfig(cluster, "jobgate-controller", directory / "controller.kubeconfig")


def leading_controller(kubeconfig: str, namespace: str, log: Path) -> ControllerProcess:
    """A controller watching ``namespace``, returned once it holds the Lease."""
    process = ControllerProcess(kubeconfig, namespace, log)
    wait_until(process.is_leader, 30, message="controller leadership")
    return process


class ControllerProcess:
    """``jobgate controller`` as the jobgate-controller service account, leader-elected."""

    def __init__(
        self, kubeconfig: str, namespace: str, log: Path, *extra: str, env: dict[str, str] | None = None
    ) -> None:
        self.arguments = (kubeconfig, namespace, log, *extra)
        self.env = env  # extra environment variables (the runtime's test-only fault hooks)
        self.log = log
        self.offset = log.stat().st_size if log.exists() else 0  # restarts append to the same log
        command = [sys.executable, "-m", "jobgate", "controller", "--kubeconfig", kubeconfig]
        command += ["--namespace", namespace, "--leader-elect", "--lease-namespace", "jobgate-system"]
        command += ["--lease-duration", "4", "--renew-deadline", "3", "--retry-period", "0.5"]
        command += ["--resync", "20", "--workers", "8", *extra]
        environment = {**os.environ, **env} if env else None
        self.process = subprocess.Popen(command, cwd=REPO, stderr=log.open("ab"), env=environment)

    def text(self) -> str:
        with self.log.open("rb") as handle:
            handle.seek(self.offset)
            return handle.read().decode(errors="replace")

    def is_leader(self) -> bool:
        return "became leader" in self.text()

    def identity(self) -> str:
        match = re.search(r"identity (\S+)\)", self.text())
        assert match, self.text()
        return match.group(1)

    def restart(self) -> None:
        """Stop this process if it still runs, start a fresh one (same log), wait until it leads."""
        self.stop()
        self.__init__(*self.arguments, env=self.env)
        wait_until(self.is_leader, 30, message="leadership back")

    def stop(self, signum: int = 15) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signum)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def wait_until(predicate, timeout: float = 30.0, interval: float = 0.2, message: str = "condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"{message} not reached within {timeout} s (last: {last!r})")


@pytest.fixture(scope="session")
def node_cluster(webhook_process: WebhookProcess) -> Iterator[Cluster]:
    """A control plane with a real node (kubelet, containerd, CNI, cluster DNS) and jobgate installed.

    Its own control plane, separate from ``cluster``'s, so tests without a node keep theirs
    small. Teardown restores the host (see ``envtest.node``) even when a test failed.
    """
    from envtest.node import Node

    with running_node(Node) as node:
        assert node.plane is not None
        yield install_jobgate(Cluster(node.plane), webhook_process)


@contextlib.contextmanager
def running_node(make: Callable[[], Node]) -> Iterator[Node]:
    """A started node, stopped (and the host checked) at the end; a skip with the reason where
    no node can run here, except under CI."""
    from envtest.node import node_unavailable_reason

    reason = node_unavailable_reason()
    if reason and not IN_CI:
        pytest.skip(f"no real node on this machine: {reason}")
    node = make()
    try:
        node.start()
    except Exception as exc:
        node.stop()
        if IN_CI:
            raise
        pytest.skip(f"the real node could not be started here: {exc}")
    try:
        yield node
    finally:
        node.stop()
        assert not node.teardown_problems, f"host state not restored: {node.teardown_problems}"


@pytest.fixture(scope="session")
def in_cluster_node() -> Iterator[Cluster]:
    """A control plane with a real node in in-cluster mode (``Node(in_cluster=True)``): the
    apiserver on the node's address, service-account tokens, kube-proxy, the controllers of
    Deployments, Jobs, EndpointSlices and PDBs; pods use the cluster as jobgate's own pods will.
    Nothing of jobgate is installed.

    One node runs on a machine at a time, and pytest keeps session fixtures to the end: this
    node gives way when ``node_cluster`` starts its own later in the session, and a node still
    running when this one is needed gives way to it. Modules run one after another, so each
    group of tests finds its node; a module must not use both fixtures.
    """
    from envtest.node import Node

    if Node.running is not None:  # node_cluster's, whose modules have run
        Node.running.give_way = True
    with running_node(lambda: Node(in_cluster=True, give_way=True)) as node:
        assert node.plane is not None
        yield Cluster(node.plane)


@pytest.fixture(scope="session")
def jobgate_in_cluster(in_cluster_node: Cluster) -> Cluster:
    """jobgate deployed on the in-cluster node as users deploy it: its image, and
    ``manifests/overlays/self-signed`` applied with ``kubectl apply -k`` (``envtest.deploy``)."""
    from envtest import image
    from envtest.deploy import deploy
    from envtest.node import Node

    reason = image.build_unavailable_reason()
    if reason and not IN_CI:
        pytest.skip(f"jobgate's image cannot be built here: {reason}")
    assert Node.running is not None
    deploy(Node.running)
    return in_cluster_node


# Volcano's Queue CRD, reduced to what the webhook's queue check reads.
QUEUE_CRD = volcano_scheduling_crd("Queue", "q", "Cluster", status_subresource=False)


def install_queue_crd(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=QUEUE_CRD, check=True)
    cluster.kubectl("wait", "--for=condition=Established", "crd/queues.scheduling.volcano.sh", check=True)
