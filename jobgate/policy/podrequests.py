"""A job's resources as the schedulers count them, per resource name (cpu, memory, GPUs and other
extended resources, the implicit ``deviceclass.resource.kubernetes.io/<class>`` of DRA).

- **Kueue** builds a Workload with one pod set per replica type; a pod set asks ``count`` × the pod's
  request, the request as Kubernetes computes it (``resource.PodRequests``: app containers plus
  sidecars against each init container with the sidecars started before it, plus ``overhead``;
  per container ``requests``, else ``limits``, which Kueue copies into missing requests).
- **Volcano** enqueues a job when its PodGroup's ``minResources`` fits its queue: a Kubeflow job's
  ``schedulingPolicy.minResources`` where given, else what the gang minimum needs: Volcano's job
  controller sums the first ``minAvailable`` pods by task priority, each task's own ``minAvailable``
  first (``calcPGMinResources``). The tasks' PriorityClasses are cluster objects jobgate does not
  read: when the tasks do not all name the same class, the order is unknown and the least any order
  needs is counted, per resource (so a job is never refused on a guessed order).
"""

from __future__ import annotations

from jobgate.policy.fieldmap import as_count, get_path
from jobgate.policy.gpu import QuantityError, parse_quantity, pod_requests

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from jobgate.engine.fielderrors import FieldPath
    from jobgate.policy.fieldmap import KindMap
    from jobgate.policy.gpu import Amount

# Kueue's order of a Kubeflow job's pod sets (pkg/controller/jobs/kubeflow: OrderedReplicaTypes).
_KUEUE_ROLE_ORDER = ("Launcher", "Chief", "Master", "PS", "Worker", "Evaluator")


class PodSet:
    """One group of identical pods as a scheduler counts it: ``count`` pods of ``per_pod`` each."""

    __slots__ = ("count", "name", "path", "per_pod", "spec")

    def __init__(self, name: str, count: int, per_pod: dict[str, Amount], path: FieldPath, spec: Any) -> None:
        self.name = name
        self.count = count
        self.per_pod = per_pod
        self.path = path  # the group's template, for messages
        self.spec = spec  # the pod spec (node selector, affinity, tolerations: flavor matching)

    def total(self, resource: str) -> Amount:
        return self.count * self.per_pod.get(resource, 0)

    def __repr__(self) -> str:
        return f"PodSet({self.name!r}, {self.count!r}, {self.per_pod!r})"


def pod_request(template: Any, where: str, problems: list[str]) -> tuple[dict[str, Amount], Any]:
    """(per-resource request of one pod template, its pod spec); zero requests left out."""
    spec = template.get("spec") if isinstance(template, dict) else None
    if not isinstance(spec, dict):
        return {}, {}
    requests = pod_requests(spec, problems, f"{where}.spec")
    return {name: value for name, value in requests.items() if value}, spec


def kueue_pod_sets(kmap: KindMap, job: dict[str, Any], problems: list[str]) -> list[PodSet]:
    """The pod sets of the Workload Kueue makes for a job of ``kmap``'s kind: one per replica type,
    ``replicas`` pods each (the family's default when unset), in Kueue's order of the roles."""
    from jobgate.engine.fielderrors import render_path

    out = []
    for group in kmap.groups(job):
        per_pod, spec = pod_request(group.template, render_path(group.template_path), problems)
        out.append(PodSet(group.role, group.replicas, per_pod, group.template_path, spec))

    def order(pod_set: PodSet) -> tuple[int, str]:
        name = pod_set.name
        return (_KUEUE_ROLE_ORDER.index(name), "") if name in _KUEUE_ROLE_ORDER else (len(_KUEUE_ROLE_ORDER), name)

    return sorted(out, key=order)


# --- Volcano's gang minimum ------------------------------------------------------------------------


class _Task:
    __slots__ = ("min_available", "name", "per_pod", "priority_class", "replicas")

    def __init__(
        self, name: str, replicas: int, min_available: int | None, per_pod: dict[str, Amount], priority_class: Any
    ) -> None:
        self.name = name
        self.replicas = replicas
        self.min_available = min_available
        self.per_pod = per_pod
        self.priority_class = priority_class


def _first_pods(tasks: list[_Task], count: int, parts: list[str]) -> dict[str, Amount]:
    """The request of the first ``count`` pods, task after task (Volcano's CalcFirstCountResources)."""
    total: dict[str, Amount] = {}
    for task in tasks:
        if count <= 0:
            break
        taken = min(count, task.replicas)
        if taken > 0:
            _add(total, task.per_pod, taken)
            parts.append(f"{task.name} {taken}")
        count -= taken
    return total


def _add(total: dict[str, Amount], per_pod: Mapping[str, Amount], times: int) -> None:
    for name, value in per_pod.items():
        total[name] = total.get(name, 0) + value * times


def _cheapest(pool: list[tuple[dict[str, Amount], int]], count: int) -> dict[str, Amount]:
    """Per resource, the least ``count`` pods out of ``pool`` (``(per pod, how many)``) can ask: a
    lower bound of what any order of the tasks counts."""
    names = {name for per_pod, _ in pool for name in per_pod}
    total: dict[str, Amount] = {}
    for name in names:
        left = count
        amount: Amount = 0
        for value, available in sorted((per_pod.get(name, 0), n) for per_pod, n in pool):
            if left <= 0:
                break
            taken = min(left, available)
            amount += value * taken
            left -= taken
        if amount:
            total[name] = amount
    return total


def gang_minimum(tasks: list[_Task], job_min: int | None, parts: list[str]) -> tuple[dict[str, Amount], bool]:
    """(what the gang's minimum asks per resource, whether the tasks' order was known) as Volcano's job
    controller computes a PodGroup's minResources (``calcPGMinResources``)."""
    task_min = sum(t.replicas if t.min_available is None else t.min_available for t in tasks)
    if not job_min:
        job_min = task_min  # Volcano's webhook defaults minAvailable to the tasks' sum
    ordered = len({t.priority_class or "" for t in tasks}) <= 1
    if job_min < task_min:
        if ordered:
            return _first_pods(tasks, job_min, parts), True
        parts.append(f"the {job_min} least demanding pods")
        return _cheapest([(t.per_pod, t.replicas) for t in tasks], job_min), False
    total: dict[str, Amount] = {}
    count = 0
    for task in tasks:
        taken = task.replicas if task.min_available is None else min(task.min_available, task.replicas)
        if taken > 0:
            _add(total, task.per_pod, taken)
            parts.append(f"{task.name} {taken}")
        count += taken
    left = job_min - count
    if left > 0:
        pool = [
            (t.per_pod, t.replicas - t.min_available)
            for t in tasks
            if t.min_available is not None and t.replicas > t.min_available
        ]
        if ordered:
            for per_pod, available in pool:
                taken = min(left, available)
                _add(total, per_pod, taken)
                left -= taken
            parts.append(f"{job_min - count - left} more")
        else:
            for name, value in _cheapest(pool, left).items():
                total[name] = total.get(name, 0) + value
            parts.append(f"the {left} least demanding of the other pods")
    return total, ordered


def volcano_tasks(kmap: KindMap, job: dict[str, Any], problems: list[str]) -> list[_Task]:
    """The tasks (Volcano Job) or replica types (other kinds) with their pods' requests."""
    from jobgate.engine.fielderrors import render_path

    out = []
    items = get_path(job, ("spec", "tasks")) if kmap.family == "volcano" else None
    for i, group in enumerate(kmap.groups(job)):
        per_pod, spec = pod_request(group.template, render_path(group.template_path), problems)
        task_min = None
        if isinstance(items, list) and i < len(items) and isinstance(items[i], dict):
            task_min = as_count(items[i].get("minAvailable"))
        out.append(_Task(group.role, group.replicas, task_min, per_pod, spec.get("priorityClassName")))
    return out


def parse_resources(given: Any, where: str, problems: list[str]) -> dict[str, Amount]:
    """A ResourceList (``minResources``, a queue's ``capability``): each quantity parsed; one that does
    not parse goes to ``problems`` and is left out."""
    out: dict[str, Amount] = {}
    if not isinstance(given, dict):
        return out
    for name, raw in given.items():
        try:
            out[str(name)] = parse_quantity(raw)
        except QuantityError as err:
            problems.append(f"{where}.{name}: {err}")
    return out
