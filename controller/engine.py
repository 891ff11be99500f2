"""One reconcile pass over the common model, as a pure function.

``reconcile(model, status, observed)`` looks at the job's status and at the children the
informers see, and returns a ``Plan``: the status to write, children to create and delete,
events to record, whether to delete the job (TTL), and when to look again. Nothing here
talks to the API or reads a clock: the runtime passes ``observed.now`` and carries the plan
out. Everything the engine remembers across passes lives in the status it returns
(restart count, completed indices, pods being restarted), so a restarted controller picks
up exactly where the last one stopped. What the children look like is ``children``'s; the
engine decides which to create and which to delete.
"""

from __future__ import annotations

import copy
import datetime
import math
from dataclasses import dataclass, field
from typing import Any

from .children import (
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    POD_GROUP_API,
    build_pod,
    build_pod_group,
    build_service,
    pod_name,
    wants_service,
)
from .clock import parse_time, timestamp
from .model import (
    RETRYABLE_EXIT_CODES,
    RETRYABLE_POD_REASONS,
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
)

ACTIVE_PHASES = ("Pending", "Running", "Unknown")


@dataclass(frozen=True)
class Observed:
    pods: list[dict[str, Any]]  # the job's pods (controller owner = the job's uid)
    services: list[dict[str, Any]]
    existing: frozenset[tuple[str, str]]  # other owned objects present: (kind, name)
    now: datetime.datetime
    gang_supported: bool = False  # the scheduling.volcano.sh PodGroup API exists
    pod_groups: tuple[dict[str, Any], ...] = ()  # the job's PodGroups with their status (when watched)
    wait_for_pod_group: bool = False  # a gang scheduler runs: pods wait for their PodGroup to leave Pending
    command: str | None = None  # the action of a bus.volcano.sh Command addressed to the job


@dataclass(frozen=True)
class Deletion:
    api_version: str
    kind: str
    name: str
    uid: str | None


@dataclass(frozen=True)
class Event:
    type: str  # Normal | Warning
    reason: str
    message: str


@dataclass
class Plan:
    status: JobStatusModel
    status_changed: bool
    create: list[dict[str, Any]] = field(default_factory=list)
    update: list[dict[str, Any]] = field(default_factory=list)  # children rewritten whole (PUT)
    delete: list[Deletion] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    delete_job: bool = False
    requeue_after: float | None = None

    def requeue(self, seconds: float) -> None:
        seconds = max(seconds, 0.0)
        self.requeue_after = seconds if self.requeue_after is None else min(self.requeue_after, seconds)


def gang(model: JobModel, observed: Observed) -> bool:
    return model.run_policy.gang_min_member is not None and observed.gang_supported


# --- reading pods ------------------------------------------------------------------------------


def _index_of(obj: dict[str, Any]) -> tuple[str, int] | None:
    labels = obj.get("metadata", {}).get("labels") or {}
    try:
        return labels[LABEL_REPLICA_TYPE], int(labels[LABEL_REPLICA_INDEX])
    except (KeyError, ValueError):
        return None


def _phase(pod: dict[str, Any]) -> str:
    return (pod.get("status") or {}).get("phase") or "Pending"


def _terminating(obj: dict[str, Any]) -> bool:
    return bool(obj.get("metadata", {}).get("deletionTimestamp"))


def exit_code(pod: dict[str, Any], container: str | None) -> int | None:
    """Exit code of the container that decides (the default one, else the first that ended)."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    chosen = [s for s in statuses if s.get("name") == container] or statuses
    for state in chosen:
        terminated = (state.get("state") or {}).get("terminated") or (state.get("lastState") or {}).get("terminated")
        if terminated and terminated.get("exitCode") is not None:
            return int(terminated["exitCode"])
    return None


def _container_restarts(pod: dict[str, Any]) -> int:
    status = pod.get("status") or {}
    statuses = (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or [])
    return sum(int(s.get("restartCount") or 0) for s in statuses)


@dataclass(frozen=True)
class Failure:
    group: str
    pod: str
    uid: str
    exit_code: int | None
    reason: str | None
    retryable: bool

    def describe(self) -> str:
        if self.exit_code is not None:
            return f"pod {self.pod} exited with code {self.exit_code}"
        return f"pod {self.pod} failed ({self.reason or 'no reason given'})"


def classify_failure(group: ReplicaGroup, pod: dict[str, Any]) -> Failure:
    code = exit_code(pod, group.default_container)
    reason = (pod.get("status") or {}).get("reason")
    if group.restart is RestartMode.NEVER:
        retryable = False
    elif group.restart is RestartMode.EXIT_CODE:
        retryable = code in RETRYABLE_EXIT_CODES if code is not None else reason in RETRYABLE_POD_REASONS
    else:
        # OnFailure/Always: the kubelet restarts containers in place; a Failed pod means the pod
        # itself was lost (evicted, node gone), so a new one is made.
        retryable = True
    metadata = pod.get("metadata", {})
    return Failure(group.name, metadata.get("name", ""), metadata.get("uid", ""), code, reason, retryable)


# --- conditions --------------------------------------------------------------------------------


def set_condition(status: JobStatusModel, kind: str, reason: str, message: str, now: str) -> bool:
    """Add or update a True condition with KubeFlow's rules; True when something changed."""
    if status.is_true("Failed"):
        return False  # terminal
    existing = status.condition(kind)
    if existing is not None and existing.status == "True" and existing.reason == reason:
        return False
    exclusive = {"Running": "Restarting", "Restarting": "Running"}.get(kind)
    if exclusive:
        status.conditions = [c for c in status.conditions if c.type != exclusive]
    if kind in ("Succeeded", "Failed"):
        for condition in status.conditions:
            if condition.type in ("Running", "Restarting") and condition.status == "True":
                condition.status = "False"
                condition.last_update_time = condition.last_transition_time = now
    transition = existing.last_transition_time if existing is not None and existing.status == "True" else now
    status.conditions = [c for c in status.conditions if c.type != kind]
    status.conditions.append(Condition(kind, "True", reason, message, now, transition))
    return True


def set_false(status: JobStatusModel, kind: str, reason: str, message: str, now: str) -> bool:
    """Turn a True condition False (pause, resume); absent or False conditions stay as they are."""
    existing = status.condition(kind)
    if existing is None or existing.status != "True":
        return False
    existing.status, existing.reason, existing.message = "False", reason, message
    existing.last_update_time = existing.last_transition_time = now
    return True


# --- the pass ------------------------------------------------------------------------------------


def _rule_met(rule: FinishRule, outcomes: dict[tuple[str, int], Outcome], model: JobModel) -> bool:
    for selector in rule.selectors:
        group = model.group(selector.group)
        if group is None or group.replicas == 0:
            return False
        indices = selector.indices if selector.indices is not None else range(group.replicas)
        hits = sum(1 for i in indices if outcomes.get((group.object_name, i)) is selector.outcome)
        needed = selector.at_least if selector.at_least is not None else len(indices)
        if needed <= 0 or hits < needed:
            return False
    return True


def reconcile(model: JobModel, previous: JobStatusModel, observed: Observed) -> Plan:
    return _Pass(model, previous, observed).run()


class _Pass:
    """The state of one reconcile pass; ``run`` returns its plan."""

    def __init__(self, model: JobModel, previous: JobStatusModel, observed: Observed) -> None:
        self.model = model
        self.previous = previous
        self.observed = observed
        self.status = copy.deepcopy(previous)
        self.plan = Plan(status=self.status, status_changed=False)
        self.now = timestamp(observed.now)
        self.subject = f"{model.kind} {model.namespace}/{model.name}"
        self.pod_at: dict[tuple[str, int], dict[str, Any]] = {}
        self.creating: set[tuple[str, int]] = set()  # pods this pass creates: counted as pending
        for pod in observed.pods:
            position = _index_of(pod)
            if position is not None and not _terminating(pod):
                self.pod_at.setdefault(position, pod)

    def run(self) -> Plan:
        status = self.status
        if status.condition("Created") is None:
            set_condition(status, "Created", "JobCreated", f"{self.subject} is created.", self.now)
        if status.start_time is None:
            status.start_time = self.now
        status.observed_generation = self.model.generation
        live_uids = {p["metadata"].get("uid") for p in self.observed.pods}
        status.restarting_pods = [uid for uid in status.restarting_pods if uid in live_uids]

        if self.model.lifecycle is not None:
            self.model.lifecycle(self)  # the family's state machine does its own accounting
        else:
            if status.finished:
                self.finish(limits_exceeded=False)
            elif self.model.paused:
                self.pause()
            else:
                self.progress()
            self.count()
        self.plan.status_changed = _comparable(status) != _comparable(self.previous)
        if self.plan.status_changed:
            status.last_reconcile_time = self.now
        return self.plan

    def progress(self) -> None:
        """A job still running: limits, pod outcomes, restarts, success, missing children."""
        model, status, plan = self.model, self.status, self.plan
        policy = model.run_policy
        if status.is_true("Paused"):
            set_false(status, "Paused", "JobResumed", f"{self.subject} is resumed.", self.now)
            plan.events.append(Event("Normal", "JobResumed", f"{self.subject} is resumed: recreating its pods."))
        if policy.active_deadline_seconds is not None:
            start = parse_time(status.start_time) or self.observed.now
            remaining = (start - self.observed.now).total_seconds() + policy.active_deadline_seconds
            if remaining <= 0:
                deadline = policy.active_deadline_seconds
                self.fail("DeadlineExceeded", f"{self.subject} was active longer than its deadline of {deadline} s.")
                return
            plan.requeue(remaining)

        outcomes: dict[tuple[str, int], Outcome] = {}
        permanent: list[Failure] = []
        restarted: list[Failure] = []
        for group in model.groups:
            completed = set(status.completed_indices.get(group.name, []))
            for index in range(group.replicas):
                key = (group.object_name, index)
                if index in completed:
                    outcomes[key] = Outcome.SUCCEEDED
                pod = self.pod_at.get(key)
                if pod is None:
                    continue
                phase = _phase(pod)
                if phase == "Succeeded":
                    outcomes[key] = Outcome.SUCCEEDED
                    completed.add(index)
                elif phase == "Failed":
                    failure = classify_failure(group, pod)
                    spent = group.restart_limit is not None and status.group_restarts.get(group.name, 0) >= (
                        group.restart_limit
                    )
                    if not failure.retryable or (spent and failure.uid not in status.restarting_pods):
                        outcomes[key] = Outcome.FAILED
                        permanent.append(failure)
                    elif failure.uid in status.restarting_pods:
                        plan.delete.append(Deletion("v1", "Pod", failure.pod, failure.uid))  # counted already
                    elif policy.backoff_limit is not None and status.restart_count >= policy.backoff_limit:
                        self.fail(
                            "BackoffLimitExceeded",
                            f"{self.subject} has failed because it reached its backoff limit of "
                            f"{policy.backoff_limit} restarts; {failure.describe()}.",
                        )
                        return
                    else:
                        status.restart_count += 1
                        status.group_restarts[group.name] = status.group_restarts.get(group.name, 0) + 1
                        status.restarting_pods.append(failure.uid)
                        plan.delete.append(Deletion("v1", "Pod", failure.pod, failure.uid))
                        restarted.append(failure)
            if completed:
                status.completed_indices[group.name] = sorted(completed)

        if policy.backoff_limit is not None:
            in_place = sum(_container_restarts(p) for p in self.pod_at.values())
            if in_place + status.restart_count > policy.backoff_limit:
                self.fail(
                    "BackoffLimitExceeded",
                    f"{self.subject} has failed because it reached its backoff limit of {policy.backoff_limit} "
                    f"restarts ({in_place} in place, {status.restart_count} by recreation).",
                )
                return

        failed_rule = next((rule for rule in model.failure_rules if _rule_met(rule, outcomes, model)), None)
        if failed_rule is not None:
            self.fail("FailureRuleMet", failed_rule.description)
            return

        if permanent and model.fail_on_permanent_failure:
            first = permanent[0]
            count = sum(1 for f in permanent if f.group == first.group)
            self.fail("JobFailed", f"{self.subject} has failed because {count} {first.group} replica(s) failed: "
                      f"{first.describe()}.")  # fmt: skip
            return

        met = next((rule for rule in model.success_rules if _rule_met(rule, outcomes, model)), None)
        if met is not None:
            message = f"{self.subject} successfully completed ({met.description})."
            set_condition(status, "Succeeded", "JobSucceeded", message, self.now)
            status.completion_time = self.now
            plan.events.append(Event("Normal", "JobSucceeded", message))
            self.finish(limits_exceeded=False)
            return

        if not model.fail_on_permanent_failure and all(
            (g.object_name, i) in outcomes for g in model.groups for i in range(g.replicas)
        ):
            # Every replica is done for good and no rule decided: nothing more can happen.
            self.fail("NoRuleMet", f"{self.subject} has failed: every replica finished and no success rule was met.")
            return

        if restarted:
            budget = "" if policy.backoff_limit is None else f" of {policy.backoff_limit}"
            for failure in restarted:
                message = (
                    f"{failure.describe()}, which is retryable: recreating it (restart {status.restart_count}{budget})."
                )
                plan.events.append(Event("Warning", "JobRestarting", message))
            groups = "/".join(sorted({f.group for f in restarted}))
            message = f"{self.subject} is restarting because {len(restarted)} {groups} replica(s) failed."
            set_condition(status, "Restarting", "JobRestarting", message, self.now)

        self.ensure_children()

        # Running: every replica that has not finished has a pod, and all those pods run.
        unfinished = [
            (g.object_name, i) for g in model.groups for i in range(g.replicas) if (g.object_name, i) not in outcomes
        ]
        pod_at = self.pod_at
        if unfinished and not restarted and all(k in pod_at and _phase(pod_at[k]) == "Running" for k in unfinished):
            set_condition(status, "Running", "JobRunning", f"{self.subject} is running.", self.now)

    def ensure_children(self) -> None:
        model, observed, plan = self.model, self.observed, self.plan
        existing_pods = {p["metadata"]["name"] for p in observed.pods}
        existing_services = {s["metadata"]["name"] for s in observed.services}
        gang_scheduled = gang(model, observed)
        extras = [*model.extra_objects, *([build_pod_group(model)] if gang_scheduled else [])]
        present = observed.existing | {("Service", name) for name in existing_services}
        plan.create.extend(e for e in extras if (e["kind"], e["metadata"]["name"]) not in present)
        created: list[str] = []
        for group in model.groups:
            completed = set(self.status.completed_indices.get(group.name, []))
            for index in range(group.replicas):
                name = pod_name(model, group, index)
                if wants_service(group) and name not in existing_services:
                    plan.create.append(build_service(model, group, index))
                if index in completed or name in existing_pods:
                    continue
                plan.create.append(build_pod(model, group, index, gang_scheduled=gang_scheduled))
                self.creating.add((group.object_name, index))
                created.append(name)
        # Scale down: pods and services beyond a group's replicas, or of groups no longer in the job.
        wanted = {pod_name(model, g, i) for g in model.groups for i in range(g.replicas)}
        wanted |= {e["metadata"]["name"] for e in model.extra_objects if e["kind"] == "Service"}
        for kind, items in (("Pod", observed.pods), ("Service", observed.services)):
            for item in items:
                name = item["metadata"]["name"]
                if name not in wanted and not _terminating(item):
                    plan.delete.append(Deletion("v1", kind, name, item["metadata"].get("uid")))
        if created:
            shown = ", ".join(created[:10]) + (f" and {len(created) - 10} more" if len(created) > 10 else "")
            plan.events.append(Event("Normal", "SuccessfulCreatePod", f"Created pod(s): {shown}"))

    def pause(self) -> None:
        """Paused (T9k): delete every pod, create none; completed indices stay remembered."""
        status, plan = self.status, self.plan
        removed = []
        for pod in self.observed.pods:
            if not _terminating(pod):
                plan.delete.append(Deletion("v1", "Pod", pod["metadata"]["name"], pod["metadata"].get("uid")))
                removed.append(pod["metadata"]["name"])
        for kind in ("Running", "Restarting"):
            set_false(status, kind, "JobPaused", f"{self.subject} is paused.", self.now)
        if set_condition(status, "Paused", "JobPaused", f"{self.subject} is paused.", self.now):
            message = f"{self.subject} is paused" + (f": deleting pod(s) {', '.join(removed)}." if removed else ".")
            plan.events.append(Event("Normal", "JobPaused", message))

    def fail(self, reason: str, message: str) -> None:
        set_condition(self.status, "Failed", reason, message, self.now)
        self.status.completion_time = self.now
        self.plan.events.append(Event("Warning", reason, message))
        over_limits = reason in ("DeadlineExceeded", "BackoffLimitExceeded")
        self.finish(limits_exceeded=over_limits and self.model.run_policy.stop_pods_over_limits)

    def finish(self, *, limits_exceeded: bool) -> None:
        """Clean up per cleanPodPolicy and schedule the TTL; a job over its limits also stops its pods."""
        model, observed, plan = self.model, self.observed, self.plan
        policy = model.run_policy.clean_pod_policy
        deleting = {d.name for d in plan.delete}
        removed: list[str] = []
        for pod in observed.pods:
            name = pod["metadata"]["name"]
            if _terminating(pod) or name in deleting:
                continue
            active = _phase(pod) in ACTIVE_PHASES
            if policy is CleanPodPolicy.ALL or (active and (policy is CleanPodPolicy.RUNNING or limits_exceeded)):
                plan.delete.append(Deletion("v1", "Pod", name, pod["metadata"].get("uid")))
                removed.append(name)
        for service in observed.services:
            if service["metadata"]["name"] in removed and not _terminating(service):
                plan.delete.append(
                    Deletion("v1", "Service", service["metadata"]["name"], service["metadata"].get("uid"))
                )
        if removed:
            message = f"Deleted pod(s) per cleanPodPolicy {policy.value}: {', '.join(removed)}"
            plan.events.append(Event("Normal", "SuccessfulDeletePod", message))
        if model.finish_deletes_extra_services:
            extra_services = {e["metadata"]["name"] for e in model.extra_objects if e["kind"] == "Service"}
            for service in observed.services:
                name = service["metadata"]["name"]
                if name in extra_services and not _terminating(service) and name not in deleting:
                    plan.delete.append(Deletion("v1", "Service", name, service["metadata"].get("uid")))
        if ("PodGroup", model.name) in observed.existing:
            plan.delete.append(Deletion(POD_GROUP_API, "PodGroup", model.name, None))  # the gang is over
        ttl = model.run_policy.ttl_seconds_after_finished
        finished_at = parse_time(self.status.completion_time)
        if ttl is not None and finished_at is not None:
            remaining = (finished_at - observed.now).total_seconds() + ttl
            if remaining <= 0:
                plan.delete_job = True
            else:
                plan.requeue(remaining)

    def count(self) -> None:
        """Pod counts as they will be once this plan is carried out (so the next pass writes nothing)."""
        counts: dict[str, ReplicaCounts] = {}
        summary = []
        deleting = {d.name for d in self.plan.delete if d.kind == "Pod"}
        tracked: dict[str, list[ReplicaPod]] = {}
        for group in self.model.groups:
            c = ReplicaCounts()
            running = 0
            for index in range(group.replicas):
                pod = self.pod_at.get((group.object_name, index))
                if pod is not None and pod["metadata"]["name"] in deleting:
                    pod = None
                if self.model.track_pods:
                    tracked.setdefault(group.name, []).append(self._replica_pod(group, index, pod))
                if pod is None:
                    if index in self.status.completed_indices.get(group.name, []):
                        c.succeeded += 1
                    elif (group.object_name, index) in self.creating:
                        c.active += 1
                    continue
                phase = _phase(pod)
                if phase in ACTIVE_PHASES:
                    c.active += 1
                    running += phase == "Running"
                elif phase == "Succeeded":
                    c.succeeded += 1
                elif phase == "Failed":
                    c.failed += 1
                    c.evicted += (pod.get("status") or {}).get("reason") == "Evicted"
            counts[group.name] = c
            summary.append(f"{group.name} {running}/{group.replicas}")
        self.status.replica_statuses = counts
        self.status.replica_summary = ", ".join(summary)
        if self.model.track_pods:
            self.status.replica_pods = tracked

    def _replica_pod(self, group: ReplicaGroup, index: int, pod: dict[str, Any] | None) -> ReplicaPod:
        name = pod_name(self.model, group, index)
        if pod is not None:
            states = tuple(
                (str(c.get("name", "")), c.get("state") or {})
                for c in (pod.get("status") or {}).get("containerStatuses") or []
                if isinstance(c, dict)
            )
            uid = pod["metadata"].get("uid", "")
            return ReplicaPod(index, name, uid, _phase(pod), _container_restarts(pod), states)
        if index in self.status.completed_indices.get(group.name, []):
            return ReplicaPod(index, name, "", "Succeeded")
        if (group.object_name, index) in self.creating:
            return ReplicaPod(index, name, "", "Creating")
        return ReplicaPod(index, name, "", "Deleted")


def _comparable(status: JobStatusModel) -> tuple[Any, ...]:
    return (
        [(c.type, c.status, c.reason, c.message) for c in status.conditions],
        {k: (v.active, v.succeeded, v.failed, v.evicted) for k, v in status.replica_statuses.items()},
        status.start_time,
        status.completion_time,
        status.restart_count,
        status.completed_indices,
        status.restarting_pods,
        status.observed_generation,
        status.replica_summary,
        status.group_restarts,
        {
            k: [(p.index, p.name, p.uid, p.phase, p.restarts, p.containers) for p in v]
            for k, v in status.replica_pods.items()
        },
        status.phase,
        status.run_version,
        status.extra,
    )


def ceil_fraction(rate_percent: int, total: int) -> int:
    return math.ceil(rate_percent * total / 100)
