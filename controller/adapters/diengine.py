"""DIJob (``diengine.opendilab.org/v2alpha1``): DI-orchestrator's children, environment and phases.

Pods are ``<job>-<task>-<rank>`` (the task's name, its local rank) with ``restartPolicy: Never``;
a failed pod is recreated by the controller and counted against ``backoffLimit`` (once per
recreated pod). The global rank is fixed by task order: task 0's replicas come first. Every pod
gets ``hostname`` = its name and ``subdomain`` = the job's one headless Service ``di-<job>``
(port ``di-port`` 22270), so ``<pod>.di-<job>.<ns>.svc.cluster.local`` resolves. The job
succeeds when every replica of every task succeeded; it fails when a pod fails with the budget
spent. Like DI-orchestrator, the Service goes away when the job finishes; pods per
``cleanPodPolicy``.
"""

from __future__ import annotations

import copy
from typing import Any

from jobgate.engine.registry import GroupVersionKind, JobKind, lookup
from jobgate.rules.dicts import as_int

from ..model import (
    CleanPodPolicy,
    FinishRule,
    JobModel,
    JobStatusModel,
    ReplicaGroup,
    RestartMode,
    RunPolicy,
    Selector,
    child_name,
)
from .common import Adapter, Env, common_status_document, env_var, job_identity, read_status

DIJOB_GVK = GroupVersionKind("diengine.opendilab.org", "v2alpha1", "DIJob")

OPERATOR_NAME = "di-operator"
PORT_NAME, PORT = "di-port", 22270
SERVICE_DOMAIN = "svc.cluster.local"
# DI-orchestrator's default; the server itself is not part of jobgate.
DI_SERVER_URL = f"http://di-server.di-system.{SERVICE_DOMAIN}:8081"

LABEL_OPERATOR = "diengine/operator"
LABEL_JOB = "diengine/job"
LABEL_TASK_TYPE = "diengine/task-type"
LABEL_TASK_NAME = "diengine/task-name"
LABEL_POD = "diengine/pod"
ANNOTATION_REPLICAS = "diengine/replicas"
ANNOTATION_RANK = "diengine/rank"
ANNOTATION_TASK_RANK = "diengine/task-rank"
ANNOTATION_NODE = "diengine/node"


def service_name(job_name: str) -> str:
    return f"di-{job_name}"


def pod_fqdn(job_name: str, namespace: str, pod: str) -> str:
    return f"{pod}.{service_name(job_name)}.{namespace}.{SERVICE_DOMAIN}"


def task_nodes_variable(task_name: str) -> str:
    """``DI_<TASK>_NODES``: the task's name upper-cased, ``-`` as ``_``."""
    return "DI_" + task_name.upper().replace("-", "_") + "_NODES"


def _with_volumes(template: dict[str, Any], volumes: list[dict[str, Any]]) -> dict[str, Any]:
    """``spec.volumes`` appended to the pod template's own (a same-named template volume wins)."""
    if not volumes:
        return template
    result = copy.deepcopy(template)
    spec = result.setdefault("spec", {})
    own = spec.get("volumes") or []
    names = {v.get("name") for v in own if isinstance(v, dict)}
    spec["volumes"] = own + [copy.deepcopy(v) for v in volumes if v.get("name") not in names]
    return result


def build_dijob(kind: JobKind, job: dict[str, Any]) -> JobModel:
    spec = job["spec"]
    identity = job_identity(kind, job)
    name, namespace = identity["name"], identity["namespace"]
    volumes = [v for v in spec.get("volumes") or [] if isinstance(v, dict)]
    tasks = [t for t in spec.get("tasks") or [] if isinstance(t, dict) and isinstance(t.get("name"), str)]

    groups = []
    task_types: dict[str, str] = {}
    for task in tasks:
        task_types[task["name"]] = str(task.get("type") or "none")
        groups.append(
            ReplicaGroup(
                name=task["name"],
                replicas=as_int(task.get("replicas")) or 1,
                template=_with_volumes(task.get("template") or {}, volumes),
                restart=RestartMode.ON_FAILURE,
                default_container=None,
                controller_restarts=True,
            )
        )
    first_rank: dict[str, int] = {}
    total = 0
    for group in groups:
        first_rank[group.name] = total
        total += group.replicas
    fqdns = {g.name: [pod_fqdn(name, namespace, child_name(name, g.object_name, i)) for i in range(g.replicas)]
             for g in groups}  # fmt: skip
    all_nodes = ",".join(f for g in groups for f in fqdns[g.name])

    def env(group: ReplicaGroup, index: int) -> Env:
        same_type = [f for g in groups if task_types[g.name] == task_types[group.name] for f in fqdns[g.name]]
        return {
            "*": [
                env_var("DI_JOB_ID", f"{namespace}/{name}"),
                env_var("DI_SERVER_URL", DI_SERVER_URL),
                env_var("DI_RANK", str(first_rank[group.name] + index)),
                env_var("DI_NODES", all_nodes),
                env_var(task_nodes_variable(group.name), ",".join(same_type)),
            ]
        }

    job_labels = {LABEL_OPERATOR: OPERATOR_NAME, LABEL_JOB: name}

    def decorate(group: ReplicaGroup, index: int, pod: dict[str, Any]) -> None:
        metadata, pod_spec = pod["metadata"], pod["spec"]
        metadata["labels"].update(
            {**job_labels, LABEL_TASK_TYPE: task_types[group.name], LABEL_TASK_NAME: group.name,
             LABEL_POD: metadata["name"]}
        )  # fmt: skip
        metadata["annotations"].update(
            {
                ANNOTATION_REPLICAS: str(total),
                ANNOTATION_RANK: str(first_rank[group.name] + index),
                ANNOTATION_TASK_RANK: str(index),
                ANNOTATION_NODE: "",
            }
        )
        pod_spec["hostname"] = metadata["name"]
        pod_spec["subdomain"] = service_name(name)

    labels = identity.pop("labels")
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": service_name(name),
            "namespace": namespace,
            "labels": {**labels, **job_labels},
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
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,  # replicas find each other before they are ready
            "selector": job_labels,
            "ports": [{"name": PORT_NAME, "port": PORT, "targetPort": PORT}],
        },
    }
    success = FinishRule(tuple(Selector(g.name) for g in groups), "every replica of every task succeeded")
    return JobModel(
        **identity,
        groups=tuple(groups),
        run_policy=RunPolicy(
            clean_pod_policy=CleanPodPolicy(spec.get("cleanPodPolicy") or "Running"),
            backoff_limit=as_int(spec.get("backoffLimit")) if spec.get("backoffLimit") is not None else 3,
            stop_pods_over_limits=False,
        ),
        success_rules=(success,) if groups else (),
        labels=labels,
        env=env,
        extra_objects=(service,),
        pod_decoration=decorate,
        track_pods=True,
        finish_deletes_extra_services=True,
    )


# --- status ------------------------------------------------------------------------------------


def dijob_phase(status: JobStatusModel) -> str:
    """DI-orchestrator's phase: Pending until every pod exists, Starting until all run."""
    if status.is_true("Succeeded"):
        return "Succeeded"
    if status.is_true("Failed"):
        return "Failed"
    pods = [p for group in status.replica_pods.values() for p in group]
    all_exist = bool(pods) and all(p.phase not in ("Creating", "Deleted") for p in pods)
    if status.is_true("Restarting"):
        # DI: Restarting until no failed pod is left and every pod is back, then Starting.
        return "Starting" if all_exist and not any(p.phase == "Failed" for p in pods) else "Restarting"
    if pods and all(p.phase in ("Running", "Succeeded") for p in pods) and status.is_true("Running"):
        return "Running"
    if all_exist:
        return "Starting"
    return "Pending"


def project_dijob(status: JobStatusModel) -> dict[str, Any]:
    """The common status plus DI's ``phase``, ``replicas``, ``readyReplicas``, ``restarts``, ``taskStatus``."""
    document = common_status_document(status)
    pods = [p for group in status.replica_pods.values() for p in group]
    finished = status.finished
    task_status: dict[str, dict[str, int]] = {}
    for task, replicas in status.replica_pods.items():
        counts: dict[str, int] = {}
        for pod in replicas:
            if pod.phase in ("Creating", "Deleted"):
                continue  # no pod: DI counts only pods that exist
            counts[pod.phase] = counts.get(pod.phase, 0) + 1
        task_status[task] = counts
    document.update(
        phase=dijob_phase(status),
        replicas=len(pods),
        readyReplicas=0 if finished else sum(1 for p in pods if p.phase == "Running"),
        restarts=status.restart_count,
    )
    if status.completion_time:
        document["completionTimestamp"] = status.completion_time
    if not finished:  # DI-orchestrator clears it on a finished job
        document["taskStatus"] = task_status
    return document


def read_dijob_status(job: dict[str, Any]) -> JobStatusModel:
    """The common reader, falling back on DI's own ``restarts`` and ``completionTimestamp``."""
    status = read_status(job)
    raw = job.get("status") if isinstance(job.get("status"), dict) else {}
    if raw.get("restartCount") is None:
        status.restart_count = as_int(raw.get("restarts")) or 0
    if status.completion_time is None and isinstance(raw.get("completionTimestamp"), str):
        status.completion_time = raw["completionTimestamp"]
    return status


def _adapters() -> tuple[Adapter, ...]:
    kind = lookup(DIJOB_GVK)
    if kind is None:  # the family's rules are not part of this build
        return ()
    return (Adapter(kind, build_dijob, project_dijob, read_dijob_status, compare_projection=True),)


ADAPTERS = _adapters()
