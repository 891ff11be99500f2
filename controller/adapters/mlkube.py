"""The mlkube family (``mxnet.mlkube.io/v1beta1``): MxJob."""

from __future__ import annotations

from typing import Any

from jobgate.engine.registry import JobKind
from jobgate.families.mlkube import rules as mlkube
from jobgate.rules.dicts import as_int

from ..model import (
    CleanPodPolicy,
    JobModel,
    JobStatusModel,
    ReplicaGroup,
    RestartMode,
    RunPolicy,
    child_name,
)
from .common import (
    Adapter,
    Env,
    all_succeeded,
    common_status_document,
    default_container_name,
    env_var,
    job_identity,
)


def build_mxjob(kind: JobKind, job: dict[str, Any]) -> JobModel:
    spec = job["spec"]
    identity = job_identity(kind, job)
    by_type = {r.get("mxReplicaType"): r for r in spec.get("replicaSpecs") or [] if isinstance(r, dict)}
    groups = []
    for replica_type in ("SCHEDULER", "SERVER", "WORKER"):
        replica = by_type.get(replica_type)
        if replica is None:
            continue
        count = as_int(replica.get("replicas")) or 0
        template = replica.get("template") or {}
        pod_policy = (template.get("spec") or {}).get("restartPolicy") or "Never"
        groups.append(
            ReplicaGroup(
                name=replica_type,
                replicas=count,
                template=template,
                restart=RestartMode(pod_policy),
                default_container=default_container_name(template, mlkube.MXNET_CONTAINER),
                port=("ps-root-port", as_int(replica.get("PsRootPort")) or mlkube.DEFAULT_PS_ROOT_PORT),
                master_indices=frozenset(range(count)) if replica_type == "SCHEDULER" else frozenset(),
            )
        )
    counts = {g.name: g.replicas for g in groups}
    scheduler = by_type.get("SCHEDULER") or {}
    dist = spec.get("jobMode") == "dist"
    name = identity["name"]

    def env(group: ReplicaGroup, index: int) -> Env:
        if not dist or group.default_container is None:
            return {}
        return {
            group.default_container: [
                env_var("DMLC_PS_ROOT_URI", child_name(name, "scheduler", 0)),
                env_var("DMLC_PS_ROOT_PORT", str(as_int(scheduler.get("PsRootPort")) or mlkube.DEFAULT_PS_ROOT_PORT)),
                env_var("DMLC_NUM_SERVER", str(counts.get("SERVER", 0))),
                env_var("DMLC_NUM_WORKER", str(counts.get("WORKER", 0))),
                env_var("DMLC_ROLE", group.object_name),
            ]
        }

    labels = identity.pop("labels")
    return JobModel(
        **identity,
        groups=tuple(groups),
        run_policy=RunPolicy(clean_pod_policy=CleanPodPolicy.RUNNING),
        success_rules=(all_succeeded("WORKER", "all workers succeeded"),),
        labels=labels,
        env=env,
    )


def project_mxjob(status: JobStatusModel) -> dict[str, Any]:
    """The common status plus the mxnet-operator's ``phase`` and ``state``."""
    document = common_status_document(status)
    if status.is_true("Succeeded"):
        document.update(phase="Done", state="Succeeded")
    elif status.is_true("Failed"):
        document.update(phase="Failed", state="Failed")
    elif status.is_true("Running") or status.is_true("Restarting"):
        document.update(phase="Running", state="Running")
    else:
        document.update(phase="Creating", state="Unknown")
    return document


ADAPTERS = (Adapter(mlkube.MXJOB, build_mxjob, project_mxjob),)
