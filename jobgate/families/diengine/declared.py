"""DIJob's defaults and bounds as declarations (``jobgate/forms/``): ``dijob_types.go``'s
defaults, the task names DI-orchestrator writes back, and the bounds of its lists.

``jobgate manifests generate`` compiles them to the calls ``rules.py`` makes
(``jobgate/_generated/declared/diengine.py``), to the CRD's schema keywords and defaults and the
MutatingAdmissionPolicy (``cel.py`` lists them), and to the catalogue's records.
"""

from __future__ import annotations

from jobgate.families.diengine.rules import (
    DEFAULT_BACKOFF_LIMIT,
    DEFAULT_CLEAN_POD_POLICY,
    DEFAULT_PRIORITY,
    MAX_SHARED_VOLUMES,
    MAX_TASKS,
    SINGLETON_TASK_TYPES,
    UNTYPED_TASK,
)
from jobgate.forms.base import Declaration
from jobgate.forms.defaults import DefaultField, DefaultItemField
from jobgate.forms.entries import NamedEntries
from jobgate.forms.roles import MaxItems

TASKS = "spec.tasks"

DIJOB: tuple[Declaration, ...] = (
    # DI-orchestrator's Go type reads an empty string as unset.
    DefaultField("dijob/priority", "spec.priority", DEFAULT_PRIORITY, empty_is_unset=True),
    DefaultField("dijob/clean-pod-policy", "spec.cleanPodPolicy", DEFAULT_CLEAN_POD_POLICY, empty_is_unset=True),
    DefaultField("dijob/preemptible", "spec.preemptible", False),
    DefaultField("dijob/backoff-limit", "spec.backoffLimit", DEFAULT_BACKOFF_LIMIT),
    DefaultItemField("replicas/count", TASKS, "replicas", 1, entry="task"),
    DefaultItemField("dijob/task-type", TASKS, "type", UNTYPED_TASK, empty_is_unset=True, entry="task"),
    # DI-orchestrator names an unnamed typed task after its type (and writes it back to the spec).
    DefaultItemField(
        "dijob/task-name",
        TASKS,
        "name",
        SINGLETON_TASK_TYPES,
        empty_is_unset=True,
        entry="task",
        from_field="type",
        summary="an unnamed task of type " + ", ".join(SINGLETON_TASK_TYPES) + " is named after its type",
    ),
    MaxItems(
        "dijob/bounds",
        ((TASKS, MAX_TASKS), ("spec.volumes", MAX_SHARED_VOLUMES)),
        summary=f"at most {MAX_TASKS} tasks and {MAX_SHARED_VOLUMES} shared volumes",
        why="bounds the CEL cost estimator needs; no real job comes near them (the webhook checks them too)",
    ),
    NamedEntries(
        (
            "at most one task of each of the types " + ", ".join(SINGLETON_TASK_TYPES),
            "an untyped task has a name (a typed one is named after its type)",
            "a task's name is a DNS-1123 label",
            "task names unique in the job",
        ),
        TASKS,
        "name",
        required_id="dijob/task-name-required",
        unnamed="none type task has no name",
        label_id="dijob/task-name",
        unique_id="dijob/task-names-unique",
        type="type",
        untyped=UNTYPED_TASK,
        singletons=SINGLETON_TASK_TYPES,
        singleton_id="dijob/one-task-per-type",
        # DI-orchestrator's own sentence, with the task it collides with.
        singleton="the number of {type} task is more than one",
        first=" (tasks[{first}] is one)",
    ),
)


# Each kind's declarations, by its name (the family record's ``declared``: the generators compile them).
DECLARED = {"DIJob": DIJOB}
