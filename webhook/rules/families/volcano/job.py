"""Validation rules of the Volcano Job (``batch.volcano.sh/v1alpha1``), pure functions.

Each rule mirrors one check of Volcano's validating webhook (``admit_job.go``, ``util.go``)
and keeps Volcano's sentence inside the detail of an apiserver-style field error. Where
Volcano stops at the first problem (UPDATE, a list of policies, volumes, duplicate task
names), these rules go on and report every problem. The queue check needs the cluster's
Queues: the transport hands in a read-only ``QueueView``; without one the check is skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from jobgate.webhook.rules.fielderrors import (
    ErrorType,
    FieldError,
    FieldPath,
    Key,
    forbidden,
    invalid,
    required,
)
from jobgate.webhook.rules.jobmeta import as_int, check_spec_schema, job_name
from jobgate.webhook.rules.modelref import ModelRef
from jobgate.webhook.rules.names import dns1123_label_problems
from jobgate.webhook.rules.podtemplate import Findings, check_pod_template, clip_warning
from jobgate.webhook.rules.quantity import parse_quantity

# Events and actions a user may write (volcano-sh/apis bus/v1alpha1, as the webhook filters them).
USER_EVENTS: tuple[str, ...] = (
    "*",
    "PodFailed",
    "PodEvicted",
    "PodPending",
    "Unknown",
    "TaskCompleted",
    "TaskFailed",
    "JobUpdated",
)
USER_ACTIONS: tuple[str, ...] = (
    "AbortJob",
    "RestartJob",
    "RestartTask",
    "RestartPod",
    "RestartPartition",
    "TerminateJob",
    "CompleteJob",
    "ResumeJob",
)
PLUGINS: tuple[str, ...] = ("ssh", "env", "svc", "tensorflow", "mpi", "pytorch", "hcclrank", "ray")
DEFAULT_MPI_MASTER = "master"
ANY_EVENT = "*"

_VALID_LISTS = f"valid events are [{', '.join(USER_EVENTS)}], valid actions are [{', '.join(USER_ACTIONS)}]"
UPDATE_FORBIDDEN = (
    "job updates may not change fields other than `minAvailable`, `tasks[*].replicas under spec` and "
    "`PriorityClassName`"
)
TIER_CONFLICT = "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously"
DAG_MESSAGE = "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG)"
CLAIM_CONFLICT = (
    "conflict: If you want to use an existing PVC, just specify VolumeClaimName."
    "If you want to create a new PVC, you do not need to specify VolumeClaimName"
)

_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_QUALIFIED_NAME_MESSAGE = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS1123_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_GENERATED_SUFFIX_LENGTH = 5
# Older Volcano releases worded several messages differently; their users' scripts may grep for the old
# words, so the detail carries them too, after the current wording, as "(before Volcano X: ...)".
LEGACY = "before Volcano"
_RFC1123_LABEL = "a lowercase RFC 1123 label"
_TASK_NAME_PATTERN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_LABEL = "a DNS-1123 label"


def qualified_name_problems(value: str) -> list[str]:
    """k8s IsQualifiedName for a name without prefix (what Volcano checks job and pod names with)."""
    if not value:
        return ["name part must be non-empty"]
    problems = []
    if len(value) > 63:
        problems.append("name part must be no more than 63 characters")
    if not _QUALIFIED_NAME.fullmatch(value):
        problems.append(_QUALIFIED_NAME_MESSAGE)
    return problems


def dns1123_subdomain_problems(value: str) -> list[str]:
    problems = []
    if len(value) > 253:
        problems.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        problems.append(_DNS1123_SUBDOMAIN_MESSAGE)
    return problems


# --- queues -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueueInfo:
    """What the queue check needs of a ``scheduling.volcano.sh`` Queue."""

    name: str
    state: str
    child_count: int


class QueueView(Protocol):
    """Read-only view of the cluster's Queues (a watch-backed cache in the webhook)."""

    def queue(self, name: str) -> QueueInfo | None: ...


class QueueSnapshot:
    """A ``QueueView`` over Queue objects given at once (``jobgate validate --queues``, tests)."""

    def __init__(self, queues: list[Any]) -> None:
        self._by_name: dict[str, dict[str, Any]] = {}
        self._children: dict[str, int] = {}
        for obj in queues:
            metadata = obj.get("metadata") if isinstance(obj, dict) else None
            name = metadata.get("name") if isinstance(metadata, dict) else None
            if not isinstance(name, str):
                continue
            self._by_name[name] = obj
            spec = obj.get("spec")
            parent = spec.get("parent") if isinstance(spec, dict) else None
            if isinstance(parent, str) and parent:
                self._children[parent] = self._children.get(parent, 0) + 1

    def queue(self, name: str) -> QueueInfo | None:
        obj = self._by_name.get(name)
        if obj is None:
            return None
        status = obj.get("status")
        state = status.get("state") if isinstance(status, dict) else None
        return QueueInfo(name, state if isinstance(state, str) else "", self._children.get(name, 0))


class QueueSource:
    """Where the webhook puts its Queue cache; the rules only read it.

    Unset offline and in clusters without Volcano's Queue CRD: the queue check is then
    skipped, and ``skipped`` tells the CLI to say so (once).
    """

    def __init__(self) -> None:
        self.view: QueueView | None = None
        self.skipped = False

    def install(self, view: QueueView | None) -> None:
        self.view = view


QUEUES = QueueSource()
QUEUE_CHECK_SKIPPED = (
    "the Volcano queue check (queue exists, is Open, is a leaf) was skipped: it needs the cluster's Queues"
)


def check_queue(obj: dict[str, Any], queues: QueueView) -> list[FieldError]:
    """The job's queue exists, is Open, is not root and is a leaf (Volcano's order)."""
    spec = obj.get("spec")
    name = spec.get("queue") if isinstance(spec, dict) else None
    if not isinstance(name, str) or not name:
        return []
    path: FieldPath = ("spec", "queue")
    info = queues.queue(name)
    if info is None:
        return [
            FieldError(
                ErrorType.NOT_FOUND,
                path,
                name,
                f'unable to find job queue: queue.scheduling.volcano.sh "{name}" not found',
            )
        ]
    if info.state != "Open":
        return [
            invalid(
                path, name, f"can only submit job to queue with state `Open`, queue `{name}` status is `{info.state}`"
            )
        ]
    if name == "root":
        return [invalid(path, name, "can not submit job to root queue")]
    if info.child_count > 0:
        return [
            invalid(
                path, name, f"can only submit job to leaf queue, queue `{name}` has {info.child_count} child queues"
            )
        ]
    return []


# --- the job ----------------------------------------------------------------------------


def _tasks(spec: dict[str, Any] | None) -> list[tuple[int, dict[str, Any]]]:
    tasks = spec.get("tasks") if spec is not None else None
    if not isinstance(tasks, list):
        return []
    return [(i, t) for i, t in enumerate(tasks) if isinstance(t, dict)]


def _name(task: dict[str, Any]) -> str:
    name = task.get("name")
    return name if isinstance(name, str) else ""


def validate_job(
    obj: dict[str, Any], old: dict[str, Any] | None, spec_model: ModelRef, queues: QueueView | None = None
) -> Findings:
    """Every violation of the (defaulted) job; UPDATE rules when ``old`` is given, CREATE rules otherwise.

    Like Volcano, UPDATE does not re-run the CREATE-only checks (policies, plugins, volumes,
    templates, DAG, queue): the immutability rule keeps those parts as they were admitted.
    """
    found = Findings()
    spec = check_spec_schema(obj, spec_model, found)
    if old is not None:
        found.errors.extend(_update_errors(obj, old, spec))
        return found
    found.errors.extend(_create_errors(obj, spec, found))
    if spec is not None:
        found.warnings.extend(policy_warnings(spec))
    queues = queues if queues is not None else QUEUES.view
    if queues is not None:
        found.errors.extend(check_queue(obj, queues))
    else:
        QUEUES.skipped = True
    return found


def _create_errors(obj: dict[str, Any], spec: dict[str, Any] | None, found: Findings) -> Iterator[FieldError]:
    job = job_name(obj)
    yield from _job_name_errors(obj)
    if spec is None:
        return
    tasks = _tasks(spec)
    raw_tasks = spec.get("tasks")
    if raw_tasks is None or (isinstance(raw_tasks, list) and not raw_tasks):
        yield required(("spec", "tasks"), "No task specified in job spec")
    yield from _negative_errors(spec, tasks, job)
    yield from _plugin_errors(spec, tasks)
    yield from _tier_errors(spec.get("networkTopology"), ("spec", "networkTopology"))

    total_replicas = 0
    seen_names: set[str] = set()
    for index, task in tasks:
        path: FieldPath = ("spec", "tasks", index)
        name = _name(task)
        replicas = as_int(task.get("replicas")) or 0
        min_available = as_int(task.get("minAvailable"))
        total_replicas += replicas
        if min_available is not None and min_available > replicas:
            yield invalid(
                (*path, "minAvailable"),
                min_available,
                f"'minAvailable' is greater than 'replicas' in task: {name}, job: {job}",
            )
        if name in seen_names:
            yield FieldError(ErrorType.DUPLICATE, (*path, "name"), name, f"duplicated task name {name}")
        seen_names.add(name)
        if name:
            problems = dns1123_label_problems(name)
            if problems and not _TASK_NAME_PATTERN.fullmatch(name):
                # What Volcano's CRD (1.14+) makes the apiserver say before its webhook runs.
                yield invalid(
                    (*path, "name"),
                    name,
                    f"spec.tasks[{index}].name in body should match '{_TASK_NAME_PATTERN.pattern}'",
                )
            for problem in problems:
                yield invalid((*path, "name"), name, _task_name_detail(problem))
        yield from _policy_errors(task.get("policies"), (*path, "policies"))
        yield from _pod_name_errors(job, name, index, replicas, path)
        template = task.get("template")
        if template is None:
            yield required((*path, "template"), f"spec.task[{index}].template.spec.containers: Required value")
        else:
            template_found = check_pod_template(
                template, (*path, "template"), where=f"tasks[{name or index}]", replica_restart_policy=None
            )
            found.warnings.extend(template_found.warnings)
            yield from template_found.errors
            if not template_found.errors:
                yield from _numa_errors(task, index, path)
                yield from _pod_level_resource_errors(template, index, path)
        yield from _partition_errors(task, path, name=name, job=job, replicas=replicas, min_available=min_available)

    job_min = as_int(spec.get("minAvailable"))
    if job_min is not None and job_min > total_replicas:
        yield invalid(
            ("spec", "minAvailable"), job_min, "job 'minAvailable' should not be greater than total replicas in tasks"
        )
    yield from _policy_errors(spec.get("policies"), ("spec", "policies"))
    yield from _volume_errors(spec.get("volumes"))
    yield from _dag_errors(tasks)
    yield from _name_field_errors(spec, found)


def _task_name_detail(problem: str) -> str:
    """Volcano prints the problem list as Go does (``[...];``); before 1.9 the apimachinery of its day said DNS-1123."""
    detail = f"[{problem}];"
    if problem.startswith(_RFC1123_LABEL):
        detail += f" ({LEGACY} 1.9: [{_DNS1123_LABEL}{problem[len(_RFC1123_LABEL) :]}];)"
    return detail


def _job_name_errors(obj: dict[str, Any]) -> Iterator[FieldError]:
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        yield required(("metadata",))
        return
    path: FieldPath = ("metadata", "name")
    name = metadata.get("name")
    full = name
    if name in (None, ""):
        name = metadata.get("generateName")
        path = ("metadata", "generateName")
        if name in (None, ""):
            yield required(("metadata", "name"), "name or generateName is required")
            return
        full = f"{name}{'x' * _GENERATED_SUFFIX_LENGTH}" if isinstance(name, str) else name
    if not isinstance(full, str):
        yield invalid(path, name, "must be of type string")
        return
    problems = qualified_name_problems(full)
    if problems:
        yield invalid(path, name, f"create job with name {name} validate failed [{', '.join(problems)}]")


def _pod_name_errors(job: str, task: str, index: int, replicas: int, path: FieldPath) -> Iterator[FieldError]:
    # Volcano checks "<job>-<task>-<task position>"; the pods are named with the replica index,
    # so the longer of the two is checked: the name of the last pod the controller creates.
    if not job or not task:
        return
    last = max(index, replicas - 1)
    pod = f"{job}-{task}-{last}"
    problems = qualified_name_problems(pod)
    if problems:
        yield invalid((*path, "name"), task, f"create pod with name {pod} validate failed [{', '.join(problems)}]")


def _negative_errors(spec: dict[str, Any], tasks: list[tuple[int, dict[str, Any]]], job: str) -> Iterator[FieldError]:
    # The CRD schema refuses these too; Volcano's webhook (before 1.14) said it in these words.
    checks = (
        ("minAvailable", f"job 'minAvailable' must be >= 0. ({LEGACY} 1.0: 'minAvailable' must be greater than zero.)"),
        ("maxRetry", "'maxRetry' cannot be less than zero."),
        ("ttlSecondsAfterFinished", "'ttlSecondsAfterFinished' cannot be less than zero."),
    )
    for key, message in checks:
        value = as_int(spec.get(key))
        if value is not None and value < 0:
            yield invalid(("spec", key), value, message)
    total_replicas = sum(as_int(task.get("replicas")) or 0 for _, task in tasks)
    job_min = as_int(spec.get("minAvailable"))
    for index, task in tasks:
        name = _name(task)
        replicas = as_int(task.get("replicas"))
        if replicas is not None and replicas < 0:
            detail = f"'replicas' < 0 in task: {name}, job: {job};"
            if job_min is not None and job_min > total_replicas:
                # Volcano 1.9-1.13 said both problems in one sentence, in this order.
                detail += " job 'minAvailable' should not be greater than total replicas in tasks;"
            detail += (
                f" ({LEGACY} 1.9: 'replicas' < 0 in task: {name}; "
                f"{LEGACY} 1.0: 'replicas' is not set positive in task: {name};)"
            )
            yield invalid(("spec", "tasks", index, "replicas"), replicas, detail)
        min_available = as_int(task.get("minAvailable"))
        if min_available is not None and min_available < 0:
            yield invalid(
                ("spec", "tasks", index, "minAvailable"),
                min_available,
                f"'minAvailable' < 0 in task: {name}, job: {job};",
            )


def _name_field_errors(spec: dict[str, Any], found: Findings) -> Iterator[FieldError]:
    # Patterns and lengths of Volcano's CRD, which the structural schema checker leaves to the rules.
    priority_class = spec.get("priorityClassName")
    if isinstance(priority_class, str) and priority_class:
        for problem in dns1123_subdomain_problems(priority_class):
            yield invalid(("spec", "priorityClassName"), priority_class, problem)
    # Volcano's webhook admits any queue name (its own tables submit to "childQueue"); only its CRD
    # (1.14 and later) has the pattern, and the apiserver applies that one before any webhook. So a
    # warning here, never a verdict of the webhook's own.
    queue = spec.get("queue")
    if isinstance(queue, str) and queue:
        for problem in dns1123_subdomain_problems(queue):
            found.warnings.append(clip_warning(f"spec.queue: {queue!r}: Volcano's CRD refuses it: {problem}"))
    scheduler = spec.get("schedulerName")
    if isinstance(scheduler, str) and len(scheduler) > 63:
        yield FieldError(ErrorType.TOO_LONG, ("spec", "schedulerName"), detail="may not be more than 63 bytes")


def _tier_errors(topology: Any, path: FieldPath) -> Iterator[FieldError]:
    if not isinstance(topology, dict):
        return
    if topology.get("highestTierAllowed") is not None and topology.get("highestTierName") not in (None, ""):
        yield forbidden((*path, "highestTierName"), TIER_CONFLICT)


def _plugin_errors(spec: dict[str, Any], tasks: list[tuple[int, dict[str, Any]]]) -> Iterator[FieldError]:
    plugins = spec.get("plugins")
    if not isinstance(plugins, dict):
        return
    for name in plugins:
        if name not in PLUGINS:
            yield invalid(("spec", "plugins", Key(name)), name, f"unable to find job plugin: {name}")
    if "mpi" in plugins:
        master = _flag_value(plugins.get("mpi"), "master") or DEFAULT_MPI_MASTER
        if master not in {_name(t) for _, t in tasks}:
            yield invalid(("spec", "plugins", Key("mpi")), master, "The specified mpi master task was not found")


def _flag_value(arguments: Any, flag: str) -> str | None:
    """The value of ``--flag=v``, ``-flag=v`` or ``--flag v`` in plugin arguments (Go flag syntax)."""
    if not isinstance(arguments, list):
        return None
    args = [a for a in arguments if isinstance(a, str)]
    for position, argument in enumerate(args):
        bare = argument.lstrip("-")
        if not argument.startswith("-"):
            continue
        if bare.startswith(f"{flag}="):
            return bare.split("=", 1)[1]
        if bare == flag and position + 1 < len(args):
            return args[position + 1]
    return None


def _policy_errors(policies: Any, path: FieldPath) -> Iterator[FieldError]:
    """Volcano's validatePolicies over one list (job-level, or one task's)."""
    if not isinstance(policies, list):
        return
    seen_events: set[str] = set()
    seen_codes: set[int] = set()
    for index, policy in enumerate(policies):
        if not isinstance(policy, dict):
            continue
        policy_path = (*path, index)
        located = list(_policy_events(policy, policy_path))
        exit_code = as_int(policy.get("exitCode"))
        if located and policy.get("exitCode") is not None:
            yield forbidden((*policy_path, "exitCode"), "must not specify event and exitCode simultaneously")
            continue
        if not located and policy.get("exitCode") is None:
            yield required(policy_path, "either event and exitCode should be specified")
            continue
        action = policy.get("action")
        if located:
            if action not in USER_ACTIONS:
                yield invalid((*policy_path, "action"), action or "", f"invalid policy action; {_VALID_LISTS}")
            for event, event_path in located:
                if event not in USER_EVENTS:
                    yield invalid(event_path, event, f"invalid policy event; {_VALID_LISTS}")
                elif event in seen_events:
                    yield FieldError(
                        ErrorType.DUPLICATE, event_path, event, f"duplicate event {event}  across different policy"
                    )
                seen_events.add(event)
        elif exit_code is not None:
            if exit_code == 0:
                yield invalid((*policy_path, "exitCode"), 0, "0 is not a valid error code")
            elif exit_code in seen_codes:
                yield FieldError(
                    ErrorType.DUPLICATE, (*policy_path, "exitCode"), exit_code, f"duplicate exitCode {exit_code}"
                )
            seen_codes.add(exit_code)
    if ANY_EVENT in seen_events and len(seen_events) > 1:
        yield invalid(path, ANY_EVENT, "if there's * here, no other policy should be here")


def _policy_events(policy: dict[str, Any], path: FieldPath) -> Iterator[tuple[str, FieldPath]]:
    """(event, where it is written) for ``events`` then ``event``, each event once."""
    seen: set[str] = set()
    events = policy.get("events")
    if isinstance(events, list):
        for index, event in enumerate(events):
            if isinstance(event, str) and event and event not in seen:
                seen.add(event)
                yield event, (*path, "events", index)
    event = policy.get("event")
    if isinstance(event, str) and event and event not in seen:
        yield event, (*path, "event")


def policy_warnings(spec: dict[str, Any]) -> list[str]:
    """Exit-code policies whose action Volcano does not check (it admits them; the controller ignores them)."""
    warnings = []
    lists = [("spec.policies", spec.get("policies"))]
    lists += [(f"spec.tasks[{i}].policies", t.get("policies")) for i, t in _tasks(spec)]
    for where, policies in lists:
        for index, policy in enumerate(policies if isinstance(policies, list) else []):
            if isinstance(policy, dict) and policy.get("exitCode") is not None:
                action = policy.get("action")
                if action not in USER_ACTIONS:
                    what = f"action {json.dumps(action)}" if action not in (None, "") else "no action"
                    warnings.append(clip_warning(f"{where}[{index}]: exit-code policy with {what}: Volcano runs none"))
    return warnings


def _numa_errors(task: dict[str, Any], index: int, path: FieldPath) -> Iterator[FieldError]:
    """A NUMA topologyPolicy needs whole CPUs in every container (requests, else limits)."""
    policy = task.get("topologyPolicy")
    if policy in (None, "", "none"):
        return
    template = task.get("template")
    pod_spec = template.get("spec") if isinstance(template, dict) else None
    if not isinstance(pod_spec, dict):
        return
    containers = [
        (key, i, c)
        for key in ("containers", "initContainers")
        for i, c in enumerate(pod_spec.get(key) or [])
        if isinstance(c, dict)
    ]
    for position, (key, i, container) in enumerate(containers):
        resources = container.get("resources")
        resources = resources if isinstance(resources, dict) else {}
        requests = resources.get("requests")
        values = requests if isinstance(requests, dict) and requests else resources.get("limits")
        cpu = values.get("cpu") if isinstance(values, dict) else None
        nanos = parse_quantity(cpu) if cpu is not None else 0
        if nanos is None:
            continue  # the pod-template check reports an unparsable quantity
        millis = -(-nanos // 10**6)
        if millis % 1000:
            yield invalid(
                (*path, "template", "spec", key, i, "resources"),
                cpu,
                f"the cpu request isn't an integer in spec.task[{index}] container[{position}]. "
                f"({LEGACY} 1.14: the cpu request isn't  an integer in spec.task[{index}] container[{position}].)",
            )


_BINARY_SUFFIXES = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
_NANO = 10**9


def _format_quantity(nanos: int, binary: bool) -> str:
    """A quantity as Kubernetes prints a sum (the largest exact suffix)."""
    if nanos % _NANO == 0:
        whole = nanos // _NANO
        if binary:
            for suffix, size in _BINARY_SUFFIXES:
                if whole and whole % size == 0:
                    return f"{whole // size}{suffix}"
        return str(whole)
    if nanos % 10**6 == 0:
        return f"{nanos // 10**6}m"
    return f"{nanos}n"


def _resource_map(resources: Any, key: str) -> dict[str, tuple[str, int]]:
    values = resources.get(key) if isinstance(resources, dict) else None
    if not isinstance(values, dict):
        return {}
    parsed = {}
    for resource, raw in values.items():
        quantity = parse_quantity(raw)
        if isinstance(resource, str) and quantity is not None:
            parsed[resource] = (str(raw), quantity)
    return parsed


def _aggregate(pod_spec: dict[str, Any], key: str) -> dict[str, tuple[int, bool]]:
    """What the containers ask for together: regular and sidecar containers add up, and each
    ordinary init container (which runs alone, beside the sidecars started before it) raises the total."""
    totals: dict[str, int] = {}
    binary: dict[str, bool] = {}
    sidecars: dict[str, int] = {}
    init_peaks: dict[str, int] = {}

    def note(resource: str, raw: str) -> None:
        binary[resource] = binary.get(resource, False) or raw.endswith("i")

    for init in pod_spec.get("initContainers") or []:
        if not isinstance(init, dict):
            continue
        values = _resource_map(init.get("resources"), key)
        if init.get("restartPolicy") == "Always":
            for resource, (raw, quantity) in values.items():
                sidecars[resource] = sidecars.get(resource, 0) + quantity
                note(resource, raw)
            continue
        for resource, (raw, quantity) in values.items():
            init_peaks[resource] = max(init_peaks.get(resource, 0), quantity + sidecars.get(resource, 0))
            note(resource, raw)
    for container in pod_spec.get("containers") or []:
        if not isinstance(container, dict):
            continue
        for resource, (raw, quantity) in _resource_map(container.get("resources"), key).items():
            totals[resource] = totals.get(resource, 0) + quantity
            note(resource, raw)
    for resource, quantity in sidecars.items():
        totals[resource] = totals.get(resource, 0) + quantity
    for resource, peak in init_peaks.items():
        totals[resource] = max(totals.get(resource, 0), peak)
    return {resource: (quantity, binary.get(resource, False)) for resource, quantity in totals.items()}


def _pod_level_resource_errors(template: Any, index: int, path: FieldPath) -> Iterator[FieldError]:
    """Pod-level ``resources`` (PodLevelResources) agree with the containers', as the apiserver's pod
    validation that Volcano's webhook runs on each task says it (with ``spec.task[i]`` paths)."""
    pod_spec = template.get("spec") if isinstance(template, dict) else None
    resources = pod_spec.get("resources") if isinstance(pod_spec, dict) else None
    if not isinstance(pod_spec, dict) or not isinstance(resources, dict):
        return
    volcano_path = f"spec.task[{index}].template.spec.resources"
    resources_path = (*path, "template", "spec", "resources")
    requests = _resource_map(resources, "requests")
    limits = _resource_map(resources, "limits")
    for resource, (raw, quantity) in requests.items():
        limit = limits.get(resource)
        if limit is not None and quantity > limit[1]:
            yield invalid(
                (*resources_path, "requests"),
                raw,
                f'{volcano_path}.requests: Invalid value: "{raw}": must be less than or equal to {resource} limit '
                f"of {limit[0]}",
            )
    for resource, (total, binary) in _aggregate(pod_spec, "requests").items():
        request = requests.get(resource)
        if request is not None and total > request[1]:
            yield invalid(
                (*resources_path, "requests", Key(resource)),
                request[0],
                f'{volcano_path}.requests[{resource}]: Invalid value: "{request[0]}": must be greater than or equal '
                f"to aggregate container requests of {_format_quantity(total, binary)}",
            )
    for resource, (total, binary) in _aggregate(pod_spec, "limits").items():
        limit = limits.get(resource)
        if resource.startswith("hugepages-") and limit is not None and total > limit[1]:
            yield invalid(
                (*resources_path, "limits", Key(resource)),
                limit[0],
                f'{volcano_path}.limits[{resource}]: Invalid value: "{limit[0]}": must be greater than or equal '
                f"to aggregate container limits of {_format_quantity(total, binary)}",
            )
    for position, container in enumerate(pod_spec.get("containers") or []):
        if not isinstance(container, dict):
            continue
        for resource, (raw, quantity) in _resource_map(container.get("resources"), "limits").items():
            limit = limits.get(resource)
            if limit is not None and quantity > limit[1]:
                yield invalid(
                    (*path, "template", "spec", "containers", position, "resources", "limits", Key(resource)),
                    raw,
                    f"spec.task[{index}].template.spec.containers[{position}][{resource}].limits: Invalid value: "
                    f'"{raw}": must be less than or equal to pod limits of {limit[0]}',
                )


def _partition_errors(
    task: dict[str, Any], path: FieldPath, *, name: str, job: str, replicas: int, min_available: int | None
) -> Iterator[FieldError]:
    partition = task.get("partitionPolicy")
    if not isinstance(partition, dict):
        return
    where = f"in task: {name}, job: {job}"
    partition_path = (*path, "partitionPolicy")
    total = as_int(partition.get("totalPartitions")) or 0
    size = as_int(partition.get("partitionSize")) or 0
    min_partitions = as_int(partition.get("minPartitions")) or 0
    if total <= 0:
        yield invalid((*partition_path, "totalPartitions"), total, f"'TotalPartitions' must be greater than 0 {where}")
    elif size <= 0:
        yield invalid((*partition_path, "partitionSize"), size, f"'PartitionSize' must be greater than 0 {where}")
    elif replicas != total * size:
        yield invalid(
            (*path, "replicas"), replicas, f"'Replicas' are not equal to TotalPartitions*PartitionSize {where}"
        )
    elif min_available is not None and min_partitions > 0 and min_partitions * size != min_available:
        yield invalid(
            (*path, "minAvailable"),
            min_available,
            f"'MinAvailable' is not equal to MinPartitions*PartitionSize {where}",
        )
    yield from _tier_errors(partition.get("networkTopology"), (*partition_path, "networkTopology"))


def _volume_errors(volumes: Any) -> Iterator[FieldError]:
    if not isinstance(volumes, list):
        return
    mount_paths: set[str] = set()
    for index, volume in enumerate(volumes):
        if not isinstance(volume, dict):
            continue
        path: FieldPath = ("spec", "volumes", index)
        mount_path = volume.get("mountPath")
        if mount_path == "":
            # What Volcano's CRD (1.14+) makes the apiserver say before its webhook runs.
            yield invalid(
                (*path, "mountPath"), "", f"spec.volumes[{index}].mountPath in body should be at least 1 chars long"
            )
        if mount_path in (None, ""):
            yield required((*path, "mountPath"), "mountPath is required;")
        elif isinstance(mount_path, str):
            if mount_path in mount_paths:
                yield FieldError(
                    ErrorType.DUPLICATE, (*path, "mountPath"), mount_path, f"duplicated mountPath: {mount_path};"
                )
            mount_paths.add(mount_path)
        claim = volume.get("volumeClaim")
        claim_name = volume.get("volumeClaimName")
        if claim is None and claim_name in (None, ""):
            yield required(path, "either VolumeClaim or VolumeClaimName must be specified;")
        elif claim is not None and claim_name not in (None, ""):
            yield invalid((*path, "volumeClaimName"), claim_name, CLAIM_CONFLICT)
        elif isinstance(claim_name, str) and claim_name:
            problems = dns1123_subdomain_problems(claim_name)
            if problems:
                yield invalid(
                    (*path, "volumeClaimName"),
                    claim_name,
                    f"invalid VolumeClaimName {claim_name} : [{', '.join(problems)}]",
                )


def _dag_errors(tasks: list[tuple[int, dict[str, Any]]]) -> Iterator[FieldError]:
    """``dependsOn`` edges form a DAG over existing tasks (Kahn's algorithm, as Volcano's topo sort)."""
    depends = {}
    for index, task in tasks:
        spec = task.get("dependsOn")
        if spec is None:
            continue
        names = spec.get("name") if isinstance(spec, dict) else None
        depends[index] = [n for n in names if isinstance(n, str)] if isinstance(names, list) else []
    if not depends:
        return
    by_name = {_name(t): i for i, t in tasks}
    remaining = {i: set(depends.get(i, ())) for i, _ in tasks}
    sorted_names: set[str] = set()
    progress = True
    while progress:
        progress = False
        for index in list(remaining):
            if remaining[index] <= sorted_names and _name(dict(tasks)[index]) not in remaining[index]:
                sorted_names.add(_name(dict(tasks)[index]))
                del remaining[index]
                progress = True
    for index in sorted(remaining):
        missing = sorted(n for n in remaining[index] if n not in by_name)
        why = f" (no task named {', '.join(missing)})" if missing else ""
        yield invalid(("spec", "tasks", index, "dependsOn", "name"), depends.get(index, []), DAG_MESSAGE + why)


# --- UPDATE -----------------------------------------------------------------------------


def _update_errors(obj: dict[str, Any], old: dict[str, Any], spec: dict[str, Any] | None) -> Iterator[FieldError]:
    if spec is None:
        return
    old_spec = old.get("spec") if isinstance(old.get("spec"), dict) else {}
    assert isinstance(old_spec, dict)
    job = job_name(obj)
    total = 0
    for index, task in _tasks(spec):
        path: FieldPath = ("spec", "tasks", index)
        name = _name(task)
        replicas = as_int(task.get("replicas")) or 0
        min_available = as_int(task.get("minAvailable"))
        total += replicas
        if replicas < 0:
            yield invalid((*path, "replicas"), replicas, f"'replicas' must be >= 0 in task: {name}")
        if min_available is not None and min_available < 0:
            yield invalid((*path, "minAvailable"), min_available, f"'minAvailable' must be >= 0 in task: {name}")
        elif min_available is not None and min_available > replicas:
            yield invalid(
                (*path, "minAvailable"), min_available, f"'minAvailable' must be <= 'replicas' in task: {name}"
            )
        yield from _partition_errors(task, path, name=name, job=job, replicas=replicas, min_available=min_available)
    job_min = as_int(spec.get("minAvailable"))
    if job_min is not None and job_min > total:
        yield invalid(("spec", "minAvailable"), job_min, "job 'minAvailable' must not be greater than total replicas")
    if job_min is not None and job_min < 0:
        yield invalid(("spec", "minAvailable"), job_min, "job 'minAvailable' must be >= 0")
    yield from _tier_errors(spec.get("networkTopology"), ("spec", "networkTopology"))

    new_tasks, old_tasks = spec.get("tasks"), old_spec.get("tasks")
    new_count = len(new_tasks) if isinstance(new_tasks, list) else 0
    old_count = len(old_tasks) if isinstance(old_tasks, list) else 0
    if new_count != old_count:
        yield forbidden(("spec", "tasks"), "job updates may not add or remove tasks")
    for changed in _changed_paths(_immutable_view(old_spec), _immutable_view(spec), ("spec",)):
        if changed[:2] == ("spec", "tasks") and new_count != old_count:
            continue  # already reported: the task lists cannot be compared entry by entry
        yield forbidden(changed, UPDATE_FORBIDDEN)


_MUTABLE_SPEC_FIELDS = ("minAvailable", "priorityClassName")
_MUTABLE_TASK_FIELDS = ("replicas", "minAvailable")


def _immutable_view(spec: dict[str, Any]) -> Any:
    """The spec without the fields an UPDATE may change, nil and empty treated alike (Semantic.DeepEqual)."""
    view = {k: v for k, v in spec.items() if k not in _MUTABLE_SPEC_FIELDS}
    tasks = view.get("tasks")
    if isinstance(tasks, list):
        view["tasks"] = [
            {k: v for k, v in t.items() if k not in _MUTABLE_TASK_FIELDS} if isinstance(t, dict) else t for t in tasks
        ]
    volumes = view.get("volumes")
    if isinstance(volumes, list):
        # The controller writes the name of the claim it created: not a user change.
        view["volumes"] = [
            {k: v for k, v in vol.items() if k != "volumeClaimName"}
            if isinstance(vol, dict) and vol.get("volumeClaim") is not None
            else vol
            for vol in volumes
        ]
    return _semantic(view)


# Go maps among the spec's fields: a key with an empty value differs from no key (unlike a struct field).
_MAP_FIELDS = frozenset({"plugins", "labels", "annotations", "nodeSelector", "requests", "limits"})


def _semantic(value: Any, *, is_map: bool = False) -> Any:
    if isinstance(value, dict):
        cleaned = {k: _semantic(v, is_map=k in _MAP_FIELDS) for k, v in value.items()}
        if is_map:
            return {k: v for k, v in cleaned.items() if v is not None}
        return {k: v for k, v in cleaned.items() if v is not None and v not in ({}, [])}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def _changed_paths(old: Any, new: Any, path: FieldPath) -> Iterator[FieldPath]:
    """Where ``new`` differs from ``old``: object keys and list entries down to two levels below spec."""
    if old == new:
        return
    depth = len(path)
    if isinstance(old, dict) and isinstance(new, dict) and depth <= 3:
        for key in list(old) + [k for k in new if k not in old]:
            yield from _changed_paths(old.get(key), new.get(key), (*path, key))
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new) and depth <= 3:
        for index, (before, after) in enumerate(zip(old, new, strict=True)):
            yield from _changed_paths(before, after, (*path, index))
    else:
        yield path
