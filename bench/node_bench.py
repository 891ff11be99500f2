"""Real-node timings: node start, and a 4-replica TFJob from ``kubectl apply`` to Running and Succeeded.

Starts the control plane plus a real node (envtest.node) and jobgate (webhook + controller
as local processes, envtest.jobgate_local), then applies the same TFJob (PS x1, Worker x3,
every replica running envtest/jobimage/rendezvous.py) ``--runs`` times, one after another,
and reports per run: the time until all four replicas' containers have started, and the
time until the job is Succeeded. Root only (the node needs it).

    python -m bench.node_bench [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from envtest.jobgate_local import start_jobgate
from envtest.node import JOB_IMAGE, Node

NAMESPACE = "default"


def tfjob(name: str) -> dict:
    pod = {
        "spec": {
            "containers": [
                {
                    "name": "tensorflow",
                    "image": JOB_IMAGE,
                    "imagePullPolicy": "Never",
                    "command": ["python3", "/usr/local/bin/rendezvous.py", "tf"],
                }
            ],
            "terminationGracePeriodSeconds": 1,
        }
    }
    return {
        "apiVersion": "training.kubedl.io/v1alpha1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "cleanPodPolicy": "None",
            "tfReplicaSpecs": {"PS": {"replicas": 1, "template": pod}, "Worker": {"replicas": 3, "template": pod}},
        },
    }


def kubectl(node: Node, *args: str, input: str | None = None) -> str:
    return subprocess.run(node.kubectl_command(*args), input=input, capture_output=True, text=True, check=True).stdout


def started_replicas(node: Node, name: str) -> int:
    pods = json.loads(kubectl(node, "get", "pods", "-n", NAMESPACE, "-l", f"job-name={name}", "-o", "json"))["items"]
    states = [s.get("state", {}) for p in pods for s in p.get("status", {}).get("containerStatuses", [])]
    return sum(1 for s in states if "running" in s or "terminated" in s)


def succeeded(node: Node, name: str) -> bool:
    job = json.loads(kubectl(node, "get", "tfjob", "-n", NAMESPACE, name, "-o", "json"))
    return any(c["type"] == "Succeeded" and c["status"] == "True" for c in job.get("status", {}).get("conditions", []))


def one_run(node: Node, name: str) -> tuple[float, float]:
    applied = time.monotonic()
    kubectl(node, "apply", "-f", "-", input=json.dumps(tfjob(name)))
    running = None
    while True:
        now = time.monotonic()
        if running is None and started_replicas(node, name) == 4:
            running = now - applied
        if succeeded(node, name):
            return running if running is not None else now - applied, now - applied
        if now - applied > 300:
            raise SystemExit(f"{name} did not succeed within 300 s")
        time.sleep(0.1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    node = Node()
    started = time.monotonic()
    node.start()
    node_seconds = time.monotonic() - started
    processes = {}
    try:
        assert node.plane is not None and node.work_dir is not None
        processes = start_jobgate(node.plane, node.work_dir)
        time.sleep(2)  # the controller's informers sync
        results = [one_run(node, f"bench-{i}") for i in range(args.runs)]
    finally:
        for process in processes.values():
            process.terminate()
            process.wait(timeout=20)
        node.stop()
    print(f"node start (control plane + containerd + DNS + scheduler + kubelet, node Ready): {node_seconds:.1f} s")
    for i, (running, done) in enumerate(results):
        print(f"run {i}: all 4 replicas started {running:.2f} s, Succeeded {done:.2f} s after kubectl apply")
    print(
        f"median of {len(results)}: started {statistics.median(r for r, _ in results):.2f} s, "
        f"Succeeded {statistics.median(d for _, d in results):.2f} s"
    )
    if node.teardown_problems:
        print(f"teardown problems: {node.teardown_problems}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
