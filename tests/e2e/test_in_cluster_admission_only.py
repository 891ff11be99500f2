"""The admission-only overlays deployed in-cluster as users deploy them: `volcano-admission-only`
serves Volcano's jobs and nothing else, and `kubeflow-admission-only` Kubeflow's.

Each overlay gets a fresh in-cluster node of its own (module scope, one after the other: one
node per machine), jobgate's image, and — as Volcano and Kubeflow are not installed here —
jobgate's copies of their CRDs as stand-ins (``envtest.deploy.STAND_IN_CRDS``). Then through
``kubectl`` on the real apiserver: the family's valid example is stored with jobgate's defaults,
its invalid one refused with jobgate's field errors, a job of another family that jobgate would
refuse is admitted untouched (its CRD is there, the webhooks do not match it), and no jobgate
controller runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import yaml

from envtest.deploy import PROBE, PROBE_SIGN, stand_in
from tests.e2e.conftest import IN_CI, REPO, Cluster, jobgate, running_node

pytestmark = [pytest.mark.e2e, pytest.mark.node]

SYSTEM = "jobgate-system"
NS = "admission-only"
CASES = {
    "volcano-admission-only": {
        "valid": "volcano-pytorch.yaml",
        "invalid": "volcano-duplicate-task.yaml",
        "family": "volcano",
    },
    "kubeflow-admission-only": {
        "valid": "kubeflow-pytorchjob-elastic.yaml",
        "invalid": "kubeflow-mpijob-no-launcher.yaml",
        "family": "kubeflow",
    },
}


@pytest.fixture(scope="module", params=sorted(CASES))
def deployed(request: pytest.FixtureRequest) -> Iterator[tuple[str, Cluster]]:
    from envtest import image
    from envtest.deploy import deploy
    from envtest.node import Node

    reason = image.build_unavailable_reason()
    if reason and not IN_CI:
        pytest.skip(f"cannot build jobgate's image here: {reason}")
    if Node.running is not None:  # a session node of modules that have run: it gives way
        Node.running.give_way = True
    overlay = request.param
    with running_node(lambda: Node(in_cluster=True, give_way=True)) as node:
        cluster = Cluster(node.plane)  # type: ignore[arg-type]
        cluster.kubectl("create", "namespace", NS, check=True)
        deploy(node, overlay, probe_namespace=NS, log=lambda _line: None)
        yield overlay, cluster


def example(name: str, folder: str) -> dict:
    document = next(d for d in yaml.safe_load_all((REPO / "examples" / folder / name).read_text()) if d)
    document["metadata"]["namespace"] = NS
    return document


def test_only_the_webhook_runs_and_it_serves_only_the_family(deployed: tuple[str, Cluster]):
    overlay, cluster = deployed
    deployments = cluster.get_json("deployments", "-n", SYSTEM)["items"]
    assert [d["metadata"]["name"] for d in deployments] == ["jobgate"]
    args = deployments[0]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert f"--families={CASES[overlay]['family']}" in args
    for kind, name in (("mutatingwebhookconfiguration", "jobgate-mutating"),
                       ("validatingwebhookconfiguration", "jobgate-validating")):  # fmt: skip
        configuration = cluster.get_json(kind, name)
        groups = {g for w in configuration["webhooks"] for r in w["rules"] for g in r["apiGroups"]}
        assert groups == {"batch.volcano.sh" if overlay.startswith("volcano") else "kubeflow.org"}


def test_the_familys_valid_job_is_stored_as_jobgate_default_prints_it(deployed: tuple[str, Cluster]):
    overlay, cluster = deployed
    job = example(CASES[overlay]["valid"], "valid")
    created = cluster.kubectl("create", "-f", "-", "-o", "json", input=json.dumps(job))
    assert created.returncode == 0, created.stderr
    stored = json.loads(created.stdout)
    printed = jobgate("default", "-o", "json", "-", input=json.dumps(job))
    assert printed.returncode == 0, printed.stderr
    assert stored["spec"] == json.loads(printed.stdout)["spec"]


def test_the_familys_invalid_job_is_refused_with_jobgates_field_errors(deployed: tuple[str, Cluster]):
    overlay, cluster = deployed
    job = json.dumps(example(CASES[overlay]["invalid"], "invalid"))
    offline = jobgate("validate", "-o", "json", "-", input=job)
    assert offline.returncode == 1, offline.stdout + offline.stderr
    errors = [e for d in json.loads(offline.stdout)["documents"] for e in d.get("errors", [])]
    assert errors
    for mode in ("--dry-run=server", "--dry-run=none"):
        refused = cluster.kubectl("create", mode, "-f", "-", input=job)
        assert refused.returncode == 1, refused.stdout
        for error in errors:
            assert error["field"] in refused.stderr, (error, refused.stderr)


def test_another_familys_job_is_not_sent_to_jobgate(deployed: tuple[str, Cluster]):
    """With KubeDL's TFJob served (the volcano overlay keeps the base's CRD; the kubeflow overlay
    ships none, so it is applied here), the webhooks match only the overlay's family: a TFJob that
    jobgate would refuse is stored, and without jobgate's defaults."""
    _, cluster = deployed
    crd = REPO / "manifests/base/crds/training.kubedl.io_tfjobs.yaml"
    # KubeDL's own CRD, as it would be installed: without jobgate's rules and defaults.
    cluster.kubectl("apply", "--server-side", "-f", "-", input=stand_in(crd), check=True)
    cluster.kubectl("wait", "--for=condition=Established", "-f", str(crd), "--timeout=60s", check=True)
    probe = yaml.safe_load(PROBE.format(namespace=NS))
    created = cluster.kubectl("create", "-f", "-", "-o", "json", input=json.dumps(probe))
    assert created.returncode == 0 and PROBE_SIGN not in created.stderr, created.stderr
    stored = json.loads(created.stdout)
    assert "cleanPodPolicy" not in stored["spec"]  # jobgate's mutating webhook would have set it
