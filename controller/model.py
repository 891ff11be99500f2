"""The common model every job kind is reduced to, and the status the engine computes.

An adapter turns a job (already defaulted by the rule engine) into a ``JobModel``: ordered
replica groups with their pod templates and restart rules, a run policy, and success and
failure rules. The engine reconciles only this model; the adapter projects the engine's
``JobStatusModel`` back into the job's own status shape.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

# Exit codes that mean "killed from outside, try again": SIGINT (130), SIGKILL (137, also the
# OOM killer and node pressure), SIGUSR1 (138, a program asking to be retried), SIGTERM (143).
# Every other code is the program's own failure and permanent (KubeDL's classification).
RETRYABLE_EXIT_CODES = frozenset({130, 137, 138, 143})
# Pod-level failures with no exit code of the program: the pod, not the program, failed.
RETRYABLE_POD_REASONS = frozenset(
    {"Evicted", "OOMKilled", "Killed", "UnexpectedAdmissionError", "NodeLost", "Shutdown"}
)


class RestartMode(StrEnum):
    ALWAYS = "Always"
    ON_FAILURE = "OnFailure"
    NEVER = "Never"
    EXIT_CODE = "ExitCode"


class CleanPodPolicy(StrEnum):
    ALL = "All"
    RUNNING = "Running"
    NONE = "None"


class Outcome(StrEnum):
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


# env(group, index) -> environment variables for the pod's containers
EnvHook = Callable[["ReplicaGroup", int], dict[str, list[dict[str, Any]]]]


def child_name(job_name: str, group_object_name: str, index: int) -> str:
    """``<job>-<type>-<index>``: the name of a replica's pod and of its headless service."""
    return f"{job_name}-{group_object_name}-{index}"


@dataclass(frozen=True)
class ReplicaGroup:
    """One replica type: ``replicas`` pods from ``template``."""

    name: str  # as in the job, e.g. "Worker"
    replicas: int
    template: dict[str, Any]
    restart: RestartMode
    default_container: str | None  # whose exit code decides, and which gets the framework env
    port: tuple[str, int] | None = None  # the named port the per-replica service exposes
    master_indices: frozenset[int] = frozenset()
    # The controller, not the kubelet, restarts this group's pods (T9k, DIJob): the pod gets
    # restartPolicy Never and a failed pod is recreated while the budget lasts.
    controller_restarts: bool = False
    # Restarts allowed for this group (T9k's per-type ``limit``); None: only the job's budget.
    restart_limit: int | None = None
    # Ports of a per-replica service (T9k ``spec.service.ports``); used instead of ``port``.
    service_ports: tuple[dict[str, Any], ...] = ()

    @property
    def object_name(self) -> str:
        """The lower-case form used in pod names and labels."""
        return self.name.lower()

    @property
    def pod_restart_policy(self) -> str:
        """What goes on the pod: ExitCode restarts are the controller's, so the pod never restarts."""
        if self.restart is RestartMode.EXIT_CODE or self.controller_restarts:
            return "Never"
        return self.restart.value


@dataclass(frozen=True)
class Selector:
    """Pods of ``group`` (all indices, or the given ones) that reached ``outcome``.

    ``at_least`` turns the selector into a count: that many of the selected pods.
    """

    group: str
    indices: tuple[int, ...] | None = None
    outcome: Outcome = Outcome.SUCCEEDED
    at_least: int | None = None


@dataclass(frozen=True)
class FinishRule:
    """All selectors hold."""

    selectors: tuple[Selector, ...]
    description: str


@dataclass(frozen=True)
class RunPolicy:
    clean_pod_policy: CleanPodPolicy = CleanPodPolicy.RUNNING
    ttl_seconds_after_finished: int | None = None
    active_deadline_seconds: int | None = None
    backoff_limit: int | None = None
    gang_min_member: int | None = None  # None: no gang scheduling
    queue: str | None = None
    priority_class: str | None = None
    # Kubeflow: a job over its deadline or backoff limit stops its pods whatever cleanPodPolicy says.
    # DI-orchestrator applies cleanPodPolicy alone (None keeps them).
    stop_pods_over_limits: bool = True


@dataclass(frozen=True)
class JobModel:
    kind: str
    api_version: str
    namespace: str
    name: str
    uid: str
    generation: int
    groups: tuple[ReplicaGroup, ...]
    run_policy: RunPolicy
    success_rules: tuple[FinishRule, ...]  # any of them
    labels: dict[str, str]  # on every child, besides the per-replica ones
    env: EnvHook | None = None
    extra_objects: tuple[dict[str, Any], ...] = ()  # e.g. the MPI hostfile ConfigMap
    pod_decoration: Callable[[ReplicaGroup, int, dict[str, Any]], None] | None = None
    # Any of these met fails the job (T9k ``failureRules``); a replica counts as failed when its
    # pod failed for good or its group's restart limit is spent.
    failure_rules: tuple[FinishRule, ...] = ()
    # KubeDL/Kubeflow: one permanently failed replica fails the job. T9k leaves that to failureRules.
    fail_on_permanent_failure: bool = True
    # T9k ``runMode.pause.enabled``: no pods while paused; they are recreated on resume.
    paused: bool = False
    # Record every replica's pod (name, uid, phase) in the status: T9k ``tasks``, DI ``taskStatus``.
    track_pods: bool = False
    # DI-orchestrator: the job's Services among ``extra_objects`` go when the job finishes.
    finish_deletes_extra_services: bool = False
    # A family with its own job state machine (Volcano's lifecycle policies) takes over the
    # progress of a pass: the engine hands it the pass (children builders, plan, status) instead
    # of running its restart/success logic. None keeps the engine's own behaviour.
    lifecycle: Callable[[Any], None] | None = None

    def group(self, name: str) -> ReplicaGroup | None:
        return next((g for g in self.groups if g.name == name), None)

    @property
    def total_replicas(self) -> int:
        return sum(g.replicas for g in self.groups)


@dataclass
class Condition:
    type: str
    status: str
    reason: str
    message: str
    last_update_time: str
    last_transition_time: str


@dataclass
class ReplicaCounts:
    active: int = 0
    succeeded: int = 0
    failed: int = 0
    evicted: int = 0


@dataclass
class ReplicaPod:
    """The pod of one replica index as the last pass saw it (only with ``JobModel.track_pods``)."""

    index: int
    name: str
    uid: str
    phase: str  # a pod phase, or Creating (this pass creates it) or Deleted (no pod)
    restarts: int = 0  # container restarts in place
    containers: tuple[tuple[str, dict[str, Any]], ...] = ()  # (name, state) as the kubelet reports them


@dataclass
class JobStatusModel:
    conditions: list[Condition] = field(default_factory=list)
    replica_statuses: dict[str, ReplicaCounts] = field(default_factory=dict)
    start_time: str | None = None
    completion_time: str | None = None
    last_reconcile_time: str | None = None
    restart_count: int = 0
    completed_indices: dict[str, list[int]] = field(default_factory=dict)
    restarting_pods: list[str] = field(default_factory=list)
    observed_generation: int | None = None
    replica_summary: str | None = None
    group_restarts: dict[str, int] = field(default_factory=dict)  # restarts per group (per-group limits)
    replica_pods: dict[str, list[ReplicaPod]] = field(default_factory=dict)
    # Used by families with a lifecycle hook: their phase, run version (bumped on every full
    # restart and stamped on pods) and whatever else they keep across passes.
    phase: str | None = None
    run_version: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def condition(self, kind: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == kind), None)

    def is_true(self, kind: str) -> bool:
        condition = self.condition(kind)
        return condition is not None and condition.status == "True"

    @property
    def finished(self) -> bool:
        return self.is_true("Succeeded") or self.is_true("Failed")
