"""JobSet's check of existing PVCs (J18 in the research notes): for each volume claim template, a PVC
named ``<template>-<jobset>`` that already exists in the JobSet's namespace must have the template's
spec, and the policy's retention must be ``Retain`` (JobSet v0.12.0, ``validateVolumeClaimPolicies``).

The PVCs come from a :class:`ClaimView`: offline the ``--cluster-objects`` export and the documents
beside the JobSet (:class:`ClaimSnapshot`), in the webhook a read of the API by name. Without any
view the check cannot run: the JobSet is admitted as JobSet admits it when no such PVC exists (the
usual case: JobSet's controller creates it), with a warning that says how to give the PVCs.

JobSet compares the specs with Go's ``reflect.DeepEqual`` on its decoded structs; here both sides are
compared as those structs hold them: an empty list, map or non-pointer string is the field left out
(``omitempty``), while the pointer fields (``storageClassName``, ``volumeMode``, ...) keep "" apart
from absent. Quantities are compared by amount: the apiserver stores a PVC's in canonical form
("1024Mi" is stored "1Gi"), which Go's struct comparison would call a different spec.
"""

from __future__ import annotations

from jobgate.engine.fielderrors import ErrorType, FieldError, FieldPath, invalid
from jobgate.rules.quantity import parse_quantity

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any

    # The cluster's PersistentVolumeClaims: ``claim(namespace, name)`` gives the PVC, or None when there
    # is none such, and raises ClaimLookupError when the read fails for another reason. Not a Protocol
    # class: mypyc, which compiles this module, refuses a class nested in this block.
    ClaimView = Any


R_EXISTING_CLAIMS = "jobset/existing-claims"
SPEC_MISMATCH = "spec does not match existing PVC {name} in namespace {namespace}"
RETAIN_REQUIRED = "retentionPolicy must be retain when PVC exists"
# A JobSet's review without any view of PVCs (offline without them, the webhook without a cluster).
NO_VIEW_WARNING = (
    "existing PVCs <template>-<jobset> not checked: no PVCs given (--cluster-objects FILE|DIR: kubectl get pvc -o yaml)"
)

# PersistentVolumeClaimSpec's fields that are Go pointers: present-but-empty differs from absent.
_POINTER_FIELDS = frozenset(
    ("storageClassName", "volumeMode", "volumeAttributesClassName", "selector", "dataSource", "dataSourceRef")
)


# Fields of PersistentVolumeClaimSpec's types that are Go maps: an entry's empty value is a value.
_MAP_FIELDS = frozenset(("matchLabels", "requests", "limits"))


class ClaimLookupError(Exception):
    """A PVC's read failed for another reason than "not found" (the webhook's API read)."""


def is_claim(obj: Any) -> bool:
    return type(obj) is dict and obj.get("apiVersion") == "v1" and obj.get("kind") == "PersistentVolumeClaim"


class ClaimSnapshot:
    """PVCs given as objects (``--cluster-objects``, documents beside the JobSet), by namespace and name.
    One without a namespace is in ``default_namespace`` (kubectl's)."""

    __slots__ = ("_claims", "default_namespace")

    def __init__(self, objects: Iterable[Mapping[str, Any]] = (), default_namespace: str = "default") -> None:
        self.default_namespace = default_namespace
        self._claims: dict[tuple[str, str], Mapping[str, Any]] = {}
        for obj in objects:
            self.add(obj)

    def add(self, obj: Mapping[str, Any]) -> None:
        metadata = obj.get("metadata")
        metadata = metadata if type(metadata) is dict else {}
        name = metadata.get("name")
        if type(name) is str and name:
            namespace = metadata.get("namespace")
            namespace = namespace if type(namespace) is str and namespace else self.default_namespace
            self._claims[(namespace, name)] = obj

    def claim(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self._claims.get((namespace, name))

    def __len__(self) -> int:
        return len(self._claims)


class LayeredClaims:
    """The PVCs of a file first, then the view the command was given (if any)."""

    __slots__ = ("beside", "given")

    def __init__(self, beside: ClaimSnapshot, given: ClaimView | None) -> None:
        self.beside = beside
        self.given = given

    def claim(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        found = self.beside.claim(namespace, name)
        if found is None and self.given is not None:
            found = self.given.claim(namespace, name)
        return found


def _go_struct(value: Any, pointer_fields: frozenset[str] = frozenset()) -> Any:
    """``value`` as a decoded Go struct holds it: empty lists, maps and strings dropped (``omitempty``)
    but under a pointer field; the entries of Go maps (labels, resource lists) kept as they are."""
    if type(value) is dict:
        out = {}
        for key, item in value.items():
            kept = item if key in _MAP_FIELDS and type(item) is dict else _go_struct(item)
            if (key in pointer_fields and item is not None) or kept not in (None, "", [], {}):
                out[key] = kept
        return out
    if type(value) is list:
        return [_go_struct(item) for item in value]
    return value


def _amounts(resources: Any) -> Any:
    """A ``resources`` block's limits and requests with each quantity as its amount (nano-units)."""
    if type(resources) is not dict:
        return resources
    out = {}
    for key, amounts in resources.items():
        if type(amounts) is dict:
            out[key] = {name: _amount(quantity) for name, quantity in amounts.items()}
        else:
            out[key] = amounts
    return out


def _amount(quantity: Any) -> Any:
    nanos = parse_quantity(quantity)
    return quantity if nanos is None else ("quantity", nanos)


def comparable_spec(spec: Any) -> Any:
    """A PVC spec (a template's or a stored PVC's) in the form in which two equal ones are equal."""
    if type(spec) is not dict:
        return spec
    struct = _go_struct(spec, _POINTER_FIELDS)
    if "resources" in struct:
        struct["resources"] = _go_struct(_amounts(struct["resources"]))
        if not struct["resources"]:
            del struct["resources"]
    return struct


def existing_claim_errors(
    view: ClaimView,
    namespace: str,
    jobset: str,
    *,
    policy_index: int,
    policy: Mapping[str, Any],
    template_index: int,
    template: Mapping[str, Any],
) -> list[FieldError]:
    """JobSet's check of one template against the PVC ``<template>-<jobset>``, if it exists."""
    metadata = template.get("metadata")
    claim = metadata.get("name") if type(metadata) is dict else None
    if type(claim) is not str or not claim or not jobset:
        return []
    pvc_name = f"{claim}-{jobset}"
    policy_path: FieldPath = ("spec", "volumeClaimPolicies", policy_index)
    template_path: FieldPath = (*policy_path, "template", template_index)
    try:
        existing = view.claim(namespace, pvc_name)
    except ClaimLookupError as exc:
        return [
            FieldError(
                ErrorType.INTERNAL,
                template_path,
                detail=f"failed to check for existing PVC {pvc_name}: {exc}",
                rule=R_EXISTING_CLAIMS,
            )
        ]
    if existing is None:
        return []
    errors = []
    spec = template.get("spec")
    if comparable_spec(existing.get("spec") or {}) != comparable_spec(spec if spec is not None else {}):
        errors.append(
            invalid(
                (*template_path, "spec"),
                spec if spec is not None else {},
                SPEC_MISMATCH.format(name=pvc_name, namespace=namespace),
                R_EXISTING_CLAIMS,
            )
        )
    retention = policy.get("retentionPolicy")
    if type(retention) is dict:
        when_deleted = retention.get("whenDeleted", "Delete")  # the CRD's default
        if when_deleted != "Retain":
            path = (*policy_path, "retentionPolicy", "whenDeleted")
            errors.append(invalid(path, when_deleted, RETAIN_REQUIRED, R_EXISTING_CLAIMS))
    return errors


def claim_lookup(
    view: ClaimView | None, namespace: str, jobset: str
) -> Callable[[int, Mapping[str, Any], int, Mapping[str, Any]], list[FieldError]] | None:
    """The per-template check :func:`validate_create` runs in JobSet's order (None: no view of PVCs)."""
    if view is None:
        return None
    return lambda p, policy, t, template: existing_claim_errors(
        view, namespace, jobset, policy_index=p, policy=policy, template_index=t, template=template
    )


def check_for(obj: Mapping[str, Any], spec: Mapping[str, Any], context: Any, warnings: list[str]) -> Any:
    """The existing-PVC check for a JobSet's review (None when it has no claim templates or no view of
    PVCs, the latter with a warning). A name still to be generated (``generateName``) names no PVC yet."""
    policies = spec.get("volumeClaimPolicies")
    if type(policies) is not list or not any(type(p) is dict and p.get("templates") for p in policies):
        return None
    view = getattr(context, "claims", None)
    if view is None:
        warnings.append(NO_VIEW_WARNING)
        return None
    metadata = obj.get("metadata")
    metadata = metadata if type(metadata) is dict else {}
    name, namespace = metadata.get("name"), metadata.get("namespace")
    if type(name) is not str or not name:
        return None
    if type(namespace) is not str or not namespace:
        namespace = getattr(context, "namespace", None) or "default"
    return claim_lookup(view, namespace, name)
