"""OpenReports (``openreports.io/v1alpha1`` ``Report``) from the policies' audit, for Policy Reporter and
the other tools that read them.

Written only where the cluster serves the ``openreports.io`` CRDs (discovery, asked at each audit:
installing them later needs no restart), unless ``--no-openreports``. One namespaced ``Report`` per
violating job:

- named ``jobgate-<job uid>`` (never the UID alone, which Kyverno names its own report of the same
  object), in the job's namespace, labelled ``app.kubernetes.io/managed-by: jobgate``, owned by the
  job (``ownerReferences``): the garbage collector deletes it with the job;
- ``scope``: the job; ``source: jobgate``; ``summary``: its fail and warn counts;
- a result per finding: ``policy`` (``ClusterTrainingJobPolicy/<name>``, ``TrainingJobPolicy/<ns>/<name>``),
  ``rule`` (the rule id), ``result`` ``fail`` (Deny, Audit: scored) or ``warn`` (Warn: not scored),
  ``severity`` and ``category`` per constraint (:data:`SEVERITY`, :data:`CATEGORY`), ``message`` (the
  admission line), ``properties``: ``resultID`` (a hash of policy, rule, job uid and field: the same
  finding keeps it, so Policy Reporter does not notify twice), ``field``, ``enforcementAction``;
  ``timestamp``: when the finding was first seen (kept while it stays, so an unchanged report is equal).

Written only when it changed; a job that no longer violates anything has its report deleted. Bounded:
at most :data:`MAX_RESULTS` results per report (``configuration.limits.maxResults`` says so), messages
cut at 1,024 characters, and writes paced to ``writes_per_second`` (a first audit of 10,000
violating jobs takes minutes of writes, never a burst the apiserver must absorb at once).
"""

from __future__ import annotations

import datetime
import hashlib
import logging
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

from jobgate.kube.client import ApiError, Kube, Resource

log = logging.getLogger("jobgate.openreports")

GROUP = "openreports.io"
VERSION = "v1alpha1"
REPORTS = Resource(GROUP, VERSION, "reports", namespaced=True)
SOURCE = "jobgate"
MANAGED_BY = {"app.kubernetes.io/managed-by": "jobgate"}
MAX_RESULTS = 100
MAX_MESSAGE = 1024
PAGE = 500

# Severity per constraint: what a pod may do to its node is high; what a job may take from the
# cluster is medium; bookkeeping (labels, lifetimes, allow-lists) is low.
SEVERITY = {
    "policy/forbid-privileged": "high",
    "policy/forbid-hostnetwork": "high",
    "policy/forbid-hostpid": "high",
    "policy/forbid-hostipc": "high",
    "policy/forbid-hostpath": "high",
    "policy/image-registries": "high",
    "policy/max-gpus-per-job": "medium",
    "policy/max-gpus-per-pod": "medium",
    "policy/max-replicas-per-job": "medium",
    "policy/max-replicas-per-role": "medium",
    "policy/gpu-claim-unbounded": "medium",
    "policy/conflict": "medium",
}
CATEGORY = {
    "policy/forbid-privileged": "Pod security",
    "policy/forbid-hostnetwork": "Pod security",
    "policy/forbid-hostpid": "Pod security",
    "policy/forbid-hostipc": "Pod security",
    "policy/forbid-hostpath": "Pod security",
    "policy/image-registries": "Supply chain",
    "policy/max-gpus-per-job": "Resources",
    "policy/max-gpus-per-pod": "Resources",
    "policy/max-replicas-per-job": "Resources",
    "policy/max-replicas-per-role": "Resources",
    "policy/gpu-claim-unbounded": "Resources",
    "policy/allowed-queues": "Scheduling",
    "policy/allowed-priority-classes": "Scheduling",
    "policy/allowed-schedulers": "Scheduling",
    "policy/require-ttl": "Lifecycle",
    "policy/max-ttl": "Lifecycle",
    "policy/require-deadline": "Lifecycle",
    "policy/max-active-deadline": "Lifecycle",
    "policy/required-label": "Metadata",
}
DEFAULT_SEVERITY = "low"
DEFAULT_CATEGORY = "Training job policy"


def report_policy(policy: str) -> str:
    """A finding's policy (``ClusterTrainingJobPolicy gpu-caps``) as a report names it (``.../gpu-caps``)."""
    kind, _, name = policy.partition(" ")
    return f"{kind}/{name}" if name else policy


def result_id(policy: str, rule: str, uid: str, field: str) -> str:
    digest = hashlib.sha256("\x00".join((policy, rule, uid, field)).encode()).hexdigest()
    return digest[:32]


def report_name(job: Mapping[str, Any]) -> str:
    return f"jobgate-{(job.get('metadata') or {}).get('uid')}"


def _timestamp(moment: datetime.datetime) -> dict[str, int]:
    return {"seconds": int(moment.timestamp()), "nanos": 0}


def desired_report(
    job: Mapping[str, Any],
    findings: Iterable[Any],
    now: datetime.datetime,
    previous: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The Report of one violating job; ``previous``: the stored one, whose results keep their timestamps."""
    metadata = job.get("metadata") or {}
    uid = str(metadata.get("uid") or "")
    seen = {
        (r.get("properties") or {}).get("resultID"): r.get("timestamp")
        for r in (previous or {}).get("results") or []
        if isinstance(r, dict)
    }
    results: list[dict[str, Any]] = []
    for finding in findings:
        for policy in finding.policy.split(", "):
            name = report_policy(policy)
            rid = result_id(name, finding.rule, uid, finding.path)
            failed = finding.action != "Warn"
            results.append(
                {
                    "source": SOURCE,
                    "policy": name,
                    "rule": finding.rule,
                    "result": "fail" if failed else "warn",
                    "scored": failed,
                    "severity": SEVERITY.get(finding.rule, DEFAULT_SEVERITY),
                    "category": CATEGORY.get(finding.rule, DEFAULT_CATEGORY),
                    "message": finding.text()[:MAX_MESSAGE],
                    "properties": {"resultID": rid, "field": finding.path, "enforcementAction": finding.action},
                    "timestamp": seen.get(rid) or _timestamp(now),
                }
            )
    results.sort(key=lambda r: (r["policy"], r["rule"], r["properties"]["field"]))
    unique: dict[str, dict[str, Any]] = {}
    for result in results:
        unique.setdefault(result["properties"]["resultID"], result)
    results = list(unique.values())[:MAX_RESULTS]
    api_version, kind = str(job.get("apiVersion") or ""), str(job.get("kind") or "")
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Report",
        "metadata": {
            "name": report_name(job),
            "namespace": metadata.get("namespace"),
            "labels": dict(MANAGED_BY),
            "ownerReferences": [{"apiVersion": api_version, "kind": kind, "name": metadata.get("name"), "uid": uid}],
        },
        "scope": {
            "apiVersion": api_version,
            "kind": kind,
            "name": metadata.get("name"),
            "namespace": metadata.get("namespace"),
            "uid": uid,
        },
        "source": SOURCE,
        "configuration": {"limits": {"maxResults": MAX_RESULTS, "statusFilter": ["fail", "warn"]}},
        "summary": {
            "pass": 0,
            "fail": sum(r["result"] == "fail" for r in results),
            "warn": sum(r["result"] == "warn" for r in results),
            "error": 0,
            "skip": 0,
        },
        "results": results,
    }


_COMPARED = ("scope", "source", "configuration", "summary", "results")


def same_report(stored: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    if any(stored.get(key) != desired.get(key) for key in _COMPARED):
        return False
    metadata = stored.get("metadata") or {}
    wanted = desired["metadata"]
    owners = [(o.get("uid"), o.get("kind")) for o in metadata.get("ownerReferences") or []]
    labels = metadata.get("labels") or {}
    return owners == [(o["uid"], o["kind"]) for o in wanted["ownerReferences"]] and all(
        labels.get(k) == v for k, v in wanted["labels"].items()
    )


class Pacer:
    """At most ``rate`` writes a second (0: unpaced)."""

    def __init__(self, rate: float, clock: Any = time.monotonic, sleep: Any = time.sleep) -> None:
        self.interval = 1.0 / rate if rate > 0 else 0.0
        self.clock = clock
        self.sleep = sleep
        self.next_at = 0.0

    def wait(self) -> None:
        if not self.interval:
            return
        now = self.clock()
        if now < self.next_at:
            self.sleep(self.next_at - now)
            now = self.next_at
        self.next_at = now + self.interval


class ReportWriter:
    """Keeps one Report per violating job in step with the audit's findings."""

    def __init__(self, kube: Kube, *, namespace: str | None = None, writes_per_second: float = 20.0) -> None:
        self.kube = kube
        self.namespace = namespace
        self.pacer = Pacer(writes_per_second)
        self.writes = 0
        self._lock = threading.Lock()
        self._announced: bool | None = None

    def served(self) -> bool:
        try:
            served = self.kube.serves(GROUP, VERSION, REPORTS.plural)
        except ApiError as exc:
            log.warning("OpenReports not written: discovery of %s failed: %s", GROUP, exc)
            return False
        if served != self._announced:
            self._announced = served
            if served:
                log.info("OpenReports on: writing a Report per violating job (%s/%s)", GROUP, VERSION)
            else:
                log.info("OpenReports off: the %s CRDs are not served", GROUP)
        return served

    def stored(self) -> dict[tuple[str, str], dict[str, Any]]:
        """jobgate's Reports, by (namespace, name)."""
        found: dict[tuple[str, str], dict[str, Any]] = {}
        token = ""
        selector = ",".join(f"{k}={v}" for k, v in MANAGED_BY.items())
        while True:
            query: dict[str, Any] = {"limit": PAGE, "labelSelector": selector}
            if token:
                query["continue"] = token
            page = self.kube.get(REPORTS.path(self.namespace), **query)
            for item in page.get("items") or []:
                metadata = item.get("metadata") or {}
                found[(metadata.get("namespace", ""), metadata.get("name", ""))] = item
            token = (page.get("metadata") or {}).get("continue") or ""
            if not token:
                return found

    def sync(self, violating: Mapping[str, tuple[Mapping[str, Any], list[Any]]], now: datetime.datetime) -> None:
        """Create, update or delete Reports so that exactly the violating jobs (by key) have one."""
        with self._lock:
            stored = self.stored()
            wanted: set[tuple[str, str]] = set()
            for job, findings in violating.values():
                if not (job.get("metadata") or {}).get("uid"):
                    continue  # no owner to hang it on (never the case for a stored job)
                namespace = (job.get("metadata") or {}).get("namespace", "")
                key = (namespace, report_name(job))
                wanted.add(key)
                previous = stored.get(key)
                desired = desired_report(job, findings, now, previous)
                if previous is None:
                    self._write("POST", REPORTS.path(namespace), desired)
                elif not same_report(previous, desired):
                    body = {**desired, "metadata": {**previous["metadata"], **desired["metadata"]}}
                    self._write("PUT", REPORTS.path(namespace, key[1]), body)
            for key in sorted(set(stored) - wanted):
                self._write("DELETE", REPORTS.path(key[0], key[1]), None)

    def _write(self, method: str, path: str, body: dict[str, Any] | None) -> None:
        self.pacer.wait()
        self.writes += 1
        try:
            if method == "POST":
                self.kube.create(path, body)  # type: ignore[arg-type]
            elif method == "PUT":
                self.kube.replace(path, body)  # type: ignore[arg-type]
            else:
                self.kube.request("DELETE", path)
        except ApiError as exc:
            # A job deleted meanwhile (its report with it), a conflict: the next audit sets it right.
            log.info("OpenReports %s %s: %s", method, path, exc)
