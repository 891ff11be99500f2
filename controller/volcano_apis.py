"""The controller's optional Volcano APIs, found late: PodGroups (gang scheduling) and Commands.

Volcano is often installed after jobgate: while its APIs are not served, discovery is asked again
every ``JOBGATE_COMMAND_CRD_RECHECK_SECONDS`` and their watches start when they appear, without a
restart. Commands (``vcctl job suspend|resume``) are taken once each: deleted first, as Volcano
does, then acted on by the job's next pass.

``VolcanoApis`` is a part of ``runtime.Controller`` (a base class of it), kept apart because it is
one family's concern in the family-independent runtime.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from jobgate.common.envconfig import seconds_from_environment
from jobgate.engine.registry import GroupVersionKind
from jobgate.kube.client import ApiError, Kube, Resource
from jobgate.kube.informer import Handler, Informer

from .adapters import JOB_UID_LABEL, Adapter
from .resources import COMMANDS, POD_GROUPS
from .slim import slim_pod_group
from .workqueue import WorkQueue, job_key

log = logging.getLogger("jobgate.controller")

# How often discovery is asked again for Volcano's Command API while it is not served, so that the
# Command CRD applied after the controller started (jobgate's or Volcano's) is picked up without a restart.
COMMAND_CRD_RECHECK_VARIABLE = "JOBGATE_COMMAND_CRD_RECHECK_SECONDS"
DEFAULT_COMMAND_CRD_RECHECK_SECONDS = 60.0


def command_crd_recheck_seconds() -> float:
    return seconds_from_environment(COMMAND_CRD_RECHECK_VARIABLE, DEFAULT_COMMAND_CRD_RECHECK_SECONDS)


class VolcanoApis:
    """PodGroups and Commands, watched once served (what ``runtime.Controller`` provides is below)."""

    kube: Kube
    namespace: str | None
    adapters: dict[GroupVersionKind, Adapter]
    queue: WorkQueue
    pod_groups: Informer | None
    commands: Informer | None
    gang_supported: bool
    pending_commands: dict[str, str]
    _stop: threading.Event
    _acting: threading.Event
    _late_lock: threading.Lock
    _commands_lock: threading.Lock
    _threads: list[threading.Thread]
    _pool: ThreadPoolExecutor

    def _child_handler(self, kind: str) -> Handler: ...

    def _requeue_all_jobs(self) -> None: ...

    def _pod_group_informer(self) -> Informer:
        informer = Informer(
            self.kube,
            POD_GROUPS.path(self.namespace),
            name="podgroups",
            label_selector=JOB_UID_LABEL,
            transform=slim_pod_group,
        )
        informer.handlers.append(self._child_handler("PodGroup"))
        return informer

    def _command_informer(self) -> Informer:
        informer = Informer(self.kube, COMMANDS.path(self.namespace), name="commands")
        informer.handlers.append(self._command_handler)
        return informer

    def _watch_for_api(self, resource: Resource, start: Callable[[], None], interval: float, name: str) -> None:
        thread = threading.Thread(target=self._wait_for_api, args=(resource, start, interval), name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _wait_for_api(self, resource: Resource, start: Callable[[], None], interval: float) -> None:
        """Ask discovery every ``interval`` until it serves ``resource``, then ``start`` its watch (once)."""
        while not self._stop.wait(interval):
            try:
                served = self._serves(resource)
            except Exception as exc:  # apiserver unreachable: the informers say so; ask again next time
                log.debug("discovery of %s failed: %s", resource.group, exc)
                continue
            if served:
                start()
                return

    def _start_late(self, informer: Informer, attribute: str) -> bool:
        """Start ``informer`` as ``self.<attribute>`` unless the controller is stopping (then False)."""
        with self._late_lock:
            if self._stop.is_set():
                return False
            setattr(self, attribute, informer)
            informer.start()
        return True

    def _start_late_commands(self) -> None:
        """A replica already leading takes the Commands from the first list (the handler acts once
        ``_acting`` is set)."""
        if self._start_late(self._command_informer(), "commands"):
            log.info("Volcano's Command API is now served: taking Commands (suspend, resume)")

    def _start_late_pod_groups(self) -> None:
        """Watch PodGroups, and once their cache is filled turn gang scheduling on and look at every
        job again: those asking for a gang get their PodGroup (pods already running keep going)."""
        informer = self._pod_group_informer()
        if not self._start_late(informer, "pod_groups"):
            return
        if not informer.synced.wait(60):
            log.warning("PodGroup cache not synced after 60 s; turning gang scheduling on anyway")
        self.gang_supported = True
        self._requeue_all_jobs()
        log.info("Volcano's PodGroup API is now served: gang scheduling on")

    def _has_pod_groups(self) -> bool:
        return self._serves(POD_GROUPS)

    def _serves(self, resource: Resource) -> bool:
        try:
            return self.kube.serves(resource.group, resource.version, resource.plural)
        except ApiError:
            return False

    def _command_handler(self, event: str, command: dict[str, Any], old: dict[str, Any] | None) -> None:
        if event == "DELETED" or not self._acting.is_set():
            return
        # Volcano's wire name for the Go field TargetObject (vcctl writes `target`).
        raw_target = command.get("target")
        target: dict[str, Any] = raw_target if isinstance(raw_target, dict) else {}
        gvk = GroupVersionKind.from_object(target)
        action = command.get("action")
        if gvk is None or gvk not in self.adapters or not isinstance(action, str) or not target.get("name"):
            return  # a command for a queue, or for a job kind this controller does not serve
        metadata = command.get("metadata", {})
        key = job_key(gvk, metadata.get("namespace", ""), str(target["name"]))
        self._pool.submit(self._take_command, key, metadata, action)

    def _take_command(self, key: str, metadata: dict[str, Any], action: str) -> None:
        """Delete the Command first, as Volcano does, so that it runs at most once."""
        try:
            self.kube.delete(COMMANDS.path(metadata.get("namespace"), metadata.get("name")), uid=metadata.get("uid"))
        except ApiError as exc:
            if exc.status not in (404, 409):
                log.warning("could not take command %s/%s: %s", metadata.get("namespace"), metadata.get("name"), exc)
            return  # gone: another replica or an earlier event took it
        with self._commands_lock:
            self.pending_commands[key] = action
        self.queue.add(key)
