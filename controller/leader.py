"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's rules.

Every candidate tries to take the Lease every ``retry_period``; it succeeds when the Lease
is free, already its own, or not renewed for ``lease_duration``. Updates carry the Lease's
resourceVersion, so of two candidates racing for an expired Lease exactly one wins. The
leader renews every ``retry_period``; if it cannot renew for ``renew_deadline`` it must stop
acting at once (another candidate may take over after ``lease_duration``). On a clean
shutdown the leader releases the Lease so a successor takes over without waiting.
"""

from __future__ import annotations

import datetime
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from jobgate.kube.client import ApiError, Kube

from .clock import micro_timestamp, parse_time
from .resources import LEASES

log = logging.getLogger("jobgate.leader")


@dataclass
class LeaseTiming:
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


class LeaderElector:
    def __init__(self, kube: Kube, namespace: str, name: str, identity: str, timing: LeaseTiming | None = None) -> None:
        self.kube = kube
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.timing = timing or LeaseTiming()
        self.leading = threading.Event()
        self._stop = threading.Event()
        self._observed: tuple[str | None, datetime.datetime] | None = None

    @property
    def path(self) -> str:
        return LEASES.path(self.namespace, self.name)

    def _now(self) -> datetime.datetime:
        return datetime.datetime.now(datetime.UTC)

    def try_acquire_or_renew(self) -> bool:
        now = self._now()
        spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.timing.lease_duration)),
            "renewTime": micro_timestamp(now),
        }
        try:
            lease = self.kube.get(self.path)
        except ApiError as exc:
            if exc.status != 404:
                raise
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": {**spec, "acquireTime": micro_timestamp(now), "leaseTransitions": 0},
            }
            try:
                self.kube.create(LEASES.path(self.namespace), body)
            except ApiError as create_error:
                if create_error.status == 409:
                    return False
                raise
            return True
        current = lease.get("spec") or {}
        holder = current.get("holderIdentity")
        renewed = parse_time(current.get("renewTime")) or parse_time(current.get("acquireTime"))
        duration = float(current.get("leaseDurationSeconds") or self.timing.lease_duration)
        if holder and holder != self.identity and renewed is not None and (now - renewed).total_seconds() < duration:
            return False  # someone else holds a live lease
        transitions = int(current.get("leaseTransitions") or 0)
        if holder != self.identity:
            spec["acquireTime"] = micro_timestamp(now)
            transitions += 1
        else:
            spec["acquireTime"] = current.get("acquireTime") or micro_timestamp(now)
        lease["spec"] = {**current, **spec, "leaseTransitions": transitions}
        try:
            self.kube.replace(self.path, lease)  # carries resourceVersion: a racing writer gets 409
        except ApiError as exc:
            if exc.status == 409:
                return False
            raise
        return True

    def release(self) -> None:
        try:
            lease = self.kube.get(self.path)
            if (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return
            lease["spec"]["holderIdentity"] = ""
            lease["spec"]["renewTime"] = micro_timestamp(self._now() - datetime.timedelta(days=1))
            self.kube.replace(self.path, lease)
            log.info("released lease %s/%s", self.namespace, self.name)
        except ApiError as exc:
            log.warning("could not release the lease: %s", exc)

    def run(self, on_started: Callable[[], None], on_stopped: Callable[[], None]) -> None:
        """Block until stopped: acquire, call ``on_started``, renew; ``on_stopped`` when leadership ends."""
        while not self._stop.is_set():
            if self._attempt():
                break
            self._stop.wait(self.timing.retry_period)
        if self._stop.is_set():
            return
        log.info("became leader (lease %s/%s, identity %s)", self.namespace, self.name, self.identity)
        self.leading.set()
        on_started()
        last_renewal = self._now()
        while not self._stop.wait(self.timing.retry_period):
            if self._attempt():
                last_renewal = self._now()
            elif (self._now() - last_renewal).total_seconds() > self.timing.renew_deadline:
                log.error("could not renew the lease for %.0f s: leadership lost", self.timing.renew_deadline)
                break
        self.leading.clear()
        on_stopped()
        if self._stop.is_set():
            self.release()

    def _attempt(self) -> bool:
        try:
            return self.try_acquire_or_renew()
        except Exception as exc:
            log.warning("lease %s/%s: %s", self.namespace, self.name, exc)
            return False

    def stop(self) -> None:
        self._stop.set()
