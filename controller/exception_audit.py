"""The exceptions' part of the policies' audit (:mod:`.policy_audit`): stored jobs an exception covers
are not counted as violations of what it waives; each ``TrainingJobPolicyException`` 's status lists
the jobs it covers (``totalJobs``, the first ``MAX_JOBS_LISTED``, the rules waived for each), says
whether it has expired, and an expiry gives one Event on the exception.

An exception expires by the clock, not by a change anything watches: the audit is woken at the next
``expiresAt`` (:func:`next_expiry`), so that the jobs it covered are counted again then.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from jobgate.kube.client import ApiError, Kube
from jobgate.kube.informer import Informer
from jobgate.policy.exceptions import (
    EXCEPTION_KIND,
    MAX_JOBS_LISTED,
    ExceptionSnapshot,
    PolicyException,
    Waiver,
    covering,
    format_time,
    waive,
)
from jobgate.policy.models import GROUP, VERSION
from jobgate.policy.resources import EXCEPTIONS

log = logging.getLogger("jobgate.policy_audit")


def exceptions_informer(kube: Kube, on_change: Any) -> Informer | None:
    """An informer of the exceptions where their CRD is served (None: not served, nothing is waived)."""
    try:
        served = kube.serves(GROUP, VERSION, EXCEPTIONS.plural)
    except ApiError as exc:
        log.warning("policy exceptions not audited: discovery failed: %s", exc)
        return None
    if not served:
        return None
    informer = Informer(kube, EXCEPTIONS.path(), name="audit-trainingjobpolicyexceptions")
    informer.handlers.append(on_change)
    return informer


class Coverage:
    """One audit's view of the exceptions: the snapshot judged at one time, and the jobs each covered."""

    def __init__(self, objects: Iterable[Mapping[str, Any]], now: datetime.datetime | None = None) -> None:
        self.objects = list(objects)
        self.now = now or datetime.datetime.now(datetime.UTC)
        self.view = ExceptionSnapshot.of_objects(self.objects, self.now)
        # By exception (``Kind ns/name``): job key -> status entry.
        self.jobs: dict[str, dict[str, dict[str, Any]]] = {}

    def waive(self, found: list[Any], policies: Any, job: Mapping[str, Any], family: str, effective: Any) -> list[Any]:
        """``found`` (a stored job's findings) without what the exceptions in force waive; each waiver recorded."""
        exceptions = covering(self.view, job, effective.namespace)
        if not exceptions:
            return found
        kept, waived = waive(
            found,
            exceptions,
            policies,
            dict(job),
            old_job=None,
            family=family,
            applied=effective.policies,
            namespace=effective.namespace,
        )
        self._record(job, waived)
        return kept

    def _record(self, job: Mapping[str, Any], waivers: list[Waiver]) -> None:
        metadata = job.get("metadata") or {}
        key = f"{metadata.get('namespace')}/{metadata.get('name')}/{job.get('kind')}"
        for waiver in waivers:
            for exception in waiver.exceptions:
                entries = self.jobs.setdefault(str(exception), {})
                entry = entries.setdefault(
                    key,
                    {
                        "name": metadata.get("name", ""),
                        "kind": job.get("kind", ""),
                        "apiVersion": job.get("apiVersion", ""),
                        "rules": [],
                    },
                )
                rule = f"{waiver.finding.policy}: {waiver.finding.rule}"
                if rule not in entry["rules"]:
                    entry["rules"].append(rule)

    def status(self, obj: Mapping[str, Any]) -> dict[str, Any] | None:
        """The status the audit writes for one exception object (None: not one it can read)."""
        exception = PolicyException.from_object(obj)
        if exception is None:
            return None
        expired = exception.expired(self.now)
        covered = sorted(self.jobs.get(str(exception), {}).values(), key=lambda e: (e["kind"], e["name"]))
        for entry in covered:
            entry["rules"] = sorted(entry["rules"])[:64]
        old = {c.get("type"): c for c in (obj.get("status") or {}).get("conditions") or []}
        if expired:
            condition = ("False", "Expired", f"expired at {exception.expires_text}: nothing is waived")
        else:
            condition = ("True", "InForce", f"waives until {exception.expires_text}")
        previous = old.get("Active") or {}
        unchanged = previous.get("status") == condition[0] and previous.get("reason") == condition[1]
        active = {
            "type": "Active",
            "status": condition[0],
            "reason": condition[1],
            "message": condition[2],
            "lastTransitionTime": previous.get("lastTransitionTime") if unchanged else format_time(self.now),
        }
        generation = (obj.get("metadata") or {}).get("generation")
        if generation is not None:
            active["observedGeneration"] = generation
        return {
            "conditions": [active],
            "expired": expired,
            "totalJobs": len(covered),
            "jobs": covered[:MAX_JOBS_LISTED],
        }


def same_status(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    """Whether two statuses say the same, the conditions' transition times aside (a policy's and an
    exception's status are written only when this is false)."""

    def plain(status: Mapping[str, Any] | None) -> dict[str, Any]:
        status = dict(status or {})
        status["conditions"] = [
            {k: v for k, v in c.items() if k != "lastTransitionTime"} for c in status.get("conditions") or []
        ]
        return status

    return plain(old) == plain(new)


def next_expiry(objects: Iterable[Mapping[str, Any]], now: datetime.datetime) -> float | None:
    """Seconds until the next exception expires (None: none will)."""
    upcoming = [
        (e.expires_at - now).total_seconds()
        for e in (PolicyException.from_object(o) for o in objects)
        if e is not None and e.expires_at > now
    ]
    return min(upcoming) if upcoming else None


class ExceptionStatusWriter:
    """Writes each exception's status when it changed, and one Event when it is first seen expired."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.expired_seen: set[str] = set()  # uids (or ns/name) an expiry Event was sent for

    def write(self, coverage: Coverage) -> None:
        for obj in coverage.objects:
            status = coverage.status(obj)
            if status is None:
                continue
            metadata = obj.get("metadata") or {}
            if not same_status(obj.get("status"), status):
                path = EXCEPTIONS.path(metadata.get("namespace"), metadata.get("name"), "status")
                try:
                    self.kube.replace(path, {**obj, "status": status})
                except ApiError as exc:  # changed or deleted meanwhile: the next audit writes it
                    log.info("status of %s %s not written: %s", EXCEPTION_KIND, metadata.get("name"), exc)
            key = str(metadata.get("uid") or f"{metadata.get('namespace')}/{metadata.get('name')}")
            if status["expired"] and key not in self.expired_seen:
                self.expired_seen.add(key)
                self._event(obj, status["conditions"][0]["message"])
            elif not status["expired"]:
                self.expired_seen.discard(key)  # extended: a later expiry is told again

    def _event(self, obj: Mapping[str, Any], message: str) -> None:
        metadata = obj.get("metadata") or {}
        namespace = metadata.get("namespace") or "default"
        now = format_time(datetime.datetime.now(datetime.UTC))
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{metadata.get('name')}.", "namespace": namespace},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion", f"{GROUP}/{VERSION}"),
                "kind": EXCEPTION_KIND,
                "name": metadata.get("name"),
                "namespace": namespace,
                "uid": metadata.get("uid"),
            },
            "reason": "ExceptionExpired",
            "message": message[:1024],
            "type": "Warning",
            "source": {"component": "jobgate-controller"},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            self.kube.create(f"/api/v1/namespaces/{namespace}/events", event)
        except ApiError as exc:
            log.info("expiry event for %s/%s not written: %s", namespace, metadata.get("name"), exc)
