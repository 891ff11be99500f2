"""Where a webhook server with platform policy pays: without a cluster, with policy enforcement on
against a cluster that holds no policy, and with ``bench.policy_cost``'s 50 policies.

    python -m bench.policy_enforcement_cost [mutate|validate] [--tree DIR] [--rounds 3] [--duration 8]

Two control planes (etcd + kube-apiserver from ``envtest``'s cache, pinned to wrk's CPU) serve the
policy CRDs and the bench's namespaces, one of them the 50 policies too. Each round starts three
fresh ``jobgate webhook`` servers of ``--tree`` (this one, or a compiled copy from
``python -m build_support.native DIR``) on the servers' CPU and measures each with wrk; the medians
of their CPU µs per review are printed with their ratios to the server without a cluster. On
2026-11-27 (compiled ``/mutate``): 78.2 without a cluster, 81.9 with enforcement on and no policy,
82.3 with the 50 policies: most of the cost was enforcement being on, not the policies. After the
memo was compiled, a review no policy applies to stopped after the lookup and the cache's reads
lost their lock (``ce08a34``, 4 rounds): 88.6, 89.0 and 91.5 (``/validate``: 106.6, 105.5, 114.7).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

import yaml

from bench.common import free_port
from bench.fixtures import tfjob_review_bytes
from bench.policy_cost import as_mutated, policy_control_plane, wait_ready
from bench.webhook_bench import LUA, start_server, wrk
from jobgate.certs.authority import init_directory
from testkit.policy_set import namespaces, policy_set

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("webhook", nargs="?", choices=("mutate", "validate"), default="mutate")
    parser.add_argument("--tree", type=Path, default=REPO, help="the tree whose server is measured (default: this)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of fresh servers (default 3)")
    parser.add_argument("--duration", type=float, default=8.0, help="seconds per measurement (default 8)")
    args = parser.parse_args(argv)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    directory = Path(tempfile.mkdtemp(prefix="jobgate-enforcement-cost-"))
    init_directory(directory, ["localhost"], ["127.0.0.1"])
    (directory / "review.json").write_bytes(tfjob_review_bytes())
    (directory / "post.lua").write_text(LUA)
    env = {**os.environ, "JOBGATE_BENCH_SCRIPT": str(directory / "post.lua"), "PYTHONPATH": str(REPO)}
    namespace_text = yaml.safe_dump_all(namespaces())
    with_policies = policy_control_plane([namespace_text, yaml.safe_dump_all(policy_set(50, 10))])
    empty = policy_control_plane([namespace_text])
    servers = {
        "without a cluster": [],
        "enforcement on, no policy": ["--kubeconfig", str(empty.kubeconfig)],
        "with the 50 policies": ["--kubeconfig", str(with_policies.kubeconfig)],
    }
    cpu: dict[str, list[float]] = {name: [] for name in servers}
    try:
        for _ in range(args.rounds):
            for name, extra in servers.items():
                port = free_port()
                command = [sys.executable, "-m", "jobgate", "webhook", "--tls-dir", str(directory)]
                command += ["--host", "127.0.0.1", "--port", str(port), *extra]
                server = start_server(command, port, directory, "server.log", args.tree)
                try:
                    wait_ready(port, directory / "ca.crt")
                    body = directory / "review.json"
                    if args.webhook == "validate":
                        body = directory / "review-validate.json"
                        body.write_bytes(as_mutated(port, directory / "ca.crt", directory / "review.json"))
                    url = f"https://127.0.0.1:{port}/{args.webhook}"
                    run_env = {**env, "JOBGATE_BENCH_BODY": str(body)}
                    wrk(url, run_env, connections=32, seconds=2)  # warm up
                    run = wrk(url, run_env, connections=32, seconds=args.duration, server_pids=[server.pid])
                    cpu[name].append(run.server_cpu_s / run.requests * 1e6)
                finally:
                    server.terminate()
                    server.wait(timeout=20)
    finally:
        with_policies.stop()
        empty.stop()
    base = statistics.median(cpu["without a cluster"])
    print(f"/{args.webhook}, {args.tree}: CPU µs per review, medians of {args.rounds} rounds of fresh servers")
    for name, values in cpu.items():
        median = statistics.median(values)
        print(f"  {name:28} {median:7.1f}   x {base / median:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
