"""The clean path of the policy checks: a plan per effective policy and kind.

Nearly every job a cluster admits breaks no policy, and the checks (:mod:`jobgate.policy.findings`)
spend most of their time building what only a finding needs (paths, messages, identities) and walking
the pod templates once per check. A plan, derived once from an effective policy for one kind, answers
the one question the common case asks: can this job have any finding at all? It holds only the
constraints the policy has, each reduced to its strictest bound (any entry exceeded is a finding,
whatever its action), and walks the templates once. "Clean" means the checks would find nothing;
anything else (a bound exceeded, a shape it does not handle, a value it cannot compare) sends the job
to the checks, which give the findings. So the plan never decides a finding, a message or a path: it
can only skip work whose result is known to be empty. It also holds the policy's defaults for the
kind, and writes those at fixed paths into a copy of the job (:meth:`_Plan.write_fixed`).
"""

from __future__ import annotations

from collections.abc import Mapping

from jobgate.engine.jsonpatch import escape_pointer_token
from jobgate.policy.defaults import _labels_to_default, _unset_at
from jobgate.policy.fieldmap import (
    KUEUE_LABEL,
    TEMPLATE,
    FieldPath,
    KindMap,
    get_path,
    pod_sizes,
)
from jobgate.policy.findings import _ALLOW_LISTS, _FIELD_RULES, _HOST_FLAGS, _NO_EXTENDED, DEFAULT_SCHEDULER
from jobgate.policy.gpu import (
    QuantityError,
    gpu_weight,
    parse_quantity,
)
from jobgate.policy.images import name_allowed, normalise_image
from jobgate.policy.memo import Resolution
from jobgate.policy.resolve import EffectivePolicy, Sourced

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any

    from jobgate.policy.gpu import Amount


_UNSET: Any = object()
_DEFAULT_FIELDS = ("queue", "priorityClassName", "schedulerName", "ttlSecondsAfterFinished", "activeDeadlineSeconds")
_IMAGE_MEMO_LIMIT = 4096


def _least(entries: list[Sourced] | None) -> Any:
    """The strictest bound of a limit's entries (None: no entry)."""
    return min(e.value for e in entries) if entries else None


def _common_strings(lists: list[Any]) -> set[str]:
    """The strings every list holds (a value outside this set may still be allowed: the checks decide)."""
    result: set[str] | None = None
    for values in lists:
        strings = {v for v in values if type(v) is str} if isinstance(values, list) else set()
        result = strings if result is None else result & strings
    return result if result is not None else set()


class _Plan:
    """What an effective policy asks of one kind's jobs, for :meth:`clean` (see above)."""

    def __init__(self, eff: EffectivePolicy, kmap: KindMap) -> None:
        # A conflict a job gets, or a requirement on a field the kind lacks, is a finding for every job.
        self.usable = not any(c.action is not None for c in eff.conflicts)
        self.max_role: Any = _least(eff.limits.get("maxReplicasPerRole"))
        self.max_replicas: Any = _least(eff.limits.get("maxReplicasPerJob"))
        self.max_pod_gpus: Any = _least(eff.limits.get("maxGPUsPerPod"))
        self.max_job_gpus: Any = _least(eff.limits.get("maxGPUsPerJob"))
        self.count_gpus = self.max_pod_gpus is not None or self.max_job_gpus is not None
        # (locator, required, strictest maximum or None, the path every job of the kind has it at or
        # None) per lifetime field the policy constrains.
        self.lifetime: list[tuple[Any, bool, Any, FieldPath | None]] = []
        for _, cap in _FIELD_RULES:
            field = cap.subject
            required = bool(eff.required_fields.get(field))
            maximum = _least(eff.limits.get(cap.field))
            if not required and maximum is None:
                continue
            locator = kmap.locator(field)
            if locator is None or locator == TEMPLATE:
                self.usable = False
            else:
                self.lifetime.append((locator, required, maximum, _fixed_path(locator)))
        # Allow-lists: (locator, the values every policy allows, fixed path or None) at the job's
        # level; (field, values, the value an unset field means) in each pod template.
        self.job_allow: list[tuple[Any, set[str], FieldPath | None]] = []
        self.template_allow: list[tuple[str, set[str], Any]] = []
        for decl in _ALLOW_LISTS:
            field = decl.subject
            entries = eff.allow.get(decl.field)
            if not entries:
                continue
            allowed = _common_strings([e.value for e in entries])
            locator = kmap.locator(field)
            if locator is None:
                self.usable = False
            elif locator == TEMPLATE:
                unset = DEFAULT_SCHEDULER if field == "schedulerName" else None
                self.template_allow.append((field, allowed, unset))
            else:
                self.job_allow.append((locator, allowed, _fixed_path(locator)))
        if kmap.kind == "TrainJob" and any(name.startswith("runtimes.") for name in eff.allow):
            self.usable = False  # require.runtimes: the findings read the TrainJob's runtimeRef
        self.labels: list[tuple[str, set[str] | None]] = []
        for key, entries in eff.required_labels.items():
            with_values = [e.value for e in entries if e.value is not None]
            self.labels.append((key, _common_strings(with_values) if with_values else None))
        self.registries: list[Any] = [e.value for e in eff.allow.get("imageRegistries", [])]
        self.images: dict[str, bool] = {}
        self.host_flags = tuple(item for item in _HOST_FLAGS if item in eff.forbid)
        self.host_path = "hostPath" in eff.forbid
        self.privileged = "privileged" in eff.forbid
        self.walk_containers = bool(self.registries) or self.privileged
        # The pod fields the plan reads that few pods have; every check of them passes when they are
        # absent, so a pod with none of them skips them all (one test in C).
        rare = set(self.host_flags)
        if self.count_gpus:
            rare.update(("overhead", "resourceClaims", _INITS))
        if self.walk_containers:
            rare.update((_INITS, _EPHEMERAL))
        self.rare_pod_fields = frozenset(rare)
        # Whether any constraint reads the pods or their count: without one (enforcement on, no policy
        # with a pod-level rule, as in most namespaces) the job-level checks decide alone.
        self.reads_pods = bool(
            self.max_role is not None
            or self.max_replicas is not None
            or self.count_gpus
            or self.template_allow
            or self.host_flags
            or self.host_path
            or self.walk_containers
        )
        self.not_gpus: set[str] = set()  # resource names that weigh nothing under this policy
        # The effective policy's weights of GPU resources (shared with its other plans, filled as
        # names are met) and the list they come from, read here without the policy's attributes.
        self.gpu_weights: dict[str, Any] = eff.gpu_weights
        self.gpu_resources: Any = eff.gpu_counted
        # extended_weights' memo for this plan: the DeviceClasses' extended resources it last answered for.
        self.extended_memo: list[Any] = []
        # Defaults: (field, value, locator) of each field given one that the kind has, in the order
        # they are written; then the labels, the Kueue one last (it beats a same-key defaults.labels).
        self.defaults: list[tuple[str, Any, Any]] = []
        for field in _DEFAULT_FIELDS:
            chosen = eff.defaults.get(field)
            locator = kmap.locator(field)
            if chosen is not None and locator is not None:
                self.defaults.append((field, chosen.value, locator))
        wanted: dict[str, Any] = {key: s.value for key, s in eff.default_labels.items()}
        kueue = eff.defaults.get("kueueQueueName")
        if kueue is not None and kmap.kueue:
            wanted[KUEUE_LABEL] = kueue.value
        self.default_labels: list[tuple[str, Any]] = list(wanted.items())
        # The defaults as (path, value) when each has a path every job of the kind shares (None when one
        # has not: a pod template's field, a path that depends on the job, the Volcano queue case),
        # read without the locators by _defaults and write_fixed.
        self.fixed_defaults: list[tuple[FieldPath, Any]] | None = []
        for field, default, locator in self.defaults:
            queue_case = field == "queue" and kmap.family == "volcano"
            path = None if locator == TEMPLATE or queue_case else _fixed_path(locator)
            if not path:
                self.fixed_defaults = None
                break
            self.fixed_defaults.append((path, default))
        # The same, as the writes of write_fixed: (path, the pointer of each step, value, a label's
        # key or None); a label is written when the job's labels lack the key, a field when unset.
        self.fixed_writes: list[tuple[FieldPath, tuple[str, ...], Any, str | None]] | None = None
        if self.fixed_defaults is not None:
            writes: list[tuple[FieldPath, Any, str | None]] = [
                (path, value, None) for path, value in self.fixed_defaults
            ]
            writes += [(("metadata", "labels", key), value, key) for key, value in self.default_labels]
            self.fixed_writes = [(path, _pointers(path), value, key) for path, value, key in writes]

    def write_fixed(self, job: dict[str, Any], ops: list[dict[str, Any]] | None) -> dict[str, Any]:
        """``job`` with the fixed defaults written into copies, each container on the way copied once
        or created, the operations recorded in ``ops`` (unless None) as a ``PatchRecorder`` records
        them; ``job`` itself when none applies. Only for a plan with ``fixed_writes``."""
        writes = self.fixed_writes
        assert writes is not None
        labels = _labels_to_default(job) if self.default_labels else None
        root = job
        made: dict[str, dict[str, Any]] = {}  # the containers copied or created, by pointer
        for path, pointers, value, label in writes:
            # Each tested on the job as received (never changed), as policy_defaults tests them.
            if label is None:
                if not _unset_at(job, path):
                    continue
            elif labels is None or label in labels:
                continue
            if root is job:
                root = dict(job)
            node = root
            last = len(path) - 1
            for step in range(last):
                segment = str(path[step])
                child = made.get(pointers[step])
                if child is None:
                    existing = node.get(segment)
                    if isinstance(existing, dict):
                        child = dict(existing)
                    else:  # missing or null: anything else stopped the default above
                        child = {}
                        if ops is not None:
                            ops.append(
                                {"op": "replace" if segment in node else "add", "path": pointers[step], "value": child}
                            )
                    node[segment] = child
                    made[pointers[step]] = child
                node = child
            leaf = str(path[last])
            if ops is not None:
                ops.append({"op": "replace" if leaf in node else "add", "path": pointers[last], "value": value})
            node[leaf] = value
        return root

    def clean(self, job: dict[str, Any], kmap: KindMap, extended: Mapping[str, Any] = _NO_EXTENDED) -> bool:
        """True when the checks would find nothing in ``job``; False when they may (they then decide).
        ``extended``: :func:`extended_weights`, the resources a DeviceClass makes GPUs (a container
        asking for one is left to the checks)."""
        if not self.usable:
            return False
        for locator, required, maximum, fixed in self.lifetime:
            value = get_path(job, fixed if fixed is not None else locator(job))
            if not isinstance(value, int) or isinstance(value, bool):
                if required:
                    return False
            elif maximum is not None and value > maximum:
                return False
        for locator, allowed, fixed in self.job_allow:
            value = get_path(job, fixed if fixed is not None else locator(job))
            if type(value) is not str or value not in allowed:
                return False
        if self.labels:
            labels = get_path(job, ("metadata", "labels"))
            if not isinstance(labels, dict):
                return False
            for key, allowed_values in self.labels:
                if key not in labels:
                    return False
                if allowed_values is not None:
                    value = labels[key]
                    if type(value) is not str or value not in allowed_values:
                        return False
        if self.host_path or self.registries:
            volumes = get_path(job, ("spec", "volumes"))
            if isinstance(volumes, list):
                if self.host_path and not _no_host_path(volumes):
                    return False
                if self.registries and not self._volumes_clean(volumes):
                    return False
        if not self.reads_pods:
            return True
        replicas = 0
        gpus: Amount = 0
        for largest, template in pod_sizes(kmap, job):
            if self.max_role is not None and largest > self.max_role:
                return False
            replicas += largest
            pod = self._pod(template, extended)
            if pod is None or (self.max_pod_gpus is not None and pod > self.max_pod_gpus):
                return False
            if pod:
                gpus += pod * largest
        if self.max_replicas is not None and replicas > self.max_replicas:
            return False
        return not (self.max_job_gpus is not None and gpus > self.max_job_gpus)

    def _pod(self, template: dict[str, Any] | None, extended: Mapping[str, Any]) -> Amount | None:
        """The weighted GPUs of a clean pod template (0 when the policy counts none), as
        :func:`pod_gpus` counts them; None when the template may have a finding, or has more than
        app containers to count (init containers, sidecars, overhead): the checks then decide."""
        spec = template.get("spec") if template is not None else None
        if type(spec) is not dict:
            if isinstance(spec, Mapping):
                return None
            # No pod spec: no container, volume or flag; an allow-list's field is unset.
            for _, allowed, unset in self.template_allow:
                if unset is None or unset not in allowed:
                    return None
            return 0
        for field, allowed, unset in self.template_allow:
            value = spec.get(field)
            if value is None:
                value = unset
            if type(value) is not str or value not in allowed:
                return None
        if self.host_path or self.registries:
            volumes = spec.get("volumes")
            if isinstance(volumes, list):
                if self.host_path and not _no_host_path(volumes):
                    return None
                if self.registries and not self._volumes_clean(volumes):
                    return None
        count = self.count_gpus
        rare = self.rare_pod_fields
        if rare and _has_any(spec, rare):
            for flag in self.host_flags:
                if spec.get(flag) is True:
                    return None
            if count:
                overhead = spec.get("overhead")
                if (
                    (overhead is not None and isinstance(overhead, Mapping))
                    or spec.get("resourceClaims")
                    or _non_empty_list(spec, _INITS)
                ):
                    return None
            if self.walk_containers and not (
                self._containers_clean(spec, _INITS) and self._containers_clean(spec, _EPHEMERAL)
            ):
                return None
        gpus: Amount = 0
        containers = spec.get("containers")
        if not isinstance(containers, list):
            return gpus
        for container in containers:
            if type(container) is not dict:
                if isinstance(container, Mapping):
                    return None
                continue
            if self.walk_containers and not self._container_clean(container):
                return None
            if count:
                resources = container.get("resources")
                if resources is None:
                    continue
                if type(resources) is not dict:
                    if isinstance(resources, Mapping):
                        return None
                    continue
                own = self._requests(resources, extended)
                if own is None:
                    return None
                gpus += own
        return gpus

    def _volumes_clean(self, volumes: list[Any]) -> bool:
        """Whether every image volume's reference is allowed (as :meth:`_container_clean` an image)."""
        for volume in volumes:
            if type(volume) is not dict:
                if isinstance(volume, dict):
                    return False
                continue
            source = volume.get("image")
            if source is None:
                continue
            if type(source) is not dict:
                if isinstance(source, dict):
                    return False  # a dict subclass: the checks judge it
                continue
            if not self._image_clean(source.get("reference")):
                return False
        return True

    def _containers_clean(self, spec: dict[str, Any], list_name: str) -> bool:
        items = spec.get(list_name)
        if isinstance(items, list):
            for container in items:
                if isinstance(container, dict) and not self._container_clean(container):
                    return False
        return True

    def _container_clean(self, container: dict[str, Any]) -> bool:
        if self.privileged:
            context = container.get("securityContext")
            if isinstance(context, dict) and context.get("privileged") is True:
                return False
        return not self.registries or self._image_clean(container.get("image"))

    def _image_clean(self, image: object) -> bool:
        """Whether an image reference (a container's or an image volume's) is from an allowed registry,
        or no string at all (the family's rules judge that); remembered per reference."""
        if type(image) is str:
            known = self.images.get(image)
            if known is None:
                known = self.image_allowed(image)
            return bool(known)
        return not isinstance(image, str)  # a str subclass: the checks judge it

    def image_allowed(self, image: str) -> bool:
        """Whether every registry list allows ``image``, remembered in ``images``."""
        known = all(name_allowed(normalise_image(image), values) for values in self.registries)
        if len(self.images) >= _IMAGE_MEMO_LIMIT:
            self.images.clear()
        self.images[image] = known
        return known

    def _requests(self, resources: dict[str, Any], extended: Mapping[str, Any]) -> Amount | None:
        """One container's weighted GPUs: per resource ``requests``, else ``limits``; None when
        something cannot be counted (or is a DeviceClass's extended resource: the checks count it)."""
        if resources.get("claims"):
            return None
        requests = resources.get("requests")
        limits = resources.get("limits")
        if (requests is not None and type(requests) is not dict) or (limits is not None and type(limits) is not dict):
            return None
        if extended and (
            (requests and not extended.keys().isdisjoint(requests))
            or (limits and not extended.keys().isdisjoint(limits))
        ):
            return None
        total: Amount = 0
        if requests:
            own = self._weighed(requests, None)
            if own is None:
                return None
            total = own
        if limits:
            own = self._weighed(limits, requests or None)
            if own is None:
                return None
            if own:
                total += own
        return total

    def _weighed(self, source: dict[str, Any], counted: dict[str, Any] | None) -> Amount | None:
        """The weighted GPUs of one ``requests`` or ``limits`` map, but for the names in ``counted``
        (a limit of a requested resource); None when one cannot be counted. Most containers ask only
        for names that weigh nothing (cpu, memory, ...): ``not_gpus`` remembers them."""
        not_gpus = self.not_gpus
        total: Amount = 0
        for name, raw in source.items():
            if name in not_gpus or (counted is not None and name in counted):
                continue
            weight = self.gpu_weights.get(name, _UNSET)
            if weight is _UNSET:
                if type(name) is not str:
                    return None
                weight = gpu_weight(name, self.gpu_resources)
                self.gpu_weights[name] = weight
            if weight is None:
                if len(not_gpus) >= _IMAGE_MEMO_LIMIT:
                    not_gpus.clear()
                not_gpus.add(name)
                continue
            if type(raw) is int:
                total += raw * weight
                continue
            try:
                total += parse_quantity(raw) * weight
            except QuantityError:
                return None
        return total


_INITS = "initContainers"
_EPHEMERAL = "ephemeralContainers"


def _has_any(obj: dict[str, Any], keys: frozenset[str]) -> bool:
    # A loop over the few keys of a pod spec (mypyc compiles any() of a generator to one): compiled,
    # cheaper than a set operation's method calls.
    return any(key in keys for key in obj)


def _non_empty_list(spec: dict[str, Any], name: str) -> bool:
    items = spec.get(name)
    return isinstance(items, list) and len(items) > 0


def _no_host_path(volumes: list[Any]) -> bool:
    return not any(isinstance(volume, dict) and volume.get("hostPath") is not None for volume in volumes)


def _pointers(path: FieldPath) -> tuple[str, ...]:
    """The JSON Pointer of each step of ``path``: ``/a``, ``/a/b``, ..."""
    pointers: list[str] = []
    pointer = ""
    for segment in path:
        pointer = f"{pointer}/{escape_pointer_token(str(segment))}"
        pointers.append(pointer)
    return tuple(pointers)


def _fixed_path(locator: Any) -> FieldPath | None:
    """The path a job-level locator gives every job, None when it depends on the job (a KubeDL
    MPIJob's ``spec.runPolicy``: the one thing locators read, as the generated policies also assume)."""
    plain = tuple(locator({}))
    if tuple(locator({"spec": {"runPolicy": {}}})) != plain or not all(type(s) is str for s in plain):
        return None
    return plain


def _plan(eff: EffectivePolicy, kmap: KindMap) -> _Plan:
    plan = eff.plans.get(id(kmap))
    if plan is None:
        plan = eff.plans[id(kmap)] = _Plan(eff, kmap)
    return plan


def resolved_plan(resolution: Resolution) -> _Plan:
    """The plan of a memo's resolution (its effective policy for its kind, which jobgate serves: a
    ``kmap``), kept in it: a review reads it there without a lookup."""
    plan = resolution.plan
    if plan is None:
        kmap = resolution.kmap
        assert kmap is not None, "a kind jobgate does not serve has no plan"
        plan = resolution.plan = _plan(resolution.effective, kmap)
    return plan  # type: ignore[no-any-return]


def _label_defaults(job: dict[str, Any], plan: _Plan, ops: list[tuple[list[str | int], object]]) -> None:
    if plan.default_labels:
        labels = _labels_to_default(job)
        if labels is None:
            return
        for key, value in plan.default_labels:
            if key not in labels:
                ops.append((["metadata", "labels", key], value))
