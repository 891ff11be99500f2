"""One resolution of the policies that apply to a job: the effective policy.

Selection. A ``ClusterTrainingJobPolicy`` applies in the namespaces its ``namespaceSelector``
selects (absent = every namespace); a ``TrainingJobPolicy`` applies in its own namespace. Then
``spec.match`` narrows to jobs: ``families``, ``kinds`` and ``objectSelector`` must each hold when
given (absent = every job jobgate serves).

Combination. Every resolved value keeps the policy it came from (:class:`Sourced`), for messages
and ``explain``. Enforcement actions are never merged into one: a constraint is combined per
(policy, constraint), so that a ``Warn`` policy's limit can only ever warn.

- Limits (``max*``), ``require.ttlSecondsAfterFinished``/``activeDeadlineSeconds`` and ``forbid``
  items: an entry is kept unless another entry *dominates* it, i.e. is at least as restrictive, with
  an action at least as strong (Deny > Warn > Audit) and an ``existingViolations`` at least as strict
  (Deny > Allow). What remains is at most one entry per (action, existingViolations) tier, each
  stricter than every stronger tier: e.g. Deny at 32 GPUs and Warn at 16 — a job of 20 GPUs is
  warned, one of 40 is denied (and warned). The first remaining Deny entry is "the" most
  restrictive value that ``explain`` shows.
- Allow-lists (``queues``, ``priorityClassNames``, ``schedulerNames``, ``imageRegistries``) and
  required labels stay per policy: a job must satisfy each, which is their intersection, and a
  violation names the very policy whose list refuses the value. When the intersection is empty no
  job can satisfy them: a :class:`Conflict` names the policies, with the strongest action whose
  policies alone already have an empty intersection (a Deny/Warn clash can only warn).
- ``gpuResources`` and ``gpuDeviceClasses``: each added to its built-in list. The matching policies'
  lists are united, the largest weight per name (counting more is the restrictive side); a name
  given replaces the built-in entry of that name (weight 0 excludes it), the other built-in entries
  stay; the built-in list alone when no policy gives one.
- Defaults (``queue``, ``priorityClassName``, ``schedulerName``, the TTL and deadline, each label,
  ``kueueQueueName``): a ``TrainingJobPolicy`` beats a ``ClusterTrainingJobPolicy``; within a scope the
  higher ``priority`` wins; equal priority with different values is a Conflict and no default for
  that field (never an order-dependent pick). Defaults apply whatever the policy's
  ``enforcementAction``: the action governs limits and requirements only.
"""

from __future__ import annotations

from collections.abc import Mapping

from jobgate.engine.values import Value
from jobgate.policy.fieldmap import KindMap
from jobgate.policy.gpu import DEFAULT_GPU_DEVICE_CLASSES, DEFAULT_GPU_RESOURCES, counted_resources, with_builtin
from jobgate.policy.images import entry_prefix
from jobgate.policy.kinds import KINDS, kind_map
from jobgate.policy.memo import ResolutionMemo, labels_key, remember
from jobgate.policy.selectors import selector_errors, selector_matches

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Hashable, Iterable
    from typing import Any

CLUSTER_KIND = "ClusterTrainingJobPolicy"
NAMESPACED_KIND = "TrainingJobPolicy"
ACTION_RANK = {"Audit": 0, "Warn": 1, "Deny": 2}
EXISTING_RANK = {"Allow": 0, "Deny": 1}

LIMIT_FIELDS = (
    "maxReplicasPerRole",
    "maxReplicasPerJob",
    "maxGPUsPerPod",
    "maxGPUsPerJob",
    "maxTTLSecondsAfterFinished",
    "maxActiveDeadlineSeconds",
)
ALLOW_FIELDS = ("queues", "priorityClassNames", "schedulerNames", "imageRegistries")
# require.runtimes' lists (a TrainJob's runtime, per kind), kept with the allow-lists under these names.
RUNTIME_ALLOW = {
    "clusterTrainingRuntimes": "runtimes.clusterTrainingRuntimes",
    "trainingRuntimes": "runtimes.trainingRuntimes",
}
REQUIRED_FIELDS = ("ttlSecondsAfterFinished", "activeDeadlineSeconds", "fitsQueue")
DEFAULT_FIELDS = (
    "queue",
    "priorityClassName",
    "schedulerName",
    "ttlSecondsAfterFinished",
    "activeDeadlineSeconds",
    "kueueQueueName",
)


class PolicyRef(Value):
    """Which policy a value came from (ordered as the tuple (kind, namespace, name))."""

    FIELDS = ("kind", "namespace", "name")
    __slots__ = FIELDS

    def __init__(self, kind: str, namespace: str, name: str) -> None:
        self.kind = kind
        self.namespace = namespace
        self.name = name

    def _key(self) -> tuple[str, str, str]:  # written out: the hot one (sets, sorting)
        return (self.kind, self.namespace, self.name)

    def __lt__(self, other: PolicyRef) -> bool:
        if other.__class__ is not PolicyRef:
            return NotImplemented
        return self._key() < other._key()

    def __le__(self, other: PolicyRef) -> bool:
        if other.__class__ is not PolicyRef:
            return NotImplemented
        return self._key() <= other._key()

    def __gt__(self, other: PolicyRef) -> bool:
        if other.__class__ is not PolicyRef:
            return NotImplemented
        return self._key() > other._key()

    def __ge__(self, other: PolicyRef) -> bool:
        if other.__class__ is not PolicyRef:
            return NotImplemented
        return self._key() >= other._key()

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


class Sourced(Value):
    """A value with the policy that gave it and that policy's enforcement settings."""

    FIELDS = ("value", "source", "action", "existing_violations", "priority")
    __slots__ = FIELDS

    def __init__(
        self,
        value: Any,
        source: PolicyRef,
        action: str = "Deny",
        existing_violations: str = "Allow",
        priority: int = 0,
    ) -> None:
        self.value = value
        self.source = source
        self.action = action
        self.existing_violations = existing_violations
        self.priority = priority

    def _key(self) -> tuple[Any, ...]:  # written out: the generic one costs a file ~2.5 k instructions
        return (self.value, self.source, self.action, self.existing_violations, self.priority)


class Conflict(Value):
    """Policies that cannot all be satisfied (allow-lists) or disagree on a default."""

    FIELDS = ("field", "policies", "message", "action")
    __slots__ = FIELDS

    def __init__(self, field: str, policies: tuple[PolicyRef, ...], message: str, action: str | None = None) -> None:
        self.field = field  # e.g. "require.queues", "defaults.queue", "defaults.labels[team]"
        self.policies = policies
        self.message = message
        self.action = action  # for allow-lists: the action a job gets; None for defaults


class EffectivePolicy:
    """What applies to one job (or, without a job, to a namespace): see the module docstring.

    Compared (``==``) and shown by every field in ``FIELDS``; ``gpu_weights`` and ``plans`` are
    caches derived from them.
    """

    # The fields, in order: what equality and repr read.
    FIELDS = (
        "namespace",
        "policies",
        "limits",
        "gpu_resources",
        "gpu_resources_sources",
        "gpu_device_classes",
        "gpu_device_classes_sources",
        "allow",
        "required_fields",
        "required_labels",
        "forbid",
        "defaults",
        "default_labels",
        "conflicts",
    )
    __slots__ = (*FIELDS, "_counted", "class_weights", "gpu_weights", "plans")
    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __init__(self, namespace: str, policies: list[PolicyRef] | None = None) -> None:
        self.namespace = namespace
        self.policies: list[PolicyRef] = [] if policies is None else policies
        self.limits: dict[str, list[Sourced]] = {}
        self.gpu_resources: list[tuple[str, float]] = list(DEFAULT_GPU_RESOURCES)
        self.gpu_resources_sources: list[PolicyRef] = []  # empty = the built-in list
        self.gpu_device_classes: list[tuple[str, float]] = list(DEFAULT_GPU_DEVICE_CLASSES)
        self.gpu_device_classes_sources: list[PolicyRef] = []  # empty = the built-in list
        # Each DeviceClass name's weight under gpu_device_classes, found once (None: not GPUs).
        self.class_weights: dict[str, Any] = {}
        self._counted: tuple[Any, Any, list[tuple[str, float]]] | None = None
        # Each resource name's weight under gpu_resources, found once for every job this policy judges.
        self.gpu_weights: dict[str, Any] = {}
        # What :mod:`.check` derives once from this policy per job kind (its plan of the checks and
        # of the defaults), by the kind map's identity: built by the first job of the kind, then shared.
        self.plans: dict[int, Any] = {}
        self.allow: dict[str, list[Sourced]] = {}
        self.required_fields: dict[str, list[Sourced]] = {}
        self.required_labels: dict[str, list[Sourced]] = {}  # value: allowed values or None
        self.forbid: dict[str, list[Sourced]] = {}
        self.defaults: dict[str, Sourced] = {}  # "queue", ..., "labels[<key>]"
        self.default_labels: dict[str, Sourced] = {}
        self.conflicts: list[Conflict] = []

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not EffectivePolicy:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.FIELDS)

    def __repr__(self) -> str:
        return f"EffectivePolicy({', '.join(f'{name}={getattr(self, name)!r}' for name in self.FIELDS)})"

    @property
    def gpu_counted(self) -> list[tuple[str, float]]:
        """The resource list containers are counted with: ``gpu_resources`` and the implicit extended
        resource of each DeviceClass entry (``deviceclass.resource.kubernetes.io/<class>``)."""
        counted = self._counted
        if counted is None or counted[0] is not self.gpu_resources or counted[1] is not self.gpu_device_classes:
            counted = (
                self.gpu_resources,
                self.gpu_device_classes,
                counted_resources(self.gpu_resources, self.gpu_device_classes),
            )
            self._counted = counted
        return counted[2]

    def limit(self, name: str) -> Sourced | None:
        """The most restrictive Deny value of a limit (else the strictest entry), for display."""
        entries = self.limits.get(name) or []
        deny = [e for e in entries if e.action == "Deny"]
        chosen = deny or entries
        return chosen[0] if chosen else None


# --- reading policy objects (plain dicts, parsed or as the apiserver stores them) ----------------


def policy_ref(policy: Mapping[str, Any]) -> PolicyRef:
    meta = policy.get("metadata") or {}
    kind = policy.get("kind") or ""
    namespace = meta.get("namespace") or "" if kind == NAMESPACED_KIND else ""
    return PolicyRef(str(kind), str(namespace), str(meta.get("name") or ""))


def _spec(policy: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = policy.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _section(policy: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    section = _spec(policy).get(name)
    return section if isinstance(section, Mapping) else {}


def _sourced(policy: Mapping[str, Any], value: Any) -> Sourced:
    spec = _spec(policy)
    action = spec.get("enforcementAction") or "Deny"
    existing = spec.get("existingViolations") or "Allow"
    priority = spec.get("priority")
    return Sourced(
        value,
        policy_ref(policy),
        action if action in ACTION_RANK else "Deny",  # an unknown action fails closed
        existing if existing in EXISTING_RANK else "Deny",
        priority if isinstance(priority, int) and not isinstance(priority, bool) else 0,
    )


# --- selection ---------------------------------------------------------------------------------


def policy_applies(
    policy: Mapping[str, Any],
    namespace: str,
    namespace_labels: Mapping[str, str] | None,
    job: Mapping[str, Any] | None,
) -> bool:
    """Whether ``policy`` applies to ``job`` in ``namespace``; ``job=None`` ignores ``spec.match``."""
    kind = policy.get("kind")
    spec = _spec(policy)
    if kind == CLUSTER_KIND:
        if not selector_matches(spec.get("namespaceSelector"), namespace_labels):
            return False
    elif kind == NAMESPACED_KIND:
        if (policy.get("metadata") or {}).get("namespace") != namespace:
            return False
    else:
        return False
    if job is None:
        return True
    return job_matches(spec.get("match"), job)


def job_matches(match: Mapping[str, Any] | None, job: Mapping[str, Any], kmap: KindMap | None = None) -> bool:
    """``spec.match`` against a job: each condition given must hold (``kmap``: the job's, when known)."""
    if not isinstance(match, Mapping):
        return True
    if kmap is None:
        kmap = kind_map(dict(job))
    families = match.get("families")
    if families is not None and (kmap is None or kmap.family not in families):
        return False
    kinds = match.get("kinds")
    if kinds is not None:
        wanted = {(k.get("group"), k.get("kind")) for k in kinds if isinstance(k, Mapping)}
        if kmap is None or (kmap.group, kmap.kind) not in wanted:
            return False
    labels = (job.get("metadata") or {}).get("labels") or {}
    return selector_matches(match.get("objectSelector"), labels)


def select_policies(
    policies: Iterable[Mapping[str, Any]],
    namespace: str,
    namespace_labels: Mapping[str, str] | None,
    job: Mapping[str, Any] | None,
) -> list[Mapping[str, Any]]:
    """The policies that apply, in a stable order (scope, then name) so that results never depend on input order."""
    chosen = [p for p in policies if policy_applies(p, namespace, namespace_labels, job)]
    return sorted(chosen, key=policy_ref)


def reads_unknown_labels(selector: Any, known: str) -> bool:
    """Whether a ``namespaceSelector`` reads a label other than ``known`` (``kubernetes.io/metadata.name``,
    which a namespace's name alone gives): with only the name known, its answer would be a guess. A
    malformed selector matches nothing whatever the labels (:mod:`.selectors`): it reads none."""
    if selector is None or selector_errors(selector):
        return False
    keys = set(selector.get("matchLabels") or ())
    keys.update(expr["key"] for expr in selector.get("matchExpressions") or ())
    return bool(keys - {known})


def selected_by_unknown_labels(
    policies: Iterable[Mapping[str, Any]], job: Mapping[str, Any], known: str
) -> list[PolicyRef]:
    """The cluster policies that would have to read the job namespace's labels to know whether they
    apply (their ``namespaceSelector`` reads a label beyond ``known``, the name's) and whose
    ``spec.match`` selects the job: where those labels are unknown (offline, no Namespace given), the
    job cannot be judged."""
    kmap = kind_map(dict(job))
    found = [
        p
        for p in policies
        if p.get("kind") == CLUSTER_KIND
        and reads_unknown_labels(_spec(p).get("namespaceSelector"), known)
        and job_matches(_spec(p).get("match"), job, kmap)
    ]
    return sorted(policy_ref(p) for p in found)


# --- combination -------------------------------------------------------------------------------


def _dominates(a: Sourced, b: Sourced, stricter_or_equal: bool) -> bool:
    return (
        stricter_or_equal
        and ACTION_RANK[a.action] >= ACTION_RANK[b.action]
        and EXISTING_RANK[a.existing_violations] >= EXISTING_RANK[b.existing_violations]
    )


def prune(entries: list[Sourced], numeric: bool = True) -> list[Sourced]:
    """Drop every entry another one dominates (see the module docstring); strictest first."""
    ordered = sorted(
        entries,
        key=lambda e: (
            e.value if numeric else 0,
            -ACTION_RANK[e.action],
            -EXISTING_RANK[e.existing_violations],
            e.source,
        ),
    )
    kept: list[Sourced] = []
    for entry in ordered:
        if not any(_dominates(k, entry, (not numeric) or k.value <= entry.value) for k in kept):
            kept.append(entry)
    return kept


def _intersect(field_name: str, lists: list[Sourced]) -> set[str]:
    """The values every list allows (registries: prefixes, the narrower of two nested ones)."""
    if field_name != "imageRegistries":
        result = set(lists[0].value)
        for entry in lists[1:]:
            result &= set(entry.value)
        return result
    current = {entry_prefix(v) for v in lists[0].value}
    for entry in lists[1:]:
        other = {entry_prefix(v) for v in entry.value}
        nxt = set()
        for a in current:
            for b in other:
                if a.startswith(b):
                    nxt.add(a)
                elif b.startswith(a):
                    nxt.add(b)
        current = nxt
    return current


def _allow_conflict(field_name: str, entries: list[Sourced]) -> Conflict | None:
    if len(entries) < 2 or _intersect(field_name, entries):
        return None
    action = "Audit"
    for rank_name in ("Deny", "Warn"):
        strong = [e for e in entries if ACTION_RANK[e.action] >= ACTION_RANK[rank_name]]
        if len(strong) >= 2 and not _intersect(field_name, strong):
            action = rank_name
            break
    sources = tuple(sorted({e.source for e in entries}))
    described = "; ".join(f"{e.source}: [{', '.join(map(str, e.value))}]" for e in entries)
    return Conflict(
        f"require.{field_name}",
        sources,
        f"no value satisfies every policy's require.{field_name} ({described})",
        action,
    )


def _pick_default(field_name: str, candidates: list[Sourced]) -> tuple[Sourced | None, Conflict | None]:
    if not candidates:
        return None, None
    namespaced = [c for c in candidates if c.source.kind == NAMESPACED_KIND]
    pool = namespaced or candidates
    top = max(c.priority for c in pool)
    best = sorted((c for c in pool if c.priority == top), key=lambda c: c.source)
    values = {repr(c.value) for c in best}
    if len(values) > 1:
        sources = tuple(c.source for c in best)
        described = "; ".join(f"{c.source}: {c.value!r}" for c in best)
        return None, Conflict(
            f"defaults.{field_name}",
            sources,
            f"policies of equal priority {top} set different defaults for {field_name} ({described}); "
            "no default is applied",
        )
    return best[0], None


def combine(selected: Iterable[Mapping[str, Any]], namespace: str) -> EffectivePolicy:
    """The effective policy of already selected policies (cacheable per namespace and selection)."""
    selected = sorted(selected, key=policy_ref)
    eff = EffectivePolicy(namespace, [policy_ref(p) for p in selected])
    limits: dict[str, list[Sourced]] = {}
    required: dict[str, list[Sourced]] = {}
    forbid: dict[str, list[Sourced]] = {}
    defaults: dict[str, list[Sourced]] = {}
    default_labels: dict[str, list[Sourced]] = {}
    gpu: dict[str, float] = {}
    classes: dict[str, float] = {}
    for policy in selected:
        lim, req, dflt = _section(policy, "limits"), _section(policy, "require"), _section(policy, "defaults")
        for name in LIMIT_FIELDS:
            value = lim.get(name)
            if isinstance(value, int) and not isinstance(value, bool):
                limits.setdefault(name, []).append(_sourced(policy, value))
        for field_name, given, sources in (
            ("gpuResources", gpu, eff.gpu_resources_sources),
            ("gpuDeviceClasses", classes, eff.gpu_device_classes_sources),
        ):
            items = lim.get(field_name)
            if isinstance(items, list) and items:
                sources.append(policy_ref(policy))
                for item in items:
                    if isinstance(item, Mapping) and isinstance(item.get("name"), str):
                        weight = item.get("weight", 1)
                        if not isinstance(weight, int | float) or isinstance(weight, bool):
                            weight = 1
                        name = item["name"]
                        given[name] = max(given[name], weight) if name in given else weight
        for name in REQUIRED_FIELDS:
            if req.get(name) is True:
                required.setdefault(name, []).append(_sourced(policy, True))
        for item in req.get("forbid") or []:
            forbid.setdefault(item, []).append(_sourced(policy, True))
        for name in ALLOW_FIELDS:
            values = req.get(name)
            if isinstance(values, list):
                eff.allow.setdefault(name, []).append(_sourced(policy, list(values)))
        runtimes = req.get("runtimes")
        for name, values in runtimes.items() if isinstance(runtimes, Mapping) else ():
            if name in RUNTIME_ALLOW and isinstance(values, list):
                eff.allow.setdefault(RUNTIME_ALLOW[name], []).append(_sourced(policy, list(values)))
        for label in req.get("labels") or []:
            if isinstance(label, Mapping) and isinstance(label.get("key"), str):
                values = label.get("values")
                eff.required_labels.setdefault(label["key"], []).append(
                    _sourced(policy, list(values) if isinstance(values, list) else None)
                )
        for name in DEFAULT_FIELDS:
            if dflt.get(name) is not None:
                defaults.setdefault(name, []).append(_sourced(policy, dflt[name]))
        labels = dflt.get("labels")
        if isinstance(labels, Mapping):
            for key, value in labels.items():
                default_labels.setdefault(key, []).append(_sourced(policy, value))
    eff.limits = {name: prune(entries) for name, entries in limits.items()}
    eff.required_fields = {name: prune(entries, numeric=False) for name, entries in required.items()}
    eff.forbid = {name: prune(entries, numeric=False) for name, entries in forbid.items()}
    if gpu:
        eff.gpu_resources = with_builtin(DEFAULT_GPU_RESOURCES, gpu)
    if classes:
        eff.gpu_device_classes = with_builtin(DEFAULT_GPU_DEVICE_CLASSES, classes)
    for name, entries in eff.allow.items():
        conflict = _allow_conflict(name, entries)
        if conflict:
            eff.conflicts.append(conflict)
    for name, entries in eff.required_labels.items():
        with_values = [e for e in entries if e.value is not None]
        conflict = _allow_conflict("labels", with_values) if len(with_values) > 1 else None
        if conflict:
            eff.conflicts.append(
                Conflict(f"require.labels[{name}]", conflict.policies, conflict.message, conflict.action)
            )
    for name, entries in defaults.items():
        winner, conflict = _pick_default(name, entries)
        if winner:
            eff.defaults[name] = winner
        if conflict:
            eff.conflicts.append(conflict)
    for key, entries in default_labels.items():
        winner, conflict = _pick_default(f"labels[{key}]", entries)
        if winner:
            eff.default_labels[key] = winner
        if conflict:
            eff.conflicts.append(conflict)
    return eff


def effective_policy(
    policies: Iterable[Mapping[str, Any]],
    namespace: str,
    namespace_labels: Mapping[str, str] | None,
    job: Mapping[str, Any] | None,
) -> EffectivePolicy:
    """The effective policy for ``job`` in ``namespace`` (``job=None``: every policy of the namespace).

    From a :class:`PolicySet`, the result is shared with every other job that selects the same
    policies: read it, never change it.
    """
    if type(policies) is PolicySet or isinstance(policies, PolicySet):
        return policies.effective(namespace, namespace_labels, job)
    return combine(select_policies(policies, namespace, namespace_labels, job), namespace)


class PolicySet(tuple[Mapping[str, "Any"], ...]):
    """The policies in force at one moment, remembering what was resolved from them.

    Every review resolves the effective policy (once, unless a default changes a label a selector
    reads), while policies and namespace labels change rarely: the set remembers
    which policies apply in a namespace with given labels, and the effective policy of each
    selection. A change of any policy makes a new set (the webhook's cache builds one per change),
    so nothing here is ever stale; a namespace's labels are part of the key, so a relabelled
    namespace is looked up afresh. Each memo is cleared when it reaches ``memo.limit`` entries
    (``MEMO_LIMIT``; label sets seen over a long run, objectSelector combinations). The objects must not change
    while in a set: entries are keyed by their identity.
    """

    MEMO_LIMIT = 4096
    # The effective policy per job key (compiled: every review looks it up, see .memo).
    memo: ResolutionMemo
    _in_namespace: dict[Hashable, list[Mapping[str, Any]]]
    _combined: dict[Hashable, EffectivePolicy]

    def __new__(cls, policies: Iterable[Mapping[str, Any]] = ()) -> PolicySet:
        self = super().__new__(cls, policies)
        self._in_namespace = {}
        self._combined = {}
        # The label keys any selector of the set reads (None: every label, when a selector's shape
        # is not plain): selection depends on those labels alone, so the memo keys hold only them,
        # and a job whose defaults add a label no selector reads finds the same entry again.
        self.memo = ResolutionMemo(
            _selector_keys(self, "namespaceSelector"),
            _selector_keys(self, "objectSelector"),
            self._resolve,
            self._resolve_afresh,
            self.MEMO_LIMIT,
        )
        return self

    def effective(
        self, namespace: str, namespace_labels: Mapping[str, str] | None, job: Mapping[str, Any] | None
    ) -> EffectivePolicy:
        return self.memo.effective(namespace, namespace_labels, job)

    def selects_alike(self, job: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
        """Whether two versions of one job in one namespace select the same policies: the same
        apiVersion and kind, and the same values of the labels the set's objectSelectors read."""
        return self.memo.selects_alike(job, other)

    def _resolve(
        self, namespace: str, namespace_labels: Mapping[str, str] | None, job: Mapping[str, Any] | None
    ) -> EffectivePolicy:
        namespace_key = (namespace, labels_key(namespace_labels, self.memo.namespace_keys))
        candidates = self._in_namespace.get(namespace_key)
        if candidates is None:
            candidates = select_policies(self, namespace, namespace_labels, None)
            remember(self._in_namespace, namespace_key, candidates, self.memo.limit)
        if job is None:
            chosen = candidates
        else:
            kmap = kind_map(dict(job))
            chosen = [p for p in candidates if job_matches(_spec(p).get("match"), job, kmap)]
        # Jobs with other labels or kinds often select the same policies: one effective policy each.
        selection = (namespace, tuple(map(id, chosen)))
        effective = self._combined.get(selection)
        if effective is None:
            effective = combine(chosen, namespace)
            remember(self._combined, selection, effective, self.memo.limit)
        return effective

    def _resolve_afresh(
        self, namespace: str, namespace_labels: Mapping[str, str] | None, job: Mapping[str, Any] | None
    ) -> EffectivePolicy:
        return combine(select_policies(self, namespace, namespace_labels, job), namespace)


def _selector_keys(policies: Iterable[Mapping[str, Any]], where: str) -> tuple[str, ...] | None:
    """The label keys that the ``where`` selectors (``namespaceSelector`` of the spec, ``objectSelector``
    of ``spec.match``) of ``policies`` read, sorted; None when a selector's shape is not plain (every
    label then goes into the memo key, as the selectors' own checks decide what such a shape means)."""
    keys: set[str] = set()
    for policy in policies:
        spec = _spec(policy)
        holder = spec.get("match") if where == "objectSelector" else spec
        if holder is None:
            continue
        if not isinstance(holder, Mapping):
            return None
        selector = holder.get(where)
        if selector is None:
            continue
        if not isinstance(selector, Mapping):
            return None
        labels = selector.get("matchLabels")
        if labels is not None:
            if not isinstance(labels, Mapping) or not all(type(k) is str for k in labels):
                return None
            keys.update(labels)
        expressions = selector.get("matchExpressions")
        if expressions is not None:
            if not isinstance(expressions, list):
                return None
            for expr in expressions:
                if not isinstance(expr, Mapping) or type(expr.get("key")) is not str:
                    return None
                keys.add(expr["key"])
    return tuple(sorted(keys))


def conflicts(
    policies: Iterable[Mapping[str, Any]],
    namespaces: Mapping[str, Mapping[str, str]] | None = None,
) -> list[Conflict]:
    """Every conflict between policies that can apply together, for the policies' status.

    ``namespaces`` maps each namespace to its labels. Without it, every cluster policy is taken to
    apply everywhere (selectors unknown: report what *could* clash) and the namespaces are those
    of the namespaced policies, plus one with no namespaced policy. Policies are grouped per kind
    jobgate serves (``match.families``/``kinds``); ``objectSelector`` is assumed to overlap.
    """
    policies = list(policies)
    if namespaces is None:
        names = sorted({(p.get("metadata") or {}).get("namespace") or "" for p in policies} - {""})
        scopes: list[tuple[str, Mapping[str, str] | None]] = [(n, None) for n in [*names, ""]]
    else:
        scopes = list(namespaces.items())
    found: dict[tuple[str, tuple[PolicyRef, ...]], Conflict] = {}
    for namespace, labels in scopes:
        for kmap in KINDS.values():
            probe = {"apiVersion": f"{kmap.group}/v", "kind": kmap.kind}
            chosen = []
            for p in policies:
                kind = p.get("kind")
                if kind == NAMESPACED_KIND and (p.get("metadata") or {}).get("namespace") != namespace:
                    continue
                if kind == CLUSTER_KIND and labels is not None and not policy_applies(p, namespace, labels, None):
                    continue
                if kind not in (CLUSTER_KIND, NAMESPACED_KIND):
                    continue
                match = _spec(p).get("match")
                loose = (
                    {k: v for k, v in match.items() if k != "objectSelector"} if isinstance(match, Mapping) else None
                )
                if job_matches(loose, probe):
                    chosen.append(p)
            for conflict in combine(chosen, namespace).conflicts:
                found.setdefault((conflict.field, conflict.policies), conflict)
    return list(found.values())
