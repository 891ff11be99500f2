"""Volcano Job, T9k GenericJob and DIJob on a real kubelet node: replicas rendezvous and the job succeeds.

The same job image program as ``test_real_node.py`` (``rendezvous.py hosts``): each replica gets its
host list and its own position only from what jobgate's controller injected — Volcano's ``svc``/``env``
plugin variables, DIJob's ``DI_NODES``/``DI_RANK``, T9k's ``$(service...)``/``$(rank)`` substitution —
calls every peer over TCP through the services and hostnames the controller created, and exits 0.
Kubernetes expands ``$(VAR)`` in a command from the container's environment; T9k's ``$(...)`` is
substituted by the controller itself. No status is patched: each job reaches its success phase because
real processes exited 0.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import Cluster, ControllerProcess, apply_rbac_from, token_kubeconfig, wait_until
from tests.e2e.test_real_node import container, template

pytestmark = [pytest.mark.e2e, pytest.mark.node]

NS = "node-families"


@pytest.fixture(scope="module")
def controller(node_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    apply_rbac_from(node_cluster, "manifests/base")
    node_cluster.kubectl("create", "namespace", NS, check=True)
    kubeconfig = token_kubeconfig(node_cluster, "jobgate-controller", tmp_path_factory.mktemp("nf-ctrl") / "kc")
    process = ControllerProcess(kubeconfig, NS, tmp_path_factory.mktemp("nf-ctrl-log") / "controller.log")
    wait_until(process.is_leader, 30, message="controller leadership")
    yield process
    process.stop()


def apply(cluster: Cluster, job: dict) -> None:
    job["metadata"]["namespace"] = NS
    cluster.kubectl("apply", "-f", "-", input=json.dumps(job), check=True)


def wait_phase(cluster: Cluster, resource: str, path: str, wanted: str, *, pods: str, timeout: int = 100) -> None:
    """``kubectl wait --for=jsonpath`` as a user runs it; on failure, say what the job and its pods looked like.

    The timeout stays under ``Cluster.kubectl``'s own 120 s limit, so a stuck job fails with that report.
    """
    result = cluster.kubectl("wait", "-n", NS, f"--for=jsonpath={{{path}}}={wanted}", resource, f"--timeout={timeout}s")
    if result.returncode != 0:
        got = cluster.kubectl("get", "-n", NS, resource, "-o", "yaml").stdout
        listing = cluster.kubectl("get", "pods", "-n", NS, "-o", "wide").stdout
        logs = cluster.kubectl("logs", "-n", NS, "-l", pods, "--tail=20", "--prefix").stdout
        raise AssertionError(f"{resource} not {wanted}: {result.stderr}\n{got}\n{listing}\n{logs}")


def logs(cluster: Cluster, pod: str) -> str:
    return cluster.kubectl("logs", "-n", NS, pod, check=True).stdout


def test_volcano_svc_host_lists_mesh_the_workers_and_the_job_completes(
    node_cluster: Cluster, controller: ControllerProcess
) -> None:
    # VC_WORKER_HOSTS (svc plugin) and VC_TASK_INDEX (env plugin), expanded by the kubelet.
    main = container(
        "main", "hosts", "--hosts", "$(VC_WORKER_HOSTS)", "--index", "$(VC_TASK_INDEX)", "--port", "2222", port=2222
    )
    pod = template(main)
    pod["spec"]["restartPolicy"] = "Never"
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "vc-mesh"},
        "spec": {
            # no Volcano scheduler on the node: the kube-scheduler places the pods
            "schedulerName": "default-scheduler",
            "minAvailable": 3,
            "plugins": {"svc": [], "env": []},
            "tasks": [{"name": "worker", "replicas": 3, "template": pod}],
        },
    }
    apply(node_cluster, job)
    wait_phase(node_cluster, "job.batch.volcano.sh/vc-mesh", ".status.state.phase", "Completed",
               pods="job-name=vc-mesh")  # fmt: skip
    for index in range(3):
        text = logs(node_cluster, f"vc-mesh-worker-{index}")
        assert f"member{index}: calls" in text and "rendezvous complete" in text, text
        # both other workers reached by the <pod>.<job> names the svc plugin listed
        assert text.count("reached member") == 2, text
        assert all(f"vc-mesh-worker-{i}.vc-mesh:2222" in text for i in range(3) if i != index), text


def test_dijob_replicas_reach_each_other_by_di_nodes_and_the_job_succeeds(
    node_cluster: Cluster, controller: ControllerProcess
) -> None:
    # DI_NODES lists every replica's FQDN under the headless Service di-<job>; DI_RANK is the position.
    main = container("di", "hosts", "--hosts", "$(DI_NODES)", "--index", "$(DI_RANK)", "--port", "22270", port=22270)
    job = {
        "apiVersion": "diengine.opendilab.org/v2alpha1",
        "kind": "DIJob",
        "metadata": {"name": "dj-mesh"},
        "spec": {
            "tasks": [
                {"type": "learner", "name": "learner", "replicas": 1, "template": template(main)},
                {"type": "collector", "name": "collector", "replicas": 2, "template": template(main)},
            ],
        },
    }
    apply(node_cluster, job)
    wait_phase(node_cluster, "dijob/dj-mesh", ".status.phase", "Succeeded", pods="job-name=dj-mesh")
    for pod, rank in (("dj-mesh-learner-0", 0), ("dj-mesh-collector-0", 1), ("dj-mesh-collector-1", 2)):
        text = logs(node_cluster, pod)
        assert f"member{rank}: calls" in text and "rendezvous complete" in text, text
        assert text.count("reached member") == 2, text
        assert ".di-dj-mesh." in text, text


def test_genericjob_service_substitution_meshes_the_workers_and_the_job_succeeds(
    node_cluster: Cluster, controller: ControllerProcess
) -> None:
    # The controller substitutes $(service.worker[i].host), $(service.port[rdv]) and $(rank) itself.
    hosts = ",".join(f"$(service.worker[{i}].host)" for i in range(3))
    main = container("main", "hosts", "--hosts", hosts, "--index", "$(rank)", "--port", "$(service.port[rdv])",
                     port=7300)  # fmt: skip
    job = {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "GenericJob",
        "metadata": {"name": "gj-mesh"},
        "spec": {
            "service": {"ports": [{"name": "rdv", "port": 7300}]},
            "replicaSpecs": [{"type": "worker", "replicas": 3, "template": template(main)}],
        },
    }
    apply(node_cluster, job)
    wait_phase(node_cluster, "genericjob/gj-mesh", ".status.phase", "Succeeded", pods="job-name=gj-mesh")
    for index in range(3):
        text = logs(node_cluster, f"gj-mesh-worker-{index}")
        assert f"member{index}: calls" in text and "rendezvous complete" in text, text
        assert text.count("reached member") == 2, text
        assert all(f"gj-mesh-worker-{i}.{NS}.svc:7300" in text for i in range(3) if i != index), text
