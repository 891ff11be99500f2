"""Volcano's job vocabulary and lifecycle policies: what a Job's spec says, before any pass.

The names Volcano puts on a job's pods, its phases, actions and bus events; the rules the
Volcano adapter derives from a Job (``JobRules``: tasks, lifecycle policies, job-level
children); and which policy turns an event into an action. Kept apart from ``lifecycle``
because none of it sees a pod, a status or the clock: the adapter builds these rules and tests
probe policy matching alone, while ``lifecycle`` is how Volcano's phases carry an action out.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

# Pod labels and annotations Volcano puts on a job's pods.
JOB_NAME_KEY = "volcano.sh/job-name"
JOB_NAMESPACE_KEY = "volcano.sh/job-namespace"
TASK_SPEC_KEY = "volcano.sh/task-spec"
TASK_INDEX_KEY = "volcano.sh/task-index"
QUEUE_NAME_KEY = "volcano.sh/queue-name"
JOB_VERSION_KEY = "volcano.sh/job-version"
RETRY_COUNT_KEY = "volcano.sh/job-retry-count"
TEMPLATE_UID_KEY = "volcano.sh/template-uid"
GROUP_NAME_KEY = "scheduling.k8s.io/group-name"
PARTITION_KEY = "volcano.sh/partition-id"
POD_GROUP_API = "scheduling.volcano.sh/v1beta1"


class Phase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    COMPLETING = "Completing"
    COMPLETED = "Completed"
    ABORTING = "Aborting"
    ABORTED = "Aborted"
    TERMINATING = "Terminating"
    TERMINATED = "Terminated"
    FAILED = "Failed"


class Action(StrEnum):
    SYNC = "SyncJob"
    RESTART_JOB = "RestartJob"
    RESTART_TASK = "RestartTask"
    RESTART_POD = "RestartPod"
    ABORT_JOB = "AbortJob"
    TERMINATE_JOB = "TerminateJob"
    COMPLETE_JOB = "CompleteJob"
    RESUME_JOB = "ResumeJob"
    RESTART_PARTITION = "RestartPartition"


POD_FAILED = "PodFailed"
POD_EVICTED = "PodEvicted"
TASK_COMPLETED = "TaskCompleted"
TASK_FAILED = "TaskFailed"
POD_PENDING = "PodPending"
# Volcano's JobUnknownEvent: one name for a pod the kubelet lost (jobgate) and a job that cannot be judged.
UNKNOWN = "Unknown"
OUT_OF_SYNC = "OutOfSync"
COMMAND_ISSUED = "CommandIssued"
ANY_EVENT = "*"
# Volcano turns these into SyncJob whatever the policies say (``*`` included).
INTERNAL_EVENTS = frozenset({OUT_OF_SYNC, COMMAND_ISSUED, "PodRunning"})

# Go's time.Duration text: policy timeouts are read in it, runningDuration is written in it.
_GO_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_go_duration(value: object) -> float | None:
    """A metav1.Duration (``30s``, ``1m30s``, ``1h``) in seconds; None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    text, sign = value, 1.0
    if text[0] in "+-":
        sign, text = (-1.0 if text[0] == "-" else 1.0), text[1:]
    if text == "0":
        return 0.0
    position, total = 0, 0.0
    for match in _GO_DURATION_PART.finditer(text):
        if match.start() != position:
            return None
        total += float(match.group(1)) * _GO_UNITS[match.group(2)]
        position = match.end()
    return sign * total if position == len(text) and position else None


def go_duration(seconds: float) -> str:
    """A duration as Go prints it (``1h2m3s``), as Volcano's ``runningDuration`` reads."""
    total = max(int(seconds), 0)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


@dataclass(frozen=True)
class Policy:
    """One ``LifecyclePolicy``: events (or ``*``) or one exit code, mapped to an action."""

    action: Action
    events: frozenset[str] = frozenset()
    exit_code: int | None = None
    timeout: float | None = None  # seconds the event must still hold before the action runs

    def matches(self, event: str, code: int | None) -> bool:
        if event in INTERNAL_EVENTS:
            return False
        if self.exit_code is not None:
            return event == POD_FAILED and code == self.exit_code
        if event == POD_PENDING and self.timeout is None:
            return False  # every pod starts Pending: Volcano only acts on one that stays so
        return event in self.events or ANY_EVENT in self.events


@dataclass(frozen=True)
class TaskRules:
    name: str
    replicas: int
    min_available: int
    max_retry: int  # in-place container restarts before TaskFailed; -1 = never
    policies: tuple[Policy, ...] = ()
    partition_size: int | None = None  # pods ``index // size`` form a partition (RestartPartition)
    depends_on: tuple[str, ...] = ()
    depends_on_any: bool = False


@dataclass(frozen=True)
class Child:
    """A job-level child (Service, ConfigMap, Secret, PodGroup) built only when missing."""

    kind: str
    name: str
    build: Callable[[], dict[str, Any]]
    # Set for a child whose content follows the spec (the svc hosts ConfigMap): a digest of that
    # content; when it changes the child is rewritten in place.
    digest: str | None = None


@dataclass(frozen=True)
class JobRules:
    min_available: int
    max_retry: int
    min_success: int | None
    policies: tuple[Policy, ...]
    tasks: tuple[TaskRules, ...]
    children: tuple[Child, ...] = ()
    pod_group: Child | None = None  # only created when the PodGroup API exists
    priority_class: str | None = None
    controlled_resources: dict[str, str] = field(default_factory=dict)  # ``plugin-<name>: <name>``
    scheduler_name: str | None = None

    def task(self, name: str) -> TaskRules | None:
        return next((t for t in self.tasks if t.name == name), None)

    @property
    def total_replicas(self) -> int:
        return sum(t.replicas for t in self.tasks)


@dataclass(frozen=True)
class BusEvent:
    event: str
    task: str
    pod: str | None = None
    uid: str | None = None
    exit_code: int | None = None
    partition: str | None = None
    detail: str = ""

    def describe(self) -> str:
        where = f"pod {self.pod}" if self.pod else f"task {self.task}" if self.task else "the job"
        code = f" (exit code {self.exit_code})" if self.exit_code is not None else ""
        detail = f" ({self.detail})" if self.detail else ""
        return f"{self.event} of {where}{code}{detail}"

    @property
    def timer(self) -> str:
        """What a delayed action waits on: this event of this pod (uid: a new pod starts over) or task."""
        return "/".join((self.event, self.task, self.pod or "", self.uid or ""))


def policy_for(event: BusEvent, rules: JobRules) -> Policy | None:
    """The policy that turns ``event`` into an action: the task's policies first, then the job's."""
    task = rules.task(event.task) if event.task else None
    for policy in (*(task.policies if task else ()), *rules.policies):
        if policy.matches(event.event, event.exit_code):
            return policy
    return None


def resolve(events: list[BusEvent], rules: JobRules) -> tuple[Action, BusEvent | None]:
    """The first event a policy maps to an action (timeouts aside)."""
    for event in events:
        policy = policy_for(event, rules)
        if policy is not None:
            return policy.action, event
    return Action.SYNC, None
