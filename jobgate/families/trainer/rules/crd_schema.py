"""What Trainer's CRDs check beyond the engine's schema check, and the apiserver's ratcheting of both.

The engine's check (``check_spec_schema``) reads types, enums, ranges and required fields from the
models; a runtime's ``spec.template.spec`` is JobSet v0.12.0's ``JobSetSpec`` there, taken from the jobset
family's models, and a TrainJob's ``runtimePatches`` are Trainer's patch types. Four things the apiserver
does with Trainer's CRDs are added here:

- ``maxItems`` (the engine reads no list bound): ``runtimePatches`` ≤ 16, a template's ``dependsOn`` ≤ 5,
  ``volumeClaimPolicies`` ≤ 50, a patch's containers ≤ 64, ...; read from the same structural schema.
- list-map keys (``x-kubernetes-list-type: map``): a runtime's replicated jobs, their ``dependsOn`` and
  their pod templates' containers, volumes, ...; a TrainJob's runtimePatches (by manager), their
  replicated jobs, containers, ..., and env: an item with the keys of an earlier one is refused.
- the core/v1 types of a runtime's pod templates, which jobgate's models keep whole: the type errors
  of jobgate's pod-template check.
- ratcheting on UPDATE (CRDValidationRatcheting, on by default since Kubernetes 1.30): an error of the
  CRD's schema or of a CEL rule without ``oldSelf`` is dropped when the value it is found in is unchanged
  from the stored object, reached from the root through object fields and the keys of list-maps (an
  atomic list's items are compared only as the whole list).
"""

from __future__ import annotations

import jobgate.rules.crd_lists as crd_lists  # noqa: PLR0402 (the module, not its package)
from jobgate.engine.schema import SCHEMA_ENUMS, SCHEMA_RANGES, SCHEMA_REQUIRED, SCHEMA_TYPES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from jobgate.engine.fielderrors import FieldError, FieldPath
    from jobgate.engine.modelref import ModelRef

LIST_BOUNDS = "trainer/list-bounds"
LIST_MAP_KEYS_RULE = "trainer/list-map-keys"

# Where a runtime's spec holds list-maps whose items may repeat keys: its JobSet template (pod templates
# included); mlPolicy's targets are checked by the envInjection rules.
RUNTIME_LIST_MAPS: crd_lists.ListMaps = {"template": {"spec": crd_lists.JOBSET_SPEC_LIST_MAPS}}
_BY_NAME = ("name",)
_PATCH_CONTAINER: crd_lists.ListMaps = {"env": crd_lists.ListMap(_BY_NAME), "volumeMounts": crd_lists.ListMap(_BY_NAME)}
# A patch's pod spec is Trainer's own type, keyed by Trainer's CRD (volume mounts by name, not mountPath).
_PATCH_POD_SPEC: crd_lists.ListMaps = {
    "containers": crd_lists.ListMap(_BY_NAME, _PATCH_CONTAINER),
    "initContainers": crd_lists.ListMap(_BY_NAME, _PATCH_CONTAINER),
    "imagePullSecrets": crd_lists.ListMap(_BY_NAME),
    "schedulingGates": crd_lists.ListMap(_BY_NAME),
    "volumes": crd_lists.ListMap(_BY_NAME),
}
_PATCH_JOBS = crd_lists.ListMap(_BY_NAME, {"template": {"spec": {"template": {"spec": _PATCH_POD_SPEC}}}})
TRAINJOB_LIST_MAPS: crd_lists.ListMaps = {
    "runtimePatches": crd_lists.ListMap(
        ("manager",), {"trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": _PATCH_JOBS}}}}
    ),
    "trainer": {"env": crd_lists.ListMap(_BY_NAME), "resourcesPerNode": {"claims": crd_lists.ListMap(_BY_NAME)}},
    "initializer": {"dataset": {"env": crd_lists.ListMap(_BY_NAME)}, "model": {"env": crd_lists.ListMap(_BY_NAME)}},
}

# The rules whose errors the apiserver ratchets: the CRDs' structural schema (types, enums, ranges,
# required fields, lengths, list bounds) and the CEL rules that do not read oldSelf. Webhook errors
# are not ratcheted (a webhook sees every request whole).
RATCHETED_RULES = frozenset(
    (
        SCHEMA_TYPES,
        SCHEMA_ENUMS,
        SCHEMA_RANGES,
        SCHEMA_REQUIRED,
        LIST_BOUNDS,
        "trainer/lengths",
        "trainer/jobset-rules",
        "trainer/ml-policy-one",
        "trainer/env-injection-node",
    )
)

# The list-maps of Trainer's CRDs (x-kubernetes-list-type: map) whose items jobgate's models type, by
# the list's field name: their keys. Any other list is atomic for ratcheting.
LIST_MAP_KEYS: dict[str, tuple[str, ...]] = {
    "runtimePatches": ("manager",),
    "replicatedJobs": ("name",),
    "dependsOn": ("name",),
    "containers": ("name",),
    "initContainers": ("name",),
    "volumes": ("name",),
    "imagePullSecrets": ("name",),
    "schedulingGates": ("name",),
    "env": ("name",),
    "volumeMounts": ("name",),
    "targets": ("jobName",),
}


def list_bound_errors(value: Any, model: ModelRef, path: FieldPath) -> list[FieldError]:
    """Every list under ``value`` (checked against ``model``'s schema at ``path``) longer than its maxItems,
    as the apiserver reports it: ``<path>: Too many: <n>: must have at most <max> items``."""
    return crd_lists.list_bound_errors(value, model, path, LIST_BOUNDS)


def runtime_duplicate_keys(spec: Any, old_spec: Any) -> list[FieldError]:
    """A runtime's list-map items whose keys an earlier item has (``Duplicate value: {"name":"node"}``); on
    UPDATE only when the stored runtime has none, as the apiserver checks them."""
    return _duplicate_keys(RUNTIME_LIST_MAPS, spec, old_spec)


def trainjob_duplicate_keys(spec: Any, old_spec: Any) -> list[FieldError]:
    """A TrainJob's list-map items whose keys an earlier item has (two runtimePatches of one manager, ...)."""
    return _duplicate_keys(TRAINJOB_LIST_MAPS, spec, old_spec)


def _duplicate_keys(tree: crd_lists.ListMaps, spec: Any, old_spec: Any) -> list[FieldError]:
    errors = crd_lists.duplicate_key_errors(spec, tree, ("spec",), LIST_MAP_KEYS_RULE)
    if errors and old_spec is not None:
        stored = crd_lists.duplicate_key_errors(old_spec, tree, ("spec",), LIST_MAP_KEYS_RULE)
        errors = crd_lists.duplicate_keys_ratcheted(errors, LIST_MAP_KEYS_RULE, bool(stored))
    return errors


def pod_template_type_errors(spec: Any) -> list[FieldError]:
    """The core/v1 values of a runtime's pod templates (``spec.template.spec.replicatedJobs[*].template.spec
    .template``) of the wrong type, as the CRD types them (it carries JobSet's schema, core/v1 included):
    jobgate's pod-template check (the JobSet family's), its type errors only. Its other rules are what the
    apiserver refuses when a Job creates the pods, which Trainer's CRDs do not check of a runtime."""
    from jobgate.engine.findings import Findings
    from jobgate.families.jobset.shape import as_dict, job_spec, replicated_jobs
    from jobgate.rules.podtemplate import check_pod_template

    template_spec = as_dict(as_dict(as_dict(spec).get("template")).get("spec"))
    errors: list[FieldError] = []
    for index, job in enumerate(replicated_jobs(template_spec)):
        pod = job_spec(job).get("template")
        if pod is None:
            continue
        path = ("spec", "template", "spec", "replicatedJobs", index, "template", "spec", "template")
        found = check_pod_template(pod, path, where="", replica_restart_policy=None, found=Findings())
        errors += [e for e in found.errors if e.rule == SCHEMA_TYPES]
    return errors


def ratcheted(errors: Iterable[FieldError], new: Any, old: Any) -> list[FieldError]:
    """``errors`` of an UPDATE without those the apiserver ratchets (see the module's docstring)."""
    return crd_lists.ratcheted(errors, new, old, RATCHETED_RULES, LIST_MAP_KEYS)
