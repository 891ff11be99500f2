"""The HTTP contract of /mutate and /validate, every bad input, health and metrics."""

from __future__ import annotations

import base64
import json

import pytest

from jobgate.families.kubedl import rules as kubedl
from jobgate.webhook.server import MAX_BODY_BYTES, ServerState, build_app
from testkit.builders import admission_review, container, replica, review, tfjob


@pytest.fixture
def state():
    state = ServerState()
    state.serving = state.certificate_loaded = True
    return state


@pytest.fixture
async def client(aiohttp_client, state):
    return await aiohttp_client(build_app(state))


async def post(client, path, document, content_type="application/json"):
    return await client.post(path, data=json.dumps(document), headers={"Content-Type": content_type})


async def test_mutate_answers_the_same_api_version_with_uid_and_patch(client):
    response = await post(client, "/mutate", admission_review(tfjob(), uid="uid-1"))
    assert response.status == 200
    assert response.content_type == "application/json"
    body = await response.json()
    assert (body["apiVersion"], body["kind"]) == ("admission.k8s.io/v1", "AdmissionReview")
    answer = body["response"]
    assert (answer["uid"], answer["allowed"], answer["patchType"]) == ("uid-1", True, "JSONPatch")
    assert isinstance(json.loads(base64.b64decode(answer["patch"])), list)


async def test_mutate_sends_no_patch_when_nothing_changes(client):
    answer = (await (await post(client, "/mutate", admission_review(review(tfjob()).defaulted))).json())["response"]
    assert "patch" not in answer and "patchType" not in answer
    assert answer["allowed"] is True


async def test_validate_never_sends_a_patch(client):
    answer = (await (await post(client, "/validate", admission_review(tfjob()))).json())["response"]
    assert answer["allowed"] is True
    assert "patch" not in answer and "patchType" not in answer


async def test_mutate_patches_what_validate_denies(client):
    obj = tfjob({"Worker": replica(container(), replicas=-1)})
    response = await post(client, "/mutate", admission_review(obj))
    assert response.status == 200
    answer = (await response.json())["response"]
    assert answer["allowed"] is True
    assert answer["patchType"] == "JSONPatch"


async def test_denial_is_a_200_with_status(client):
    obj = tfjob({"Worker": replica(container(), replicas=-1)})
    response = await post(client, "/validate", admission_review(obj))
    assert response.status == 200
    answer = (await response.json())["response"]
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 422
    assert answer["status"]["reason"] == "Invalid"
    assert "patch" not in answer


async def test_warnings_in_the_response(client):
    obj = tfjob({"Worker": replica(container(), pod_spec={"restartPolicy": "Always"})})
    answer = (await (await post(client, "/validate", admission_review(obj))).json())["response"]
    assert answer["warnings"] == [
        "restartPolicy ExitCode overrides the pod template's restartPolicy Always (tfReplicaSpecs[Worker])"
    ]


@pytest.mark.parametrize("path", ["/mutate", "/validate"])
async def test_dry_run_is_answered_identically(client, path):
    plain = await (await post(client, path, admission_review(tfjob(), uid="u"))).read()
    dry = await (await post(client, path, admission_review(tfjob(), uid="u", dry_run=True))).read()
    assert plain == dry


async def test_unserved_kind_is_allowed_with_a_warning(client):
    obj = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {}}
    answer = (await (await post(client, "/validate", admission_review(obj))).json())["response"]
    assert answer["allowed"] is True
    assert answer["warnings"] == ["jobgate does not serve batch/v1 Job; admitted without checks"]


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH"])
@pytest.mark.parametrize("path", ["/mutate", "/validate"])
async def test_other_methods_are_405(client, method, path):
    response = await client.request(method, path)
    assert response.status == 405


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "application/yaml"])
async def test_other_content_types_are_415(client, content_type):
    response = await post(client, "/mutate", admission_review(tfjob()), content_type=content_type)
    assert response.status == 415
    assert "application/json" in await response.text()


async def test_missing_content_type_is_415(client):
    response = await client.post("/mutate", data=b"{}", headers={"Content-Type": ""})
    assert response.status == 415


async def test_json_with_charset_is_accepted(client):
    response = await post(client, "/mutate", admission_review(tfjob()), content_type="application/json; charset=utf-8")
    assert response.status == 200


async def test_declared_oversized_body_is_413_before_reading(client):
    response = await client.post(
        "/mutate",
        data=b"{}",
        headers={"Content-Type": "application/json", "Content-Length": str(MAX_BODY_BYTES + 1)},
        skip_auto_headers=["Content-Length"],
    )
    assert response.status == 413


async def test_streamed_oversized_body_is_413(client):
    async def chunks():
        chunk = b" " * 1024 * 1024
        for _ in range(9):
            yield chunk

    response = await client.post("/validate", data=chunks(), headers={"Content-Type": "application/json"})
    assert response.status == 413


async def test_body_at_the_limit_is_read(client):
    document = admission_review(tfjob())
    text = json.dumps(document)
    padded = text[:-1] + " " * (MAX_BODY_BYTES - len(text)) + "}"
    response = await client.post("/validate", data=padded.encode(), headers={"Content-Type": "application/json"})
    assert response.status == 200


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", "malformed JSON"),
        (b"{not json", "malformed JSON"),
        (b"[1, 2]", "not an AdmissionReview"),
        (b'{"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {}}', "apiVersion"),
        (b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}', "request"),
        (
            b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": '
            b'{"kind": {"version": "v1", "kind": "X"}, "operation": "CREATE"}}',
            "uid",
        ),
        (b"\xff\xfe", "malformed JSON"),
    ],
)
async def test_bad_reviews_are_400_with_one_line(client, body, reason):
    response = await client.post("/mutate", data=body, headers={"Content-Type": "application/json"})
    assert response.status == 400
    text = await response.text()
    assert reason in text
    assert text.count("\n") == 1
    assert "Traceback" not in text


async def test_rule_bug_is_a_visible_denial_not_a_500(client, monkeypatch):
    def broken(self, obj, old):
        raise KeyError("oops")

    monkeypatch.setattr(kubedl.KubeDLKind, "validate", broken)
    response = await post(client, "/validate", admission_review(tfjob(), uid="uid-bug"))
    assert response.status == 200
    answer = (await response.json())["response"]
    assert answer["allowed"] is False
    assert "internal error" in answer["status"]["message"]
    assert "uid-bug" in answer["status"]["message"]


async def test_unknown_path_is_404(client):
    assert (await client.get("/convert")).status == 404


async def test_health_and_readiness(client, state):
    assert (await client.get("/healthz")).status == 200
    assert (await client.get("/readyz")).status == 200
    state.draining = True
    response = await client.get("/readyz")
    assert response.status == 503
    assert "draining" in await response.text()
    assert (await client.get("/healthz")).status == 200


async def test_not_ready_without_certificate(aiohttp_client):
    state = ServerState()
    state.serving = True
    client = await aiohttp_client(build_app(state))
    response = await client.get("/readyz")
    assert response.status == 503
    assert "certificate" in await response.text()


async def test_metrics(client):
    await post(client, "/mutate", admission_review(tfjob()))
    await post(client, "/validate", admission_review(tfjob(backoffLimit=-1)))
    await client.post("/validate", data=b"{", headers={"Content-Type": "application/json"})
    response = await client.get("/metrics")
    assert response.status == 200
    assert response.content_type == "text/plain"
    text = await response.text()
    assert (
        'jobgate_admission_reviews_total{kind="TFJob",operation="CREATE",verdict="patched",webhook="mutate"} 1.0'
        in text
    )
    assert (
        'jobgate_admission_reviews_total{kind="TFJob",operation="CREATE",verdict="denied",webhook="validate"} 1.0'
        in text
    )
    assert 'jobgate_admission_rejected_requests_total{code="400"} 1.0' in text
    assert 'jobgate_admission_review_duration_seconds_bucket{le="0.0005",webhook="mutate"}' in text
    assert 'jobgate_admission_review_duration_seconds_count{webhook="mutate"} 1.0' in text


async def test_one_log_line_per_review_without_the_object(client, caplog):
    caplog.set_level("INFO", logger="jobgate.review")
    await post(client, "/mutate", admission_review(tfjob(name="logged"), uid="uid-log"))
    (record,) = [r for r in caplog.records if r.name == "jobgate.review"]
    fields = record.fields
    assert fields["uid"] == "uid-log"
    assert fields["kind"] == "TFJob"
    assert fields["object"] == "default/logged"
    assert fields["operation"] == "CREATE"
    assert fields["verdict"] == "patched"
    assert fields["ms"] >= 0
    assert "tensorflow" not in repr(fields)
