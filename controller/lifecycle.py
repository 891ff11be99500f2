"""Volcano's job state machine as a pure step over one reconcile pass.

The engine calls ``run(pass_, rules)`` through ``JobModel.lifecycle``. Volcano is event driven
(an informer event becomes a bus event, a policy turns it into an action, the job's phase
decides what the action does); jobgate is level driven, so each pass derives the events from
what it sees (a Failed pod of the current run, a pod that vanished without the controller
deleting it, a task whose pods all succeeded, a task over its in-place restart budget), picks
the first one a policy turns into an action (task policies before job policies), and applies
it as Volcano's state for the current phase would. At most one action runs per pass; a phase
change requeues the job at once so the next state's step follows.

Everything kept across passes lives in the status: phase, ``retryCount`` (``restart_count``),
``version`` (``run_version``, stamped on pods; events of pods from an older run are ignored),
the pods this controller deleted (``restarting_pods``, so their disappearance is no eviction)
and the pods it last saw (``extra["knownPods"]``, so a pod deleted by someone else is one).

What the step runs on (Volcano's names, the ``JobRules`` the adapter reads from the spec, which
policy maps an event to an action) is ``lifecycle_policy``; here is what the phases do with it.
"""

from __future__ import annotations

import datetime
from typing import Any

from .children import build_pod, pod_name
from .clock import parse_time
from .engine import ACTIVE_PHASES, Deletion, Event, exit_code
from .lifecycle_policy import (
    COMMAND_ISSUED,
    GROUP_NAME_KEY,
    JOB_VERSION_KEY,
    OUT_OF_SYNC,
    PARTITION_KEY,
    POD_EVICTED,
    POD_FAILED,
    POD_GROUP_API,
    POD_PENDING,
    RETRY_COUNT_KEY,
    TASK_COMPLETED,
    TASK_FAILED,
    TASK_SPEC_KEY,
    UNKNOWN,
    Action,
    BusEvent,
    JobRules,
    Phase,
    go_duration,
    policy_for,
)

# Once here, a finished job only has its unfinished pods killed (policies no longer apply).
FINISHED = frozenset({Phase.COMPLETED, Phase.FAILED, Phase.TERMINATED, Phase.ABORTED})
# Phases the ttlSecondsAfterFinished collector deletes (Volcano's garbage collector).
TTL_PHASES = frozenset({Phase.COMPLETED, Phase.FAILED, Phase.TERMINATED})
# Actions that wait for the pods to go before reaching their final phase.
STOPPING = {Phase.ABORTING: Phase.ABORTED, Phase.TERMINATING: Phase.TERMINATED, Phase.COMPLETING: Phase.COMPLETED}
STOP_ACTIONS = {
    Action.ABORT_JOB: Phase.ABORTING,
    Action.TERMINATE_JOB: Phase.TERMINATING,
    Action.COMPLETE_JOB: Phase.COMPLETING,
}
RESTART_ACTIONS = frozenset({Action.RESTART_JOB, Action.RESTART_TASK, Action.RESTART_POD, Action.RESTART_PARTITION})
TARGETED_RESTARTS = frozenset({Action.RESTART_TASK, Action.RESTART_POD, Action.RESTART_PARTITION})
# Pod group phases in which Volcano's syncJob leaves the pods alone (the scheduler has not admitted the gang).
POD_GROUP_WAITING = frozenset({"", "Pending"})
DELAYED_ACTIONS_KEY = "delayedActions"


# --- reading the pass -----------------------------------------------------------------------------


def _pod_phase(pod: dict[str, Any]) -> str:
    return (pod.get("status") or {}).get("phase") or "Pending"


def _version(pod: dict[str, Any]) -> int:
    try:
        return int((pod["metadata"].get("annotations") or {}).get(JOB_VERSION_KEY, "0"))
    except ValueError:
        return 0


def _task_of(pod: dict[str, Any]) -> str | None:
    labels = pod["metadata"].get("labels") or {}
    return labels.get(TASK_SPEC_KEY)


def _partition_of(pod: dict[str, Any]) -> str | None:
    labels = pod["metadata"].get("labels") or {}
    value = labels.get(PARTITION_KEY)
    return value if isinstance(value, str) else None


def _restarts(pod: dict[str, Any]) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return sum(int(s.get("restartCount") or 0) for s in statuses)


def _first_container_exit_code(pod: dict[str, Any]) -> int | None:
    """Volcano reports the exit code of the pod's first container."""
    containers = (pod.get("spec") or {}).get("containers") or []
    first = containers[0].get("name") if containers else None
    return exit_code(pod, first)


class Step:
    """One pass of Volcano's state machine over the engine's pass ``p``."""

    def __init__(self, p: Any, rules: JobRules) -> None:
        self.p = p
        self.rules = rules
        self.model = p.model
        self.status = p.status
        self.plan = p.plan
        self.now: datetime.datetime = p.observed.now
        self.deleting: set[str] = {d.name for d in self.plan.delete if d.kind == "Pod"}
        self.creating: dict[str, str] = {}  # pod name -> task, pods this pass creates
        self.pods = [pod for pod in p.observed.pods if _task_of(pod) is not None]
        self.by_name = {pod["metadata"]["name"]: pod for pod in self.pods}
        self.group_phase = self._pod_group_phase()

    def _pod_group_phase(self) -> str | None:
        """The PodGroup's ``status.phase`` ("" when it has none); None when it is not seen."""
        group = self.rules.pod_group
        for found in getattr(self.p.observed, "pod_groups", ()) or ():
            if group is not None and found.get("metadata", {}).get("name") == group.name:
                phase = (found.get("status") or {}).get("phase")
                return phase if isinstance(phase, str) else ""
        return None

    # --- helpers ---

    def current(self, pod: dict[str, Any]) -> bool:
        return _version(pod) >= self.status.run_version

    def alive(self, pod: dict[str, Any]) -> bool:
        """Neither terminating nor deleted by this pass."""
        return not pod["metadata"].get("deletionTimestamp") and pod["metadata"]["name"] not in self.deleting

    def set_phase(self, phase: Phase, reason: str, message: str) -> None:
        status = self.status
        if status.phase == phase:
            return
        now = self.p.now
        status.phase = phase.value
        status.extra.update(reason=reason, message=message, lastTransitionTime=now)
        history = [c for c in status.extra.get("conditions", []) if c.get("status") != phase.value]
        status.extra["conditions"] = [*history, {"status": phase.value, "lastTransitionTime": now}]
        start = parse_time(status.start_time)
        if start is not None:
            status.extra["runningDuration"] = go_duration((self.now - start).total_seconds())
        self.plan.requeue(0)  # the next state's step runs on the next pass

    def kill(self, pods: list[dict[str, Any]], *, retain_finished: bool) -> list[str]:
        killed = []
        for pod in pods:
            if not self.alive(pod):
                continue
            if retain_finished and _pod_phase(pod) in ("Succeeded", "Failed"):
                continue
            name, uid = pod["metadata"]["name"], pod["metadata"].get("uid")
            self.plan.delete.append(Deletion("v1", "Pod", name, uid))
            self.deleting.add(name)
            if uid and uid not in self.status.restarting_pods:
                self.status.restarting_pods.append(uid)
            killed.append(name)
        if killed:
            shown = ", ".join(killed[:10]) + (f" and {len(killed) - 10} more" if len(killed) > 10 else "")
            self.plan.events.append(Event("Normal", "SuccessfulDeletePod", f"Deleted pod(s): {shown}"))
        return killed

    def kill_job(self, *, retain_finished: bool) -> None:
        self.kill(self.pods, retain_finished=retain_finished)

    # --- events ---

    def events(self) -> list[BusEvent]:
        found: list[BusEvent] = []
        pending: list[BusEvent] = []  # last: a pod that stays Pending matters least
        handled = set(self.status.restarting_pods)
        for pod in self.pods:
            uid = pod["metadata"].get("uid")
            if not self.current(pod) or uid in handled:
                continue
            task, name, partition = _task_of(pod) or "", pod["metadata"]["name"], _partition_of(pod)
            phase = _pod_phase(pod)
            if pod["metadata"].get("deletionTimestamp"):
                found.append(BusEvent(POD_EVICTED, task, name, uid, partition=partition))
            elif phase == "Failed":
                found.append(BusEvent(POD_FAILED, task, name, uid, _first_container_exit_code(pod), partition))
            elif phase == "Unknown":
                found.append(BusEvent(UNKNOWN, task, name, uid, partition=partition, detail="pod phase Unknown"))
            elif phase == "Pending":
                pending.append(BusEvent(POD_PENDING, task, name, uid, partition=partition))
        for name, task in sorted((self.status.extra.get("knownPods") or {}).items()):
            if name not in self.by_name:
                found.append(BusEvent(POD_EVICTED, task, name))
        for task in self.rules.tasks:
            pods = [p for p in self.pods if _task_of(p) == task.name and self.current(p)]
            if task.replicas and len(pods) >= task.replicas and all(_pod_phase(p) == "Succeeded" for p in pods):
                found.append(BusEvent(TASK_COMPLETED, task.name))
            active = [p for p in pods if _pod_phase(p) in ("Pending", "Running")]
            if task.max_retry != -1 and active and sum(_restarts(p) for p in active) >= task.max_retry:
                found.append(BusEvent(TASK_FAILED, task.name))
        job_unknown = self.job_unknown()
        if job_unknown:
            found.append(BusEvent(UNKNOWN, "", detail=job_unknown))
        return found + pending

    def job_unknown(self) -> str:
        """Why the job cannot be judged ("" when it can): Volcano's JobUnknown.

        Volcano raises it when its scheduler sets the PodGroup's phase to Unknown (part of the gang
        runs, the rest cannot be placed). Without that scheduler nobody sets the phase, so jobgate
        also raises it when pods of the current run are in phase Unknown and the others alone do
        not reach ``minAvailable``: whether the job runs depends on pods nobody can see.
        """
        if self.group_phase == "Unknown":
            return "PodGroup phase Unknown"
        current = [p for p in self.pods if self.current(p) and self.alive(p)]
        unknown = sum(1 for p in current if _pod_phase(p) == "Unknown")
        known = sum(1 for p in current if _pod_phase(p) in ("Running", "Succeeded"))
        if unknown and known < self.rules.min_available:
            return f"{unknown} pod(s) Unknown, {known} running or succeeded of minAvailable {self.rules.min_available}"
        return ""

    def decide(self, events: list[BusEvent]) -> tuple[Action, BusEvent] | None:
        """The first event whose policy's action is due; delayed ones wait in the status.

        A policy with a ``timeout`` runs its action only once its event has held for that long:
        the first pass that sees the event writes when (``delayedActions``) and asks to be
        requeued at the deadline, so no reconcile sleeps and a restarted controller keeps the
        clock. An event that stops holding (the pod left Pending, was replaced) drops its timer,
        as Volcano cancels a delayed action when the pod moves on.
        """
        before: dict[str, str] = self.status.extra.get(DELAYED_ACTIONS_KEY) or {}
        timers: dict[str, str] = {}
        chosen: tuple[Action, BusEvent] | None = None
        for event in events:
            policy = policy_for(event, self.rules)
            if policy is None:
                continue
            if not policy.timeout or policy.timeout <= 0:
                chosen = chosen or (policy.action, event)
                continue
            since = before.get(event.timer) or self.p.now
            timers[event.timer] = since
            started = parse_time(since) or self.now
            remaining = (started - self.now).total_seconds() + policy.timeout
            if remaining > 0:
                self.plan.requeue(remaining)
            elif chosen is None:
                chosen = (policy.action, event)
                self.plan.events.append(
                    Event(
                        "Normal",
                        "ExecuteAction",
                        f"Execute action {policy.action.value} after {go_duration(policy.timeout)}",
                    )
                )
        self.status.extra[DELAYED_ACTIONS_KEY] = timers
        return chosen

    # --- actions ---

    def act(self, action: Action, cause: BusEvent) -> None:
        status, rules = self.status, self.rules
        self.plan.events.append(
            Event("Normal", "ExecuteAction", f"Start to execute action {action.value} on {cause.describe()}")
        )
        message = f"{action.value} on {cause.describe()}"
        self.status.extra.pop(DELAYED_ACTIONS_KEY, None)  # an action cancels the delayed ones (as Volcano)
        if action in STOP_ACTIONS:
            self.kill_job(retain_finished=True)
            self.set_phase(STOP_ACTIONS[action], action.value, message)
            return
        if action is Action.RESTART_JOB:
            # At the last retry finished pods are kept, so that their logs survive the failure.
            self.kill_job(retain_finished=status.restart_count >= rules.max_retry - 1)
            status.run_version += 1
            self.delete_pod_group()
        elif action is Action.RESTART_TASK:
            self.kill([p for p in self.pods if _task_of(p) == cause.task], retain_finished=False)
        elif action is Action.RESTART_POD and cause.pod is not None and cause.pod in self.by_name:
            self.kill([self.by_name[cause.pod]], retain_finished=False)
        elif action is Action.RESTART_PARTITION and cause.partition is not None:
            partition = [p for p in self.pods if _task_of(p) == cause.task and _partition_of(p) == cause.partition]
            self.kill(partition, retain_finished=False)
        status.restart_count += 1
        self.set_phase(Phase.RESTARTING, action.value, message)

    def delete_pod_group(self) -> None:
        group = self.rules.pod_group
        if group is not None and (group.kind, group.name) in self.p.observed.existing:
            self.plan.delete.append(Deletion(POD_GROUP_API, group.kind, group.name, None))

    # --- sync ---

    def ready(self, task_name: str) -> bool:
        """A task others depend on is ready when enough of its pods run or have succeeded."""
        task = self.rules.task(task_name)
        if task is None:
            return True
        up = sum(
            1
            for p in self.pods
            if _task_of(p) == task_name and self.alive(p) and _pod_phase(p) in ("Running", "Succeeded")
        )
        return up >= max(task.min_available, 1)

    def sync(self) -> None:
        """Create what is missing (job children, then pods), delete pods beyond the replicas."""
        observed, plan, model = self.p.observed, self.plan, self.model
        services = {s["metadata"]["name"] for s in observed.services}
        wanted = [
            *self.rules.children,
            *([self.rules.pod_group] if self.rules.pod_group and observed.gang_supported else []),
        ]
        digests: dict[str, str] = dict(self.status.extra.get("childDigests") or {})
        for child in wanted:
            present = (
                child.name in services if child.kind == "Service" else (child.kind, child.name) in observed.existing
            )
            key = f"{child.kind}/{child.name}"
            written = digests.get(key)
            if child.digest is not None and written != child.digest and (present or written is not None):
                # The spec changed (a task scaled) since the content was written: rewrite it in place.
                # Also when this process has not seen the child (a restarted controller), as it exists.
                plan.update.append(child.build())
            elif not present:
                plan.create.append(child.build())
            if child.digest is not None:
                digests[key] = child.digest
        self.status.extra["childDigests"] = digests
        gated = self.waits_for_pod_group()
        if gated and self.rules.pod_group is not None and any(o.get("kind") == "PodGroup" for o in plan.create):
            plan.events.append(
                Event(
                    "Normal",
                    "PodGroupPending",
                    f"PodGroup {self.model.namespace}:{self.rules.pod_group.name} created; "
                    "pods are created once the scheduler moves it out of Pending",
                )
            )
        names: set[str] = set()
        created = []
        for group in model.groups:
            task = self.rules.task(group.name)
            blocked = False
            if task is not None and task.depends_on:
                ready = [self.ready(d) for d in task.depends_on]
                blocked = not (any(ready) if task.depends_on_any else all(ready))
            for index in range(group.replicas):
                name = pod_name(model, group, index)
                names.add(name)
                if name in self.by_name or blocked or gated:
                    continue
                pod = build_pod(model, group, index)
                annotations = pod["metadata"]["annotations"]
                annotations[JOB_VERSION_KEY] = str(self.status.run_version)
                annotations[RETRY_COUNT_KEY] = str(self.status.restart_count)
                if self.rules.pod_group is not None and observed.gang_supported:
                    annotations[GROUP_NAME_KEY] = self.rules.pod_group.name
                plan.create.append(pod)
                self.creating[name] = group.name
                created.append(name)
        self.kill([p for p in self.pods if p["metadata"]["name"] not in names], retain_finished=False)
        if created:
            shown = ", ".join(created[:10]) + (f" and {len(created) - 10} more" if len(created) > 10 else "")
            plan.events.append(Event("Normal", "SuccessfulCreatePod", f"Created pod(s): {shown}"))

    def waits_for_pod_group(self) -> bool:
        """Volcano's syncJob creates no pod while the job's PodGroup is Pending (the gang is not admitted).

        Only the Volcano scheduler moves a PodGroup on, so jobgate waits only when told that it runs
        (``jobgate controller --wait-for-pod-group``), the PodGroup API exists and the job asks for
        that scheduler; otherwise nobody would ever release the pods.
        """
        observed = self.p.observed
        return (
            bool(getattr(observed, "wait_for_pod_group", False))
            and observed.gang_supported
            and self.rules.pod_group is not None
            and self.rules.scheduler_name == "volcano"
            and (self.group_phase is None or self.group_phase in POD_GROUP_WAITING)
        )

    def command(self) -> Action | None:
        """The action of a ``bus.volcano.sh`` Command addressed to this job, if one arrived."""
        value = getattr(self.p.observed, "command", None)
        if not value:
            return None
        try:
            action = Action(value)
        except ValueError:
            self.plan.events.append(Event("Warning", COMMAND_ISSUED, f"Ignored command with unknown action {value}"))
            return None
        message = f"Start to execute command {action.value}, and clean it up to make sure executed not more than once."
        self.plan.events.append(Event("Normal", COMMAND_ISSUED, message))
        return action

    # --- counting ---

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(("pending", "running", "succeeded", "failed", "terminating", "unknown"), 0)
        per_task: dict[str, dict[str, int]] = {}
        for pod in self.pods:
            task = _task_of(pod) or ""
            if not self.alive(pod):
                counts["terminating"] += 1
                continue
            phase = _pod_phase(pod)
            key = phase.lower() if phase.lower() in counts else "unknown"
            counts[key] += 1
            per_task.setdefault(task, {})
            per_task[task][phase] = per_task[task].get(phase, 0) + 1
        for task in self.creating.values():
            counts["pending"] += 1
            per_task.setdefault(task, {})
            per_task[task]["Pending"] = per_task[task].get("Pending", 0) + 1
        self.per_task = per_task
        return counts

    def task_succeeded(self, task: str) -> int:
        return self.per_task.get(task, {}).get("Succeeded", 0)

    # --- the step ---

    def run(self) -> None:
        status, rules = self.status, self.rules
        status.conditions = []  # Volcano keeps its own phase history, not the common conditions
        if status.phase not in Phase._value2member_map_:  # new job, or a phase this controller never writes
            status.phase = None
            self.set_phase(Phase.PENDING, "", "")
        phase = Phase(status.phase or Phase.PENDING)
        command = self.command()
        previous_generation = self.p.previous.observed_generation
        if previous_generation is not None and previous_generation != self.model.generation:
            # Volcano's OutOfSync: internal, so always a plain sync (new pods, rewritten hosts ConfigMap).
            message = f"job spec changed (generation {previous_generation} -> {self.model.generation}): syncing"
            self.plan.events.append(Event("Normal", OUT_OF_SYNC, message))
        if phase not in (Phase.PENDING, Phase.RUNNING):
            status.extra.pop(DELAYED_ACTIONS_KEY, None)

        if phase in (Phase.PENDING, Phase.RUNNING):
            if command is not None and command not in (Action.SYNC, Action.RESUME_JOB):
                self.act(command, BusEvent(COMMAND_ISSUED, ""))
            else:
                chosen = self.decide(self.events())
                if chosen is not None and chosen[0] not in (Action.SYNC, Action.RESUME_JOB):
                    self.act(*chosen)
                else:  # ResumeJob on a job that runs: nothing to resume (Volcano syncs)
                    self.sync()
                    self.running_rules(phase)
        elif phase in (Phase.ABORTING, Phase.ABORTED) and command is Action.RESUME_JOB:
            # Volcano's resume: finished pods stay, the rest go, and the job restarts through Restarting.
            self.kill_job(retain_finished=True)
            status.run_version += 1
            status.restart_count += 1
            self.set_phase(Phase.RESTARTING, Action.RESUME_JOB.value, "resumed by a ResumeJob command")
        elif phase is Phase.RESTARTING:
            if command is not None and command not in TARGETED_RESTARTS:
                self.kill_job(retain_finished=False)  # Volcano: any whole-job action while restarting kills all
            terminating = sum(1 for p in self.pods if not self.alive(p))
            if status.restart_count >= rules.max_retry:
                self.kill_job(retain_finished=True)
                message = f"Job failed on action {status.extra.get('reason') or 'restart'} for retry limit reached"
                self.plan.events.append(Event("Warning", "ExecuteAction", message))
                self.set_phase(Phase.FAILED, "RetryLimitReached", message)
            elif rules.total_replicas - terminating >= rules.min_available:
                self.set_phase(Phase.PENDING, "Restarted", "the killed pods are gone; recreating them")
        elif phase in STOPPING:
            self.kill_job(retain_finished=True)
            if not any(self.alive(p) and _pod_phase(p) in ACTIVE_PHASES for p in self.pods) and all(
                self.alive(p) for p in self.pods
            ):
                self.set_phase(STOPPING[phase], status.extra.get("reason") or "", status.extra.get("message") or "")
        else:  # finished: policies no longer apply; unfinished pods go, finished ones stay for their logs
            self.kill_job(retain_finished=True)
            self.delete_pod_group()
            self.schedule_ttl(phase)

        counts = self.counts()
        status.extra["counts"] = counts
        status.extra["minAvailable"] = rules.min_available
        status.extra["controlledResources"] = dict(rules.controlled_resources)
        status.extra["taskStatusCount"] = {
            t: {"phase": dict(sorted(c.items()))} for t, c in sorted(self.per_task.items())
        }
        status.extra["knownPods"] = {
            p["metadata"]["name"]: _task_of(p) for p in self.pods if self.alive(p) and self.current(p)
        }
        for key in [k for k, v in status.extra.items() if v in ({}, [], None)]:
            del status.extra[key]  # the status leaves empty fields out: keep passes comparable
        handled = {p["metadata"].get("uid") for p in self.pods}
        status.restarting_pods = [u for u in status.restarting_pods if u in handled]

    def running_rules(self, phase: Phase) -> None:
        """Volcano's Pending and Running sync rules, over the counts after this pass's changes."""
        rules = self.rules
        counts = self.counts()
        total = rules.total_replicas
        started = counts["running"] + counts["succeeded"] + counts["failed"]
        if phase is Phase.PENDING:
            if rules.min_available <= started and total:
                self.set_phase(Phase.RUNNING, "", "")
            return
        if total == 0:
            return
        succeeded, failed = counts["succeeded"], counts["failed"]
        if rules.min_success is not None and succeeded >= rules.min_success:
            self.kill_job(retain_finished=True)
            self.set_phase(
                Phase.COMPLETED, "MinSuccess", f"{succeeded} pod(s) succeeded, minSuccess {rules.min_success}"
            )
            return
        if succeeded + failed == total:
            short = []
            if rules.min_available >= sum(t.min_available for t in rules.tasks):
                short = [
                    t.name for t in rules.tasks if t.min_available and self.task_succeeded(t.name) < t.min_available
                ]
            if short:
                self.set_phase(
                    Phase.FAILED, "TaskMinAvailable", f"too few pods succeeded in task(s) {', '.join(short)}"
                )
            elif rules.min_success is not None and succeeded < rules.min_success:
                self.set_phase(
                    Phase.FAILED, "MinSuccess", f"{succeeded} pod(s) succeeded, minSuccess {rules.min_success}"
                )
            elif succeeded >= rules.min_available:
                self.set_phase(Phase.COMPLETED, "Completed", f"{succeeded} pod(s) succeeded")
            else:
                self.set_phase(
                    Phase.FAILED, "MinAvailable", f"{succeeded} pod(s) succeeded, minAvailable {rules.min_available}"
                )
            return
        if counts["pending"] > total - rules.min_available:
            self.set_phase(Phase.PENDING, "", "")

    def schedule_ttl(self, phase: Phase) -> None:
        ttl = self.model.run_policy.ttl_seconds_after_finished
        finished_at = parse_time(self.status.extra.get("lastTransitionTime"))
        if ttl is None or phase not in TTL_PHASES or finished_at is None:
            return
        remaining = (finished_at - self.now).total_seconds() + ttl
        if remaining <= 0:
            self.plan.delete_job = True
        else:
            self.plan.requeue(remaining)


def run(p: Any, rules: JobRules) -> None:
    Step(p, rules).run()
