"""The engine's status as a Volcano Job's ``status`` (phase, counts, conditions), and back."""

from __future__ import annotations

from typing import Any

from jobgate.rules.dicts import as_int

from ...clock import parse_time
from ...model import JobStatusModel

# Bookkeeping the lifecycle keeps in ``status.extra``, by the status field it is written to.
STATE_FIELDS = ("reason", "message", "lastTransitionTime")


COUNT_FIELDS = ("pending", "running", "succeeded", "failed", "terminating", "unknown")


def project_volcano_status(status: JobStatusModel, min_available: int | None = None) -> dict[str, Any]:
    extra = status.extra
    counts = extra.get("counts") or {}
    document: dict[str, Any] = {
        "state": {"phase": status.phase or "Pending", **{k: extra[k] for k in STATE_FIELDS if extra.get(k)}},
        "minAvailable": extra.get("minAvailable"),
        **{k: counts.get(k, 0) for k in COUNT_FIELDS},
        "version": status.run_version,
        "retryCount": status.restart_count,
        "taskStatusCount": extra.get("taskStatusCount") or None,
        "conditions": extra.get("conditions") or None,
        "runningDuration": extra.get("runningDuration"),
        "controlledResources": extra.get("controlledResources") or None,
        # jobgate's own bookkeeping (Volcano keeps it in memory; here it survives a restart)
        "startTime": status.start_time,
        "observedGeneration": status.observed_generation,
        "handledPods": status.restarting_pods or None,
        "knownPods": extra.get("knownPods") or None,
        "delayedActions": extra.get("delayedActions") or None,
        "childDigests": extra.get("childDigests") or None,
    }
    return {k: v for k, v in document.items() if v is not None}


def read_volcano_status(job: dict[str, Any]) -> JobStatusModel:
    raw = job.get("status") if isinstance(job.get("status"), dict) else {}
    state = raw.get("state") if isinstance(raw.get("state"), dict) else {}
    extra: dict[str, Any] = {k: state[k] for k in STATE_FIELDS if state.get(k)}
    if raw.get("state") is not None or raw.get("pending") is not None:
        extra["counts"] = {k: as_int(raw.get(k)) or 0 for k in COUNT_FIELDS}
    for key in (
        "taskStatusCount",
        "conditions",
        "runningDuration",
        "controlledResources",
        "knownPods",
        "minAvailable",
        "delayedActions",
        "childDigests",
    ):
        if raw.get(key) not in (None, {}, []):
            extra[key] = raw[key]
    # Volcano measures runningDuration from the job's creation; that is also the start when none was written.
    start = raw.get("startTime") or (job.get("metadata") or {}).get("creationTimestamp")
    return JobStatusModel(
        start_time=start if isinstance(start, str) and parse_time(start) is not None else None,
        restart_count=as_int(raw.get("retryCount")) or 0,
        restarting_pods=[str(u) for u in raw.get("handledPods") or []],
        observed_generation=as_int(raw.get("observedGeneration")),
        phase=state.get("phase") if isinstance(state.get("phase"), str) else None,
        run_version=as_int(raw.get("version")) or 0,
        extra=extra,
    )
