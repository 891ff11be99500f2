"""The largest reviews the apiserver can send, timed: ``python -m bench.big_review``.

For every family with a collection of replica specs (KubeDL TFJob's map, Volcano's tasks,
T9k's replicaSpecs, DIJob's tasks) it builds objects just under the apiserver's 3 MiB limit in
the worst shapes (``testkit/big_jobs.py``): 10,000 replica types (valid where the family allows
that many, and all invalid), 5,000 containers, 10,000 env entries, and an UPDATE carrying the old
object (a ~6 MB body). Each body is reviewed

- inline, with no server: the whole CPU cost of one review (parse, rules, encode) as a
  large-review worker runs it, for /mutate and /validate, in CPU time
  (``time.process_time``), with the time per MB of body;
- through ``jobgate webhook`` over HTTPS (unless ``--no-server``): the answer time (wall
  time) seen by a client, one review at a time, then ``--concurrent`` of the largest at once
  (those the server cannot answer within its budget get 429 at once).

The baseline, measured in the same run on the same body, is ``orjson.loads`` + ``orjson.dumps``
(decoding and re-encoding the body, the least any review costs); ratios are against it.
Times are printed, never asserted. ``--json`` prints the figures as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jobgate.review import engine_build, warm_up
from jobgate.webhook.admission import Webhook
from jobgate.webhook.outcome import _review_in_worker, review_outcome
from testkit.big_jobs import FAMILIES, Family, base_job, first_item, review, shapes

REPO = Path(__file__).resolve().parents[1]
MB = 1e6


def _best(run: Callable[[], Any], repeats: int) -> float:
    """CPU seconds of the cheapest of ``repeats`` runs.

    CPU time, not wall time: on a machine shared with other work the wall time of one review
    grows with the load, its CPU time hardly; the budget (1 s on one core) is CPU time.
    """
    times = []
    for _ in range(repeats):
        started = time.process_time()
        run()
        times.append(time.process_time() - started)
    return min(times)


def inline_figures(body: bytes, repeats: int) -> dict[str, Any]:
    baseline = _best(lambda: orjson.dumps(orjson.loads(body)), repeats)
    row: dict[str, Any] = {"body_mb": round(len(body) / MB, 2), "baseline_ms": round(baseline * 1000, 1)}
    for webhook in Webhook:
        outcome = review_outcome(body, webhook)
        # What a large-review worker runs (the cyclic collector paused), in this process.
        seconds = _best(lambda webhook=webhook: _review_in_worker(body, webhook.value), repeats)  # type: ignore[misc]
        verdict = outcome.labels[2] if outcome.status == 200 else f"HTTP {outcome.status}"
        row[webhook.value] = {
            "ms": round(seconds * 1000, 1),
            "ms_per_mb": round(seconds * 1000 / (len(body) / MB), 1),
            "x_baseline": round(seconds / baseline, 1),
            "verdict": verdict,
            "answer_kb": round(len(outcome.payload) / 1000, 1),
        }
    return row


async def server_figures(bodies: dict[str, bytes], concurrent: int, repeats: int) -> dict[str, Any]:
    import aiohttp

    from bench.common import free_port
    from bench.soak import wait_ready
    from jobgate.certs.authority import init_directory

    with tempfile.TemporaryDirectory(prefix="jobgate-big-") as directory:
        tls_dir = Path(directory) / "tls"
        init_directory(tls_dir, ["localhost"], ["127.0.0.1"])
        port = free_port()
        command = [sys.executable, "-m", "jobgate", "webhook", "--tls-dir", str(tls_dir)]
        command += ["--host", "127.0.0.1", "--port", str(port)]
        process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"https://127.0.0.1:{port}"
        context = ssl.create_default_context(cafile=str(tls_dir / "ca.crt"))
        results: dict[str, Any] = {}
        try:
            connector = aiohttp.TCPConnector(ssl=context, limit=concurrent + 2)
            async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as session:
                await wait_ready(session, url)

                async def post(body: bytes) -> tuple[float, int]:
                    started = time.perf_counter()
                    async with session.post(
                        f"{url}/validate", data=body, headers={"Content-Type": "application/json"}
                    ) as response:
                        await response.read()
                        return time.perf_counter() - started, response.status

                for name, body in bodies.items():
                    times = [await post(body) for _ in range(repeats)]
                    results[name] = {
                        "ms": round(min(t for t, _ in times) * 1000, 1),
                        "status": sorted({s for _, s in times}),
                    }
                largest = max(bodies.values(), key=len)
                together = await asyncio.gather(*(post(largest) for _ in range(concurrent)))
                answered = sorted(t for t, s in together if s == 200)
                results[f"{concurrent} x largest at once"] = {
                    "ms_first": round(answered[0] * 1000, 1) if answered else None,
                    "ms_last": round(answered[-1] * 1000, 1) if answered else None,
                    "statuses": sorted(s for _, s in together),
                }
        finally:
            process.terminate()
            process.wait(30)
    return results


def scaling(families: list[Family], repeats: int) -> dict[str, dict[int, float]]:
    """/validate CPU ms per 1,000 replica types at 2,500, 5,000 and 10,000 (all invalid, unpadded):
    flat when the cost is linear in the count."""
    result: dict[str, dict[int, float]] = {}
    for family in families:
        base = base_job(family)
        first = first_item(base, family)
        row: dict[int, float] = {}
        for count in (2_500, 5_000, 10_000):
            job = copy.deepcopy(base)
            items = [family.item(first, index) for index in range(count)]
            for _, item in items:
                family.breaks(item)
            job["spec"][family.collection] = dict(items) if family.is_map else [item for _, item in items]
            body = review(job)
            seconds = _best(lambda body=body: _review_in_worker(body, "validate"), repeats)  # type: ignore[misc]
            row[count] = round(seconds * 1000 / (count / 1000), 1)
        result[family.label] = row
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure; the fastest is kept")
    parser.add_argument("--family", action="append", help="only these families (label prefix, e.g. volcano)")
    parser.add_argument("--no-server", action="store_true", help="inline figures only")
    parser.add_argument("--concurrent", type=int, default=4, help="largest reviews sent at once to the server")
    parser.add_argument("--cpu", type=int, default=None, help="pin this process (inline figures) to one CPU")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    warm_up()
    families = [f for f in FAMILIES if not args.family or any(f.label.startswith(p) for p in args.family)]
    report: dict[str, Any] = {"engine": engine_build(), "inline": {}, "server": {}}
    all_bodies: dict[str, bytes] = {}
    for family in families:
        for shape, body in shapes(family).items():
            name = f"{family.label}: {shape}"
            all_bodies[name] = body
            report["inline"][name] = row = inline_figures(body, args.repeats)
            if not args.json:
                print(
                    f"{name:<48} {row['body_mb']:>5.2f} MB  baseline {row['baseline_ms']:>6.1f} ms"
                    + "".join(
                        f"  {w.value} {row[w.value]['ms']:>6.1f} ms ({row[w.value]['ms_per_mb']:>5.1f} ms/MB,"
                        f" {row[w.value]['x_baseline']:>4.1f}x, {row[w.value]['verdict']},"
                        f" {row[w.value]['answer_kb']:.0f} kB)"
                        for w in Webhook
                    ),
                    flush=True,
                )
    report["scaling_ms_per_1000_types"] = scale = scaling(families, args.repeats)
    if not args.json:
        print("/validate CPU ms per 1,000 invalid replica types, at 2,500 / 5,000 / 10,000 (flat = linear):")
        for label, row in scale.items():
            print(f"  {label:<16} " + " / ".join(f"{ms:.1f}" for ms in row.values()))
    if not args.no_server:
        report["server"] = asyncio.run(server_figures(all_bodies, args.concurrent, args.repeats))
        if not args.json:
            print(f"through the server (/validate, fastest of {args.repeats}):")
            for name, row in report["server"].items():
                print(f"  {name:<48} {row}")
    worst = max(
        (row[w.value]["ms"] for row in report["inline"].values() for w in Webhook),
        default=0.0,
    )
    report["worst_inline_ms"] = worst
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"engine: {report['engine']}; worst inline review: {worst:.0f} ms")
        medians = [row["validate"]["ms_per_mb"] for row in report["inline"].values()]
        if medians:
            print(f"median /validate cost: {statistics.median(medians):.0f} ms per MB of body")
    return 0


if __name__ == "__main__":
    sys.exit(main())
