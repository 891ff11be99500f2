"""What one webhook review costs in process, this tree against baselines: CPU instructions (a figure the
load on a shared machine cannot move) and best-of time, the builds interleaved.

    python -m bench.review_cost [--baseline REF]... [--no-compiled] [--compiled-tree DIR]
                                [--instructions-only | --time-only] [--reviews 1000] [--rounds 3]

Each build (this tree pure and compiled, each ``--baseline`` ref pure and compiled, built by
``bench/baseline.py``) answers the webhook bench's TFJob AdmissionReview (``bench/fixtures.py``, as
written: /validate defaults it in memory first, as in ``bench.webhook_bench``) with
``jobgate.webhook.admission.review_body``: parse, review, encode; no HTTP or TLS, which the server
adds to every build alike. Instructions: ``valgrind --tool=cachegrind`` counts a process answering
``--reviews`` reviews minus one answering none, both after 200 answers of warm-up. Time: the best of
5 runs of 2,000 reviews in one process, the best over ``--rounds`` processes per build, the builds'
processes interleaved so that a drift of the machine's speed meets them all.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.baseline import Build, add_baseline_flag, baselines, counterpart, working_tree
from bench.fixtures import tfjob_review_bytes

WEBHOOKS = ("mutate", "validate")

# Run by each build's own interpreter: it may import nothing of this tree (a baseline's own
# jobgate.webhook.admission is the one under test), so it is source, not a function of this module.
MEASURED = """
import gc, sys, time
from jobgate.webhook.admission import Webhook, review_body
path, webhook, mode, count = sys.argv[1], Webhook(sys.argv[2]), sys.argv[3], int(sys.argv[4])
body = open(path, "rb").read()
for _ in range(200):
    review_body(body, webhook)
if mode == "count":
    for _ in range(count):
        review_body(body, webhook)
else:
    best = float("inf")
    for _ in range(5):
        gc.collect()
        started = time.perf_counter()
        for _ in range(count):
            review_body(body, webhook)
        best = min(best, (time.perf_counter() - started) / count)
    print(f"BEST {best * 1e6:.3f}")
"""


def _run(build: Build, argv: list[str], *, valgrind: bool) -> subprocess.CompletedProcess[str]:
    prefix = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"] if valgrind else []
    command = [*prefix, str(build.python), "-c", MEASURED, *argv]
    done = subprocess.run(command, cwd=build.cwd, env=build.environment(), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{build.label}: the measured process failed:\n{done.stderr[-3000:]}")
    return done


def instructions(build: Build, body: Path, webhook: str, reviews: int) -> float:
    def count(n: int) -> int:
        done = _run(build, [str(body), webhook, "count", str(n)], valgrind=True)
        found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
        assert found is not None, done.stderr[-2000:]
        return int(found.group(1).replace(",", ""))

    count(0)  # bytecode caches written
    return (count(reviews) - count(0)) / reviews


def best_time(build: Build, body: Path, webhook: str) -> float:
    done = _run(build, [str(body), webhook, "time", "2000"], valgrind=False)
    return float(next(line for line in done.stdout.splitlines() if line.startswith("BEST ")).split()[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_baseline_flag(parser)
    parser.add_argument("--no-compiled", action="store_true", help="pure Python builds only")
    parser.add_argument(
        "--compiled-tree",
        type=Path,
        help="where the mypyc-compiled copy of this tree is kept: built there when absent, reused when there",
    )
    parser.add_argument("--reviews", type=int, default=1000, help="reviews counted per process (default 1000)")
    parser.add_argument("--rounds", type=int, default=3, help="timed processes per build (default 3)")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--instructions-only", action="store_true")
    what.add_argument("--time-only", action="store_true")
    args = parser.parse_args(argv)
    count_instructions = not args.time_only
    if count_instructions and shutil.which("valgrind") is None:
        print("valgrind is needed for instruction counts (apt-get install valgrind), or --time-only", file=sys.stderr)
        return 2

    compiled_tree = None
    with tempfile.TemporaryDirectory(prefix="jobgate-review-cost-") as temporary:
        directory = Path(temporary)
        if not args.no_compiled:
            from bench.webhook_bench import kept_or_compiled

            compiled_tree = kept_or_compiled(args.compiled_tree, directory)
        from build_support.native import copied_tree

        # A copy of the tree: edits made while the (slow) counts run do not reach them.
        pure_tree = copied_tree(directory / "pure")
        builds = working_tree(compiled_tree, pure_tree) + baselines(args.baseline, compiled=compiled_tree is not None)
        body = directory / "review.json"
        body.write_bytes(tfjob_review_bytes())

        counted: dict[tuple[str, str], float] = {}
        timed: dict[tuple[str, str], float] = {}
        for webhook in WEBHOOKS:
            if count_instructions:
                for build in builds:
                    counted[build.label, webhook] = instructions(build, body, webhook, args.reviews)
            if not args.instructions_only:
                for _ in range(args.rounds):
                    for build in builds:
                        best = best_time(build, body, webhook)
                        timed[build.label, webhook] = min(timed.get((build.label, webhook), best), best)

    refs = args.baseline
    header = f"{'build and webhook':34}"
    if count_instructions:
        header += f" {'instructions':>12}" + "".join(f" {'x ' + ref:>10}" for ref in refs)
    if timed:
        header += f" {'best us':>8}" + "".join(f" {'x ' + ref:>10}" for ref in refs)
    print(f"one TFJob review in process ({len(tfjob_review_bytes())} bytes), review_body; x REF: REF's cost / this")
    print(header)
    for build in builds:
        for webhook in WEBHOOKS:
            row = f"{build.label + ' /' + webhook:34}"
            for figures, width, fmt in ((counted, 12, ",.0f"), (timed, 8, ".1f")):
                if not figures:
                    continue
                value = figures[build.label, webhook]
                row += f" {value:{width}{fmt}}"
                for ref in refs:
                    other = counterpart(build, builds, ref)
                    row += f" {figures[other.label, webhook] / value:10.2f}" if other is not None else f" {'-':>10}"
            print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
