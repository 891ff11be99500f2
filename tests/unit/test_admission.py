"""The AdmissionReview contract, transport-free."""

from __future__ import annotations

import base64
import json

import pytest

from jobgate.engine.jsonpatch import apply_patch
from jobgate.families.kubedl import rules as kubedl
from jobgate.webhook.admission import BadReview, Webhook, decoded_patch, review_body
from testkit.builders import admission_review, container, mx_replica, mxjob, replica, review, tfjob


def answer(review_request, webhook=Webhook.MUTATE):
    return json.loads(review_body(json.dumps(review_request), webhook))


def test_mutate_answers_with_a_patch():
    obj = tfjob()
    request = admission_review(obj, uid="abc-123")
    result = answer(request)
    assert result["apiVersion"] == "admission.k8s.io/v1"
    assert result["kind"] == "AdmissionReview"
    response = result["response"]
    assert response["uid"] == "abc-123"
    assert response["allowed"] is True
    assert response["patchType"] == "JSONPatch"
    assert apply_patch(obj, decoded_patch(result)) == review(obj).defaulted
    assert "status" not in response


def test_patch_is_base64_of_a_json_array():
    response = answer(admission_review(tfjob()))["response"]
    ops = json.loads(base64.b64decode(response["patch"]))
    assert isinstance(ops, list)
    assert {"op": "add", "path": "/spec/cleanPodPolicy", "value": "Running"} in ops


def test_no_patch_when_nothing_changes():
    response = answer(admission_review(review(tfjob()).defaulted))["response"]
    assert response == {"uid": response["uid"], "allowed": True}


def test_validate_never_returns_a_patch():
    response = answer(admission_review(tfjob()), Webhook.VALIDATE)["response"]
    assert response["allowed"] is True
    assert "patch" not in response and "patchType" not in response


def test_denial_has_the_invalid_status():
    obj = tfjob({"Worker": replica(container(), replicas=-1)}, name="mnist")
    response = answer(admission_review(obj), Webhook.VALIDATE)["response"]
    assert response["allowed"] is False
    assert "patch" not in response
    status = response["status"]
    assert (status["code"], status["reason"], status["status"]) == (422, "Invalid", "Failure")
    assert status["message"].startswith('TFJob.training.kubedl.io "mnist" is invalid: spec.tfReplicaSpecs.Worker')
    assert status["details"]["causes"][0]["field"] == "spec.tfReplicaSpecs.Worker.replicas"


def test_mutate_and_validate_agree_on_undefaulted_input():
    obj = tfjob({"worker": replica(container())})  # lower case is normalised by defaulting
    assert answer(admission_review(obj), Webhook.MUTATE)["response"]["allowed"] is True
    assert answer(admission_review(obj), Webhook.VALIDATE)["response"]["allowed"] is True


def test_mutate_patches_an_invalid_job_and_leaves_the_verdict_to_validate():
    obj = tfjob({"Worker": replica(container(), replicas=-1)}, backoffLimit=-1)
    result = answer(admission_review(obj))
    assert result["response"]["allowed"] is True
    assert "status" not in result["response"]
    patched = apply_patch(obj, decoded_patch(result))
    assert patched == review(obj).defaulted
    assert patched["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == -1  # left for /validate to refuse
    assert answer(admission_review(obj), Webhook.VALIDATE)["response"]["allowed"] is False


@pytest.mark.parametrize(
    "spec",
    [
        None,
        [],
        "text",
        {},
        {"tfReplicaSpecs": []},
        {"tfReplicaSpecs": {"Worker": None}},
        {"tfReplicaSpecs": {"Worker": {"replicas": "two", "template": []}}},
        {"tfReplicaSpecs": {"Worker": {"template": {"spec": {"containers": "x"}}}}},
        {"tfReplicaSpecs": {"Worker": {"template": {"spec": {"containers": [None, 1, {"name": 5}]}}}}},
    ],
)
def test_mutate_admits_half_written_jobs(spec):
    obj = {"apiVersion": "training.kubedl.io/v1alpha1", "kind": "TFJob", "metadata": {"name": "x"}, "spec": spec}
    result = answer(admission_review(obj))
    assert result["response"]["allowed"] is True
    assert apply_patch(obj, decoded_patch(result)) == review(obj).defaulted


def test_half_written_mxjob_is_patched_not_denied():
    obj = mxjob("dist", {"template": {}}, {"replicas": None}, "not a replica")
    result = answer(admission_review(obj))
    assert result["response"]["allowed"] is True
    assert [op["path"] for op in decoded_patch(result)][:3] == [
        "/spec/replicaSpecs/0/replicas",
        "/spec/replicaSpecs/0/PsRootPort",
        "/spec/replicaSpecs/0/mxReplicaType",
    ]


def test_warnings_come_from_validate_only():
    obj = tfjob({"Worker": replica(container(), pod_spec={"restartPolicy": "Always"})})
    assert answer(admission_review(obj), Webhook.VALIDATE)["response"]["warnings"] == [
        "restartPolicy ExitCode overrides the pod template's restartPolicy Always (tfReplicaSpecs[Worker])"
    ]
    assert "warnings" not in answer(admission_review(obj), Webhook.MUTATE)["response"]


@pytest.mark.parametrize("webhook", list(Webhook))
def test_dry_run_is_answered_identically(webhook):
    obj = tfjob()
    plain = answer(admission_review(obj, uid="same"), webhook)
    dry = answer(admission_review(obj, uid="same", dry_run=True), webhook)
    assert plain == dry


def test_update_checks_immutability_against_the_old_object():
    old = review(tfjob(schedulingPolicy={"queue": "a"})).defaulted
    new = tfjob(schedulingPolicy={"queue": "b"})
    response = answer(admission_review(new, operation="UPDATE", old=old), Webhook.VALIDATE)["response"]
    assert response["allowed"] is False
    assert response["status"]["details"]["causes"][0]["field"] == "spec.schedulingPolicy.queue"


def test_delete_is_allowed_without_looking():
    response = answer(admission_review(None, operation="DELETE", old=tfjob(backoffLimit=-1)))["response"]
    assert response["allowed"] is True


def test_unserved_kind_is_allowed_with_a_warning():
    obj = {"apiVersion": "kubeflow.org/v2", "kind": "TFJob", "metadata": {"name": "x"}, "spec": {}}
    response = answer(admission_review(obj))["response"]
    assert response["allowed"] is True
    assert response["warnings"] == ["jobgate does not serve kubeflow.org/v2 TFJob; admitted without checks"]


def test_mxjob_review():
    response = answer(admission_review(mxjob("local", mx_replica("WORKER", 2))), Webhook.VALIDATE)["response"]
    assert response["allowed"] is False
    assert "job mode is local, but it has more than 1 worker" in response["status"]["message"]


def test_bug_in_a_rule_fails_closed_with_the_uid(monkeypatch, caplog):
    def broken(self, obj, old):
        raise RuntimeError("boom")

    monkeypatch.setattr(kubedl.KubeDLKind, "validate", broken)
    response = answer(admission_review(tfjob(), uid="uid-42"), Webhook.VALIDATE)["response"]
    assert response["uid"] == "uid-42"
    assert response["allowed"] is False
    assert response["status"]["code"] == 500
    assert response["status"]["reason"] == "InternalError"
    assert "uid-42" in response["status"]["message"]
    assert "boom" not in response["status"]["message"]
    assert "uid=uid-42" in caplog.text


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("{", "malformed JSON"),
        ("[]", "not an AdmissionReview admission.k8s.io/v1: the body must be a JSON object"),
        ('{"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {}}', "apiVersion"),
        ('{"apiVersion": "admission.k8s.io/v1", "kind": "Pod", "request": {}}', "kind"),
        ('{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}', "request: field required"),
        (
            '{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": '
            '{"kind": {"version": "v1", "kind": "X"}, "operation": "CREATE"}}',
            "request.uid: field required",
        ),
        (
            '{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": '
            '{"uid": "", "kind": {"version": "v1", "kind": "X"}, "operation": "CREATE"}}',
            "request.uid",
        ),
        (
            '{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u", '
            '"kind": {"group": "training.kubedl.io", "version": "v1alpha1", "kind": "TFJob"}, '
            '"operation": "CREATE", "object": [1]}}',
            "request.object must be an object",
        ),
    ],
)
def test_bad_reviews(body, message):
    with pytest.raises(BadReview) as caught:
        review_body(body, Webhook.MUTATE)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_bug_in_a_defaulting_rule_admits_unpatched_on_mutate_and_fails_closed_on_validate(monkeypatch, caplog):
    def broken(self, obj, recorder=None, previous=None):
        raise RuntimeError("boom")

    monkeypatch.setattr(kubedl.KubeDLKind, "default", broken)
    mutated = answer(admission_review(tfjob(), uid="uid-7"))["response"]
    assert mutated["allowed"] is True
    assert "patch" not in mutated
    assert "uid-7" in mutated["warnings"][0]
    assert "uid=uid-7" in caplog.text
    validated = answer(admission_review(tfjob(), uid="uid-7"), Webhook.VALIDATE)["response"]
    assert (validated["allowed"], validated["status"]["code"]) == (False, 500)
