"""Judging a job against its effective policy, and the defaults a policy writes into it.

:func:`policy_findings` gives every violation of a job, each with the field path in the
apiserver's style, a Kubernetes field-error type, a message naming the policy, the action of that
policy (Deny/Warn/Audit) and a rule id. It expects the job as it will be stored (family and policy
defaults applied), as the validating webhook sees it.

``existingViolations: Allow`` (the default). On UPDATE (``old_job`` given) a finding is dropped
when the old job already had the same violation of the same policy and the update does not make
it worse: each finding carries an ``identity`` (rule, policy and what is violated: the role, the
image, the label key, …) and a ``measure`` (a count compared with ``<=``, or a value compared with
``==``). So a controller adding a finalizer to an old 64-GPU job passes, scaling it to 72 GPUs does
not, swapping its image for another one from a refused registry does not (a different image is a
new violation). ``Deny`` keeps every finding. Conflicts are never dropped.

A requirement or limit on a field the kind does not have (a TTL on MxJob, GenericJob, DIJob; an
active deadline on a Volcano Job; a queue on MxJob or DIJob) gives a Warn finding with rule
``policy/not-applicable`` — never a denial the user cannot fix, never a silent pass.

:func:`policy_defaults` gives the (path, value) pairs to set on CREATE, only where the job leaves
the field unset, written where its family keeps it (:mod:`.fieldmap`). Intermediate objects may be
missing: :func:`apply_defaults` (or the caller's patch builder) creates them. Call it on the job as
received, *before* the family's built-in defaults, so that a platform default beats a built-in one
(Volcano's webhook would otherwise set ``schedulerName: volcano`` first and the policy's scheduler
default could never apply); the family defaults then fill what is left.

The Volcano trap: jobgate's Volcano Job CRD defaults ``spec.queue`` to ``default`` in its schema, and
beside Volcano's own CRD (which has no such default) Volcano's mutating webhook sets it, so a job may
arrive at admission with ``queue: default`` whether or not its author wrote it. When a policy
gives a queue default, a Volcano job whose queue is exactly ``default`` is treated as unset and gets
the policy's queue. The cost, stated: an author who explicitly writes ``queue: default`` in such a
namespace is moved to the policy's queue too (indistinguishable at admission); to stay in ``default``
the policy must not default the queue, or must list ``default`` as its default. Only Volcano, only
the queue, only the exact value ``default``.
"""

from __future__ import annotations

from collections.abc import Mapping

from jobgate.engine.fielderrors import render_path
from jobgate.engine.jsonpatch import escape_pointer_token
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
    Constraint,
    of_form,
)
from jobgate.policy.fieldmap import (
    KUEUE_LABEL,
    TEMPLATE,
    VOLCANO_SCHEMA_DEFAULT_QUEUE,
    FieldPath,
    Key,
    KindMap,
    ReplicaGroup,
    get_path,
    pod_sizes,
)
from jobgate.policy.gpu import (
    QuantityError,
    claim_devices,
    format_gpus,
    gpu_weight,
    is_fraction,
    parse_quantity,
    pod_gpus,
)
from jobgate.policy.images import name_allowed, normalise_image
from jobgate.policy.kinds import kind_map
from jobgate.policy.memo import Resolution
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
    _label_checks(eff, job, out)
    _image_checks(eff, job, groups, out)
    _forbid_checks(eff, job, groups, out)
    return out


# --- the clean path ----------------------------------------------------------------------------
#
# Nearly every job a cluster admits breaks no policy, and the checks above spend most of their time
# building what only a finding needs (paths, messages, identities) and walking the pod templates
# once per check. A plan, derived once from an effective policy for one kind, answers the one
# question the common case asks: can this job have any finding at all? It holds only the
# constraints the policy has, each reduced to its strictest bound (any entry exceeded is a finding,
# whatever its action), and walks the templates once. "Clean" means the checks would find nothing;
# anything else (a bound exceeded, a shape it does not handle, a value it cannot compare) sends the
# job to the checks above, which give the findings. So the plan never decides a finding, a message
# or a path: it can only skip work whose result is known to be empty.

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
        # read without the locators by _defaults, write_fixed and specialised_writer.
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
        # ``clean`` written out for this plan (pure Python only: see specialised_clean), once the
        # plan has served SPECIALISE_AFTER calls of policy_findings and policy_defaults.
        self.fast: Any = None
        self.fast_write: Any = None  # the defaults written into a copy of the job (specialised_writer)
        self.uses = 0

    def write_fixed(self, job: dict[str, Any], ops: list[dict[str, Any]] | None) -> dict[str, Any]:
        """The compiled build's :func:`specialised_writer`: ``job`` with the fixed defaults written
        into copies, each container on the way copied once or created, the operations recorded in
        ``ops`` (unless None) as a ``PatchRecorder`` records them; ``job`` itself when none applies.
        Only for a plan with ``fixed_writes``."""
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


# --- the clean path as source -------------------------------------------------------------------
#
# Interpreted, :meth:`_Plan.clean` spends most of its time on what is the same for every job of a
# plan: which constraints exist, where each field is, the calls between its parts. So the pure
# Python engine writes each plan out once as one function of the job (:func:`specialised_clean`),
# with the plan's bounds, paths and sets as constants and every part inline. It answers as
# ``clean`` does and is held to it and to the checks by tests/unit/test_policy_plan.py; in any
# shape it was not written for (a subclass of dict or list, a Mapping that is not a dict) it says
# "not clean" and leaves the answer to the checks. The compiled engine keeps the compiled method.

_SPECIALISE = __file__.endswith(".py")
# Calls of policy_findings and policy_defaults (a review makes one of each, /mutate only the
# second) a plan serves with the general code before it is written out. Writing and compiling the
# two functions costs what checking about nine jobs does (20 M instructions, the bench's TFJob and
# policies), and they save about 40 k of a job's 2.4 M after: a check of a few files (a pre-commit
# hook, a CI step) never pays for it, a long run or the webhook pays it once.
SPECIALISE_AFTER = 64


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


class _Source:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.constants: dict[str, Any] = {}

    def add(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def constant(self, value: Any) -> str:
        name = f"_c{len(self.constants)}"
        self.constants[name] = value
        return name

    def get(self, indent: int, var: str, source: str, path: FieldPath) -> None:
        """``var`` = the value at ``path`` under ``source`` (None when missing); not clean when a step
        is neither a dict nor missing (the checks decide what such a shape means)."""
        if source == "job" and path[:1] == ("spec",):
            source, path = "jspec", path[1:]  # the job's spec, read once (a dict: see specialised_clean)
        if not path:
            self.add(indent, f"{var} = {source}")
            return
        # ``source`` is a dict (the job, its spec): the first step needs no test.
        self.add(indent, f"{var} = {source}.get({path[0]!r})")
        for segment in path[1:]:
            self.add(indent, f"if type({var}) is dict:")
            self.add(indent + 1, f"{var} = {var}.get({segment!r})")
            self.add(indent, f"elif {var} is not None:")
            self.add(indent + 1, "return False")

    def job_field(self, indent: int, var: str, locator: Any, path: FieldPath | None) -> None:
        """``var`` = a job-level field: at ``path``, the plan's fixed path for it, else where ``locator`` says."""
        if path is None:
            self.add(indent, f"{var} = _get_path(job, {self.constant(locator)}(job))")
        else:
            self.get(indent, var, "job", path)

    def container(self, indent: int, plan: _Plan) -> None:
        """The checks of one container ``c`` (a dict)."""
        if plan.privileged:
            self.add(indent, 'sc = c.get("securityContext")')
            self.add(indent, 'if isinstance(sc, dict) and sc.get("privileged") is True:')
            self.add(indent + 1, "return False")
        if plan.registries:
            self.add(indent, 'im = c.get("image")')
            self.add(indent, "if type(im) is str:")
            self.add(indent + 1, "known = _images.get(im)")
            self.add(indent + 1, "if known is None:")
            self.add(indent + 2, "known = _image_allowed(im)")
            self.add(indent + 1, "if not known:")
            self.add(indent + 2, "return False")
            self.add(indent, "elif isinstance(im, str):")
            self.add(indent + 1, "return False")

    def volumes(self, indent: int, var: str) -> None:
        """The image volumes of the list ``var`` (a list): as :meth:`_Plan._volumes_clean`."""
        self.add(indent, f"for volume in {var}:")
        self.add(indent + 1, "if type(volume) is not dict:")
        self.add(indent + 2, "if isinstance(volume, dict):")
        self.add(indent + 3, "return False")
        self.add(indent + 2, "continue")
        self.add(indent + 1, 'source = volume.get("image")')
        self.add(indent + 1, "if source is None:")
        self.add(indent + 2, "continue")
        self.add(indent + 1, "if type(source) is not dict:")
        self.add(indent + 2, "if isinstance(source, dict):")
        self.add(indent + 3, "return False")
        self.add(indent + 2, "continue")
        self.add(indent + 1, 'im = source.get("reference")')
        self.add(indent + 1, "if type(im) is str:")
        self.add(indent + 2, "known = _images.get(im)")
        self.add(indent + 2, "if known is None:")
        self.add(indent + 3, "known = _image_allowed(im)")
        self.add(indent + 2, "if not known:")
        self.add(indent + 3, "return False")
        self.add(indent + 1, "elif isinstance(im, str):")
        self.add(indent + 2, "return False")

    def containers(self, indent: int, plan: _Plan, list_name: str) -> None:
        self.add(indent, f"items = spec.get({list_name!r})")
        self.add(indent, "if type(items) is list:")
        self.add(indent + 1, "for c in items:")
        self.add(indent + 2, "if type(c) is dict:")
        self.container(indent + 3, plan)
        self.add(indent + 2, "elif isinstance(c, dict):")
        self.add(indent + 3, "return False")
        self.add(indent, "elif isinstance(items, list):")
        self.add(indent + 1, "return False")

    def quantities(self, indent: int, source: str, skip: str | None) -> None:
        """Add the weighted GPUs of ``source`` (requests or limits) to ``pod``."""
        # Only the names not known to be other resources (cpu, memory, ...) are looked at; most
        # containers ask for none other, which one test in C settles.
        self.add(indent, f"if not _not_gpus.issuperset({source}):")
        indent += 1
        self.add(indent, f"for name in {source}:")
        self.add(indent + 1, "if name in _not_gpus:")
        self.add(indent + 2, "continue")
        if skip:
            self.add(indent + 1, f"if {skip} and name in {skip}:")
            self.add(indent + 2, "continue")
        self.add(indent + 1, "w = _weights.get(name, _UNSET)")
        self.add(indent + 1, "if w is _UNSET:")
        self.add(indent + 2, "if type(name) is not str:")
        self.add(indent + 3, "return False")
        self.add(indent + 2, "w = _weights[name] = _gpu_weight(name, _resources)")
        self.add(indent + 1, "if w is None:")
        self.add(indent + 2, "if len(_not_gpus) >= _LIMIT:")
        self.add(indent + 3, "_not_gpus.clear()")
        self.add(indent + 2, "_not_gpus.add(name)")
        self.add(indent + 2, "continue")
        self.add(indent + 1, f"raw = {source}[name]")
        self.add(indent + 1, "if type(raw) is int:")
        self.add(indent + 2, "pod += raw * w")
        self.add(indent + 1, "else:")
        self.add(indent + 2, "try:")
        self.add(indent + 3, "pod += _parse_quantity(raw) * w")
        self.add(indent + 2, "except _QuantityError:")
        self.add(indent + 3, "return False")


def specialised_clean(plan: _Plan, kmap: KindMap) -> Any:
    """``plan.clean`` for this plan's jobs, as one function of the job (see above)."""
    if not plan.usable:
        return lambda job, ext: False
    src = _Source()
    src.constants.update(
        _get_path=get_path,
        _pod_sizes=pod_sizes,
        _kmap=kmap,
        _Mapping=Mapping,
        _UNSET=_UNSET,
        _images=plan.images,
        _image_allowed=plan.image_allowed,
        _weights=plan.gpu_weights,
        _resources=plan.gpu_resources,
        _gpu_weight=gpu_weight,
        _parse_quantity=parse_quantity,
        _QuantityError=QuantityError,
        _not_gpus=plan.not_gpus,
        _LIMIT=_IMAGE_MEMO_LIMIT,
    )
    src.add(0, "def clean(job, ext):")
    src.add(1, "if type(job) is not dict:")
    src.add(2, "return False")
    # A job without a spec object is left to the checks (the family's rules refuse it anyway).
    src.add(1, 'jspec = job.get("spec")')
    src.add(1, "if type(jspec) is not dict:")
    src.add(2, "return False")
    for locator, required, maximum, fixed in plan.lifetime:
        src.job_field(1, "v", locator, fixed)
        src.add(1, "if type(v) is int:")
        src.add(2, f"if v > {src.constant(maximum)}:" if maximum is not None else "pass")
        if maximum is not None:
            src.add(3, "return False")
        src.add(1, f"elif {required!r} or (isinstance(v, int) and type(v) is not bool):")
        src.add(2, "return False")
    for locator, allowed, fixed in plan.job_allow:
        src.job_field(1, "v", locator, fixed)
        src.add(1, f"if type(v) is not str or v not in {src.constant(frozenset(allowed))}:")
        src.add(2, "return False")
    if plan.labels:
        src.get(1, "labels", "job", ("metadata", "labels"))
        src.add(1, "if type(labels) is not dict:")
        src.add(2, "return False")
        for key, allowed_values in plan.labels:
            src.add(1, f"if {key!r} not in labels:")
            src.add(2, "return False")
            if allowed_values is not None:
                src.add(1, f"v = labels[{key!r}]")
                src.add(1, f"if type(v) is not str or v not in {src.constant(frozenset(allowed_values))}:")
                src.add(2, "return False")
    if plan.host_path or plan.registries:
        src.get(1, "volumes", "job", ("spec", "volumes"))
        src.add(1, "if type(volumes) is list:")
        if plan.host_path:
            src.add(2, "for volume in volumes:")
            src.add(3, 'if isinstance(volume, dict) and volume.get("hostPath") is not None:')
            src.add(4, "return False")
        if plan.registries:
            src.volumes(2, "volumes")
        src.add(1, "elif isinstance(volumes, list):")
        src.add(2, "return False")
    count = plan.count_gpus
    src.add(1, "replicas = 0")
    src.add(1, "gpus = 0")
    if kmap.replica_layout == "map":
        # fieldmap.pod_sizes inline for the kinds that keep their roles in a map.
        src.add(1, f"items = jspec.get({kmap.replica_field!r})")
        src.add(1, "if not isinstance(items, dict):")
        src.add(2, "items = {}")
        if kmap.elastic:
            src.add(1, 'high = jspec.get("elasticPolicy")')
            src.add(1, 'high = high.get("maxReplicas") if isinstance(high, dict) else None')
            src.add(1, "if type(high) is not int:")
            src.add(2, "if isinstance(high, int) and type(high) is not bool:")
            src.add(3, "return False")
            src.add(2, "high = None")
        src.add(1, "for role, item in items.items():")
        src.add(2, "if not isinstance(item, dict):")
        src.add(3, "continue")
        src.add(2, 'largest = item.get("replicas")')
        src.add(2, "if type(largest) is not int:")
        src.add(3, "if isinstance(largest, int) and type(largest) is not bool:")
        src.add(4, "return False")
        src.add(3, f"largest = 0 if role in {src.constant(frozenset(kmap.default_zero))} else 1")
        if kmap.elastic:
            src.add(2, 'if high is not None and role == "Worker" and high > largest:')
            src.add(3, "largest = high")
        src.add(2, 'template = item.get("template")')
        src.add(2, "if not isinstance(template, dict):")
        src.add(3, "template = None")
    else:
        src.add(1, "for largest, template in _pod_sizes(_kmap, job):")
    if plan.max_role is not None:
        src.add(2, f"if largest > {src.constant(plan.max_role)}:")
        src.add(3, "return False")
    src.add(2, "replicas += largest")
    src.add(2, "pod = 0")
    src.add(2, 'spec = template.get("spec") if template is not None else None')
    src.add(2, "if type(spec) is not dict:")
    src.add(3, "if spec is not None and isinstance(spec, _Mapping):")
    src.add(4, "return False")
    if any(unset is None or unset not in allowed for _, allowed, unset in plan.template_allow):
        src.add(3, "return False")  # an allow-list's field is unset and its unset meaning is not allowed
    src.add(2, "else:")
    for field, allowed, unset in plan.template_allow:
        src.add(3, f"v = spec.get({field!r})")
        if unset is not None:
            src.add(3, "if v is None:")
            src.add(4, f"v = {unset!r}")
        src.add(3, f"if type(v) is not str or v not in {src.constant(frozenset(allowed))}:")
        src.add(4, "return False")
    if plan.host_path or plan.registries:
        src.add(3, 'volumes = spec.get("volumes")')
        src.add(3, "if type(volumes) is list:")
        if plan.host_path:
            src.add(4, "for volume in volumes:")
            src.add(5, 'if isinstance(volume, dict) and volume.get("hostPath") is not None:')
            src.add(6, "return False")
        if plan.registries:
            src.volumes(4, "volumes")
        src.add(3, "elif isinstance(volumes, list):")
        src.add(4, "return False")
    if plan.rare_pod_fields:
        src.add(3, f"if not spec.keys().isdisjoint({src.constant(plan.rare_pod_fields)}):")
    for flag in plan.host_flags:
        src.add(4, f"if spec.get({flag!r}) is True:")
        src.add(5, "return False")
    if count:
        src.add(4, 'overhead = spec.get("overhead")')
        src.add(4, "if overhead is not None and isinstance(overhead, _Mapping):")
        src.add(5, "return False")
        src.add(4, 'if spec.get("resourceClaims"):')
        src.add(5, "return False")
        src.add(4, f"items = spec.get({_INITS!r})")
        src.add(4, "if isinstance(items, list) and len(items) > 0:")
        src.add(5, "return False")
    if plan.walk_containers:
        if not count:  # counting GPUs, any init container was sent to the checks above
            src.containers(4, plan, _INITS)
        src.containers(4, plan, _EPHEMERAL)
    src.add(3, 'containers = spec.get("containers")')
    src.add(3, "if type(containers) is not list:")
    src.add(4, "if isinstance(containers, list):")
    src.add(5, "return False")
    src.add(4, "containers = ()")
    src.add(3, "for c in containers:")
    src.add(4, "if type(c) is not dict:")
    src.add(5, "if isinstance(c, _Mapping):")
    src.add(6, "return False")
    src.add(5, "continue")
    if plan.walk_containers:
        src.container(4, plan)
    if count:
        src.add(4, 'res = c.get("resources")')
        src.add(4, "if res is None:")
        src.add(5, "continue")
        src.add(4, "if type(res) is not dict:")
        src.add(5, "if isinstance(res, _Mapping):")
        src.add(6, "return False")
        src.add(5, "continue")
        src.add(4, 'if res.get("claims"):')
        src.add(5, "return False")
        src.add(4, 'requests = res.get("requests")')
        src.add(4, 'limits = res.get("limits")')
        src.add(4, "if (requests is not None and type(requests) is not dict) or (")
        src.add(5, "limits is not None and type(limits) is not dict")
        src.add(4, "):")
        src.add(5, "return False")
        # A DeviceClass's extended resource (rare; ext is then non-empty): the checks count it.
        src.add(4, "if ext and (")
        src.add(5, "(requests and not ext.keys().isdisjoint(requests))")
        src.add(5, "or (limits and not ext.keys().isdisjoint(limits))")
        src.add(4, "):")
        src.add(5, "return False")
        src.add(4, "if requests:")
        src.quantities(5, "requests", None)
        src.add(4, "if limits:")
        src.quantities(5, "limits", "requests")
        if plan.max_pod_gpus is not None:
            src.add(2, f"if pod > {src.constant(plan.max_pod_gpus)}:")
            src.add(3, "return False")
        src.add(2, "if pod:")
        src.add(3, "gpus += pod * largest")
    if plan.max_replicas is not None:
        src.add(1, f"if replicas > {src.constant(plan.max_replicas)}:")
        src.add(2, "return False")
    if plan.max_job_gpus is not None:
        src.add(1, f"if gpus > {src.constant(plan.max_job_gpus)}:")
        src.add(2, "return False")
    src.add(1, "return True")
    namespace = dict(src.constants)
    exec(compile("\n".join(src.lines), f"<policy plan {kmap.group}/{kmap.kind}>", "exec"), namespace)
    clean = namespace["clean"]
    clean.source = "\n".join(src.lines)
    return clean


def specialised_writer(plan: _Plan) -> Any:
    """The defaults of a plan with fixed paths written into a copy of the job, as one function
    ``write(job, ops)``: the job with :func:`policy_defaults`' operations set, each container on
    the way copied once and a missing one created, and (``ops``, a JSON Patch list, unless None) the
    operations a ``PatchRecorder`` records for them, in the same order (see ``policy.review``);
    the job itself when no default applies. None when the plan's defaults are not all fixed."""
    if plan.fixed_defaults is None:
        return None
    src = _Source()
    # One variable per container on the way, None until copied (or created) in this call.
    containers: dict[FieldPath, str] = {(): "root"}

    def ensure(indent: int, path: FieldPath) -> str:
        """Emit, in the current block, the copy (or creation) of the container at ``path`` and of
        those above it, each unless an earlier block did; its variable."""
        if not path:
            return "root"
        parent = ensure(indent, path[:-1])
        if path not in containers:
            containers[path] = f"n{len(containers)}"
        name = containers[path]
        src.add(indent, f"if {name} is None:")
        src.add(indent + 1, f"{name} = {parent}.get({path[-1]!r})")
        src.add(indent + 1, f"if {name} is None:")
        src.add(indent + 2, f"{name} = {{}}")
        src.add(indent + 2, "if ops is not None:")
        src.add(
            indent + 3,
            f'ops.append({{"op": {_op(str(path[-1]), parent)}, "path": {_pointers(path)[-1]!r}, "value": {name}}})',
        )
        src.add(indent + 1, "else:")
        src.add(indent + 2, f"{name} = dict({name})")
        src.add(indent + 1, f"{parent}[{path[-1]!r}] = {name}")
        return name

    def write(indent: int, path: FieldPath, value: Any) -> None:
        src.add(indent, "if root is job:")
        src.add(indent + 1, "root = dict(job)")
        owner = ensure(indent, path[:-1])
        pointer = _pointers(path)[-1]
        constant = src.constant(value)
        src.add(indent, "if ops is not None:")
        src.add(
            indent + 1, f'ops.append({{"op": {_op(str(path[-1]), owner)}, "path": {pointer!r}, "value": {constant}}})'
        )
        src.add(indent, f"{owner}[{path[-1]!r}] = {constant}")

    # Each default is tested on the job as received, which is never changed: as policy_defaults
    # tests them all before any is written.
    for path, default in plan.fixed_defaults:
        src.add(1, f"if {_unset_condition(path)}:")
        write(2, path, default)
    if plan.default_labels:
        # _labels_to_default inline.
        src.add(1, 'labels = job.get("metadata")')
        src.add(1, "if labels is None:")
        src.add(2, "labels = {}")
        src.add(1, "elif isinstance(labels, dict):")
        src.add(2, 'labels = labels.get("labels")')
        src.add(2, "if labels is None:")
        src.add(3, "labels = {}")
        src.add(1, "if isinstance(labels, dict):")
        for key, value in plan.default_labels:
            src.add(2, f"if {key!r} not in labels:")
            write(3, ("metadata", "labels", key), value)
    src.lines = [
        "def write(job, ops):",
        "    root = job",
        *(f"    {name} = None" for path, name in containers.items() if path),
        *src.lines,
        "    return root",
    ]
    namespace = dict(src.constants)
    exec(compile("\n".join(src.lines), "<policy defaults written>", "exec"), namespace)
    write_defaults = namespace["write"]
    write_defaults.source = "\n".join(src.lines)
    return write_defaults


def _op(key: str, container: str) -> str:
    """The expression of a recorded operation's name: ``replace`` for a key present (as null), else ``add``."""
    return f'"replace" if {key!r} in {container} else "add"'


def written_defaults(plan: _Plan, job: dict[str, Any], ops: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    """``job`` with the plan's defaults written into copies, each operation recorded in ``ops`` (unless
    None) as a ``PatchRecorder`` records it: in pure Python by its :func:`specialised_writer` once
    written out, compiled by the plan's ``write_fixed``. None when neither applies (before the plan is
    written out, or for defaults that are not all at fixed paths): the caller then writes
    :func:`policy_defaults`' operations, which count towards writing it out."""
    fast = plan.fast_write
    if fast is not None:
        return fast(job, ops)  # type: ignore[no-any-return]
    if not _SPECIALISE and plan.fixed_writes is not None:
        return plan.write_fixed(job, ops)
    return None


def _unset_condition(path: FieldPath, var: str = "v", source: str = "job") -> str:
    """:func:`_unset_at` of ``source`` at ``path`` as one expression (``var`` its scratch variable)."""
    head, *rest = path
    if not rest:
        return f"{source}.get({head!r}) is None"
    inner = _unset_condition(tuple(rest), var, var)
    return f"(({var} := {source}.get({head!r})) is None or (isinstance({var}, dict) and {inner}))"


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


def _specialise(plan: _Plan, kmap: KindMap) -> Any:
    """Count a call served by ``plan``; write the plan out at the SPECIALISE_AFTER-th. ``plan.fast``."""
    plan.uses += 1
    if plan.uses >= SPECIALISE_AFTER:
        plan.fast = specialised_clean(plan, kmap)
        plan.fast_write = specialised_writer(plan)
    return plan.fast


def _not_worse(new: Any, old: Any) -> bool:
    numbers = (isinstance(new, int) or is_fraction(new)) and (isinstance(old, int) or is_fraction(old))
    if numbers and not isinstance(new, bool):
        return new <= old
    return new == old


def policy_findings(
    job: dict[str, Any],
    old_job: dict[str, Any] | None,
    family: str,
    effective: EffectivePolicy,
    kmap: KindMap | None = None,
    *,
    plan: _Plan | None = None,
    devices: DeviceView | None = None,
    context: Any = None,
) -> list[PolicyFinding]:
    """Every finding of ``effective`` on ``job``; on UPDATE (``old_job``), minus the existing violations
    the policies allow (see the module docstring). ``family`` must be the job's family (a mismatch
    finds nothing: the caller dispatched on group and kind). ``kmap``: ``kind_map(job)``, and
    ``plan``: the plan of ``effective`` for it, when the caller has them. ``devices``: the review's
    view of the DRA objects its pods' claims name (None: none, so a claim under a GPU limit is a finding).
    ``context``: the review's (its queue objects and namespace labels, for ``require.fitsQueue``, which
    is not judged without one: the controller's audit)."""
    if kmap is None:
        kmap = kind_map(job)
    if kmap is None or kmap.family != family:
        return []
    if plan is None:
        plan = _plan(effective, kmap)
    fast = plan.fast
    if fast is None and _SPECIALISE:
        fast = _specialise(plan, kmap)
    extended = extended_weights(effective, devices, plan.extended_memo) if devices is not None else _NO_EXTENDED
    fits = effective.required_fields.get("fitsQueue") if context is not None else None
    if fast(job, extended) if fast is not None else plan.clean(job, kmap, extended):
        if not fits:
            return []  # nothing to report, whatever the old job had
        found = []
    else:
        found = _all_findings(job, effective, devices)
    if fits:
        found += _queue_findings(job, kmap, fits, context)
    if old_job is None or not found:
        return found
    old: dict[tuple[Any, ...], list[PolicyFinding]] = {}
    old_found = _all_findings(old_job, effective, devices)
    if fits and kind_map(old_job) is kmap:
        old_found += _queue_findings(old_job, kmap, fits, context)
    for f in old_found:
        old.setdefault(f.identity, []).append(f)
    kept = []
    for f in found:
        if f.existing_violations == "Allow" and f.rule != "policy/conflict":
            previous = old.get(f.identity, [])
            if any(_not_worse(f.measure, o.measure) for o in previous):
                continue
        kept.append(f)
    return kept


def _queue_findings(job: dict[str, Any], kmap: KindMap, entries: list[Sourced], context: Any) -> list[PolicyFinding]:
    """``require.fitsQueue``'s findings (jobgate.policy.queuefit) for each policy requiring it: at its
    action, a not-modelled notice at most a warning."""
    from jobgate.policy.queuefit import NOT_MODELLED, queue_outcomes

    metadata = job.get("metadata")
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    if not isinstance(namespace, str) or not namespace:
        namespace = context.namespace or "default"
    outcomes = queue_outcomes(
        job,
        kmap,
        context.queue_objects,
        namespace,
        namespace_labels=context.namespace_labels,
        labels_known=context.namespace_labels_known,
    )
    found = []
    for entry in entries:
        for o in outcomes:
            notice = o.rule == NOT_MODELLED
            found.append(
                PolicyFinding(
                    render_path(o.path),
                    FORBIDDEN if notice else "Invalid value",
                    f"{o.message} ({entry.source})",
                    _weaker(entry.action) if notice else entry.action,
                    str(entry.source),
                    o.rule,
                    o.value,
                    (o.rule, entry.source, *o.identity),
                    None,
                    entry.existing_violations,
                    o.path,
                )
            )
    return found


# --- defaults ----------------------------------------------------------------------------------


def policy_defaults(
    job: dict[str, Any],
    family: str,
    effective: EffectivePolicy,
    kmap: KindMap | None = None,
    *,
    plan: _Plan | None = None,
) -> list[tuple[list[str | int], object]]:
    """(path segments, value) to set on CREATE, only where the job leaves the field unset (``kmap``:
    ``kind_map(job)``, and ``plan``: the plan of ``effective`` for it, when the caller has them)."""
    if kmap is None:
        kmap = kind_map(job)
    if kmap is None or kmap.family != family:
        return []
    if plan is None:
        plan = _plan(effective, kmap)
    if plan.fast is None and _SPECIALISE:
        _specialise(plan, kmap)  # a /mutate review calls this alone: it counts too
    return _defaults(job, kmap, plan)


def _defaults(job: dict[str, Any], kmap: KindMap, plan: _Plan) -> list[tuple[list[str | int], object]]:
    ops: list[tuple[list[str | int], object]] = []
    fixed = plan.fixed_defaults
    if fixed is not None:
        for at, default in fixed:
            if _unset_at(job, at):
                ops.append((list(at), default))
        _label_defaults(job, plan, ops)
        return ops
    # Only the fields given a default that the kind has (explain says which it lacks).
    for field, default, locator in plan.defaults:
        template_level = locator == TEMPLATE
        if template_level:
            places = _locations(kmap, field, job) or []
        else:
            path = locator(job)
            current = get_path(job, path)
            if current is None and not _unset_at(job, path):
                continue  # something that is no object on the way: left for validation to report
            places = [(path, current)]
        for path, current in places:
            value = current
            if field == "queue" and kmap.family == "volcano" and value == VOLCANO_SCHEMA_DEFAULT_QUEUE:
                value = None  # a schema's or Volcano webhook's default, not the author's choice (module docstring)
            if template_level and not isinstance(get_path(job, path[:-1]), dict):
                continue  # a template without a spec: the family's validation reports it
            if value is None:
                ops.append(([str(s) if isinstance(s, Key) else s for s in path], default))
    _label_defaults(job, plan, ops)
    return ops


def _unset_at(job: dict[str, Any], path: FieldPath) -> bool:
    """Whether a default may be written at ``path``: the field is missing or null, and so is each
    object on the way or it is an object. Something else in the way (a list, a string where the
    schema wants an object) is the author's, and wrong: the default leaves it for validation to report."""
    node: Any = job
    for segment in path:
        if node is None:
            return True
        if not isinstance(node, dict):
            return False
        node = node.get(segment)
    return node is None


def _labels_to_default(job: dict[str, Any]) -> dict[str, Any] | None:
    """The job's labels as label defaults read them (empty when it has none); None when its metadata
    or labels are no object: validation reports that, and no label is written into it."""
    metadata = job.get("metadata")
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        return None
    labels = metadata.get("labels")
    if labels is None:
        return {}
    return labels if isinstance(labels, dict) else None


def _label_defaults(job: dict[str, Any], plan: _Plan, ops: list[tuple[list[str | int], object]]) -> None:
    if plan.default_labels:
        labels = _labels_to_default(job)
        if labels is None:
            return
        for key, value in plan.default_labels:
            if key not in labels:
                ops.append((["metadata", "labels", key], value))


def apply_defaults(job: dict[str, Any], ops: Iterable[tuple[list[str | int], object]]) -> dict[str, Any]:
    """A copy of ``job`` with ``ops`` set, creating missing intermediate objects."""
    import copy

    out = copy.deepcopy(job)
    for path, value in ops:
        node: Any = out
        for segment in path[:-1]:
            if isinstance(segment, int):
                node = node[segment]
                continue
            if not isinstance(node.get(segment), dict):
                node[segment] = {}
            node = node[segment]
        node[path[-1]] = value
    return out


def findings_by_action(findings: Iterable[PolicyFinding]) -> Mapping[str, list[PolicyFinding]]:
    """Findings grouped Deny / Warn / Audit (the webhook denies, warns, annotates)."""
    grouped: dict[str, list[PolicyFinding]] = {"Deny": [], "Warn": [], "Audit": []}
    for f in findings:
        grouped[f.action].append(f)
    return grouped
