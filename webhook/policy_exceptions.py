"""The watch behind ``TrainingJobPolicyException`` s: every review reads this cache, never the API.

Started beside the policy caches (:mod:`.policies`) where the cluster serves the exceptions' CRD;
the webhook is not Ready before the list is in (a review then would refuse what an exception
waives, or, worse, an expired one could not be told from a missing one). Where the CRD is not
served, nothing is waived: the safe side.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from jobgate.kube.client import Kube
from jobgate.kube.informer import Informer, InformerGroup
from jobgate.policy.exceptions import ExceptionSnapshot, PolicyException
from jobgate.policy.models import GROUP, VERSION
from jobgate.policy.resources import EXCEPTIONS

log = logging.getLogger("jobgate.policies")


def exceptions_served(kube: Kube) -> bool:
    return kube.serves(GROUP, VERSION, EXCEPTIONS.plural)


class ExceptionCache(InformerGroup):
    """The exceptions of every namespace, judged against the clock at each review."""

    def __init__(self, kube: Kube) -> None:
        self.informer = Informer(kube, EXCEPTIONS.path(), name="trainingjobpolicyexceptions")
        self.informer.handlers.append(self._changed)
        self.informers = (self.informer,)
        self._lock = threading.Lock()
        self._snapshot: ExceptionSnapshot | None = None

    def _changed(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        with self._lock:
            self._snapshot = None  # rebuilt by the next review that asks

    def _current(self) -> ExceptionSnapshot:
        snapshot = self._snapshot
        if snapshot is not None:
            return snapshot
        with self._lock:
            if self._snapshot is None:
                self._snapshot = ExceptionSnapshot.of_objects(self.informer.items())
            return self._snapshot

    def in_namespace(self, namespace: str) -> list[PolicyException]:
        return self._current().in_namespace(namespace)

    def now(self) -> Any:
        return self._current().now()


def start_exceptions(kube: Kube, views: Any) -> ExceptionCache | None:
    """Watch the exceptions where their CRD is served, and hand them to reviews once listed."""
    try:
        served = exceptions_served(kube)
    except Exception as exc:  # never a reason to leave the policies off; nothing is waived
        log.warning("policy exceptions not watched: discovery failed (%s); nothing is waived", exc)
        return None
    if not served:
        log.info("policy exceptions not watched: the %s CRD is not served; nothing is waived", EXCEPTIONS.plural)
        return None
    cache = ExceptionCache(kube)
    cache.start()

    def install() -> None:
        cache.wait_synced()
        views.exceptions = cache
        log.info("policy exceptions on: watching %s", EXCEPTIONS.plural)

    threading.Thread(target=install, name="exceptions-sync", daemon=True).start()
    return cache
