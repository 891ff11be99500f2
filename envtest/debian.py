"""Debian packages on the build host: which are missing, and installing them (root only)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence

Log = Callable[[str], None]


def is_installed(package: str) -> bool:
    query = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Status}", package], capture_output=True, text=True, check=False
    )
    return query.returncode == 0 and query.stdout.strip() == "install ok installed"


def missing(packages: Sequence[str]) -> list[str]:
    return [package for package in packages if not is_installed(package)]


def apt_install(packages: Sequence[str], log: Log = print, *, recommends: bool = False) -> None:
    """``apt-get update`` once, then ``apt-get install`` of ``packages``; RuntimeError with
    apt's own words when either fails."""
    log(f"installing Debian packages: {' '.join(packages)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = ["apt-get", "install", "-y", "-q", *([] if recommends else ["--no-install-recommends"]), *packages]
    for cmd in (["apt-get", "update", "-q"], install):
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
