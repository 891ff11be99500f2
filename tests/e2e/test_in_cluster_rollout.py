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
import time
from pathlib import Path

import pytest

from envtest.admission_load import GROUP, VERSION, Load, failures, summary
from envtest.admission_load import NAMESPACE as NS
from tests.e2e.conftest import Cluster, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.node]

SYSTEM = "jobgate-system"


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
    load.event_started = time.monotonic()
    event()
    time.sleep(settle)  # the replaced pods' drain and the endpoints' last updates
    load.event_ended = time.monotonic()
    load.finish()
    wait_until(lambda: ready_webhook_pods(cluster) >= 2, 120, message="two webhook replicas ready again")
    return load


# Answers sent while an event played out (and its settling time, >= 5 s): enough that an event
# losing admissions could not hide between requests, few enough that a loaded machine's slower
# clients (about 20/s of the 25/s asked) still send them. A count, not a rate: no time is asserted.
ANSWERS_DURING_AN_EVENT = 50


def assert_the_event_was_under_load(load: Load) -> None:
    during = [a for a in load.answers if load.event_started <= a[3] <= load.event_ended]
    assert len(during) >= ANSWERS_DURING_AN_EVENT, f"only {len(during)} requests while the event played out"


def check(load: Load, event: str) -> None:
    answers = load.answers
    print(f"\n{event}: {len(answers)} requests at {load.rate:.1f}/s: {summary(answers)}")
    assert_the_event_was_under_load(load)
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
    assert_the_event_was_under_load(load)
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


def served_serials(cluster: Cluster) -> dict[str, int]:
    """The serial number of the certificate each webhook pod serves, asked of the pod itself."""
    import socket
    import ssl

    from cryptography import x509

    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # who signed it is checked elsewhere
    serials = {}
    for pod in webhook_pods(cluster):
        ip = pod["status"].get("podIP")
        if not ip or pod["status"]["phase"] != "Running":
            continue
        try:
            with socket.create_connection((ip, 9443), timeout=2) as raw, context.wrap_socket(raw) as tls:
                der = tls.getpeercert(binary_form=True)
        except OSError:
            continue
        serials[pod["metadata"]["name"]] = x509.load_der_x509_certificate(der).serial_number
    return serials


def secret_certificates(cluster: Cluster) -> tuple[int, list[bytes]]:
    """The serving certificate's serial in Secret jobgate-webhook-tls, and the CAs its ca.crt trusts."""
    import base64

    from cryptography import x509

    data = cluster.get_json("secret", "jobgate-webhook-tls", "-n", SYSTEM)["data"]
    serving = x509.load_pem_x509_certificates(base64.b64decode(data["tls.crt"]))[0]
    trusted = x509.load_pem_x509_certificates(base64.b64decode(data["ca.crt"]))
    return serving.serial_number, [c.fingerprint(c.signature_hash_algorithm) for c in trusted]  # type: ignore[arg-type]


def certs_args(cluster: Cluster) -> list[str]:
    cronjob = cluster.get_json("cronjob", "jobgate-certs-renew", "-n", SYSTEM)
    return cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"]


def set_cronjob(cluster: Cluster, args: list[str], schedule: str) -> None:
    patch = [
        {"op": "replace", "path": "/spec/jobTemplate/spec/template/spec/containers/0/args", "value": args},
        {"op": "replace", "path": "/spec/schedule", "value": schedule},
    ]
    cluster.kubectl("patch", "cronjob", "jobgate-certs-renew", "-n", SYSTEM, "--type=json", "-p", json.dumps(patch),
                    check=True)  # fmt: skip


def test_certificate_renewal_and_ca_rotation_lose_no_admission(deployed: Cluster):
    """The CronJob's own command, with lifetimes of minutes: a CA rotation (a Job made from the
    CronJob, as a user forces one), then a renewal the schedule starts by itself. Every webhook pod
    must come to serve each new certificate, and no admission may fail on the way."""
    # The kubelet puts a changed Secret into the pods at its next sync of each pod (syncFrequency,
    # 5 s on the test node, 1 min by default); the webhook polls its files every 2 s.
    pickup_bound = 5 + 2 + 20
    original = certs_args(deployed)
    short = [a for a in original if not a.startswith(("--cert-lifetime", "--cert-renew-before", "--ca-overlap"))]
    # A pair of 3 minutes is due 10 s after it is made: the next scheduled run renews it.
    short += ["--cert-lifetime=3m", "--cert-renew-before=2m50s", "--ca-overlap=30m"]
    pickups: list[tuple[str, float]] = []
    runs: list[str] = []

    def wait_for_pods_serving(serial: int, what: str) -> None:
        since = time.monotonic()
        wait_until(lambda: set(served_serials(deployed).values()) == {serial} and len(served_serials(deployed)) >= 2,
                   pickup_bound + 30, message=f"every webhook pod serving the {what} certificate")  # fmt: skip
        pickups.append((what, time.monotonic() - since))

    def renewals() -> None:
        serial_before, trusted_before = secret_certificates(deployed)
        assert set(served_serials(deployed).values()) == {serial_before}
        # 1. CA rotation, forced: a Job from the CronJob with --rotate-ca added.
        set_cronjob(deployed, [*short, "--rotate-ca"], "17 * * * *")
        deployed.kubectl("create", "job", "--from=cronjob/jobgate-certs-renew", "jobgate-certs-rotate", "-n", SYSTEM,
                         check=True)  # fmt: skip
        deployed.kubectl("wait", "--for=condition=Complete", "job/jobgate-certs-rotate", "-n", SYSTEM,
                         "--timeout=120s", check=True)  # fmt: skip
        runs.append("jobgate-certs-rotate")
        serial_rotated, trusted_rotated = secret_certificates(deployed)
        assert serial_rotated != serial_before
        assert len(trusted_rotated) == 2 and trusted_rotated[1] == trusted_before[0], "both CAs trusted"
        wait_for_pods_serving(serial_rotated, "rotated CA's")
        # 2. Renewal by the schedule, with nobody running a command.
        set_cronjob(deployed, short, "* * * * *")
        wait_until(lambda: secret_certificates(deployed)[0] != serial_rotated, 150,
                   message="a scheduled run renewing the serving certificate")  # fmt: skip
        serial_renewed, trusted_renewed = secret_certificates(deployed)
        assert trusted_renewed == trusted_rotated  # the same CA signed it; the old one is still in its overlap
        wait_for_pods_serving(serial_renewed, "scheduled renewal's")
        set_cronjob(deployed, original, "17 * * * *")
        jobs = deployed.get_json("jobs", "-n", SYSTEM)["items"]
        runs.extend(j["metadata"]["name"] for j in jobs if j["metadata"]["name"].startswith("jobgate-certs-renew-"))

    load = under_load(deployed, renewals, "renewal", settle=5.0)
    answers = load.answers
    print(f"\ncertificate renewals ({', '.join(runs)}): {len(answers)} requests at {load.rate:.1f}/s: "
          f"{summary(answers)}; every pod serving the new certificate after "
          + ", ".join(f"{what} {seconds:.1f} s" for what, seconds in pickups))  # fmt: skip
    assert any(run.startswith("jobgate-certs-renew-") for run in runs), f"no run of the schedule: {runs}"
    assert all(seconds <= pickup_bound for _, seconds in pickups), pickups
    check(load, "certificate renewal and CA rotation")
