"""What every family adapter shares: the Adapter record, job identity, status read and write.

Adapters never default anything themselves: they run the rule engine's ``default`` on the
job they are given (the stored object is normally defaulted already; this makes the
controller right even for objects created while the webhook was bypassed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jobgate.engine.registry import GroupVersionKind, JobKind
from jobgate.rules.dicts import as_int, container_named, containers_of

from ..model import (
    Condition,
    FinishRule,
    JobModel,
    JobStatusModel,
    ReplicaCounts,
    Selector,
)

JOB_UID_LABEL = "jobgate.dev/job-uid"
Env = dict[str, list[dict[str, Any]]]


def env_var(name: str, value: str) -> dict[str, str]:
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
    # The inverse of ``project``: a family with its own status shape (T9k) reads it back here.
    read: Callable[[dict[str, Any]], JobStatusModel] = read_status
    # A family whose stored status cannot carry everything the engine compares (DIJob keeps no
    # per-pod list) decides "changed" on the projected document instead.
    compare_projection: bool = False

    @property
    def gvk(self) -> GroupVersionKind:
        return self.kind.gvk

    def projection_unchanged(self, job: dict[str, Any], status: JobStatusModel) -> bool:
        """The status document ``status`` projects to is the one stored (its reconcile time aside)."""
        if not self.compare_projection:
            return False
        stored = job.get("status") if isinstance(job.get("status"), dict) else {}
        new = self.project(status)
        return {k: v for k, v in new.items() if k != "lastReconcileTime"} == {
            k: v for k, v in stored.items() if k != "lastReconcileTime"
        }

    def model(self, job: dict[str, Any]) -> JobModel:
        return self.build(self.kind, self.kind.default(job))


def job_identity(kind: JobKind, job: dict[str, Any]) -> dict[str, Any]:
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


def default_container_name(template: Any, preferred: str) -> str | None:
    if container_named(template, preferred) is not None:
        return preferred
    containers = containers_of(template)
    name = containers[0].get("name") if containers else None
    return name if isinstance(name, str) else None


def all_succeeded(group: str, description: str) -> FinishRule:
    return FinishRule((Selector(group),), description)
