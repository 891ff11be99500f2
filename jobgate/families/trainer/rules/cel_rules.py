"""The rules Kubeflow Trainer's CRDs enforce (CEL ``x-kubernetes-validations``, and the schema keywords
that are no type or bound of the models), checked by jobgate's webhook and by ``jobgate validate``,
which has no CRD to lean on. Each error is the apiserver's: the field the rule sits on, ``Invalid
value`` with the schema type of the value (``"object"``, ``"string"``), the rule's message.

Also the structural defaults of the runtimes' CRD (mlPolicy.mpi, flux, coscheduling, the JobSet
template's replicated jobs), which the apiserver applies on storing.
"""

from __future__ import annotations

import jobgate.families.trainer.rules.runtimes as rt
from jobgate.engine.fielderrors import FieldError, FieldPath, invalid, render_path, too_long
from jobgate.rules.names import matches_dns1035_label

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from jobgate.engine.jsonpatch import PatchRecorder

IMMUTABLE = "field is immutable"
# The CRD's storageUri pattern, as text: re is imported by the first storageUri to check (a one-file
# check of a TrainJob without one imports no re). Its name's pattern, ``^[a-z]([-a-z0-9]*[a-z0-9])?$``,
# is answered by matches_dns1035_label.
STORAGE_URI = r"^[A-Za-z][A-Za-z0-9+.-]*://.+$"
MANAGERS = ("trainer.kubeflow.org/trainjob-controller", "kueue.x-k8s.io/multikueue")
# The patch's pod-spec fields whose CEL says ``self == oldSelf``.
PATCH_IMMUTABLE = (
    "serviceAccountName",
    "volumes",
    "initContainers",
    "containers",
    "imagePullSecrets",
    "securityContext",
    "terminationGracePeriodSeconds",
)


def schema_type(value: Any) -> str:
    """The OpenAPI type the apiserver names in a CEL rule's error."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string"


def cel_error(path: FieldPath, value: Any, message: str, rule: str) -> FieldError:
    return invalid(path, schema_type(value), message, rule=rule)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _by_key(items: Any, key: str) -> dict[str, dict[str, Any]]:
    """List items by their string key; an item whose key is not a string matches nothing (the schema refuses it)."""
    return {item[key]: item for item in _list(items) if isinstance(item, dict) and isinstance(item.get(key), str)}


def _matching(index: dict[str, dict[str, Any]], item: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = item.get(key)
    return index.get(value) if isinstance(value, str) else None


def _transition(path: FieldPath, new: Any, old: Any, rule: str, message: str = IMMUTABLE) -> list[FieldError]:
    """``self == oldSelf``: only a value set before and after is compared."""
    if new is None or old is None or new == old:
        return []
    return [cel_error(path, new, message, rule)]


# --- TrainJob ------------------------------------------------------------------------------------


def _is_storage_uri(uri: str) -> bool:
    import re  # here: only a TrainJob with a storageUri needs it

    return re.match(STORAGE_URI, uri) is not None


def trainjob_rules(obj: dict[str, Any], spec: dict[str, Any], old_spec: dict[str, Any] | None) -> list[FieldError]:
    errors: list[FieldError] = []
    name = _dict(obj.get("metadata")).get("name")
    if isinstance(name, str) and name:
        # On the object's root: the apiserver names no field; jobgate names the one the rule reads.
        if not matches_dns1035_label(name):
            errors.append(
                invalid(
                    ("metadata", "name"),
                    name,
                    "metadata.name must match RFC 1035 DNS label format",
                    rule="trainer/name",
                )
            )
        if len(name) > 63:
            errors.append(
                invalid(
                    ("metadata", "name"), name, "metadata.name must be no more than 63 characters", rule="trainer/name"
                )
            )
    manager = spec.get("managedBy")
    if isinstance(manager, str) and manager not in MANAGERS:
        errors.append(
            cel_error(
                ("spec", "managedBy"),
                manager,
                "ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set",
                "trainer/managed-by",
            )
        )
    initializer = _dict(spec.get("initializer"))
    for key in ("dataset", "model"):
        uri = _dict(initializer.get(key)).get("storageUri")
        if isinstance(uri, str) and uri and not _is_storage_uri(uri):
            errors.append(
                cel_error(
                    ("spec", "initializer", key, "storageUri"),
                    uri,
                    "storageUri may be empty, or it must be a valid URI (scheme://...)",
                    "trainer/storage-uri",
                )
            )
    errors += lower_bounds(spec)
    errors += trainjob_lengths(spec)
    if old_spec is not None:
        for field in ("runtimeRef", "initializer", "trainer", "activeDeadlineSeconds", "managedBy"):
            errors += _transition(("spec", field), spec.get(field), old_spec.get(field), "trainer/immutable")
        errors += patch_immutability(spec, old_spec)
    return errors


def lower_bounds(spec: dict[str, Any]) -> list[FieldError]:
    """Trainer's bounds after v2.3.0 (kubeflow/trainer#3805, PR #3809): numNodes ≥ 0 (schema),
    numProcPerNode ≥ 1 (CEL). Without them v2.3.0 admits a job its controller cannot run."""
    trainer = _dict(spec.get("trainer"))
    errors: list[FieldError] = []
    nodes = trainer.get("numNodes")
    if isinstance(nodes, int) and not isinstance(nodes, bool) and nodes < 0:
        errors.append(
            invalid(
                ("spec", "trainer", "numNodes"), nodes, "must be greater than or equal to 0", rule="trainer/num-nodes"
            )
        )
    procs = trainer.get("numProcPerNode")
    if isinstance(procs, int) and not isinstance(procs, bool) and procs < 1:
        errors.append(
            cel_error(
                ("spec", "trainer", "numProcPerNode"),
                procs,
                "numProcPerNode must be greater than or equal to 1",
                "trainer/num-proc-per-node",
            )
        )
    return errors


def patch_immutability(spec: dict[str, Any], old_spec: dict[str, Any]) -> list[FieldError]:
    """The patches' pod-spec fields that never change (CEL on each, correlated by manager and job name)."""
    errors: list[FieldError] = []
    old_patches = _by_key(old_spec.get("runtimePatches"), "manager")
    for i, patch in enumerate(_list(spec.get("runtimePatches"))):
        old_patch = _matching(old_patches, patch, "manager") if isinstance(patch, dict) else None
        if old_patch is None:
            continue

        def jobs_of(p: dict[str, Any]) -> Any:
            return _dict(_dict(_dict(p.get("trainingRuntimeSpec")).get("template")).get("spec")).get("replicatedJobs")

        old_jobs = _by_key(jobs_of(old_patch), "name")
        for j, rjob in enumerate(_list(jobs_of(patch))):
            old_job = _matching(old_jobs, rjob, "name") if isinstance(rjob, dict) else None
            if old_job is None:
                continue
            new_pod = rt.pod_spec(rjob)
            old_pod = rt.pod_spec(old_job)
            base: FieldPath = (
                "spec", "runtimePatches", i, "trainingRuntimeSpec", "template", "spec", "replicatedJobs", j,
                "template", "spec", "template", "spec",
            )  # fmt: skip
            for field in PATCH_IMMUTABLE:
                errors += _transition((*base, field), new_pod.get(field), old_pod.get(field), "trainer/patch-immutable")
    return errors


LENGTH_RULE = "trainer/lengths"


def _length(path: FieldPath, value: Any, limit: int, least: int = 0) -> list[FieldError]:
    """The CRD's maxLength (and minLength) of one string, in the apiserver's words."""
    if not isinstance(value, str):
        return []
    if len(value.encode()) > limit:
        return [_too_long(path, limit)]
    if len(value) < least:
        field = render_path(path)
        return [invalid(path, value, f"{field} in body should be at least {least} chars long", rule=LENGTH_RULE)]
    return []


def _too_long(path: FieldPath, limit: int) -> FieldError:
    error = too_long(path, limit)
    return FieldError(error.type, error.path, detail=error.detail, rule=LENGTH_RULE)


def trainjob_lengths(spec: dict[str, Any]) -> list[FieldError]:
    """The TrainJob CRD's string lengths (the engine's schema check reads types and bounds, not lengths)."""
    errors: list[FieldError] = []
    ref = _dict(spec.get("runtimeRef"))
    errors += _length(("spec", "runtimeRef", "name"), ref.get("name"), 253, least=1)
    errors += _length(("spec", "runtimeRef", "apiGroup"), ref.get("apiGroup"), 253)
    errors += _length(("spec", "runtimeRef", "kind"), ref.get("kind"), 253)
    errors += _length(("spec", "managedBy"), spec.get("managedBy"), 253)
    initializer = _dict(spec.get("initializer"))
    for key in ("dataset", "model"):
        errors += _length(
            ("spec", "initializer", key, "storageUri"), _dict(initializer.get(key)).get("storageUri"), 2048
        )
    trainer = _dict(spec.get("trainer"))
    errors += _length(("spec", "trainer", "image"), trainer.get("image"), 500)
    for field in ("command", "args"):
        for i, item in enumerate(_list(trainer.get(field))):
            errors += _length(("spec", "trainer", field, i), item, 1048576)
    for i, patch in enumerate(_list(spec.get("runtimePatches"))):
        errors += _length(("spec", "runtimePatches", i, "manager"), _dict(patch).get("manager"), 253, least=1)
        jobs_path: FieldPath = (
            "spec", "runtimePatches", i, "trainingRuntimeSpec", "template", "spec", "replicatedJobs",
        )  # fmt: skip
        jobs = _dict(_dict(_dict(_dict(patch).get("trainingRuntimeSpec")).get("template")).get("spec"))
        for j, rjob in enumerate(_list(jobs.get("replicatedJobs"))):
            errors += _length((*jobs_path, j, "name"), _dict(rjob).get("name"), 253, least=1)
            pod_path: FieldPath = (*jobs_path, j, "template", "spec", "template", "spec")
            pod = rt.pod_spec(_dict(rjob))
            errors += _length((*pod_path, "serviceAccountName"), pod.get("serviceAccountName"), 253)
            for field in ("initContainers", "containers"):
                for k, container in enumerate(_list(pod.get(field))):
                    errors += _length((*pod_path, field, k, "name"), _dict(container).get("name"), 253, least=1)
    return errors


# --- TrainingRuntime, ClusterTrainingRuntime -------------------------------------------------------


def runtime_rules(spec: dict[str, Any], old_spec: dict[str, Any] | None) -> list[FieldError]:
    errors: list[FieldError] = []
    if not spec:
        errors.append(invalid(("spec",), 0, "must have at least 1 properties", rule="trainer/runtime-template"))
    template = spec.get("template")
    if isinstance(template, dict) and not template:
        errors.append(
            invalid(("spec", "template"), 0, "must have at least 1 properties", rule="trainer/runtime-template")
        )
    policy = spec.get("mlPolicy")
    if isinstance(policy, dict):
        if sum(1 for key in ("torch", "mpi", "jax", "xgboost", "flux") if key in policy) > 1:
            errors.append(
                cel_error(
                    ("spec", "mlPolicy"), policy, "Only one of the policy can be configured", "trainer/ml-policy-one"
                )
            )
        flux_procs = _dict(policy.get("flux")).get("numProcPerNode")
        if isinstance(flux_procs, int) and flux_procs < 1:
            errors.append(
                cel_error(
                    ("spec", "mlPolicy", "flux", "numProcPerNode"),
                    flux_procs,
                    "NumProcPerNode in fluxPolicy must be >= 1",
                    "trainer/num-proc-per-node",
                )
            )
        mpi_procs = _dict(policy.get("mpi")).get("numProcPerNode")
        if isinstance(mpi_procs, int) and mpi_procs < 1:
            # Trainer's CRD after v2.3.0 (kubeflow/trainer#3805).
            errors.append(
                cel_error(
                    ("spec", "mlPolicy", "mpi", "numProcPerNode"),
                    mpi_procs,
                    "NumProcPerNode in mpiPolicy must be >= 1",
                    "trainer/num-proc-per-node",
                )
            )
        targets = _dict(_dict(policy.get("torch")).get("envInjection")).get("targets")
        for i, target in enumerate(_list(targets)):
            names = _dict(target).get("containerNames")
            if isinstance(names, list) and rt.NODE in names:
                errors.append(
                    cel_error(
                        ("spec", "mlPolicy", "torch", "envInjection", "targets", i, "containerNames"),
                        names,
                        "containerNames must not include the main node container because PET_* envs are always "
                        "injected into it",
                        "trainer/env-injection-node",
                    )
                )
    errors += jobset_template_rules(_dict(_dict(template).get("spec")), old_spec)
    mpi = _dict(_dict(policy).get("mpi"))
    errors += _length(("spec", "mlPolicy", "mpi", "sshAuthMountPath"), mpi.get("sshAuthMountPath"), 4096)
    targets = _dict(_dict(_dict(policy).get("torch")).get("envInjection")).get("targets")
    for i, target in enumerate(_list(targets)):
        for j, name in enumerate(_list(_dict(target).get("containerNames"))):
            errors += _length(
                ("spec", "mlPolicy", "torch", "envInjection", "targets", i, "containerNames", j), name, 63
            )
    return errors


def jobset_template_rules(jobset: dict[str, Any], old_spec: dict[str, Any] | None) -> list[FieldError]:
    """JobSet's own CEL rules, inherited by the runtimes' CRDs on ``spec.template.spec``: the JobSet
    family's check of them, at the template's path, under the trainer family's rule ids."""
    # Imported here: only a runtime's review needs the JobSet family's rules (a TrainJob's does not).
    from jobgate.families.jobset.rules import checks as jobset_checks

    old = _dict(_dict(old_spec.get("template")).get("spec")) if old_spec is not None else None
    rules = {jobset_checks.R_CEL_IMMUTABLE: "trainer/jobset-immutable"}
    return [
        FieldError(e.type, e.path, e.value, e.detail, rules.get(e.rule, "trainer/jobset-rules"))
        for e in jobset_checks.crd_rules(jobset, old, base=("spec", "template", "spec"))
    ]


def runtime_defaults(spec: dict[str, Any], recorder: PatchRecorder) -> None:
    """The runtimes' CRD defaults, as the apiserver stores them."""
    from jobgate.rules.dicts import copied_dict

    policy = copied_dict(spec, "mlPolicy")
    if policy is not None:
        mpi = copied_dict(policy, "mpi")
        if mpi is not None:
            for key, value in (
                ("numProcPerNode", 1),
                ("mpiImplementation", "OpenMPI"),
                ("sshAuthMountPath", "/root/.ssh"),
                ("runLauncherAsNode", False),
            ):
                if mpi.get(key) is None:
                    recorder.set(mpi, key, value, "/spec/mlPolicy/mpi")
        flux = copied_dict(policy, "flux")
        if flux is not None and flux.get("numProcPerNode") is None:
            recorder.set(flux, "numProcPerNode", 1, "/spec/mlPolicy/flux")
    group_policy = copied_dict(spec, "podGroupPolicy")
    coscheduling = copied_dict(group_policy, "coscheduling") if group_policy is not None else None
    if coscheduling is not None and coscheduling.get("scheduleTimeoutSeconds") is None:
        recorder.set(coscheduling, "scheduleTimeoutSeconds", 60, "/spec/podGroupPolicy/coscheduling")
    template = copied_dict(spec, "template")
    jobset = copied_dict(template, "spec") if template is not None else None
    jobs = jobset.get("replicatedJobs") if jobset is not None else None
    if jobset is None or not isinstance(jobs, list):
        return
    copied = list(jobs)
    jobset["replicatedJobs"] = copied
    for i, given in enumerate(copied):
        if not isinstance(given, dict):
            continue
        pointer = f"/spec/template/spec/replicatedJobs/{i}"
        if given.get("groupName") is None or given.get("replicas") is None:
            rjob = copied[i] = dict(given)
            if rjob.get("groupName") is None:
                recorder.set(rjob, "groupName", "default", pointer)
            if rjob.get("replicas") is None:
                recorder.set(rjob, "replicas", 1, pointer)
