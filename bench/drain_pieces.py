"""What each piece of a clean webhook drain is worth: failed admissions, counted by the client,
through a rollout restart or a node drain, with every piece and with one piece taken away, in one run.

    python -m bench.drain_pieces [--repeat 1] [--only NAME ...]

Starts the in-cluster test node (root, as ``python -m envtest up --node --in-cluster --deploy``),
deploys jobgate from its image with ``manifests/overlays/self-signed``, and for each variant
reconfigures the ``jobgate`` Deployment (or its PodDisruptionBudget), waits until it has settled,
then runs the admission load of the in-cluster suite (``envtest.admission_load``: 25 requests/s,
dry runs and creates, valid and invalid, every answer checked) around one event:

- ``rollout``: ``kubectl rollout restart deployment/jobgate``, waited for;
- ``drain``: every webhook pod evicted at once through the Eviction API, each eviction retried
  every second while the budget refuses it (what ``kubectl drain`` does for a node holding them).

The pieces: the in-process shutdown delay (the webhook keeps serving for 5 s after SIGTERM, as a
preStop sleep would, while the endpoint is withdrawn), readiness false from SIGTERM,
``Connection: close`` on answers while draining, ``maxUnavailable: 0`` / ``maxSurge: 1``, and the
PodDisruptionBudget. The first variant is the shipped configuration: the baseline of the table.
"""

from __future__ import annotations

import argparse
import copy
import json
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from envtest.admission_load import NAMESPACE, Load, failures, summary
from envtest.node import Node

SYSTEM = "jobgate-system"
SHIPPED = "as shipped (every piece)"


@dataclass(frozen=True)
class Variant:
    name: str
    event: str = "rollout"  # or "drain"
    args_without: tuple[str, ...] = ()  # argument prefixes taken away
    args_with: tuple[str, ...] = ()
    strategy: dict[str, Any] | None = None
    replicas: int | None = None
    pdb: bool = True


VARIANTS = (
    Variant(SHIPPED),
    Variant(
        "no shutdown delay (no preStop wait)", args_without=("--shutdown-delay",), args_with=("--shutdown-delay=0",)
    ),
    Variant("readiness stays true while draining", args_with=("--drain-omit=readiness",)),
    Variant("no Connection: close while draining", args_with=("--drain-omit=connection-close",)),
    Variant(
        "none of the three (exits its listener at SIGTERM, ready, keep-alive)",
        args_without=("--shutdown-delay",),
        args_with=("--shutdown-delay=0", "--drain-omit=readiness", "--drain-omit=connection-close"),
    ),
    Variant("maxUnavailable 1, maxSurge 0", strategy={"maxUnavailable": 1, "maxSurge": 0}),
    Variant("one replica, maxUnavailable 0, maxSurge 1", replicas=1),
    Variant("one replica, maxUnavailable 1, maxSurge 0", replicas=1, strategy={"maxUnavailable": 1, "maxSurge": 0}),
    Variant("node drain, with the PodDisruptionBudget", event="drain"),
    Variant("node drain, no PodDisruptionBudget", event="drain", pdb=False),
)


@dataclass
class Outcome:
    variant: Variant
    requests: int = 0
    failed: int = 0
    rate: float = 0.0
    window: float = 0.0  # from the first failure to the last
    kinds: list[str] = field(default_factory=list)


class Bench:
    def __init__(self, node: Node) -> None:
        self.node = node
        self.deployment = self.get("deployment", "jobgate", "-n", SYSTEM)
        self.pdb = self.get("pdb", "jobgate", "-n", SYSTEM)

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            self.node.kubectl_command(*args), input=input, capture_output=True, text=True, timeout=300, check=False
        )
        if check and result.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {result.stderr.strip()}")
        return result

    def get(self, *args: str) -> dict:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def webhook_pods(self) -> list[dict]:
        pods = self.get("pods", "-n", SYSTEM, "-l", "app.kubernetes.io/name=jobgate")["items"]
        return [p for p in pods if not p["metadata"].get("deletionTimestamp")]

    def settled(self, replicas: int) -> bool:
        pods = self.get("pods", "-n", SYSTEM, "-l", "app.kubernetes.io/name=jobgate")["items"]
        ready = [
            p
            for p in pods
            if not p["metadata"].get("deletionTimestamp")
            and any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))
        ]
        return len(pods) == replicas and len(ready) == replicas

    def wait_settled(self, replicas: int, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while not self.settled(replicas):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the webhook Deployment did not settle at {replicas} ready pod(s)")
            time.sleep(0.5)

    def configure(self, variant: Variant) -> int:
        """The shipped Deployment and budget with the variant's changes; returns the replica count."""
        shipped = self.deployment["spec"]
        container = shipped["template"]["spec"]["containers"][0]
        args = [a for a in container["args"] if not a.startswith(variant.args_without)]
        strategy = copy.deepcopy(shipped["strategy"])
        strategy["rollingUpdate"] = variant.strategy or shipped["strategy"]["rollingUpdate"]
        replicas = variant.replicas or shipped["replicas"]
        patch = [
            {"op": "replace", "path": "/spec/template/spec/containers/0/args", "value": [*args, *variant.args_with]},
            {"op": "replace", "path": "/spec/strategy", "value": strategy},
            {"op": "replace", "path": "/spec/replicas", "value": replicas},
        ]
        self.kubectl("patch", "deployment", "jobgate", "-n", SYSTEM, "--type=json", "-p", json.dumps(patch))
        self.kubectl("rollout", "status", "deployment/jobgate", "-n", SYSTEM, "--timeout=180s")
        has_pdb = self.kubectl("get", "pdb", "jobgate", "-n", SYSTEM, check=False).returncode == 0
        if variant.pdb and not has_pdb:
            budget = {k: self.pdb[k] for k in ("apiVersion", "kind", "spec")}
            budget["metadata"] = {k: self.pdb["metadata"][k] for k in ("name", "namespace", "labels")}
            self.kubectl("create", "-f", "-", input=json.dumps(budget))
        elif not variant.pdb and has_pdb:
            self.kubectl("delete", "pdb", "jobgate", "-n", SYSTEM)
        self.wait_settled(replicas)
        time.sleep(5)  # the endpoints' last updates
        return replicas

    def rollout(self) -> None:
        self.kubectl("rollout", "restart", "deployment/jobgate", "-n", SYSTEM)
        self.kubectl("rollout", "status", "deployment/jobgate", "-n", SYSTEM, "--timeout=180s")

    def drain(self) -> None:
        threads = [threading.Thread(target=self._evict, args=(p["metadata"]["name"],)) for p in self.webhook_pods()]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def _evict(self, pod: str) -> None:
        eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": SYSTEM}}
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            result = self.kubectl(
                "create", "--raw", f"/api/v1/namespaces/{SYSTEM}/pods/{pod}/eviction", "-f", "-",
                input=json.dumps(eviction), check=False,
            )  # fmt: skip
            if result.returncode == 0 or "NotFound" in result.stderr:
                return
            time.sleep(1)  # refused by the budget: kubectl drain retries too
        raise RuntimeError(f"{pod} could not be evicted within 180 s")

    def measure(self, variant: Variant, run: str) -> Outcome:
        replicas = self.configure(variant)
        load = Load(str(self.node.kubeconfig), run).start()
        time.sleep(3)
        (self.rollout if variant.event == "rollout" else self.drain)()
        self.wait_settled(replicas)
        time.sleep(12)  # the replaced pods' drain and the endpoints' last updates
        answers = load.finish()
        failed = failures(answers)
        outcome = Outcome(variant, len(answers), len(failed), load.rate)
        if failed:
            outcome.window = failed[-1][3] - failed[0][3]
            outcome.kinds = sorted({f"{a[1]}: {a[2][:90]}" for a in failed})[:3]
        print(f"  {variant.name}: {outcome.failed} of {outcome.requests} failed ({summary(answers)})", flush=True)
        return outcome


def table(outcomes: list[Outcome]) -> str:
    baseline = [o for o in outcomes if o.variant.name == SHIPPED]
    base_failed = sum(o.failed for o in baseline)
    lines = [
        f"baseline (as shipped): {base_failed} failed of {sum(o.requests for o in baseline)} requests",
        "| variant | event | requests | failed admissions | failed % | failing for | × baseline failures |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for o in outcomes:
        ratio = "—" if base_failed == 0 else f"{o.failed / base_failed:.1f}×"
        share = 100 * o.failed / o.requests if o.requests else 0.0
        lines.append(f"| {o.variant.name} | {o.variant.event} | {o.requests} | {o.failed} | {share:.1f} % "
                     f"| {o.window:.1f} s | {ratio} |")  # fmt: skip
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.drain_pieces", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=1, help="rounds of every variant (default 1)")
    parser.add_argument("--only", action="append", default=[], metavar="TEXT", help="variants whose name has TEXT")
    args = parser.parse_args()
    variants = [v for v in VARIANTS if not args.only or v.name == SHIPPED or any(t in v.name for t in args.only)]
    from envtest.deploy import deploy

    node = Node(in_cluster=True)
    node.start()
    outcomes: list[Outcome] = []
    try:
        deploy(node, log=lambda text: print(text, file=sys.stderr))
        bench = Bench(node)
        bench.kubectl("create", "namespace", NAMESPACE)
        for round_ in range(args.repeat):
            for index, variant in enumerate(variants):
                outcomes.append(bench.measure(variant, f"r{round_}v{index}"))
        for outcome in outcomes:
            for kind in outcome.kinds:
                print(f"{outcome.variant.name}: {kind}")
        print(table(outcomes))
    finally:
        node.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
