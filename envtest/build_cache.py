"""Finished image builds kept by content: one directory per key, holding the archive and its
``build-info.json`` (written last, so a directory without it is no finished build)."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STAMP = "build-info.json"


@dataclass(frozen=True)
class BuildCache:
    env_var: str  # overrides the cache's directory
    name: str  # its directory under ~/.cache/jobgate
    archive: str  # the archive's file name in a build's directory
    version: str  # the project's version, the prefix of a build's directory
    keep: int  # finished builds kept, the newest first

    def root(self) -> Path:
        root = os.environ.get(self.env_var)
        return Path(root) if root else Path.home() / ".cache" / "jobgate" / self.name

    def directory(self, key: str) -> Path:
        return self.root() / f"{self.version}-{key[:16]}"

    def cached(self, key: str) -> Path | None:
        """The archive of the finished build of ``key``, or None."""
        directory = self.directory(key)
        archive = directory / self.archive
        return archive if archive.is_file() and (directory / STAMP).is_file() else None

    def publish(self, staging: Path, key: str, stamp: dict[str, Any]) -> Path:
        """``staging`` (holding the archive) becomes the build of ``key``, its stamp written last;
        older builds beyond ``keep`` are removed. Returns the archive."""
        (staging / STAMP).write_text(json.dumps(stamp, indent=2) + "\n")
        target = self.directory(key)
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
        builds = sorted((p for p in self.root().iterdir() if p.is_dir() and (p / STAMP).exists()),
                        key=lambda p: p.stat().st_mtime, reverse=True)  # fmt: skip
        for old in builds[self.keep :]:
            if old != target:
                shutil.rmtree(old, ignore_errors=True)
        return target / self.archive


def build_info(archive: Path) -> dict[str, Any]:
    """The stamp of the build that made ``archive``."""
    info: dict[str, Any] = json.loads((archive.parent / STAMP).read_text())
    return info
