"""Fuzz the offline command (``jobgate validate`` / ``review`` on a file): ``python -m bench.fuzz_offline``.

Every input is a file's bytes, mutated from the manifests in ``examples/`` (see
``testkit/fuzzing/offline_mutator.py``: text, structure and byte mutations), and goes through what
the command does with a file: UTF-8 decoding, document splitting, loading, mutate-then-validate,
the text report, and ``jobgate review``'s parsing for inputs that look like JSON or a review.
It must end in a defined way (a result per document, one-line reasons, exit 0/1/2, printable
output, no internal-error review); any exception or oracle failure is a finding, saved with its
traceback under ``--findings DIR`` to become a regression test.

Engines: ``random`` (default: a seeded loop, reproducible input by input; ``--workers N`` runs
seeds ``seed..seed+N-1`` in parallel) or ``atheris`` (coverage-guided libFuzzer with the same
mutator, if ``pip install atheris``). ``--differential`` checks instead that the loader's two
YAML readers (libyaml where it agrees with ruamel, ruamel otherwise) read every input alike.
"""

from __future__ import annotations

import collections
import hashlib
import random
import sys
import time
import traceback
from pathlib import Path

# Runs as a script too (python bench/fuzz_offline.py): the repository root must be importable.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.fuzzrun import fuzz_arguments, report, run_workers
from testkit.fuzzing.offline_mutator import check, damage, example_texts, inputs, mutate_text


def _save(findings: Path, raw: bytes, error: BaseException) -> None:
    findings.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(raw).hexdigest()[:16]
    (findings / f"{name}.yaml").write_bytes(raw)
    (findings / f"{name}.txt").write_text("".join(traceback.format_exception(error)))


def check_differential(raw: bytes) -> str:
    """libyaml's reading against ruamel's (``jobgate/offline/exact_yaml.py`` uses libyaml only where they agree)."""
    from testkit.fuzzing.loader_differential import differences
    from testkit.fuzzing.review_mutator import Finding

    difference = differences(raw.decode("utf-8", "replace"))
    if difference is not None:
        raise Finding(difference)
    return "same reading"


def run_random(seed: int, count: int, seconds: float, findings: Path, differential: bool = False) -> dict[str, int]:
    import gc
    import warnings

    # ruamel warns on stderr about reused anchors, which the mutator makes by the thousand.
    warnings.simplefilter("ignore")
    # As the command does: parsed documents hold no cycles, the cyclic collector only costs time.
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)
    outcomes: collections.Counter[str] = collections.Counter()
    cpu_started = time.process_time()
    started = time.monotonic()
    deadline = started + seconds
    for index, raw in enumerate(inputs(seed, count)):
        if index % 256 == 0 and time.monotonic() > deadline:
            break
        if index and index % 2_000 == 0:  # progress survives a worker that is killed (OOM, ^C)
            found = sum(v for k, v in outcomes.items() if k.startswith("FINDING"))
            rate = index / (time.monotonic() - started)
            print(f"seed {seed}: {index:,} inputs ({rate:,.0f}/s), {found} findings", file=sys.stderr, flush=True)
        outcomes["inputs"] += 1
        try:
            outcomes[check_differential(raw) if differential else check(raw)] += 1
        except Exception as exc:  # every exception is a finding, not only the oracle's
            outcomes[f"FINDING {type(exc).__name__}"] += 1
            _save(findings, raw, exc)
    outcomes["cpu_ms"] = round((time.process_time() - cpu_started) * 1000)
    return dict(outcomes)


def _worker(args: tuple[int, int, float, str, bool]) -> dict[str, int]:
    seed, count, seconds, findings, differential = args
    return run_random(seed, count, seconds, Path(findings), differential)


def run_atheris(count: int, seconds: float, findings: Path) -> None:  # pragma: no cover - optional engine
    import atheris  # type: ignore[import-not-found]

    texts = example_texts()

    def mutator(data: bytes, max_size: int, seed: int) -> bytes:
        rng = random.Random(seed)
        try:
            text = data.decode("utf-8") if data else rng.choice(texts)
        except UnicodeDecodeError:
            text = rng.choice(texts)
        raw = damage(mutate_text(text, texts, rng).encode("utf-8", "surrogatepass"), rng)
        return raw[: max(max_size, 1)]

    def one_input(data: bytes) -> None:
        try:
            check(data)
        except Exception as exc:
            _save(findings, data, exc)
            raise

    argv = [sys.argv[0], f"-runs={count}", f"-max_total_time={int(seconds)}", "-max_len=1048576"]
    atheris.Setup(argv, one_input, custom_mutator=mutator)
    atheris.Fuzz()


def main(argv: list[str] | None = None) -> int:
    parser = fuzz_arguments(__doc__.splitlines()[0], "fuzz-findings-offline")
    parser.add_argument(
        "--differential", action="store_true", help="compare the loader's libyaml and ruamel readings instead"
    )
    args = parser.parse_args(argv)
    started = time.monotonic()
    if args.engine == "atheris":
        run_atheris(args.count, args.seconds, args.findings)
        return 0
    total = run_workers(_worker, args, (args.differential,))
    return report("libyaml/ruamel differential" if args.differential else "offline fuzz", args, total, started)


if __name__ == "__main__":
    sys.exit(main())
