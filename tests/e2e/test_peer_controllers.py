"""JobSet's and Kubeflow Trainer's own controllers run jobs jobgate admitted, on the real test node (issue 44).

A node of its own (``envtest.node``, in-cluster mode: the kube-controller-manager runs the Job controller,
the scheduler places pods, the kubelet runs them), with the peers' CRDs from their Go modules at the
pinned releases (``envtest.upstream``), jobgate's webhook in front of them (``jobgate webhook
--families=trainer,jobset --kubeconfig ...``, the trainer-admission-only overlay's webhook
configurations with JobSet's resource added, pointed at it by URL) and the peers' controllers built
from their Go modules (``envtest.jobset``, ``envtest.trainer``) with their own webhooks not registered:
every JobSet, TrainJob and runtime here is defaulted and validated by jobgate alone, the JobSet the
Trainer controller creates from a TrainJob included. Pods run the job image's Python and exit 0.

The peers' controllers are not built in CI (cold builds take minutes: ``python -m envtest.jobset``,
``python -m envtest.trainer``), so these tests skip without the builds, under CI too, as the Kueue and
Volcano agreement tests do; on a machine that has them, they run.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from envtest.harness import free_port
from envtest.node import JOB_IMAGE
from envtest.peer_process import PeerProcess
from tests.e2e.conftest import IN_CI, REPO, Cluster, WebhookProcess, by_url, running_node, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.node]

NS = "peers"
OVERLAY = REPO / "manifests/overlays/trainer-admission-only"
TRAINER_API = "trainer.kubeflow.org/v1alpha1"
JOBSET_API = "jobset.x-k8s.io/v1alpha2"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
# Both overlays name their configurations jobgate-mutating / jobgate-validating: here one pair serves both families.
CONFIGURATION_PREFIX = "jobgate-peers-"
JOBSET_RULE = {
    "apiGroups": ["jobset.x-k8s.io"],
    "apiVersions": ["v1alpha2"],
    "resources": ["jobsets"],
    "operations": ["CREATE", "UPDATE"],
    "scope": "Namespaced",
}


@dataclass
class PeerPlane:
    cluster: Cluster
    work: Path
    pki: Path


def webhook_configurations(cluster: Cluster) -> list[dict]:
    """The trainer overlay's webhook configurations, JobSets added to their rules, renamed for this module."""
    rendered = [d for d in yaml.safe_load_all(cluster.kubectl("kustomize", str(OVERLAY), check=True).stdout) if d]
    configurations = [d for d in rendered if d["kind"].endswith("WebhookConfiguration")]
    for configuration in configurations:
        configuration["metadata"]["name"] = CONFIGURATION_PREFIX + configuration["metadata"]["name"]
        for webhook in configuration["webhooks"]:
            webhook["rules"].append(JOBSET_RULE)
    return configurations


def policy_crds(cluster: Cluster) -> list[dict]:
    rendered = yaml.safe_load_all(cluster.kubectl("kustomize", str(OVERLAY), check=True).stdout)
    return [d for d in rendered if d and d["kind"] == "CustomResourceDefinition"]


@pytest.fixture(scope="module")
def peer_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PeerPlane]:
    from envtest.node import Node
    from envtest.upstream import UpstreamUnavailable, jobset_crd, trainer_crds
    from jobgate.certs.authority import init_directory

    try:
        crds = [jobset_crd(), *trainer_crds()]
    except UpstreamUnavailable as exc:
        if IN_CI:
            raise
        pytest.skip(f"the peers' CRDs are not available here: {exc}")
    if Node.running is not None:  # another module's node: this one takes the machine's one node slot
        Node.running.give_way = True
    work = tmp_path_factory.mktemp("peers")
    with running_node(lambda: Node(in_cluster=True, give_way=True)) as node:
        assert node.plane is not None and node.plane.work_dir is not None
        cluster = Cluster(node.plane)
        for crd in crds:
            cluster.kubectl("apply", "--server-side", "-f", str(crd), check=True)
        items = policy_crds(cluster)
        cluster.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}),
                        check=True)  # fmt: skip
        cluster.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s", check=True)
        cluster.kubectl("create", "namespace", NS, check=True)
        tls = work / "tls"
        init_directory(tls, ["localhost"], ["127.0.0.1"])
        webhook = WebhookProcess(tls, free_port())
        webhook.extra = ("--families=trainer,jobset", "--kubeconfig", str(node.plane.kubeconfig))
        webhook.start()
        names = []
        try:
            configurations = webhook_configurations(cluster)
            names = [(c["kind"], c["metadata"]["name"]) for c in configurations]
            pointed = by_url(configurations, webhook.port, (tls / "ca.crt").read_bytes())
            cluster.kubectl("apply", "-f", "-", input=pointed, check=True)
            wait_for_webhook(cluster)
            yield PeerPlane(cluster, work, node.plane.work_dir / "pki")
        finally:
            for kind, name in names:  # they would call a webhook that is gone
                cluster.kubectl("delete", kind.lower(), name, "--ignore-not-found")
            webhook.stop()


def wait_for_webhook(cluster: Cluster, timeout: float = 60) -> None:
    """Webhook configurations take effect a moment after they are written; the webhook is Ready once
    its runtime informers have synced: until jobgate refuses a TrainJob's missing runtime."""
    probe = json.dumps(trainjob("probe", "no-such-runtime"))
    wanted = "specified clusterTrainingRuntime must be created before the TrainJob is created"

    def answered() -> bool:
        result = cluster.kubectl("create", "--dry-run=server", "-f", "-", input=probe)
        return wanted in result.stderr

    wait_until(answered, timeout, interval=0.5, message="jobgate's webhook answering for TrainJobs")


@contextlib.contextmanager
def running(run: Callable[..., PeerProcess], plane: PeerPlane, name: str) -> Iterator[None]:
    """A peer's controller (``run``: ``envtest.jobset.run`` or ``envtest.trainer.run``) on the plane, ready."""
    process = run(
        plane.cluster.plane.kubeconfig, plane.pki / "apiserver.crt", plane.pki / "apiserver.key", plane.work / name
    )
    try:
        process.wait_ready()
        yield
    finally:
        process.stop()


@pytest.fixture(scope="module")
def jobset_controller(request: pytest.FixtureRequest) -> Iterator[PeerPlane]:
    """The plane with JobSet's controller running; a skip before any node starts when it is not built."""
    from envtest import jobset

    reason = jobset.unavailable_reason()
    if reason:
        # The peers' builds are what CI does not make (see the module's docstring): a skip there too.
        pytest.skip(reason)
    plane: PeerPlane = request.getfixturevalue("peer_plane")
    with running(jobset.run, plane, "jobset"):
        yield plane


@pytest.fixture(scope="module")
def trainer_controller(request: pytest.FixtureRequest) -> Iterator[PeerPlane]:
    """The plane with Trainer's controller manager and JobSet's controller (which runs its JobSets)."""
    from envtest import jobset, trainer

    reason = trainer.unavailable_reason() or jobset.unavailable_reason()
    if reason:
        pytest.skip(reason)
    plane: PeerPlane = request.getfixturevalue("jobset_controller")
    with running(trainer.run, plane, "trainer"):
        yield plane


def python(code: str) -> list[str]:
    return ["python3", "-c", code]


def node_container(name: str, code: str) -> dict:
    return {"name": name, "image": JOB_IMAGE, "imagePullPolicy": "Never", "command": python(code)}


def jobset(name: str, *jobs: dict, **spec: object) -> dict:
    return {
        "apiVersion": JOBSET_API,
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"replicatedJobs": list(jobs), **spec},
    }


def replicated(name: str, replicas: int, code: str, **job_spec: object) -> dict:
    pod = {"spec": {"containers": [node_container("main", code)], "terminationGracePeriodSeconds": 1}}
    return {"name": name, "replicas": replicas, "template": {"spec": {"template": pod, **job_spec}}}


def cluster_runtime(name: str, code: str, num_nodes: int = 1) -> dict:
    node = {
        "name": "node",
        "template": {
            "metadata": {"labels": {ANCESTOR: "trainer"}},
            "spec": {"template": {"spec": {"containers": [node_container("node", code)]}}},
        },
    }
    return {
        "apiVersion": TRAINER_API,
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": name},
        "spec": {"mlPolicy": {"numNodes": num_nodes, "torch": {}}, "template": {"spec": {"replicatedJobs": [node]}}},
    }


def trainjob(name: str, runtime: str, **spec: object) -> dict:
    return {
        "apiVersion": TRAINER_API,
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"runtimeRef": {"name": runtime}, **spec},
    }


def create(cluster: Cluster, obj: dict) -> None:
    result = cluster.kubectl("create", "-f", "-", input=json.dumps(obj))
    assert result.returncode == 0, result.stderr


def condition(obj: dict, kind: str) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def stored_or_none(cluster: Cluster, resource: str, name: str) -> dict | None:
    result = cluster.kubectl("get", resource, name, "-n", NS, "-o", "json")
    return json.loads(result.stdout) if result.returncode == 0 else None


def listed(cluster: Cluster, resource: str, selector: str) -> list[dict]:
    return cluster.get_json(resource, "-n", NS, "-l", selector)["items"]


def wait_jobset_completed(cluster: Cluster, name: str, timeout: float = 180) -> dict:
    def completed() -> dict | None:
        found = cluster.get_json("jobsets.jobset.x-k8s.io", name, "-n", NS)
        return found if condition(found, "Completed") else None

    try:
        return wait_until(completed, timeout, interval=1, message=f"JobSet {name} Completed")
    except AssertionError as exc:
        state = cluster.kubectl("get", "jobsets,jobs,pods", "-n", NS, "-o", "wide").stdout
        raise AssertionError(f"{exc}\n{state}") from None


def pod_logs(cluster: Cluster, pods: list[dict]) -> list[str]:
    return [cluster.kubectl("logs", "-n", NS, p["metadata"]["name"], check=True).stdout for p in pods]


def test_a_jobset_jobgate_defaulted_runs_to_its_jobs_and_pods(jobset_controller: PeerPlane):
    cluster = jobset_controller.cluster
    code = "import os; print('index', os.environ['JOB_COMPLETION_INDEX'])"
    create(cluster, jobset("pair", replicated("leader", 1, code), replicated("workers", 2, code, parallelism=2,
                                                                            completions=2)))  # fmt: skip
    stored = cluster.get_json("jobsets.jobset.x-k8s.io", "pair", "-n", NS)
    # jobgate's /mutate, as JobSet's defaulter would (JobSet's CRD defaults none of these)
    assert stored["spec"]["successPolicy"] == {"operator": "All"}
    assert stored["spec"]["startupPolicy"] == {"startupPolicyOrder": "AnyOrder"}
    for job in stored["spec"]["replicatedJobs"]:
        assert job["template"]["spec"]["completionMode"] == "Indexed"
        assert job["template"]["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"

    done = wait_jobset_completed(cluster, "pair")
    assert done["status"]["terminalState"] == "Completed"
    jobs = listed(cluster, "jobs", f"{JOBSET_NAME}=pair")
    assert sorted(j["metadata"]["name"] for j in jobs) == ["pair-leader-0", "pair-workers-0", "pair-workers-1"]
    assert all(j["spec"]["completionMode"] == "Indexed" for j in jobs)
    pods = listed(cluster, "pods", f"{JOBSET_NAME}=pair")
    assert len(pods) == 5 and all(p["status"]["phase"] == "Succeeded" for p in pods), pods
    texts = pod_logs(cluster, pods)
    assert sorted(t.strip() for t in texts) == ["index 0"] * 3 + ["index 1"] * 2


def test_a_trainjob_jobgate_admitted_runs_through_trainer_and_jobset(trainer_controller: PeerPlane):
    cluster = trainer_controller.cluster
    code = "import os; print('nodes', os.environ['PET_NNODES'], 'rank', os.environ['PET_NODE_RANK'])"
    create(cluster, cluster_runtime("local-torch", code))
    labelled = {"manager": "example.com/team", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
        {"name": "node", "template": {"spec": {"template": {"metadata": {"labels": {"team": "a"}}}}}}]}}}}  # fmt: skip
    create(cluster, trainjob("train", "local-torch", trainer={"numNodes": 2}, runtimePatches=[labelled]))
    stored = cluster.get_json("trainjobs.trainer.kubeflow.org", "train", "-n", NS)
    assert stored["spec"]["runtimeRef"]["kind"] == "ClusterTrainingRuntime"
    assert stored["spec"]["runtimePatches"][0]["time"]  # stamped by jobgate's /mutate, as Trainer's defaulter does

    # Trainer's controller makes the JobSet; jobgate defaulted it on its way in, as JobSet's webhook would.
    child = wait_until(lambda: stored_or_none(cluster, "jobsets.jobset.x-k8s.io", "train"), 60, interval=1,
                       message="the TrainJob's JobSet")  # fmt: skip
    (node,) = child["spec"]["replicatedJobs"]
    assert node["template"]["spec"]["completionMode"] == "Indexed"
    assert child["spec"]["successPolicy"]["operator"] == "All"
    owners = child["metadata"].get("ownerReferences") or []
    assert [(o["kind"], o["name"]) for o in owners] == [("TrainJob", "train")]

    wait_jobset_completed(cluster, "train")
    pods = listed(cluster, "pods", f"{JOBSET_NAME}=train")
    assert len(pods) == 2 and all(p["status"]["phase"] == "Succeeded" for p in pods), pods
    assert all(p["metadata"]["labels"].get("team") == "a" for p in pods)  # the patch, merged by Trainer
    assert sorted(t.strip() for t in pod_logs(cluster, pods)) == ["nodes 2 rank 0", "nodes 2 rank 1"]

    def complete() -> bool:
        return condition(cluster.get_json("trainjobs.trainer.kubeflow.org", "train", "-n", NS), "Complete")

    wait_until(complete, 60, interval=1, message="the TrainJob's Complete condition")


def test_an_invalid_trainjob_is_refused_and_nothing_runs(trainer_controller: PeerPlane):
    cluster = trainer_controller.cluster
    create(cluster, cluster_runtime("local-plain", "print('never')"))
    ghost = {"manager": "example.com/mine", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
        {"name": "ghost"}]}}}}  # fmt: skip
    cases = [
        (trainjob("orphan", "no-such-runtime"), "specified clusterTrainingRuntime must be created before"),
        (trainjob("ghost", "local-plain", runtimePatches=[ghost]),
         "must not have replicated job that doesn't exist in the runtime job template"),
    ]  # fmt: skip
    for job, message in cases:
        result = cluster.kubectl("create", "-f", "-", input=json.dumps(job))
        assert result.returncode != 0 and message in result.stderr, result.stderr
        name = job["metadata"]["name"]
        assert stored_or_none(cluster, "trainjobs.trainer.kubeflow.org", name) is None
        assert stored_or_none(cluster, "jobsets.jobset.x-k8s.io", name) is None
        assert not listed(cluster, "pods", f"{JOBSET_NAME}={name}")


def test_a_suspended_trainjob_resumes_through_jobgates_jobset_update_checks(trainer_controller: PeerPlane):
    """Trainer applies the resumed JobSet as an UPDATE: jobgate's JobSet UPDATE rules (immutability, with
    JobSet's relaxations while suspended) meet the object Trainer's server-side apply writes."""
    cluster = trainer_controller.cluster
    create(cluster, cluster_runtime("local-held", "print('resumed')"))
    create(cluster, trainjob("held", "local-held", suspend=True))
    child = wait_until(lambda: stored_or_none(cluster, "jobsets.jobset.x-k8s.io", "held"), 60, interval=1,
                       message="the suspended TrainJob's JobSet")  # fmt: skip
    assert child["spec"]["suspend"] is True
    assert not listed(cluster, "pods", f"{JOBSET_NAME}=held")
    patch = json.dumps({"spec": {"suspend": False}})
    cluster.kubectl("patch", "trainjobs.trainer.kubeflow.org", "held", "-n", NS, "--type=merge", "-p", patch,
                    check=True)  # fmt: skip
    wait_jobset_completed(cluster, "held")
    (pod,) = listed(cluster, "pods", f"{JOBSET_NAME}=held")
    assert pod["status"]["phase"] == "Succeeded"
