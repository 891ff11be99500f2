"""What the two fuzz benches share: their command line, their worker processes and their summary."""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def fuzz_arguments(description: str, findings: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--count", type=int, default=1_000_000, help="inputs in all (default 1,000,000)")
    parser.add_argument("--seconds", type=float, default=3600, help="stop after this long (default 3600)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=1, help="processes, each with its own seed")
    parser.add_argument("--engine", choices=["random", "atheris"], default="random")
    parser.add_argument("--findings", type=Path, default=Path(findings))
    return parser


def run_workers(
    worker: Callable[[Any], dict[str, int]], args: argparse.Namespace, extra: Sequence[Any] = ()
) -> collections.Counter[str]:
    """Each worker gets its own seed and an equal share of ``--count``; their counters are summed."""
    per_worker = -(-args.count // args.workers)
    jobs = [(args.seed + n, per_worker, args.seconds, str(args.findings), *extra) for n in range(args.workers)]
    if args.workers == 1:
        results = [worker(jobs[0])]
    else:
        # A worker that dies (e.g. killed by the OOM killer) raises here instead of hanging the run.
        with concurrent.futures.ProcessPoolExecutor(args.workers) as pool:
            results = list(pool.map(worker, jobs))
    total: collections.Counter[str] = collections.Counter()
    for result in results:
        total.update(result)
    return total


def report(what: str, args: argparse.Namespace, total: collections.Counter[str], started: float) -> int:
    """Prints the run's figures; exit status 1 when anything was found."""
    elapsed = time.monotonic() - started
    findings = sum(n for key, n in total.items() if key.startswith("FINDING"))
    seeds = f"{args.seed}..{args.seed + args.workers - 1}"
    print(f"{what}: engine random, seeds {seeds}, {args.workers} workers, load average {os.getloadavg()}")
    print(f"{total['inputs']:,} inputs in {elapsed:.0f} s ({total['inputs'] / elapsed:,.0f}/s), {findings} findings")
    # CPU seconds, not wall time, say how fast the harness is on a machine shared with other work.
    cpu = total.pop("cpu_ms", 0) / 1000
    print(f"  {cpu:,.0f} CPU seconds in the workers: {total['inputs'] / max(cpu, 0.001):,.0f} inputs per CPU second")
    for key in sorted(total):
        if key not in ("inputs", "cpu_ms"):
            print(f"  {key}: {total[key]:,}")
    if findings:
        print(f"findings written to {args.findings}/")
    return 1 if findings else 0
