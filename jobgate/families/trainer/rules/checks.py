"""Kubeflow Trainer v2.3.0's checks of a TrainJob against its runtime, and of the runtimes themselves.

Each function is one of Trainer's webhook or plugin checks (``pkg/webhooks``,
``pkg/runtime/framework/plugins/*``) or one of its CRDs' CEL rules, with Trainer's field paths, error
types and messages; every error carries its rule id (``trainer/...``, catalogue.py). Pure: the
runtime comes in as a plain object.
"""

from __future__ import annotations

import jobgate.families.trainer.rules.runtimes as rt
from jobgate.engine.fielderrors import FieldError, FieldPath, forbidden, invalid, required
from jobgate.rules.names import HTTP_PATH, dns1123_subdomain_problems, is_http_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    # A PriorityClass's look-up by name: None when it exists, else what to add to the "not found" detail
    # ("" in the webhook; offline, how to give it).
    PriorityClassLookup = Callable[[str], str | None]

RUNTIME_REF: FieldPath = ("spec", "runtimeRef")
RUNTIME_PATCHES: FieldPath = ("spec", "runtimePatches")
TRAINER_ENV: FieldPath = ("spec", "trainer", "env")

TORCH_RESERVED_ENVS = frozenset(
    ("PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT")
)
MPI_RESERVED_ENVS = frozenset(
    (
        "OMPI_MCA_orte_default_hostfile",
        "OMPI_MCA_plm_rsh_args",
        "OMPI_MCA_orte_keep_fqdn_hostnames",
        "OMPI_MCA_orte_set_default_slots",
    )
)
XGBOOST_RESERVED_ENVS = frozenset(("DMLC_TRACKER_URI", "DMLC_TRACKER_PORT", "DMLC_TASK_ID", "DMLC_NUM_WORKER"))
DEPRECATION_POLICY_URL = (
    "https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html#runtime-deprecation-policy"
)
DEFAULT_MANAGER = "trainer.kubeflow.org/trainjob-controller"
MANAGERS = (DEFAULT_MANAGER, "kueue.x-k8s.io/multikueue")
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
FLUX_INSTALLER = "flux-installer"
TORCHTUNE_ENTRYPOINT = ["tune", "run"]
TORCHTUNE_MODELS = frozenset(("llama3_2/1B", "llama3_2/3B", "llama3_3/70B", "qwen2_5/1.5B"))
TORCHTUNE_IMMUTABLE_CONFIGS = frozenset(
    ("output_dir", "tokenizer.path", "checkpointer.checkpoint_dir", "tokenizer.merges_file")
)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def go_list(names: list[str]) -> str:
    """A Go ``%v`` of a []string: ``[a b]``."""
    return "[" + " ".join(names) + "]"


def runtime_ref(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec.runtimeRef`` in Go's field order (name, apiGroup, kind), as Trainer prints it in errors."""
    ref = _dict(spec.get("runtimeRef"))
    ordered: dict[str, Any] = {key: ref[key] for key in ("name", "apiGroup", "kind") if key in ref}
    return {**ordered, **{k: v for k, v in ref.items() if k not in ordered}}


def ref_kind(spec: dict[str, Any]) -> tuple[str, str, str]:
    """(apiGroup, kind, name) of the runtime, the CRD's defaults applied."""
    ref = _dict(spec.get("runtimeRef"))
    group, kind, name = ref.get("apiGroup"), ref.get("kind"), ref.get("name")
    return (
        group if isinstance(group, str) else rt.TRAINER_GROUP,
        kind if isinstance(kind, str) else rt.CLUSTER_TRAINING_RUNTIME,
        name if isinstance(name, str) else "",
    )


def labels_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    return _dict(_dict(obj.get("metadata")).get("labels"))


# --- the runtime lookup (T1-T4) ---------------------------------------------------------------------


def unsupported_runtime(spec: dict[str, Any]) -> FieldError | None:
    group, kind, _ = ref_kind(spec)
    if group == rt.TRAINER_GROUP and kind in rt.RUNTIME_KINDS:
        return None
    key = f"{kind}.{group}" if group else kind
    return invalid(RUNTIME_REF, runtime_ref(spec), f"unsupported runtime: {key}", rule="trainer/runtime-supported")


def runtime_not_found(spec: dict[str, Any], hint: str) -> FieldError:
    """Trainer's refusal of a TrainJob whose runtime is not there (the apiserver's NotFound text first;
    ``spec.RuntimeRef``, capital R, is Trainer's own spelling for ClusterTrainingRuntime)."""
    _, kind, name = ref_kind(spec)
    if kind == rt.CLUSTER_TRAINING_RUNTIME:
        path: FieldPath = ("spec", "RuntimeRef")
        text = f'clustertrainingruntimes.trainer.kubeflow.org "{name}" not found: specified clusterTrainingRuntime'
    else:
        path = RUNTIME_REF
        text = f'trainingruntimes.trainer.kubeflow.org "{name}" not found: specified trainingRuntime'
    detail = f"{text} must be created before the TrainJob is created"
    if hint:
        detail += f" ({hint})"
    return invalid(path, runtime_ref(spec), detail, rule="trainer/runtime-exists")


def deprecated_warning(runtime: Mapping[str, Any], referenced: bool) -> str | None:
    if labels_of(runtime).get(rt.SUPPORT_LABEL) != rt.SUPPORT_DEPRECATED:
        return None
    name = _dict(runtime.get("metadata")).get("name")
    prefix = "Referenced ClusterTrainingRuntime" if referenced else "ClusterTrainingRuntime"
    return (
        f'{prefix} "{name}" is deprecated and will be removed in a future release of Kubeflow Trainer. '
        f"See runtime deprecation policy: {DEPRECATION_POLICY_URL}"
    )


# --- the JobSet plugin (T5-T11) ---------------------------------------------------------------------


def initializer_checks(spec: dict[str, Any], jobs: list[dict[str, Any]]) -> list[FieldError]:
    errors: list[FieldError] = []
    initializer = _dict(spec.get("initializer"))
    ref = runtime_ref(spec)
    for key, name, config in (
        ("dataset", rt.DATASET_INITIALIZER, "datasetConfig"),
        ("model", rt.MODEL_INITIALIZER, "modelConfig"),
    ):
        if initializer.get(key) is None:
            continue
        rjob = rt.find_job(jobs, name)
        if rjob is None:
            detail = f"must have {name} job when trainJob is configured with input {config}"
        elif name not in rt.container_names(rjob):
            detail = f"must have container with name - {name} in the {name} job"
        elif not any(
            isinstance(m, dict) and m.get("name") == rt.INITIALIZER_VOLUME
            for c in rt.containers(rjob)
            if c.get("name") == name
            for m in _list(c.get("volumeMounts"))
        ):
            detail = f"must have volumeMount with name - {rt.INITIALIZER_VOLUME} in container {name} of the {name} job"
        else:
            continue
        errors.append(invalid(RUNTIME_REF, ref, detail, rule="trainer/initializer-jobs"))
    return errors


def _suspended(spec: dict[str, Any]) -> bool:
    return spec.get("suspend") is True


def patches_while_running(
    spec: dict[str, Any],
    old_spec: dict[str, Any] | None,
    read_jobset: Callable[[], Mapping[str, Any] | None] | None = None,
) -> list[FieldError]:
    """T7/T8: runtimePatches change only when the job is suspended before or after the update, and then
    only while no replicated job of its JobSet (``read_jobset()``, the JobSet named like the TrainJob;
    None: none there) is active. The JobSet is read only when the patches changed while suspended."""
    # Compared without their times: the times are the mutating webhook's, stamped from the content, and
    # an oldObject written without them is stamped when read as stored (jobgate/review.py).
    if old_spec is None or _untimed(old_spec) == _untimed(spec):
        return []
    if not _suspended(old_spec) and not _suspended(spec):
        return [
            forbidden(
                RUNTIME_PATCHES,
                "RuntimePatches can only be modified when the TrainJob is suspended before or after the update",
                rule="trainer/runtime-patches-suspended",
            )
        ]
    jobset = read_jobset() if read_jobset is not None else None
    statuses = _list(_dict(jobset.get("status")).get("replicatedJobsStatus")) if jobset is not None else []
    return [
        forbidden(
            RUNTIME_PATCHES,
            f"RuntimePatches cannot be modified when the JobSet's ReplicatedJob {status.get('name')} is still active",
            rule="trainer/runtime-patches-suspended",
        )
        for status in statuses
        if isinstance(status, dict) and rt.int_or(status.get("active"), 0) > 0
    ]


def _untimed(spec: dict[str, Any]) -> list[Any]:
    return [
        {k: v for k, v in p.items() if k != "time"} if isinstance(p, dict) else p
        for p in _list(spec.get("runtimePatches"))
    ]


def domain_prefixed_path(path: FieldPath, value: Any) -> list[FieldError]:
    """k8s.io/apimachinery's IsDomainPrefixedPath."""
    rule = "trainer/patch-manager"
    if not isinstance(value, str) or not value:
        return [required(path, "", rule=rule)]
    host, slash, rest = value.partition("/")
    if not slash or not host or not rest:
        return [invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")', rule=rule)]
    errors = [invalid(path, host, problem, rule=rule) for problem in dns1123_subdomain_problems(host)]
    if not is_http_path(rest):
        errors.append(invalid(path, rest, f"Invalid path (regex used for validation is '{HTTP_PATH}')", rule=rule))
    return errors


def patch_checks(spec: dict[str, Any], jobs: list[dict[str, Any]]) -> list[FieldError]:
    """T9-T11: each patch's manager, and its targets against the runtime's template as written.

    Trainer v2.3.0 merges the patches into the template before this check, so a patch naming a job or
    container the runtime lacks is found in the merge and admitted (kubeflow/trainer#3948); jobgate
    checks what Trainer intends, against the runtime's own template. Init containers and containers
    share one set of names, as in Trainer."""
    errors: list[FieldError] = []
    patches = _list(spec.get("runtimePatches"))
    names = {rj.get("name"): rt.container_names(rj) for rj in jobs}
    for patch in patches:
        if not isinstance(patch, dict):
            continue
        errors += domain_prefixed_path((*RUNTIME_PATCHES, "manager"), patch.get("manager"))
        template_spec = _dict(_dict(_dict(patch.get("trainingRuntimeSpec")).get("template")).get("spec"))
        for rjob in rt.replicated_jobs(template_spec):
            known = names.get(rjob.get("name"))
            if known is None:
                errors.append(
                    invalid(
                        RUNTIME_PATCHES,
                        patches,
                        "must not have replicated job that doesn't exist in the runtime job template",
                        rule="trainer/patch-targets",
                    )
                )
                continue
            job_name = rjob.get("name")
            for container in rt.containers(rjob, "initContainers"):
                if container.get("name") not in known:
                    errors.append(
                        invalid(
                            RUNTIME_PATCHES,
                            patches,
                            f"must not have initContainer that doesn't exist in the runtime job {job_name}",
                            rule="trainer/patch-targets",
                        )
                    )
            for container in rt.containers(rjob):
                if container.get("name") not in known:
                    errors.append(
                        invalid(
                            RUNTIME_PATCHES,
                            patches,
                            f"must not have container that doesn't exist in the runtime job {job_name}",
                            rule="trainer/patch-targets",
                        )
                    )
                elif _list(container.get("env")) and container.get("name") in (
                    rt.DATASET_INITIALIZER,
                    rt.MODEL_INITIALIZER,
                    rt.NODE,
                ):
                    errors.append(
                        invalid(
                            RUNTIME_PATCHES,
                            patches,
                            "must not have envs for the dataset-initializer, model-initializer, node containers",
                            rule="trainer/patch-env",
                        )
                    )
    return errors


# --- the framework plugins (T12-T23) ---------------------------------------------------------------


def _trainer(spec: dict[str, Any]) -> dict[str, Any] | None:
    trainer = spec.get("trainer")
    return trainer if isinstance(trainer, dict) else None


def _env_names(trainer: dict[str, Any]) -> list[str]:
    names = (e.get("name") for e in _list(trainer.get("env")) if isinstance(e, dict))
    return [name for name in names if isinstance(name, str)]


def reserved_envs(trainer: dict[str, Any], reserved: frozenset[str]) -> list[FieldError]:
    found = sorted({name for name in _env_names(trainer) if name in reserved})
    if not found:
        return []
    return [
        invalid(
            TRAINER_ENV,
            trainer.get("env"),
            f"must not have reserved envs, invalid envs configured: {go_list(found)}",
            rule="trainer/reserved-env",
        )
    ]


def torch_checks(spec: dict[str, Any], runtime: Mapping[str, Any], jobs: list[dict[str, Any]]) -> list[FieldError]:
    torch = ml_policy_source(runtime, "torch")
    if torch is None:
        return []
    errors: list[FieldError] = []
    for target in _list(_dict(torch.get("envInjection")).get("targets")):
        if not isinstance(target, dict):
            continue
        for name in _list(target.get("containerNames")):
            if rt.find_container(rt.find_job(jobs, target.get("jobName")), name) is None:  # type: ignore[arg-type]
                errors.append(
                    invalid(
                        RUNTIME_REF,
                        target,
                        f'envInjection target podSet "{target.get("jobName")}" container "{name}" not found in '
                        "runtime template",
                        rule="trainer/torch-env-injection",
                    )
                )
    trainer = _trainer(spec)
    if trainer is not None:
        errors += reserved_envs(trainer, TORCH_RESERVED_ENVS)
        if trainer.get("command") == TORCHTUNE_ENTRYPOINT:
            errors += torchtune_checks(spec, trainer, jobs)
    return errors


def ml_policy_source(runtime: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    value = rt.ml_policy(runtime).get(name)
    return value if isinstance(value, dict) else None


def gpus_per_node(resources: Mapping[str, Any] | None) -> int:
    """Trainer's GetNumGPUPerNode: the first resource whose name contains "gpu", requests before limits."""
    from jobgate.rules.quantity import parse_quantity

    def first(values: Any) -> int:
        for name, quantity in _dict(values).items():
            if "gpu" in str(name).lower():
                parsed = parse_quantity(quantity) if isinstance(quantity, (str, int, float)) else None
                return int(parsed) if parsed is not None else 0
        return 0

    requested = first(_dict(resources).get("requests"))
    limited = first(_dict(resources).get("limits"))
    return limited if requested == 0 and limited > 0 else requested


def _bool_arg(args: list[Any], item: str) -> bool:
    for arg in args:
        if not isinstance(arg, str):
            continue
        name, sep, value = arg.partition("=")
        if sep and item in name and value.strip().lower() == "true":
            return True
    return False


def _lora(args: list[Any]) -> bool:
    return any(isinstance(a, str) and "model.lora_attn_modules" in a for a in args)


def _qlora(args: list[Any]) -> bool:
    return not _bool_arg(args, "model.use_dora") and _bool_arg(args, "model.quantize_base")


def torchtune_model(runtime_name: str) -> str:
    fields = runtime_name.split("-")
    if len(fields) != 3:
        return ""
    return f"{fields[1].replace('.', '_')}/{fields[2].upper()}"


def torchtune_checks(spec: dict[str, Any], trainer: dict[str, Any], jobs: list[dict[str, Any]]) -> list[FieldError]:
    """T14-T17: Trainer's validateTorchTune, for a trainer running ``tune run``."""
    rule = "trainer/torchtune"
    errors: list[FieldError] = []
    _, _, name = ref_kind(spec)
    model = torchtune_model(name)
    name_path: FieldPath = ("spec", "runtimeRef", "name")
    if model not in TORCHTUNE_MODELS:
        errors.append(
            invalid(
                name_path, name, f"must have a supported pretrained model, invalid model configured: {model}", rule=rule
            )
        )
    nodes_path: FieldPath = ("spec", "trainer", "numNodes")
    nodes = rt.int_or(trainer.get("numNodes"), 1)
    if nodes > 1 and model != "llama3_3/70B":
        errors.append(invalid(nodes_path, nodes, f"must be 1 for {model} model", rule=rule))
    procs = trainer.get("numProcPerNode")
    procs_value: Any = procs if isinstance(procs, int) and not isinstance(procs, bool) else "auto"
    resources = trainer.get("resourcesPerNode")
    gpus = gpus_per_node(resources if isinstance(resources, dict) else rt.node_resources(jobs))
    args = _list(trainer.get("args"))
    if nodes == 1 and (procs_value == 1 or gpus == 1):
        suffix = "_qlora_single_device" if _qlora(args) else ""
    elif nodes == 1 and _qlora(args):
        suffix = "_qlora"
    else:
        suffix = ""
    if "_qlora" in suffix:
        if model == "qwen2_5/1.5B":
            errors.append(invalid(name_path, name, f"QLoRA is not supported for {model} model", rule=rule))
        if "_qlora_single_device" not in suffix and model in ("llama3_2/1B", "llama3_2/3B"):
            errors.append(
                invalid(
                    ("spec", "trainer", "numProcPerNode"),
                    procs_value,
                    f"must be auto or 1 for {model} model when using QLoRA",
                    rule=rule,
                )
            )
            errors.append(
                invalid(
                    ("spec", "trainer", "resourcesPerNode"),
                    resources,
                    f"must have gpu resource with value 1 for {model} model when using QLoRA",
                    rule=rule,
                )
            )
    if nodes > 1 and (_lora(args) or _qlora(args)):
        errors.append(
            invalid(
                nodes_path, nodes, "LoRA fine-tuning is not supported for multi-node training in TorchTune", rule=rule
            )
        )
    for index, arg in enumerate(args):
        key = arg.split("=", 1)[0] if isinstance(arg, str) else ""
        if key in TORCHTUNE_IMMUTABLE_CONFIGS:
            errors.append(
                invalid(
                    ("spec", "trainer", "args", index),
                    arg,
                    f'must not set immutable config "{key}" in trainer args; it is managed by the runtime',
                    rule=rule,
                )
            )
    return errors


def mpi_checks(spec: dict[str, Any], runtime: Mapping[str, Any], jobs: list[dict[str, Any]]) -> list[FieldError]:
    mpi = ml_policy_source(runtime, "mpi")
    trainer = _trainer(spec)
    if mpi is None or trainer is None:
        return []
    errors: list[FieldError] = []
    launcher_as_node = rt.int_or(trainer.get("numNodes"), 1) >= 2 and mpi.get("runLauncherAsNode") is True
    if launcher_as_node and (rt.find_job(jobs, rt.LAUNCHER) is None or rt.find_job(jobs, rt.NODE) is None):
        errors.append(
            invalid(
                ("spec", "trainer", "numNodes"),
                trainer.get("numNodes"),
                "must have 1 when MPI trainingRuntime with enabled runLauncherAsNode does not have either launcher "
                "and node",
                rule="trainer/mpi-launcher-as-node",
            )
        )
    return errors + reserved_envs(trainer, MPI_RESERVED_ENVS)


def xgboost_checks(spec: dict[str, Any], runtime: Mapping[str, Any]) -> list[FieldError]:
    trainer = _trainer(spec)
    if ml_policy_source(runtime, "xgboost") is None or trainer is None:
        return []
    return [
        forbidden(
            (*TRAINER_ENV, i), f"{env.get('name')} is reserved for the XGBoost runtime", rule="trainer/reserved-env"
        )
        for i, env in enumerate(_list(trainer.get("env")))
        if isinstance(env, dict) and env.get("name") in XGBOOST_RESERVED_ENVS
    ]


def flux_checks(spec: dict[str, Any], runtime: Mapping[str, Any], jobs: list[dict[str, Any]]) -> list[FieldError]:
    flux = ml_policy_source(runtime, "flux")
    if flux is None:
        return []
    errors: list[FieldError] = []
    procs = flux.get("numProcPerNode", 1)
    trainer = _trainer(spec)
    if trainer is not None and trainer.get("numProcPerNode") is not None:
        procs = trainer.get("numProcPerNode")
    if isinstance(procs, int) and procs < 1:
        errors.append(
            invalid(
                ("spec", "trainer", "numProcPerNode"),
                procs,
                "must be greater than or equal to 1 for Flux TrainJob",
                rule="trainer/flux",
            )
        )
    node = rt.find_job(jobs, rt.NODE)
    for container in rt.containers(node, "initContainers") if node is not None else []:
        if container.get("name") == FLUX_INSTALLER:
            errors.append(
                invalid(
                    ("spec", "trainer", "initContainers"),
                    FLUX_INSTALLER,
                    "InitContainer 'flux-installer' is reserved",
                    rule="trainer/flux",
                )
            )
    return errors


# Names Kubernetes reserves for its own highest priorities: no PriorityClass object is looked up for them.
SYSTEM_PRIORITY_CLASSES = ("system-cluster-critical", "system-node-critical")


def volcano_checks(
    spec: dict[str, Any], runtime: Mapping[str, Any], priority_classes: PriorityClassLookup | None = None
) -> list[FieldError]:
    """T23: an empty Volcano queue annotation on the runtime's JobSet template or a patch's (the later
    wins, as merged). T24: each replicated job's pod ``priorityClassName`` names a PriorityClass that
    exists, looked up with ``priority_classes`` (None: not checked); as Trainer, the first
    ``system-*-critical`` name ends the look-ups."""
    volcano = _dict(rt.runtime_spec(runtime).get("podGroupPolicy")).get("volcano")
    if volcano is None:
        return []
    errors = _volcano_queue(spec, runtime)
    if priority_classes is not None:
        errors += _priority_classes(runtime, priority_classes)
    return errors


def _priority_classes(runtime: Mapping[str, Any], lookup: PriorityClassLookup) -> list[FieldError]:
    errors: list[FieldError] = []
    for rjob in rt.runtime_replicated_jobs(runtime):
        name = rt.pod_spec(rjob).get("priorityClassName")
        if not isinstance(name, str) or not name:
            continue  # unset (Trainer reads the typed pod spec, where "" is unset)
        if name in SYSTEM_PRIORITY_CLASSES:
            break
        missing = lookup(name)
        if missing is not None:
            errors.append(
                invalid(
                    ("spec", "templateSpec", "priorityClassName"),
                    name,
                    f'PriorityClass "{name}" doesn\'t exist: priorityclasses.scheduling.k8s.io "{name}" not found'
                    + missing,
                    rule="trainer/volcano-priority-class",
                )
            )
    return errors


def _volcano_queue(spec: dict[str, Any], runtime: Mapping[str, Any]) -> list[FieldError]:
    annotations = dict(_dict(_dict(_dict(rt.runtime_spec(runtime).get("template")).get("metadata")).get("annotations")))
    for patch in _list(spec.get("runtimePatches")):
        template = _dict(_dict(_dict(patch).get("trainingRuntimeSpec")).get("template"))
        annotations.update(_dict(_dict(template.get("metadata")).get("annotations")))
    if annotations.get(VOLCANO_QUEUE_ANNOTATION) == "":
        from jobgate.engine.fielderrors import Key

        return [
            invalid(
                ("spec", "annotations", Key(VOLCANO_QUEUE_ANNOTATION)),
                "",
                "Volcano queue name must not be empty",
                rule="trainer/volcano-queue",
            )
        ]
    return []


# --- runtimes (R1, R2) ----------------------------------------------------------------------------

EXPECTED_CONTAINERS = {
    rt.ANCESTOR_TRAINER: rt.NODE,
    rt.MODEL_INITIALIZER: rt.MODEL_INITIALIZER,
    rt.DATASET_INITIALIZER: rt.DATASET_INITIALIZER,
}


def replicated_job_checks(runtime: Mapping[str, Any]) -> list[FieldError]:
    """Trainer's validateReplicatedJobs: a job labelled with a known ancestor has one replica and its container."""
    errors: list[FieldError] = []
    base: FieldPath = ("spec", "template", "spec", "replicatedJobs")
    for index, rjob in enumerate(
        _list(_dict(_dict(rt.runtime_spec(runtime).get("template")).get("spec")).get("replicatedJobs"))
    ):
        if not isinstance(rjob, dict):
            continue
        step = rt.ancestor(rjob)
        if step not in EXPECTED_CONTAINERS:
            continue
        count = rt.replicas(rjob)
        if count != 1:
            errors.append(
                invalid((*base, index, "replicas"), count, "always must be 1", rule="trainer/runtime-ancestor-replicas")
            )
        if not any(c.get("name") == EXPECTED_CONTAINERS[step] for c in rt.containers(rjob)):
            errors.append(
                invalid(
                    (*base, index, "template", "spec", "template", "spec", "containers"),
                    rt.pod_spec(rjob).get("containers"),
                    f"must contain the required container for the ancestor: {step}",
                    rule="trainer/runtime-ancestor-container",
                )
            )
    return errors
