"""What the controller's caches cost per job, technique by technique (Python heap, tracemalloc).

Runs ``jobgate controller`` on a fresh control plane for N TFJobs x 5 replicas (the shape of
bench/controller_bench.py), reads back every pod, service and job as the apiserver serves them
(the objects a watch delivers: defaults, service account volume, managedFields), stops the
controller, and then measures in this process the heap that caching those objects costs under
each technique, each event parsed separately as the informer's watch parses it:

- ``whole``: the dict the apiserver sent (what informer.py cached before any transform);
- ``no managedFields``: controller-runtime's TransformStripManagedFields on every kind;
- ``slim``: controller/slim.py's transforms (jobs without managedFields, children reduced to
  what a pass reads), strings not interned;
- ``slim + interned``: the same with repeated strings interned (what the controller runs).

The figures are heap bytes of live objects, not RSS: they say what each technique removes from
the cache; bench/controller_bench.py says what the process's peak RSS does.

    python -m bench.cache_memory [--jobs 200]
"""

from __future__ import annotations

import argparse
import gc
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import orjson

from bench.controller_bench import NAMESPACE, REPLICAS, REPO, converged_jobs, tfjob

Sample = dict[str, list[bytes]]


def capture(jobs: int) -> Sample:
    """Every pod, service and job of ``jobs`` reconciled TFJobs, one JSON document per object."""
    from envtest.harness import ControlPlane
    from jobgate.kube.client import Kube

    with ControlPlane() as plane, tempfile.TemporaryDirectory(prefix="jobgate-cache-memory-") as tmp:
        kubectl = plane.kubectl_command
        subprocess.run(kubectl("apply", "-k", str(REPO / "manifests/base/crds")), check=True, capture_output=True)
        subprocess.run(kubectl("wait", "--for=condition=Established", "crd", "-l", "app.kubernetes.io/part-of=jobgate"),
                       check=True, capture_output=True)  # fmt: skip
        subprocess.run(kubectl("create", "namespace", NAMESPACE), check=True, capture_output=True)
        kube = Kube(str(plane.kubeconfig))
        log = Path(tmp) / "controller.log"
        controller = subprocess.Popen(
            [sys.executable, "-m", "jobgate", "controller", "--kubeconfig", str(plane.kubeconfig),
             "--namespace", NAMESPACE],
            cwd=REPO, stderr=log.open("wb"),
        )  # fmt: skip
        try:
            jobs_path = f"/apis/training.kubedl.io/v1alpha1/namespaces/{NAMESPACE}/tfjobs"
            for index in range(jobs):
                kube.create(jobs_path, tfjob(index))
            deadline = time.monotonic() + 300
            while converged_jobs(kube) < jobs and time.monotonic() < deadline:
                time.sleep(0.5)
            sample: Sample = {}
            for kind, path in (
                ("job", jobs_path),
                ("pod", f"/api/v1/namespaces/{NAMESPACE}/pods"),
                ("service", f"/api/v1/namespaces/{NAMESPACE}/services"),
            ):
                sample[kind] = [orjson.dumps(item) for item in kube.get(path).get("items") or []]
        finally:
            controller.terminate()
            controller.wait(timeout=30)
    return sample


def heap(sample: Sample, keep: dict[str, Callable[[dict[str, Any]], dict[str, Any]]]) -> int:
    """Bytes still allocated once every object is parsed and transformed (the raw parse freed)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    cache = {kind: [keep[kind](orjson.loads(raw)) for raw in documents] for kind, documents in sample.items()}
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del cache
    return after - before


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=200)
    args = parser.parse_args()
    from jobgate.controller import slim

    sample = capture(args.jobs)
    jobs = len(sample["job"])
    counts = {kind: len(documents) for kind, documents in sample.items()}
    wire = sum(len(raw) for documents in sample.values() for raw in documents)

    def whole(obj: dict[str, Any]) -> dict[str, Any]:
        return obj

    def no_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
        obj.get("metadata", {}).pop("managedFields", None)
        return obj

    slim_keep = {"job": slim.strip_managed_fields, "pod": slim.slim_pod, "service": slim.slim_service}
    # Interning shares strings across kinds (a job's uid in its children): per-kind figures alone miss that.
    variants: list[tuple[str, dict[str, Callable[[dict[str, Any]], dict[str, Any]]]]] = [
        ("whole", dict.fromkeys(sample, whole)),
        ("no managedFields", dict.fromkeys(sample, no_managed_fields)),
        ("slim", slim_keep),
        ("slim + interned", slim_keep),
    ]
    print(f"cache memory: {jobs} TFJobs x {REPLICAS} replicas ({counts}), {wire / jobs / 1024:.1f} KiB JSON per job")
    print("| technique | heap KiB per job | per job | per pod | per service | MiB per 1,000 jobs |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, keep in variants:
        with mock.patch.object(slim, "_intern", (lambda s: s) if name == "slim" else slim._intern):
            size = heap(sample, keep)
            per_kind = {kind: heap({kind: sample[kind]}, keep) / counts[kind] / 1024 for kind in sample}
        print(
            f"| {name} | {size / jobs / 1024:.1f} | {per_kind['job']:.1f} | {per_kind['pod']:.1f} "
            f"| {per_kind['service']:.1f} | {size / jobs * 1000 / 2**20:.1f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
