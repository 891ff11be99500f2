"""The trainer family's rules in the catalogue: each error's rule id, summary and where it is enforced,
for ``jobgate explain`` and the rule reference.

jobgate ships no CRD for trainer.kubeflow.org, so every rule is the webhook's (and ``jobgate
validate``'s). Rules that Trainer's (or JobSet's) CRDs enforce with CEL say so: beside Trainer's CRDs
the apiserver checks them too, offline only jobgate does.
"""

from __future__ import annotations

from jobgate.engine.registry import JobKind
from jobgate.families import trainer as record
from jobgate.forms.catalogue import Produces, Rule, Where

WEBHOOK = "Kubeflow Trainer's validating webhook (v2.3.0): it reads the runtime, which no CRD rule can"
PLUGIN = "a Kubeflow Trainer framework plugin's check (v2.3.0): it reads the runtime, which no CRD rule can"
CEL = (
    "CEL-enforced by Kubeflow Trainer's CRD (x-kubernetes-validations); jobgate ships no Trainer CRD, so its "
    "webhook and `jobgate validate` check it too"
)
JOBSET_CEL = (
    "CEL-enforced by the runtimes' CRDs, inherited from JobSet's CRD (spec.template.spec is a JobSetSpec); "
    "checked by jobgate's webhook and `jobgate validate` too"
)
AFTER = "Kubeflow Trainer's CRD after v2.3.0 (kubeflow/trainer#3805, PR #3809); v2.3.0 has no bound, jobgate applies it"


def _rule(rule_id: str, summary: str, why: str, *produces: Produces) -> Rule:
    return Rule(rule_id, summary, Where.WEBHOOK, produces, why=why)


# The CRDs' string lengths, one rule of every kind.
LENGTHS = _rule(
    "trainer/lengths",
    "the CRD's string lengths (names, URIs, images, commands and args, managers, paths)",
    CEL.replace("(x-kubernetes-validations)", "(maxLength, minLength)"),
    Produces("spec.**", "TOO_LONG"),
    Produces("spec.**", "INVALID", " in body should be at least "),
)

# The CRDs' list bounds (maxItems), one rule of every kind.
LIST_BOUNDS = _rule(
    "trainer/list-bounds",
    "the CRD's list bounds (runtimePatches, commands, args, env; a runtime template's dependsOn and volume "
    "claim policies, JobSet's)",
    CEL.replace("(x-kubernetes-validations)", "(maxItems)"),
    Produces("spec.**", "TOO_MANY"),
)

# The CRDs' list-maps (x-kubernetes-list-type: map), one rule of every kind.
LIST_MAP_KEYS = _rule(
    "trainer/list-map-keys",
    "no two items of a list-map share their keys: a runtime template's replicated jobs and their dependsOn by "
    "name, its pod templates' containers, volumes, env, ports, mounts, ... as core/v1 keys them; a TrainJob's "
    "runtimePatches by manager, their replicated jobs, containers, volumes, ... and env by name",
    CEL.replace("(x-kubernetes-validations)", "(x-kubernetes-list-type: map)"),
    Produces("spec.**", "DUPLICATE"),
)

TRAINJOB_RULES = (
    LENGTHS,
    LIST_BOUNDS,
    LIST_MAP_KEYS,
    _rule(
        "trainer/name",
        "metadata.name is an RFC 1035 DNS label of at most 63 characters",
        CEL,
        Produces("metadata.name", "INVALID", "^metadata\\.name must "),
    ),
    _rule(
        "trainer/managed-by",
        "spec.managedBy is trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue",
        CEL,
        Produces("spec.managedBy", "INVALID", "^ManagedBy must be "),
    ),
    _rule(
        "trainer/storage-uri",
        "an initializer's storageUri is empty or scheme://...",
        CEL,
        Produces("spec.initializer.*.storageUri", "INVALID", "^storageUri may be empty"),
    ),
    _rule(
        "trainer/num-nodes",
        "spec.trainer.numNodes is at least 0",
        AFTER,
        Produces("spec.trainer.numNodes", "INVALID", "^must be greater than or equal to 0$"),
    ),
    _rule(
        "trainer/num-proc-per-node",
        "spec.trainer.numProcPerNode is at least 1",
        AFTER,
        Produces("spec.trainer.numProcPerNode", "INVALID", "^numProcPerNode must be greater than or equal to 1$"),
    ),
    _rule(
        "trainer/immutable",
        "spec.runtimeRef, initializer, trainer, activeDeadlineSeconds and managedBy never change",
        CEL + " (transition rules)",
        Produces("spec.*", "INVALID", "^field is immutable$"),
    ),
    _rule(
        "trainer/patch-immutable",
        "a runtime patch's serviceAccountName, volumes, containers, initContainers, imagePullSecrets, "
        "securityContext and terminationGracePeriodSeconds never change",
        CEL + " (transition rules)",
        Produces("spec.runtimePatches[*].**", "INVALID", "^field is immutable$"),
    ),
    _rule(
        "trainer/runtime-supported",
        "spec.runtimeRef names a TrainingRuntime or ClusterTrainingRuntime of trainer.kubeflow.org",
        WEBHOOK,
        Produces("spec.runtimeRef", "INVALID", "^unsupported runtime: "),
    ),
    _rule(
        "trainer/runtime-exists",
        "the referenced runtime exists (a TrainingRuntime in the job's namespace, or a ClusterTrainingRuntime)",
        WEBHOOK + "; offline, the runtime is read from --cluster-objects or the documents beside the job",
        Produces("spec.runtimeRef", "INVALID", "must be created before the TrainJob is created"),
        Produces("spec.RuntimeRef", "INVALID", "must be created before the TrainJob is created"),
    ),
    _rule(
        "trainer/initializer-jobs",
        "an initializer needs the runtime's initializer job, its container and its `initializer` volume mount",
        PLUGIN,
        Produces(
            "spec.runtimeRef",
            "INVALID",
            "^must have (dataset|model)-initializer job|^must have container with name - "
            "|^must have volumeMount with name - ",
        ),
    ),
    _rule(
        "trainer/runtime-patches-suspended",
        "runtimePatches change only while the job is suspended before or after the update",
        PLUGIN,
        Produces("spec.runtimePatches", "FORBIDDEN", "^RuntimePatches can"),
    ),
    _rule(
        "trainer/patch-manager",
        "a runtime patch's manager is a domain-prefixed path",
        PLUGIN,
        Produces("spec.runtimePatches.manager", "INVALID"),
        Produces("spec.runtimePatches.manager", "REQUIRED"),
    ),
    _rule(
        "trainer/patch-targets",
        "a runtime patch names only replicated jobs, containers and init containers of the runtime's template "
        "(Trainer's intended check: v2.3.0 compares the patch with itself, kubeflow/trainer#3948)",
        PLUGIN,
        Produces(
            "spec.runtimePatches",
            "INVALID",
            "^must not have (replicated job|initContainer|container) that doesn't exist",
        ),
    ),
    _rule(
        "trainer/patch-env",
        "a runtime patch sets no env of the node and initializer containers",
        PLUGIN,
        Produces("spec.runtimePatches", "INVALID", "^must not have envs for the "),
    ),
    _rule(
        "trainer/torch-env-injection",
        "the torch policy's envInjection targets name containers of the runtime's template",
        PLUGIN,
        Produces("spec.runtimeRef", "INVALID", "^envInjection target podSet "),
    ),
    _rule(
        "trainer/reserved-env",
        "spec.trainer.env sets none of the framework's reserved variables (torch PET_*, OpenMPI OMPI_MCA_*, "
        "XGBoost DMLC_*)",
        PLUGIN,
        Produces("spec.trainer.env", "INVALID", "^must not have reserved envs"),
        Produces("spec.trainer.env[*]", "FORBIDDEN", "is reserved for the XGBoost runtime$"),
    ),
    _rule(
        "trainer/torchtune",
        "a `tune run` trainer uses a supported model, one node (but llama3_3/70B), no LoRA on many nodes, "
        "QLoRA where supported, and none of the runtime's own configs",
        PLUGIN,
        Produces("spec.runtimeRef.name", "INVALID"),
        Produces("spec.trainer.numNodes", "INVALID", "model$|TorchTune$"),
        Produces("spec.trainer.numProcPerNode", "INVALID", "QLoRA$"),
        Produces("spec.trainer.resourcesPerNode", "INVALID", "QLoRA$"),
        Produces("spec.trainer.args[*]", "INVALID", "^must not set immutable config "),
    ),
    _rule(
        "trainer/mpi-launcher-as-node",
        "an MPI runtime running its launcher as a node has both a launcher and a node job for numNodes > 1",
        PLUGIN,
        Produces("spec.trainer.numNodes", "INVALID", "runLauncherAsNode"),
    ),
    _rule(
        "trainer/flux",
        "a Flux job runs at least one process per node, and the runtime's node job has no flux-installer",
        PLUGIN,
        Produces("spec.trainer.numProcPerNode", "INVALID", "for Flux TrainJob$"),
        Produces("spec.trainer.initContainers", "INVALID", "is reserved$"),
    ),
    _rule(
        "trainer/volcano-queue",
        "a Volcano runtime's queue annotation is not empty",
        PLUGIN,
        Produces("spec.annotations[*]", "INVALID", "^Volcano queue name must not be empty$"),
    ),
    _rule(
        "trainer/volcano-priority-class",
        "the PriorityClass a Volcano runtime's pods name exists (system-*-critical excepted)",
        PLUGIN.replace("it reads the runtime", "it reads the runtime and the cluster's PriorityClasses"),
        Produces("spec.templateSpec.priorityClassName", "INVALID", "^PriorityClass .* doesn't exist: "),
    ),
)

RUNTIME_RULES = (
    LENGTHS,
    LIST_BOUNDS,
    LIST_MAP_KEYS,
    _rule(
        "trainer/runtime-template",
        "spec and spec.template are not empty",
        CEL.replace("(x-kubernetes-validations)", "(minProperties)"),
        Produces("spec", "INVALID", "^must have at least 1 properties$"),
        Produces("spec.template", "INVALID", "^must have at least 1 properties$"),
    ),
    _rule(
        "trainer/ml-policy-one",
        "at most one of mlPolicy's torch, mpi, jax, xgboost and flux",
        CEL,
        Produces("spec.mlPolicy", "INVALID", "^Only one of the policy can be configured$"),
    ),
    _rule(
        "trainer/num-proc-per-node",
        "mlPolicy.flux.numProcPerNode and mlPolicy.mpi.numProcPerNode are at least 1",
        CEL + "; mpi's after v2.3.0 (kubeflow/trainer#3805)",
        Produces("spec.mlPolicy.*.numProcPerNode", "INVALID", "^NumProcPerNode in "),
    ),
    _rule(
        "trainer/env-injection-node",
        "torch envInjection targets do not name the node container",
        CEL,
        Produces("spec.mlPolicy.torch.envInjection.targets[*].containerNames", "INVALID", "^containerNames must not"),
    ),
    _rule(
        "trainer/jobset-rules",
        "the JobSet template uses startupPolicy InOrder or dependsOn, not both; no namespace in claim templates",
        JOBSET_CEL,
        Produces("spec.template.spec", "INVALID", "mutually exclusive$"),
        Produces("spec.template.spec.volumeClaimPolicies[*]", "INVALID", "^namespace cannot be set"),
    ),
    _rule(
        "trainer/jobset-immutable",
        "the JobSet template's network, success/failure/startup policies, volume claim policies and dependsOn "
        "never change",
        JOBSET_CEL + " (transition rules)",
        Produces("spec.template.spec.**", "INVALID", "^Value is immutable$"),
    ),
    _rule(
        "trainer/runtime-ancestor-replicas",
        "a replicated job labelled with a trainjob-ancestor-step has one replica",
        "Kubeflow Trainer's runtime webhooks (v2.3.0; jobgate also on a TrainingRuntime's UPDATE, "
        "kubeflow/trainer#3686)",
        Produces("spec.template.spec.replicatedJobs[*].replicas", "INVALID", "^always must be 1$"),
    ),
    _rule(
        "trainer/runtime-ancestor-container",
        "a replicated job labelled with a trainjob-ancestor-step has its container (node, dataset-initializer, "
        "model-initializer)",
        "Kubeflow Trainer's runtime webhooks (v2.3.0; jobgate also on a TrainingRuntime's UPDATE, "
        "kubeflow/trainer#3686)",
        Produces(
            "spec.template.spec.replicatedJobs[*].template.spec.template.spec.containers",
            "INVALID",
            "^must contain the required container for the ancestor: ",
        ),
    ),
)

assert record.FAMILY.catalogue == __name__


def rules(kind: JobKind) -> list[Rule]:
    return list(TRAINJOB_RULES if kind.gvk.kind == "TrainJob" else RUNTIME_RULES)
