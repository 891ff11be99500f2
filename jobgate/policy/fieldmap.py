"""How a policy finds the fields it reads or writes in a job: the shared mechanism of the field maps.

Each family keeps its kinds' maps in its own package (``jobgate/families/<name>/policy.py``, named by
its record's ``policy``; :mod:`jobgate.policy.kinds` collects them): where the queue, the priority
class, the scheduler, the TTL and the deadline live, and how the job's replica groups are read. The
field names follow jobgate's own job models (``jobgate/families/<name>/models.py``), read here from
the plain dicts the rules see. A kind without a field gives None for it ("not applicable");
``TEMPLATE`` places a field in each pod template's spec instead of the job's.

Replica groups give the largest pod count the job may reach, because a limit must hold at the
job's largest size: a PyTorchJob's or PaddleJob's Worker may grow to ``elasticPolicy.maxReplicas``;
a Volcano task runs ``replicas`` pods (``minAvailable`` is only the gang's floor). An unset count
is the family's default (1; a Volcano task's and a Kubeflow MPIJob Worker's is 0).
"""

from __future__ import annotations

# The engine's field paths: a map key renders ``[key]`` as the apiserver does (``tfReplicaSpecs[Worker]``).
from jobgate.engine.fielderrors import FieldPath, Key, PathSegment

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    # A job-level field: the path of the value in this job (it may depend on the job, e.g. KubeDL's
    # MPIJob with spec.runPolicy). "template" places the field in each pod template's spec instead.
    Locator = Callable[[dict[str, Any]], FieldPath]

KUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def get_path(obj: Any, path: FieldPath) -> Any:
    """The value at ``path`` or None when any step is missing or of the wrong type."""
    for segment in path:
        if isinstance(segment, int):
            if not isinstance(obj, list) or not 0 <= segment < len(obj):
                return None
            obj = obj[segment]
        else:
            if not isinstance(obj, dict):
                return None
            obj = obj.get(segment)
    return obj


def as_count(value: Any) -> int | None:
    """An integer count, or None for anything else (bool is not a count)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class ReplicaGroup:
    """One group of identical pods (a role, a task, a replica type)."""

    __slots__ = ("largest", "largest_path", "path", "replicas", "role", "template", "template_path")

    def __init__(  # noqa: PLR0917 (the fields in their order, as the groups have always been made)
        self,
        role: str,
        path: FieldPath,
        replicas: int,
        largest: int,
        largest_path: FieldPath,
        template: dict[str, Any] | None,
        template_path: FieldPath,
    ) -> None:
        self.role = role
        self.path = path  # the group object, e.g. spec.tfReplicaSpecs[Worker]
        self.replicas = replicas  # the count as written (family default when unset)
        self.largest = largest  # the largest count the job may reach
        self.largest_path = largest_path  # the field that gives ``largest``
        self.template = template
        self.template_path = template_path

    def _key(self) -> tuple[Any, ...]:
        return (
            self.role,
            self.path,
            self.replicas,
            self.largest,
            self.largest_path,
            self.template,
            self.template_path,
        )

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not ReplicaGroup:
            return NotImplemented
        return self._key() == other._key()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]  # holds the template, a dict

    def __repr__(self) -> str:
        return (
            f"ReplicaGroup(role={self.role!r}, path={self.path!r}, replicas={self.replicas!r}, "
            f"largest={self.largest!r}, largest_path={self.largest_path!r}, template={self.template!r}, "
            f"template_path={self.template_path!r})"
        )


TEMPLATE = "template"


class KindMap:
    """Where one kind keeps what policies read and write. One object per kind (a family's ``KIND_MAPS``,
    collected in ``jobgate.policy.kinds.KINDS``), compared by identity: the plans of an effective
    policy are keyed by it."""

    __slots__ = (
        "deadline",
        "default_count",
        "default_zero",
        "elastic",
        "family",
        "group",
        "groups",
        "kind",
        "kueue",
        "priority_class",
        "queue",
        "replica_field",
        "replica_layout",
        "resolve",
        "scheduler",
        "ttl",
    )

    def __init__(  # noqa: PLR0917 (as the table has always given them)
        self,
        family: str,
        group: str,
        kind: str,
        groups: Callable[[dict[str, Any]], list[ReplicaGroup]],
        queue: Locator | None,
        priority_class: Locator | str | None,
        scheduler: Locator | str | None,
        ttl: Locator | None,
        deadline: Locator | None,
        kueue: bool = False,
        replica_field: str = "",
        replica_layout: str = "map",
        default_count: int = 1,
        default_zero: tuple[str, ...] = (),
        elastic: bool = False,
    ) -> None:
        self.family = family
        self.group = group
        self.kind = kind
        self.groups = groups
        self.queue = queue
        self.priority_class = priority_class
        self.scheduler = scheduler
        self.ttl = ttl
        self.deadline = deadline
        self.kueue = kueue
        # How ``groups`` reads the job, for the generated admission policies
        # (jobgate.generate.policy_vap): the field under ``spec``, a map of roles ("map") or a list
        # ("list"; "jobs": a list of batch/v1 Job templates, JobSet's, whose pods are replicas × pods
        # per Job and whose pod template is ``template.spec.template``), the count of an unset
        # ``replicas``, roles whose unset count is 0, and whether the Worker may grow to
        # elasticPolicy.maxReplicas.
        self.replica_field = replica_field
        self.replica_layout = replica_layout
        self.default_count = default_count
        self.default_zero = default_zero
        self.elastic = elastic
        # ``resolve(job, context)``: the job as the policy checks read it, for a kind whose pods live in
        # another object (a TrainJob's in its runtime: jobgate/families/trainer/policy.py); None: the job.
        self.resolve: Callable[[dict[str, Any], Any], dict[str, Any]] | None = None

    def __repr__(self) -> str:
        return f"KindMap({self.family!r}, {self.group!r}, {self.kind!r})"

    def locator(self, field: str) -> Locator | str | None:
        return {
            "queue": self.queue,
            "priorityClassName": self.priority_class,
            "schedulerName": self.scheduler,
            "ttlSecondsAfterFinished": self.ttl,
            "activeDeadlineSeconds": self.deadline,
        }[field]


def fixed(*path: PathSegment) -> Locator:
    """A field at the same path in every job of the kind."""
    return lambda job: path


def map_groups(field: str, elastic: bool = False, default_zero: tuple[str, ...] = ()) -> Callable:
    """The groups of a map of roles under ``spec.<field>`` (``tfReplicaSpecs``): an unset count is 1, 0 for
    the roles in ``default_zero``; ``elastic``: the Worker may grow to ``spec.elasticPolicy.maxReplicas``."""

    def groups(job: dict[str, Any]) -> list[ReplicaGroup]:
        specs = get_path(job, ("spec", field))
        if not isinstance(specs, dict):
            return []
        out = []
        for role, spec in specs.items():
            if not isinstance(spec, dict):
                continue
            path: FieldPath = ("spec", field, Key(role))
            count = as_count(spec.get("replicas"))
            if count is None:
                count = 0 if role in default_zero else 1
            largest, largest_path = count, (*path, "replicas")
            if elastic and role == "Worker":
                high = as_count(get_path(job, ("spec", "elasticPolicy", "maxReplicas")))
                if high is not None and high > largest:
                    largest, largest_path = high, ("spec", "elasticPolicy", "maxReplicas")
            template = spec.get("template")
            out.append(
                ReplicaGroup(
                    role,
                    path,
                    count,
                    largest,
                    largest_path,
                    template if isinstance(template, dict) else None,
                    (*path, "template"),
                )
            )
        return out

    return groups


def list_groups(field: str, role_of: Callable[[dict[str, Any], int], str], default_count: int) -> Callable:
    """The groups of a list under ``spec.<field>`` (Volcano's ``tasks``): ``role_of(item, index)`` names
    each, an unset count is ``default_count``."""

    def groups(job: dict[str, Any]) -> list[ReplicaGroup]:
        items = get_path(job, ("spec", field))
        if not isinstance(items, list):
            return []
        out = []
        for i, spec in enumerate(items):
            if not isinstance(spec, dict):
                continue
            path: FieldPath = ("spec", field, i)
            count = as_count(spec.get("replicas"))
            if count is None:
                count = default_count
            template = spec.get("template")
            out.append(
                ReplicaGroup(
                    role_of(spec, i),
                    path,
                    count,
                    count,
                    (*path, "replicas"),
                    template if isinstance(template, dict) else None,
                    (*path, "template"),
                )
            )
        return out

    return groups


def pods_per_job(job_spec: Any) -> int:
    """The pods a batch/v1 Job runs at once, as Kueue counts a JobSet's (``podsCount``): parallelism
    (1 when unset), at most completions (which defaults to parallelism)."""
    if not isinstance(job_spec, dict):
        return 1
    parallelism = as_count(job_spec.get("parallelism"))
    if parallelism is None:
        parallelism = 1
    completions = as_count(job_spec.get("completions"))
    return min(parallelism, completions) if completions is not None else parallelism


def _job_group(item: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    """(pods, pod template) of one of JobSet's replicated jobs: replicas (1 when unset) × pods per Job."""
    count = as_count(item.get("replicas"))
    template = item.get("template")
    job_spec = template.get("spec") if isinstance(template, dict) else None
    pod = job_spec.get("template") if isinstance(job_spec, dict) else None
    return (1 if count is None else count) * pods_per_job(job_spec), pod if isinstance(pod, dict) else None


def job_groups(field: str) -> Callable:
    """The groups of a list of replicated jobs under ``spec.<field>`` (JobSet's ``replicatedJobs``), each
    named by its ``name``: its pods are replicas × pods per Job, its pod template the Job template's."""

    def groups(job: dict[str, Any]) -> list[ReplicaGroup]:
        items = get_path(job, ("spec", field))
        if not isinstance(items, list):
            return []
        out = []
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                continue
            path: FieldPath = ("spec", field, i)
            count, template = _job_group(item)
            name = item.get("name")
            out.append(
                ReplicaGroup(
                    name if isinstance(name, str) and name else str(i),
                    path,
                    count,
                    count,
                    (*path, "replicas"),
                    template,
                    (*path, "template", "spec", "template"),
                )
            )
        return out

    return groups


# jobgate's Volcano CRD defaults spec.queue to this value (Volcano's own webhook sets it beside Volcano's
# CRD), so a job may reach admission with it set. Here rather than in Volcano's field map: the policy
# checks' Volcano queue case reads it.
VOLCANO_SCHEMA_DEFAULT_QUEUE = "default"


def pod_sizes(kmap: KindMap, job: dict[str, Any]) -> list[tuple[int, dict[str, Any] | None]]:
    """``(largest, template)`` of each of ``kmap.groups(job)``, in the same order, without building
    the groups (their paths and roles serve only messages): the policy checks' clean path."""
    if not kmap.replica_field:  # groups read some other way (a TrainJob's, from its runtime)
        return [(g.largest, g.template) for g in kmap.groups(job)]
    spec = job.get("spec")
    if not isinstance(spec, dict):
        return []
    items = spec.get(kmap.replica_field)
    out: list[tuple[int, dict[str, Any] | None]] = []
    if kmap.replica_layout == "map":
        if not isinstance(items, dict):
            return []
        high = None
        if kmap.elastic:
            elastic = spec.get("elasticPolicy")
            high = as_count(elastic.get("maxReplicas")) if isinstance(elastic, dict) else None
        for role, item in items.items():
            if not isinstance(item, dict):
                continue
            count = as_count(item.get("replicas"))
            if count is None:
                count = 0 if role in kmap.default_zero else 1
            if high is not None and role == "Worker" and high > count:
                count = high
            template = item.get("template")
            out.append((count, template if isinstance(template, dict) else None))
        return out
    if not isinstance(items, list):
        return []
    if kmap.replica_layout == "jobs":
        return [_job_group(item) for item in items if isinstance(item, dict)]
    for item in items:
        if not isinstance(item, dict):
            continue
        count = as_count(item.get("replicas"))
        template = item.get("template")
        out.append((kmap.default_count if count is None else count, template if isinstance(template, dict) else None))
    return out


def field_locations(kmap: KindMap, field: str, job: dict[str, Any]) -> list[tuple[FieldPath, Any]] | None:
    """Every place ``field`` lives in this job with its current value; None = the kind has no such field.

    A template-level field gives one place per replica group that has a template.
    """
    locator = kmap.locator(field)
    if locator is None:
        return None
    if locator == TEMPLATE:
        return [
            ((*g.template_path, "spec", field), get_path(g.template, ("spec", field)))
            for g in kmap.groups(job)
            if g.template is not None
        ]
    path = locator(job)  # type: ignore[operator]
    return [(path, get_path(job, path))]
