"""The KubeDL family (``training.kubedl.io``): TFJob, PyTorchJob, XGBoostJob, MPIJob, XDLJob, MarsJob."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from jobgate.engine.registry import JobKind
from jobgate.families.kubedl import rules as kubedl
from jobgate.rules.dicts import as_int, container_named, container_port

from ..engine import ceil_fraction
from ..model import (
    CleanPodPolicy,
    FinishRule,
    JobModel,
    ReplicaGroup,
    RestartMode,
    RunPolicy,
    Selector,
    child_name,
)
from .common import (
    Adapter,
    Env,
    all_succeeded,
    default_container_name,
    env_var,
    job_identity,
)


def _kubedl_groups(kind: kubedl.KubeDLKind, spec: dict[str, Any]) -> tuple[ReplicaGroup, ...]:
    replicas = spec.get(kind.replicas_field) or {}
    groups = []
    for role in kind.roles:  # the kind's own order: e.g. PS before Worker, Launcher before Worker
        replica = replicas.get(role.name)
        if not isinstance(replica, dict):
            continue
        count = as_int(replica.get("replicas")) or 0
        template = replica.get("template") or {}
        container = default_container_name(template, kind.container)
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


def _tf_success(spec: dict[str, Any], groups: tuple[ReplicaGroup, ...]) -> tuple[FinishRule, ...]:
    names = {g.name for g in groups}
    for leader in ("Chief", "Master"):
        if leader in names:
            return (all_succeeded(leader, f"the {leader} succeeded"),)
    if spec.get("successPolicy") == "AllWorkers":
        return (all_succeeded("Worker", "all workers succeeded"),)
    worker_zero = FinishRule((Selector("Worker", (0,)),), "worker 0 succeeded")
    return (worker_zero, all_succeeded("Worker", "all workers succeeded"))


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
    "PyTorchJob": lambda spec, groups: (all_succeeded("Master", "the Master succeeded"),),
    "XGBoostJob": lambda spec, groups: (all_succeeded("Master", "the Master succeeded"),),
    "MPIJob": lambda spec, groups: (all_succeeded("Launcher", "the Launcher succeeded"),),
    "XDLJob": _xdl_success,
    "MarsJob": lambda spec, groups: (all_succeeded("Worker", "all workers succeeded"),),
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
        return {group.default_container: [env_var("TF_CONFIG", json.dumps(config, separators=(",", ":")))]}

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
        variables = [env_var("MASTER_ADDR", address), env_var("WORLD_SIZE", str(world)), env_var("RANK", str(rank))]
        if port is not None:
            variables.insert(0, env_var("MASTER_PORT", str(port)))
        variables.append(env_var("PYTHONUNBUFFERED", "0"))
        return {"*": variables}

    return env


def _xdl_env(group: ReplicaGroup, index: int) -> Env:
    if group.default_container is None:
        return {}
    return {group.default_container: [env_var("TASK_NAME", group.object_name), env_var("TASK_INDEX", str(index))]}


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
    variables = [env_var(var, f"{MPI_DIR}/{file}") for var, file in MPI_ENV.get(distribution, MPI_ENV["OpenMPI"])]

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
    identity = job_identity(kind, job)
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


ADAPTERS = tuple(Adapter(k, build_kubedl) for k in kubedl.KINDS)
