"""Soak the webhook over HTTPS: ``python -m bench.soak [--minutes 10] [--rate 1000]``.

Starts ``jobgate webhook`` as a real process on loopback and sends, at a fixed rate, a mix of
valid, invalid and malformed reviews (70/20/10) to /mutate and /validate, then reports per
minute: requests, failures (anything but the expected status), p50/p99 latency and the
server's RSS, and the RSS growth from minute 1 to the last minute. Optional, in the same run:

- ``--big-every S``: a 3 MB review (10,000 replica types) every S seconds, to show that small
  reviews keep their latency while a large one is reviewed (head-of-line blocking);
- ``--rotations N``: the serving certificate re-issued N times during the load, the first
  time written in two steps (a half-written ``tls.crt`` first) as a careless tool would;
- SIGTERM at the end, still under load: readiness must turn false, and every request sent
  before readiness turned false must be answered (0 failures among them).

Every loop is bounded in count and time; everything binds to 127.0.0.1. Timing figures are
printed, never asserted. ``--minutes 0.5 --minute-seconds 10`` makes a smoke run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import ssl
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import free_port
from bench.fixtures import tfjob_review
from jobgate.certs.authority import (
    cert_pem,
    init_directory,
    issue_serving_cert,
    key_pem,
    write_atomically,
)

REPO = Path(__file__).resolve().parents[1]


def bodies() -> dict[str, tuple[bytes, int]]:
    """Request bodies by class, with the HTTP status each must get."""
    valid = tfjob_review()
    invalid = tfjob_review()
    invalid["request"]["object"]["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = -1
    invalid["request"]["object"]["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"][
        "limits"
    ]["cpu"] = "1e400"
    valid_bytes = json.dumps(valid).encode()
    return {
        "valid": (valid_bytes, 200),
        "invalid": (json.dumps(invalid).encode(), 200),
        "malformed": (valid_bytes[: len(valid_bytes) // 2], 400),
    }


def big_body() -> bytes:
    review = tfjob_review()
    replica = {"replicas": 1, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "x" * 180}]}}}
    review["request"]["object"]["spec"]["tfReplicaSpecs"] = {f"Worker{i}": replica for i in range(10_000)}
    review["request"]["object"]["metadata"]["annotations"] = {}
    return json.dumps(review).encode()


def rss_kib(pid: int) -> int:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def wait_ready(session: aiohttp.ClientSession, url: str) -> None:
    """Until the webhook at ``url`` says it is ready (30 s at most)."""
    for _ in range(300):
        with contextlib.suppress(aiohttp.ClientError, OSError):
            async with session.get(f"{url}/readyz") as response:
                if response.status == 200:
                    return
        await asyncio.sleep(0.1)
    raise SystemExit("the server did not become ready in 30 s")


@dataclass
class Window:
    started: float
    latencies: list[float] = field(default_factory=list)
    failures: int = 0
    big: list[float] = field(default_factory=list)
    rss: int = 0

    def row(self, index: int) -> dict[str, object]:
        lat = sorted(self.latencies)
        p = (lambda q: round(lat[min(len(lat) - 1, int(q * len(lat)))] * 1000, 2)) if lat else (lambda q: None)
        return {
            "minute": index + 1,
            "requests": len(lat) + self.failures,
            "failures": self.failures,
            "p50_ms": p(0.50),
            "p99_ms": p(0.99),
            "max_ms": round(lat[-1] * 1000, 1) if lat else None,
            "big_reviews": len(self.big),
            "big_max_ms": round(max(self.big) * 1000, 1) if self.big else None,
            "rss_mib": round(self.rss / 1024, 1),
        }


class Soak:
    def __init__(self, args: argparse.Namespace, tls_dir: Path) -> None:
        self.args = args
        self.tls_dir = tls_dir
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self.context = ssl.create_default_context(cafile=str(tls_dir / "ca.crt"))
        self.bodies = bodies()
        self.big = big_body() if args.big_every else b""
        self.windows: list[Window] = []
        self.unready_at: float | None = None
        self.after_unready = {"sent": 0, "answered": 0, "refused": 0}
        self.before_unready_failures = 0
        self.rotations_done = 0
        self.process: subprocess.Popen[bytes] | None = None

    def start_server(self) -> None:
        command = [
            sys.executable,
            "-m",
            "webhook.cli",
            "webhook",
            "--tls-dir",
            str(self.tls_dir),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--cert-check-interval",
            "0.5",
            "--shutdown-delay",
            "1",
        ]
        log = open(self.args.log, "wb")  # noqa: SIM115 - the server writes to it until it exits
        self.process = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)

    async def wait_ready(self, session: aiohttp.ClientSession) -> None:
        await wait_ready(session, self.url)

    def window(self) -> Window:
        now = time.monotonic()
        if not self.windows or now - self.windows[-1].started >= self.args.minute_seconds:
            if self.windows and self.process:
                self.windows[-1].rss = rss_kib(self.process.pid)
            self.windows.append(Window(now))
        return self.windows[-1]

    async def one(self, session: aiohttp.ClientSession, kind: str, path: str) -> None:
        body, expected = self.bodies[kind]
        sent_at = time.monotonic()
        before_unready = self.unready_at is None
        if not before_unready:
            self.after_unready["sent"] += 1
        try:
            async with session.post(
                f"{self.url}{path}", data=body, headers={"Content-Type": "application/json"}
            ) as response:
                await response.read()
                ok = response.status == expected
        except (TimeoutError, aiohttp.ClientError, OSError):
            ok = False
        elapsed = time.monotonic() - sent_at
        if not before_unready:
            self.after_unready["answered" if ok else "refused"] += 1
            return
        window = self.window()
        if ok:
            window.latencies.append(elapsed)
        else:
            window.failures += 1
            self.before_unready_failures += 1

    async def one_big(self, session: aiohttp.ClientSession) -> None:
        sent_at = time.monotonic()
        try:
            async with session.post(
                f"{self.url}/validate", data=self.big, headers={"Content-Type": "application/json"}
            ) as response:
                await response.read()
                ok = response.status == 200
        except (TimeoutError, aiohttp.ClientError, OSError):
            ok = False
        window = self.window()
        if ok:
            window.big.append(time.monotonic() - sent_at)
        else:
            window.failures += 1
            self.before_unready_failures += 1

    async def load(self, session: aiohttp.ClientSession, seconds: float, stop: asyncio.Event) -> None:
        """Requests at a fixed rate (open loop: one task per request, bounded in count)."""
        rng = random.Random(1)
        interval = 1.0 / self.args.rate
        tasks: set[asyncio.Task[None]] = set()
        started = time.monotonic()
        next_big = started + (self.args.big_every or 0)
        limit = int(seconds * self.args.rate) + 1
        for index in range(limit):
            if stop.is_set():
                break
            target = started + index * interval
            delay = target - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            if len(tasks) >= self.args.max_in_flight:
                self.window().failures += 1  # the client cannot keep up: counted, never hidden
                continue
            roll = rng.random()
            kind = "valid" if roll < 0.7 else "invalid" if roll < 0.9 else "malformed"
            task = asyncio.create_task(self.one(session, kind, rng.choice(("/mutate", "/validate"))))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            if self.big and time.monotonic() >= next_big:
                next_big += self.args.big_every
                big = asyncio.create_task(self.one_big(session))
                tasks.add(big)
                big.add_done_callback(tasks.discard)
        if tasks:
            await asyncio.wait(tasks, timeout=30)

    async def rotate(self, stop: asyncio.Event, seconds: float) -> None:
        """Re-issue the serving certificate ``--rotations`` times, spread over the run."""
        if not self.args.rotations:
            return
        from cryptography import x509
        from cryptography.hazmat.primitives.serialization import load_pem_private_key

        ca_cert = x509.load_pem_x509_certificate((self.tls_dir / "ca.crt").read_bytes())
        ca_key = load_pem_private_key((self.tls_dir / "ca.key").read_bytes(), None)
        pause = seconds / (self.args.rotations + 1)
        for index in range(self.args.rotations):
            await asyncio.sleep(pause)
            if stop.is_set():
                return
            key, cert = issue_serving_cert(ca_key, ca_cert, ["localhost"], ["127.0.0.1"])  # type: ignore[arg-type]
            if index == 0:
                # Half-written: a truncated certificate first, the key and the full certificate 1 s later.
                (self.tls_dir / "tls.crt").write_bytes(cert_pem(cert)[:200])
                await asyncio.sleep(1.0)
            write_atomically(self.tls_dir / "tls.key", key_pem(key), 0o600)
            write_atomically(self.tls_dir / "tls.crt", cert_pem(cert), 0o644)
            self.rotations_done += 1

    async def watch_readiness(self, session: aiohttp.ClientSession) -> None:
        for _ in range(int(60 / 0.02)):
            try:
                async with session.get(f"{self.url}/readyz") as response:
                    if response.status != 200:
                        self.unready_at = time.monotonic()
                        return
            except (aiohttp.ClientError, OSError):
                self.unready_at = time.monotonic()
                return
            await asyncio.sleep(0.02)

    async def run(self) -> dict[str, object]:
        self.start_server()
        assert self.process is not None
        seconds = self.args.minutes * 60
        connector = aiohttp.TCPConnector(ssl=self.context, limit=self.args.connections)
        timeout = aiohttp.ClientTimeout(total=10)
        stop = asyncio.Event()
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
            await self.wait_ready(session)
            load = asyncio.create_task(self.load(session, seconds + (10 if self.args.sigterm else 0), stop))
            rotation = asyncio.create_task(self.rotate(stop, seconds))
            await asyncio.sleep(seconds)
            sigterm: dict[str, object] = {}
            if self.args.sigterm:
                watcher = asyncio.create_task(self.watch_readiness(session))
                signalled = time.monotonic()
                self.process.send_signal(signal.SIGTERM)
                await watcher
                stop.set()
                await load
                exit_code = await asyncio.to_thread(self.process.wait, 30)
                sigterm = {
                    "readiness_false_after_s": round((self.unready_at or signalled) - signalled, 3),
                    "exit_code": exit_code,
                    "exit_after_s": round(time.monotonic() - signalled, 2),
                    "after_readiness_false": self.after_unready,
                }
            else:
                stop.set()
                await load
            await rotation
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(30)
        if self.windows and not self.windows[-1].rss:
            self.windows[-1].rss = self.windows[-2].rss if len(self.windows) > 1 else 0
        rows = [w.row(i) for i, w in enumerate(self.windows)]
        full = [r for r in rows if r["requests"]]
        growth = None
        if len(full) >= 2 and full[0]["rss_mib"]:
            last = full[-2] if full[-1]["rss_mib"] == 0 else full[-1]
            growth = round(100 * (float(last["rss_mib"]) / float(full[0]["rss_mib"]) - 1), 1)  # type: ignore[arg-type]
        return {
            "rate": self.args.rate,
            "minutes": self.args.minutes,
            "windows": rows,
            "failures_before_readiness_false": self.before_unready_failures,
            "rss_growth_percent_first_to_last": growth,
            "rotations": self.rotations_done,
            "sigterm": sigterm,
            "p99_ms_max_window": max((r["p99_ms"] or 0) for r in full) if full else None,
            "load_average": os.getloadavg(),
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--minute-seconds", type=float, default=60.0, help="length of a reporting window")
    parser.add_argument("--rate", type=float, default=1000.0, help="reviews per second")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--max-in-flight", type=int, default=2000)
    parser.add_argument("--big-every", type=float, default=0.0, help="a 3 MB review every S seconds")
    parser.add_argument("--rotations", type=int, default=0)
    parser.add_argument("--sigterm", action="store_true", help="end with SIGTERM under load")
    parser.add_argument("--log", default=os.devnull, help="where the server's log goes")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="jobgate-soak-") as directory:
        tls_dir = Path(directory) / "tls"
        init_directory(tls_dir, ["localhost"], ["127.0.0.1"])
        soak = Soak(args, tls_dir)
        try:
            result = asyncio.run(soak.run())
        finally:
            if soak.process and soak.process.poll() is None:
                soak.process.kill()
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"soak: {args.rate:.0f} reviews/s for {args.minutes} min, load average {result['load_average']}")
        print(" window  requests  failures  p50 ms  p99 ms  max ms  big  big max ms  RSS MiB")
        for row in result["windows"]:  # type: ignore[attr-defined]
            print(
                f" {row['minute']:>6}  {row['requests']:>8}  {row['failures']:>8}  {row['p50_ms']!s:>6}"
                f"  {row['p99_ms']!s:>6}  {row['max_ms']!s:>6}  {row['big_reviews']:>3}  {row['big_max_ms']!s:>10}"
                f"  {row['rss_mib']:>7}"
            )
        print(f"failures before readiness turned false: {result['failures_before_readiness_false']}")
        print(f"RSS growth, first to last window: {result['rss_growth_percent_first_to_last']} %")
        print(f"certificate rotations: {result['rotations']}")
        if result["sigterm"]:
            print(f"SIGTERM: {result['sigterm']}")
    return 1 if result["failures_before_readiness_false"] else 0


if __name__ == "__main__":
    sys.exit(main())
