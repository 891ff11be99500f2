"""CRDs of the projects jobgate stands beside, read from their Go modules (the module proxy is the
one source reachable here, and the Go module cache keeps what it downloads).

    python -m envtest.upstream   # prints the paths of Volcano's Job and Queue CRDs, Kueue's
                                 # queue CRDs and JobSet's CRD, downloading each module once
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from envtest.versions import KUEUE_VERSION, TRAINER_VERSION, VOLCANO_VERSION

VOLCANO_MODULE = "volcano.sh/volcano"
VOLCANO_JOB_CRD = "config/crd/volcano/bases/batch.volcano.sh_jobs.yaml"
VOLCANO_QUEUE_CRD = "config/crd/volcano/bases/scheduling.volcano.sh_queues.yaml"

KUEUE_MODULE = "sigs.k8s.io/kueue"
KUEUE_CRD_DIRECTORY = "config/components/crd/bases"
# The objects jobgate's queue fit reads (jobgate/policy/queueobjects.py), by plural.
KUEUE_QUEUE_PLURALS = ("localqueues", "clusterqueues", "resourceflavors", "cohorts")
# The version the webhook reads first, and the one the tests write.
KUEUE_API_VERSION = "v1beta2"


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


def _module_file(module: str, version: str, relative: str) -> Path:
    path = module_directory(module, version) / relative
    if not path.is_file():
        raise UpstreamUnavailable(f"{module}@{version} has no {relative}")
    return path


def volcano_job_crd(version: str = VOLCANO_VERSION) -> Path:
    """Volcano's own ``jobs.batch.volcano.sh`` CRD, as its release installs it."""
    return _module_file(VOLCANO_MODULE, version, VOLCANO_JOB_CRD)


def volcano_queue_crd(version: str = VOLCANO_VERSION) -> Path:
    """Volcano's own ``queues.scheduling.volcano.sh`` CRD (``v1beta1``, with ``spec.parent`` and a status
    subresource), as its release installs it."""
    return _module_file(VOLCANO_MODULE, version, VOLCANO_QUEUE_CRD)


def served_versions(crd: Path) -> list[str]:
    """The versions a CRD manifest serves."""
    (document,) = [d for d in yaml.safe_load_all(crd.read_text()) if d]
    return [v["name"] for v in document["spec"]["versions"] if v.get("served")]


def kueue_queue_crds(version: str = KUEUE_VERSION) -> list[Path]:
    """Kueue's LocalQueue, ClusterQueue, ResourceFlavor and Cohort CRDs, as its release's CRD bases
    (without the conversion webhook its kustomization adds: no Kueue serves one here, and every
    served version has the same storage). Each must serve ``KUEUE_API_VERSION``: a version pinned
    too old to serve it fails here, by name, rather than in the tests' first write."""
    crds = [
        _module_file(KUEUE_MODULE, version, f"{KUEUE_CRD_DIRECTORY}/kueue.x-k8s.io_{plural}.yaml")
        for plural in KUEUE_QUEUE_PLURALS
    ]
    for crd in crds:
        if KUEUE_API_VERSION not in served_versions(crd):
            raise UpstreamUnavailable(f"{KUEUE_MODULE}@{version}: {crd.name} does not serve {KUEUE_API_VERSION}")
    return crds


JOBSET_CRD = "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"


def jobset_crd() -> Path:
    """JobSet's own ``jobsets.jobset.x-k8s.io`` CRD (its schema, defaults and CEL rules), of the release
    the jobset family follows (``jobgate.families.jobset.PEER_VERSION``)."""
    from jobgate.families.jobset import PEER_MODULE, PEER_VERSION

    return _module_file(PEER_MODULE, PEER_VERSION, JOBSET_CRD)


TRAINER_MODULE = "github.com/kubeflow/trainer/v2"
TRAINER_CRD_DIRECTORY = "manifests/base/crds"
TRAINER_PLURALS = ("trainjobs", "trainingruntimes", "clustertrainingruntimes")


def trainer_crds(version: str = TRAINER_VERSION) -> list[Path]:
    """Kubeflow Trainer's own CRDs, as its release installs them (their CEL rules and JobSet's, inherited
    by the runtimes, included)."""
    return [
        _module_file(TRAINER_MODULE, version, f"{TRAINER_CRD_DIRECTORY}/trainer.kubeflow.org_{plural}.yaml")
        for plural in TRAINER_PLURALS
    ]


if __name__ == "__main__":
    try:
        for path in (volcano_job_crd(), volcano_queue_crd(), *kueue_queue_crds(), jobset_crd()):
            print(path)
    except UpstreamUnavailable as exc:
        print(f"envtest.upstream: {exc}", file=sys.stderr)
        sys.exit(1)
