"""T9k GenericJob (``batch.tensorstack.dev/v1beta1``): finish rules, per-type restarts, run modes.

Pods are ``<job>-<type>-<rank>`` with ``restartPolicy: Never``: the controller recreates a failed
pod while its type's ``restartPolicy.limit`` lasts (``Never`` policy: not at all). A replica is
failed for the finish rules when its pod failed and no restart is left. Success and failure are
decided only by ``successRules``/``failureRules`` (any rule; every listed replica); the admission
webhook writes the default rules out, and a job whose replicas have all finished without any
rule being met fails (reason ``NoRuleMet``) instead of waiting forever.
"""

from __future__ import annotations

import json
from typing import Any

from jobgate.engine.registry import GroupVersionKind, JobKind, lookup
from jobgate.families.t9k.rules import MAX_WRITTEN_RULE_REPLICAS
from jobgate.rules.dicts import as_int

from ..model import (
    CleanPodPolicy,
    Condition,
    FinishRule,
    JobModel,
    JobStatusModel,
    Outcome,
    ReplicaCounts,
    ReplicaGroup,
    ReplicaPod,
    RestartMode,
    RunPolicy,
    Selector,
)
from ..runmodes import apply_override, debug_override, resume_override
from ..substitution import SubstitutionContext, substitute_pod
from .common import (
    Adapter,
    common_status_document,
    default_container_name,
    job_identity,
    read_status,
)

GENERICJOB_GVK = GroupVersionKind("batch.tensorstack.dev", "v1beta1", "GenericJob")

CLEAN_UP_POLICIES = {"None": CleanPodPolicy.NONE, "Unfinished": CleanPodPolicy.RUNNING, "All": CleanPodPolicy.ALL}

# The engine's condition types and T9k's (the T9k reference's names on the right).
T9K_CONDITION = {
    "Created": "Initialized",
    "Running": "Running",
    "Restarting": "ReplicaFailure",
    "Succeeded": "Completed",
    "Failed": "Failed",
    "Paused": "Paused",
}
ENGINE_CONDITION = {v: k for k, v in T9K_CONDITION.items()}

AGGREGATE_PHASES = ("creating", "pending", "running", "succeeded", "failed", "unknown", "deleted")


def rule_text(rule: dict[str, Any]) -> str:
    """A finish rule as T9k prints it: ``{ "worker": [0] }``."""
    parts = [f"{json.dumps(str(t))}: [{', '.join(str(i) for i in indices)}]" for t, indices in rule.items()]
    return "{ " + ", ".join(parts) + " }"


def _finish_rule(rule: dict[str, Any], outcome: Outcome, description: str) -> FinishRule:
    selectors = tuple(
        Selector(str(replica_type), tuple(int(i) for i in indices), outcome)
        for replica_type, indices in rule.items()
        if isinstance(indices, list)
    )
    return FinishRule(selectors, description)


def _rules(spec: dict[str, Any], counts: dict[str, int]) -> tuple[tuple[FinishRule, ...], tuple[FinishRule, ...]]:
    success_raw = [r for r in spec.get("successRules") or [] if isinstance(r, dict) and r]
    failure_raw = [r for r in spec.get("failureRules") or [] if isinstance(r, dict) and r]
    if not success_raw and not failure_raw:
        if sum(counts.values()) > MAX_WRITTEN_RULE_REPLICAS:
            return _unlisted_default_rules(counts)
        # Not defaulted (webhook bypassed): the same rules the webhook writes out.
        success_raw = [{t: list(range(n)) for t, n in counts.items() if n > 0}]
        failure_raw = [{t: [i]} for t, n in counts.items() for i in range(n)]
    success = tuple(_finish_rule(r, Outcome.SUCCEEDED, f"rule {rule_text(r)}") for r in success_raw)
    failed = "The job is failed with rule: "
    failure = tuple(_finish_rule(r, Outcome.FAILED, failed + rule_text(r)) for r in failure_raw)
    return success, failure


def _unlisted_default_rules(counts: dict[str, int]) -> tuple[tuple[FinishRule, ...], tuple[FinishRule, ...]]:
    """The default rules for a job too large for the webhook to list them: the same meaning, no index lists.

    Listing every index of a job with millions of replicas would cost gigabytes on every pass.
    """
    groups = [t for t, n in counts.items() if n > 0]
    success = FinishRule(
        tuple(Selector(t, None, Outcome.SUCCEEDED) for t in groups),
        "rule { " + ", ".join(f"{json.dumps(t)}: [all]" for t in groups) + " }",
    )
    failure = tuple(
        FinishRule(
            (Selector(t, None, Outcome.FAILED, at_least=1),),
            "The job is failed with rule: { " + json.dumps(t) + ": [any] }",
        )
        for t in groups
    )
    return (success,), failure


def _was_paused(job: dict[str, Any]) -> bool:
    """The job has been paused before: pods made from now on are resumed pods."""
    return read_genericjob_status(job).condition("Paused") is not None


def build_genericjob(kind: JobKind, job: dict[str, Any]) -> JobModel:
    spec = job["spec"]
    identity = job_identity(kind, job)
    run_mode = spec.get("runMode") if isinstance(spec.get("runMode"), dict) else {}
    pause = run_mode.get("pause") if isinstance(run_mode.get("pause"), dict) else {}
    resumed = _was_paused(job)
    service = spec.get("service") if isinstance(spec.get("service"), dict) else None
    service_ports = tuple(p for p in (service or {}).get("ports") or [] if isinstance(p, dict))

    groups = []
    for replica in spec.get("replicaSpecs") or []:
        if not isinstance(replica, dict) or not isinstance(replica.get("type"), str):
            continue
        replica_type = replica["type"]
        template = replica.get("template") or {}
        debug = debug_override(run_mode, replica_type)
        resume = resume_override(run_mode, replica_type) if resumed else None
        if debug is not None:
            template = apply_override(template, debug, replace_args=True)
        elif resume is not None:
            template = apply_override(template, resume, replace_args=False)
        restart = replica.get("restartPolicy") if isinstance(replica.get("restartPolicy"), dict) else {}
        groups.append(
            ReplicaGroup(
                name=replica_type,
                replicas=as_int(replica.get("replicas")) if replica.get("replicas") is not None else 1,
                template=template,
                restart=RestartMode(restart.get("policy") or "OnFailure"),
                default_container=default_container_name(template, ""),
                controller_restarts=True,
                restart_limit=as_int(restart.get("limit")) or 0,
                service_ports=service_ports if service is not None else (),
            )
        )
    counts = {g.name: g.replicas for g in groups}
    success, failure = _rules(spec, counts)
    ports = {str(p["name"]): int(p["port"]) for p in service_ports if p.get("name") and p.get("port") is not None}
    name, namespace = identity["name"], identity["namespace"]

    def decorate(group: ReplicaGroup, index: int, pod: dict[str, Any]) -> None:
        context = SubstitutionContext(
            name, namespace, group.name, index, counts, ports if service is not None else None
        )
        substitute_pod(pod, context)

    labels = identity.pop("labels")
    return JobModel(
        **identity,
        groups=tuple(groups),
        run_policy=RunPolicy(clean_pod_policy=CLEAN_UP_POLICIES.get(spec.get("cleanUpPolicy"), CleanPodPolicy.NONE)),
        success_rules=success,
        failure_rules=failure,
        fail_on_permanent_failure=False,
        paused=bool(pause.get("enabled")),
        track_pods=True,
        labels=labels,
        pod_decoration=decorate,
    )


# --- status ------------------------------------------------------------------------------------


def genericjob_phase(status: JobStatusModel) -> str:
    if status.is_true("Succeeded"):
        return "Succeeded"
    if status.is_true("Failed"):
        return "Failed"
    if status.is_true("Paused"):
        return "Paused"
    paused = status.condition("Paused")
    if paused is not None and not status.is_true("Running"):
        return "Resuming"  # resumed, pods not all running yet
    if status.is_true("Running") or status.is_true("Restarting"):
        return "Running"
    return "Pending"


def project_genericjob(status: JobStatusModel) -> dict[str, Any]:
    """T9k's status: phase, its condition types, ``tasks[]`` and ``aggregate``, and the engine's bookkeeping."""
    conditions = []
    for c in status.conditions:
        conditions.append(
            {
                "type": T9K_CONDITION.get(c.type, c.type),
                "status": c.status,
                "reason": c.reason,
                "message": c.message,
                "lastUpdateTime": c.last_update_time,
                "lastTransitionTime": c.last_transition_time,
            }
        )
    failed = status.condition("Failed")
    if failed is not None and failed.status == "True":
        # T9k's example: a failed job is also Completed=False with the same reason and message.
        conditions.append(
            {
                "type": "Completed",
                "status": "False",
                "reason": failed.reason,
                "message": failed.message,
                "lastUpdateTime": failed.last_update_time,
                "lastTransitionTime": failed.last_transition_time,
            }
        )
    aggregate = dict.fromkeys(AGGREGATE_PHASES, 0)
    tasks = []
    for group, pods in status.replica_pods.items():
        for pod in pods:
            phase = pod.phase.lower()
            aggregate[phase if phase in aggregate else "unknown"] += 1
        tasks.append(
            {
                "type": group,
                "restartCount": status.group_restarts.get(group, 0),
                "replicas": [
                    {"name": p.name, "rank": p.index, **({"uid": p.uid} if p.uid else {}), "phase": p.phase}
                    | {"restartCount": p.restarts}
                    | ({"containers": [{"name": n, "state": st} for n, st in p.containers]} if p.containers else {})
                    for p in pods
                ],
            }
        )
    document: dict[str, Any] = {
        "phase": genericjob_phase(status),
        "conditions": conditions,
        "tasks": tasks,
        "aggregate": aggregate,
        "startTime": status.start_time,
        "completionTime": status.completion_time,
        "lastReconcileTime": status.last_reconcile_time,
        "restartCount": status.restart_count,
        "completedIndices": status.completed_indices or None,
        "replicaStatuses": common_status_document(status).get("replicaStatuses"),
        "observedGeneration": status.observed_generation,
        "replicaSummary": status.replica_summary,
    }
    return {k: v for k, v in document.items() if v is not None}


def _replica_pod(index: int, raw: dict[str, Any]) -> ReplicaPod:
    containers = tuple(
        (str(c.get("name", "")), c.get("state") or {}) for c in raw.get("containers") or [] if isinstance(c, dict)
    )
    restarts = as_int(raw.get("restartCount")) or 0
    return ReplicaPod(
        index, str(raw.get("name", "")), str(raw.get("uid") or ""), str(raw.get("phase", "")), restarts, containers
    )


def read_genericjob_status(job: dict[str, Any]) -> JobStatusModel:
    """The inverse of ``project_genericjob``: T9k's condition types back to the engine's."""
    status = read_status(job)
    conditions: list[Condition] = []
    for c in status.conditions:
        if c.type == "Completed" and c.status != "True":
            continue  # the companion of Failed, written by project_genericjob
        conditions.append(
            Condition(
                ENGINE_CONDITION.get(c.type, c.type),
                c.status,
                c.reason,
                c.message,
                c.last_update_time,
                c.last_transition_time,
            )
        )
    status.conditions = conditions
    raw = job.get("status") if isinstance(job.get("status"), dict) else {}
    derived: dict[str, list[int]] = {}
    for task in raw.get("tasks") or []:
        if isinstance(task, dict) and isinstance(task.get("type"), str):
            restarts = as_int(task.get("restartCount"))
            if restarts:
                status.group_restarts[task["type"]] = restarts
            replicas = task.get("replicas") if isinstance(task.get("replicas"), list) else []
            done = [i for i, r in enumerate(replicas) if isinstance(r, dict) and r.get("phase") == "Succeeded"]
            if done:
                derived[task["type"]] = done
            status.replica_pods[task["type"]] = [
                _replica_pod(i, r) for i, r in enumerate(replicas) if isinstance(r, dict)
            ]
    # tasks[].replicas lists every rank in order, so it also remembers which ranks succeeded.
    for group, indices in derived.items():
        status.completed_indices[group] = sorted(set(status.completed_indices.get(group, [])) | set(indices))
    if not raw.get("restartCount"):
        status.restart_count = sum(status.group_restarts.values())
    _derive_counts(status, counts=raw.get("replicaStatuses") is None, summary=raw.get("replicaSummary") is None)
    return status


def _derive_counts(status: JobStatusModel, *, counts: bool, summary: bool) -> None:
    """replicaStatuses and replicaSummary as the engine computes them, from the replicas' phases,
    for a status schema that does not keep them (T9k's own shape has neither)."""
    parts = []
    for group, pods in status.replica_pods.items():
        phases = [p.phase for p in pods]
        if counts:
            status.replica_statuses[group] = ReplicaCounts(
                active=sum(phase in ("Pending", "Running", "Unknown", "Creating") for phase in phases),
                succeeded=phases.count("Succeeded"),
                failed=phases.count("Failed"),
            )
        parts.append(f"{group} {phases.count('Running')}/{len(phases)}")
    if summary and parts:
        status.replica_summary = ", ".join(parts)


def _adapters() -> tuple[Adapter, ...]:
    kind = lookup(GENERICJOB_GVK)
    if kind is None:  # the family's rules are not part of this build
        return ()
    return (Adapter(kind, build_genericjob, project_genericjob, read_genericjob_status),)


ADAPTERS = _adapters()
