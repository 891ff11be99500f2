"""Kubeflow Trainer v2.3.0's own test tables, through ``jobgate review validate|mutate --cluster-objects``.

Ported from Trainer v2.3.0 (commit 658725bdae5c7e3a0854d93ac6ff492e109a22ab):
``pkg/webhooks/{trainjob,trainingruntime,clustertrainingruntime}_webhook_test.go``, the framework
plugins' ``Validate`` tables (``pkg/runtime/framework/plugins/{jobset,torch,mpi,xgboost,flux,volcano}``)
and the webhook integration tests (``test/integration/webhooks``). Trainer's unit tests compare error
type and field path (``cmpopts.IgnoreFields(field.Error{}, "Detail", "BadValue")`` in most), as here;
where a message is Trainer's own sentence, it is checked too. Each case's runtime (and, for T8, the
TrainJob's JobSet) is given as Trainer's test gives it to its fake client: as a cluster object.

Where jobgate departs from v2.3.0 on purpose the case says so: runtimePatches targets are checked
against the runtime's template (kubeflow/trainer#3948: v2.3.0's webhook compares the patch with
itself), a TrainingRuntime is checked on UPDATE too (#3686), numNodes/numProcPerNode have lower
bounds (#3805).
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest

from jobgate.cli import main
from jobgate.engine.jsonpatch import apply_patch
from jobgate.families.trainer import TRAINER_VERSION
from testkit.builders import admission_review

API = "trainer.kubeflow.org/v1alpha1"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
INIT_MOUNT = [{"name": "initializer", "mountPath": "/workspace"}]


def rjob(name: str, *containers: dict[str, Any], ancestor: str | None = None, replicas: int | None = None, init=()):
    job: dict[str, Any] = {"name": name, "template": {"spec": {"template": {"spec": {"containers": list(containers)}}}}}
    if init:
        job["template"]["spec"]["template"]["spec"]["initContainers"] = list(init)
    if ancestor is not None:
        job["template"]["metadata"] = {"labels": {ANCESTOR: ancestor}}
    if replicas is not None:
        job["replicas"] = replicas
    return job


def c(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, **extra}


# The jobs of Trainer's MakeTrainingRuntimeWrapper: dataset and model initializers, then the trainer.
DATASET = rjob("dataset-initializer", c("dataset-initializer", volumeMounts=INIT_MOUNT), ancestor="dataset-initializer")
MODEL = rjob("model-initializer", c("model-initializer", volumeMounts=INIT_MOUNT), ancestor="model-initializer")
NODE = rjob("node", c("node", volumeMounts=INIT_MOUNT), ancestor="trainer")
DEFAULT_JOBS = [DATASET, MODEL, NODE]


def runtime(
    name: str = "test-runtime",
    *,
    kind: str = "ClusterTrainingRuntime",
    namespace: str = "default",
    jobs: list[dict[str, Any]] | None = None,
    ml_policy: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if kind == "TrainingRuntime":
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = labels
    body: dict[str, Any] = {
        "template": {"spec": {"replicatedJobs": copy.deepcopy(DEFAULT_JOBS if jobs is None else jobs)}}
    }
    if ml_policy is not None:
        body["mlPolicy"] = ml_policy
    body.update(spec)
    return {"apiVersion": API, "kind": kind, "metadata": metadata, "spec": body}


def trainjob(name: str = "test", *, ref: str = "test-runtime", kind: str | None = None, **spec: Any) -> dict[str, Any]:
    runtime_ref: dict[str, Any] = {"name": ref}
    if kind is not None:
        runtime_ref["kind"] = kind
    return {"apiVersion": API, "kind": "TrainJob", "metadata": {"name": name, "namespace": "default"},
            "spec": {"runtimeRef": runtime_ref, **spec}}  # fmt: skip


def answer(tmp_path, capsys, obj, old=None, cluster=(), command="validate") -> dict[str, Any]:  # noqa: PLR0917
    review_path = tmp_path / "review.json"
    review_path.write_text(json.dumps(admission_review(obj, operation="UPDATE" if old else "CREATE", old=old)))
    args = ["review", command]
    if cluster is not None:
        objects_path = tmp_path / "cluster.json"
        objects_path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(cluster)}))
        args += ["--cluster-objects", str(objects_path)]
    assert main([*args, str(review_path)]) == 0
    return json.loads(capsys.readouterr().out)["response"]


def causes(response: dict[str, Any]) -> set[tuple[str, str]]:
    if response["allowed"]:
        return set()
    return {(cause["reason"], cause["field"]) for cause in response["status"]["details"]["causes"]}


def messages(response: dict[str, Any]) -> list[str]:
    return [cause["message"] for cause in response["status"]["details"]["causes"]] if not response["allowed"] else []


INV, FORB, REQ = "FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired"


def test_the_pinned_version_is_a_tested_fact():
    assert TRAINER_VERSION == "v2.3.0"
    from jobgate.families import family

    assert TRAINER_VERSION in family("trainer").description


# --- TrainJob webhook (pkg/webhooks/trainjob_webhook_test.go, test/integration/webhooks/trainjob_test.go) ---

CTR = runtime()
TR = runtime(kind="TrainingRuntime")

TRAINJOB_CASES = [
    ("valid trainJob with ClusterTrainingRuntime", trainjob(), None, [CTR], set()),
    ("valid trainJob with namespaced TrainingRuntime", trainjob(kind="TrainingRuntime"), None, [TR], set()),
    (
        "trainingRuntime not present in the namespace",
        trainjob(kind="TrainingRuntime"),
        None,
        [runtime(kind="TrainingRuntime", namespace="other")],
        {(INV, "spec.runtimeRef")},
    ),
    ("clusterTrainingRuntime not present", trainjob(ref="missing"), None, [CTR], {(INV, "spec.RuntimeRef")}),
    (
        "unsupported runtime kind",
        {**trainjob(), "spec": {"runtimeRef": {"name": "test-runtime", "kind": "Runtime"}}},
        None,
        [CTR],
        {(INV, "spec.runtimeRef")},
    ),
    (
        "unsupported runtime apiGroup",
        {**trainjob(), "spec": {"runtimeRef": {"name": "test-runtime", "apiGroup": "example.com"}}},
        None,
        [CTR],
        {(INV, "spec.runtimeRef")},
    ),
    (
        "model initializer without a model-initializer job",
        trainjob(initializer={"model": {"storageUri": "hf://model"}}),
        None,
        [runtime(jobs=[NODE])],
        {(INV, "spec.runtimeRef")},
    ),
    (
        "dataset initializer without a dataset-initializer job",
        trainjob(initializer={"dataset": {"storageUri": "hf://dataset"}}),
        None,
        [runtime(jobs=[NODE])],
        {(INV, "spec.runtimeRef")},
    ),
    (
        "dataset initializer with the runtime's initializer",
        trainjob(initializer={"dataset": {"storageUri": "hf://dataset"}}),
        None,
        [CTR],
        set(),
    ),
    (
        "torch trainer with reserved envs",
        trainjob(trainer={"env": [{"name": "PET_NNODES", "value": "1"}, {"name": "PET_NODE_RANK", "value": "1"}]}),
        None,
        [runtime(ml_policy={"torch": {}})],
        {(INV, "spec.trainer.env")},
    ),
    (
        "torch trainer with valid config",
        trainjob(trainer={"numNodes": 2, "env": [{"name": "OTHER", "value": "1"}]}),
        None,
        [runtime(ml_policy={"torch": {}})],
        set(),
    ),
    (
        "invalid dataset storageUri",
        trainjob(initializer={"dataset": {"storageUri": "invalid"}}),
        None,
        [CTR],
        {(INV, "spec.initializer.dataset.storageUri")},
    ),
    ("empty dataset storageUri", trainjob(initializer={"dataset": {"storageUri": ""}}), None, [CTR], set()),
    (
        "dataset storageUri missing path",
        trainjob(initializer={"dataset": {"storageUri": "hf://"}}),
        None,
        [CTR],
        {(INV, "spec.initializer.dataset.storageUri")},
    ),
    (
        "invalid model storageUri",
        trainjob(initializer={"model": {"storageUri": "bad-uri"}}),
        None,
        [CTR],
        {(INV, "spec.initializer.model.storageUri")},
    ),
    (
        "valid model storageUri",
        trainjob(initializer={"model": {"storageUri": "s3://bucket/model"}}),
        None,
        [CTR],
        set(),
    ),
    ("uppercase name", trainjob("Invalid-job-name"), None, [CTR], {(INV, "metadata.name")}),
    ("name starting with a digit", trainjob("1jobname"), None, [CTR], {(INV, "metadata.name")}),
    ("name ending with a hyphen", trainjob("jobname-"), None, [CTR], {(INV, "metadata.name")}),
    ("name of 63 characters", trainjob("a" * 63), None, [CTR], set()),
    ("name of 64 characters", trainjob("a" * 64), None, [CTR], {(INV, "metadata.name")}),
    ("managedBy not supported", trainjob(managedBy="example.com/me"), None, [CTR], {(INV, "spec.managedBy")}),
    ("managedBy multikueue", trainjob(managedBy="kueue.x-k8s.io/multikueue"), None, [CTR], set()),
    (
        "activeDeadlineSeconds of 0",
        trainjob(activeDeadlineSeconds=0),
        None,
        [CTR],
        {(INV, "spec.activeDeadlineSeconds")},
    ),
    # kubeflow/trainer#3805: no bound in v2.3.0; Trainer's CRD since PR #3809.
    ("negative numNodes", trainjob(trainer={"numNodes": -1}), None, [CTR], {(INV, "spec.trainer.numNodes")}),
    (
        "numProcPerNode of 0",
        trainjob(trainer={"numProcPerNode": 0}),
        None,
        [CTR],
        {(INV, "spec.trainer.numProcPerNode")},
    ),
    (
        "trainer command item over 1 MiB",
        trainjob(trainer={"command": ["x" * (1048576 + 1)]}),
        None,
        [CTR],
        {("FieldValueTooLong", "spec.trainer.command[0]")},
    ),
    ("trainer command item at the limit", trainjob(trainer={"command": ["x" * 1048576]}), None, [CTR], set()),
]


@pytest.mark.parametrize(
    ("obj", "old", "cluster", "wanted"), [case[1:] for case in TRAINJOB_CASES], ids=[case[0] for case in TRAINJOB_CASES]
)
def test_trainjob_table(tmp_path, capsys, obj, old, cluster, wanted):  # noqa: PLR0917
    assert causes(answer(tmp_path, capsys, obj, old, cluster)) == wanted


def test_runtime_not_found_in_trainers_words(tmp_path, capsys):
    response = answer(tmp_path, capsys, trainjob(ref="missing"), cluster=[])
    (message,) = messages(response)
    assert message.startswith(
        'Invalid value: {"apiGroup":"trainer.kubeflow.org","kind":"ClusterTrainingRuntime","name":"missing"}: '
        'clustertrainingruntimes.trainer.kubeflow.org "missing" not found: specified clusterTrainingRuntime must be '
        "created before the TrainJob is created"
    )
    assert "--cluster-objects" in message  # offline: how to give the runtime


def test_without_any_runtime_view_the_job_is_refused_with_how_to_give_one(tmp_path, capsys):
    response = answer(tmp_path, capsys, trainjob(), cluster=None)
    assert causes(response) == {(INV, "spec.RuntimeRef")}
    assert "--cluster-objects" in messages(response)[0]


def test_deprecated_runtime_warns(tmp_path, capsys):
    deprecated = runtime(labels={"trainer.kubeflow.org/support": "deprecated"})
    response = answer(tmp_path, capsys, trainjob(), cluster=[deprecated])
    assert response["allowed"] is True
    assert response["warnings"][0].startswith('Referenced ClusterTrainingRuntime "test-runtime" is deprecated')


def test_no_runtime_given_the_runtime_beside_the_job_is_read(tmp_path, capsys):
    path = tmp_path / "both.yaml"
    import yaml

    path.write_text(yaml.safe_dump_all([CTR, trainjob(trainer={"numNodes": 2})]))
    assert main(["validate", str(path)]) == 0
    path.write_text(yaml.safe_dump_all([trainjob()]))
    assert main(["validate", str(path)]) == 1
    assert "--cluster-objects" in capsys.readouterr().out


# --- JobSet plugin Validate (pkg/runtime/framework/plugins/jobset/jobset_test.go) -------------------

PATCH_NODE_ENV = {
    "manager": "test.io/manager",
    "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
        {"name": "node", "template": {"spec": {"template": {"spec": {"containers": [
            {"name": "node", "env": [{"name": "X", "value": "y"}]}
        ]}}}}}
    ]}}},
}  # fmt: skip


def patch(job: str = "node", containers=(), init=(), manager: str = "test.io/manager", **pod: Any) -> dict[str, Any]:
    spec: dict[str, Any] = dict(pod)
    if containers:
        spec["containers"] = [c(n) for n in containers]
    if init:
        spec["initContainers"] = [c(n) for n in init]
    rj: dict[str, Any] = {"name": job}
    if spec:
        rj["template"] = {"spec": {"template": {"spec": spec}}}
    return {"manager": manager, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [rj]}}}}


JOBSET_CASES = [
    ("no initializer", trainjob(), None, [CTR], set()),
    (
        "dataset initializer job without its container",
        trainjob(initializer={"dataset": {}}),
        None,
        [runtime(jobs=[rjob("dataset-initializer"), NODE])],
        {(INV, "spec.runtimeRef")},
    ),
    (
        "model initializer job without its container",
        trainjob(initializer={"model": {}}),
        None,
        [runtime(jobs=[rjob("model-initializer", c("other")), NODE])],
        {(INV, "spec.runtimeRef")},
    ),
    (
        "dataset initializer container without the initializer volume mount",
        trainjob(initializer={"dataset": {}}),
        None,
        [runtime(jobs=[rjob("dataset-initializer", c("dataset-initializer")), NODE])],
        {(INV, "spec.runtimeRef")},
    ),
    (
        "model initializer container without the initializer volume mount",
        trainjob(initializer={"model": {}}),
        None,
        [
            runtime(
                jobs=[
                    rjob("model-initializer", c("model-initializer", volumeMounts=[{"name": "x", "mountPath": "/x"}])),
                    NODE,
                ]
            )
        ],
        {(INV, "spec.runtimeRef")},
    ),
    ("dataset and model initializers together", trainjob(initializer={"dataset": {}, "model": {}}), None, [CTR], set()),
    # kubeflow/trainer#3948: v2.3.0's webhook merges the patches first and admits these three.
    (
        "runtimePatches with an unknown replicated job",
        trainjob(runtimePatches=[patch("ghost")]),
        None,
        [CTR],
        {(INV, "spec.runtimePatches")},
    ),
    (
        "runtimePatches with an unknown initContainer",
        trainjob(runtimePatches=[patch(init=["ghost"])]),
        None,
        [CTR],
        {(INV, "spec.runtimePatches")},
    ),
    (
        "runtimePatches with an unknown container",
        trainjob(runtimePatches=[patch(containers=["ghost"])]),
        None,
        [CTR],
        {(INV, "spec.runtimePatches")},
    ),
    (
        "runtimePatches with envs for a reserved container",
        trainjob(runtimePatches=[PATCH_NODE_ENV]),
        None,
        [CTR],
        {(INV, "spec.runtimePatches")},
    ),
    (
        "runtimePatches on known jobs and containers",
        trainjob(runtimePatches=[patch(containers=["node"], nodeSelector={"a": "b"})]),
        None,
        [CTR],
        set(),
    ),
    (
        "runtimePatches manager not domain-prefixed",
        trainjob(runtimePatches=[patch(manager="manager")]),
        None,
        [CTR],
        {(INV, "spec.runtimePatches.manager")},
    ),
    (
        "runtimePatches manager with a bad host",
        trainjob(runtimePatches=[patch(manager="Bad_Host/x")]),
        None,
        [CTR],
        {(INV, "spec.runtimePatches.manager")},
    ),
]


@pytest.mark.parametrize(
    ("obj", "old", "cluster", "wanted"), [case[1:] for case in JOBSET_CASES], ids=[case[0] for case in JOBSET_CASES]
)
def test_jobset_plugin_table(tmp_path, capsys, obj, old, cluster, wanted):  # noqa: PLR0917
    assert causes(answer(tmp_path, capsys, obj, old, cluster)) == wanted


def _stored(obj):
    """The TrainJob as stored (its patches stamped, as after Trainer's defaulter)."""
    out = copy.deepcopy(obj)
    out["spec"].setdefault("suspend", False)
    for item in out["spec"].get("runtimePatches", []):
        item.setdefault("time", "2026-01-01T00:00:00Z")
    return out


def _jobset(*active: tuple[str, int]) -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "test", "namespace": "default"},
        "status": {"replicatedJobsStatus": [{"name": n, "active": a} for n, a in active]},
    }


OLD = _stored(trainjob(runtimePatches=[patch(nodeSelector={"a": "b"})]))
CHANGED = trainjob(runtimePatches=[patch(nodeSelector={"a": "c"})])
SUSPENDED_OLD = _stored(trainjob(suspend=True, runtimePatches=[patch(nodeSelector={"a": "b"})]))
UPDATE_CASES = [
    ("no changes to runtimePatches", copy.deepcopy(OLD), OLD, [CTR], set()),
    ("changed runtimePatches while running", CHANGED, OLD, [CTR], {(FORB, "spec.runtimePatches")}),
    (
        "changed runtimePatches while suspended, no JobSet",
        {**CHANGED, "spec": {**CHANGED["spec"], "suspend": True}},
        SUSPENDED_OLD,
        [CTR],
        set(),
    ),
    ("changed runtimePatches and unsuspended at once", CHANGED, SUSPENDED_OLD, [CTR], set()),
    (
        "changed runtimePatches and suspended at once",
        {**CHANGED, "spec": {**CHANGED["spec"], "suspend": True}},
        OLD,
        [CTR],
        set(),
    ),
    (
        "suspended, JobSet inactive",
        {**CHANGED, "spec": {**CHANGED["spec"], "suspend": True}},
        SUSPENDED_OLD,
        [CTR, _jobset(("node", 0))],
        set(),
    ),
    (
        "suspended, JobSet active",
        {**CHANGED, "spec": {**CHANGED["spec"], "suspend": True}},
        SUSPENDED_OLD,
        [CTR, _jobset(("node", 1))],
        {(FORB, "spec.runtimePatches")},
    ),
    (
        "trainer changed",
        trainjob(trainer={"numNodes": 3}),
        _stored(trainjob(trainer={"numNodes": 2})),
        [CTR],
        {(INV, "spec.trainer")},
    ),
    (
        "runtimeRef changed",
        trainjob(ref="other"),
        _stored(trainjob()),
        [CTR, runtime("other")],
        {(INV, "spec.runtimeRef")},
    ),
    (
        "a patch's serviceAccountName changed",
        {
            **CHANGED,
            "spec": {
                "runtimeRef": {"name": "test-runtime"},
                "suspend": True,
                "runtimePatches": [patch(serviceAccountName="b")],
            },
        },
        _stored(trainjob(suspend=True, runtimePatches=[patch(serviceAccountName="a")])),
        [CTR],
        {
            (
                INV,
                "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec.serviceAccountName",
            )
        },
    ),
]


@pytest.mark.parametrize(
    ("obj", "old", "cluster", "wanted"), [case[1:] for case in UPDATE_CASES], ids=[case[0] for case in UPDATE_CASES]
)
def test_trainjob_update_table(tmp_path, capsys, obj, old, cluster, wanted):  # noqa: PLR0917
    assert causes(answer(tmp_path, capsys, obj, old, cluster)) == wanted


def test_active_jobset_message(tmp_path, capsys):
    new = {**CHANGED, "spec": {**CHANGED["spec"], "suspend": True}}
    response = answer(tmp_path, capsys, new, SUSPENDED_OLD, [CTR, _jobset(("node", 1), ("launcher", 2))])
    assert messages(response) == [
        "Forbidden: RuntimePatches cannot be modified when the JobSet's ReplicatedJob node is still active",
        "Forbidden: RuntimePatches cannot be modified when the JobSet's ReplicatedJob launcher is still active",
    ]


# --- framework plugins: torch, MPI, XGBoost, Flux, Volcano ------------------------------------------

TORCH = runtime(ml_policy={"torch": {}})
MPI = runtime(
    jobs=[rjob("launcher", c("launcher")), rjob("node", c("node"), ancestor="trainer")],
    ml_policy={"mpi": {"runLauncherAsNode": True}},
)
MPI_NO_LAUNCHER = runtime(jobs=[NODE], ml_policy={"mpi": {"runLauncherAsNode": True}})
XGB = runtime(ml_policy={"xgboost": {}})
FLUX = runtime(ml_policy={"flux": {"numProcPerNode": 1}})
FLUX_INSTALLER = runtime(
    jobs=[rjob("node", c("node"), ancestor="trainer", init=[c("flux-installer")])], ml_policy={"flux": {}}
)
VOLCANO = runtime(podGroupPolicy={"volcano": {}})
VOLCANO["spec"]["template"]["metadata"] = {"annotations": {"scheduling.volcano.sh/queue-name": ""}}
TARGETS = runtime(
    ml_policy={"torch": {"envInjection": {"targets": [{"jobName": "node", "containerNames": ["sidecar"]}]}}}
)

TUNE = {"command": ["tune", "run"], "image": "ghcr.io/kubeflow/trainer/torchtune-trainer"}
LORA = "model.lora_attn_modules=[q_proj, v_proj, output_proj]"


def _tune(name: str, **trainer: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    return trainjob(ref=name, trainer={**TUNE, **trainer}), [runtime(name, ml_policy={"torch": {}})]


PLUGIN_CASES = [
    (
        "torch: multi-device QLoRA for llama3.2-1b",
        *_tune(
            "torchtune-llama3.2-1b",
            numNodes=1,
            args=[LORA, "model.quantize_base=True"],
            resourcesPerNode={"requests": {"example.com/gpu": "2"}},
        )[:1],
        None,
        _tune("torchtune-llama3.2-1b")[1],
        {(INV, "spec.trainer.numProcPerNode"), (INV, "spec.trainer.resourcesPerNode")},
    ),
    (
        "torch: LoRA on many nodes",
        *_tune("torchtune-llama3.3-70b", numNodes=2, args=[LORA])[:1],
        None,
        _tune("torchtune-llama3.3-70b")[1],
        {(INV, "spec.trainer.numNodes")},
    ),
    (
        "torch: LoRA on one node",
        *_tune("torchtune-llama3.2-1b", numNodes=1, args=[LORA])[:1],
        None,
        _tune("torchtune-llama3.2-1b")[1],
        set(),
    ),
    (
        "torch: several immutable configs in args",
        *_tune("torchtune-llama3.2-3b", args=["tokenizer.path=/x", "checkpointer.checkpoint_dir=/y"])[:1],
        None,
        _tune("torchtune-llama3.2-3b")[1],
        {(INV, "spec.trainer.args[0]"), (INV, "spec.trainer.args[1]")},
    ),
    (
        "no mlPolicy: no plugin check",
        trainjob(trainer={"env": [{"name": "PET_NNODES", "value": "1"}]}),
        None,
        [CTR],
        set(),
    ),
    (
        "torch: envInjection target container not in the runtime",
        trainjob(),
        None,
        [TARGETS],
        {(INV, "spec.runtimeRef")},
    ),
    (
        "torch: reserved env PET_MASTER_PORT",
        trainjob(trainer={"env": [{"name": "PET_MASTER_PORT", "value": "1"}]}),
        None,
        [TORCH],
        {(INV, "spec.trainer.env")},
    ),
    (
        "torch: torchtune with an unsupported model",
        trainjob(ref="torchtune-llama3.1-8b", trainer={"command": ["tune", "run"]}),
        None,
        [runtime("torchtune-llama3.1-8b", ml_policy={"torch": {}})],
        {(INV, "spec.runtimeRef.name")},
    ),
    (
        "torch: torchtune 1B on two nodes",
        trainjob(ref="torchtune-llama3.2-1b", trainer={"command": ["tune", "run"], "numNodes": 2}),
        None,
        [runtime("torchtune-llama3.2-1b", ml_policy={"torch": {}})],
        {(INV, "spec.trainer.numNodes")},
    ),
    (
        "torch: torchtune 70B on two nodes",
        trainjob(ref="torchtune-llama3.3-70b", trainer={"command": ["tune", "run"], "numNodes": 2}),
        None,
        [runtime("torchtune-llama3.3-70b", ml_policy={"torch": {}})],
        set(),
    ),
    (
        "torch: torchtune immutable config in args",
        trainjob(ref="torchtune-llama3.2-1b", trainer={"command": ["tune", "run"], "args": ["a=b", "output_dir=/x"]}),
        None,
        [runtime("torchtune-llama3.2-1b", ml_policy={"torch": {}})],
        {(INV, "spec.trainer.args[1]")},
    ),
    (
        "torch: torchtune QLoRA for qwen",
        trainjob(
            ref="torchtune-qwen2.5-1.5b",
            trainer={"command": ["tune", "run"], "numProcPerNode": 1, "args": ["model.quantize_base=True"]},
        ),
        None,
        [runtime("torchtune-qwen2.5-1.5b", ml_policy={"torch": {}})],
        {(INV, "spec.runtimeRef.name")},
    ),
    (
        "mpi: launcher-as-node runtime without a launcher, numNodes 2",
        trainjob(trainer={"numNodes": 2}),
        None,
        [MPI_NO_LAUNCHER],
        {(INV, "spec.trainer.numNodes")},
    ),
    (
        "mpi: launcher-as-node runtime with launcher and node, numNodes 2",
        trainjob(trainer={"numNodes": 2}),
        None,
        [MPI],
        set(),
    ),
    (
        "mpi: reserved env",
        trainjob(trainer={"env": [{"name": "OMPI_MCA_orte_default_hostfile", "value": "x"}]}),
        None,
        [MPI],
        {(INV, "spec.trainer.env")},
    ),
    (
        "xgboost: reserved envs",
        trainjob(
            trainer={
                "env": [
                    {"name": "A", "value": "1"},
                    {"name": "DMLC_TASK_ID", "value": "1"},
                    {"name": "DMLC_NUM_WORKER", "value": "2"},
                ]
            }
        ),
        None,
        [XGB],
        {(FORB, "spec.trainer.env[1]"), (FORB, "spec.trainer.env[2]")},
    ),
    ("xgboost: no reserved envs", trainjob(trainer={"env": [{"name": "A", "value": "1"}]}), None, [XGB], set()),
    (
        "xgboost: torch's reserved env is fine",
        trainjob(trainer={"env": [{"name": "PET_NNODES", "value": "1"}]}),
        None,
        [XGB],
        set(),
    ),
    (
        "flux: numProcPerNode < 1 in the runtime",
        trainjob(),
        None,
        [runtime(ml_policy={"flux": {"numProcPerNode": 0}})],
        {(INV, "spec.trainer.numProcPerNode")},
    ),
    (
        "flux: reserved flux-installer init container",
        trainjob(),
        None,
        [FLUX_INSTALLER],
        {(INV, "spec.trainer.initContainers")},
    ),
    ("flux: valid", trainjob(trainer={"numProcPerNode": 2}), None, [FLUX], set()),
    (
        "volcano: empty queue annotation",
        trainjob(),
        None,
        [VOLCANO],
        {(INV, "spec.annotations[scheduling.volcano.sh/queue-name]")},
    ),
]


@pytest.mark.parametrize(
    ("obj", "old", "cluster", "wanted"), [case[1:] for case in PLUGIN_CASES], ids=[case[0] for case in PLUGIN_CASES]
)
def test_plugin_table(tmp_path, capsys, obj, old, cluster, wanted):  # noqa: PLR0917
    assert causes(answer(tmp_path, capsys, obj, old, cluster)) == wanted


def test_reserved_env_message_lists_them_sorted(tmp_path, capsys):
    job = trainjob(trainer={"env": [{"name": "PET_NODE_RANK", "value": "1"}, {"name": "PET_NNODES", "value": "1"}]})
    (message,) = messages(answer(tmp_path, capsys, job, cluster=[TORCH]))
    assert message.endswith("must not have reserved envs, invalid envs configured: [PET_NNODES PET_NODE_RANK]")


def test_xgboost_message(tmp_path, capsys):
    job = trainjob(trainer={"env": [{"name": "DMLC_TRACKER_URI", "value": "x"}]})
    assert messages(answer(tmp_path, capsys, job, cluster=[XGB])) == [
        "Forbidden: DMLC_TRACKER_URI is reserved for the XGBoost runtime"
    ]


# --- runtime webhooks (pkg/webhooks/{trainingruntime,clustertrainingruntime}_webhook_test.go) -------

LAUNCHER = rjob("launcher", c("launcher"), ancestor=None)


def _replicas(count: int) -> list[dict[str, Any]]:
    jobs = copy.deepcopy([rjob("launcher", c("launcher")), *DEFAULT_JOBS])
    for job in jobs:
        job["replicas"] = count
    return jobs


def _user_ancestor() -> list[dict[str, Any]]:
    jobs = copy.deepcopy(DEFAULT_JOBS)
    for job in jobs:
        job["template"]["metadata"]["labels"][ANCESTOR] = "user-specified"
        job["replicas"] = 2
    return jobs


def _renamed() -> list[dict[str, Any]]:
    jobs = copy.deepcopy(DEFAULT_JOBS)
    for job in jobs:
        job["template"]["spec"]["template"]["spec"]["containers"] = [c("test", image="test")]
    return jobs


RJ = "spec.template.spec.replicatedJobs"
IN_ORDER_WITH_DEPENDS_ON = runtime(
    jobs=[DATASET, {**NODE, "dependsOn": [{"name": "dataset-initializer", "status": "Complete"}]}]
)
IN_ORDER_WITH_DEPENDS_ON["spec"]["template"]["spec"]["startupPolicy"] = {"startupPolicyOrder": "InOrder"}
RUNTIME_CASES = [
    ("valid replicatedJobs", runtime(jobs=_replicas(1)), set()),
    ("unknown user-specified ancestor", runtime(jobs=_user_ancestor()), set()),
    (
        "invalid replicas",
        runtime(jobs=_replicas(2)),
        {(INV, f"{RJ}[1].replicas"), (INV, f"{RJ}[2].replicas"), (INV, f"{RJ}[3].replicas")},
    ),
    (
        "missing required containers",
        runtime(jobs=_renamed()),
        {(INV, f"{RJ}[{i}].template.spec.template.spec.containers") for i in range(3)},
    ),
    (
        "webhook validation disabled",
        runtime(jobs=_replicas(2), labels={"trainer.kubeflow.org/webhook-validation": "disabled"}),
        set(),
    ),
    ("more than one mlPolicy", runtime(ml_policy={"torch": {}, "mpi": {}}), {(INV, "spec.mlPolicy")}),
    (
        "flux numProcPerNode 0",
        runtime(ml_policy={"flux": {"numProcPerNode": 0}}),
        {(INV, "spec.mlPolicy.flux.numProcPerNode")},
    ),
    (
        "mpi numProcPerNode 0 (#3805)",
        runtime(ml_policy={"mpi": {"numProcPerNode": 0}}),
        {(INV, "spec.mlPolicy.mpi.numProcPerNode")},
    ),
    (
        "envInjection naming the node container",
        runtime(ml_policy={"torch": {"envInjection": {"targets": [{"jobName": "node", "containerNames": ["node"]}]}}}),
        {(INV, "spec.mlPolicy.torch.envInjection.targets[0].containerNames")},
    ),
    (
        "startupPolicy InOrder with dependsOn",
        IN_ORDER_WITH_DEPENDS_ON,
        {(INV, "spec.template.spec")},
    ),
    (
        "mpiImplementation not supported",
        runtime(ml_policy={"mpi": {"mpiImplementation": "MPICH"}}),
        {("FieldValueNotSupported", "spec.mlPolicy.mpi.mpiImplementation")},
    ),
]


@pytest.mark.parametrize("kind", ["ClusterTrainingRuntime", "TrainingRuntime"])
@pytest.mark.parametrize(
    ("obj", "wanted"), [case[1:] for case in RUNTIME_CASES], ids=[case[0] for case in RUNTIME_CASES]
)
def test_runtime_table(tmp_path, capsys, kind, obj, wanted):
    obj = copy.deepcopy(obj)
    if kind == "TrainingRuntime":
        obj["kind"] = kind
        obj["metadata"]["namespace"] = "default"
    assert causes(answer(tmp_path, capsys, obj, cluster=[])) == wanted


@pytest.mark.parametrize("kind", ["ClusterTrainingRuntime", "TrainingRuntime"])
def test_runtime_update_is_validated_for_both_kinds(tmp_path, capsys, kind):
    """Trainer v2.3.0's TrainingRuntime webhook does nothing on UPDATE (kubeflow/trainer#3686); jobgate checks both."""
    old = runtime(kind=kind, jobs=_replicas(1))
    new = runtime(kind=kind, jobs=_replicas(2))
    assert causes(answer(tmp_path, capsys, new, old, cluster=[])) == {(INV, f"{RJ}[{i}].replicas") for i in (1, 2, 3)}


def test_runtime_jobset_fields_are_immutable(tmp_path, capsys):
    old = runtime()
    old["spec"]["template"]["spec"]["successPolicy"] = {"operator": "All"}
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["successPolicy"] = {"operator": "Any"}
    response = answer(tmp_path, capsys, new, old, cluster=[])
    assert causes(response) == {(INV, "spec.template.spec.successPolicy")}
    assert messages(response) == ['Invalid value: "object": Value is immutable']


def test_deprecated_cluster_runtime_warns_on_create(tmp_path, capsys):
    deprecated = runtime(labels={"trainer.kubeflow.org/support": "deprecated"})
    response = answer(tmp_path, capsys, deprecated, cluster=[])
    assert response["allowed"] is True
    assert response["warnings"] == [
        'ClusterTrainingRuntime "test-runtime" is deprecated and will be removed in a future release of Kubeflow '
        "Trainer. See runtime deprecation policy: "
        "https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html#runtime-deprecation-policy"
    ]


# --- defaulting (pkg/webhooks/trainjob_webhook_test.go TestDefault, and the CRDs' defaults) ---------


def _mutated(tmp_path, capsys, obj, old=None):
    response = answer(tmp_path, capsys, obj, old, cluster=None, command="mutate")
    assert response["allowed"] is True
    ops = json.loads(base64.b64decode(response["patch"])) if "patch" in response else []
    return apply_patch(copy.deepcopy(obj), ops)


def test_create_stamps_every_patch_without_a_time(tmp_path, capsys):
    job = trainjob(
        runtimePatches=[patch(manager="a.io/x"), {**patch(manager="b.io/y"), "time": "2025-01-01T00:00:00Z"}]
    )
    stored = _mutated(tmp_path, capsys, job)
    first, second = stored["spec"]["runtimePatches"]
    assert first["time"].endswith("Z")
    assert second["time"] == "2025-01-01T00:00:00Z"
    assert stored["spec"]["runtimeRef"] == {
        "name": "test-runtime",
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
    }
    assert stored["spec"]["suspend"] is False
    assert stored["spec"]["managedBy"] == "trainer.kubeflow.org/trainjob-controller"


def test_update_keeps_the_time_of_an_unchanged_patch_and_restamps_a_changed_one(tmp_path, capsys):
    old = trainjob(runtimePatches=[
        {**patch(manager="a.io/x", nodeSelector={"a": "1"}), "time": "2025-01-01T00:00:00Z"},
        {**patch(manager="b.io/y", nodeSelector={"b": "1"}), "time": "2025-01-01T00:00:00Z"},
    ])  # fmt: skip
    new = copy.deepcopy(old)
    new["spec"]["runtimePatches"][0].pop("time")  # unchanged but for its time: the stored time again
    new["spec"]["runtimePatches"][1]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "template"]["spec"]["nodeSelector"] = {"b": "2"}  # fmt: skip
    new["spec"]["runtimePatches"].append(patch(manager="c.io/z"))
    stored = _mutated(tmp_path, capsys, new, old)
    times = [p["time"] for p in stored["spec"]["runtimePatches"]]
    assert times[0] == "2025-01-01T00:00:00Z"
    assert times[1] != "2025-01-01T00:00:00Z"
    assert times[2].endswith("Z")


def test_runtime_crd_defaults(tmp_path, capsys):
    stored = _mutated(tmp_path, capsys, runtime(ml_policy={"mpi": {}}, podGroupPolicy={"coscheduling": {}}))
    assert stored["spec"]["mlPolicy"]["mpi"] == {
        "numProcPerNode": 1,
        "mpiImplementation": "OpenMPI",
        "sshAuthMountPath": "/root/.ssh",
        "runLauncherAsNode": False,
    }
    assert stored["spec"]["podGroupPolicy"]["coscheduling"] == {"scheduleTimeoutSeconds": 60}
    assert all(
        j["replicas"] == 1 and j["groupName"] == "default" for j in stored["spec"]["template"]["spec"]["replicatedJobs"]
    )


def test_an_update_compares_with_the_stored_object_as_stored(tmp_path, capsys):
    """The stored TrainJob has its CRD's defaults (runtimeRef's apiGroup and kind) even where the
    review's oldObject was written without them, and an unchanged patch without a time stays as it was."""
    old = trainjob(runtimePatches=[patch(nodeSelector={"a": "b"})])
    new = copy.deepcopy(old)
    assert causes(answer(tmp_path, capsys, new, old, [CTR])) == set()
