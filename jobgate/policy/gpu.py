"""GPU arithmetic: a pod's request as Kubernetes computes it, weighted by the resources counted as GPUs.

A pod's request follows k8s.io/component-helpers ``resource.PodRequests`` (with sidecars):

- app containers are summed;
- init containers run in order; a sidecar (an init container with ``restartPolicy: Always``) keeps
  running, so it is added to the sum *and* to every later init container's peak; a plain init
  container's peak is its own request plus the sidecars started before it;
- the pod's request is, per resource, the larger of the sum and the highest init peak, plus the
  RuntimeClass ``overhead``.

Per container and resource, ``requests`` counts, else ``limits``: pod templates inside CRDs are not
defaulted by the apiserver (it copies limits into requests only when it creates the Pod).

Which resources are GPUs, and how much one unit weighs, comes from the built-in list and the
policy's ``gpuResources`` added to it (a name may end in ``*``): a name given again sets its weight,
weight 0 excludes it; an exact name beats a pattern, a longer pattern beats a shorter one.

DRA (``resource.k8s.io``). Devices a pod takes through ``spec.resourceClaims`` do not show as
container resources: :func:`claim_devices` counts the device requests of a ResourceClaimTemplate
or ResourceClaim, weighted by the DeviceClass list (built-in plus ``gpuDeviceClasses``, the same
rules). A container resource ``deviceclass.resource.kubernetes.io/<class>`` (KEP-5004's implicit
extended resource) counts as devices of that class: :func:`counted_resources` adds one pattern per
DeviceClass entry to the resource list, so it is counted where every other resource is.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Mapping

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from fractions import Fraction
    from typing import Any

    # An exact quantity: an int where it is whole, which is nearly always (Fraction arithmetic costs
    # a review more than the rest of the GPU count), a Fraction otherwise. The two compare and add
    # exactly. ``fractions`` is imported where a Fraction is made: a check of whole counts (and its
    # start-up) never loads it.
    Amount = Fraction | int

# The default list: NVIDIA (whole GPUs and MIG profiles), AMD, Intel (i915 and xe drivers), Habana
# Gaudi, AWS Neuron (devices and cores), Volcano's vGPU count. vgpu-memory and vgpu-cores are sizes
# of a vGPU, not GPUs, and are deliberately absent.
DEFAULT_GPU_RESOURCES: tuple[tuple[str, float], ...] = (
    ("nvidia.com/gpu", 1),
    ("nvidia.com/mig-*", 1),
    ("amd.com/gpu", 1),
    ("gpu.intel.com/i915", 1),
    ("gpu.intel.com/xe", 1),
    ("habana.ai/gaudi", 1),
    ("aws.amazon.com/neuron*", 1),
    ("volcano.sh/vgpu-number", 1),
)


# The DeviceClasses whose devices are GPUs, as the vendors' DRA drivers name them: NVIDIA's
# (kubernetes-sigs/dra-driver-nvidia-gpu: whole GPUs and MIG slices), AMD's (ROCm k8s-gpu-dra-driver),
# Intel's (intel-resource-drivers-for-kubernetes). NVIDIA's ComputeDomain classes are channels, not GPUs.
DEFAULT_GPU_DEVICE_CLASSES: tuple[tuple[str, float], ...] = (
    ("gpu.nvidia.com", 1),
    ("mig.nvidia.com", 1),
    ("gpu.amd.com", 1),
    ("gpu.intel.com", 1),
)

# KEP-5004: a container may ask for devices of a class as the extended resource of this name + the class.
IMPLICIT_DEVICE_PREFIX = "deviceclass.resource.kubernetes.io/"


def with_builtin(builtin: Iterable[tuple[str, float]], given: Mapping[str, float]) -> list[tuple[str, float]]:
    """The built-in list with ``given`` added: a name given again takes the given weight (0 excludes it).

    Sorted by name, so that equal lists compare equal whatever their order."""
    merged = {name: weight for name, weight in builtin}
    merged.update(given)
    return sorted(merged.items())


def counted_resources(
    resources: Iterable[tuple[str, float]], device_classes: Iterable[tuple[str, float]]
) -> list[tuple[str, float]]:
    """The resource list a container is counted with: ``resources`` and, for each DeviceClass entry, its
    implicit extended resource (``deviceclass.resource.kubernetes.io/<class>``, a pattern for a pattern)."""
    return [*resources, *((IMPLICIT_DEVICE_PREFIX + name, weight) for name, weight in device_classes)]


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


_QUANTITY_PATTERN = r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:([eE][+-]?[0-9]+)|([a-zA-Z]*))$"
# Compiled by the first quantity written as a string: most GPU counts are plain integers, and
# compiling it cost the policies' start-up more than loading the rest of this module.
_QUANTITY: list[re.Pattern[str]] = []  # the compiled pattern, once compiled
# Each suffix's multiplier as (numerator, denominator).
_SUFFIX = {
    "": (1, 1),
    "n": (1, 10**9),
    "u": (1, 10**6),
    "m": (1, 1000),
    "k": (10**3, 1),
    "M": (10**6, 1),
    "G": (10**9, 1),
    "T": (10**12, 1),
    "P": (10**15, 1),
    "E": (10**18, 1),
    "Ki": (2**10, 1),
    "Mi": (2**20, 1),
    "Gi": (2**30, 1),
    "Ti": (2**40, 1),
    "Pi": (2**50, 1),
    "Ei": (2**60, 1),
}
_MAX_EXPONENT = 30  # far beyond any real quantity; bounds the work a hostile "1e999999999" could cause


def parse_quantity(value: Any) -> Amount:
    """A Kubernetes quantity (``2``, ``"2"``, ``"500m"``, ``"1Ki"``, ``"1e3"``) as an exact fraction.

    Raises :class:`QuantityError` for anything else (a bool, a list, ``"two"``, ``"1.2.3"``, ``"1 Gi"``).
    """
    if isinstance(value, bool) or value is None:
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"{value!r} is not a quantity")
        from fractions import Fraction

        return Fraction(str(value))
    if not isinstance(value, str) or len(value) > 64:
        raise QuantityError(f"{value!r} is not a quantity")
    if not _QUANTITY:
        _QUANTITY.append(re.compile(_QUANTITY_PATTERN))
    match = _QUANTITY[0].match(value)
    if not match:
        raise QuantityError(f"{value!r} is not a quantity: it must match the regular expression of resource.Quantity")
    number, exponent, suffix = match.groups()
    if not exponent and not suffix and number.isdigit():
        return int(number)
    from fractions import Fraction

    base = Fraction(number)
    if exponent:
        power = int(exponent[1:])
        if abs(power) > _MAX_EXPONENT:
            raise QuantityError(f"{value!r} is out of range")
        return base * Fraction(10) ** power
    if suffix not in _SUFFIX:
        raise QuantityError(f"{value!r} is not a quantity: unknown suffix {suffix!r}")
    return base * Fraction(*_SUFFIX[suffix])


class PodCount:
    """The weighted GPUs of one pod template, and what could not be counted."""

    __slots__ = ("by_resource", "gpus", "uncounted")

    def __init__(self) -> None:
        self.gpus: Amount = 0
        self.by_resource: dict[str, Amount] = {}
        self.uncounted: list[str] = []  # unparseable quantities

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not PodCount:
            return NotImplemented
        return (self.gpus, self.by_resource, self.uncounted) == (
            other.gpus,  # type: ignore[attr-defined]
            other.by_resource,  # type: ignore[attr-defined]
            other.uncounted,  # type: ignore[attr-defined]
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __repr__(self) -> str:
        return f"PodCount(gpus={self.gpus!r}, by_resource={self.by_resource!r}, uncounted={self.uncounted!r})"


def gpu_weight(name: str, resources: Iterable[tuple[str, float]]) -> Amount | None:
    """The weight of resource ``name`` under ``resources`` (``(name-or-pattern, weight)``), None if not a
    GPU: no entry matches, or the best one weighs 0 (an exclusion). Also a DeviceClass's weight under
    a list of DeviceClasses (the same rules)."""
    best: tuple[int, Amount] | None = None
    for pattern, weight in resources:
        if pattern.endswith("*"):
            if name.startswith(pattern[:-1]):
                rank = len(pattern) - 1
            else:
                continue
        elif name == pattern:
            rank = 10**6  # an exact name beats every pattern
        else:
            continue
        if best is None or rank > best[0]:
            best = (rank, _exact(weight))
    return best[1] if best and best[1] else None


def _exact(weight: float) -> Amount:
    if isinstance(weight, int):
        return weight
    if weight.is_integer():
        return int(weight)
    from fractions import Fraction

    return Fraction(str(weight))


def _container_requests(
    container: Mapping[str, Any], problems: list[str], where: str, counted: Callable[[str], bool] | None = None
) -> dict[str, Amount]:
    resources = container.get("resources")
    if not isinstance(resources, Mapping):
        return {}
    given_requests, given_limits = resources.get("requests"), resources.get("limits")
    requests: Mapping[str, Any] = given_requests if isinstance(given_requests, Mapping) else {}
    limits: Mapping[str, Any] = given_limits if isinstance(given_limits, Mapping) else {}
    out: dict[str, Amount] = {}
    for name in {*requests, *limits}:
        if counted is not None and not counted(name):
            continue
        raw = requests[name] if name in requests else limits[name]
        try:
            out[name] = parse_quantity(raw)
        except QuantityError as err:
            problems.append(f"{where}.resources: {name}: {err}")
    return out


def _add(a: dict[str, Amount], b: Mapping[str, Amount]) -> dict[str, Amount]:
    out = dict(a)
    for name, value in b.items():
        out[name] = out.get(name, 0) + value
    return out


def _max(a: dict[str, Amount], b: Mapping[str, Amount]) -> dict[str, Amount]:
    out = dict(a)
    for name, value in b.items():
        if value > out.get(name, 0):
            out[name] = value
    return out


def pod_requests(
    pod_spec: Mapping[str, Any],
    problems: list[str] | None = None,
    where: str = "spec",
    counted: Callable[[str], bool] | None = None,
) -> dict[str, Amount]:
    """Per-resource request of a pod spec, as ``resource.PodRequests`` computes it (sidecars included).

    ``counted``: the resources to compute (default: every one); each resource's total depends on
    its own quantities only, so leaving the others out changes no result."""
    problems = problems if problems is not None else []
    total: dict[str, Amount] = {}
    containers = pod_spec.get("containers")
    for i, container in enumerate(containers if isinstance(containers, list) else []):
        if isinstance(container, Mapping):
            total = _add(total, _container_requests(container, problems, f"{where}.containers[{i}]", counted))
    sidecars: dict[str, Amount] = {}
    init_peak: dict[str, Amount] = {}
    inits = pod_spec.get("initContainers")
    for i, container in enumerate(inits if isinstance(inits, list) else []):
        if not isinstance(container, Mapping):
            continue
        own = _container_requests(container, problems, f"{where}.initContainers[{i}]", counted)
        if container.get("restartPolicy") == "Always":
            # A sidecar runs alongside the app containers and every later init container.
            total = _add(total, own)
            sidecars = _add(sidecars, own)
            peak = sidecars
        else:
            peak = _add(own, sidecars)
        init_peak = _max(init_peak, peak)
    total = _max(total, init_peak)
    overhead = pod_spec.get("overhead")
    if isinstance(overhead, Mapping):
        parsed: dict[str, Amount] = {}
        for name, raw in overhead.items():
            if counted is not None and not counted(name):
                continue
            try:
                parsed[name] = parse_quantity(raw)
            except QuantityError as err:
                problems.append(f"{where}.overhead: {name}: {err}")
        total = _add(total, parsed)
    return total


def pod_gpus(
    template: Mapping[str, Any] | None,
    resources: Iterable[tuple[str, float]],
    where: str,
    weights: dict[str, Amount | None] | None = None,
    extended: Mapping[str, Amount] | None = None,
) -> PodCount:
    """The weighted GPUs of one pod template's containers (``where`` is its field path, for the messages).

    ``weights``: each resource name's weight under ``resources`` as found so far, kept by the caller
    for as long as ``resources`` stays the same. ``extended``: the weight of each resource that
    ``resources`` does not count but a DeviceClass names as its ``extendedResourceName`` (the class's)."""
    count = PodCount()
    spec = template.get("spec") if isinstance(template, Mapping) else None
    if not isinstance(spec, Mapping):
        return count
    resources = list(resources)
    if weights is None:
        weights = {}

    def weight_of(name: str) -> Amount | None:
        if name not in weights:
            weights[name] = gpu_weight(name, resources)
        weight = weights[name]
        if weight is None and extended:
            return extended.get(name)
        return weight

    # Only GPU resources are parsed: a CPU or memory quantity (checked by the family's rules) never
    # counts, so it is neither parsed nor reported here.
    requests = pod_requests(spec, count.uncounted, f"{where}.spec", counted=lambda name: weight_of(name) is not None)
    for name, value in sorted(requests.items()):
        weight = weight_of(name)
        if weight is not None and value:
            count.by_resource[name] = value
            count.gpus += value * weight
    return count


# --- DRA --------------------------------------------------------------------------------------------


class ClaimCount:
    """The weighted GPUs the device requests of one claim spec ask for (``ResourceClaimSpec``: a
    ResourceClaim's ``spec``, a ResourceClaimTemplate's ``spec.spec``), and the GPU DeviceClasses
    asked for with ``allocationMode: All`` (or a count that is no count), which no number bounds."""

    __slots__ = ("gpus", "unbounded")

    def __init__(self) -> None:
        self.gpus: Amount = 0
        self.unbounded: list[str] = []


def _subrequest(request: Mapping[str, Any], class_weight: Callable[[str], Amount | None]) -> tuple[Amount, str | None]:
    """(weighted GPUs, the class when unbounded) of one exact request: ``exactly`` of a v1 or v1beta2
    request, a v1beta1 request itself, or a ``firstAvailable`` alternative (the fields are the same)."""
    device_class = request.get("deviceClassName")
    weight = class_weight(device_class) if isinstance(device_class, str) else None
    if weight is None or request.get("adminAccess") is True:
        # Not a GPU class; or admin access, which watches devices others hold and takes none (as Kueue charges it).
        return 0, None
    mode = request.get("allocationMode")
    if mode is None or mode == "ExactCount":
        count = request.get("count", 1)
        if count is None:
            count = 1
        if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
            return count * weight, None
    return 0, device_class  # All, or a mode or count jobgate cannot bound: never a guess


def claim_devices(claim_spec: Any, class_weight: Callable[[str], Amount | None]) -> ClaimCount:
    """The weighted GPUs of a ``ResourceClaimSpec``: per device request ``count`` devices (1 when
    absent) of its class × the class's weight, ``allocationMode: All`` unbounded; a ``firstAvailable``
    list counts its largest alternative (unbounded when one is). Reads ``resource.k8s.io/v1`` and
    ``v1beta2`` (``exactly``) as well as ``v1beta1`` (the fields on the request itself)."""
    count = ClaimCount()
    devices = claim_spec.get("devices") if isinstance(claim_spec, Mapping) else None
    requests = devices.get("requests") if isinstance(devices, Mapping) else None
    for request in requests if isinstance(requests, list) else []:
        if not isinstance(request, Mapping):
            continue
        alternatives = request.get("firstAvailable")
        if isinstance(alternatives, list) and alternatives:
            largest: Amount = 0
            for alternative in alternatives:
                if not isinstance(alternative, Mapping):
                    continue
                gpus, unbounded = _subrequest(alternative, class_weight)
                if unbounded is not None:
                    count.unbounded.append(unbounded)
                elif gpus > largest:
                    largest = gpus
            count.gpus += largest
            continue
        exactly = request.get("exactly")
        gpus, unbounded = _subrequest(exactly if isinstance(exactly, Mapping) else request, class_weight)
        if unbounded is not None:
            count.unbounded.append(unbounded)
        count.gpus += gpus
    return count


def is_fraction(value: object) -> bool:
    """Whether ``value`` is a Fraction, without importing ``fractions``: none exists before it is imported."""
    fractions = sys.modules.get("fractions")
    return fractions is not None and isinstance(value, fractions.Fraction)


def format_gpus(value: Amount) -> str:
    """``Fraction(3)`` → ``"3"``; ``Fraction(3, 2)`` → ``"1.5"`` (weights may be fractional)."""
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):g}"
