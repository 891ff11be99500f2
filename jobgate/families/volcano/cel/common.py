"""What the Volcano rule modules share: where the tasks are, and small pieces of CEL."""

from __future__ import annotations

from jobgate.families.volcano.rules.bounds import VOLCANO_BOUNDS
from jobgate.forms.catalogue import LIST_ITEMS, Location

SPEC: Location = ("spec",)
TASKS: Location = ("spec", "tasks")
TASK: Location = (*TASKS, LIST_ITEMS)
MAX_TASKS = VOLCANO_BOUNDS["tasks"]
# CEL of 1.30 (the CRDs' floor) has no two-variable comprehension and no lists.range(): a rule that
# needs a task's index walks this literal list of every index the tasks' maxItems allows.
TASK_INDEXES = "[" + ", ".join(str(i) for i in range(MAX_TASKS)) + "]"


def present(variable: str, path: str) -> str:
    """CEL true when every field of the dotted ``path`` under ``variable`` is set."""
    parts = path.split(".")
    return "(" + " && ".join(f"has({variable}.{'.'.join(parts[: i + 1])})" for i in range(len(parts))) + ")"


def or_default(variable: str, path: str, default: str) -> str:
    """CEL of the field, or ``default`` when it (or an object on the way) is unset."""
    return f"({present(variable, path)} ? {variable}.{path} : {default})"


def name_of(task: str) -> str:
    """A task's name as the webhook reads it ("" when unset)."""
    return f"(has({task}.name) ? {task}.name : '')"


def replicas_of(task: str) -> str:
    """A task's replicas as the webhook counts them (0 when unset)."""
    return or_default(task, "replicas", "0")
