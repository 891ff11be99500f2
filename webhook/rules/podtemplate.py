"""Pod-template defaults and checks shared by every job family.

The checks catch, at admission time, what the apiserver would otherwise only refuse when
the controller creates the pods (long after ``kubectl apply`` reported success): bad
container names, duplicate ports, requests above limits, mounts of volumes that do not exist.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from webhook.rules.fielderrors import (
    FieldError,
    FieldPath,
    Key,
    duplicate,
    invalid,
    not_found,
    not_supported,
    required,
)
from webhook.rules.names import (
    dns1123_label_problems,
    env_var_name_problems,
    port_name_problems,
)
from webhook.rules.quantity import QUANTITY_MESSAGE, parse_quantity

FALLBACK_TO_LOGS = "FallbackToLogsOnError"
POD_RESTART_POLICIES = ("Always", "OnFailure", "Never")
_PORT_PROTOCOLS = ("TCP", "UDP", "SCTP")
WARNING_MAX_LENGTH = 120


def clip_warning(text: str) -> str:
    """Warnings longer than this are cut by some clients; keep the start, which says what is wrong."""
    return text if len(text) <= WARNING_MAX_LENGTH else text[: WARNING_MAX_LENGTH - 1] + "…"


# --- typed access that never raises ------------------------------------------------------


def pod_spec(template: Any) -> dict[str, Any] | None:
    if isinstance(template, dict):
        spec = template.get("spec")
        if isinstance(spec, dict):
            return spec
    return None


def containers_of(template: Any) -> list[dict[str, Any]]:
    spec = pod_spec(template)
    containers = spec.get("containers") if spec else None
    if not isinstance(containers, list):
        return []
    return [c for c in containers if isinstance(c, dict)]


def container_named(template: Any, name: str) -> dict[str, Any] | None:
    for container in containers_of(template):
        if container.get("name") == name:
            return container
    return None


def container_port(container: dict[str, Any] | None, port_name: str) -> int | None:
    if container is None:
        return None
    ports = container.get("ports")
    if not isinstance(ports, list):
        return None
    for port in ports:
        if isinstance(port, dict) and port.get("name") == port_name:
            number = port.get("containerPort")
            return number if isinstance(number, int) and not isinstance(number, bool) else None
    return None


# --- defaults (copy-on-write: only the containers on the way to a change are copied) ------


def _copied_dict(parent: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = parent.get(key)
    if not isinstance(value, dict):
        return None
    copy = dict(value)
    parent[key] = copy
    return copy


def default_pod_template(
    replica: dict[str, Any],
    *,
    container_name: str | None,
    port: tuple[str, int] | None,
    port_requires_named_container: bool = False,
) -> None:
    """Fill terminationMessagePolicy and the framework port, in place on ``replica`` (a copy).

    The port goes to the container named ``container_name``, else to the first container,
    unless ``port_requires_named_container``; an existing port of that name is left alone.
    Anything of an unexpected type is left untouched for validation to report.
    """
    template = _copied_dict(replica, "template")
    if template is None:
        return
    spec = _copied_dict(template, "spec")
    if spec is None:
        return
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        return
    containers = list(containers)
    spec["containers"] = containers
    for index, container in enumerate(containers):
        if isinstance(container, dict) and container.get("terminationMessagePolicy") in (None, ""):
            containers[index] = {**container, "terminationMessagePolicy": FALLBACK_TO_LOGS}
    if port is None:
        return
    target = next(
        (i for i, c in enumerate(containers) if isinstance(c, dict) and c.get("name") == container_name),
        None,
    )
    if target is None:
        if port_requires_named_container:
            return
        target = 0
    container = containers[target]
    if not isinstance(container, dict):
        return
    ports = container.get("ports")
    if ports is None:
        ports = []
    if not isinstance(ports, list):
        return
    name, number = port
    if any(isinstance(p, dict) and p.get("name") == name for p in ports):
        return
    containers[target] = {**container, "ports": [*ports, {"name": name, "containerPort": number}]}


# --- checks ---------------------------------------------------------------------------------


@dataclass
class Findings:
    errors: list[FieldError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def extend(self, other: Findings) -> None:
        self.errors.extend(other.errors)
        self.warnings.extend(other.warnings)


def _list_at(parent: dict[str, Any], key: str, path: FieldPath, errors: list[FieldError]) -> list[Any]:
    value = parent.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        errors.append(invalid((*path, key), value, "must be of type array"))
        return []
    return value


def _dicts_at(
    parent: dict[str, Any], key: str, path: FieldPath, errors: list[FieldError]
) -> Iterator[tuple[int, dict]]:
    for index, item in enumerate(_list_at(parent, key, path, errors)):
        if isinstance(item, dict):
            yield index, item
        else:
            errors.append(invalid((*path, key, index), item, "must be of type object"))


def _string_at(item: dict[str, Any], key: str, path: FieldPath, errors: list[FieldError]) -> str | None:
    """The non-empty string at ``key``; a Required or type error otherwise."""
    value = item.get(key)
    if value is None or value == "":
        errors.append(required((*path, key)))
        return None
    if not isinstance(value, str):
        errors.append(invalid((*path, key), value, "must be of type string"))
        return None
    return value


def check_pod_template(
    template: Any,
    path: FieldPath,
    *,
    where: str,
    replica_restart_policy: str | None,
) -> Findings:
    """Everything the apiserver would refuse in pods created from ``template``.

    ``where`` names the replica in warnings (e.g. ``tfReplicaSpecs[Worker]``).
    """
    found = Findings()
    errors = found.errors
    if not isinstance(template, dict):
        return found  # the schema check reports a missing or mistyped template
    spec_path = (*path, "spec")
    spec = template.get("spec")
    if spec is None:
        errors.append(required(spec_path))
        return found
    if not isinstance(spec, dict):
        errors.append(invalid(spec_path, spec, "must be of type object"))
        return found

    volume_names = _check_volumes(spec, spec_path, errors)
    container_names: dict[str, FieldPath] = {}
    containers = list(_dicts_at(spec, "containers", spec_path, errors))
    if not containers and isinstance(spec.get("containers", []), list):
        errors.append(required((*spec_path, "containers"), "must have at least one container"))
    init_containers = list(_dicts_at(spec, "initContainers", spec_path, errors))
    for key, items in (("initContainers", init_containers), ("containers", containers)):
        for index, container in items:
            _check_container(
                container,
                (*spec_path, key, index),
                found,
                seen_names=container_names,
                volume_names=volume_names,
                where=where,
            )

    pod_policy = spec.get("restartPolicy")
    if pod_policy is not None and pod_policy not in POD_RESTART_POLICIES:
        errors.append(not_supported((*spec_path, "restartPolicy"), pod_policy, POD_RESTART_POLICIES))
    elif pod_policy is not None and replica_restart_policy is not None:
        effective = "Never" if replica_restart_policy == "ExitCode" else replica_restart_policy
        if pod_policy != effective:
            found.warnings.append(
                clip_warning(
                    f"restartPolicy {replica_restart_policy} overrides the pod template's "
                    f"restartPolicy {pod_policy} ({where})"
                )
            )
    return found


def _check_volumes(spec: dict[str, Any], spec_path: FieldPath, errors: list[FieldError]) -> set[str]:
    names: set[str] = set()
    for index, volume in _dicts_at(spec, "volumes", spec_path, errors):
        name_path = (*spec_path, "volumes", index, "name")
        name = _string_at(volume, "name", (*spec_path, "volumes", index), errors)
        if name is None:
            continue
        for problem in dns1123_label_problems(name):
            errors.append(invalid(name_path, name, problem))
        if name in names:
            errors.append(duplicate(name_path, name))
        names.add(name)
    return names


def _check_container(
    container: dict[str, Any],
    path: FieldPath,
    found: Findings,
    *,
    seen_names: dict[str, FieldPath],
    volume_names: set[str],
    where: str,
) -> None:
    errors = found.errors
    name = _string_at(container, "name", path, errors)
    if name is not None:
        for problem in dns1123_label_problems(name):
            errors.append(invalid((*path, "name"), name, problem))
        if name in seen_names:
            errors.append(duplicate((*path, "name"), name))
        seen_names[name] = path
    _string_at(container, "image", path, errors)

    port_names: set[str] = set()
    for index, port in _dicts_at(container, "ports", path, errors):
        port_path = (*path, "ports", index)
        _check_port(port, port_path, port_names, errors)

    resources = container.get("resources")
    if resources is not None:
        if isinstance(resources, dict):
            _check_resources(resources, (*path, "resources"), f"{where} container {name}", found)
        else:
            errors.append(invalid((*path, "resources"), resources, "must be of type object"))

    for index, mount in _dicts_at(container, "volumeMounts", path, errors):
        mount_path = (*path, "volumeMounts", index)
        mount_name = _string_at(mount, "name", mount_path, errors)
        if mount_name is not None and mount_name not in volume_names:
            errors.append(not_found((*mount_path, "name"), mount_name, "no volume of that name in the pod"))
        _string_at(mount, "mountPath", mount_path, errors)

    for index, env in _dicts_at(container, "env", path, errors):
        env_path = (*path, "env", index)
        env_name = _string_at(env, "name", env_path, errors)
        if env_name is not None:
            for problem in env_var_name_problems(env_name):
                errors.append(invalid((*env_path, "name"), env_name, problem))


def _check_port(port: dict[str, Any], path: FieldPath, seen: set[str], errors: list[FieldError]) -> None:
    number = port.get("containerPort")
    if number is None:
        errors.append(required((*path, "containerPort")))
    elif not isinstance(number, int) or isinstance(number, bool) or not 1 <= number <= 65535:
        errors.append(invalid((*path, "containerPort"), number, "must be between 1 and 65535, inclusive"))
    host_port = port.get("hostPort")
    if host_port not in (None, 0) and (
        not isinstance(host_port, int) or isinstance(host_port, bool) or not 1 <= host_port <= 65535
    ):
        errors.append(invalid((*path, "hostPort"), host_port, "must be between 1 and 65535, inclusive"))
    protocol = port.get("protocol")
    if protocol is not None and protocol not in _PORT_PROTOCOLS:
        errors.append(not_supported((*path, "protocol"), protocol, _PORT_PROTOCOLS))
    name = port.get("name")
    if name is None or name == "":
        return
    if not isinstance(name, str):
        errors.append(invalid((*path, "name"), name, "must be of type string"))
        return
    for problem in port_name_problems(name):
        errors.append(invalid((*path, "name"), name, problem))
    if name in seen:
        errors.append(duplicate((*path, "name"), name))
    seen.add(name)


def _is_native(resource: str) -> bool:
    return "/" not in resource or "kubernetes.io/" in resource


def _is_overcommittable(resource: str) -> bool:
    return _is_native(resource) and not resource.startswith("hugepages-")


def is_gpu(resource: str) -> bool:
    return resource.endswith("/gpu")


def _quantities(resources: dict[str, Any], key: str, path: FieldPath, errors: list[FieldError]) -> dict[str, Any]:
    values = resources.get(key)
    if values is None:
        return {}
    if not isinstance(values, dict):
        errors.append(invalid((*path, key), values, "must be of type object"))
        return {}
    parsed = {}
    for resource, raw in values.items():
        quantity_path = (*path, key, Key(resource))
        quantity = parse_quantity(raw)
        if quantity is None:
            errors.append(invalid(quantity_path, raw, QUANTITY_MESSAGE))
        elif quantity < 0:
            errors.append(invalid(quantity_path, raw, "must be greater than or equal to 0"))
        elif not _is_native(resource) and quantity.denominator != 1:
            errors.append(invalid(quantity_path, raw, "must be an integer"))
        else:
            parsed[resource] = (raw, quantity)
    return parsed


def _check_resources(resources: dict[str, Any], path: FieldPath, owner: str, found: Findings) -> None:
    errors = found.errors
    limits = _quantities(resources, "limits", path, errors)
    requests = _quantities(resources, "requests", path, errors)
    for resource, (raw, quantity) in requests.items():
        request_path = (*path, "requests", Key(resource))
        limit = limits.get(resource)
        if limit is None:
            if not _is_overcommittable(resource):
                # The apiserver refuses such pods ("Limit must be set for non overcommitable resources").
                what = "GPU" if is_gpu(resource) else resource
                found.warnings.append(clip_warning(f"{what} requested without a limit: {resource} in {owner}"))
            continue
        limit_raw, limit_quantity = limit
        if _is_overcommittable(resource):
            if quantity > limit_quantity:
                errors.append(
                    invalid(request_path, raw, f"must be less than or equal to {resource} limit of {limit_raw}")
                )
        elif quantity != limit_quantity:
            errors.append(invalid(request_path, raw, f"must be equal to {resource} limit of {limit_raw}"))
