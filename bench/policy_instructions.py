"""What platform policy costs one webhook review, counted in CPU instructions: a figure the load on the
machine cannot move, beside ``bench.policy_cost``'s reviews/s (which swing by several hundredths
between two runs of one tree on a shared machine).

    python -m bench.policy_instructions [--compiled-tree DIR] [--reviews 1000]

For each engine (pure Python; the mypyc-compiled copy of this tree when ``--compiled-tree`` names
one) and each webhook, ``valgrind --tool=cachegrind`` counts the instructions of a process that
answers the bench's TFJob AdmissionReview ``--reviews`` times in process (``review_body``: parse,
review, encode; no HTTP or TLS, which the server adds to both sides alike), minus the same process
answering none, without policies, with enforcement on and no policy (an empty ``PolicySnapshot``:
what having enforcement on costs by itself, as in a namespace no policy applies to), and with
``bench.policy_cost``'s 50 (10 apply to the job) in a ``PolicySnapshot``. /mutate gets the job as
written; /validate the job as that engine's /mutate left it (with policies, their defaults too), as
the apiserver sends it. Each process answers 200 reviews before it counts (its plans and memos
made), with the collector off and bytecode caches written. Each ratio is instructions without
policies over instructions with enforcement on: the reviews/s one CPU would serve with it, as a
share of those without.
"""

from __future__ import annotations

import argparse
import base64
import gc
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WARM_UP = 200
WEBHOOKS = ("mutate", "validate")


def answer(mode: str, webhook_name: str, reviews: int) -> None:
    """The measured process: ``reviews`` answers of one webhook, after the warm-up."""
    from bench.fixtures import tfjob_review_bytes
    from jobgate.engine.jsonpatch import apply_patch
    from jobgate.engine.views import ClusterViews
    from jobgate.policy.snapshot import PolicySnapshot
    from jobgate.webhook.admission import Webhook, review_body
    from testkit.policy_set import namespaces, policy_set

    views = None
    labels = {ns["metadata"]["name"]: ns["metadata"].get("labels", {}) for ns in namespaces()}
    if mode == "with":
        views = ClusterViews(policies=PolicySnapshot(policy_set(50, 10), labels))
    elif mode == "empty":
        views = ClusterViews(policies=PolicySnapshot([], labels))
    body = tfjob_review_bytes()
    webhook = Webhook.MUTATE if webhook_name == "mutate" else Webhook.VALIDATE
    if webhook is Webhook.VALIDATE:
        mutated = json.loads(review_body(body, Webhook.MUTATE, views))["response"]
        review = json.loads(body)
        patch = json.loads(base64.b64decode(mutated["patch"])) if mutated.get("patch") else []
        review["request"]["object"] = apply_patch(review["request"]["object"], patch)
        body = json.dumps(review).encode()
    for _ in range(WARM_UP):
        review_body(body, webhook, views)
    gc.disable()
    for _ in range(reviews):
        review_body(body, webhook, views)


def instructions(tree: Path, mode: str, webhook_name: str, reviews: int) -> int:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(tree)
    command = [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=no",
        "--cachegrind-out-file=/dev/null",
        sys.executable,
        str(Path(__file__).resolve()),  # this file, whatever the tree (an older compiled copy lacks it)
        "--answer",
        mode,
        webhook_name,
        str(reviews),
    ]
    done = subprocess.run(command, check=False, cwd=tree, env=env, capture_output=True, text=True)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"the measured process failed ({tree}, {mode}, {webhook_name}):\n{done.stderr[-3000:]}")
    return int(found.group(1).replace(",", ""))


def per_review(tree: Path, mode: str, webhook_name: str, reviews: int) -> float:
    instructions(tree, mode, webhook_name, 0)  # bytecode caches written, so that neither count compiles
    return (instructions(tree, mode, webhook_name, reviews) - instructions(tree, mode, webhook_name, 0)) / reviews


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reviews", type=int, default=1000, help="reviews counted per process (default 1000)")
    parser.add_argument(
        "--compiled-tree", type=Path, help="a compiled copy of this tree (python -m build_support.native DIR)"
    )
    parser.add_argument("--answer", nargs=3, metavar=("MODE", "WEBHOOK", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.answer:
        mode, webhook_name, count = args.answer
        answer(mode, webhook_name, int(count))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is needed (apt-get install valgrind)", file=sys.stderr)
        return 2
    if args.reviews < 1:
        parser.error("--reviews must be at least 1")
    trees = [("pure Python", REPO)]
    if args.compiled_tree is not None:
        if not (args.compiled_tree / "jobgate").is_dir():
            parser.error(f"--compiled-tree {args.compiled_tree}: no compiled tree there")
        trees.append(("compiled", args.compiled_tree))
    print(f"instructions per review in process, {args.reviews} reviews, 50 policies of which 10 apply to the job")
    print(f"  {'engine and webhook':28} {'without':>10} {'no policy':>10} {'ratio':>6} {'with 50':>10} {'ratio':>6}")
    for name, tree in trees:
        for webhook_name in WEBHOOKS:
            without = per_review(tree, "without", webhook_name, args.reviews)
            empty = per_review(tree, "empty", webhook_name, args.reviews)
            with_policies = per_review(tree, "with", webhook_name, args.reviews)
            print(
                f"  {name + ' /' + webhook_name:28} {without:10.0f} {empty:10.0f} {without / empty:6.3f}"
                f" {with_policies:10.0f} {without / with_policies:6.3f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
