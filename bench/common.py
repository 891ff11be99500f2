"""Helpers the benchmarks share: a free port, a process's CPU time, pinning a command to one CPU,
and the statistics the tables print."""

from __future__ import annotations

import contextlib
import os
import socket
import statistics
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    """A TCP port on the loopback that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU of these processes (all their threads) so far, from /proc; a process gone
    counts 0."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / CLOCK_TICKS


def pinned(argv: list[str], cpu: int | str) -> list[str]:
    """``argv`` run on CPU ``cpu`` alone (``taskset``, util-linux)."""
    return ["taskset", "--cpu-list", str(cpu), *argv]


def median(values: list[float]) -> float:
    return statistics.median(values)


def percentile(values: list[int] | list[float], fraction: float) -> float:
    """Nearest rank."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * fraction // 1))
    return float(ordered[int(rank) - 1])
