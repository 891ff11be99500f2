"""No failed admission through the events of a webhook's life, counted where users see them.

jobgate runs in-cluster on the real node (``envtest.deploy``). A client sends jobs to the
apiserver at a steady rate (server-side dry runs and real creates, valid and invalid, mixed)
and records every answer; meanwhile the webhook Deployment is rolled, a webhook pod deleted,
one evicted through the Eviction API (as ``kubectl drain`` does). Every answer must be the
verdict the job deserves: admitted when valid, refused with jobgate's message when invalid;
an answer of any other kind (a failed webhook call, a timeout, a reset) is a failed admission.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.e2e.conftest import Cluster, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.node]

SYSTEM = "jobgate-system"
NS = "rollout-load"
RATE = 25.0  # requests per second, all clients together
CLIENTS = 5
GROUP, VERSION, PLURAL = "training.kubedl.io", "v1alpha1", "tfjobs"
DENIAL = "must not have more than 1 Chief or Master role"


def tfjob(name: str, *, valid: bool) -> dict:
    # Pods of the real creates stay Pending (no node matches): the controller creates them, the
    # node runs nothing, and the load stays on admission.
    container = {"name": "tensorflow", "image": "jobgate.local/none:0"}
    template = {"spec": {"containers": [container], "nodeSelector": {"jobgate.test/none": "none"}}}
    replicas = {"Worker": {"replicas": 1, "template": template}}
    if not valid:
        replicas = {"Chief": {"template": template}, "Master": {"template": template}}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"tfReplicaSpecs": replicas},
    }


Answer = tuple[str, str, str, float]  # kind, outcome, detail, when it came (time.monotonic())


@dataclass
class Load:
    """Clients sending jobs at ``RATE`` until stopped; every answer kept."""

    kubeconfig: str
    run: str  # names the real creates, unique across runs
    answers: list[Answer] = field(default_factory=list)
    started: float = 0.0
    stopped: float = 0.0
    stop: threading.Event = field(default_factory=threading.Event)
    threads: list[threading.Thread] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> Load:
        self.started = time.monotonic()
        for index in range(CLIENTS):
            thread = threading.Thread(target=self._client, args=(index,), daemon=True)
            thread.start()
            self.threads.append(thread)
        return self

    def finish(self) -> list[Answer]:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=60)
        self.stopped = time.monotonic()
        return self.answers

    @property
    def rate(self) -> float:
        return len(self.answers) / (self.stopped - self.started)

    def _client(self, index: int) -> None:
        from kubernetes import client, config

        configuration = client.Configuration()
        config.load_kube_config(config_file=self.kubeconfig, client_configuration=configuration)
        api = client.CustomObjectsApi(client.ApiClient(configuration))  # one connection pool per client
        interval = CLIENTS / RATE
        sent = 0
        next_at = time.monotonic() + index * interval / CLIENTS
        while not self.stop.is_set():
            time.sleep(max(0.0, next_at - time.monotonic()))
            next_at += interval
            sent += 1
            # Of every 8 requests: 3 dry-run valid, 3 dry-run invalid, 1 real invalid, 1 real valid.
            kind = ("dry-valid", "dry-invalid", "dry-valid", "real-invalid", "dry-invalid", "dry-valid",
                    "dry-invalid", "real-valid")[sent % 8]  # fmt: skip
            self._record(kind, api, f"{self.run}-c{index}-{sent}")

    def _record(self, kind: str, api, name: str) -> None:
        from kubernetes.client.exceptions import ApiException

        body = tfjob(name, valid=kind.endswith("-valid") and not kind.endswith("invalid"))
        dry_run = "All" if kind.startswith("dry") else None
        try:
            api.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, body, dry_run=dry_run, _request_timeout=30)
            outcome, detail = "admitted", ""
        except ApiException as exc:
            detail = exc.body if isinstance(exc.body, str) else str(exc)
            outcome = "refused" if exc.status == 422 and DENIAL in detail else f"failed {exc.status}"
        except Exception as exc:  # the connection itself: counted, never lost
            outcome, detail = "failed", repr(exc)
        with self.lock:
            self.answers.append((kind, outcome, detail[:300], time.monotonic()))


def failures(answers: list[Answer]) -> list[Answer]:
    expected = {"dry-valid": "admitted", "real-valid": "admitted", "dry-invalid": "refused", "real-invalid": "refused"}
    return [a for a in answers if a[1] != expected[a[0]]]


def summary(answers: list[Answer]) -> str:
    counts = Counter((kind, outcome) for kind, outcome, _, _ in answers)
    return ", ".join(f"{kind} {outcome}: {n}" for (kind, outcome), n in sorted(counts.items()))


@pytest.fixture(scope="module")
def deployed(jobgate_in_cluster: Cluster) -> Cluster:
    jobgate_in_cluster.kubectl("create", "namespace", NS)
    return jobgate_in_cluster


def webhook_pods(cluster: Cluster) -> list[dict]:
    pods = cluster.get_json("pods", "-n", SYSTEM, "-l", "app.kubernetes.io/name=jobgate")["items"]
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def ready_webhook_pods(cluster: Cluster) -> int:
    ready = 0
    for pod in webhook_pods(cluster):
        conditions = {c["type"]: c["status"] for c in pod["status"].get("conditions", [])}
        ready += conditions.get("Ready") == "True"
    return ready


def under_load(cluster: Cluster, event, run: str, settle: float = 12.0) -> Load:
    """The load run around ``event``, which returns when the event has played out."""
    load = Load(cluster.kubeconfig, run).start()
    time.sleep(3)
    event()
    time.sleep(settle)  # the replaced pods' drain and the endpoints' last updates
    load.finish()
    wait_until(lambda: ready_webhook_pods(cluster) >= 2, 120, message="two webhook replicas ready again")
    return load


def check(load: Load, event: str) -> None:
    answers = load.answers
    print(f"\n{event}: {len(answers)} requests at {load.rate:.1f}/s: {summary(answers)}")
    assert load.rate >= 20, f"the load ran below 20 requests/s: {load.rate:.1f}"
    assert failures(answers) == [], f"{event}: failed admissions: {failures(answers)[:10]}"


def test_a_rollout_restart_loses_no_admission(deployed: Cluster):
    def rollout() -> None:
        deployed.kubectl("rollout", "restart", "deployment/jobgate", "-n", SYSTEM, check=True)
        deployed.kubectl("rollout", "status", "deployment/jobgate", "-n", SYSTEM, "--timeout=180s", check=True)

    check(under_load(deployed, rollout, "rollout"), "kubectl rollout restart deployment/jobgate")


def test_a_webhook_pod_deleted_loses_no_admission(deployed: Cluster):
    def delete() -> None:
        name = webhook_pods(deployed)[0]["metadata"]["name"]
        deployed.kubectl("delete", "pod", name, "-n", SYSTEM, "--wait=true", "--timeout=120s", check=True)

    check(under_load(deployed, delete, "delete"), "a webhook pod deleted")


def evict(cluster: Cluster, name: str) -> tuple[int, str]:
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": SYSTEM}}
    result = cluster.kubectl(
        "create", "--raw", f"/api/v1/namespaces/{SYSTEM}/pods/{name}/eviction", "-f", "-", input=json.dumps(eviction)
    )
    return result.returncode, result.stdout + result.stderr


def test_an_eviction_loses_no_admission_and_the_budget_refuses_a_second(deployed: Cluster):
    second: list[tuple[int, str]] = []

    def drain() -> None:
        first, other = (p["metadata"]["name"] for p in webhook_pods(deployed)[:2])
        code, text = evict(deployed, first)
        assert code == 0, text
        # The PodDisruptionBudget (minAvailable: 1) lets one replica go at a time.
        second.append(evict(deployed, other))

    load = under_load(deployed, drain, "evict")
    code, text = second[0]
    assert code != 0 and ("disruption budget" in text or "429" in text or "TooManyRequests" in text), text
    check(load, "a webhook pod evicted (the Eviction API, as kubectl drain)")


def test_a_sigkilled_webhook_fails_only_what_reached_it_until_its_endpoint_went(deployed: Cluster):
    """SIGKILL gives the webhook no drain: requests reaching it until the kubelet sees the container
    die and the endpoint goes fail. Counted and timed, and bounded; never zero by design."""
    killed: list[float] = []

    def kill() -> None:
        pod = webhook_pods(deployed)[0]
        ip = pod["status"]["podIP"]
        # The container's process as the host sees it: `jobgate webhook` whose pod has this IP.
        for pid in (p for p in os.listdir("/proc") if p.isdigit()):
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                environ = Path(f"/proc/{pid}/environ").read_bytes()
            except OSError:
                continue
            if (
                b"webhook" in command
                and any(c.endswith(b"jobgate") for c in command)
                and pod["metadata"]["name"].encode() in environ
            ):
                os.kill(int(pid), signal.SIGKILL)
                killed.append(time.monotonic())
                break
        assert killed, f"no webhook process of pod {pod['metadata']['name']} ({ip}) found"

    load = under_load(deployed, kill, "kill")
    failed = failures(load.answers)
    window = (failed[-1][3] - killed[0]) if failed else 0.0
    print(f"\nSIGKILL of a webhook container: {len(load.answers)} requests at {load.rate:.1f}/s, {len(failed)} "
          f"failed admissions, the last {window:.1f} s after the kill: {summary(load.answers)}")  # fmt: skip
    assert load.rate >= 20
    assert all(answer[3] >= killed[0] for answer in failed), "a failure before the kill"
    assert window < 15, f"requests still failed {window:.1f} s after the kill: {failed[-3:]}"


def lease_holder(cluster: Cluster) -> str:
    lease = cluster.kubectl("get", "lease", "jobgate-controller", "-n", SYSTEM, "-o", "json")
    return json.loads(lease.stdout)["spec"].get("holderIdentity", "") if lease.returncode == 0 else ""


def test_the_controller_leader_deleted_mid_reconcile_is_replaced_without_double_or_orphan_pods(deployed: Cluster):
    from envtest.node import JOB_IMAGE

    controllers = [p["metadata"]["name"] for p in deployed.get_json(
        "pods", "-n", SYSTEM, "-l", "app.kubernetes.io/name=jobgate-controller")["items"]]  # fmt: skip
    wait_until(lambda: any(lease_holder(deployed).startswith(name) for name in controllers), 60, message="a leader")
    leader = next(name for name in controllers if lease_holder(deployed).startswith(name))
    names = [f"takeover-{i}" for i in range(4)]
    container = {"name": "tensorflow", "image": JOB_IMAGE, "imagePullPolicy": "Never",
                 "command": ["python3", "-c", "import time; time.sleep(8)"]}  # fmt: skip
    for name in names:
        job = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "TFJob",
            "metadata": {"name": name, "namespace": NS},
            # cleanPodPolicy None: every pod stays after the job ends, so all can be counted.
            "spec": {"cleanPodPolicy": "None", "tfReplicaSpecs": {"Worker": {"replicas": 2, "restartPolicy": "Never",
                "template": {"spec": {"terminationGracePeriodSeconds": 1, "containers": [container]}}}}},
        }  # fmt: skip
        deployed.kubectl("create", "-f", "-", input=json.dumps(job), check=True)
    deleted_at = time.monotonic()
    deployed.kubectl("delete", "pod", leader, "-n", SYSTEM, "--wait=false", check=True)
    wait_until(lambda: lease_holder(deployed) and not lease_holder(deployed).startswith(leader), 60,
               message="another controller replica taking the Lease")  # fmt: skip
    takeover = time.monotonic() - deleted_at
    print(f"\ncontroller leader {leader} deleted: the Lease changed hands after {takeover:.1f} s")
    assert takeover < 15 + 10, takeover  # the lease duration, and the time a graceful stop may take

    def all_succeeded() -> bool:
        for name in names:
            status = deployed.get_json("tfjob", name, "-n", NS).get("status", {})
            if not any(c["type"] == "Succeeded" and c["status"] == "True" for c in status.get("conditions", [])):
                return False
        return True

    wait_until(all_succeeded, 180, message="every job to succeed under the new leader")
    for name in names:
        pods = deployed.get_json("pods", "-n", NS, "-l", f"job-name={name}")["items"]
        assert len(pods) == 2, [p["metadata"]["name"] for p in pods]  # none created twice
        for pod in pods:
            owners = [o for o in pod["metadata"].get("ownerReferences", []) if o.get("controller")]
            assert [(o["kind"], o["name"]) for o in owners] == [("TFJob", name)]  # none orphaned
