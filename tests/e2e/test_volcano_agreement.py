"""jobgate's queue fit agrees with Volcano itself (issue 45): Volcano's own scheduler, controller
manager and admission webhooks (``envtest.volcano``, built from its Go module at ``VOLCANO_VERSION``)
run against a control plane of their own with Volcano's CRDs, the chart's scheduler configuration
(the ``capacity`` plugin) and webhooks, and a few Nodes with GPUs (objects only: no kubelet is needed
to see what the scheduler decides, which it writes on the PodGroup and in the pods' binding).

For each Volcano Job of the table, ``jobgate validate`` with ``require.fitsQueue`` (given the queues
exported from that cluster, as docs/policy.md says) must agree with Volcano:

- a job jobgate admits runs there: its PodGroup turns Running and at least its gang minimum of pods is
  bound to nodes, each on a queue nothing else uses;
- a job jobgate refuses as never fitting never runs there: refused at creation by Volcano's webhook (a
  missing or closed queue: in v1.10 the scheduler does not look at the queue's state, the webhook
  does), or left unschedulable by the scheduler session after session (its PodGroup's
  ``Unschedulable`` event counted three times) with no pod bound; over a queue's capability the
  enqueue action keeps the PodGroup Pending ("queue resource quota insufficient"), unless the pods
  name their GPUs in ``limits`` only, which Volcano's PodGroup ``minResources`` does not count (the
  quota's pod usage reads requests): then the PodGroup is enqueued and the allocate action, which
  counts each pod's request as the apiserver defaulted it, never binds the gang.

Found by it, and fixed: Volcano reads a ``cpu`` or ``memory`` capability of zero as no bound at all
(jobgate read it as zero, refusing every job of such a queue that asks either).

One known difference is pinned too: Volcano v1.10's scheduler does not read a Queue's ``spec.parent``
(no code of that release does; hierarchical queues came later, with the capacity plugin's hierarchy),
while jobgate caps a job by each parent's capability, as hierarchical Volcano does.

The hierarchy cases run again against ``VOLCANO_HIERARCHY_VERSION`` (v1.11.0, the first release whose
``capacity`` plugin reads ``spec.parent``), its chart's scheduler configuration with that plugin and
``enableHierarchy: true``, on a control plane of their own, and agree: a job within its queue's
capability but over its parent's stays Pending ("queue resource quota insufficient": the plugin caps a
child by its parent's capability), a job within both runs, a job on a queue that has child queues is
refused by Volcano's webhook as by jobgate. A child whose capability is above its parent's (the v1.10
case's queues) is a hierarchy v1.11 refuses outright: its scheduler then schedules nothing at all,
so the job jobgate refuses there stays Pending too, for that reason (made last, as it stops the rest).

Volcano is not built in CI (a cold build of its three commands takes tens of minutes on 2 cores:
``python -m envtest.volcano``, and ``--version v1.11.0 --git DIR`` for the second release), so this test
skips without the builds, under CI too."""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml

from tests.e2e.conftest import IN_CI, fits_queue_verdict, wait_until

if TYPE_CHECKING:
    from envtest.peers import Peer

pytestmark = pytest.mark.e2e

NAMESPACE = "volcano-agreement"
GPU = "nvidia.com/gpu"
SCHEDULING = "scheduling.volcano.sh/v1beta1"
# Nodes enough for every job that fits at once and then some (each pod takes a node's 8 GPUs): a job
# that does not run is refused by its queue, not by the nodes.
NODES = 16
NODE_CAPACITY = {"cpu": "32", "memory": "128Gi", "pods": "110", GPU: "8"}
# Sessions that must refuse a job before it counts as never scheduled (scheduling cycles, not seconds).
SESSIONS = 3


def queue(name: str, capability: dict[str, str | int], parent: str | None = None) -> dict:
    spec: dict = {"capability": capability, "weight": 1}
    if parent:
        spec["parent"] = parent
    return {"apiVersion": SCHEDULING, "kind": "Queue", "metadata": {"name": name}, "spec": spec}


QUEUES = [
    queue("agree-fits", {GPU: 16}),
    queue("agree-over", {GPU: 16}),
    queue("agree-elastic", {GPU: 16}),
    queue("agree-limits", {GPU: 16}),
    queue("agree-limits-fits", {GPU: 16}),
    queue("agree-first-pods", {GPU: 16}),
    queue("agree-cpu", {"cpu": "4"}),
    queue("agree-init", {GPU: 16}),
    # Volcano reads a cpu or memory capability of zero as no bound (jobgate once read it as zero).
    queue("agree-zero-cpu", {GPU: 16, "cpu": "0", "memory": "0"}),
    queue("agree-closed", {GPU: 64}),
    queue("agree-org", {GPU: 16}),
    queue("agree-research", {GPU: 64}, parent="agree-org"),
]
CLOSED = "agree-closed"


@dataclass(frozen=True)
class Case:
    job: str
    queue: str | None  # None: unset, Volcano's `default` queue (no capability)
    replicas: int
    never_fits: bool
    min_available: int | None = None  # the job's; None: Volcano's webhook sets the tasks' sum
    task_min: int | None = None  # the workers' minAvailable; None: Volcano's webhook sets replicas
    ps: int = 0  # pods of a first task asking a CPU and no GPU
    gpus: int = 8  # per pod
    gpu_requests: bool = True  # False: the GPUs in limits only
    cpu: str | None = None  # per pod, requested (with as many GiB of memory)
    gpus_in_init: bool = False  # the GPUs asked by an init container, the app container asking none
    refused_by_webhook: str | None = None  # what Volcano's admission webhook says
    enqueue_refuses: bool = False  # the capacity plugin keeps the PodGroup Pending
    allocate_refuses: bool = False  # enqueued, but the capacity plugin lets no gang be allocated


CASES = [
    Case("fits", "agree-fits", 2, never_fits=False),  # 16 of 16
    Case("over", "agree-over", 3, never_fits=True, enqueue_refuses=True),  # 24 > 16
    Case("elastic", "agree-elastic", 3, never_fits=False, min_available=2, task_min=2),  # gang minimum 16
    # Below the tasks' minimums (1 + 3), the job's first 3 pods: the ps and two workers, 16 of 16.
    Case("first-pods", "agree-first-pods", 3, never_fits=False, min_available=3, ps=1),
    Case("over-in-limits", "agree-limits", 3, never_fits=True, gpu_requests=False, allocate_refuses=True),  # 24 > 16
    Case("fits-in-limits", "agree-limits-fits", 2, never_fits=False, gpu_requests=False),  # 16 of 16
    # A pod asks the most of its init containers and its app containers: 3 × 8 > 16.
    Case("over-in-init", "agree-init", 3, never_fits=True, gpus_in_init=True, enqueue_refuses=True),
    Case("cpu-over", "agree-cpu", 2, never_fits=True, gpus=0, cpu="3", enqueue_refuses=True),  # 6 > 4
    Case("zero-cpu-capability", "agree-zero-cpu", 2, never_fits=False, cpu="1"),
    Case("default-queue", None, 2, never_fits=False),
    Case(
        "closed",
        CLOSED,
        1,
        never_fits=True,
        refused_by_webhook=f"can only submit job to queue with state `Open`, queue `{CLOSED}` status is `Closed`",
    ),
    Case("missing", "agree-missing", 1, never_fits=True, refused_by_webhook="unable to find job queue"),
]
# Over the parent's capability (24 > 16), within its own (64): see the module's docstring.
PARENT_CAPPED = Case("over-parent", "agree-research", 3, never_fits=True)


def vcjob(case: Case) -> dict:
    """The job as its author writes it: Volcano's mutating webhook sets the queue, the scheduler and
    the minimums it leaves out."""
    resources: dict = {}
    if case.gpus:
        resources["limits"] = {GPU: case.gpus}
        if case.gpu_requests:
            resources["requests"] = {GPU: case.gpus}
    if case.cpu:
        resources.setdefault("requests", {}).update({"cpu": case.cpu, "memory": f"{case.cpu}Gi"})
    container = {"name": "worker", "image": "busybox:1.36", "command": ["sleep", "600"], "resources": resources}
    pod: dict = {"containers": [container]}
    if case.gpus_in_init:
        pod = {"initContainers": [{**container, "name": "warm-up"}], "containers": [{**container, "resources": {}}]}
    task = {"name": "worker", "replicas": case.replicas, "template": {"spec": pod}}
    if case.task_min is not None:
        task["minAvailable"] = case.task_min
    spec: dict = {"tasks": [task]}
    if case.ps:
        ps = {**container, "name": "ps", "resources": {"requests": {"cpu": "1"}}}
        spec["tasks"].insert(0, {"name": "ps", "replicas": case.ps, "template": {"spec": {"containers": [ps]}}})
    if case.queue:
        spec["queue"] = case.queue
    if case.min_available is not None:
        spec["minAvailable"] = case.min_available
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": case.job, "namespace": NAMESPACE},
        "spec": spec,
    }


def node(index: int) -> dict:
    name = f"agree-node-{index}"
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}}


@dataclass
class VolcanoCluster:
    kubectl: list[str]
    work: Path
    scheduler_log: Path | None = None

    def overused(self, queue: str, job: str) -> bool:
        """Whether the scheduler's allocate action found the queue overused by one of the job's pods
        (its log at --v=3)."""
        assert self.scheduler_log is not None
        return f"Queue <{queue}> is overused when considering task <{job}-" in self.scheduler_log.read_text()

    def run(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [*self.kubectl, *args], capture_output=True, text=True, input=input, check=False, timeout=120
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed:\n{result.stdout}{result.stderr}")
        return result

    def get(self, *args: str) -> dict:
        return json.loads(self.run("get", *args, "-o", "json").stdout)


def make_ready(cluster: VolcanoCluster, name: str) -> None:
    """What a kubelet would report: capacity and Ready; and the not-ready taint the apiserver puts on a
    new Node lifted, as the node lifecycle controller (not running here) would."""
    condition = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "fake node"}
    status = {"capacity": NODE_CAPACITY, "allocatable": NODE_CAPACITY, "conditions": [condition]}
    cluster.run("patch", "node", name, "--subresource=status", "--type=merge", "-p", json.dumps({"status": status}))
    cluster.run("taint", "nodes", name, "node.kubernetes.io/not-ready:NoSchedule-", check=False)


def close_queue(cluster: VolcanoCluster, name: str) -> None:
    """As ``vcctl queue operate --action close`` does it: a Command the queue controller carries out."""
    uid = cluster.get("queues.scheduling.volcano.sh", name)["metadata"]["uid"]
    owner = {"apiVersion": SCHEDULING, "kind": "Queue", "name": name, "uid": uid, "controller": True}
    command = {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"generateName": f"{name}-closequeue-", "namespace": "default", "ownerReferences": [owner]},
        "target": owner,
        "action": "CloseQueue",
    }
    cluster.run("create", "-f", "-", input=yaml.safe_dump(command))


def queue_state(cluster: VolcanoCluster, name: str) -> str | None:
    return (cluster.get("queues.scheduling.volcano.sh", name).get("status") or {}).get("state")


@contextmanager
def running_volcano(peer: Peer, queues: list[dict], conf_text: str | None = None) -> Iterator[VolcanoCluster]:
    """A control plane with the peer's CRDs, its chart's webhooks, ``NODES`` nodes, its three commands
    running (the scheduler with ``conf_text``, else its chart's configuration) and ``queues`` open."""
    from envtest import volcano as volcano_runner
    from envtest.harness import ControlPlane, free_port
    from envtest.upstream import UpstreamUnavailable

    reason = volcano_runner.unavailable_reason(peer)
    if reason:
        # The Volcano build is the one thing CI does not make (see the module's docstring): a skip there too.
        pytest.skip(reason)
    try:
        crds = volcano_runner.crds(peer)
    except (UpstreamUnavailable, RuntimeError) as exc:
        if IN_CI:
            raise
        pytest.skip(f"Volcano's CRDs cannot be had from its Go module here: {exc}")
    with ControlPlane(controller_manager=False) as plane, tempfile.TemporaryDirectory(prefix="jobgate-volcano-") as tmp:
        cluster = VolcanoCluster(plane.kubectl_command(), Path(tmp))
        for crd in crds:
            cluster.run("apply", "--server-side", "-f", str(crd))
        cluster.run("wait", "--for=condition=Established", "crd", "--all", "--timeout=120s")
        for namespace in (volcano_runner.RELEASE_NAMESPACE, NAMESPACE):
            cluster.run("create", "namespace", namespace)
        for index in range(NODES):
            cluster.run("apply", "-f", "-", input=yaml.safe_dump(node(index)))
            make_ready(cluster, f"agree-node-{index}")
        assert plane.work_dir is not None
        pki = plane.work_dir / "pki"
        port = free_port()
        ca = (pki / "ca.crt").read_bytes()
        webhooks = volcano_runner.chart_webhook_configurations(f"https://127.0.0.1:{port}", ca, peer)
        cluster.run("apply", "-f", "-", input=yaml.safe_dump_all(webhooks))
        volcano = volcano_runner.start(
            plane.kubeconfig, pki, Path(tmp) / "volcano", port, peer=peer, conf_text=conf_text
        )
        cluster.scheduler_log = volcano.logs["vc-scheduler"]
        try:
            # Through Volcano's queue webhooks, parents first; its queue controller then opens each.
            for item in queues:
                parent = item["spec"].get("parent")
                if parent:  # Volcano's webhook looks the parent up (from v1.11): it must be there first
                    wait_until(lambda p=parent: queue_state(cluster, p) == "Open", 60, message=f"queue {parent} Open")
                cluster.run("apply", "-f", "-", input=yaml.safe_dump(item))
            for name in [q["metadata"]["name"] for q in queues] + ["default"]:
                wait_until(lambda name=name: queue_state(cluster, name) == "Open", 60, message=f"queue {name} Open")
            yield cluster
        except BaseException:
            print(volcano.tail())
            raise
        finally:
            volcano.stop()


@pytest.fixture(scope="module")
def volcano_cluster() -> Iterator[VolcanoCluster]:
    from envtest.volcano import VOLCANO

    with running_volcano(VOLCANO, QUEUES) as cluster:
        close_queue(cluster, CLOSED)
        wait_until(lambda: queue_state(cluster, CLOSED) == "Closed", 60, message=f"queue {CLOSED} Closed")
        yield cluster


def jobgate_verdict(cluster: VolcanoCluster, case: Case) -> subprocess.CompletedProcess[str]:
    """``jobgate validate`` of the job with the policy and the queues exported from the cluster."""
    return fits_queue_verdict(cluster.run, cluster.work, "queues.scheduling.volcano.sh", NAMESPACE, vcjob(case))


def pod_group(cluster: VolcanoCluster, job: str) -> dict | None:
    for group in cluster.get("podgroups.scheduling.volcano.sh", "-n", NAMESPACE)["items"]:
        if any(o.get("name") == job for o in group["metadata"].get("ownerReferences") or []):
            return group
    return None


def bound_pods(cluster: VolcanoCluster, job: str) -> list[str]:
    pods = cluster.get("pods", "-n", NAMESPACE, "-l", f"volcano.sh/job-name={job}")["items"]
    return [p["metadata"]["name"] for p in pods if (p.get("spec") or {}).get("nodeName")]


def events_of(cluster: VolcanoCluster, group: dict) -> list[dict]:
    selector = f"involvedObject.name={group['metadata']['name']},involvedObject.kind=PodGroup"
    return cluster.get("events", "-n", NAMESPACE, "--field-selector", selector)["items"]


def phase(group: dict | None) -> str | None:
    return ((group or {}).get("status") or {}).get("phase")


def running(cluster: VolcanoCluster, case: Case) -> dict | None:
    """The job's PodGroup once Running with its gang minimum bound."""
    group = pod_group(cluster, case.job)
    gang = case.min_available if case.min_available is not None else case.replicas + case.ps
    if phase(group) == "Running" and len(bound_pods(cluster, case.job)) >= gang:
        return group
    return None


def refused_sessions(cluster: VolcanoCluster, case: Case) -> dict | None:
    """The job's PodGroup once the scheduler has found it unschedulable in ``SESSIONS`` sessions (the
    recorder counts a repeated event), checking at each look that it has not run."""
    group = pod_group(cluster, case.job)
    if group is None:
        return None
    assert phase(group) != "Running", group
    assert bound_pods(cluster, case.job) == [], group
    counts = [e.get("count") or 1 for e in events_of(cluster, group) if e.get("reason") == "Unschedulable"]
    return group if counts and max(counts) >= SESSIONS else None


def apply(cluster: VolcanoCluster, case: Case, check: bool = True) -> subprocess.CompletedProcess[str]:
    return cluster.run("create", "-f", "-", input=yaml.safe_dump(vcjob(case)), check=check)


def test_volcano_never_runs_the_jobs_jobgate_refuses_and_runs_the_others(volcano_cluster: VolcanoCluster):
    verdicts = {case.job: jobgate_verdict(volcano_cluster, case) for case in CASES}
    for case in CASES:
        verdict = verdicts[case.job]
        if case.never_fits:
            assert verdict.returncode == 1, verdict.stdout + verdict.stderr
            assert "[policy/queue-fit]" in verdict.stdout or "[policy/queue-misconfigured]" in verdict.stdout
        else:
            assert verdict.returncode == 0, verdict.stdout + verdict.stderr
    for case in CASES:
        created = apply(volcano_cluster, case, check=case.refused_by_webhook is None)
        if case.refused_by_webhook:
            assert created.returncode != 0, f"Volcano's webhook admitted {case.job}"
            assert case.refused_by_webhook in created.stderr, created.stderr
    for case in (c for c in CASES if not c.never_fits):
        wait_until(
            lambda case=case: running(volcano_cluster, case),
            120,
            message=f"{case.job} Running with its gang bound: {pod_group(volcano_cluster, case.job)}",
        )
    for case in (c for c in CASES if c.never_fits and not c.refused_by_webhook):
        group = wait_until(
            lambda case=case: refused_sessions(volcano_cluster, case),
            120,
            message=f"{case.job} refused in {SESSIONS} sessions: {pod_group(volcano_cluster, case.job)}",
        )
        if case.enqueue_refuses:
            assert phase(group) == "Pending", group
            messages = [e.get("message") for e in events_of(volcano_cluster, group)]
            assert "queue resource quota insufficient" in messages, messages
        if case.allocate_refuses:
            assert phase(group) == "Inqueue", group
            assert volcano_cluster.overused(case.queue or "default", case.job)
    # The elastic job's third pod is past the queue's capability: it stays unbound, for that reason.
    wait_until(lambda: volcano_cluster.overused("agree-elastic", "elastic"), 60, message="elastic's queue overused")
    assert len(bound_pods(volcano_cluster, "elastic")) == 2


def test_volcano_v1_10_ignores_a_parent_queues_capability_that_jobgate_enforces(volcano_cluster: VolcanoCluster):
    verdict = jobgate_verdict(volcano_cluster, PARENT_CAPPED)
    assert verdict.returncode == 1, verdict.stdout + verdict.stderr
    assert "the capability of its parent queue agree-org" in verdict.stdout, verdict.stdout
    apply(volcano_cluster, PARENT_CAPPED)
    wait_until(
        lambda: running(volcano_cluster, PARENT_CAPPED),
        120,
        message=f"{PARENT_CAPPED.job} Running: {pod_group(volcano_cluster, PARENT_CAPPED.job)}",
    )


# --- hierarchical queues, against the first Volcano release that reads spec.parent ---------------------

HIERARCHICAL_QUEUES = [
    queue("hier-org", {GPU: 16}),
    # No GPU bound of its own: its parent's is the most it can ever give.
    queue("hier-team", {"cpu": "256"}, parent="hier-org"),
    queue("hier-lab", {GPU: 16}),
    queue("hier-lab-team", {GPU: 16}, parent="hier-lab"),
]
HIERARCHY_CASES = [
    # Within its own capability (none on GPUs), over its parent's: 24 > 16.
    Case("over-parent", "hier-team", 3, never_fits=True, enqueue_refuses=True),
    Case("within-parent", "hier-lab-team", 2, never_fits=False),  # 16 of 16, and of its parent's 16
]
# A job on a queue that has child queues: Volcano v1.11's job webhook refuses it, and so does jobgate's
# own validation of the job against the exported queues (rule volcano/queue, Volcano's words).
LEAF_ONLY = "can only submit job to leaf queue, queue `hier-org` has 1 child queues"
ON_A_PARENT = Case("on-a-parent", "hier-org", 1, never_fits=True, refused_by_webhook=LEAF_ONLY)
# The v1.10 case's shape (a child's capability above its parent's), made last: see the test.
INVALID_HIERARCHY = [queue("hier-wide-org", {GPU: 16}), queue("hier-wide-team", {GPU: 64}, parent="hier-wide-org")]
OVER_NARROW_PARENT = Case("over-narrow-parent", "hier-wide-team", 3, never_fits=True)


@pytest.fixture(scope="module")
def hierarchical_cluster() -> Iterator[VolcanoCluster]:
    from envtest.volcano import HIERARCHICAL, hierarchical_scheduler_conf, scheduler_conf

    if HIERARCHICAL.cached() is None:
        pytest.skip(f"Volcano {HIERARCHICAL.version} is not built (see docs/testing.md)")
    conf = hierarchical_scheduler_conf(scheduler_conf(HIERARCHICAL))
    with running_volcano(HIERARCHICAL, HIERARCHICAL_QUEUES, conf) as cluster:
        yield cluster


def test_hierarchical_volcano_never_runs_a_job_over_its_parent_queue_as_jobgate_refuses_it(
    hierarchical_cluster: VolcanoCluster,
):
    cluster = hierarchical_cluster
    over, within = HIERARCHY_CASES
    verdict = jobgate_verdict(cluster, over)
    assert verdict.returncode == 1, verdict.stdout + verdict.stderr
    assert "the capability of its parent queue hier-org" in verdict.stdout, verdict.stdout
    verdict = jobgate_verdict(cluster, within)
    assert verdict.returncode == 0, verdict.stdout + verdict.stderr
    for case in HIERARCHY_CASES:
        apply(cluster, case)
    wait_until(lambda: running(cluster, within), 120, message=f"{within.job} Running: {pod_group(cluster, within.job)}")
    group = wait_until(
        lambda: refused_sessions(cluster, over),
        120,
        message=f"{over.job} refused in {SESSIONS} sessions: {pod_group(cluster, over.job)}",
    )
    assert phase(group) == "Pending", group
    messages = [e.get("message") for e in events_of(cluster, group)]
    assert "queue resource quota insufficient" in messages, messages

    verdict = jobgate_verdict(cluster, ON_A_PARENT)
    assert verdict.returncode == 1, verdict.stdout + verdict.stderr
    assert f"{LEAF_ONLY} [volcano/queue]" in verdict.stdout, verdict.stdout
    created = apply(cluster, ON_A_PARENT, check=False)
    assert created.returncode != 0, "Volcano's webhook admitted a job on a parent queue"
    assert LEAF_ONLY in created.stderr, created.stderr

    # Last, as it stops the whole scheduler: a child's capability above its parent's (the v1.10 case's
    # queues) is a hierarchy Volcano refuses to schedule at all, so the job jobgate refuses (24 over the
    # parent's 16) stays Pending there too, for that reason.
    for item in INVALID_HIERARCHY:
        cluster.run("apply", "-f", "-", input=yaml.safe_dump(item))
        name = item["metadata"]["name"]
        wait_until(lambda name=name: queue_state(cluster, name) == "Open", 60, message=f"queue {name} Open")
    verdict = jobgate_verdict(cluster, OVER_NARROW_PARENT)
    assert verdict.returncode == 1, verdict.stdout + verdict.stderr
    assert "the capability of its parent queue hier-wide-org" in verdict.stdout, verdict.stdout
    apply(cluster, OVER_NARROW_PARENT)
    assert cluster.scheduler_log is not None
    wait_until(
        lambda: (
            "queue <hier-wide-org> capability is less than its child queue <hier-wide-team>"
            in cluster.scheduler_log.read_text()
        ),
        120,
        message="Volcano's scheduler refusing the hierarchy",
    )
    for _ in range(SESSIONS):  # sessions, not seconds: each refuses the hierarchy again
        seen = cluster.scheduler_log.read_text().count("Failed to check queue's hierarchical structure")
        wait_until(
            lambda seen=seen: (
                cluster.scheduler_log.read_text().count("Failed to check queue's hierarchical structure") > seen
            ),
            60,
            message="another scheduling session",
        )
        assert bound_pods(cluster, OVER_NARROW_PARENT.job) == []
        assert phase(pod_group(cluster, OVER_NARROW_PARENT.job)) != "Running"
