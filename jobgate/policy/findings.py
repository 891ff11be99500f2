"""The policy checks: every finding of an effective policy on one job (:class:`PolicyFinding`).

One piece of code per form of :mod:`jobgate.policy.constraints`, looping over its declarations: the
rule id, the error type and the detail's text come from there (the apiserver's policies read the
same). :func:`jobgate.policy.check.policy_findings` runs them when the clean path
(:mod:`jobgate.policy.plan`) cannot rule a finding out, and drops what ``existingViolations`` allows.
"""

from __future__ import annotations

from collections.abc import Mapping

from jobgate.engine.fielderrors import render_path
from jobgate.policy.constraints import (
    ALLOW_LIST,
    CONSTRAINTS,
    CONTAINER_FLAG_PATHS,
    DECLARED,
    FIELD_CAP,
    FORBID_CONTAINER_FLAG,
    FORBID_POD_FLAG,
    FORBID_VOLUME,
    FORBIDDEN,
    REQUIRED,
    REQUIRED_FIELD,
    RUNTIMES,
    Constraint,
    of_form,
)
from jobgate.policy.fieldmap import (
    FieldPath,
    Key,
    KindMap,
    ReplicaGroup,
    get_path,
)
from jobgate.policy.gpu import (
    claim_devices,
    format_gpus,
    gpu_weight,
    pod_gpus,
)
from jobgate.policy.images import name_allowed, normalise_image
from jobgate.policy.kinds import kind_map
from jobgate.policy.resolve import ACTION_RANK, EffectivePolicy, Sourced

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from jobgate.engine.views import DeviceView
    from jobgate.policy.gpu import Amount


_VALUELESS = (REQUIRED, FORBIDDEN)

# What an unset template field means for the pods (the apiserver defaults it on the Pod).
DEFAULT_SCHEDULER = "default-scheduler"


# PolicyFinding's fields, in order: what its equality, hash and repr read.
_FINDING_FIELDS = (
    "path",
    "type",
    "message",
    "action",
    "policy",
    "rule",
    "value",
    "identity",
    "measure",
    "existing_violations",
    "segments",
)


class PolicyFinding:
    """One violation (or warning) of a policy on a job (compared, hashed and shown by all its fields)."""

    __slots__ = (
        "action",
        "existing_violations",
        "identity",
        "measure",
        "message",
        "path",
        "policy",
        "rule",
        "segments",
        "type",
        "value",
    )

    def __init__(  # noqa: PLR0917 (the fields in their order, as the findings have always been made)
        self,
        path: str,
        type: str,
        message: str,
        action: str,
        policy: str,
        rule: str,
        value: Any = None,
        identity: tuple[Any, ...] = (),
        measure: Any = None,
        existing_violations: str = "Deny",
        segments: FieldPath = (),
    ) -> None:
        self.path = path  # apiserver style: spec.tfReplicaSpecs[Worker].template.spec.containers[0].image
        self.type = type  # Invalid value | Required value | Forbidden | Unsupported value
        self.message = message  # the detail, naming the policy
        self.action = action  # Deny | Warn | Audit
        # e.g. "ClusterTrainingJobPolicy research-gpus" (several, comma-separated, for conflicts)
        self.policy = policy
        self.rule = rule  # e.g. policy/max-gpus-per-job
        self.value = value  # the offending value (shown for Invalid/Unsupported value)
        self.identity = identity
        self.measure = measure
        self.existing_violations = existing_violations
        # The path as segments, for the engine's field errors (and the offline command's line numbers).
        self.segments = segments

    def _key(self) -> tuple[Any, ...]:
        return (
            self.path,
            self.type,
            self.message,
            self.action,
            self.policy,
            self.rule,
            self.value,
            self.identity,
            self.measure,
            self.existing_violations,
            self.segments,
        )

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not PolicyFinding:
            return NotImplemented
        return self._key() == other._key()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in zip(_FINDING_FIELDS, self._key(), strict=True))
        return f"PolicyFinding({shown})"

    def text(self) -> str:
        """The line as the apiserver prints a field error; a not-applicable notice, never a denial,
        without an error type (it forbids nothing)."""
        if self.rule == "policy/not-applicable":
            return f"{self.path}: {self.message}"
        if self.type in _VALUELESS:
            return f"{self.path}: {self.type}: {self.message}"
        return f"{self.path}: {self.type}: {_show(self.value)}: {self.message}"


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return '"' + str(value).replace('"', '\\"') + '"'


def _finding(  # noqa: PLR0917 (the checks pass value, identity, measure in that order)
    entry: Sourced,
    path: FieldPath | str,
    kind: str,
    message: str,
    rule: str,
    value: Any = None,
    identity: tuple[Any, ...] = (),
    measure: Any = None,
    action: str | None = None,
) -> PolicyFinding:
    return PolicyFinding(
        path if isinstance(path, str) else render_path(path),
        kind,
        f"{message} ({entry.source})",
        action or entry.action,
        str(entry.source),
        rule,
        value,
        (rule, entry.source, *identity),
        measure,
        entry.existing_violations,
        () if isinstance(path, str) else path,
    )


def _weaker(action: str, cap: str = "Warn") -> str:
    """A not-applicable notice is at most a warning (an Audit policy's stays Audit)."""
    return action if ACTION_RANK[action] < ACTION_RANK[cap] else cap


def _not_applicable(entry: Sourced, kmap: KindMap, what: str, field: str) -> PolicyFinding:
    return _finding(
        entry,
        "spec",
        FORBIDDEN,
        f"{what} is not applicable: {kmap.kind} ({kmap.group}) has no {field}",
        "policy/not-applicable",
        identity=(field, what),
        action=_weaker(entry.action),
    )


# --- the checks --------------------------------------------------------------------------------
#
# One piece of code per form of jobgate.policy.constraints, looping over its declarations: the rule
# id, the error type and the detail's text come from there (the apiserver's policies read the same).

_ROLE_REPLICAS = DECLARED["policy/max-replicas-per-role"]
_JOB_REPLICAS = DECLARED["policy/max-replicas-per-job"]
_POD_GPUS = DECLARED["policy/max-gpus-per-pod"]
_JOB_GPUS = DECLARED["policy/max-gpus-per-job"]
_LABELS = DECLARED["policy/required-label"]
_IMAGES = DECLARED["policy/image-registries"]
_CLAIM_UNBOUNDED = DECLARED["policy/gpu-claim-unbounded"]
_CLAIM_UNKNOWN = DECLARED["policy/gpu-claim-unknown"]
# Per job-level field: (its requirement, its cap), the requirement's findings first.
_FIELD_RULES = tuple(
    (required, cap)
    for cap in of_form(FIELD_CAP)
    for required in of_form(REQUIRED_FIELD)
    if required.subject == cap.subject
)
_ALLOW_LISTS = of_form(ALLOW_LIST)
(_RUNTIMES,) = of_form(RUNTIMES)
# A TrainJob's runtime kind (spec.runtimeRef.kind, ClusterTrainingRuntime by default) -> its require.runtimes list.
_RUNTIME_LISTS = {
    "ClusterTrainingRuntime": "runtimes.clusterTrainingRuntimes",
    "TrainingRuntime": "runtimes.trainingRuntimes",
}
_FORBID = {c.subject: c for c in CONSTRAINTS if c.param == "require.forbid"}
_HOST_FLAGS = tuple(c.subject for c in of_form(FORBID_POD_FLAG))


def _over(
    decl: Constraint,
    entry: Sourced,
    path: FieldPath | str,
    amount: Any,
    identity: tuple[Any, ...],
    *,
    shown: Any = None,
    **holes: object,
) -> PolicyFinding:
    """A cap's finding: ``amount`` is compared (existingViolations) and shown, unless ``shown`` is given."""
    over = decl.outcomes["over"]
    detail = over.detail(limit=entry.value, **holes)
    value = amount if shown is None else shown
    return _finding(entry, path, over.type, detail, decl.rule, value, identity, amount)


def _replica_checks(eff: EffectivePolicy, groups: list[ReplicaGroup], out: list[PolicyFinding]) -> None:
    for entry in eff.limits.get(_ROLE_REPLICAS.field, []):
        for g in groups:
            if g.largest > entry.value:
                out.append(
                    _over(
                        _ROLE_REPLICAS,
                        entry,
                        g.largest_path,
                        g.largest,
                        (g.role,),
                        role=g.role,
                        measure=g.largest,
                    )
                )
    total = sum(g.largest for g in groups)
    base: FieldPath = groups[0].path[:-1] if groups else ("spec",)
    for entry in eff.limits.get(_JOB_REPLICAS.field, []):
        if total > entry.value:
            out.append(_over(_JOB_REPLICAS, entry, base, total, (), measure=total))


def _class_weigher(eff: EffectivePolicy) -> Callable[[str], Amount | None]:
    """The weight of a DeviceClass under the policy's list (None: not GPUs), remembered in the policy."""
    weights = eff.class_weights
    classes = eff.gpu_device_classes

    def weight(device_class: str) -> Amount | None:
        if device_class not in weights:
            weights[device_class] = gpu_weight(device_class, classes)
        return weights[device_class]  # type: ignore[no-any-return]

    return weight


def extended_weights(
    eff: EffectivePolicy, devices: DeviceView | None, memo: list[Any] | None = None
) -> dict[str, Amount]:
    """The weight of each resource a DeviceClass names as its ``extendedResourceName`` that the policy's
    resource list does not count itself: devices of that class (KEP-5004), weighted as the class.
    Empty without a view or such a class (nearly always). ``memo``: a plan's, keeping the answer for
    as long as the view's map is the same object of the same size."""
    if devices is None:
        return _NO_EXTENDED
    source = devices.extended_resource_classes()
    if not source:
        return _NO_EXTENDED
    if memo is not None and memo and memo[0] is source and memo[1] == len(source):
        return memo[2]  # type: ignore[no-any-return]
    class_weight = _class_weigher(eff)
    counted = eff.gpu_counted
    found: dict[str, Amount] = {}
    for name, device_class in source.items():
        if type(name) is str and type(device_class) is str and gpu_weight(name, counted) is None:
            weight = class_weight(device_class)
            if weight is not None:
                found[name] = weight
    if memo is not None:
        memo[:] = [source, len(source), found]
    return found


_NO_EXTENDED: dict[str, Any] = {}


class _Claims:
    """What the claims of a job's pods ask for (see :func:`_count_claims`)."""

    __slots__ = ("shared", "unbounded", "unknown")

    def __init__(self) -> None:
        # A ResourceClaim's weighted GPUs by name: one claim is shared by every pod that names it,
        # so the job counts it once.
        self.shared: dict[str, Amount] = {}
        # (path, what, the DeviceClass) of each request no number bounds; (path, what) of each object
        # the view does not show.
        self.unbounded: list[tuple[FieldPath, str, str]] = []
        self.unknown: list[tuple[FieldPath, str]] = []


def _count_claims(
    g: ReplicaGroup,
    namespace: str,
    devices: DeviceView | None,
    class_weight: Callable[[str], Amount | None],
    claims: _Claims,
) -> tuple[Amount, Amount]:
    """(the weighted GPUs of one pod's claim templates, of the ResourceClaims it shares) of group ``g``;
    what cannot be counted goes into ``claims``."""
    spec = get_path(g.template, ("spec",))
    items = spec.get("resourceClaims") if isinstance(spec, dict) else None
    own: Amount = 0
    shared: Amount = 0
    for i, item in enumerate(items if isinstance(items, list) else []):
        if not isinstance(item, dict):
            continue
        template_name, claim_name = item.get("resourceClaimTemplateName"), item.get("resourceClaimName")
        if isinstance(template_name, str) and template_name:
            kind, name, field = "ResourceClaimTemplate", template_name, "resourceClaimTemplateName"
            obj = devices.claim_template(namespace, name) if devices is not None else None
            claim_spec = get_path(obj, ("spec", "spec")) if isinstance(obj, Mapping) else None
        elif isinstance(claim_name, str) and claim_name:
            kind, name, field = "ResourceClaim", claim_name, "resourceClaimName"
            obj = devices.claim(namespace, name) if devices is not None else None
            claim_spec = get_path(obj, ("spec",)) if isinstance(obj, Mapping) else None
        else:
            continue  # names neither: the apiserver refuses such a pod
        path: FieldPath = (*g.template_path, "spec", "resourceClaims", i, field)
        what = f"{kind} {namespace}/{name}"
        if obj is None:
            claims.unknown.append((path, what))
            continue
        count = claim_devices(claim_spec, class_weight)
        for device_class in dict.fromkeys(count.unbounded):
            claims.unbounded.append((path, what, device_class))
        if kind == "ResourceClaim":
            shared += count.gpus
            claims.shared[name] = count.gpus
        else:
            own += count.gpus
    return own, shared


def _gpu_checks(
    eff: EffectivePolicy,
    groups: list[ReplicaGroup],
    by_role: bool,
    out: list[PolicyFinding],
    devices: DeviceView | None = None,
) -> None:
    per_pod = eff.limits.get(_POD_GPUS.field, [])
    per_job = eff.limits.get(_JOB_GPUS.field, [])
    if not per_pod and not per_job:
        return
    total: Amount = 0
    parts: list[tuple[str, str]] = []
    uncounted: list[str] = []
    claims = _Claims()
    class_weight = _class_weigher(eff)
    extended = extended_weights(eff, devices)
    counted = eff.gpu_counted
    for g in groups:
        count = pod_gpus(g.template, counted, render_path(g.template_path), eff.gpu_weights, extended)
        uncounted.extend(count.uncounted)
        pod = count.gpus
        shared: Amount = 0
        if (
            isinstance(g.template, dict)
            and isinstance(g.template.get("spec"), dict)
            and g.template["spec"].get("resourceClaims")
        ):
            own, shared = _count_claims(g, eff.namespace, devices, class_weight, claims)
            pod += own
        if pod:
            total += pod * g.largest
            parts.append((g.role, f"{g.role} {g.largest} × {format_gpus(pod)}"))
        for entry in per_pod:
            if pod + shared > entry.value:
                out.append(
                    _over(
                        _POD_GPUS,
                        entry,
                        (*g.template_path, "spec"),
                        pod + shared,
                        (g.role,),
                        shown=format_gpus(pod + shared),  # a quantity: quoted, as the apiserver shows one
                        role=g.role,
                        measure=format_gpus(pod + shared),
                    )
                )
    shared_parts = []
    for name, gpus in sorted(claims.shared.items()):
        if gpus:
            total += gpus
            shared_parts.append(f"ResourceClaim {name} {format_gpus(gpus)}")
    for entry in per_job:
        if total > entry.value:
            out.append(
                _over(
                    _JOB_GPUS,
                    entry,
                    "spec",
                    total,
                    (),
                    shown=format_gpus(total),
                    measure=format_gpus(total),
                    # A map's roles by name: the order the apiserver's JSON gives them, and one the
                    # apiserver's CEL can write (it iterates a map in no fixed order).
                    breakdown=", ".join([*(part for _, part in (sorted(parts) if by_role else parts)), *shared_parts]),
                )
            )
    if claims.unbounded or claims.unknown:
        _claim_findings(eff, claims, [(_POD_GPUS, e) for e in per_pod] + [(_JOB_GPUS, e) for e in per_job], out)
    if uncounted:
        entry = (per_job or per_pod)[0]
        for problem in dict.fromkeys(uncounted):
            path, _, detail = problem.partition(": ")
            out.append(
                _finding(
                    entry,
                    path,
                    FORBIDDEN,
                    f"{detail}; the GPU limits of this policy do not include them",
                    "policy/gpu-uncounted",
                    identity=(path,),
                    action=_weaker(entry.action),
                )
            )


def _claim_findings(
    eff: EffectivePolicy, claims: _Claims, caps: list[tuple[Constraint, Sourced]], out: list[PolicyFinding]
) -> None:
    """A finding per applying GPU cap for each claim whose GPUs cannot be bounded or read."""
    unbounded, unknown = _CLAIM_UNBOUNDED.outcomes["unbounded"], _CLAIM_UNKNOWN.outcomes["unknown"]
    for decl, entry in caps:
        for path, what, device_class in claims.unbounded:
            detail = unbounded.detail(claim=what, device_class=device_class, limit_field=decl.param, limit=entry.value)
            out.append(
                _finding(
                    entry, path, unbounded.type, detail, _CLAIM_UNBOUNDED.rule, None, (decl.param, path, device_class)
                )
            )
        for path, what in claims.unknown:
            detail = unknown.detail(claim=what, limit_field=decl.param, limit=entry.value, namespace=eff.namespace)
            out.append(_finding(entry, path, unknown.type, detail, _CLAIM_UNKNOWN.rule, None, (decl.param, path)))


def _lifetime_checks(eff: EffectivePolicy, kmap: KindMap, job: dict[str, Any], out: list[PolicyFinding]) -> None:
    for require, cap in _FIELD_RULES:
        field = cap.subject
        required = eff.required_fields.get(field, [])
        maxima = eff.limits.get(cap.field, [])
        if not required and not maxima:
            continue
        places = kmap.locator(field) and _locations(kmap, field, job)
        if not places:
            for entry in required:
                out.append(_not_applicable(entry, kmap, require.param, field))
            for entry in maxima:
                out.append(_not_applicable(entry, kmap, cap.param, field))
            continue
        path, value = places[0]
        number = value if isinstance(value, int) and not isinstance(value, bool) else None
        missing = require.outcomes["missing"]
        for entry in required:
            if number is None:
                out.append(_finding(entry, path, missing.type, missing.detail(), require.rule, identity=()))
        for entry in maxima:
            if number is not None and number > entry.value:
                out.append(_over(cap, entry, path, number, ()))


def _locations(kmap: KindMap, field: str, job: dict[str, Any]) -> list[tuple[FieldPath, Any]] | None:
    from jobgate.policy.fieldmap import field_locations

    return field_locations(kmap, field, job)


def _quoted(values: Iterable[Any]) -> str:
    return ", ".join(map(_show, values))


def _allow_checks(eff: EffectivePolicy, kmap: KindMap, job: dict[str, Any], out: list[PolicyFinding]) -> None:
    for decl in _ALLOW_LISTS:
        entries = eff.allow.get(decl.field, [])
        if not entries:
            continue
        field = decl.subject
        places = _locations(kmap, field, job)
        if places is None:
            for entry in entries:
                out.append(_not_applicable(entry, kmap, decl.param, field))
            continue
        template_level = kmap.locator(field) == "template"
        missing, outside = decl.outcomes["missing"], decl.outcomes["outside"]
        for path, current in places:
            value = current
            if value is None and template_level and field == "schedulerName":
                value = DEFAULT_SCHEDULER  # what the pods will run with
            for entry in entries:
                if value is None:
                    detail = missing.detail(allowed=", ".join(entry.value))
                    out.append(_finding(entry, path, missing.type, detail, decl.rule, identity=(path,)))
                elif value not in entry.value:
                    detail = outside.detail(supported=_quoted(entry.value))
                    out.append(_finding(entry, path, outside.type, detail, decl.rule, value, (path,), value))


def _runtime_checks(eff: EffectivePolicy, job: dict[str, Any], out: list[PolicyFinding]) -> None:
    """require.runtimes: a TrainJob's runtime is one its kind's lists allow."""
    ref = get_path(job, ("spec", "runtimeRef"))
    if not isinstance(ref, dict):
        return  # no runtime named: the TrainJob's own validation refuses it
    named_kind = ref.get("kind")
    kind: str = named_kind if isinstance(named_kind, str) else "ClusterTrainingRuntime"
    entries = eff.allow.get(_RUNTIME_LISTS.get(kind, ""), [])
    name = ref.get("name")
    path = ("spec", "runtimeRef", "name")
    outside = _RUNTIMES.outcomes["outside"]
    for entry in entries:
        if name not in entry.value:
            detail = outside.detail(supported=_quoted(entry.value))
            out.append(_finding(entry, path, outside.type, detail, _RUNTIMES.rule, name, (path, kind), name))


def _label_checks(eff: EffectivePolicy, job: dict[str, Any], out: list[PolicyFinding]) -> None:
    labels = get_path(job, ("metadata", "labels"))
    labels = labels if isinstance(labels, dict) else {}
    missing, outside = _LABELS.outcomes["missing"], _LABELS.outcomes["outside"]
    for key, entries in eff.required_labels.items():
        path = ("metadata", "labels", Key(key))
        for entry in entries:
            if key not in labels:
                out.append(_finding(entry, path, missing.type, missing.detail(), _LABELS.rule, None, (key,)))
            elif entry.value is not None and labels[key] not in entry.value:
                detail = outside.detail(supported=_quoted(entry.value))
                out.append(_finding(entry, path, outside.type, detail, _LABELS.rule, labels[key], (key,), labels[key]))


_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


def _containers(g: ReplicaGroup) -> Iterable[tuple[FieldPath, dict[str, Any]]]:
    spec = get_path(g.template, ("spec",))
    if not isinstance(spec, dict):
        return
    for list_name in _CONTAINER_LISTS:
        items = spec.get(list_name)
        for i, container in enumerate(items if isinstance(items, list) else []):
            if isinstance(container, dict):
                yield (*g.template_path, "spec", list_name, i), container


def _image_volumes(volumes: Any, base: FieldPath) -> Iterable[tuple[FieldPath, Any]]:
    """(path, reference) of each image volume (``volumes[].image.reference``, GA in 1.36) in ``volumes``."""
    for i, volume in enumerate(volumes if isinstance(volumes, list) else []):
        source = volume.get("image") if isinstance(volume, dict) else None
        if isinstance(source, dict):
            yield (*base, "volumes", i, "image", "reference"), source.get("reference")


def _images(job: dict[str, Any], groups: list[ReplicaGroup]) -> Iterable[tuple[FieldPath, Any]]:
    """(path, image) of every container and every image volume of the job's pods."""
    for g in groups:
        for path, container in _containers(g):
            yield (*path, "image"), container.get("image")
        spec = get_path(g.template, ("spec",))
        if isinstance(spec, dict) and spec.get("volumes"):
            yield from _image_volumes(spec["volumes"], (*g.template_path, "spec"))
    # DIJob adds spec.volumes (core Volumes) to every pod of the job.
    volumes = get_path(job, ("spec", "volumes"))
    if volumes:
        yield from _image_volumes(volumes, ("spec",))


def _image_checks(
    eff: EffectivePolicy, job: dict[str, Any], groups: list[ReplicaGroup], out: list[PolicyFinding]
) -> None:
    entries = eff.allow.get(_IMAGES.field, [])
    if not entries:
        return
    outside = _IMAGES.outcomes["outside"]
    for path, image in _images(job, groups):
        if not isinstance(image, str):
            continue
        name = normalise_image(image)
        for entry in entries:
            if name_allowed(name, entry.value):
                continue
            origin = f"it comes from {name.rsplit('/', 1)[0]}/" if name else "its registry cannot be determined"
            detail = outside.detail(origin=origin, allowed=", ".join(entry.value))
            out.append(_finding(entry, path, outside.type, detail, _IMAGES.rule, image, (image,), None))


def _forbid_checks(
    eff: EffectivePolicy, job: dict[str, Any], groups: list[ReplicaGroup], out: list[PolicyFinding]
) -> None:
    if not eff.forbid:
        return
    for item, entries in eff.forbid.items():
        decl = _FORBID[item]
        hits: list[tuple[FieldPath, tuple[Any, ...]]] = []
        for g in groups:
            spec = get_path(g.template, ("spec",))
            if not isinstance(spec, dict):
                continue
            base = (*g.template_path, "spec")
            if decl.form == FORBID_POD_FLAG and spec.get(item) is True:
                hits.append(((*base, item), (g.role,)))
            elif decl.form == FORBID_VOLUME:
                volumes = spec.get("volumes")
                for i, volume in enumerate(volumes if isinstance(volumes, list) else []):
                    if isinstance(volume, dict) and volume.get(item) is not None:
                        hits.append(((*base, "volumes", i, item), (g.role, volume.get("name"))))
            elif decl.form == FORBID_CONTAINER_FLAG:
                flag = CONTAINER_FLAG_PATHS[item]
                for path, container in _containers(g):
                    if get_path(container, flag) is True:
                        hits.append(((*path, *flag), (g.role, container.get("name"))))
        if decl.form == FORBID_VOLUME:
            # DIJob adds spec.volumes (core Volumes) to every pod of the job.
            volumes = get_path(job, ("spec", "volumes"))
            for i, volume in enumerate(volumes if isinstance(volumes, list) else []):
                if isinstance(volume, dict) and volume.get(item) is not None:
                    hits.append((("spec", "volumes", i, item), ("", volume.get("name"))))
        forbidden = decl.outcomes["forbidden"]
        for path, identity in hits:
            for entry in entries:
                out.append(_finding(entry, path, forbidden.type, forbidden.detail(), decl.rule, None, identity))


def _conflict_findings(eff: EffectivePolicy, out: list[PolicyFinding]) -> None:
    for conflict in eff.conflicts:
        if conflict.action is None:
            continue  # a default conflict: no default is applied, reported on the policies' status
        names = ", ".join(str(p) for p in conflict.policies)
        out.append(
            PolicyFinding(
                "spec",
                FORBIDDEN,
                f"the policies {names} conflict: {conflict.message}",
                conflict.action,
                names,
                "policy/conflict",
                identity=("policy/conflict", conflict.field, conflict.policies),
            )
        )


def _all_findings(job: dict[str, Any], eff: EffectivePolicy, devices: DeviceView | None = None) -> list[PolicyFinding]:
    kmap = kind_map(job)
    if kmap is None:
        return []
    groups = kmap.groups(job)
    out: list[PolicyFinding] = []
    _conflict_findings(eff, out)
    _replica_checks(eff, groups, out)
    _gpu_checks(eff, groups, kmap.replica_layout == "map", out, devices)
    _lifetime_checks(eff, kmap, job, out)
    _allow_checks(eff, kmap, job, out)
    if kmap.kind == "TrainJob":
        _runtime_checks(eff, job, out)
    _label_checks(eff, job, out)
    _image_checks(eff, job, groups, out)
    _forbid_checks(eff, job, groups, out)
    return out
