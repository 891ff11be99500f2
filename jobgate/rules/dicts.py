"""Typed access to a job's nested dicts that never raises, and copy-on-write for defaults.

The rules read objects a user wrote, of any shape; the controller reads the same objects after
admission. Both go through these helpers.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any


# --- typed access that never raises ------------------------------------------------------


def as_int(value: Any) -> int | None:
    """An integer field's value; None when unset or of the wrong type (reported elsewhere)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


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


# --- copy-on-write: only the containers on the way to a change are copied ---


def copied_dict(parent: dict[str, Any], key: str) -> dict[str, Any] | None:
    """Replace ``parent[key]`` by a shallow copy and return it; None when it is not an object."""
    value = parent.get(key)
    if not isinstance(value, dict):
        return None
    copy = dict(value)
    parent[key] = copy
    return copy
