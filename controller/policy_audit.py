"""The policies' audit of jobs already stored: what a tightened policy now finds, never blocking.

A policy written after a job was admitted does not refuse the job's later updates by default
(``existingViolations: Allow``), so its controller keeps working; but users must see what now
violates it. On every change of a policy or a namespace (and every ``interval`` seconds) the
leading controller lists the stored jobs of the kinds it serves, judges each against its
effective policy exactly as the webhook would judge it as stored (``jobgate.policy.check``), and
- writes each policy's ``status``: ``totalViolations``, the first ``CAP`` violating jobs,
  ``matchedNamespaces``, ``observedGeneration`` and a ``Ready`` (and ``Conflict``) condition,
  only when it changed;
- emits one Warning Event per violating job and policy, when the violation is first seen (not at
  every audit; again only after it went away and came back);
- exports ``jobgate_policy_violations{policy}``.

Jobs are listed at each audit rather than cached: the audit needs whole jobs (pod templates,
resources) that the reconciler's caches need not keep, and it runs minutes apart.

Where the cluster serves OpenReports' CRDs, each violating job also gets a ``Report``
(:mod:`.openreports`); TrainingJobPolicyExceptions are honoured and their status written
(:mod:`.exception_audit`).
"""

from __future__ import annotations

import datetime
import logging
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from prometheus_client import Gauge

from jobgate.engine.registry import JobKind
from jobgate.engine.views import namespace_labels
from jobgate.kube.client import ApiError, Kube, Resource
from jobgate.kube.informer import Informer
from jobgate.policy.check import policy_findings
from jobgate.policy.models import GROUP, VERSION
from jobgate.policy.resolve import PolicySet, conflicts, effective_policy, policy_ref
from jobgate.policy.resources import CLUSTER_POLICIES, NAMESPACES, POLICIES

from .exception_audit import (
    Coverage,
    ExceptionStatusWriter,
    exceptions_informer,
    next_expiry,
    same_status,
)
from .openreports import ReportWriter

log = logging.getLogger("jobgate.policy_audit")

CAP = 20  # violating jobs listed in a policy's status (the total is always exact)
# Findings about a constraint's reach, not a job's fault: shown at admission, not counted here. The
# audit has no view of DRA objects: a claim it cannot read is not a stored job's violation.
NOT_VIOLATIONS = frozenset(("policy/not-applicable", "policy/gpu-uncounted", "policy/gpu-claim-unknown"))
PAGE = 500

VIOLATIONS = Gauge("jobgate_policy_violations", "Stored jobs violating each policy.", ["policy"])


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def policy_name(policy: Mapping[str, Any]) -> str:
    """How findings name a policy (``ClusterTrainingJobPolicy x``, ``TrainingJobPolicy ns/x``)."""
    return str(policy_ref(policy))


class Violations:
    """One audit's result: by policy name, the violating jobs (key, entry for the status)."""

    def __init__(self) -> None:
        self.by_policy: dict[str, dict[str, dict[str, Any]]] = {}
        # By job key: the job and its findings (the OpenReports of :mod:`.openreports`).
        self.jobs: dict[str, tuple[Mapping[str, Any], list[Any]]] = {}

    def add(self, policy: str, job: Mapping[str, Any], message: str) -> None:
        metadata = job.get("metadata") or {}
        key = f"{metadata.get('uid') or metadata.get('namespace')}/{metadata.get('name')}"
        entries = self.by_policy.setdefault(policy, {})
        if key in entries:
            entries[key]["message"] = f"{entries[key]['message']}; {message}"[:4096]
            return
        entries[key] = {
            "namespace": metadata.get("namespace", ""),
            "name": metadata.get("name", ""),
            "kind": job.get("kind", ""),
            "apiVersion": job.get("apiVersion", ""),
            "message": message[:4096],
        }


def audit(
    jobs: Iterable[tuple[JobKind, Mapping[str, Any]]],
    policies: list[Mapping[str, Any]],
    namespaces: Mapping[str, Mapping[str, str]],
    coverage: Coverage | None = None,
) -> Violations:
    """Every stored job judged against its effective policy, as the webhook would judge it stored;
    what the exceptions in force (``coverage``) waive is not a violation."""
    found = Violations()
    for kind, job in jobs:
        metadata = job.get("metadata") or {}
        namespace = metadata.get("namespace") or "default"
        labels = namespace_labels(namespace, namespaces.get(namespace))
        effective = effective_policy(policies, namespace, labels, job)
        if not effective.policies:
            continue
        findings = policy_findings(dict(job), None, kind.family, effective)
        if coverage is not None and findings:
            findings = coverage.waive(findings, policies, job, kind.family, effective)
        for finding in findings:
            if finding.rule in NOT_VIOLATIONS:
                continue
            for name in finding.policy.split(", "):
                found.add(name, job, finding.text())
            found.jobs.setdefault(str((job.get("metadata") or {}).get("uid")), (job, []))[1].append(finding)
    return found


def policy_status(
    policy: Mapping[str, Any], violations: Mapping[str, dict[str, Any]], matched: int, conflict: str | None
) -> dict[str, Any]:
    """The status the audit writes; the conditions keep their transition times while unchanged."""
    entries = sorted(violations.values(), key=lambda v: (v["namespace"], v["kind"], v["name"]))
    generation = (policy.get("metadata") or {}).get("generation")
    old_conditions = {c.get("type"): c for c in (policy.get("status") or {}).get("conditions") or []}

    def condition(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
        old = old_conditions.get(kind) or {}
        unchanged = old.get("status") == status and old.get("reason") == reason
        entry = {"type": kind, "status": status, "reason": reason, "message": message}
        entry["lastTransitionTime"] = old.get("lastTransitionTime") if unchanged else _now()
        if generation is not None:
            entry["observedGeneration"] = generation
        return entry

    conditions = [condition("Ready", "True", "Audited", f"{len(entries)} stored jobs violate the policy")]
    if conflict is not None:
        conditions.append(condition("Conflict", "True", "Conflict", conflict))
    status: dict[str, Any] = {
        "conditions": conditions,
        "matchedNamespaces": matched,
        "totalViolations": len(entries),
        "violations": entries[:CAP],
    }
    if generation is not None:
        status["observedGeneration"] = generation
    return status


class PolicyAudit:
    """The leader's audit loop: informers of the policies and namespaces, jobs listed per audit."""

    def __init__(
        self,
        kube: Kube,
        kinds: list[JobKind],
        *,
        interval: float = 300.0,
        namespace: str | None = None,
        openreports: bool = True,
        report_writes_per_second: float = 20.0,
    ) -> None:
        self.kube = kube
        self.kinds = kinds
        self.interval = interval
        self.namespace = namespace
        self.informers = {
            "cluster": Informer(kube, CLUSTER_POLICIES.path(), name="audit-clustertrainingjobpolicies"),
            "namespaced": Informer(kube, POLICIES.path(), name="audit-trainingjobpolicies"),
            "namespaces": Informer(kube, NAMESPACES.path(), name="audit-namespaces"),
        }
        self.changed = threading.Event()
        self.stopped = threading.Event()
        self.seen: set[tuple[str, str]] = set()  # (policy, job key) pairs an Event was sent for
        self.audits = 0
        for informer in self.informers.values():
            informer.handlers.append(self._on_change)
        self._thread: threading.Thread | None = None
        self.exception_status: ExceptionStatusWriter | None = None
        # OpenReports, where the cluster serves them (asked at each audit) and not turned off.
        self.reports = (
            ReportWriter(kube, namespace=namespace, writes_per_second=report_writes_per_second) if openreports else None
        )

    def _on_change(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        # A status the audit itself wrote changes nothing it judges: only spec, labels and presence.
        if event == "MODIFIED" and old is not None:
            same_spec = obj.get("spec") == old.get("spec")
            same_labels = (obj.get("metadata") or {}).get("labels") == (old.get("metadata") or {}).get("labels")
            if same_spec and same_labels:
                return
        self.changed.set()

    def start(self) -> bool:
        """Start when the policy CRDs are served; False (and a log line) when they are not."""
        try:
            served = self.kube.serves(GROUP, VERSION, CLUSTER_POLICIES.plural, POLICIES.plural)
        except ApiError as exc:
            log.warning("policy audit off: discovery of %s failed: %s", GROUP, exc)
            return False
        if not served:
            log.info("policy audit off: the %s CRDs are not served", GROUP)
            return False
        exceptions = exceptions_informer(self.kube, self._on_change)
        if exceptions is not None:
            self.informers["exceptions"] = exceptions
            self.exception_status = ExceptionStatusWriter(self.kube)
        for informer in self.informers.values():
            informer.start()
        self._thread = threading.Thread(target=self._loop, name="policy-audit", daemon=True)
        self._thread.start()
        return True

    def stop(self) -> None:
        self.stopped.set()
        self.changed.set()
        for informer in self.informers.values():
            informer.stop()

    def _loop(self) -> None:
        for informer in self.informers.values():
            informer.synced.wait()
        while not self.stopped.is_set():
            self.changed.clear()
            try:
                self.run_once()
            except Exception:  # a failed audit is retried at the next change or period
                log.exception("policy audit failed")
            self.changed.wait(self._until_next_audit())
            # Several changes in a row (kubectl apply -f dir/) give one audit.
            self.stopped.wait(0.5)

    def _until_next_audit(self) -> float:
        """The period, or less: an exception expiring sooner makes the jobs it covered count again."""
        informer = self.informers.get("exceptions")
        if informer is None:
            return self.interval
        expiry = next_expiry(informer.items(), datetime.datetime.now(datetime.UTC))
        return self.interval if expiry is None else max(1.0, min(self.interval, expiry + 1.0))

    def jobs(self) -> Iterator[tuple[JobKind, dict[str, Any]]]:
        for kind in self.kinds:
            gvk = kind.gvk
            resource = Resource(gvk.group, gvk.version, kind.plural, namespaced=True)
            token = ""
            while True:
                query: dict[str, Any] = {"limit": PAGE}
                if token:
                    query["continue"] = token
                try:
                    page = self.kube.get(resource.path(self.namespace), **query)
                except ApiError as exc:
                    if exc.status == 404:  # a kind whose CRD is not installed
                        break
                    raise
                for item in page.get("items") or []:
                    item.setdefault("apiVersion", gvk.api_version)
                    item.setdefault("kind", gvk.kind)
                    yield kind, item
                token = (page.get("metadata") or {}).get("continue") or ""
                if not token:
                    break

    def run_once(self) -> Violations:
        policies = [*self.informers["cluster"].items(), *self.informers["namespaced"].items()]
        namespaces = {
            (n.get("metadata") or {}).get("name", ""): (n.get("metadata") or {}).get("labels") or {}
            for n in self.informers["namespaces"].items()
        }
        # One set per audit: jobs of a namespace that select the same policies share one resolution.
        exceptions = self.informers.get("exceptions")
        coverage = Coverage(exceptions.items()) if exceptions is not None else None
        found = audit(self.jobs(), PolicySet(policies), namespaces, coverage)
        clashes: dict[str, list[str]] = {}
        for clash in conflicts(policies, namespaces):
            for ref in clash.policies:
                clashes.setdefault(str(ref), []).append(clash.message)
        for policy in policies:
            name = policy_name(policy)
            violations = found.by_policy.get(name, {})
            matched = sum(
                1
                for ns, labels in namespaces.items()
                if effective_policy([policy], ns, namespace_labels(ns, labels), None).policies
            )
            status = policy_status(policy, violations, matched, "; ".join(clashes[name]) if name in clashes else None)
            VIOLATIONS.labels(name).set(len(violations))
            if not same_status(policy.get("status"), status):
                self._write_status(policy, status)
            self._events(name, violations)
        if coverage is not None and self.exception_status is not None:
            self.exception_status.write(coverage)
        if self.reports is not None and self.reports.served():
            self.reports.sync(found.jobs, datetime.datetime.now(datetime.UTC))
        self.audits += 1
        return found

    def _write_status(self, policy: Mapping[str, Any], status: dict[str, Any]) -> None:
        metadata = policy.get("metadata") or {}
        resource = POLICIES if policy.get("kind") == "TrainingJobPolicy" else CLUSTER_POLICIES
        path = resource.path(metadata.get("namespace") if resource.namespaced else None, metadata["name"], "status")
        body = {**policy, "status": status}
        try:
            self.kube.replace(path, body)
        except ApiError as exc:
            # A conflict (the policy changed meanwhile) or a policy just deleted: the change's
            # own audit writes the status again.
            log.info("policy status of %s not written: %s", policy_name(policy), exc)

    def _events(self, policy: str, violations: Mapping[str, dict[str, Any]]) -> None:
        current = {(policy, key) for key in violations}
        for pair in sorted(current - self.seen):
            entry = violations[pair[1]]
            self._event(entry, policy)
        self.seen = {p for p in self.seen if p[0] != policy} | current

    def _event(self, entry: Mapping[str, Any], policy: str) -> None:
        namespace = entry["namespace"] or "default"
        now = _now()
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{entry['name']}.", "namespace": namespace},
            "involvedObject": {
                "apiVersion": entry["apiVersion"],
                "kind": entry["kind"],
                "name": entry["name"],
                "namespace": namespace,
            },
            "reason": "PolicyViolation",
            "message": f"violates {policy}: {entry['message']}"[:1024],
            "type": "Warning",
            "source": {"component": "jobgate-controller"},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            self.kube.create(f"/api/v1/namespaces/{namespace}/events", event)
        except ApiError as exc:
            log.info("event for %s/%s not written: %s", namespace, entry["name"], exc)
