"""kubectl against a real kube-apiserver with jobgate's webhooks: apply, dry-run, explain, failure policy."""

from __future__ import annotations

import json
import ssl
import urllib.request
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.e2e.conftest import REPO, Cluster, WebhookProcess, examples_with_crds, jobgate, wait_for_webhook

VALID = examples_with_crds("valid")
INVALID = examples_with_crds("invalid")
DENIED_BY = 'admission webhook "validate.jobgate.dev" denied the request'


def assert_denied_like_offline(stderr: str, path: Path) -> None:
    """kubectl prints a 422/Invalid denial from its causes: 'The <Kind> "<name>" is invalid:' and the field
    errors (it drops the status message, and with it the webhook's name). Every line the cluster prints,
    offline prints too; offline may print more: when the job breaks the CRD schema the apiserver refuses it
    before the validating webhook runs, while ``jobgate validate`` reports the rule violations as well."""
    manifest = load(path)
    heading = f'The {manifest["kind"]} "{manifest["metadata"]["name"]}" is invalid'
    assert heading in stderr, stderr
    report = offline(path)
    assert report["outcome"] == "denied"
    offline_messages = {e["message"] for e in report["errors"]}
    cluster_lines = cluster_field_errors(stderr, heading)
    assert cluster_lines, stderr
    assert cluster_lines <= offline_messages, (sorted(cluster_lines - offline_messages), stderr)
    if cluster_lines != offline_messages:
        assert any(" in body " in line or "Unsupported value" in line for line in cluster_lines), stderr


def cluster_field_errors(stderr: str, heading: str) -> set[str]:
    """The field errors kubectl printed after the heading: one inline, or several as '* ' lines.

    Lines of the apiserver's own quirk (``<nil>: Invalid value: "": Checked value must be of type integer
    with format int32 in ...``, a second report of an out-of-range int32 without its path) are left out.
    """
    text = stderr[stderr.index(heading) + len(heading) :]
    if text.startswith(": \n"):
        lines = [line[2:] for line in text.splitlines() if line.startswith("* ")]
    else:
        lines = [text.removeprefix(": ").splitlines()[0]]
    return {line for line in lines if not line.startswith("<nil>: ")}


def load(path: Path) -> dict:
    return YAML(typ="safe").load(path.read_text())


def offline(path: Path) -> dict:
    """``jobgate validate -o json`` for one file: the first (only) document's report."""
    result = jobgate("validate", "-o", "json", str(path))
    (document,) = json.loads(result.stdout)["documents"]
    return document


def offline_default(path: Path) -> dict:
    result = jobgate("default", str(path))
    assert result.returncode == 0, result.stderr
    return YAML(typ="safe").load(result.stdout)


def resource(path: Path) -> tuple[str, str]:
    manifest = load(path)
    group = manifest["apiVersion"].split("/")[0]
    return f"{manifest['kind'].lower()}.{group}", manifest["metadata"]["name"]


def stored(cluster: Cluster, path: Path) -> dict | None:
    kind, name = resource(path)
    result = cluster.kubectl("get", kind, name, "-n", "default", "-o", "json")
    if result.returncode != 0:
        assert "NotFound" in result.stderr, result.stderr
        return None
    return json.loads(result.stdout)


def delete(cluster: Cluster, path: Path) -> None:
    cluster.kubectl("delete", "-f", str(path), "--ignore-not-found", "--wait=false")


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_valid_example_applies_with_the_defaults(cluster: Cluster, path: Path):
    result = cluster.kubectl("apply", "-f", str(path))
    try:
        assert result.returncode == 0, result.stderr
        assert "created" in result.stdout
        job = stored(cluster, path)
        assert job is not None
        expected = offline_default(path)["spec"]
        assert job["spec"] == expected  # the cluster stored exactly what `jobgate default` predicts
        if job["apiVersion"].startswith("training.kubedl.io/"):
            assert job["spec"].get("cleanPodPolicy") or job["spec"]["runPolicy"]["cleanPodPolicy"]
            field = next(k for k in job["spec"] if k.endswith("ReplicaSpecs"))
            for replica in job["spec"][field].values():
                assert replica["replicas"] >= 1 and replica["restartPolicy"]
        elif job["apiVersion"].startswith("batch.volcano.sh/"):
            assert job["spec"]["queue"] and job["spec"]["schedulerName"] and job["spec"]["minAvailable"] >= 1
            for task in job["spec"]["tasks"]:
                assert task["name"] and task["maxRetry"] >= 1 and "minAvailable" in task
        elif job["kind"] == "MxJob":
            for replica in job["spec"]["replicaSpecs"]:
                assert replica["replicas"] >= 1 and replica["PsRootPort"] and replica["mxReplicaType"]
    finally:
        delete(cluster, path)


def test_defaults_of_the_tfjob_example(cluster: Cluster):
    path = REPO / "examples/valid/tfjob-mnist.yaml"
    cluster.kubectl("apply", "-f", str(path), check=True)
    try:
        spec = stored(cluster, path)["spec"]
        assert spec["cleanPodPolicy"] == "Running"
        assert set(spec["tfReplicaSpecs"]) == {"PS", "Worker", "Chief"}  # "worker" normalised
        chief = spec["tfReplicaSpecs"]["Chief"]
        assert (chief["replicas"], chief["restartPolicy"]) == (1, "ExitCode")
        (container,) = chief["template"]["spec"]["containers"]
        assert container["ports"] == [{"name": "tfjob-port", "containerPort": 2222}]
        assert container["terminationMessagePolicy"] == "FallbackToLogsOnError"
    finally:
        delete(cluster, path)


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_invalid_example_is_refused_with_field_paths(cluster: Cluster, path: Path):
    result = cluster.kubectl("apply", "-f", str(path))
    assert result.returncode != 0
    assert_denied_like_offline(result.stderr, path)  # same field paths, same words as offline
    assert stored(cluster, path) is None


def test_applying_several_invalid_manifests_names_the_webhook_for_each(cluster: Cluster):
    """With more than one failure kubectl prints each error whole: reason, file, webhook, message.

    A job that breaks the CRD schema is refused by the apiserver itself before the validating webhook
    runs: its line names no webhook, and carries exactly the schema lines ``jobgate validate`` prints."""
    result = cluster.kubectl("apply", "-f", str(REPO / "examples/invalid"))
    assert result.returncode != 0
    schema_refusals = 0
    for path in INVALID:
        line = next((x for x in result.stderr.splitlines() if f'"{path}"' in x), "")
        prefix = f'Error from server (Invalid): error when creating "{path}": '
        assert line.startswith(prefix), result.stderr
        errors = offline(path)["errors"]
        if line.startswith(prefix + DENIED_BY):
            for error in errors:
                assert error["message"] in line, line
        else:
            schema_refusals += 1
            schema_errors = [e for e in errors if " in body " in e["message"]]
            assert schema_errors, line
            for error in schema_errors:
                assert error["message"] in line, line
        assert stored(cluster, path) is None
    assert schema_refusals < len(INVALID)


@pytest.mark.parametrize("path", INVALID[:3], ids=lambda p: p.name)
def test_the_api_error_names_the_webhook_and_carries_the_causes(cluster: Cluster, path: Path):
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException

    api = client.ApiClient(config.new_client_from_config(cluster.kubeconfig).configuration)
    manifest = load(path)
    group, version = manifest["apiVersion"].split("/")
    plural = resource(path)[0].split(".")[0] + "s"
    with pytest.raises(ApiException) as caught:
        client.CustomObjectsApi(api).create_namespaced_custom_object(group, version, "default", plural, manifest)
    status = json.loads(caught.value.body)
    assert caught.value.status == 422
    assert status["reason"] == "Invalid"
    assert status["message"].startswith(
        f'{DENIED_BY}: {manifest["kind"]}.{group} "{manifest["metadata"]["name"]}" is invalid'
    )
    fields = [cause["field"] for cause in status["details"]["causes"]]
    assert fields == [e["field"] for e in offline(path)["errors"]] or sorted(fields) == sorted(
        e["field"] for e in offline(path)["errors"]
    )


@pytest.mark.parametrize("path", VALID + INVALID, ids=lambda p: p.name)
def test_offline_verdict_and_defaults_equal_the_clusters(cluster: Cluster, path: Path):
    result = cluster.kubectl("create", "--dry-run=server", "-o", "json", "-f", str(path))
    report = offline(path)
    assert (result.returncode == 0) == (report["outcome"] == "admitted"), result.stderr
    if result.returncode == 0:
        assert json.loads(result.stdout)["spec"] == offline_default(path)["spec"]
    else:
        assert_denied_like_offline(result.stderr, path)
    assert stored(cluster, path) is None


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_server_side_dry_run_of_a_valid_manifest_stores_nothing(cluster: Cluster, path: Path):
    result = cluster.kubectl("apply", "--server-side", "--dry-run=server", "-f", str(path))
    assert result.returncode == 0, result.stderr
    assert "serverside-applied (server dry run)" in result.stdout
    assert stored(cluster, path) is None


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_server_side_dry_run_of_an_invalid_manifest_fails_the_same_way(cluster: Cluster, path: Path):
    result = cluster.kubectl("apply", "--server-side", "--dry-run=server", "-f", str(path))
    assert result.returncode != 0
    assert_denied_like_offline(result.stderr, path)
    assert stored(cluster, path) is None


UPDATABLE = """
apiVersion: training.kubedl.io/v1alpha1
kind: PyTorchJob
metadata: {{name: updatable, namespace: default}}
spec:
  schedulingPolicy: {{queue: {queue}}}
  pytorchReplicaSpecs:
    Master: {{template: {{spec: {{containers: [{{name: pytorch, image: pytorch/pytorch}}]}}}}}}
    Worker: {{replicas: {workers}, template: {{spec: {{containers: [{{name: pytorch, image: pytorch/pytorch}}]}}}}}}
"""


def test_server_side_dry_run_of_updates(cluster: Cluster):
    cluster.kubectl(
        "apply", "--server-side", "-f", "-", input=UPDATABLE.format(queue="research", workers=2), check=True
    )
    try:
        before = cluster.get_json("pytorchjob", "updatable", "-n", "default")
        allowed = cluster.kubectl(
            "apply", "--server-side", "--dry-run=server", "-f", "-", input=UPDATABLE.format(queue="research", workers=8)
        )
        assert allowed.returncode == 0, allowed.stderr
        assert "serverside-applied (server dry run)" in allowed.stdout
        refused = cluster.kubectl(
            "apply", "--server-side", "--dry-run=server", "-f", "-", input=UPDATABLE.format(queue="prod", workers=2)
        )
        assert refused.returncode != 0
        assert 'The PyTorchJob "updatable" is invalid' in refused.stderr
        assert 'spec.schedulingPolicy.queue: Invalid value: "prod": field is immutable' in refused.stderr
        after = cluster.get_json("pytorchjob", "updatable", "-n", "default")
        assert after["spec"] == before["spec"]
        assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    finally:
        cluster.kubectl("delete", "pytorchjob", "updatable", "-n", "default", "--wait=false")


# kubectl applies custom resources with JSON merge patches, which replace whole lists: the
# containers jobgate defaulted (ports, terminationMessagePolicy) make the patch non-empty, so
# kubectl says "configured"; the webhook defaults them again and the stored object stays as it
# was (tfjob-mnist's "worker" key, stored as "Worker", is re-added by the patch and folded back).
@pytest.mark.parametrize("name", ["xgboostjob-higgs.yaml", "tfjob-mnist.yaml", "mxjob-dist.yaml"])
def test_reapplying_an_unchanged_manifest_changes_nothing(cluster: Cluster, name: str):
    path = REPO / "examples/valid" / name
    cluster.kubectl("apply", "-f", str(path), check=True)
    try:
        first = stored(cluster, path)
        again = cluster.kubectl("apply", "-f", str(path), check=True)
        assert "unchanged" in again.stdout or "configured" in again.stdout
        assert stored(cluster, path)["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
        server_side = cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(path), check=True)
        assert "serverside-applied" in server_side.stdout
        second = stored(cluster, path)
        assert second["spec"] == first["spec"]
        assert second["metadata"]["generation"] == first["metadata"]["generation"]
    finally:
        delete(cluster, path)


def test_explain_prints_field_descriptions(cluster: Cluster):
    result = cluster.kubectl("explain", "tfjobs.spec.cleanPodPolicy", check=True)
    assert "Which pods to delete when the job finishes" in result.stdout
    result = cluster.kubectl("explain", "mxjobs.spec.replicaSpecs.PsRootPort", check=True)
    assert "Port of the parameter-server root" in result.stdout
    result = cluster.kubectl("explain", "pytorchjobs.spec.pytorchReplicaSpecs", check=True)
    assert "Replica type" in result.stdout


def test_get_shows_the_printer_columns(cluster: Cluster):
    path = REPO / "examples/valid/xgboostjob-higgs.yaml"
    cluster.kubectl("apply", "-f", str(path), check=True)
    try:
        result = cluster.kubectl("get", "xgboostjobs", "-n", "default", check=True)
        header, row = result.stdout.splitlines()[:2]
        assert header.split() == ["NAME", "STATE", "REPLICAS", "AGE"]
        assert row.split()[0] == "higgs"
        assert cluster.kubectl("get", "xgbj", "-n", "default").returncode == 0  # the short name
        assert "higgs" in cluster.kubectl("get", "jobgate", "-n", "default", check=True).stdout  # the category
    finally:
        delete(cluster, path)


def test_webhook_down_with_fail_policy_refuses_and_recovers(cluster: Cluster, webhook_process: WebhookProcess):
    path = REPO / "examples/valid/mxjob-local.yaml"
    webhook_process.stop()
    try:
        result = cluster.kubectl("apply", "-f", str(path))
        assert result.returncode != 0
        assert 'failed calling webhook "mutate.jobgate.dev"' in result.stderr
        assert "Error from server (InternalError)" in result.stderr
        assert stored(cluster, path) is None
    finally:
        webhook_process.start()
        wait_for_webhook(cluster)
    result = cluster.kubectl("apply", "-f", str(path))
    assert result.returncode == 0, result.stderr
    delete(cluster, path)


def webhook_metric(webhook_process: WebhookProcess, name: str) -> float:
    """The sum of a counter's samples on the webhook's /metrics."""
    context = ssl.create_default_context(cafile=str(webhook_process.tls_dir / "ca.crt"))
    url = f"https://127.0.0.1:{webhook_process.port}/metrics"
    with urllib.request.urlopen(url, context=context, timeout=10) as response:
        text = response.read().decode()
    return sum(float(line.rpartition(" ")[2]) for line in text.splitlines() if line.startswith(f"{name}_total"))


def test_the_apiservers_calls_take_the_fast_path(cluster: Cluster, webhook_process: WebhookProcess):
    # What the apiserver sends (HTTP/1.1, Content-Length, application/json) is answered without
    # aiohttp's general handler: the reviews counted rise, the general handler's do not.
    reviews_before = webhook_metric(webhook_process, "jobgate_admission_reviews")
    general_before = webhook_metric(webhook_process, "jobgate_admission_general_handler_reviews")
    valid, invalid = REPO / "examples/valid/tfjob-mnist.yaml", INVALID[0]
    try:
        assert cluster.kubectl("apply", "-f", str(valid)).returncode == 0
        assert cluster.kubectl("apply", "-f", str(invalid)).returncode != 0
        assert cluster.kubectl("apply", "--dry-run=server", "-f", str(valid)).returncode == 0
    finally:
        delete(cluster, valid)
    assert webhook_metric(webhook_process, "jobgate_admission_reviews") >= reviews_before + 5  # 2 + 1 + 2
    assert webhook_metric(webhook_process, "jobgate_admission_general_handler_reviews") == general_before
