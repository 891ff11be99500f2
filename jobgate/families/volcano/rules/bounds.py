"""Bounds of a Volcano job's lists and strings, as the CRD declares them.

Volcano sets none. The CRD's CEL rules (``jobgate/families/volcano/cel``) need them for the
apiserver's cost estimate: every rule on a task runs once per task, a rule that compares the
items of a list with each other runs once per pair. No real job comes near them; the webhook
refuses a longer list or string with the apiserver's words (``too_many``, ``too_long``), on
CREATE and on UPDATE as the apiserver does, so that both agree.
"""

from __future__ import annotations

from jobgate.engine.fielderrors import too_long, too_many
from jobgate.families.volcano.rules.resources import typed_template_errors
from jobgate.rules.names import LABEL_MAX_LENGTH

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from jobgate.engine.fielderrors import FieldError, FieldPath

# The most list items. ``tasks``: each task's pod template carries the shared pod-template rules,
# the dearest of which (an UPDATE comparing every task with the stored one) may run 30 times within the apiserver's
# per-rule cost limit.
VOLCANO_BOUNDS = {
    "tasks": 30,
    "policies": 32,  # a job's, or a task's
    "events": 16,  # of one policy (there are 11 events)
    "volumes": 32,
    "dependsOn": 16,  # names a task depends on
    "pluginArguments": 64,  # of one plugin
}
# The longest strings (bytes).
MOUNT_PATH_MAX_LENGTH = 4096  # Linux's PATH_MAX
PLUGIN_ARGUMENT_MAX_LENGTH = 1024
VOLUME_CLAIM_NAME_MAX_LENGTH = 253  # a DNS-1123 subdomain: the name of a PersistentVolumeClaim
DEPENDENCY_NAME_MAX_LENGTH = LABEL_MAX_LENGTH  # a task's name
POLICY_STRING_MAX_LENGTH = 128  # a policy's action and timeout (compared on UPDATE)


def _list(value: Any, path: FieldPath, bound: str) -> Iterator[FieldError]:
    limit = VOLCANO_BOUNDS[bound]
    if isinstance(value, list) and len(value) > limit:
        yield too_many(path, len(value), limit)


def _string(value: Any, path: FieldPath, limit: int) -> Iterator[FieldError]:
    if isinstance(value, str) and len(value.encode()) > limit:
        yield too_long(path, limit)


def _policies(policies: Any, path: FieldPath) -> Iterator[FieldError]:
    yield from _list(policies, path, "policies")
    for index, policy in enumerate(policies if isinstance(policies, list) else []):
        if isinstance(policy, dict):
            yield from _list(policy.get("events"), (*path, index, "events"), "events")
            for key in ("action", "timeout"):
                yield from _string(policy.get(key), (*path, index, key), POLICY_STRING_MAX_LENGTH)


def bound_errors(spec: dict[str, Any]) -> Iterator[FieldError]:
    """Every list and string of the spec beyond its bound, and every value of a pod template of
    another type than the CRD gives it (``resources.typed_template_errors``)."""
    tasks = spec.get("tasks")
    yield from _list(tasks, ("spec", "tasks"), "tasks")
    yield from _policies(spec.get("policies"), ("spec", "policies"))
    volumes = spec.get("volumes")
    yield from _list(volumes, ("spec", "volumes"), "volumes")
    for index, volume in enumerate(volumes if isinstance(volumes, list) else []):
        if isinstance(volume, dict):
            path: FieldPath = ("spec", "volumes", index)
            yield from _string(volume.get("mountPath"), (*path, "mountPath"), MOUNT_PATH_MAX_LENGTH)
            yield from _string(volume.get("volumeClaimName"), (*path, "volumeClaimName"), VOLUME_CLAIM_NAME_MAX_LENGTH)
    plugins = spec.get("plugins")
    for name, arguments in (plugins if isinstance(plugins, dict) else {}).items():
        # A map's key as the apiserver writes it in its schema's errors: a field.
        yield from _list(arguments, ("spec", "plugins", name), "pluginArguments")
        for index, argument in enumerate(arguments if isinstance(arguments, list) else []):
            yield from _string(argument, ("spec", "plugins", name, index), PLUGIN_ARGUMENT_MAX_LENGTH)
    for index, task in enumerate(tasks if isinstance(tasks, list) else []):
        if not isinstance(task, dict):
            continue
        path = ("spec", "tasks", index)
        yield from _policies(task.get("policies"), (*path, "policies"))
        depends = task.get("dependsOn")
        names = depends.get("name") if isinstance(depends, dict) else None
        yield from _list(names, (*path, "dependsOn", "name"), "dependsOn")
        for position, name in enumerate(names if isinstance(names, list) else []):
            yield from _string(name, (*path, "dependsOn", "name", position), DEPENDENCY_NAME_MAX_LENGTH)
        yield from typed_template_errors(task.get("template"), (*path, "template"))
