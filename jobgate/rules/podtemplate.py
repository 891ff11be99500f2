"""Pod-template defaults and checks shared by every job family.

The checks catch, at admission time, what the apiserver would otherwise only refuse when
the controller creates the pods (long after ``kubectl apply`` reported success): bad
container names, duplicate ports, requests above limits, mounts of volumes that do not exist.
"""

from __future__ import annotations

from jobgate._generated import scoped_rules
from jobgate.engine.fielderrors import (
    FieldError,
    FieldPath,
    Key,
    duplicate,
    invalid,
    required,
    too_many,
)
from jobgate.engine.findings import Findings, clip_warning
from jobgate.engine.schema import SCHEMA_TYPES
from jobgate.rules.quantity import (
    NANO,
    QUANTITY_MESSAGE,
    parse_quantity,
    parse_text_cached,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Set as AbstractSet
    from typing import Any, Final

FALLBACK_TO_LOGS: Final = "FallbackToLogsOnError"
POD_RESTART_POLICIES: Final = ("Always", "OnFailure", "Never")
PORT_PROTOCOLS: Final = ("TCP", "UDP", "SCTP")
# The longest lists a pod template may hold. Kubernetes sets none, but the CRDs' CEL rules
# (jobgate/generate/cel/podtemplate.py) need bounds for the apiserver's cost estimate; no real pod comes
# near these, and the webhook refuses a longer list as the apiserver does, so that both agree.
POD_TEMPLATE_BOUNDS: Final = {
    "containers": 16,
    "initContainers": 16,
    "volumes": 64,
    "ports": 32,
    "volumeMounts": 32,
}
# The ids of the rules below (the catalogue's records: jobgate/generate/cel/podtemplate.py), which
# their errors carry.
CONTAINERS_REQUIRED: Final = "pod-template/containers"
FRAMEWORK_CONTAINER: Final = "pod-template/framework-container"
BOUNDS: Final = "pod-template/bounds"
VOLUMES: Final = "pod-template/volumes"
VOLUME_NAMES_UNIQUE: Final = "pod-template/volume-names-unique"
CONTAINER_NAMES_UNIQUE: Final = "pod-template/container-names-unique"


class ContainerRules:
    """The ids of the hand-written rules of one container list (``pod-template/{list}/...``, the list's
    key filled), found by ``_rules`` where an error is made (the generated scope functions read the key
    from the path themselves): a valid container pays nothing for them."""

    __slots__ = (
        "extended_resource_limits",
        "quantities",
        "requests_within_limits",
        "whole_extended_resources",
    )

    def __init__(self, key: str) -> None:
        prefix = f"pod-template/{key}/"
        self.quantities = prefix + "quantities"
        self.whole_extended_resources = prefix + "whole-extended-resources"
        self.extended_resource_limits = prefix + "extended-resource-limits"
        self.requests_within_limits = prefix + "requests-within-limits"


CONTAINER_RULES: Final = {key: ContainerRules(key) for key in ("containers", "initContainers")}


def _rules(container_path: FieldPath) -> ContainerRules:
    """The ids of the rules of the list of the container at ``container_path`` (its key, then its
    index): read where an error is made, so that a valid container pays nothing for them."""
    key = container_path[-2]
    assert type(key) is str
    return CONTAINER_RULES[key]


# --- defaults (copy-on-write: only the containers on the way to a change are copied) ------


# --- checks ---------------------------------------------------------------------------------


# The checks below run twice per review on the webhook's hot path, where a Python call costs more
# than the test it makes: valid values take the shortest way through (a type test and a lookup, one
# generated loop per list of volumes, ports, mounts or variables), and the helpers that explain a
# failure (``_objects``, ``_resource_class``) are called only for what is not the usual case.


def _objects(value: Any, path: FieldPath, errors: list[FieldError], bound: str | None = None) -> list[Any]:
    """The list at ``path`` (a type error and nothing when it is not a list); one longer than
    ``POD_TEMPLATE_BOUNDS[bound]`` is refused, its items still checked. The loops below call it only
    when the value is not a list within its bound."""
    if type(value) is list:
        limit = POD_TEMPLATE_BOUNDS.get(bound) if bound is not None else None
        if limit is not None and len(value) > limit:
            errors.append(too_many(path, len(value), limit, BOUNDS))
        return value
    errors.append(invalid(path, value, "must be of type array", SCHEMA_TYPES))
    return []


def check_pod_template(
    template: Any,
    path: FieldPath,
    *,
    where: str,
    replica_restart_policy: str | None,
    required_container: tuple[str, str] | None = None,
    found: Findings | None = None,
    required_container_when_unnamed: bool = False,
    missing_containers_detail: str | None = None,
) -> Findings:
    """Everything the apiserver would refuse in pods created from ``template``.

    ``where`` names the replica in warnings (e.g. ``tfReplicaSpecs[Worker]``);
    ``required_container`` is (name, detail of the error when no container has that name), an
    error reported when containers have names (``required_container_when_unnamed``: also when
    none has one); ``missing_containers_detail`` replaces the detail of the error for a template
    without containers. The findings are added to ``found`` when given (and returned), else to new ones.
    Errors carry the pod template's rule ids; a family whose own rule claims one of them (Kubeflow's
    missing containers, DI-engine's bound of a task's volumes) relabels it: no parameter for it here,
    which every call would pay for.
    """
    if found is None:
        found = Findings()
    errors = found.errors
    if type(template) is not dict:
        return found  # the schema check reports a missing or mistyped template
    spec = template.get("spec")
    scoped_rules.check_template(template, path, errors)
    if spec is None:
        return found
    spec_path = (*path, "spec")
    if type(spec) is not dict:
        errors.append(invalid(spec_path, spec, "must be of type object", SCHEMA_TYPES))
        return found

    volumes = spec.get("volumes")
    volume_names = _check_volumes(volumes, (*spec_path, "volumes"), errors) if volumes is not None else _NO_NAMES
    seen: set[str] = set()
    init_containers = spec.get("initContainers")
    if init_containers is not None:
        _check_containers(init_containers, (*spec_path, "initContainers"), errors, seen, volume_names)
    containers = spec.get("containers")
    main_names = (
        _check_containers(containers, (*spec_path, "containers"), errors, seen, volume_names)
        if containers is not None
        else _NO_NAMES
    )
    if not containers and (containers is None or type(containers) is list):
        detail = missing_containers_detail or "must have at least one container"
        errors.append(required((*spec_path, "containers"), detail, CONTAINERS_REQUIRED))
    elif (
        required_container is not None
        and (main_names or (required_container_when_unnamed and type(containers) is list))
        and required_container[0] not in main_names
    ):
        errors.append(required((*spec_path, "containers"), required_container[1], FRAMEWORK_CONTAINER))

    scoped_rules.check_pod_spec(spec, spec_path, errors)
    pod_policy = spec.get("restartPolicy")
    if replica_restart_policy is not None and pod_policy is not None and pod_policy in POD_RESTART_POLICIES:
        effective = "Never" if replica_restart_policy == "ExitCode" else replica_restart_policy
        if pod_policy != effective:
            found.warnings.append(
                clip_warning(
                    f"restartPolicy {replica_restart_policy} overrides the pod template's "
                    f"restartPolicy {pod_policy} ({where})"
                )
            )
    return found


# The names of no volume or container (read only).
_NO_NAMES: Final[frozenset[str]] = frozenset()


def volume_errors(volumes: Any, path: FieldPath) -> list[FieldError]:
    """A list of pod volumes on its own: objects, each with a name that is a DNS-1123 label
    (``VOLUMES``), unique (``VOLUME_NAMES_UNIQUE``), at most ``POD_TEMPLATE_BOUNDS`` of them (``BOUNDS``)."""
    errors: list[FieldError] = []
    _check_volumes(volumes, path, errors)
    return errors


def _check_volumes(volumes: Any, path: FieldPath, errors: list[FieldError]) -> set[str]:
    names: set[str] = set()
    if volumes is None:
        return names
    if type(volumes) is not list or len(volumes) > POD_TEMPLATE_BOUNDS["volumes"]:
        volumes = _objects(volumes, path, errors, "volumes")
    # The generated loop over the list: each volume's name, then whether an earlier one has it.
    return scoped_rules.check_each_volume(volumes, path, errors)


def _check_containers(
    items: Any, path: FieldPath, errors: list[FieldError], seen: set[str], volume_names: AbstractSet[str]
) -> set[str]:
    """Check the containers (or init containers) at ``path``, the pod spec's and its key; the usable
    names among them, also added to ``seen`` (the pod's names so far, which a container's may not repeat)."""
    key = path[-1]
    assert type(key) is str
    if type(items) is not list or len(items) > POD_TEMPLATE_BOUNDS[key]:
        items = _objects(items, path, errors, key)
    names: set[str] = set()
    for index, container in enumerate(items):
        if type(container) is not dict:
            errors.append(invalid((*path, index), container, "must be of type object", SCHEMA_TYPES))
            continue
        name = _check_container(container, (*path, index), errors, seen, volume_names)
        if name is not None:
            names.add(name)
    return names


def _check_container(
    container: dict[str, Any],
    path: FieldPath,
    errors: list[FieldError],
    seen: set[str],
    volume_names: AbstractSet[str],
) -> str | None:
    """Check one container; returns its name when it has a usable one."""
    scoped_rules.check_container_name(container, path, errors)
    name = container.get("name")
    if type(name) is str and name:
        if name in seen:
            errors.append(duplicate((*path, "name"), name, CONTAINER_NAMES_UNIQUE))
        seen.add(name)
    else:
        name = None
    scoped_rules.check_container(container, path, errors)

    ports = container.get("ports")
    if ports is not None:
        ports_path = (*path, "ports")
        if type(ports) is not list or len(ports) > POD_TEMPLATE_BOUNDS["ports"]:
            ports = _objects(ports, ports_path, errors, "ports")
        # The generated loop: each port's fields, then whether an earlier port has its name.
        scoped_rules.check_each_container_port(ports, ports_path, errors)

    resources = container.get("resources")
    if resources is not None:
        if type(resources) is dict:
            _check_resources(resources, (*path, "resources"), name, errors)
        else:
            errors.append(invalid((*path, "resources"), resources, "must be of type object", SCHEMA_TYPES))

    mounts = container.get("volumeMounts")
    if mounts is not None:
        mounts_path = (*path, "volumeMounts")
        if type(mounts) is not list or len(mounts) > POD_TEMPLATE_BOUNDS["volumeMounts"]:
            mounts = _objects(mounts, mounts_path, errors, "volumeMounts")
        # The generated loop: a name of no volume first (a set one: it never comes with the scope's
        # error of the name), then each mount's fields.
        scoped_rules.check_each_volume_mount(mounts, mounts_path, errors, volume_names)

    env = container.get("env")
    if env is not None:
        env_list_path = (*path, "env")
        if type(env) is not list:
            env = _objects(env, env_list_path, errors)
        # Nothing is reported between two variables: the generated loop over the list.
        scoped_rules.check_each_env_var(env, env_list_path, errors)
    return name


# (native, overcommittable) by resource name: extended resources (``vendor/name``) and hugepages
# are neither. A dict, emptied when full: resource names come from the objects under review.
_RESOURCE_CLASS_MAX: Final = 1024
_resource_classes: dict[str, tuple[bool, bool]] = {}


def _resource_class(resource: str) -> tuple[bool, bool]:
    known = _resource_classes.get(resource)
    if known is not None:
        return known
    native = "/" not in resource or "kubernetes.io/" in resource
    known = (native, native and not resource.startswith("hugepages-"))
    if len(_resource_classes) >= _RESOURCE_CLASS_MAX:
        _resource_classes.clear()
    _resource_classes[resource] = known
    return known


def _quantities(values: Any, path: FieldPath, key: str, errors: list[FieldError]) -> dict[str, tuple[Any, int]]:
    """The valid quantities of ``values`` (requests or limits, at ``path`` + ``key``, not None), by resource."""
    if type(values) is not dict:
        errors.append(invalid((*path, key), values, "must be of type object", SCHEMA_TYPES))
        return {}
    parsed = {}
    for resource, raw in values.items():
        # A string or an integer, as the CRDs declare it (x-kubernetes-int-or-string).
        if type(raw) is str:
            quantity = parse_text_cached(raw)
        elif type(raw) is int:
            quantity = parse_quantity(raw)
        else:
            errors.append(invalid((*path, key, Key(resource)), raw, "must be of type integer or string", SCHEMA_TYPES))
            continue
        # A whole number of units is valid for every resource; only a fraction asks which it is
        # (a native resource, cpu or memory, may be fractional).
        if quantity is not None and quantity >= 0 and (quantity % NANO == 0 or _resource_class(resource)[0]):
            parsed[resource] = (raw, quantity)
        elif quantity is None:
            errors.append(invalid((*path, key, Key(resource)), raw, QUANTITY_MESSAGE, _rules(path[:-1]).quantities))
        elif quantity < 0:
            errors.append(
                invalid(
                    (*path, key, Key(resource)), raw, "must be greater than or equal to 0", _rules(path[:-1]).quantities
                )
            )
        else:
            whole = _rules(path[:-1]).whole_extended_resources
            errors.append(invalid((*path, key, Key(resource)), raw, "must be an integer", whole))
    return parsed


def _check_resources(
    resources: dict[str, Any], path: FieldPath, container_name: str | None, errors: list[FieldError]
) -> None:
    """``container_name`` names the container in the errors' details (their paths give its index
    only, as the apiserver's do)."""
    raw_limits = resources.get("limits")
    raw_requests = resources.get("requests")
    limits = _quantities(raw_limits, path, "limits", errors) if raw_limits is not None else _NO_QUANTITIES
    if raw_requests is None:
        return
    requests = _quantities(raw_requests, path, "requests", errors)
    if type(raw_requests) is dict and (raw_limits is None or type(raw_limits) is dict):
        # Read from the keys, whatever their values (a wrong one has its own error): the apiserver
        # refuses the pods ("Limit must be set for non overcommitable resources") and the job would be
        # stored with pods that never start.
        for resource in raw_requests:
            if (raw_limits is None or resource not in raw_limits) and not _resource_class(resource)[1]:
                detail = limit_required_detail(resource, _owner(container_name))
                errors.append(
                    required((*path, "limits", Key(resource)), detail, _rules(path[:-1]).extended_resource_limits)
                )
    for resource, (raw, quantity) in requests.items():
        limit = limits.get(resource)
        if limit is None or quantity == limit[1]:
            continue  # a request equal to its limit is valid for every resource
        limit_raw, limit_quantity = limit
        if _resource_class(resource)[1]:
            if quantity > limit_quantity:
                errors.append(
                    invalid(
                        (*path, "requests", Key(resource)),
                        raw,
                        f"must be less than or equal to {resource} limit of {limit_raw}{_owner(container_name)}",
                        _rules(path[:-1]).requests_within_limits,
                    )
                )
        else:
            errors.append(
                invalid(
                    (*path, "requests", Key(resource)),
                    raw,
                    f"must be equal to {resource} limit of {limit_raw}{_owner(container_name)}",
                    _rules(path[:-1]).requests_within_limits,
                )
            )


# No quantities (a container without limits; read only).
_NO_QUANTITIES: Final[dict[str, tuple[Any, int]]] = {}


def _owner(container_name: str | None) -> str:
    """`` (container NAME)`` in a detail, '' for a container without a usable name (its path says which)."""
    return f" (container {container_name})" if container_name is not None else ""


# The apiserver's own words for a request of a resource that cannot be overcommitted with no limit.
LIMIT_REQUIRED: Final = "Limit must be set for non overcommitable resources"


def limit_required_detail(resource: str, owner: str) -> str:
    """The detail of a missing limit; ``owner`` is `` (container NAME)`` or ''."""
    return f"{resource} is requested without a limit{owner}: {LIMIT_REQUIRED}"
