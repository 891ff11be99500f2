"""Validation rules of the Volcano Job (``batch.volcano.sh/v1alpha1``), pure functions.

Each rule mirrors one check of Volcano's validating webhook (``admit_job.go``, ``util.go``)
and keeps Volcano's sentence inside the detail of an apiserver-style field error. Where
Volcano stops at the first problem (UPDATE, a list of policies, volumes, duplicate task
names), these rules go on and report every problem. ``validate_job`` is the entry point; the
CREATE rules of the job and of each task are here, the UPDATE rules in ``update``, and the
policies, plugins, resources and queue check in modules of their own.
"""

from __future__ import annotations

from jobgate._generated.declared import volcano as declared_rules
from jobgate.engine.fielderrors import FieldError, FieldPath, invalid, required
from jobgate.engine.findings import Findings, clip_warning
from jobgate.engine.modelref import ModelRef
from jobgate.engine.schema import SCHEMA_REQUIRED, SCHEMA_TYPES
from jobgate.families.volcano.rules.bounds import bound_errors
from jobgate.families.volcano.rules.policies import policy_warnings
from jobgate.families.volcano.rules.queue_check import QUEUE_CHECK, check_queue
from jobgate.families.volcano.rules.resources import numa_errors, pod_level_resource_errors
from jobgate.families.volcano.rules.tasks import (
    COUNTS,
    LEGACY,
    TASK_MIN_AVAILABLE,
    declared_in,
    job_tasks,
    job_topology_errors,
    partition_errors,
    task_name,
    task_view,
)
from jobgate.rules.dicts import as_int
from jobgate.rules.jobmeta import JOB_NAME, OBJECT_NAMES, check_spec_schema, job_name
from jobgate.rules.names import (
    DNS1123_LABEL_PATTERN,
    QUALIFIED_NAME_REGEX_MESSAGE,
    dns1123_label_problems,
    dns1123_subdomain_problems,
    matches_qualified_name,
)
from jobgate.rules.podtemplate import check_pod_template

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from jobgate.engine.context import ReviewContext

# The ids of the rules of this module (jobgate/families/volcano/cel/), which their errors carry.
TASK_NAME = "volcano/task-name"
POD_NAMES = "volcano/pod-names"

# The words of the DAG rule (declared.py).
DAG_MESSAGE = "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG)"
CLAIM_CONFLICT = (
    "conflict: If you want to use an existing PVC, just specify VolumeClaimName."
    "If you want to create a new PVC, you do not need to specify VolumeClaimName"
)

# The name rules as regular expressions: the CRD's patterns (jobgate/generate/cel); the webhook checks names
# by string operations, compiling nothing at start-up.
QUALIFIED_NAME_REGEX = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
QUALIFIED_NAME_MESSAGE = f"name part {QUALIFIED_NAME_REGEX_MESSAGE}"
_GENERATED_SUFFIX_LENGTH = 5
_RFC1123_LABEL = "a lowercase RFC 1123 label"
_DNS1123_LABEL = "a DNS-1123 label"


def _fullmatch(pattern: str, text: str) -> bool:
    import re  # here, not at the top: only a bad name needs it, and a one-file check need not import re

    return re.fullmatch(pattern, text) is not None


def qualified_name_problems(value: str) -> list[str]:
    """k8s IsQualifiedName for a name without prefix (what Volcano checks job and pod names with)."""
    if not value:
        return ["name part must be non-empty"]
    problems = []
    if len(value) > 63:
        problems.append("name part must be no more than 63 characters")
    if not matches_qualified_name(value):
        problems.append(QUALIFIED_NAME_MESSAGE)
    return problems


def validate_job(
    obj: dict[str, Any], old: dict[str, Any] | None, spec_model: ModelRef, context: ReviewContext
) -> Findings:
    """Every violation of the (defaulted) job; UPDATE rules when ``old`` is given, CREATE rules otherwise.

    Like Volcano, UPDATE does not re-run the CREATE-only checks (policies, plugins, volumes,
    templates, DAG, queue): the immutability rule keeps those parts as they were admitted.
    """
    found = Findings()
    spec = check_spec_schema(obj, spec_model, found)
    if spec is not None:
        found.errors.extend(bound_errors(obj))
    if old is not None:
        # Imported on the first UPDATE: jobgate validate checks creations only, and a one-file
        # check pays for every module it imports.
        from jobgate.families.volcano.rules.update import update_errors

        found.errors.extend(update_errors(obj, old, spec))
        return found
    found.errors.extend(_create_errors(obj, spec, found))
    if spec is not None:
        found.warnings.extend(policy_warnings(spec))
    if context.queues is not None:
        found.errors.extend(check_queue(obj, context.queues))
    else:
        context.skipped.add(QUEUE_CHECK)
    return found


def _create_errors(obj: dict[str, Any], spec: dict[str, Any] | None, found: Findings) -> Iterator[FieldError]:
    job = job_name(obj)
    yield from _job_name_errors(obj)
    if spec is None:
        return
    tasks = job_tasks(spec)
    yield from _declared(obj, "volcano/tasks-required")
    yield from _negative_errors(spec, tasks, job)
    yield from _declared(obj, "volcano/plugins")
    yield from _declared(obj, "volcano/mpi-master")
    yield from job_topology_errors(spec)

    # Declared rules over every task, each task's errors reported among its others.
    names_twice = _by_task(_declared(obj, "volcano/task-names-unique"))
    no_template = _by_task(_declared(obj, "volcano/template-required"))
    for index, task in tasks:
        path: FieldPath = ("spec", "tasks", index)
        name = task_name(task)
        replicas = as_int(task.get("replicas")) or 0
        min_available = as_int(task.get("minAvailable"))
        if min_available is not None and min_available > replicas:
            yield invalid(
                (*path, "minAvailable"),
                min_available,
                f"'minAvailable' is greater than 'replicas' in task: {name}, job: {job}",
                TASK_MIN_AVAILABLE,
            )
        yield from names_twice.get(index, ())
        if name:
            problems = dns1123_label_problems(name)
            if problems and not _fullmatch(DNS1123_LABEL_PATTERN, name):
                # What Volcano's CRD (1.14+) makes the apiserver say before its webhook runs.
                yield invalid(
                    (*path, "name"),
                    name,
                    f"spec.tasks[{index}].name in body should match '{DNS1123_LABEL_PATTERN}'",
                    TASK_NAME,
                )
            for problem in problems:
                yield invalid((*path, "name"), name, _task_name_detail(problem), TASK_NAME)
        yield from declared_in(task_view(index, task), "volcano/policies")
        yield from _pod_name_errors(job, name, index, replicas, path)
        yield from no_template.get(index, ())
        template = task.get("template")
        if template is not None:
            template_found = check_pod_template(
                template, (*path, "template"), where=f"tasks[{name or index}]", replica_restart_policy=None
            )
            found.warnings.extend(template_found.warnings)
            yield from template_found.errors
            # Beside the template's other errors, as Kubernetes' pod validation (which Volcano runs)
            # collects them all, and as the apiserver's policy reports them.
            yield from numa_errors(task, index, path)
            yield from pod_level_resource_errors(template, index, path)
        yield from partition_errors(task, path, name=name, job=job, replicas=replicas, min_available=min_available)

    yield from _declared(obj, "volcano/min-available")
    yield from declared_in({"spec": {"policies": spec.get("policies")}}, "volcano/policies")
    yield from _declared(obj, "volcano/volumes")
    yield from _declared(obj, "volcano/dag")
    yield from _declared(obj, "volcano/priority-class-name")
    yield from _name_field_errors(obj, spec, found)


def _declared(obj: dict[str, Any], rule_id: str) -> list[FieldError]:
    """A rule declared in ``declared.py``, on CREATE, where Volcano's webhook checks it among the others."""
    return declared_rules.validate_job_batch_volcano_sh(obj, None, (rule_id,))


def _by_task(errors: list[FieldError]) -> dict[int, list[FieldError]]:
    """The errors of a declared rule over the tasks, by the index of their task."""
    grouped: dict[int, list[FieldError]] = {}
    for error in errors:
        index = error.path[2]
        assert isinstance(index, int)
        grouped.setdefault(index, []).append(error)
    return grouped


def _task_name_detail(problem: str) -> str:
    """Volcano prints the problem list as Go does (``[...];``); before 1.9 the apimachinery of its day said DNS-1123."""
    detail = f"[{problem}];"
    if problem.startswith(_RFC1123_LABEL):
        detail += f" ({LEGACY} 1.9: [{_DNS1123_LABEL}{problem[len(_RFC1123_LABEL) :]}];)"
    return detail


def _job_name_errors(obj: dict[str, Any]) -> Iterator[FieldError]:
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        yield required(("metadata",), rule=SCHEMA_REQUIRED)
        return
    path: FieldPath = ("metadata", "name")
    name = metadata.get("name")
    full = name
    if name in (None, ""):
        name = metadata.get("generateName")
        path = ("metadata", "generateName")
        if name in (None, ""):
            yield required(("metadata", "name"), "name or generateName is required", JOB_NAME)
            return
        full = f"{name}{'x' * _GENERATED_SUFFIX_LENGTH}" if isinstance(name, str) else name
    if not isinstance(full, str):
        yield invalid(path, name, "must be of type string", SCHEMA_TYPES)
        return
    problems = qualified_name_problems(full)
    if problems:
        yield invalid(path, name, f"create job with name {name} validate failed [{', '.join(problems)}]", JOB_NAME)
    # The apiserver's own checks of any custom object's names, which Volcano's qualified names
    # (capitals, underscores) can pass.
    if path[-1] == "name":
        yield from (invalid(path, name, problem, OBJECT_NAMES) for problem in dns1123_subdomain_problems(full))


def _pod_name_errors(job: str, task: str, index: int, replicas: int, path: FieldPath) -> Iterator[FieldError]:
    # Volcano checks "<job>-<task>-<task position>"; the pods are named with the replica index,
    # so the longer of the two is checked: the name of the last pod the controller creates.
    if not job or not task:
        return
    last = max(index, replicas - 1)
    pod = f"{job}-{task}-{last}"
    problems = qualified_name_problems(pod)
    if problems:
        detail = f"create pod with name {pod} validate failed [{', '.join(problems)}]"
        yield invalid((*path, "name"), task, detail, POD_NAMES)


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
            yield invalid(("spec", key), value, message, COUNTS)
    total_replicas = sum(as_int(task.get("replicas")) or 0 for _, task in tasks)
    job_min = as_int(spec.get("minAvailable"))
    for index, task in tasks:
        name = task_name(task)
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
            yield invalid(("spec", "tasks", index, "replicas"), replicas, detail, COUNTS)
        min_available = as_int(task.get("minAvailable"))
        if min_available is not None and min_available < 0:
            yield invalid(
                ("spec", "tasks", index, "minAvailable"),
                min_available,
                f"'minAvailable' < 0 in task: {name}, job: {job};",
                COUNTS,
            )


def _name_field_errors(obj: dict[str, Any], spec: dict[str, Any], found: Findings) -> Iterator[FieldError]:
    # Patterns and lengths of Volcano's CRD, which the structural schema checker leaves to the rules
    # (priorityClassName's and schedulerName's are declared: declared.py).
    # Volcano's webhook admits any queue name (its own tables submit to "childQueue"); only its CRD
    # (1.14 and later) has the pattern, and the apiserver applies that one before any webhook. So a
    # warning here, never a verdict of the webhook's own.
    queue = spec.get("queue")
    if isinstance(queue, str) and queue:
        for problem in dns1123_subdomain_problems(queue):
            found.warnings.append(clip_warning(f"spec.queue: {queue!r}: Volcano's CRD refuses it: {problem}"))
    # schedulerName's length: declared.
    yield from _declared(obj, "volcano/scheduler-name")
