"""The largest reviews the apiserver can send, timed: ``python -m bench.big_review``.

For every family with a collection of replica specs (KubeDL TFJob's map, Volcano's tasks,
T9k's replicaSpecs, DIJob's tasks) it builds objects just under the apiserver's 3 MiB limit in
the worst shapes: 10,000 replica types (valid where the family allows that many, and all
invalid), 5,000 containers, 10,000 env entries, and an UPDATE carrying the old object (a
~6 MB body). Each body is reviewed

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from ruamel.yaml import YAML

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jobgate.engine.review import engine_build, warm_up
from jobgate.webhook.admission import Webhook
from jobgate.webhook.outcome import _review_in_worker, review_outcome

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "valid"
OBJECT_BYTES = 3 * 1024 * 1024 - 64 * 1024  # just under the apiserver's 3 MiB request limit, with room for metadata
MB = 1e6

Job = dict[str, Any]


def _load(name: str) -> Job:
    loaded: Job = json.loads(json.dumps(YAML(typ="safe").load((EXAMPLES / name).read_text())))
    return loaded


@dataclass(frozen=True)
class Family:
    """Where a family keeps its replica specs, and how to make the n-th of 10,000."""

    label: str
    example: str
    collection: str  # key under spec
    is_map: bool
    item: Callable[[Job, int], tuple[str, Job]]  # (map key or "", replica spec) from the first one
    valid_types: bool  # can 10,000 replica types be valid at all?
    breaks: Callable[[Job], None]  # makes one replica spec invalid


def _first(job: Job, family: Family) -> Job:
    collection = job["spec"][family.collection]
    first: Job = copy.deepcopy(next(iter(collection.values())) if family.is_map else collection[0])
    # Only what a container needs: the padding, not the example's own extras, sizes the object.
    containers = first["template"]["spec"]["containers"]
    containers[0] = {k: containers[0][k] for k in ("name", "image", "command") if k in containers[0]}
    del containers[1:]
    return first


def _kubedl_item(first: Job, index: int) -> tuple[str, Job]:
    return f"Worker{index}", copy.deepcopy(first)


def _named_item(key: str, prefix_key: str | None = None) -> Callable[[Job, int], tuple[str, Job]]:
    def make(first: Job, index: int) -> tuple[str, Job]:
        item = copy.deepcopy(first)
        item[key] = f"t{index}"
        if prefix_key is not None:
            item[prefix_key] = "none"
        for dropped in ("dependsOn", "minAvailable"):
            item.pop(dropped, None)
        return "", item

    return make


def _negative_replicas(item: Job) -> None:
    item["replicas"] = -1


def _bad_cpu(item: Job) -> None:
    container = item["template"]["spec"]["containers"][0]
    container["resources"] = {"limits": {"cpu": "lots"}}
    item["replicas"] = -1


FAMILIES = (
    Family("kubedl TFJob", "tfjob-mnist.yaml", "tfReplicaSpecs", True, _kubedl_item, False, _negative_replicas),
    Family("volcano Job", "volcano-pytorch.yaml", "tasks", False, _named_item("name"), True, _negative_replicas),
    Family("t9k GenericJob", "t9k-genericjob-ps.yaml", "replicaSpecs", False, _named_item("type"), True, _bad_cpu),
    Family("DIJob", "dijob-gobigger.yaml", "tasks", False, _named_item("name", "type"), True, _bad_cpu),
)


def _padded(make: Callable[[int], Job], count: int) -> Job:
    """The job made with items padded (a long image name) so that the object is just under the limit."""
    bare = make(0)
    room = OBJECT_BYTES - len(orjson.dumps(bare))
    return make(max(0, room // count))


def _base(family: Family) -> Job:
    job = _load(family.example)
    job["spec"].pop("plugins", None)  # Volcano's plugins name tasks that the shapes below replace
    return job


def types_job(family: Family, count: int = 10_000, *, broken: bool = False) -> Job:
    base = _base(family)
    first = _first(base, family)

    def make(pad: int) -> Job:
        job = copy.deepcopy(base)
        items: list[tuple[str, Job]] = []
        for index in range(count):
            key, item = family.item(first, index)
            item["template"]["spec"]["containers"][0]["image"] = "registry.example.com/" + "x" * pad
            if broken:
                family.breaks(item)
            items.append((key, item))
        job["spec"][family.collection] = dict(items) if family.is_map else [item for _, item in items]
        return job

    return _padded(make, count)


def _one_replica_job(family: Family, shape: Callable[[Job, int], None], count: int) -> Job:
    base = _base(family)

    def make(pad: int) -> Job:
        job = copy.deepcopy(base)
        first = _first(base, family)
        shape(first["template"]["spec"], pad)
        if family.is_map:
            job["spec"][family.collection] = {next(iter(base["spec"][family.collection])): first}
        else:
            job["spec"][family.collection] = [first]
        return job

    return _padded(make, count)


def containers_job(family: Family, count: int = 5_000) -> Job:
    def shape(pod: Job, pad: int) -> None:
        first = pod["containers"][0]
        pod["containers"] = [first] + [
            {"name": f"c{index}", "image": "registry.example.com/" + "x" * pad} for index in range(count - 1)
        ]

    return _one_replica_job(family, shape, count)


def env_job(family: Family, count: int = 10_000) -> Job:
    def shape(pod: Job, pad: int) -> None:
        pod["containers"][0]["env"] = [{"name": f"E{index}", "value": "v" * pad} for index in range(count)]

    return _one_replica_job(family, shape, count)


def review(job: Job, old: Job | None = None) -> bytes:
    group, version = job["apiVersion"].split("/")
    kind = job["kind"]
    resource = {"group": group, "version": version, "resource": kind.lower() + "s"}
    request = {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": resource,
        "name": job["metadata"]["name"],
        "namespace": job["metadata"].get("namespace", "default"),
        "operation": "UPDATE" if old is not None else "CREATE",
        "userInfo": {"username": "alice@example.com"},
        "object": job,
        "oldObject": old,
        "dryRun": False,
    }
    return orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})


def shapes(family: Family) -> dict[str, bytes]:
    """Bodies by shape name, for one family."""
    types = types_job(family)
    changed = copy.deepcopy(types)
    changed["metadata"].setdefault("labels", {})["revision"] = "2"
    first_item = next(iter(changed["spec"][family.collection].values())) if family.is_map else None
    if first_item is None:
        first_item = changed["spec"][family.collection][0]
    first_item["replicas"] = 3
    return {
        "types-10k" + ("" if family.valid_types else " (names refused)"): review(types),
        "types-10k all invalid": review(types_job(family, broken=True)),
        "containers-5k": review(containers_job(family)),
        "env-10k": review(env_job(family)),
        "update types-10k + old": review(changed, old=types),
    }


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

    from bench.soak import free_port, wait_ready
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
        base = _base(family)
        first = _first(base, family)
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
