"""The trainer family (``trainer.kubeflow.org/v1alpha1``, Kubeflow Trainer v2.3.0): TrainJob,
TrainingRuntime, ClusterTrainingRuntime — at admission only.

Defaults are Trainer's mutating webhook (each runtimePatch's ``time``) and its CRDs' structural
defaults, which the apiserver would apply (so ``jobgate default`` shows the stored object). Checks
are Trainer's three validating webhooks with every framework plugin's (checks.py), its CRDs' CEL rules
(cel_rules.py: offline there is no CRD), and the lower bounds Trainer added after v2.3.0 (#3805).
A TrainJob is judged against its runtime, read from the review's context (``context.runtimes``).
Where Trainer is known to be wrong, jobgate does what it intends (docs/families.md, Trainer).
"""

from __future__ import annotations

import jobgate.families.trainer.rules.cel_rules as cel_rules  # noqa: PLR0402 (the module, not its package)
import jobgate.families.trainer.rules.checks as checks  # noqa: PLR0402 (the module, not its package)
import jobgate.families.trainer.rules.crd_schema as crd_schema  # noqa: PLR0402 (the module, not its package)
import jobgate.families.trainer.rules.runtimes as rt
from jobgate.engine.context import CREATE
from jobgate.engine.findings import Findings
from jobgate.engine.jsonpatch import NO_PATCH
from jobgate.engine.modelref import ModelRef
from jobgate.engine.registry import GroupVersionKind, register
from jobgate.families.trainer import TRAINER_API_VERSION, TRAINER_GROUP
from jobgate.rules.dicts import copied_dict
from jobgate.rules.jobmeta import check_spec_schema

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from jobgate.engine.context import ReviewContext
    from jobgate.engine.jsonpatch import PatchRecorder


MODELS = "jobgate.families.trainer.models"
PRINTER_COLUMNS: tuple[dict[str, Any], ...] = (
    {"name": "State", "type": "string", "jsonPath": ".status.conditions[-1:].type"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
)


def _now() -> str:
    import datetime

    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _without_time(patch: Any) -> Any:
    return {k: v for k, v in patch.items() if k != "time"} if isinstance(patch, dict) else patch


class TrainJobKind:
    kind: str = "TrainJob"
    plural: str = "trainjobs"
    short_names: tuple[str, ...] = ()
    family: str = "trainer"
    spec_model: ModelRef = ModelRef(f"{MODELS}:TrainJobSpec")
    status_model: ModelRef = ModelRef(f"{MODELS}:TrainJobStatus")
    gvk: GroupVersionKind = GroupVersionKind(TRAINER_GROUP, TRAINER_API_VERSION, "TrainJob")
    printer_columns: tuple[dict[str, Any], ...] = PRINTER_COLUMNS

    def default(
        self, obj: dict[str, Any], recorder: PatchRecorder = NO_PATCH, previous: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        return self._defaulted(obj, recorder, previous, stamp=True)

    def _defaulted(
        self, obj: dict[str, Any], recorder: PatchRecorder, previous: dict[str, Any] | None, *, stamp: bool
    ) -> dict[str, Any]:
        """The CRD's defaults and, with ``stamp``, Trainer's defaulter's patch times."""
        spec_value = obj.get("spec")
        if not isinstance(spec_value, dict):
            return obj
        obj = dict(obj)
        spec = copied_dict(obj, "spec")
        assert spec is not None
        # The CRD's structural defaults, which the apiserver applies to every stored TrainJob.
        if spec.get("suspend") is None:
            recorder.set(spec, "suspend", False, "/spec")
        if spec.get("managedBy") is None:
            recorder.set(spec, "managedBy", checks.DEFAULT_MANAGER, "/spec")
        ref = copied_dict(spec, "runtimeRef")
        if ref is not None:
            if ref.get("apiGroup") is None:
                recorder.set(ref, "apiGroup", TRAINER_GROUP, "/spec/runtimeRef")
            if ref.get("kind") is None:
                recorder.set(ref, "kind", rt.CLUSTER_TRAINING_RUNTIME, "/spec/runtimeRef")
        initializer = copied_dict(spec, "initializer")
        if initializer is not None:
            for key in ("dataset", "model"):
                part = copied_dict(initializer, key)
                secret = copied_dict(part, "secretRef") if part is not None else None
                if secret is not None and secret.get("name") is None:
                    recorder.set(secret, "name", "", f"/spec/initializer/{key}/secretRef")
        if stamp:
            self._stamp_patches(spec, previous, recorder)
        return obj

    def _stamp_patches(self, spec: dict[str, Any], previous: dict[str, Any] | None, recorder: PatchRecorder) -> None:
        """Trainer's TrainJobDefaulter: a patch's ``time`` is when its manager last changed it."""
        patches = spec.get("runtimePatches")
        if not isinstance(patches, list):
            return
        old_spec = previous.get("spec") if isinstance(previous, dict) else None
        old_patches = old_spec.get("runtimePatches") if isinstance(old_spec, dict) else None
        old_by_manager = {
            p["manager"]: p
            for p in (old_patches if isinstance(old_patches, list) else [])
            if isinstance(p, dict) and isinstance(p.get("manager"), str)
        }
        now = None
        copied = list(patches)
        changed = False
        for index, patch in enumerate(copied):
            if not isinstance(patch, dict):
                continue
            manager = patch.get("manager")
            old = old_by_manager.get(manager) if previous is not None and isinstance(manager, str) else None
            if old is not None:
                if _without_time(old) == _without_time(patch):
                    wanted = old.get("time")  # the stored time, unset included (Trainer copies it as it is)
                else:
                    now = now or _now()
                    wanted = now
            elif patch.get("time") is None:
                now = now or _now()
                wanted = now
            else:
                continue
            if patch.get("time") != wanted or (wanted is None and "time" in patch):
                stamped = dict(patch)
                if not changed:
                    spec["runtimePatches"] = copied
                    changed = True
                copied[index] = stamped
                if wanted is None:
                    del stamped["time"]
                    recorder.remove(f"/spec/runtimePatches/{index}", "time")
                else:
                    recorder.set(stamped, "time", wanted, f"/spec/runtimePatches/{index}")

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None, context: ReviewContext) -> Findings:
        # The stored object as the apiserver stored it: its CRD's defaults in (a transition rule compares
        # two defaulted objects; a stored runtimeRef always has its apiGroup and kind).
        old = self._defaulted(old, NO_PATCH, None, stamp=False) if isinstance(old, dict) else None
        found = self._validate(obj, old, context)
        if old is not None and found.errors:
            found.errors = crd_schema.ratcheted(found.errors, obj, old)
        return found

    def _validate(self, obj: dict[str, Any], old: dict[str, Any] | None, context: ReviewContext) -> Findings:
        found = Findings()
        spec = check_spec_schema(obj, self.spec_model, found)
        if spec is None:
            return found
        found.errors += crd_schema.list_bound_errors(spec, self.spec_model, ("spec",))
        old_spec = old.get("spec") if isinstance(old, dict) and isinstance(old.get("spec"), dict) else None
        found.errors += crd_schema.trainjob_duplicate_keys(spec, old_spec)
        found.errors += cel_rules.trainjob_rules(obj, spec, old_spec)
        if spec.get("trainer", {}).get("numNodes") == 0 if isinstance(spec.get("trainer"), dict) else False:
            found.warnings.append("spec.trainer.numNodes is 0: the trainer job runs no pods")
        if not isinstance(spec.get("runtimeRef"), dict):
            return found
        unsupported = checks.unsupported_runtime(spec)
        if unsupported is not None:
            found.errors.append(unsupported)
            return found
        _group, kind, name = checks.ref_kind(spec)
        view = getattr(context, "runtimes", None)
        runtime = view.runtime(kind, _namespace(obj, context), name) if view is not None else None
        if runtime is None:
            hint = rt.OFFLINE_HINT if view is None else view.offline_hint
            found.errors.append(checks.runtime_not_found(spec, hint))
            return found
        if kind == rt.CLUSTER_TRAINING_RUNTIME:
            warning = checks.deprecated_warning(runtime, referenced=True)
            if warning is not None:
                found.warnings.append(warning)
        read_jobset = None
        if old_spec is not None and view is not None and hasattr(view, "jobset"):
            metadata = obj.get("metadata")
            job_name = metadata.get("name") if isinstance(metadata, dict) else None
            read_jobset = _jobset_reader(view, _namespace(obj, context), job_name if isinstance(job_name, str) else "")
        found.errors += judge_against_runtime(spec, old_spec, runtime, read_jobset, _priority_class_lookup(view))
        return found


def _priority_class_lookup(view: Any) -> checks.PriorityClassLookup | None:
    """The view's PriorityClass look-up for T24 (None: the view reads none)."""
    find = getattr(view, "priority_class", None)
    if find is None:
        return None
    hint = rt.PRIORITY_CLASS_HINT if view.offline_hint else ""
    return lambda name: None if find(name) is not None else hint


def judge_against_runtime(
    spec: dict[str, Any],
    old_spec: dict[str, Any] | None,
    runtime: Any,
    read_jobset: Any = None,
    priority_classes: checks.PriorityClassLookup | None = None,
) -> list[Any]:
    """Every plugin's check of the TrainJob against its runtime (Trainer's plugins run in map order; jobgate
    in a fixed one: the JobSet plugin, then torch, MPI, XGBoost, Flux and Volcano)."""
    jobs = rt.runtime_replicated_jobs(runtime)
    errors = checks.initializer_checks(spec, jobs)
    errors += checks.patches_while_running(spec, old_spec, read_jobset)
    errors += checks.patch_checks(spec, jobs)
    errors += checks.torch_checks(spec, runtime, jobs)
    errors += checks.mpi_checks(spec, runtime, jobs)
    errors += checks.xgboost_checks(spec, runtime)
    errors += checks.flux_checks(spec, runtime, jobs)
    errors += checks.volcano_checks(spec, runtime, priority_classes)
    return errors


def _jobset_reader(view: Any, namespace: str, name: str) -> Any:
    """Reads the TrainJob's JobSet only when a check needs it (the webhook's read is an API call)."""
    return lambda: view.jobset(namespace, name)


def _namespace(obj: dict[str, Any], context: ReviewContext) -> str:
    metadata = obj.get("metadata")
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    if isinstance(namespace, str) and namespace:
        return namespace
    return context.namespace or "default"


class RuntimeKind:
    """TrainingRuntime (namespaced) and ClusterTrainingRuntime (cluster-scoped): one shape."""

    family: str = "trainer"
    short_names: tuple[str, ...] = ()
    spec_model: ModelRef = ModelRef(f"{MODELS}:TrainingRuntimeSpec")
    status_model: ModelRef = ModelRef(f"{MODELS}:TrainingRuntimeStatus")
    printer_columns: tuple[dict[str, Any], ...] = (
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    )

    def __init__(self, kind: str, plural: str, namespaced: bool) -> None:
        self.kind = kind
        self.plural = plural
        self.namespaced = namespaced
        self.gvk = GroupVersionKind(TRAINER_GROUP, TRAINER_API_VERSION, kind)

    def default(
        self, obj: dict[str, Any], recorder: PatchRecorder = NO_PATCH, previous: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        spec_value = obj.get("spec")
        if not isinstance(spec_value, dict):
            return obj
        obj = dict(obj)
        spec = copied_dict(obj, "spec")
        assert spec is not None
        cel_rules.runtime_defaults(spec, recorder)
        return obj

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None, context: ReviewContext) -> Findings:
        found = Findings()
        spec = check_spec_schema(obj, self.spec_model, found)
        if spec is None:
            return found
        found.errors += crd_schema.list_bound_errors(spec, self.spec_model, ("spec",))
        old_spec = old.get("spec") if isinstance(old, dict) and isinstance(old.get("spec"), dict) else None
        found.errors += crd_schema.runtime_duplicate_keys(spec, old_spec)
        found.errors += crd_schema.pod_template_type_errors(spec)
        found.errors += cel_rules.runtime_rules(spec, old_spec)
        if old is not None and found.errors:
            # What the CRDs check is ratcheted against the stored runtime (the engine gives it defaulted).
            found.errors = crd_schema.ratcheted(found.errors, obj, old)
        if checks.labels_of(obj).get(rt.WEBHOOK_VALIDATION_LABEL) == "disabled":
            return found  # Trainer's webhook configurations select such runtimes out (objectSelector)
        if self.kind == rt.CLUSTER_TRAINING_RUNTIME and context.operation == CREATE:
            warning = checks.deprecated_warning(obj, referenced=False)
            if warning is not None:
                found.warnings.append(warning)
        # On CREATE and UPDATE for both kinds: Trainer v2.3.0 skips a TrainingRuntime's UPDATE (#3686).
        found.errors += checks.replicated_job_checks(obj)
        return found


TRAINJOB = register(TrainJobKind())
TRAINING_RUNTIME = register(RuntimeKind(rt.TRAINING_RUNTIME, "trainingruntimes", namespaced=True))
CLUSTER_TRAINING_RUNTIME = register(
    RuntimeKind(rt.CLUSTER_TRAINING_RUNTIME, "clustertrainingruntimes", namespaced=False)
)
KINDS = (TRAINJOB, TRAINING_RUNTIME, CLUSTER_TRAINING_RUNTIME)
