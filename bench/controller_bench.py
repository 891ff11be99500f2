"""Controller throughput on the real control plane: N jobs x 5 replicas created at once.

Starts etcd + kube-apiserver + kube-controller-manager (envtest), installs the CRDs and runs
``jobgate controller`` as a separate process. Creates N TFJobs (PS x1, Worker x4) from 16
threads, then measures the time until every pod and service exists and every job's status
reports its five replicas; the controller's own API requests per job come from its exit log.

Baseline, measured first in the same run on the same apiserver: the very pods and services
the controller would create (built by the engine, without ownerReferences) POSTed straight
from 32 threads, the controller's own creation concurrency. The ratio says how close the
controller comes to the apiserver's own write throughput on this machine.

    python -m bench.controller_bench [--jobs 500] [--workers 16]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
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

    from controller.adapters import adapter_for, read_status
    from controller.engine import Observed, reconcile

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
    from controller.kube import KIND_RESOURCES

    objects = [obj for index in range(jobs) for obj in children_of(index)]
    started = time.monotonic()
    with ThreadPoolExecutor(32) as pool:
        list(pool.map(lambda o: kube.create(KIND_RESOURCES[o["kind"]].path(BASELINE_NAMESPACE), o), objects))
    return time.monotonic() - started


def count(kube, path: str) -> int:
    listing = kube.get(path, limit=10000)
    return len(listing.get("items") or [])


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--workers", type=int, default=16, help="controller workers")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()

    from controller.kube import Kube
    from envtest.harness import ControlPlane

    with ControlPlane() as plane, tempfile.TemporaryDirectory(prefix="jobgate-ctrl-bench-") as tmp:
        kubectl = plane.kubectl_command
        subprocess.run(kubectl("apply", "-k", str(REPO / "manifests/base/crds")), check=True, capture_output=True)
        subprocess.run(kubectl("wait", "--for=condition=Established", "crd", "-l", "app.kubernetes.io/part-of=jobgate"),
                       check=True, capture_output=True)  # fmt: skip
        for namespace in (NAMESPACE, BASELINE_NAMESPACE):
            subprocess.run(kubectl("create", "namespace", namespace), check=True, capture_output=True)
        kube = Kube(str(plane.kubeconfig))
        baseline = baseline_seconds(kube, args.jobs)
        log = Path(tmp) / "controller.log"
        controller = subprocess.Popen(
            [sys.executable, "-m", "webhook.cli", "controller", "--kubeconfig", str(plane.kubeconfig),
             "--namespace", NAMESPACE, "--workers", str(args.workers)],
            cwd=REPO, stderr=log.open("wb"),
        )  # fmt: skip
        while "reconciling with" not in log.read_text():
            time.sleep(0.1)
        jobs_path = f"/apis/training.kubedl.io/v1alpha1/namespaces/{NAMESPACE}/tfjobs"
        started = time.monotonic()
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda i: kube.create(jobs_path, tfjob(i)), range(args.jobs)))
        submitted = time.monotonic() - started
        wanted = args.jobs * REPLICAS
        pods_done = services_done = statuses_done = None
        while time.monotonic() - started < args.timeout:
            elapsed = time.monotonic() - started
            if pods_done is None and count(kube, f"/api/v1/namespaces/{NAMESPACE}/pods") >= wanted:
                pods_done = elapsed
            if services_done is None and count(kube, f"/api/v1/namespaces/{NAMESPACE}/services") >= wanted:
                services_done = elapsed
            if pods_done and services_done and converged_jobs(kube) == args.jobs:
                statuses_done = time.monotonic() - started
                break
            time.sleep(0.5)
        controller.terminate()
        controller.wait(timeout=30)
        text = log.read_text()
    requests = {verb.upper(): int(n) for verb, n in re.findall(r"requests_(\w+)=(\d+)", text)}
    reconciles = re.search(r"reconciles=(\d+)", text)
    total = sum(requests.values())
    print(f"controller benchmark: {args.jobs} TFJobs x {REPLICAS} replicas, {args.workers} workers, 2 CPUs")
    print(f"  baseline: the same {wanted} pods + {wanted} services POSTed directly in {baseline:6.1f} s")
    print(f"  jobs submitted in            {submitted:6.1f} s")
    print(f"  all {wanted} pods exist after  {pods_done or float('nan'):6.1f} s")
    print(f"  all {wanted} services after    {services_done or float('nan'):6.1f} s")
    print(f"  every status correct after   {statuses_done or float('nan'):6.1f} s")
    if statuses_done:
        print(f"  baseline / controller        {baseline / statuses_done:6.2f}x")
    if requests:
        per_job = {verb: round(n / args.jobs, 2) for verb, n in requests.items()}
        print(f"  controller API requests      {total} ({total / args.jobs:.1f} per job: {per_job})")
    if reconciles:
        passes = int(reconciles.group(1))
        print(f"  reconcile passes             {passes} ({passes / args.jobs:.1f} per job)")
    return 0 if statuses_done is not None else 1


if __name__ == "__main__":
    sys.exit(main())
