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

    python -m bench.controller_bench [--jobs 500 | --sizes 500,1000,2000] [--workers 16] [--restart]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NAMESPACE = "bench"
BASELINE_NAMESPACE = "bench-baseline"
REPLICAS = 5


def tfjob(index: int, namespace: str = NAMESPACE) -> dict:
    container = {"name": "tensorflow", "image": "tensorflow/tensorflow:2.16.1", "command": ["python", "train.py"]}
    return {
        "apiVersion": "training.kubedl.io/v1alpha1",
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
        started = time.monotonic()
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda i: kube.create(jobs_path, tfjob(i)), range(jobs)))
        submitted = time.monotonic() - started
        wanted = jobs * REPLICAS
        pods_done = services_done = statuses_done = None
        while time.monotonic() - started < timeout:
            elapsed = time.monotonic() - started
            if pods_done is None and count(kube, f"/api/v1/namespaces/{NAMESPACE}/pods") >= wanted:
                pods_done = elapsed
            if services_done is None and count(kube, f"/api/v1/namespaces/{NAMESPACE}/services") >= wanted:
                services_done = elapsed
            if pods_done and services_done and converged_jobs(kube) == jobs:
                statuses_done = time.monotonic() - started
                break
            time.sleep(0.5)
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--sizes", help="comma-separated job counts, e.g. 500,1000,2000 (overrides --jobs)")
    parser.add_argument("--workers", type=int, default=16, help="controller workers")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per size")
    parser.add_argument("--restart", action="store_true", help="then start a second controller on the converged jobs")
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")] if args.sizes else [args.jobs]
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
