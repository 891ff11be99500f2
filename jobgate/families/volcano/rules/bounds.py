"""Bounds of a Volcano job's lists and strings, as the CRD declares them.

Volcano sets none. The CRD's CEL rules (``jobgate/families/volcano/cel``) need them for the
apiserver's cost estimate: every rule on a task runs once per task, a rule that compares the
items of a list with each other runs once per pair. No real job comes near them; the webhook
refuses a longer list or string with the apiserver's words (``too_many``, ``too_long``), on
CREATE and on UPDATE as the apiserver does, so that both agree.
"""

from __future__ import annotations

from jobgate._generated.declared import volcano as declared_rules
from jobgate.families.volcano.rules.resources import typed_template_errors
from jobgate.rules.names import LABEL_MAX_LENGTH

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from jobgate.engine.fielderrors import FieldError

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


def bound_errors(obj: dict[str, Any]) -> Iterator[FieldError]:
    """Every list and string of the spec beyond its bound (declared: ``volcano/bounds``), and every
    value of a pod template of another type than the CRD gives it (``resources.typed_template_errors``),
    after each task's bounds."""
    by_task: dict[int, list[FieldError]] = {}
    for error in declared_rules.validate_job_batch_volcano_sh(obj, None, ("volcano/bounds",)):
        index = error.path[2] if len(error.path) > 2 and error.path[1] == "tasks" else None
        if isinstance(index, int):
            by_task.setdefault(index, []).append(error)
        else:
            yield error
    spec = obj.get("spec")
    tasks = spec.get("tasks") if isinstance(spec, dict) else None
    for index, task in enumerate(tasks if isinstance(tasks, list) else []):
        yield from by_task.get(index, ())
        if isinstance(task, dict):
            yield from typed_template_errors(task.get("template"), ("spec", "tasks", index, "template"))
