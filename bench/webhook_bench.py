"""Webhook throughput and latency: jobgate against the floor, measured in the same run.

The server under test runs pinned to CPU 0, wrk (with a Lua script) pinned to CPU 1, over
TLS keep-alive, sending a ~5 KB TFJob AdmissionReview (``bench/fixtures.py``). For each
server it reports the maximum reviews/s and p50/p99 latency at about 1,000 reviews/s; the
floor is a bare aiohttp TLS server answering a fixed AdmissionReview (``bench/floor_server.py``),
jobgate's own floor the same fixed answer through its admission fast path (``--fast-path``),
and the physical floor a Go ``net/http`` TLS server doing the same (``bench/gofloor``, built with
the machine's Go toolchain into ``~/.cache/jobgate/tools/``, not into the repository).
When mypy is installed (``pip install '.[compile]'``), a copy of the tree with the rule engine
compiled by mypyc (as the container image ships it) is measured too, in the same rounds.

``--baseline REF`` (repeatable) measures a git ref too, pure and compiled, built once into its own
tree and virtual environments outside the repository (``bench/baseline.py``), in the same
interleaved rounds; each of this tree's figures is then printed with its ratio to the same engine
and webhook of each baseline (``x REF``: above 1, this tree is faster) beside its ratio to the floor.

    python -m bench.webhook_bench [--duration 10] [--rounds 3] [--connections 32] [--event-loop asyncio|uvloop]
                                  [--no-compiled] [--no-pure] [--no-paced] [--baseline REF]... [--json]

Besides reviews/s, it reports each server's CPU time per review at saturation (from /proc):
on a machine shared with other work the wall-clock rates fall with the load, the CPU a review
costs much less, so its ratio to the floor's is the steadier figure.

Needs ``wrk`` and ``taskset`` (Debian packages wrk and util-linux) and two CPUs.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import math
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.baseline import Build, add_baseline_flag, baselines, counterpart, working_tree
from bench.common import cpu_seconds, free_port, median
from bench.fixtures import tfjob_review_bytes
from jobgate.certs.authority import init_directory

REPO = Path(__file__).resolve().parents[1]
SERVER_CPU, LOAD_CPU = "0", "1"
FIXED_RATE = 1000.0
RATE_CONNECTIONS = 10

LUA = r"""
local f = assert(io.open(os.getenv("JOBGATE_BENCH_BODY"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
local delay_ms = tonumber(os.getenv("JOBGATE_BENCH_DELAY_MS") or "0")
if delay_ms > 0 then
  function delay() return delay_ms end
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'RESULT {"requests": %d, "duration_us": %d, "errors": %d, "p50_us": %d, "p99_us": %d}\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout + e.status,
    latency:percentile(50), latency:percentile(99)))
end
"""


@dataclass
class Run:
    requests: int
    duration_us: int
    errors: int
    p50_us: int
    p99_us: int
    server_cpu_s: float = 0.0  # CPU time the server's processes used during the run (user + system)

    @property
    def rate(self) -> float:
        return self.requests / (self.duration_us / 1e6)


@dataclass
class Figures:
    name: str
    build: Build | None
    webhook: str
    max_rate: float
    cpu_us: float  # server CPU per review at saturation: what the load of other sessions does not change
    max_errors: int
    fixed_rate: float
    p50_ms: float
    p99_ms: float


def wait_until_serving(port: int, ca_file: Path, process: subprocess.Popen, timeout: float = 20) -> None:
    context = ssl.create_default_context(cafile=str(ca_file))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            with (
                socket.create_connection(("127.0.0.1", port), timeout=1) as raw,
                context.wrap_socket(raw, server_hostname="127.0.0.1"),
            ):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("server did not start")


def wrk(
    url: str,
    env: dict[str, str],
    *,
    connections: int,
    seconds: float,
    delay_ms: float = 0.0,
    server_pids: list[int] | None = None,
) -> Run:
    command = [
        "taskset", "-c", LOAD_CPU, "wrk", "-t1", f"-c{connections}", f"-d{round(seconds)}s", "--timeout", "5s",
        "-s", env["JOBGATE_BENCH_SCRIPT"], url,
    ]  # fmt: skip
    cpu_before = cpu_seconds(server_pids or [])
    result = subprocess.run(
        command, env={**env, "JOBGATE_BENCH_DELAY_MS": f"{delay_ms:.3f}"}, capture_output=True, text=True, check=True
    )
    cpu_used = cpu_seconds(server_pids or []) - cpu_before
    line = next(line for line in result.stdout.splitlines() if line.startswith("RESULT "))
    return Run(**json.loads(line.removeprefix("RESULT ")), server_cpu_s=cpu_used)


@dataclass
class Target:
    name: str
    url: str
    pids: list[int]
    peaks: list[Run]
    paced: list[Run]
    build: Build | None = None  # a jobgate build; None for a floor
    webhook: str = ""


def start_server(
    command: list[str],
    port: int,
    directory: Path,
    log_name: str,
    tree: Path = REPO,
    *,
    env: dict[str, str] | None = None,
) -> subprocess.Popen:
    log = open(directory / log_name, "w")  # noqa: SIM115 - closed with the process
    process = subprocess.Popen(["taskset", "-c", SERVER_CPU, *command], cwd=tree, stdout=log, stderr=log, env=env)
    wait_until_serving(port, directory / "ca.crt", process)
    return process


def paced_run(url: str, env: dict[str, str], seconds: float) -> Run:
    """Latency at about FIXED_RATE reviews/s, spread over RATE_CONNECTIONS keep-alive connections."""
    interval_ms = RATE_CONNECTIONS / FIXED_RATE * 1000
    probe = wrk(url, env, connections=RATE_CONNECTIONS, seconds=3, delay_ms=interval_ms)
    # Each connection waits delay + round trip between requests; take the round trip off the delay.
    overhead_ms = RATE_CONNECTIONS / probe.rate * 1000 - interval_ms
    return wrk(url, env, connections=RATE_CONNECTIONS, seconds=seconds, delay_ms=max(interval_ms - overhead_ms, 0.1))


GO_FLOOR_SOURCE = REPO / "bench" / "gofloor"
TOOLS_CACHE = Path(os.environ.get("JOBGATE_TOOLS_CACHE", Path.home() / ".cache" / "jobgate" / "tools"))


def go_floor_binary() -> Path | None:
    """Build the Go floor (bench/gofloor) once per source version into the tools cache, outside the repo."""
    go = shutil.which("go")
    if go is None:
        print("Go floor not measured: no Go toolchain on PATH", file=sys.stderr)
        return None
    digest = hashlib.sha256()
    for source in sorted(GO_FLOOR_SOURCE.iterdir()):
        digest.update(source.name.encode() + source.read_bytes())
    binary = TOOLS_CACHE / f"gofloor-{digest.hexdigest()[:12]}"
    if not binary.exists():
        TOOLS_CACHE.mkdir(parents=True, exist_ok=True)
        print(f"building the Go floor into {binary} ...", file=sys.stderr)
        env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"}
        subprocess.run([go, "build", "-trimpath", "-o", str(binary), "."], cwd=GO_FLOOR_SOURCE, env=env, check=True)
    return binary


def compiled_tree_or_none(destination: Path) -> Path | None:
    if importlib.util.find_spec("mypyc") is None:
        print("compiled rule engine not measured: mypy is not installed (pip install '.[compile]')", file=sys.stderr)
        return None
    from build_support.native import compiled_tree

    print("compiling the rule engine with mypyc ...", file=sys.stderr)
    return compiled_tree(destination)


def kept_or_compiled(kept: Path | None, directory: Path) -> Path | None:
    """The compiled copy ``--compiled-tree`` names when it is there (as ``bench.policy_cost`` keeps one),
    else one compiled now (at ``kept``, to be kept, or in ``directory``)."""
    if kept is not None and kept.is_dir():
        return kept
    return compiled_tree_or_none(kept or directory / "compiled")


COMPILED_TREE_HELP = "where the mypyc-compiled copy of this tree is kept: built there when absent, reused when there"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per measurement (default 10)")
    parser.add_argument("--connections", type=int, default=32, help="keep-alive connections for max throughput")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; medians are reported (default 3)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    parser.add_argument("--no-compiled", action="store_true", help="skip the mypyc-compiled rule engine")
    parser.add_argument("--no-pure", action="store_true", help="skip the pure-Python rule engine")
    parser.add_argument("--no-paced", action="store_true", help="skip the latency runs at a fixed rate")
    parser.add_argument("--compiled-tree", type=Path, help=COMPILED_TREE_HELP)
    add_baseline_flag(parser)
    parser.add_argument(
        "--event-loop",
        choices=("asyncio", "uvloop"),
        default="asyncio",
        help="event loop of the aiohttp floor and of jobgate alike (default asyncio)",
    )
    args = parser.parse_args()
    missing = [tool for tool in ("wrk", "taskset") if shutil.which(tool) is None]
    if missing:
        print(f"missing tools: {', '.join(missing)} (apt-get install wrk util-linux)", file=sys.stderr)
        return 2
    if (os.cpu_count() or 1) < 2:
        print("needs two CPUs: one for the server, one for wrk", file=sys.stderr)
        return 2

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="jobgate-bench-") as tmp:
        directory = Path(tmp)
        init_directory(directory, ["localhost"], ["127.0.0.1"])
        body = tfjob_review_bytes()
        (directory / "review.json").write_bytes(body)
        (directory / "post.lua").write_text(LUA)
        env = {
            **os.environ,
            "JOBGATE_BENCH_BODY": str(directory / "review.json"),
            "JOBGATE_BENCH_SCRIPT": str(directory / "post.lua"),
            "JOBGATE_BENCH_DIR": str(directory),
            "PYTHONPATH": str(REPO),
        }
        python = sys.executable
        floor_port = free_port()
        loop_option = ["--event-loop", args.event_loop]
        floor_command = [python, "-m", "bench.floor_server", "--tls-dir", tmp, "--port", str(floor_port), *loop_option]
        servers = [start_server(floor_command, floor_port, directory, "floor.log")]
        targets = [Target("floor (fixed answer)", f"https://127.0.0.1:{floor_port}/mutate", [servers[-1].pid], [], [])]
        go_floor = go_floor_binary()
        if go_floor is not None:
            go_port = free_port()
            # One OS thread for Go code, as the Python servers have one event loop (both pinned to one CPU).
            go_command = ["env", "GOMAXPROCS=1", str(go_floor), "--tls-dir", tmp, "--port", str(go_port)]
            servers.append(start_server(go_command, go_port, directory, "gofloor.log"))
            targets.append(
                Target("Go net/http floor", f"https://127.0.0.1:{go_port}/mutate", [servers[-1].pid], [], [])
            )
        fast_port = free_port()
        fast_command = [python, "-m", "bench.floor_server", "--tls-dir", tmp, "--port", str(fast_port), "--fast-path"]
        servers.append(start_server([*fast_command, *loop_option], fast_port, directory, "fastfloor.log"))
        targets.append(
            Target("fast-path floor (fixed)", f"https://127.0.0.1:{fast_port}/mutate", [servers[-1].pid], [], [])
        )
        compiled = None if args.no_compiled else kept_or_compiled(args.compiled_tree, directory)
        builds = working_tree(compiled) + baselines(args.baseline, compiled=compiled is not None)
        if args.no_pure:
            builds = [build for build in builds if build.compiled]
        for build in builds:
            port = free_port()
            command = build.command("webhook", "--tls-dir", tmp, "--host", "127.0.0.1", *loop_option)
            log_name = f"{build.label}.log".replace("/", "_").replace(" ", "_")
            servers.append(
                start_server(
                    [*command, "--port", str(port)], port, directory, log_name, build.cwd, env=build.environment()
                )
            )
            for webhook in ("mutate", "validate"):
                url = f"https://127.0.0.1:{port}/{webhook}"
                targets.append(Target(f"{build.label} /{webhook}", url, [servers[-1].pid], [], [], build, webhook))
        try:
            for target in targets:
                wrk(target.url, env, connections=args.connections, seconds=2)  # warm up
            # Rounds interleave the servers, so that drifts of this machine's speed hit them all alike.
            for _ in range(args.rounds):
                for target in targets:
                    peak = wrk(
                        target.url, env, connections=args.connections, seconds=args.duration, server_pids=target.pids
                    )
                    target.peaks.append(peak)
                for target in targets:
                    if not args.no_paced:
                        target.paced.append(paced_run(target.url, env, args.duration))
        finally:
            for server in servers:
                server.terminate()
                server.wait(timeout=20)

    figures = [
        Figures(
            t.name,
            t.build,
            t.webhook,
            median([r.rate for r in t.peaks]),
            median([r.server_cpu_s / r.requests * 1e6 for r in t.peaks]),
            sum(r.errors for r in t.peaks + t.paced),
            median([r.rate for r in t.paced]) if t.paced else math.nan,
            median([r.p50_us for r in t.paced]) / 1000 if t.paced else math.nan,
            median([r.p99_us for r in t.paced]) / 1000 if t.paced else math.nan,
        )
        for t in targets
    ]
    floor_rate, floor_cpu = figures[0].max_rate, figures[0].cpu_us
    go_rate = next((f.max_rate for f in figures if f.name.startswith("Go ")), None)
    print(
        f"jobgate webhook benchmark: servers on CPU {SERVER_CPU}, wrk on CPU {LOAD_CPU}, TLS keep-alive, "
        f"{len(body)}-byte TFJob AdmissionReview; median of {args.rounds} interleaved rounds of {args.duration:.0f} s; "
        f"Python servers on {args.event_loop}"
    )
    # The machine may be shared: the load average says how far the figures can be trusted.
    print(f"load average before/after: {load_before} / {os.getloadavg()}")
    # CPU per review is the figure that survives a shared machine: wall-clock rates drop when
    # other processes take the server's core, the CPU each review costs hardly moves.
    builds_measured = [f.build for f in figures if f.build is not None]
    name_width = max(26, *(len(f.name) for f in figures))
    # Against each baseline: this tree's reviews/s over the baseline's (same engine and webhook), and
    # the baseline's CPU per review over this tree's; above 1, this tree is faster.
    vs = "".join(f" {'x ' + ref:>12} {'CPU x ' + ref:>14}" for ref in args.baseline)
    header = f"{'server':{name_width}} {'max reviews/s':>14} {'x aiohttp':>9} {'x Go':>6}"
    header += f" {'CPU us/review':>13} {'x aiohttp':>9}"
    print(f"{header}{vs}   {'at reviews/s':>12} {'p50 ms':>7} {'p99 ms':>7} {'errors':>7}")
    for f in figures:
        ratio = f.max_rate / floor_rate
        go_ratio = f"{f.max_rate / go_rate:6.2f}" if go_rate else f"{'-':>6}"
        against = ""
        for ref in args.baseline:
            other = None
            if f.build is not None and not f.build.baseline:
                base_build = counterpart(f.build, builds_measured, ref)
                other = next((o for o in figures if o.build == base_build and o.webhook == f.webhook), None)
            if other is None:
                against += f" {'':>12} {'':>14}"
            else:
                against += f" {f.max_rate / other.max_rate:12.2f} {other.cpu_us / f.cpu_us:14.2f}"
        print(
            f"{f.name:{name_width}} {f.max_rate:14,.0f} {ratio:9.2f} {go_ratio}"
            f" {f.cpu_us:13.1f} {floor_cpu / f.cpu_us:9.2f}{against}"
            f"   {f.fixed_rate:12,.0f} {f.p50_ms:7.2f} {f.p99_ms:7.2f} {f.max_errors:7d}"
        )
    if args.json:
        rows = [
            {
                **{k: v for k, v in asdict(f).items() if k != "build"},
                "build": f.build.label if f.build is not None else None,
                "ratio": f.max_rate / floor_rate,
                "ratio_go": f.max_rate / go_rate if go_rate else None,
                "cpu_ratio": floor_cpu / f.cpu_us,
            }
            for f in figures
        ]
        print(json.dumps({"load_average": os.getloadavg(), "servers": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
