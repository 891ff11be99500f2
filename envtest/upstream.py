"""CRDs of the projects jobgate stands beside, read from their Go modules (the module proxy is the
one source reachable here, and the Go module cache keeps what it downloads).

    python -m envtest.upstream   # prints the path of Volcano's Job CRD, downloading it once
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from envtest.versions import VOLCANO_VERSION

VOLCANO_MODULE = "volcano.sh/volcano"
VOLCANO_JOB_CRD = "config/crd/volcano/bases/batch.volcano.sh_jobs.yaml"


class UpstreamUnavailable(RuntimeError):
    """The module could not be had (no Go toolchain, or the proxy refused it)."""


def module_directory(module: str, version: str) -> Path:
    """The module's source in the Go module cache, downloaded if it is not there yet."""
    go = shutil.which("go")
    if go is None:
        raise UpstreamUnavailable(f"no Go toolchain to download {module}@{version}")
    environment = {**os.environ, "GOFLAGS": "-mod=mod", "GO111MODULE": "on"}
    process = subprocess.run(
        [go, "mod", "download", "-json", f"{module}@{version}"],
        capture_output=True,
        text=True,
        check=False,
        env=environment,
        timeout=600,
    )
    try:
        answer = json.loads(process.stdout)
    except json.JSONDecodeError as exc:
        raise UpstreamUnavailable(f"go mod download {module}@{version}: {process.stderr.strip()[-2000:]}") from exc
    if answer.get("Error") or not answer.get("Dir"):
        raise UpstreamUnavailable(f"go mod download {module}@{version}: {answer.get('Error')}")
    return Path(answer["Dir"])


def volcano_job_crd(version: str = VOLCANO_VERSION) -> Path:
    """Volcano's own ``jobs.batch.volcano.sh`` CRD, as its release installs it."""
    path = module_directory(VOLCANO_MODULE, version) / VOLCANO_JOB_CRD
    if not path.is_file():
        raise UpstreamUnavailable(f"{VOLCANO_MODULE}@{version} has no {VOLCANO_JOB_CRD}")
    return path


if __name__ == "__main__":
    try:
        print(volcano_job_crd())
    except UpstreamUnavailable as exc:
        print(f"envtest.upstream: {exc}", file=sys.stderr)
        sys.exit(1)
