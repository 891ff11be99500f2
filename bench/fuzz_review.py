"""Fuzz the review handler (/mutate and /validate bodies): ``python -m bench.fuzz_review``.

Every input goes through ``review_body`` for both webhooks and must pass the oracle in
``testkit/fuzzing/review_mutator.py``: a one-line 400 (``BadReview``) or an AdmissionReview that is
not an internal error, /mutate always admitting. Inputs are structure- and type-aware mutations
of the manifests in ``examples/`` (plus truncation, invalid UTF-8, lone surrogates, huge
integers). Bounded in count and time; ``--workers`` runs seeds ``seed..seed+N-1`` in parallel.

Engines: ``random`` (default: a seeded loop, reproducible input by input) or ``atheris``
(coverage-guided libFuzzer with the same structural mutator, if ``pip install atheris``).
Findings are written to ``--findings DIR`` as the exact bodies, to become regression tests.
"""

from __future__ import annotations

import collections
import hashlib
import random
import sys
import time
import traceback
from pathlib import Path

# Runs as a script too (python bench/fuzz_review.py): the repository root must be importable.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.fuzzrun import fuzz_arguments, report, run_workers
from testkit.fuzzing.review_mutator import check_both, encode, inputs, mutate_review, seed_reviews


def _save(findings: Path, body: bytes, error: BaseException) -> None:
    findings.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(body).hexdigest()[:16]
    (findings / f"{name}.json").write_bytes(body)
    (findings / f"{name}.txt").write_text("".join(traceback.format_exception(error)))


def run_random(seed: int, count: int, seconds: float, findings: Path) -> dict[str, int]:
    outcomes: collections.Counter[str] = collections.Counter()
    cpu_started = time.process_time()
    deadline = time.monotonic() + seconds
    for index, body in enumerate(inputs(seed, count)):
        if index % 256 == 0 and time.monotonic() > deadline:
            break
        if index and index % 10_000 == 0:  # progress survives a worker that is killed (OOM, ^C)
            print(
                f"seed {seed}: {index:,} inputs, {sum(v for k, v in outcomes.items() if 'FINDING' in k)} findings",
                file=sys.stderr,
                flush=True,
            )
        try:
            mutate_outcome, validate_outcome = check_both(body)
            outcomes[f"mutate {mutate_outcome}"] += 1
            outcomes[f"validate {validate_outcome}"] += 1
            outcomes["inputs"] += 1
        except Exception as exc:  # every exception is a finding, not only the oracle's
            outcomes["inputs"] += 1
            outcomes[f"FINDING {type(exc).__name__}"] += 1
            _save(findings, body, exc)
    outcomes["cpu_ms"] = round((time.process_time() - cpu_started) * 1000)
    return dict(outcomes)


def _worker(args: tuple[int, int, float, str]) -> dict[str, int]:
    seed, count, seconds, findings = args
    return run_random(seed, count, seconds, Path(findings))


def run_atheris(count: int, seconds: float, findings: Path) -> None:  # pragma: no cover - optional engine
    import atheris  # type: ignore[import-not-found]
    import orjson

    seeds = seed_reviews()

    def mutator(data: bytes, max_size: int, seed: int) -> bytes:
        rng = random.Random(seed)
        try:
            review = orjson.loads(data)
            if not isinstance(review, dict) or not isinstance(review.get("request"), dict):
                raise ValueError
        except ValueError:
            review = rng.choice(seeds)
        try:
            return encode(mutate_review(review, rng), rng)[: max(max_size, 1)]
        except Exception:
            return encode(rng.choice(seeds), rng)

    def one_input(data: bytes) -> None:
        try:
            check_both(data)
        except Exception as exc:
            _save(findings, data, exc)
            raise

    argv = [sys.argv[0], f"-runs={count}", f"-max_total_time={int(seconds)}", "-max_len=4000000"]
    atheris.Setup(argv, one_input, custom_mutator=mutator)
    atheris.Fuzz()


def main() -> int:
    args = fuzz_arguments(__doc__.splitlines()[0], "fuzz-findings").parse_args()
    started = time.monotonic()
    if args.engine == "atheris":
        run_atheris(args.count, args.seconds, args.findings)
        return 0
    return report("review fuzz", args, run_workers(_worker, args), started)


if __name__ == "__main__":
    sys.exit(main())
