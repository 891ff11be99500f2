"""One adapter per API family: job -> common model, and the engine's status -> the job's status.

Adapters never default anything themselves: they run the rule engine's ``default`` on the
job they are given (the stored object is normally defaulted already; this makes the
controller right even for objects created while the webhook was bypassed).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controller.engine import ceil_fraction
from controller.model import (
    CleanPodPolicy,
    Condition,
    FinishRule,
    JobModel,
    JobStatusModel,
    Outcome,
    ReplicaCounts,
    ReplicaGroup,
    RestartMode,
    RunPolicy,
    Selector,
    child_name,
)
from webhook.rules.families import kubedl, mlkube
from webhook.rules.jobmeta import as_int
from webhook.rules.podtemplate import container_named, container_port, containers_of
from webhook.rules.registry import GroupVersionKind, JobKind

JOB_UID_LABEL = "jobgate.dev/job-uid"
Env = dict[str, list[dict[str, Any]]]


def _var(name: str, value: str) -> dict[str, str]:
    return {"name": name, "value": value}


# --- status -----------------------------------------------------------------------------------


def read_status(job: dict[str, Any]) -> JobStatusModel:
    """The job's status as the engine sees it; anything unreadable is treated as absent."""
    raw = job.get("status") if isinstance(job.get("status"), dict) else {}
    conditions = []
    for item in raw.get("conditions") or []:
        if isinstance(item, dict) and item.get("type"):
            conditions.append(
                Condition(
                    str(item["type"]),
                    str(item.get("status", "Unknown")),
                    str(item.get("reason", "")),
                    str(item.get("message", "")),
                    str(item.get("lastUpdateTime", "")),
                    str(item.get("lastTransitionTime", "")),
                )
            )
    completed = {
        str(k): [int(i) for i in v if isinstance(i, int)]
        for k, v in (raw.get("completedIndices") or {}).items()
        if isinstance(v, list)
    }
    replica_statuses = {
        str(name): ReplicaCounts(
            active=as_int(counts.get("active")) or 0,
            succeeded=as_int(counts.get("succeeded")) or 0,
            failed=as_int(counts.get("failed")) or 0,
            evicted=as_int(counts.get("evicted")) or 0,
        )
        for name, counts in (raw.get("replicaStatuses") or {}).items()
        if isinstance(counts, dict)
    }
    return JobStatusModel(
        conditions=conditions,
        replica_statuses=replica_statuses,
        start_time=raw.get("startTime"),
        completion_time=raw.get("completionTime"),
        last_reconcile_time=raw.get("lastReconcileTime"),
        restart_count=as_int(raw.get("restartCount")) or 0,
        completed_indices=completed,
        restarting_pods=[str(u) for u in raw.get("restartingPods") or []],
        observed_generation=as_int(raw.get("observedGeneration")),
        replica_summary=raw.get("replicaSummary"),
    )


def _replica_status(counts: ReplicaCounts) -> dict[str, int]:
    return {"active": counts.active, "succeeded": counts.succeeded, "failed": counts.failed, "evicted": counts.evicted}


def common_status_document(status: JobStatusModel) -> dict[str, Any]:
    document: dict[str, Any] = {
        "conditions": [
            {
                "type": c.type,
                "status": c.status,
                "reason": c.reason,
                "message": c.message,
                "lastUpdateTime": c.last_update_time,
                "lastTransitionTime": c.last_transition_time,
            }
            for c in status.conditions
        ],
        "replicaStatuses": {k: _replica_status(v) for k, v in status.replica_statuses.items()},
        "startTime": status.start_time,
        "completionTime": status.completion_time,
        "lastReconcileTime": status.last_reconcile_time,
        "restartCount": status.restart_count,
        "completedIndices": status.completed_indices or None,
        "restartingPods": status.restarting_pods or None,
        "observedGeneration": status.observed_generation,
        "replicaSummary": status.replica_summary,
    }
    return {k: v for k, v in document.items() if v is not None}


@dataclass(frozen=True)
class Adapter:
    kind: JobKind
    build: Callable[[JobKind, dict[str, Any]], JobModel]
    project: Callable[[JobStatusModel], dict[str, Any]] = common_status_document

    @property
    def gvk(self) -> GroupVersionKind:
        return self.kind.gvk

    def model(self, job: dict[str, Any]) -> JobModel:
        return self.build(self.kind, self.kind.default(job))


def _identity(kind: JobKind, job: dict[str, Any]) -> dict[str, Any]:
    metadata = job["metadata"]
    return {
        "kind": kind.gvk.kind,
        "api_version": kind.gvk.api_version,
        "namespace": metadata.get("namespace") or "default",
        "name": metadata["name"],
        "uid": metadata.get("uid", ""),
        "generation": int(metadata.get("generation") or 0),
        "labels": {
            "group-name": kind.gvk.group,
            "job-name": metadata["name"],
            JOB_UID_LABEL: metadata.get("uid", ""),
        },
    }


# --- KubeDL family ----------------------------------------------------------------------------


def _default_container_name(template: Any, preferred: str) -> str | None:
    if container_named(template, preferred) is not None:
        return preferred
    containers = containers_of(template)
    name = containers[0].get("name") if containers else None
    return name if isinstance(name, str) else None


def _kubedl_groups(kind: kubedl.KubeDLKind, spec: dict[str, Any]) -> tuple[ReplicaGroup, ...]:
    replicas = spec.get(kind.replicas_field) or {}
    groups = []
    for role in kind.roles:  # the kind's own order: e.g. PS before Worker, Launcher before Worker
        replica = replicas.get(role.name)
        if not isinstance(replica, dict):
            continue
        count = as_int(replica.get("replicas")) or 0
        template = replica.get("template") or {}
        container = _default_container_name(template, kind.container)
        port = container_port(container_named(template, container) if container else None, kind.port_name)
        groups.append(
            ReplicaGroup(
                name=role.name,
                replicas=count,
                template=template,
                restart=RestartMode(replica.get("restartPolicy") or role.restart_policy),
                default_container=container,
                port=(kind.port_name, port) if port is not None else None,
                master_indices=frozenset(range(count)) if role.is_master else frozenset(),
            )
        )
    return tuple(groups)


def _kubedl_run_policy(kind: kubedl.KubeDLKind, spec: dict[str, Any], total: int) -> RunPolicy:
    policy = kind.run_policy(spec)
    scheduling = policy.get("schedulingPolicy") if isinstance(policy.get("schedulingPolicy"), dict) else None
    return RunPolicy(
        clean_pod_policy=CleanPodPolicy(policy.get("cleanPodPolicy") or "Running"),
        ttl_seconds_after_finished=as_int(policy.get("ttlSecondsAfterFinished")),
        active_deadline_seconds=as_int(policy.get("activeDeadlineSeconds")),
        backoff_limit=as_int(policy.get("backoffLimit")),
        gang_min_member=(as_int(scheduling.get("minAvailable")) or total) if scheduling is not None else None,
        queue=scheduling.get("queue") if scheduling else None,
        priority_class=scheduling.get("priorityClassName") if scheduling else None,
    )


def _all(group: str, description: str) -> FinishRule:
    return FinishRule((Selector(group),), description)


def _tf_success(spec: dict[str, Any], groups: tuple[ReplicaGroup, ...]) -> tuple[FinishRule, ...]:
    names = {g.name for g in groups}
    for leader in ("Chief", "Master"):
        if leader in names:
            return (_all(leader, f"the {leader} succeeded"),)
    if spec.get("successPolicy") == "AllWorkers":
        return (_all("Worker", "all workers succeeded"),)
    return (FinishRule((Selector("Worker", (0,)),), "worker 0 succeeded"), _all("Worker", "all workers succeeded"))


def _xdl_success(spec: dict[str, Any], groups: tuple[ReplicaGroup, ...]) -> tuple[FinishRule, ...]:
    worker = next((g for g in groups if g.name == "Worker"), None)
    if worker is None:
        return ()
    rate, number = as_int(spec.get("minFinishWorkRate")), as_int(spec.get("minFinishWorkNum"))
    needed = (
        ceil_fraction(rate, worker.replicas) if rate is not None else number if number is not None else worker.replicas
    )
    needed = max(min(needed, worker.replicas), 1)
    return (FinishRule((Selector("Worker", at_least=needed),), f"{needed} of {worker.replicas} workers succeeded"),)


SUCCESS_RULES: dict[str, Callable[[dict[str, Any], tuple[ReplicaGroup, ...]], tuple[FinishRule, ...]]] = {
    "TFJob": _tf_success,
    "PyTorchJob": lambda spec, groups: (_all("Master", "the Master succeeded"),),
    "XGBoostJob": lambda spec, groups: (_all("Master", "the Master succeeded"),),
    "MPIJob": lambda spec, groups: (_all("Launcher", "the Launcher succeeded"),),
    "XDLJob": _xdl_success,
    "MarsJob": lambda spec, groups: (_all("Worker", "all workers succeeded"),),
}


def _host(name: str, group: ReplicaGroup, index: int, namespace: str) -> str:
    return f"{child_name(name, group.object_name, index)}.{namespace}.svc"


def _tf_env(job: dict[str, Any], groups: tuple[ReplicaGroup, ...]) -> Callable[[ReplicaGroup, int], Env]:
    # KubeDL's TF_CONFIG: the evaluator is not part of the cluster; only set for distributed jobs.
    name, namespace = job["metadata"]["name"], job["metadata"].get("namespace") or "default"
    cluster = {
        g.object_name: [f"{_host(name, g, i, namespace)}:{g.port[1] if g.port else 2222}" for i in range(g.replicas)]
        for g in groups
        if g.name != "Evaluator"
    }
    distributed = sum(g.replicas for g in groups) > 1

    def env(group: ReplicaGroup, index: int) -> Env:
        if not distributed or group.default_container is None:
            return {}
        config = {
            "cluster": dict(sorted(cluster.items())),
            "task": {"type": group.object_name, "index": index},
            "environment": "cloud",
        }
        return {group.default_container: [_var("TF_CONFIG", json.dumps(config, separators=(",", ":")))]}

    return env


def _master_env(
    job: dict[str, Any], groups: tuple[ReplicaGroup, ...], *, rank_offset: bool, local_master: bool
) -> Callable[[ReplicaGroup, int], Env]:
    name = job["metadata"]["name"]
    master = next((g for g in groups if g.name == "Master"), None)
    port = master.port[1] if master and master.port else None
    world = sum(g.replicas for g in groups)
    masters = master.replicas if master else 0

    def env(group: ReplicaGroup, index: int) -> Env:
        rank = index if group.name == "Master" or not rank_offset else index + masters
        address = "localhost" if local_master and group.name == "Master" else child_name(name, "master", 0)
        variables = [_var("MASTER_ADDR", address), _var("WORLD_SIZE", str(world)), _var("RANK", str(rank))]
        if port is not None:
            variables.insert(0, _var("MASTER_PORT", str(port)))
        variables.append(_var("PYTHONUNBUFFERED", "0"))
        return {"*": variables}

    return env


def _xdl_env(group: ReplicaGroup, index: int) -> Env:
    if group.default_container is None:
        return {}
    return {group.default_container: [_var("TASK_NAME", group.object_name), _var("TASK_INDEX", str(index))]}


MPI_DIR = "/etc/mpi"
MPI_ENV = {
    "OpenMPI": (("OMPI_MCA_plm_rsh_agent", "kubexec.sh"), ("OMPI_MCA_orte_default_hostfile", "hostfile")),
    "IntelMPI": (("I_MPI_HYDRA_BOOTSTRAP_EXEC", "kubexec.sh"), ("I_MPI_HYDRA_HOST_FILE", "hostfile")),
    "MPICH": (("HYDRA_LAUNCHER_EXEC", "kubexec.sh"), ("HYDRA_HOST_FILE", "hostfile")),
}
KUBEXEC = """#!/bin/sh
# mpirun starts remote processes through this: kubectl exec into the worker pod named $1.
set -e
POD_NAME=$1
shift
exec kubectl exec "${POD_NAME}" -- /bin/sh -c "$*"
"""


def _mpi_parts(job: dict[str, Any], spec: dict[str, Any], groups: tuple[ReplicaGroup, ...], identity: dict[str, Any]):
    """The hostfile ConfigMap, the launcher's environment and the launcher's volume."""
    name, namespace = identity["name"], identity["namespace"]
    distribution = spec.get("mpiDistribution") or "OpenMPI"
    slots = as_int(spec.get("slotsPerWorker")) or 1
    workers = next((g for g in groups if g.name == "Worker"), None)
    hosts = [child_name(name, workers.object_name, i) for i in range(workers.replicas)] if workers else []
    line = "{host} slots={slots}" if distribution == "OpenMPI" else "{host}:{slots}"
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"{name}-config",
            "namespace": namespace,
            "labels": identity["labels"],
            "ownerReferences": [
                {
                    "apiVersion": identity["api_version"],
                    "kind": identity["kind"],
                    "name": name,
                    "uid": identity["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "data": {"hostfile": "".join(line.format(host=h, slots=slots) + "\n" for h in hosts), "kubexec.sh": KUBEXEC},
    }
    main = spec.get("mainContainer")
    variables = [_var(var, f"{MPI_DIR}/{file}") for var, file in MPI_ENV.get(distribution, MPI_ENV["OpenMPI"])]

    def env(group: ReplicaGroup, index: int) -> Env:
        if group.name != "Launcher":
            return {}
        target = main or group.default_container
        return {target: variables} if target else {}

    def decorate(group: ReplicaGroup, index: int, pod: dict[str, Any]) -> None:
        if group.name != "Launcher":
            return
        pod_spec = pod["spec"]
        pod_spec.setdefault("volumes", []).append(
            {
                "name": "mpi-job-config",
                "configMap": {
                    "name": f"{name}-config",
                    "items": [
                        {"key": "hostfile", "path": "hostfile", "mode": 0o444},
                        {"key": "kubexec.sh", "path": "kubexec.sh", "mode": 0o555},
                    ],
                },
            }
        )
        for container in pod_spec.get("containers", []):
            if container.get("name") == (main or group.default_container):
                container.setdefault("volumeMounts", []).append({"name": "mpi-job-config", "mountPath": MPI_DIR})

    return config_map, env, decorate


def build_kubedl(kind: JobKind, job: dict[str, Any]) -> JobModel:
    assert isinstance(kind, kubedl.KubeDLKind)
    spec = job["spec"]
    identity = _identity(kind, job)
    groups = _kubedl_groups(kind, spec)
    total = sum(g.replicas for g in groups)
    extra: tuple[dict[str, Any], ...] = ()
    decoration = None
    env: Callable[[ReplicaGroup, int], Env] | None
    if kind.kind == "TFJob":
        env = _tf_env(job, groups)
    elif kind.kind == "PyTorchJob":
        env = _master_env(job, groups, rank_offset=True, local_master=True)
    elif kind.kind == "XGBoostJob":
        env = _master_env(job, groups, rank_offset=True, local_master=False)
    elif kind.kind == "MPIJob":
        config_map, env, decoration = _mpi_parts(job, spec, groups, identity)
        extra = (config_map,)
    elif kind.kind == "XDLJob":
        env = _xdl_env
    else:
        env = None
    labels = identity.pop("labels")
    return JobModel(
        **identity,
        groups=groups,
        run_policy=_kubedl_run_policy(kind, spec, total),
        success_rules=SUCCESS_RULES[kind.kind](spec, groups),
        labels=labels,
        env=env,
        extra_objects=extra,
        pod_decoration=decoration,
    )


# --- mlkube family --------------------------------------------------------------------------


def build_mxjob(kind: JobKind, job: dict[str, Any]) -> JobModel:
    spec = job["spec"]
    identity = _identity(kind, job)
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
                default_container=_default_container_name(template, mlkube.MXNET_CONTAINER),
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
                _var("DMLC_PS_ROOT_URI", child_name(name, "scheduler", 0)),
                _var("DMLC_PS_ROOT_PORT", str(as_int(scheduler.get("PsRootPort")) or mlkube.DEFAULT_PS_ROOT_PORT)),
                _var("DMLC_NUM_SERVER", str(counts.get("SERVER", 0))),
                _var("DMLC_NUM_WORKER", str(counts.get("WORKER", 0))),
                _var("DMLC_ROLE", group.object_name),
            ]
        }

    labels = identity.pop("labels")
    return JobModel(
        **identity,
        groups=tuple(groups),
        run_policy=RunPolicy(clean_pod_policy=CleanPodPolicy.RUNNING),
        success_rules=(_all("WORKER", "all workers succeeded"),),
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


ADAPTERS: dict[GroupVersionKind, Adapter] = {
    **{k.gvk: Adapter(k, build_kubedl) for k in kubedl.KINDS},
    mlkube.MXJOB.gvk: Adapter(mlkube.MXJOB, build_mxjob, project_mxjob),
}


def adapter_for(job: dict[str, Any]) -> Adapter | None:
    gvk = GroupVersionKind.from_object(job)
    return ADAPTERS.get(gvk) if gvk else None


__all__ = ["ADAPTERS", "Adapter", "Outcome", "adapter_for", "read_status"]
