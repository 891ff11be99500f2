"""Resources of a Volcano task's pod template that Volcano's webhook checks beyond the pod template rules.

A NUMA ``topologyPolicy`` needs whole CPUs; pod-level ``resources`` must agree with the
containers' (the apiserver's pod validation, which Volcano's webhook runs on each task).
"""

from __future__ import annotations

from jobgate.engine.fielderrors import FieldError, FieldPath, Key, invalid
from jobgate.engine.schema import type_error
from jobgate.families.volcano.rules.tasks import LEGACY
from jobgate.rules.quantity import parse_quantity

# The ids of these rules (jobgate/families/volcano/cel/resources.py), which their errors carry.
NUMA_CPU = "volcano/numa-cpu"
POD_LEVEL_RESOURCES = "volcano/pod-level-resources"
POD_LEVEL_RESOURCE_TYPES = "volcano/pod-level-resources/types"

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any


def numa_errors(task: dict[str, Any], index: int, path: FieldPath) -> Iterator[FieldError]:
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
                NUMA_CPU,
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


def pod_level_resource_errors(template: Any, index: int, path: FieldPath) -> Iterator[FieldError]:
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
                POD_LEVEL_RESOURCES,
            )
    for resource, (total, binary) in _aggregate(pod_spec, "requests").items():
        request = requests.get(resource)
        if request is not None and total > request[1]:
            yield invalid(
                (*resources_path, "requests", Key(resource)),
                request[0],
                f'{volcano_path}.requests[{resource}]: Invalid value: "{request[0]}": must be greater than or equal '
                f"to aggregate container requests of {_format_quantity(total, binary)}",
                POD_LEVEL_RESOURCES,
            )
    for resource, (total, binary) in _aggregate(pod_spec, "limits").items():
        limit = limits.get(resource)
        if resource.startswith("hugepages-") and limit is not None and total > limit[1]:
            yield invalid(
                (*resources_path, "limits", Key(resource)),
                limit[0],
                f'{volcano_path}.limits[{resource}]: Invalid value: "{limit[0]}": must be greater than or equal '
                f"to aggregate container limits of {_format_quantity(total, binary)}",
                POD_LEVEL_RESOURCES,
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
                    POD_LEVEL_RESOURCES,
                )


def typed_template_errors(template: Any, path: FieldPath) -> Iterator[FieldError]:
    """What the CRD types in a task's pod template for the rules above, beyond the shared pod-template
    fields: the pod-level ``resources`` (quantities, as in a container) and an init container's
    ``restartPolicy`` (a string). The apiserver refuses anything else before any rule; so does the
    webhook, on CREATE and on UPDATE as the apiserver does."""
    pod_spec = template.get("spec") if isinstance(template, dict) else None
    if not isinstance(pod_spec, dict):
        return
    spec_path = (*path, "spec")
    resources = pod_spec.get("resources")
    if resources is not None:
        error = type_error(resources, (*spec_path, "resources"), "object", None, POD_LEVEL_RESOURCE_TYPES)
        if error is not None:
            yield error
        else:
            for key in ("requests", "limits"):
                yield from _typed_quantities(resources.get(key), (*spec_path, "resources", key))
    init_containers = pod_spec.get("initContainers")
    for index, container in enumerate(init_containers if isinstance(init_containers, list) else []):
        policy = container.get("restartPolicy") if isinstance(container, dict) else None
        if policy is not None:
            policy_path = (*spec_path, "initContainers", index, "restartPolicy")
            error = type_error(policy, policy_path, "string", None, POD_LEVEL_RESOURCE_TYPES)
            if error is not None:
                yield error


def _typed_quantities(values: Any, path: FieldPath) -> Iterator[FieldError]:
    if values is None:
        return
    error = type_error(values, path, "object", None, POD_LEVEL_RESOURCE_TYPES)
    if error is not None:
        yield error
        return
    for resource, raw in values.items():
        if type(raw) is not str and type(raw) is not int and raw is not None:
            yield invalid((*path, Key(resource)), raw, "must be of type integer or string", POD_LEVEL_RESOURCE_TYPES)
