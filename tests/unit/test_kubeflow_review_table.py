"""Kubeflow training-operator v1.9's own test tables, through ``jobgate review validate|mutate``.

Ported case by case from Kubeflow v1.9.0 (commit 6f74c7f6b2ed6c27aabd82d0a316b23f0646059c):
``pkg/webhooks/{pytorch,tensorflow,xgboost,paddlepaddle,jax}/*_webhook_test.go`` (their Go tests
compare error type and field path only, as here), ``pkg/apis/kubeflow.org/v1/mpi_validation_test.go``
(every case an error) and the defaulting tables ``{tensorflow,xgboost,mpi,pytorch}_defaults_test.go``.

Each case is reviewed as the apiserver would send it (an AdmissionReview, through the same entry
point as ``jobgate review``). A Kubeflow test calls its validator on the object as written, while
jobgate defaults first (its /mutate runs before every validating webhook, Kubeflow's included):
no case of these tables changes verdict for that. Where jobgate reports more than Kubeflow, the
extra errors are listed with the case (``EXTRA``): the pod-template checks, which say at
admission what the apiserver would refuse when Kubeflow's operator creates the pods.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest

from jobgate.cli import main
from jobgate.engine.jsonpatch import apply_patch
from testkit.builders import admission_review

KF = "kubeflow.org/v1"
FIELDS = {
    "TFJob": "tfReplicaSpecs",
    "PyTorchJob": "pytorchReplicaSpecs",
    "XGBoostJob": "xgbReplicaSpecs",
    "PaddleJob": "paddleReplicaSpecs",
    "JAXJob": "jaxReplicaSpecs",
    "MPIJob": "mpiReplicaSpecs",
}
CAUSES = {
    "Required": "FieldValueRequired",
    "Invalid": "FieldValueInvalid",
    "NotSupported": "FieldValueNotSupported",
    "Forbidden": "FieldValueForbidden",
}
TEST_IMAGE = "test-image-for-kubeflow-training-operator:latest"


def c(name: str = "", image: str = "", **extra: Any) -> dict[str, Any]:
    """A Go corev1.Container as Kubeflow's tests write it (omitempty: "" fields are absent)."""
    out: dict[str, Any] = {"name": name} if name else {}
    if image:
        out["image"] = image
    return {**out, **extra}


def rs(*containers: dict[str, Any], replicas: int | None = None, restart: str | None = None) -> dict[str, Any]:
    replica: dict[str, Any] = {"template": {"spec": {"containers": list(containers)}}}
    if replicas is not None:
        replica["replicas"] = replicas
    if restart is not None:
        replica["restartPolicy"] = restart
    return replica


def job(kind: str, replicas: dict[str, Any] | None, *, name: str = "test", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = dict(spec)
    body[FIELDS[kind]] = replicas  # Go writes a nil map as null (no omitempty)
    return {"apiVersion": KF, "kind": kind, "metadata": {"name": name, "namespace": "default"}, "spec": body}


def review(tmp_path, command: str, obj: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
    """``jobgate review <command> FILE`` of a CREATE (or an UPDATE when ``old`` is given)."""
    path = tmp_path / "review.json"
    operation = "UPDATE" if old is not None else "CREATE"
    path.write_text(json.dumps(admission_review(obj, operation=operation, old=old)))
    return path


def answer(tmp_path, capsys, command: str, obj: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
    path = review(tmp_path, command, obj, old)
    assert main(["review", command, str(path)]) == 0
    return json.loads(capsys.readouterr().out)["response"]


def causes(response: dict[str, Any]) -> set[tuple[str, str]]:
    if response["allowed"]:
        return set()
    return {(cause["reason"], cause["field"]) for cause in response["status"]["details"]["causes"]}


def stored(tmp_path, capsys, obj: dict[str, Any]) -> dict[str, Any]:
    """The object as stored after jobgate's /mutate patch."""
    response = answer(tmp_path, capsys, "mutate", obj)
    assert response["allowed"] is True
    patch = json.loads(base64.b64decode(response["patch"])) if "patch" in response else []
    return apply_patch(copy.deepcopy(obj), patch)


# --- validation tables -------------------------------------------------------------------------

PT = "spec.pytorchReplicaSpecs"
PT_IMAGE = "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727"
PT_TEST_IMAGE = "gcr.io/kubeflow-ci/pytorch-dist-mnist_test:1.0"
MNIST = {"imagePullPolicy": "Always", "command": ["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=1"]}
VALID_PYTORCH = {
    "Master": rs(c("pytorch", PT_IMAGE, **MNIST), replicas=1, restart="OnFailure"),
    "Worker": rs(c("pytorch", PT_IMAGE, **MNIST), replicas=1, restart="OnFailure"),
}
PT_PAIR = {
    "Master": rs(c("pytorch", PT_TEST_IMAGE), replicas=1),
    "Worker": rs(c("pytorch", PT_TEST_IMAGE), replicas=1),
}
TF = "spec.tfReplicaSpecs"
TF_IMAGE = "kubeflow/tf-dist-mnist-test:1.0"
VALID_TF = {
    "Worker": rs(
        c(
            "tensorflow",
            "kubeflow/tf-mnist-with-summaries:latest",
            command=["python", "/var/tf_mnist/mnist_with_summaries.py"],
        ),
        replicas=2,
        restart="OnFailure",
    )
}
XGB = "spec.xgbReplicaSpecs"
XGB_IMAGE = "gcr.io/kubeflow-ci/xgboost-dist-mnist_test:1.0"
XGB_PORT = {"ports": [{"name": "xgboostjob-port", "containerPort": 9991}], "imagePullPolicy": "Always"}
VALID_XGB = {
    "Master": rs(c("xgboost", "docker.io/kubeflow/xgboost-dist-iris:latest", **XGB_PORT), replicas=1, restart="Never"),
    "Worker": rs(
        c("xgboost", "docker.io/kubeflow/xgboost-dist-iris:latest", **XGB_PORT), replicas=2, restart="ExitCode"
    ),
}
PD = "spec.paddleReplicaSpecs"
VALID_PADDLE = {
    "Worker": rs(
        c(
            "paddle",
            "registry.baidubce.com/paddlepaddle/paddle:2.4.0rc0-cpu",
            command=["python"],
            args=["-m", "paddle.distributed.launch", "run_check"],
            ports=[{"name": "master", "containerPort": 37777}],
            imagePullPolicy="Always",
        ),
        replicas=2,
        restart="Never",
    )
}
JX = "spec.jaxReplicaSpecs"
VALID_JAX = {
    "Worker": rs(
        c(
            "jax",
            "docker.io/kubeflow/jaxjob-simple:latest",
            ports=[{"name": "jaxjob-port", "containerPort": 6666}],
            imagePullPolicy="Always",
            command=["python", "train.py"],
        ),
        replicas=1,
        restart="OnFailure",
    )
}
OPERATOR = {"managedBy": "kubeflow.org/training-operator"}
MULTIKUEUE = {"managedBy": "kueue.x-k8s.io/multikueue"}
OTHER = {"managedBy": "other-job-controller"}
NAMELESS_CONTAINER = "template.spec.containers[0].name"
DEPRECATED_NPROC = "spec.elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode instead"

# (name, job, old job or None, Kubeflow's expected errors, jobgate's extra errors, Kubeflow's warnings)
CASES: list[tuple[str, dict[str, Any], dict[str, Any] | None, list[tuple[str, str]], list[tuple[str, str]], list[str]]]
CASES = [
    # pytorchjob_webhook_test.go
    (
        "PyTorchJob: valid PyTorchJob",
        job("PyTorchJob", VALID_PYTORCH, runPolicy=OPERATOR, elasticPolicy={"rdzvBackend": "c10d"}),
        None,
        [],
        [],
        [],
    ),
    (
        "PyTorchJob: pytorchJob name does not meet DNS1035",
        job("PyTorchJob", VALID_PYTORCH, name="0-test"),
        None,
        [("Invalid", "metadata.name")],
        [],
        [],
    ),
    (
        "PyTorchJob: no containers",
        job("PyTorchJob", {"Worker": rs()}),
        None,
        [("Required", f"{PT}[Worker].template.spec.containers")] * 2,
        [],
        [],
    ),
    (
        "PyTorchJob: image is empty",
        job("PyTorchJob", {"Worker": rs(c("pytorch", ""))}),
        None,
        [("Required", f"{PT}[Worker].template.spec.containers[0].image")],
        [],
        [],
    ),
    (
        "PyTorchJob: pytorchJob default container name doesn't present",
        job("PyTorchJob", {"Worker": rs(c("", PT_TEST_IMAGE))}),
        None,
        [("Required", f"{PT}[Worker].template.spec.containers")],
        [("Required", f"{PT}[Worker].{NAMELESS_CONTAINER}")],
        [],
    ),
    (
        "PyTorchJob: the number of replicas in masterReplica is other than 1",
        job("PyTorchJob", {"Master": rs(c("pytorch", PT_TEST_IMAGE), replicas=2)}),
        None,
        [("Forbidden", f"{PT}[Master].replicas")],
        [],
        [],
    ),
    (
        "PyTorchJob: Spec.ElasticPolicy.NProcPerNode are set",
        job("PyTorchJob", PT_PAIR, elasticPolicy={"nProcPerNode": 1}),
        None,
        [],
        [],
        [DEPRECATED_NPROC],
    ),
    (
        "PyTorchJob: Spec.NprocPerNode and Spec.ElasticPolicy.NProcPerNode are set",
        job("PyTorchJob", PT_PAIR, nprocPerNode="1", elasticPolicy={"nProcPerNode": 1}),
        None,
        [("Forbidden", "spec.elasticPolicy.nProcPerNode")],
        [],
        [DEPRECATED_NPROC],
    ),
    (
        "PyTorchJob: attempt to set unsupported managedBy controller name gets rejected",
        job("PyTorchJob", VALID_PYTORCH, runPolicy=OTHER),
        None,
        [("NotSupported", "spec.runPolicy.managedBy")],
        [],
        [],
    ),
    (
        # Kubeflow's unit test expects this denial; its deployed webhook never gives it (it
        # compares the new object with itself on UPDATE). jobgate gives it.
        "PyTorchJob: attempt to update the managedBy field gets rejected",
        job("PyTorchJob", VALID_PYTORCH, runPolicy=MULTIKUEUE),
        job("PyTorchJob", VALID_PYTORCH, runPolicy=OPERATOR),
        [("Invalid", "spec.runPolicy.managedBy")],
        [],
        [],
    ),
    (
        "PyTorchJob: attempt to configure elasticPolicy when no worker is configured",
        job("PyTorchJob", {"Master": rs(c("pytorch", PT_TEST_IMAGE), replicas=1)}, elasticPolicy={}),
        None,
        [("Required", f"{PT}[Worker]")],
        [],
        [],
    ),
    (
        "PyTorchJob: attempt to configure worker with 0 replicas",
        job("PyTorchJob", {"Worker": rs(c("pytorch", PT_TEST_IMAGE), replicas=0)}, elasticPolicy={}),
        None,
        [("Forbidden", f"{PT}[Worker].replicas")],
        [],
        [],
    ),
    # tfjob_webhook_test.go
    ("TFJob: valid tfJob", job("TFJob", VALID_TF, runPolicy=OPERATOR), None, [], [], []),
    (
        "TFJob: TFJob name does not meet DNS1035",
        job("TFJob", VALID_TF, name="00test"),
        None,
        [("Invalid", "metadata.name")],
        [],
        [],
    ),
    (
        "TFJob: no containers",
        job("TFJob", {"Worker": rs()}),
        None,
        [("Required", f"{TF}[Worker].template.spec.containers")] * 2,
        [],
        [],
    ),
    (
        "TFJob: empty image",
        job("TFJob", {"Worker": rs(c("tensorflow", ""))}),
        None,
        [("Required", f"{TF}[Worker].template.spec.containers[0].image")],
        [],
        [],
    ),
    (
        "TFJob: tfJob default container name doesn't present",
        job("TFJob", {"Worker": rs(c("", TF_IMAGE))}),
        None,
        [("Required", f"{TF}[Worker].template.spec.containers")],
        [("Required", f"{TF}[Worker].{NAMELESS_CONTAINER}")],
        [],
    ),
    (
        "TFJob: there are more than 2 masterReplica's or ChiefReplica's",
        job("TFJob", {"Chief": rs(c("tensorflow", TF_IMAGE)), "Master": rs(c("tensorflow", TF_IMAGE))}),
        None,
        [("Forbidden", TF)],
        [],
        [],
    ),
    (
        "TFJob: attempt to set unsupported managedBy controller name gets rejected",
        job("TFJob", VALID_TF, runPolicy=OTHER),
        None,
        [("NotSupported", "spec.runPolicy.managedBy")],
        [],
        [],
    ),
    # xgboostjob_webhook_test.go
    ("XGBoostJob: valid XGBoostJob", job("XGBoostJob", VALID_XGB, runPolicy=OPERATOR), None, [], [], []),
    (
        "XGBoostJob: XGBoostJob name does not meet DNS1035",
        job("XGBoostJob", VALID_XGB, name="-test"),
        None,
        [("Invalid", "metadata.name")],
        [],
        [],
    ),
    (
        "XGBoostJob: empty containers",
        job("XGBoostJob", {"Master": rs(replicas=1)}),
        None,
        [("Required", f"{XGB}[Master].template.spec.containers")] * 2,
        [],
        [],
    ),
    (
        "XGBoostJob: image is empty",
        job("XGBoostJob", {"Master": rs(c("xgboost", ""), replicas=1)}),
        None,
        [("Required", f"{XGB}[Master].template.spec.containers[0].image")],
        [],
        [],
    ),
    (
        "XGBoostJob: xgboostJob default container name doesn't present",
        job("XGBoostJob", {"Master": rs(c("", XGB_IMAGE), replicas=1)}),
        None,
        [("Required", f"{XGB}[Master].template.spec.containers")],
        [("Required", f"{XGB}[Master].{NAMELESS_CONTAINER}")],
        [],
    ),
    (
        "XGBoostJob: the number of replicas in masterReplica is other than 1",
        job("XGBoostJob", {"Master": rs(c("xgboost", XGB_IMAGE), replicas=2)}),
        None,
        [("Forbidden", f"{XGB}[Master].replicas")],
        [],
        [],
    ),
    (
        "XGBoostJob: masterReplica does not exist",
        job("XGBoostJob", {"Worker": rs(c("xgboost", XGB_IMAGE), replicas=1)}),
        None,
        [("Required", f"{XGB}[Master]")],
        [],
        [],
    ),
    (
        "XGBoostJob: attempt to set unsupported managedBy controller name gets rejected",
        job("XGBoostJob", VALID_XGB, runPolicy=OTHER),
        None,
        [("NotSupported", "spec.runPolicy.managedBy")],
        [],
        [],
    ),
    # paddlepaddle_webhook_test.go
    ("PaddleJob: valid paddleJob", job("PaddleJob", VALID_PADDLE, runPolicy=OPERATOR), None, [], [], []),
    (
        "PaddleJob: paddleJob name does not meet DNS1035",
        job("PaddleJob", VALID_PADDLE, name="__test"),
        None,
        [("Invalid", "metadata.name")],
        [],
        [],
    ),
    (
        "PaddleJob: no containers",
        job("PaddleJob", {"Worker": rs()}),
        None,
        [("Required", f"{PD}[Worker].template.spec.containers")] * 2,
        [],
        [],
    ),
    (
        "PaddleJob: image is empty",
        job("PaddleJob", {"Worker": rs(c("paddle", ""))}),
        None,
        [("Required", f"{PD}[Worker].template.spec.containers[0].image")],
        [],
        [],
    ),
    (
        "PaddleJob: paddle default container name doesn't find",
        job("PaddleJob", {"Worker": rs(c("", "gcr.io/kubeflow-ci/paddle-dist-mnist_test:1.0"))}),
        None,
        [("Required", f"{PD}[Worker].template.spec.containers")],
        [("Required", f"{PD}[Worker].{NAMELESS_CONTAINER}")],
        [],
    ),
    ("PaddleJob: replicaSpec is nil", job("PaddleJob", None), None, [("Required", PD)], [], []),
    (
        "PaddleJob: attempt to set unsupported managedBy controller name gets rejected",
        job("PaddleJob", VALID_PADDLE, runPolicy=OTHER),
        None,
        [("NotSupported", "spec.runPolicy.managedBy")],
        [],
        [],
    ),
    # jaxjob_webhook_test.go
    ("JAXJob: valid JAXJob", job("JAXJob", VALID_JAX), None, [], [], []),
    (
        "JAXJob: jaxJob name does not meet DNS1035",
        job("JAXJob", VALID_JAX, name="0-test"),
        None,
        [("Invalid", "metadata.name")],
        [],
        [],
    ),
    (
        "JAXJob: no containers",
        job("JAXJob", {"Worker": rs()}),
        None,
        [("Required", f"{JX}[Worker].template.spec.containers")] * 2,
        [],
        [],
    ),
    (
        "JAXJob: image is empty",
        job("JAXJob", {"Worker": rs(c("jax", ""))}),
        None,
        [("Required", f"{JX}[Worker].template.spec.containers[0].image")],
        [],
        [],
    ),
    (
        "JAXJob: jaxJob default container name doesn't present",
        job("JAXJob", {"Worker": rs(c("", "gcr.io/kubeflow-ci/jaxjob-dist-spmd-mnist_test:1.0"))}),
        None,
        [("Required", f"{JX}[Worker].template.spec.containers")],
        [("Required", f"{JX}[Worker].{NAMELESS_CONTAINER}")],
        [],
    ),
    ("JAXJob: replicaSpec is nil", job("JAXJob", None), None, [("Required", JX)], [], []),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_kubeflow_webhook_table(tmp_path, capsys, case):
    _, job_, old, expected, extra, warnings = case
    response = answer(tmp_path, capsys, "validate", job_, old)
    assert response["allowed"] is (not expected)
    want = {(CAUSES[kind], path) for kind, path in expected}
    assert causes(response) == want | {(CAUSES[kind], path) for kind, path in extra}
    assert [w for w in response.get("warnings", []) if "deprecated" in w] == warnings
    if response["allowed"] is False:
        # The apiserver's 422 Invalid, as kubectl shows it.
        assert response["status"]["code"] == 422
        assert response["status"]["reason"] == "Invalid"


# mpi_validation_test.go: every case is an error (Kubeflow checks only that); jobgate's causes.
MPI = "spec.mpiReplicaSpecs"
MPI_CASES = [
    ("nil replica specs", job("MPIJob", None), {("FieldValueRequired", MPI)}),
    (
        "launcher without containers",
        job("MPIJob", {"Launcher": rs()}),
        {("FieldValueRequired", f"{MPI}[Launcher].template.spec.containers")},
    ),
    (
        "container without image (and name)",
        job("MPIJob", {"Launcher": rs(c("", ""))}),
        {
            ("FieldValueRequired", f"{MPI}[Launcher].template.spec.containers[0].image"),
            ("FieldValueRequired", f"{MPI}[Launcher].template.spec.containers[0].name"),
        },
    ),
    (
        "container without name",
        job("MPIJob", {"Launcher": rs(c("", TF_IMAGE))}),
        {("FieldValueRequired", f"{MPI}[Launcher].template.spec.containers[0].name")},
    ),
    (
        "two launchers",
        job("MPIJob", {"Launcher": rs(c("tensorflow", TF_IMAGE), replicas=2)}),
        {("FieldValueForbidden", f"{MPI}[Launcher].replicas")},
    ),
]


@pytest.mark.parametrize(("job_", "want"), [c[1:] for c in MPI_CASES], ids=[c[0] for c in MPI_CASES])
def test_kubeflow_mpijob_validation_table(tmp_path, capsys, job_, want):
    response = answer(tmp_path, capsys, "validate", job_)
    assert response["allowed"] is False
    assert causes(response) == want


# --- defaulting tables -------------------------------------------------------------------------


def tf_expected(clean: str, restart: str, ports: list[dict[str, Any]] | None) -> dict[str, Any]:
    """expectedTFJob of tensorflow_defaults_test.go, plus the CRD's runPolicy.suspend default."""
    container = c("tensorflow", TEST_IMAGE, **({"ports": ports} if ports else {}))
    return {
        "successPolicy": "",
        "runPolicy": {"cleanPodPolicy": clean, "suspend": False},
        "tfReplicaSpecs": {"Worker": rs(container, replicas=1, restart=restart)},
    }


TF_PORT = {"name": "tfjob-port", "containerPort": 2222}
CUSTOM_PORT = {"name": "customPort", "containerPort": 1234}
TF_DEFAULT_CASES = [
    (
        "set replicas",
        {"tfReplicaSpecs": {"Worker": rs(c("tensorflow", TEST_IMAGE, ports=[TF_PORT]), restart="Always")}},
        tf_expected("None", "Always", [TF_PORT]),
    ),
    (
        "set replicas with default restartpolicy",
        {"tfReplicaSpecs": {"Worker": rs(c("tensorflow", TEST_IMAGE, ports=[TF_PORT]))}},
        tf_expected("None", "Never", [TF_PORT]),
    ),
    (
        "set replicas with default port",
        {"tfReplicaSpecs": {"Worker": rs(c("tensorflow", TEST_IMAGE), replicas=1, restart="Always")}},
        tf_expected("None", "Always", [TF_PORT]),
    ),
    (
        "set replicas adding default port",
        {
            "tfReplicaSpecs": {
                "Worker": rs(c("tensorflow", TEST_IMAGE, ports=[CUSTOM_PORT]), replicas=1, restart="Always")
            }
        },
        tf_expected("None", "Always", [CUSTOM_PORT, TF_PORT]),
    ),
    (
        "set custom cleanpod policy",
        {
            "runPolicy": {"cleanPodPolicy": "All"},
            "tfReplicaSpecs": {
                "Worker": rs(c("tensorflow", TEST_IMAGE, ports=[CUSTOM_PORT]), replicas=1, restart="Always")
            },
        },
        tf_expected("All", "Always", [CUSTOM_PORT, TF_PORT]),
    ),
    (
        # TestSetTypeNames
        "set type names to camel case",
        {"tfReplicaSpecs": {"WORKER": rs(c("tensorflow", TEST_IMAGE, ports=[TF_PORT]), restart="Always")}},
        tf_expected("None", "Always", [TF_PORT]),
    ),
]


def xgb_expected(clean: str, restart: str, replicas: int, port: int = 9999) -> dict[str, Any]:
    """expectedXGBoostJob of xgboost_defaults_test.go, plus the CRD's runPolicy.suspend default."""
    ports = [{"name": "xgboostjob-port", "containerPort": port}]
    return {
        "runPolicy": {"cleanPodPolicy": clean, "suspend": False},
        "xgbReplicaSpecs": {"Worker": rs(c("xgboost", TEST_IMAGE, ports=ports), replicas=replicas, restart=restart)},
    }


XGB_DEFAULT_PORT = {"name": "xgboostjob-port", "containerPort": 9999}
XGB_DEFAULT_CASES = [
    (
        "set spec with minimum setting",
        {"xgbReplicaSpecs": {"Worker": rs(c("xgboost", TEST_IMAGE))}},
        xgb_expected("None", "Never", 1),
    ),
    (
        "Set spec with restart policy",
        {"xgbReplicaSpecs": {"Worker": rs(c("xgboost", TEST_IMAGE), restart="OnFailure")}},
        xgb_expected("None", "OnFailure", 1),
    ),
    (
        "Set spec with replicas",
        {"xgbReplicaSpecs": {"Worker": rs(c("xgboost", TEST_IMAGE), replicas=3)}},
        xgb_expected("None", "Never", 3),
    ),
    (
        "Set spec with default node port name and port",
        {"xgbReplicaSpecs": {"Worker": rs(c("xgboost", TEST_IMAGE, ports=[XGB_DEFAULT_PORT]))}},
        xgb_expected("None", "Never", 1),
    ),
    (
        "Set spec with node port",
        {"xgbReplicaSpecs": {"Worker": rs(c("xgboost", TEST_IMAGE, ports=[XGB_DEFAULT_PORT]))}},
        xgb_expected("None", "Never", 1, 9999),
    ),
    (
        "set spec with cleanpod policy",
        {"runPolicy": {"cleanPodPolicy": "All"}, "xgbReplicaSpecs": {"Worker": rs(c("xgboost", TEST_IMAGE))}},
        xgb_expected("All", "Never", 1),
    ),
]


def mpi_expected(clean: str, restart: str) -> dict[str, Any]:
    """expectedMPIJob of mpi_defaults_test.go, plus the CRD's runPolicy.suspend default."""
    return {
        "cleanPodPolicy": clean,
        "runPolicy": {"cleanPodPolicy": clean, "suspend": False},
        "mpiReplicaSpecs": {
            "Launcher": rs(c("mpi", TEST_IMAGE), replicas=1, restart=restart),
            "Worker": rs(c("mpi", TEST_IMAGE), replicas=0, restart=restart),
        },
    }


MPI_DEFAULT_CASES = [
    (
        "set default replicas",
        {
            "cleanPodPolicy": "Running",
            "runPolicy": {"cleanPodPolicy": "Running"},
            "mpiReplicaSpecs": {
                "Launcher": rs(c("mpi", TEST_IMAGE), restart="Always"),
                "Worker": rs(c("mpi", TEST_IMAGE), restart="Always"),
            },
        },
        mpi_expected("Running", "Always"),
    ),
    (
        "set default clean pod policy",
        {"mpiReplicaSpecs": {"Launcher": rs(c("mpi", TEST_IMAGE)), "Worker": rs(c("mpi", TEST_IMAGE))}},
        mpi_expected("None", "Never"),
    ),
    (
        "set default restart policy",
        {"mpiReplicaSpecs": {"Launcher": rs(c("mpi", TEST_IMAGE)), "Worker": rs(c("mpi", TEST_IMAGE))}},
        mpi_expected("None", "Never"),
    ),
]

DEFAULT_CASES = (
    [("TFJob", *case) for case in TF_DEFAULT_CASES]
    + [("XGBoostJob", *case) for case in XGB_DEFAULT_CASES]
    + [("MPIJob", *case) for case in MPI_DEFAULT_CASES]
)


@pytest.mark.parametrize(
    ("kind", "spec", "expected"),
    [(k, s, e) for k, _, s, e in DEFAULT_CASES],
    ids=[f"{k}: {n}" for k, n, *_ in DEFAULT_CASES],
)
def test_kubeflow_defaulting_table(tmp_path, capsys, kind, spec, expected):
    obj = {"apiVersion": KF, "kind": kind, "metadata": {"name": "test", "namespace": "default"}, "spec": spec}
    assert stored(tmp_path, capsys, obj)["spec"] == expected
    # Defaulting is idempotent: the stored object gets no further patch.
    assert "patch" not in answer(tmp_path, capsys, "mutate", stored(tmp_path, capsys, obj))


# pytorch_defaults_test.go: TestSetElasticPolicy (min/max) and TestSetDefaultNprocPerNode.
ELASTIC_CASES = [
    ("minReplicas and maxReplicas to null", {}, (1, 1)),
    ("minReplicas and maxReplicas to 1", {"maxReplicas": 1, "minReplicas": 1}, (1, 1)),
    ("minReplicas to null, maxRepliacs to 1", {"maxReplicas": 1}, (1, 1)),
    ("maxRepliacs to null, minReplicas to 1", {"minReplicas": 1}, (1, 1)),
]


@pytest.mark.parametrize("kind", ["PyTorchJob", "PaddleJob"])
@pytest.mark.parametrize(("policy", "want"), [c[1:] for c in ELASTIC_CASES], ids=[c[0] for c in ELASTIC_CASES])
def test_kubeflow_elastic_policy_defaults(tmp_path, capsys, kind, policy, want):
    container = "pytorch" if kind == "PyTorchJob" else "paddle"
    obj = job(kind, {"Worker": {**rs(c(container, TEST_IMAGE)), "replicas": 1}}, elasticPolicy=dict(policy))
    elastic = stored(tmp_path, capsys, obj)["spec"]["elasticPolicy"]
    assert (elastic["minReplicas"], elastic["maxReplicas"]) == want


@pytest.mark.parametrize("elastic", [{"elasticPolicy": {}}, {}], ids=["elastic policy without nProcPerNode", "none"])
def test_kubeflow_default_nproc_per_node(tmp_path, capsys, elastic):
    obj = job("PyTorchJob", {"Worker": rs(c("pytorch", TEST_IMAGE), replicas=1)}, **elastic)
    assert stored(tmp_path, capsys, obj)["spec"]["nprocPerNode"] == "auto"
