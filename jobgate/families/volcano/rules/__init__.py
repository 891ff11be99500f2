"""The Volcano family (``batch.volcano.sh/v1alpha1`` Job): the kind, registered on import.

Defaults are those of Volcano's mutating webhook and CRD; the rules are those of its
validating webhook (``pkg/webhooks/admission/jobs``), with Volcano's own sentences inside
apiserver-style field errors so its users recognise them. Unlike Volcano, every violation
is reported at once, on CREATE and on UPDATE, and half-written input never crashes.

Volcano's webhook is larger than the other families' adapters, so its parts are modules here:

- ``defaults``: the mutating webhook's defaults;
- ``job``: ``validate_job``, the CREATE rules of the job, its tasks, names, volumes and DAG;
- ``update``: what an UPDATE may change;
- ``tasks``: the task list as the rules read it, and the rules CREATE and UPDATE share
  (partition policy, network topology);
- ``policies``: lifecycle policies (events, actions, exit codes);
- ``plugins``: job plugins and the MPI master task;
- ``resources``: NUMA CPUs and pod-level resources of a task's template;
- ``queue_check``: the job's Queue (exists, is Open, is a leaf), read from the review's context;
- ``bounds``: the bounds of lists and strings (and the types in pod templates) that the CRD
  declares for its CEL rules (``jobgate/families/volcano/cel``), checked here too.
"""

from __future__ import annotations

from jobgate.api.constants import VOLCANO_GROUP, VOLCANO_VERSION
from jobgate.engine.findings import Findings
from jobgate.engine.jsonpatch import NO_PATCH, PatchRecorder
from jobgate.engine.modelref import ModelRef
from jobgate.engine.registry import GroupVersionKind, register
from jobgate.families.volcano.rules.defaults import default_job
from jobgate.families.volcano.rules.job import validate_job

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any

    from jobgate.engine.context import ReviewContext

# Models are named, not imported: see jobgate/engine/modelref.py.
VOLCANO_JOB_SPEC_MODEL = ModelRef("jobgate.families.volcano.models:VolcanoJobSpec")
VOLCANO_JOB_STATUS_MODEL = ModelRef("jobgate.families.volcano.models:VolcanoJobStatus")

PRINTER_COLUMNS: tuple[dict[str, str], ...] = (
    {"name": "STATUS", "type": "string", "jsonPath": ".status.state.phase", "description": "Phase of the job."},
    {"name": "MINAVAILABLE", "type": "integer", "jsonPath": ".status.minAvailable", "description": "minAvailable."},
    {"name": "RUNNINGS", "type": "integer", "jsonPath": ".status.running", "description": "Running pods."},
    {"name": "AGE", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    {"name": "QUEUE", "type": "string", "jsonPath": ".spec.queue", "priority": 1},  # type: ignore[dict-item]
)


class VolcanoJobKind:
    # Not a dataclass: importing ``dataclasses`` costs a one-file ``jobgate validate`` more
    # than the rules it runs. One instance, registered below: its fields are class-level.
    kind: str = "Job"
    plural: str = "jobs"
    short_names: tuple[str, ...] = ("vcjob", "vj")
    family: str = "volcano"
    spec_model: ModelRef = VOLCANO_JOB_SPEC_MODEL
    status_model: ModelRef = VOLCANO_JOB_STATUS_MODEL
    gvk: GroupVersionKind = GroupVersionKind(VOLCANO_GROUP, VOLCANO_VERSION, "Job")
    printer_columns: tuple[dict[str, str], ...] = PRINTER_COLUMNS

    def default(
        self, obj: dict[str, Any], recorder: PatchRecorder = NO_PATCH, previous: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        return default_job(obj, recorder)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None, context: ReviewContext) -> Findings:
        return validate_job(obj, old, self.spec_model, context)


VOLCANO_JOB = register(VolcanoJobKind())
KINDS = (VOLCANO_JOB,)
