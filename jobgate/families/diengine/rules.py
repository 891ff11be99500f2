"""The DI-engine family (``diengine.opendilab.org/v2alpha1``): DIJob of opendilab's DI-orchestrator.

DI-orchestrator has no admission webhook: it validates inside its reconciler (a bad job is
stored, then marked Failed) and writes the missing task names back into the user's spec.
Here both happen at admission: the defaults of ``dijob_types.go`` and the task names are
filled by /mutate, and /validate refuses what the reconciler would fail, with every
violation at once. Validation runs on the defaulted task names and types.
"""

from __future__ import annotations

from jobgate._generated.declared import diengine as declared_rules
from jobgate.api.constants import DIENGINE_GROUP, DIENGINE_VERSION
from jobgate.engine.fielderrors import FieldError, FieldPath
from jobgate.engine.findings import Findings
from jobgate.engine.jsonpatch import NO_PATCH, PatchRecorder
from jobgate.engine.modelref import ModelRef
from jobgate.engine.registry import GroupVersionKind, register
from jobgate.rules.dicts import as_int
from jobgate.rules.jobmeta import check_job_name, check_spec_schema
from jobgate.rules.names import is_dns1123_label
from jobgate.rules.podtemplate import BOUNDS as POD_TEMPLATE_BOUNDS
from jobgate.rules.podtemplate import VOLUME_NAMES_UNIQUE, VOLUMES, check_pod_template, volume_errors

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any

    from jobgate.engine.context import ReviewContext

DEFAULT_PRIORITY = "normal"
DEFAULT_CLEAN_POD_POLICY = "Running"
DEFAULT_BACKOFF_LIMIT = 3
UNTYPED_TASK = "none"
SINGLETON_TASK_TYPES = ("learner", "collector", "evaluator")
# The controller creates every pod with restartPolicy Never and restarts replicas itself.
CONTROLLER_POD_RESTART_POLICY = "Never"
# The longest lists of tasks and of shared volumes. DI-orchestrator sets none, but the CRD's CEL
# rules (jobgate/families/diengine/cel.py) need bounds for the apiserver's cost estimate; no real
# job comes near these, and a longer list is refused here as the apiserver does, so that both agree.
MAX_TASKS = 16
# The ids of DIJob's rules of its shared volumes (jobgate/families/diengine/cel.py), which their errors carry.
TASK_VOLUMES_BOUND = "dijob/pod-volumes-bound"
SHARED_VOLUMES = "dijob/shared-volumes"
SHARED_VOLUME_NAMES_UNIQUE = "dijob/shared-volume-names-unique"
BOUNDS = "dijob/bounds"
# A pod template's volume rule whose error, once it points at a shared volume, is the shared volumes' rule.
_SHARED_RULES = {
    VOLUMES: SHARED_VOLUMES,
    VOLUME_NAMES_UNIQUE: SHARED_VOLUME_NAMES_UNIQUE,
    POD_TEMPLATE_BOUNDS: BOUNDS,
}
MAX_SHARED_VOLUMES = 16


# Models are named, not imported: see jobgate/engine/modelref.py.
DIJOB_SPEC_MODEL = ModelRef("jobgate.families.diengine.models:DIJobSpec")
DIJOB_STATUS_MODEL = ModelRef("jobgate.families.diengine.models:DIJobStatus")


class DIJobKind:
    # Not a dataclass: importing ``dataclasses`` costs a one-file ``jobgate validate`` more
    # than the rules it runs. One instance, registered below: its fields are class-level.
    kind: str = "DIJob"
    plural: str = "dijobs"
    short_names: tuple[str, ...] = ("dijob", "dij")
    # DI-orchestrator's own columns.
    printer_columns: tuple[dict[str, str], ...] = (
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase", "description": "DI-orchestrator phase."},
        {
            "name": "ReadyReplicas",
            "type": "integer",
            "jsonPath": ".status.readyReplicas",
            "description": "Ready containers of the job's pods.",
        },
        {"name": "Replicas", "type": "integer", "jsonPath": ".status.replicas", "description": "Pods of the job."},
        {"name": "Restarts", "type": "integer", "jsonPath": ".status.restarts", "description": "Restarts so far."},
        {
            "name": "Reschedules",
            "type": "integer",
            "jsonPath": ".status.reschedules",
            "description": "Reschedules so far.",
        },
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    )
    family: str = "diengine"
    spec_model: ModelRef = DIJOB_SPEC_MODEL
    status_model: ModelRef = DIJOB_STATUS_MODEL
    gvk: GroupVersionKind = GroupVersionKind(DIENGINE_GROUP, DIENGINE_VERSION, "DIJob")

    def default(
        self, obj: dict[str, Any], recorder: PatchRecorder = NO_PATCH, previous: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        if not isinstance(obj, dict) or not isinstance(obj.get("spec"), dict):
            return obj
        # dijob_types.go's defaults and the task names, declared in declared.py.
        return declared_rules.default_dijob_diengine_opendilab_org(obj, recorder)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None, context: ReviewContext) -> Findings:
        found = Findings()
        spec = check_spec_schema(obj, self.spec_model, found)
        tasks = spec.get("tasks") if spec is not None else None
        entries = [(i, t) for i, t in enumerate(tasks) if isinstance(t, dict)] if isinstance(tasks, list) else []
        shared_volumes = spec.get("volumes") if spec is not None else None
        base: FieldPath = ("spec", "tasks")
        # The lists' bounds, then each task's type and name, declared in declared.py.
        found.errors.extend(declared_rules.validate_dijob_diengine_opendilab_org(obj, old))
        counts: dict[str, int] = {}
        template_errors: dict[str, FieldError] = {}
        for index, task in entries:
            path = (*base, index)
            task_found = check_pod_template(
                _with_shared_volumes(task.get("template"), shared_volumes),
                (*path, "template"),
                where=f"tasks[{index}]",
                replica_restart_policy=CONTROLLER_POD_RESTART_POLICY,
            )
            for error in _attribute_shared_volumes(task_found.errors, (*path, "template"), task.get("template")):
                template_errors.setdefault(str(error), error)  # spec.volumes errors once, not once per task
            found.warnings.extend(task_found.warnings)

            # The pods of a task that names itself (a label, first of its name) are named after it.
            name = task.get("name")
            if isinstance(name, str) and is_dns1123_label(name) and name not in counts:
                count = as_int(task.get("replicas"))
                counts[name] = 1 if count is None else count
        # The shared volumes on their own too: a job whose tasks have no pod spec to carry them
        # (reported there already, then) still has them checked, as the CRD's schema does.
        for error in volume_errors(shared_volumes, ("spec", "volumes")) if isinstance(shared_volumes, list) else ():
            template_errors.setdefault(str(error), _as_shared(error))
        found.errors[:0] = check_job_name(obj, counts.items())
        found.errors.extend(template_errors.values())
        return found


def _as_shared(error: FieldError) -> FieldError:
    """An error of the pod template's volume rules about a shared volume, as the shared volumes' rule's."""
    rule = _SHARED_RULES.get(error.rule)
    return error if rule is None else FieldError(error.type, error.path, error.value, error.detail, rule)


def _with_shared_volumes(template: Any, shared_volumes: Any) -> Any:
    """The template as the pods get it: ``spec.volumes`` appended to the pod's volumes."""
    if not isinstance(shared_volumes, list) or not shared_volumes or not isinstance(template, dict):
        return template
    pod_spec = template.get("spec")
    if not isinstance(pod_spec, dict):
        return template
    own = pod_spec.get("volumes")
    if own is not None and not isinstance(own, list):
        return template
    return {**template, "spec": {**pod_spec, "volumes": [*(own or []), *shared_volumes]}}


def _attribute_shared_volumes(errors: list[FieldError], template_path: FieldPath, template: Any) -> list[FieldError]:
    """Errors about appended volumes point at ``spec.volumes[i]``, not past the pod's own list."""
    pod_spec = template.get("spec") if isinstance(template, dict) else None
    own = pod_spec.get("volumes") if isinstance(pod_spec, dict) else None
    own_count = len(own) if isinstance(own, list) else 0
    volumes_path = (*template_path, "spec", "volumes")
    depth = len(volumes_path)
    attributed = []
    for error in errors:
        path = error.path
        if error.rule == POD_TEMPLATE_BOUNDS and path == volumes_path:
            # Too many volumes in a task's pod: DIJob's own bound (its pods carry the shared ones too).
            attributed.append(FieldError(error.type, path, error.value, error.detail, TASK_VOLUMES_BOUND))
            continue
        position = path[depth] if path[:depth] == volumes_path and len(path) > depth else None
        if isinstance(position, int) and position >= own_count:
            shared_path = ("spec", "volumes", position - own_count, *path[depth + 1 :])
            attributed.append(_as_shared(FieldError(error.type, shared_path, error.value, error.detail, error.rule)))
            continue
        attributed.append(error)
    return attributed


DIJOB = register(DIJobKind())
KINDS = (DIJOB,)
