"""Controller throughput on the real control plane: N jobs x 5 replicas created at once.

Starts etcd + kube-apiserver + kube-controller-manager (envtest), installs the CRDs and runs
``jobgate controller`` as a separate process. Creates N TFJobs (PS x1, Worker x4) from 16
threads, then measures the time until every pod and service exists and every job's status
reports its five replicas; the controller's own API requests per job come from its exit log.

Baseline, measured first in the same run on the same apiserver: the very pods and services
the controller would create (built by the engine, without ownerReferences) POSTed straight
from 32 threads, the controller's own creation concurrency. The ratio says how close the
controller comes to the apiserver's own write throughput on this machine.

The scale curve: ``--sizes 500,1000,2000`` runs each size on a fresh control plane, one after
the other, and prints a table at the end. Per size: time until all children exist and until
every status is correct, the controller's peak RSS and CPU seconds (from /proc, so Linux only),
its API requests per job, the baseline, and the load average at the end of the run (the
machine may be shared: read the figures with it).

With ``--restart``, once every status is right the controller is stopped and a new one started
on the same cluster (a new leader taking over N jobs): its time until its caches are filled and
its workers run, its peak RSS (the initial LIST of every pod and service is where it peaks) and
CPU, and its API requests and passes until it goes idle. A correct resync writes nothing: no
POST, no PUT.

With ``--peers``, the same N TFJobs x 5 are given, each size on a fresh control plane, to jobgate
and to the Go controllers it is compared with (``envtest/peers.py`` builds and caches them): KubeDL's
controller (the same ``training.kubedl.io`` TFJobs) and Kubeflow's training-operator (``kubeflow.org/v1``
TFJobs of the same shape), each alone on its plane with its own CRDs and only its TFJob controller.
There is no baseline in this mode: the Go controllers watch pods and services cluster-wide, so the
baseline's objects would land in their caches. Every contender's API requests are counted the same
way, from the apiserver's audit log (each controller runs as a user of its own), and "status right"
is what each one's own status says for a job whose five pods exist but are not yet scheduled
(``STATUS_RIGHT`` below).

    python -m bench.controller_bench [--jobs 500 | --sizes 500,1000,2000] [--workers 16] [--restart]
    python -m bench.controller_bench --peers [--jobs 1000 | --sizes ...] [--only kubedl,...]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jobgate.kube.client import Kube

from bench.common import free_port
from envtest.peers import (
    AUDIT_POLICY,
    CONTROLLER_USER,
    TRAINING_OPERATOR_NAMESPACE,
    audit_breakdown,
    audit_requests,
    jobgate_status_right,
    kubedl_status_right,
    training_operator_status_right,
    training_operator_webhooks,
)

REPO = Path(__file__).resolve().parents[1]
NAMESPACE = "bench"
BASELINE_NAMESPACE = "bench-baseline"
REPLICAS = 5


def tfjob(index: int, namespace: str = NAMESPACE, api_version: str = "training.kubedl.io/v1alpha1") -> dict:
    container = {"name": "tensorflow", "image": "tensorflow/tensorflow:2.16.1", "command": ["python", "train.py"]}
    return {
        "apiVersion": api_version,
        "kind": "TFJob",
        "metadata": {"name": f"job-{index:04d}", "namespace": namespace},
        "spec": {
            "tfReplicaSpecs": {
                "PS": {"replicas": 1, "template": {"spec": {"containers": [container]}}},
                "Worker": {"replicas": REPLICAS - 1, "template": {"spec": {"containers": [container]}}},
            }
        },
    }


def children_of(index: int) -> list[dict]:
    """What the controller's first pass creates for job ``index``, as plain objects."""
    import datetime

    from jobgate.controller.adapters import adapter_for, read_status
    from jobgate.controller.engine import Observed, reconcile

    job = tfjob(index, BASELINE_NAMESPACE)
    job["metadata"]["uid"] = f"baseline-{index}"
    adapter = adapter_for(job)
    assert adapter is not None
    now = datetime.datetime.now(datetime.UTC)
    plan = reconcile(adapter.model(job), read_status(job), Observed([], [], frozenset(), now))
    for obj in plan.create:
        obj["metadata"].pop("ownerReferences", None)  # no owner exists: the GC would delete them
    return plan.create


def baseline_seconds(kube, jobs: int) -> float:
    from jobgate.controller.resources import KIND_RESOURCES

    objects = [obj for index in range(jobs) for obj in children_of(index)]
    started = time.monotonic()
    with ThreadPoolExecutor(32) as pool:
        list(pool.map(lambda o: kube.create(KIND_RESOURCES[o["kind"]].path(BASELINE_NAMESPACE), o), objects))
    return time.monotonic() - started


def count(kube, path: str) -> int:
    """Objects at ``path``, in pages of metadata only: one LIST with ``limit=10000`` (as before)
    could never count the 25,000 pods of 5,000 jobs, and whole pods cost the apiserver more."""
    from jobgate.kube.informer import METADATA_ONLY_LIST

    total, query = 0, {"limit": 5000}
    while True:
        page = kube.get(path, accept=METADATA_ONLY_LIST, **query)
        total += len(page.get("items") or [])
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return total
        query["continue"] = token


def submit_and_wait(
    kube: Kube,
    jobs_path: str,
    make_job: Callable[[int], dict],
    jobs: int,
    *,
    timeout: float,
    statuses_right: Callable[[], int],
    gone: Callable[[], bool] = lambda: False,
) -> tuple[float, float | None, float | None, float | None]:
    """Create ``jobs`` jobs from 16 threads, then wait until every pod and service exists and
    ``statuses_right()`` counts every job: (submitted, pods, services, statuses) in seconds from
    the first create, None for what never came (``gone()``: the controller exited, stop waiting)."""
    started = time.monotonic()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda i: kube.create(jobs_path, make_job(i)), range(jobs)))
    submitted = time.monotonic() - started
    wanted = jobs * REPLICAS
    pods_done = services_done = statuses_done = None
    while time.monotonic() - started < timeout:
        elapsed = time.monotonic() - started
        if pods_done is None and count(kube, f"/api/v1/namespaces/{NAMESPACE}/pods") >= wanted:
            pods_done = elapsed
        if services_done is None and count(kube, f"/api/v1/namespaces/{NAMESPACE}/services") >= wanted:
            services_done = elapsed
        if pods_done and services_done and statuses_right() == jobs:
            statuses_done = time.monotonic() - started
            break
        if gone():
            break
        time.sleep(0.5)
    return submitted, pods_done, services_done, statuses_done


def converged_jobs(kube) -> int:
    listing = kube.get(f"/apis/training.kubedl.io/v1alpha1/namespaces/{NAMESPACE}/tfjobs")
    done = 0
    for job in listing.get("items") or []:
        status = job.get("status") or {}
        counts = status.get("replicaStatuses") or {}
        created = any(c.get("type") == "Created" and c.get("status") == "True" for c in status.get("conditions") or [])
        active = sum((counts.get(t) or {}).get("active", 0) for t in ("PS", "Worker"))
        done += created and active == REPLICAS and status.get("replicaSummary") == "PS 0/1, Worker 0/4"
    return done


@dataclass
class Result:
    jobs: int
    baseline: float
    submitted: float
    pods_done: float | None
    services_done: float | None
    statuses_done: float | None
    peak_rss_mib: float
    cpu_seconds: float
    requests: dict[str, int] = field(default_factory=dict)
    reconciles: int | None = None
    load: tuple[float, float, float] = (0.0, 0.0, 0.0)
    restart: Restart | None = None


@dataclass
class Restart:
    """A second controller started on the converged cluster."""

    synced: float  # seconds until its workers run (every cache listed)
    peak_rss_mib: float
    cpu_seconds: float
    requests: dict[str, int]
    reconciles: int | None


def process_usage(pid: int) -> tuple[float, float]:
    """Peak resident memory (MiB) and CPU seconds (user + system) of a running process."""
    peak_kib = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            peak_kib = int(line.split()[1])
    # Fields after the command name (which may contain spaces): utime and stime are 14 and 15.
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    return peak_kib / 1024, ticks / os.sysconf("SC_CLK_TCK")


def start_controller(kubeconfig: Path, workers: int, log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "jobgate", "controller", "--kubeconfig", str(kubeconfig),
         "--namespace", NAMESPACE, "--workers", str(workers)],
        cwd=REPO, stderr=log.open("wb"),
    )  # fmt: skip


def exit_counts(text: str) -> tuple[dict[str, int], int | None]:
    """The API requests by verb and the reconcile passes from a controller's exit log."""
    requests = {verb.upper(): int(n) for verb, n in re.findall(r"requests_(\w+)=(\d+)", text)}
    reconciles = re.search(r"reconciles=(\d+)", text)
    return requests, int(reconciles.group(1)) if reconciles else None


def restart(kubeconfig: Path, workers: int, log: Path, timeout: float) -> Restart:
    """A new controller on the converged cluster, until it has been idle for 3 s (its resync done)."""
    started = time.monotonic()
    controller = start_controller(kubeconfig, workers, log)
    while "reconciling with" not in log.read_text() and time.monotonic() - started < timeout:
        time.sleep(0.05)
    synced = time.monotonic() - started
    idle_since, last_cpu = time.monotonic(), -1.0
    while time.monotonic() - idle_since < 3 and time.monotonic() - started < timeout:
        time.sleep(0.5)
        _, cpu = process_usage(controller.pid)
        if cpu - last_cpu > 0.05:  # still working (a tick is 0.01 s)
            idle_since, last_cpu = time.monotonic(), cpu
    peak_rss, cpu = process_usage(controller.pid)
    controller.terminate()
    controller.wait(timeout=30)
    requests, reconciles = exit_counts(log.read_text())
    return Restart(synced, peak_rss, cpu, requests, reconciles)


def run_size(jobs: int, workers: int, timeout: float, with_restart: bool = False) -> Result:
    from envtest.harness import ControlPlane
    from jobgate.kube.client import Kube

    with ControlPlane() as plane, tempfile.TemporaryDirectory(prefix="jobgate-ctrl-bench-") as tmp:
        kubectl = plane.kubectl_command
        subprocess.run(kubectl("apply", "-k", str(REPO / "manifests/base/crds")), check=True, capture_output=True)
        subprocess.run(kubectl("wait", "--for=condition=Established", "crd", "-l", "app.kubernetes.io/part-of=jobgate"),
                       check=True, capture_output=True)  # fmt: skip
        for namespace in (NAMESPACE, BASELINE_NAMESPACE):
            subprocess.run(kubectl("create", "namespace", namespace), check=True, capture_output=True)
        kube = Kube(str(plane.kubeconfig))
        baseline = baseline_seconds(kube, jobs)
        log = Path(tmp) / "controller.log"
        controller = start_controller(plane.kubeconfig, workers, log)
        while "reconciling with" not in log.read_text():
            time.sleep(0.1)
        jobs_path = f"/apis/training.kubedl.io/v1alpha1/namespaces/{NAMESPACE}/tfjobs"
        submitted, pods_done, services_done, statuses_done = submit_and_wait(
            kube, jobs_path, tfjob, jobs, timeout=timeout, statuses_right=lambda: converged_jobs(kube)
        )
        peak_rss, cpu = process_usage(controller.pid)
        controller.terminate()
        controller.wait(timeout=30)
        requests, reconciles = exit_counts(log.read_text())
        second = restart(plane.kubeconfig, workers, Path(tmp) / "restarted.log", timeout) if with_restart else None
    return Result(
        jobs, baseline, submitted, pods_done, services_done, statuses_done, peak_rss, cpu, requests,
        reconciles, os.getloadavg(), second,
    )  # fmt: skip


def report(result: Result, workers: int) -> None:
    jobs, wanted = result.jobs, result.jobs * REPLICAS
    nan = float("nan")
    print(f"controller benchmark: {jobs} TFJobs x {REPLICAS} replicas, {workers} workers, {os.cpu_count()} CPUs")
    print(f"  baseline: the same {wanted} pods + {wanted} services POSTed directly in {result.baseline:6.1f} s")
    print(f"  jobs submitted in            {result.submitted:6.1f} s")
    print(f"  all {wanted} pods exist after  {result.pods_done or nan:6.1f} s")
    print(f"  all {wanted} services after    {result.services_done or nan:6.1f} s")
    print(f"  every status correct after   {result.statuses_done or nan:6.1f} s")
    if result.statuses_done:
        print(f"  baseline / controller        {result.baseline / result.statuses_done:6.2f}x")
    print(f"  controller peak RSS          {result.peak_rss_mib:6.0f} MiB")
    print(f"  controller CPU               {result.cpu_seconds:6.1f} s")
    if result.requests:
        total = sum(result.requests.values())
        per_job = {verb: round(n / jobs, 2) for verb, n in result.requests.items()}
        print(f"  controller API requests      {total} ({total / jobs:.1f} per job: {per_job})")
    if result.reconciles is not None:
        print(f"  reconcile passes             {result.reconciles} ({result.reconciles / jobs:.1f} per job)")
    print("  load average (1/5/15 min)    {:.2f} {:.2f} {:.2f}".format(*result.load))
    if result.restart is not None:
        second = result.restart
        print(f"  restarted controller: workers run after {second.synced:.1f} s (caches listed)")
        print(f"    peak RSS                   {second.peak_rss_mib:6.0f} MiB")
        print(f"    CPU                        {second.cpu_seconds:6.1f} s")
        print(f"    API requests               {second.requests} (writes: "
              f"{sum(n for verb, n in second.requests.items() if verb != 'GET')})")  # fmt: skip
        print(f"    reconcile passes           {second.reconciles}")


def table(results: list[Result]) -> None:
    print()
    print("| jobs × 5 | children | statuses | baseline | RSS MiB | CPU s | requests/job | load 1/5/15 |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in results:
        children = max(r.pods_done or float("nan"), r.services_done or float("nan"))
        per_job = sum(r.requests.values()) / r.jobs if r.requests else float("nan")
        load = " ".join(f"{x:.1f}" for x in r.load)
        print(
            f"| {r.jobs} | {children:.1f} s | {r.statuses_done or float('nan'):.1f} s | {r.baseline:.1f} s "
            f"| {r.peak_rss_mib:.0f} | {r.cpu_seconds:.1f} | {per_job:.1f} | {load} |"
        )


# --- the peers (--peers) ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Contender:
    name: str
    api_version: str  # of its TFJobs
    ready_line: tuple[str, ...]  # all on one line of its log once its TFJob workers run
    status_right: Callable[[dict], bool]

    @property
    def jobs_path(self) -> str:
        return f"/apis/{self.api_version}/namespaces/{NAMESPACE}/tfjobs"


CONTENDERS = {
    c.name: c
    for c in (
        Contender("jobgate", "training.kubedl.io/v1alpha1", ("reconciling with",), jobgate_status_right),
        Contender(
            "kubedl", "training.kubedl.io/v1alpha1", ("Starting workers", "TensorFlowController"), kubedl_status_right
        ),
        Contender(
            "training-operator",
            "kubeflow.org/v1",
            ("Starting workers", "tfjob-controller"),
            training_operator_status_right,
        ),
    )
}


@dataclass
class PeerResult:
    name: str
    jobs: int
    submitted: float
    children_done: float | None
    statuses_done: float | None
    peak_rss_mib: float
    cpu_seconds: float
    requests: dict[str, int]
    load: tuple[float, float, float]
    version: str = ""
    exit_requests: dict[str, int] = field(default_factory=dict)  # jobgate's own count, to check the audit
    breakdown: dict[str, int] = field(default_factory=dict)  # requests by verb and resource

    @property
    def jobs_per_second(self) -> float:
        return self.jobs / self.statuses_done if self.statuses_done else float("nan")

    @property
    def requests_per_job(self) -> float:
        return sum(self.requests.values()) / self.jobs


def controller_kubeconfig(plane, directory: Path) -> Path:
    """A kubeconfig for ``CONTROLLER_USER``, signed by the plane's CA."""
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import load_pem_private_key
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    from envtest.pki import _leaf, kubeconfig
    from jobgate.certs.authority import cert_pem, key_pem

    pki = plane.work_dir / "pki"
    ca_cert = x509.load_pem_x509_certificate((pki / "ca.crt").read_bytes())
    ca_key = load_pem_private_key((pki / "ca.key").read_bytes(), password=None)
    subject = x509.Name(
        [x509.NameAttribute(NameOID.COMMON_NAME, CONTROLLER_USER),
         x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:masters")]
    )  # fmt: skip
    key, cert = _leaf(ca_key, ca_cert, subject, usage=ExtendedKeyUsageOID.CLIENT_AUTH)  # type: ignore[arg-type]
    (directory / "controller.crt").write_bytes(cert_pem(cert))
    (directory / "controller.key").write_bytes(key_pem(key))
    path = directory / "controller.kubeconfig"
    path.write_text(
        kubeconfig(
            plane.server, pki / "ca.crt", directory / "controller.crt", directory / "controller.key", CONTROLLER_USER
        )
    )
    return path


def start_contender(name: str, kubeconfig: Path, workers: int, log: Path, qps: float | None) -> subprocess.Popen:
    """The controller as its deployment runs it, but: no leader election (one replica, as jobgate
    here), ``workers`` concurrent reconciles (jobgate's --workers; both peers default to 1), local
    metrics and probe ports, and the TFJob controller alone."""
    from envtest.peers import PEERS, build

    environment = dict(os.environ, KUBECONFIG=str(kubeconfig))
    if name == "jobgate":
        command = [sys.executable, "-m", "jobgate", "controller", "--kubeconfig", str(kubeconfig),
                   "--namespace", NAMESPACE, "--workers", str(workers)]  # fmt: skip
    elif name == "kubedl":
        # Its client keeps controller-runtime's default rate limit (20 QPS, burst 30): no flag sets it.
        # --workloads, not WORKLOADS_ENABLE: the flag's default "auto" is read first and wins over it.
        # DAGScheduling (Beta, on by default) creates a TFJob's workers only once its PS pods run, which
        # never happens without a node: off, so that every pod and service is created as by the others.
        command = [str(build(PEERS[name])), "--workloads=TFJob", "--feature-gates=DAGScheduling=false",
                   "--enable-leader-election=false", f"--max-reconciles={workers}",
                   f"--controller-metrics-addr=127.0.0.1:{free_port()}", f"--metrics-addr={free_port()}"]  # fmt: skip
    elif name == "training-operator":
        environment["MY_POD_NAMESPACE"] = TRAINING_OPERATOR_NAMESPACE
        command = [str(build(PEERS[name])), "--enable-scheme=tfjob", "--leader-elect=false",
                   f"--controller-threads={workers}", f"--metrics-bind-address=127.0.0.1:{free_port()}",
                   f"--health-probe-bind-address=127.0.0.1:{free_port()}",
                   f"--webhook-server-port={free_port()}"]  # fmt: skip
        if qps is not None:
            command += [f"--kube-api-qps={qps:g}", f"--kube-api-burst={int(qps * 1.5)}"]
    else:
        raise ValueError(f"unknown contender {name}")
    return subprocess.Popen(command, cwd=REPO, env=environment, stdout=subprocess.DEVNULL, stderr=log.open("wb"))


def install_contender(name: str, plane, kube) -> None:
    """Its CRDs (the peers': from their module source) and what it needs before it starts."""
    from envtest.peers import PEERS

    kubectl = plane.kubectl_command
    if name == "jobgate":
        subprocess.run(kubectl("apply", "-k", str(REPO / "manifests/base/crds")), check=True, capture_output=True)
    else:
        crds = PEERS[name].crds()
        # Server-side: training-operator's CRDs (~600 KB each) exceed the 256 KiB of kubectl's
        # last-applied annotation.
        for crd in crds:
            subprocess.run(kubectl("apply", "--server-side", "-f", str(crd)), check=True, capture_output=True)
    subprocess.run(kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=120s"),
                   check=True, capture_output=True)  # fmt: skip
    subprocess.run(kubectl("create", "namespace", NAMESPACE), check=True, capture_output=True)
    if name == "training-operator":
        source = PEERS[name].source()
        subprocess.run(kubectl("create", "namespace", TRAINING_OPERATOR_NAMESPACE), check=True, capture_output=True)
        # The empty Secret its manifests ship, which the rotator fills with the webhook's certificate.
        kube.create(f"/api/v1/namespaces/{TRAINING_OPERATOR_NAMESPACE}/secrets",
                    {"apiVersion": "v1", "kind": "Secret",
                     "metadata": {"name": "training-operator-webhook-cert"}})  # fmt: skip
        manifest = (source / "manifests/base/webhook/manifests.yaml").read_text()
        for webhook in training_operator_webhooks(manifest):
            kube.create("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", webhook)


def stop(process: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL after 30 s: KubeDL v0.5.0 was seen still running 30 s after SIGTERM
    with 1,000 jobs, and what is measured was read before."""
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=30)


def contender_ready(contender: Contender, log: str) -> bool:
    """Whether its TFJob controller's workers run (every line that says so names it)."""
    return any(all(part in line for part in contender.ready_line) for line in log.splitlines())


# Hard-coded in training-operator v1.9.2 (pkg/cert): where its certificate rotator waits for the
# webhook Secret to be mounted, and its webhook server reads its certificate.
WEBHOOK_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")


def mount_webhook_secret(kube) -> bool:
    """Do the kubelet's part for training-operator: write its webhook Secret's keys as files where
    its deployment mounts them, once its rotator has filled the Secret. Until the files exist the
    rotator holds the controllers back (and gives up after ~17 minutes)."""
    import base64

    secret = kube.get(f"/api/v1/namespaces/{TRAINING_OPERATOR_NAMESPACE}/secrets/training-operator-webhook-cert")
    data = secret.get("data") or {}
    if "tls.crt" not in data or (WEBHOOK_CERT_DIR / "tls.crt").exists():
        return (WEBHOOK_CERT_DIR / "tls.crt").exists()
    WEBHOOK_CERT_DIR.mkdir(parents=True, exist_ok=True)
    for key, value in data.items():
        (WEBHOOK_CERT_DIR / key).write_bytes(base64.b64decode(value))
    return True


def contender_version(name: str) -> str:
    from envtest.peers import PEERS

    if name == "jobgate":
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False
        )
        return commit.stdout.strip() or "(no git)"
    return PEERS[name].version


def run_contender(name: str, jobs: int, workers: int, timeout: float, qps: float | None = None) -> PeerResult:
    from envtest.harness import ControlPlane
    from jobgate.kube.client import Kube

    contender = CONTENDERS[name]
    version = contender_version(name)  # of the code that runs, before anyone commits during the run
    with tempfile.TemporaryDirectory(prefix="jobgate-peer-bench-") as tmp:
        work = Path(tmp)
        policy = work / "audit-policy.yaml"
        policy.write_text(AUDIT_POLICY)
        audit_log = work / "audit.log"
        audit = ("--audit-policy-file", str(policy), "--audit-log-path", str(audit_log),
                 "--audit-log-format", "json", "--audit-log-maxsize", "0", "--audit-log-maxbackup", "0")  # fmt: skip
        with ControlPlane(extra_apiserver_args=audit) as plane:
            kube = Kube(str(plane.kubeconfig))
            install_contender(name, plane, kube)
            log = work / "controller.log"
            if name == "training-operator":
                shutil.rmtree(WEBHOOK_CERT_DIR, ignore_errors=True)  # an earlier run's, of another CA
            controller = start_contender(name, controller_kubeconfig(plane, work), workers, log, qps)
            started = time.monotonic()
            while not contender_ready(contender, log.read_text(errors="replace")):
                if name == "training-operator":
                    mount_webhook_secret(kube)
                if controller.poll() is not None or time.monotonic() - started > 120:
                    raise RuntimeError(f"{name} did not start:\n{log.read_text(errors='replace')[-3000:]}")
                time.sleep(0.1)
            submitted, pods_done, services_done, statuses_done = submit_and_wait(
                kube,
                contender.jobs_path,
                lambda i: tfjob(i, api_version=contender.api_version),
                jobs,
                timeout=timeout,
                statuses_right=lambda: sum(
                    contender.status_right(job) for job in kube.get(contender.jobs_path).get("items") or []
                ),
                gone=lambda: controller.poll() is not None,
            )
            peak_rss, cpu = process_usage(controller.pid) if controller.poll() is None else (float("nan"),) * 2
            load = os.getloadavg()
            stop(controller)
            time.sleep(1)  # the watches it held end now: let the apiserver log them
            exit_requests = exit_counts(log.read_text(errors="replace"))[0] if name == "jobgate" else {}
            if statuses_done is None:
                kept = Path(tempfile.gettempdir()) / f"jobgate-peer-bench-{name}-{jobs}.log"
                shutil.copyfile(log, kept)
                print(f"{name} did not converge in {timeout:.0f} s; its log: {kept}", file=sys.stderr)
                wrong = [j for j in kube.get(contender.jobs_path).get("items") or [] if not contender.status_right(j)]
                if wrong:
                    print(f"{len(wrong)} statuses not right; the first: {wrong[0].get('status')}", file=sys.stderr)
        with audit_log.open(errors="replace") as lines:
            requests = audit_requests(lines)
        with audit_log.open(errors="replace") as lines:
            breakdown = audit_breakdown(lines)
    children = max(pods_done, services_done) if pods_done and services_done else None
    return PeerResult(name, jobs, submitted, children, statuses_done, peak_rss, cpu, requests, load,
                      version, exit_requests, breakdown)  # fmt: skip


def peer_table(results: list[PeerResult]) -> None:
    nan = float("nan")
    print()
    print("| controller | jobs × 5 | children exist | statuses right | jobs/s | peak RSS MiB | CPU s "
          "| requests/job | load 1/5/15 at the end |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in results:
        load = " ".join(f"{x:.1f}" for x in r.load)
        print(
            f"| {r.name} {r.version} | {r.jobs} | {r.children_done or nan:.1f} s | {r.statuses_done or nan:.1f} s "
            f"| {r.jobs_per_second:.1f} | {r.peak_rss_mib:.0f} | {r.cpu_seconds:.1f} | {r.requests_per_job:.1f} "
            f"| {load} |"
        )


def report_peer(r: PeerResult) -> None:
    print(f"{r.name} {r.version}: {r.jobs} TFJobs x {REPLICAS} replicas, {os.cpu_count()} CPUs")
    print(f"  jobs submitted in            {r.submitted:6.1f} s")
    print(f"  every pod and service after  {r.children_done or float('nan'):6.1f} s")
    print(f"  every status right after     {r.statuses_done or float('nan'):6.1f} s")
    print(f"  peak RSS                     {r.peak_rss_mib:6.0f} MiB")
    print(f"  CPU                          {r.cpu_seconds:6.1f} s")
    print(f"  API requests (audit log)     {sum(r.requests.values())} ({r.requests_per_job:.1f} per job: {r.requests})")
    if r.breakdown:
        # The lists and watches of the start are a few in all, not per job: left out.
        shown = {k: n / r.jobs for k, n in r.breakdown.items() if n / r.jobs >= 0.01}
        print("  by verb and resource, per job: " + ", ".join(f"{k} {n:.2f}" for k, n in shown.items()))
    if r.exit_requests:
        print(f"  API requests (its exit log)  {sum(r.exit_requests.values())} ({r.exit_requests})")
    print("  load average (1/5/15 min)    {:.2f} {:.2f} {:.2f}".format(*r.load))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--sizes", help="comma-separated job counts, e.g. 500,1000,2000 (overrides --jobs)")
    parser.add_argument("--workers", type=int, default=16, help="controller workers")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per size")
    parser.add_argument("--restart", action="store_true", help="then start a second controller on the converged jobs")
    parser.add_argument(
        "--peers", action="store_true", help="jobgate, KubeDL and training-operator, each on its own plane"
    )
    parser.add_argument(
        "--only", help="with --peers: comma-separated contenders (default: " + ",".join(CONTENDERS) + ")"
    )
    parser.add_argument(
        "--peer-qps", type=float, help="with --peers: training-operator's --kube-api-qps (default: its own, 20)"
    )
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")] if args.sizes else [args.jobs]
    if args.peers:
        names = args.only.split(",") if args.only else list(CONTENDERS)
        peer_results = []
        for jobs in sizes:
            for name in names:
                result = run_contender(name, jobs, args.workers, args.timeout, args.peer_qps)
                report_peer(result)
                peer_results.append(result)
                sys.stdout.flush()
        peer_table(peer_results)
        return 0 if all(r.statuses_done is not None for r in peer_results) else 1
    results = []
    for jobs in sizes:
        result = run_size(jobs, args.workers, args.timeout, args.restart)
        report(result, args.workers)
        results.append(result)
        sys.stdout.flush()
    if len(results) > 1:
        table(results)
    return 0 if all(r.statuses_done is not None for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
