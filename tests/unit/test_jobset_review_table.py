"""JobSet v0.12.0's own webhook test tables, through ``jobgate review validate|mutate``.

Ported case by case from kubernetes-sigs/jobset v0.12.0 (commit f22e565ac3cc3265c7c45ef67ecffdc689af5d77),
``pkg/webhooks/jobset_webhook_test.go``: ``TestValidateCreate`` (its Go test checks that each wanted
message is contained in the error, as here), ``TestValidateUpdate`` (the causes' fields) and
``TestJobSetDefaulting``. The feature gates the Go tests set are given as ``--jobset-feature-gates``.

Each case is reviewed as the apiserver would send it (an AdmissionReview, through ``jobgate review``),
so jobgate defaults it first, as JobSet's defaulting webhook runs before its validator. Where jobgate
reports more than JobSet, the case says so (``EXTRA``): a template whose Jobs the apiserver would
refuse when JobSet's controller creates them (jobset PR #1211). The three cases that look up existing PVCs
(the Go test's ``existingObjs``) pass their PVCs by ``--cluster-objects``.
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

API = "jobset.x-k8s.io/v1alpha2"
INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)
POD = {"spec": {"containers": [{"name": "test", "image": "bash:latest"}]}}
DNS1035 = "a DNS-1035 label must consist of lower case alphanumeric characters or '-'"
RULE_NAME = (
    "a failure policy rule name must start with an alphabetic character, optionally followed by a string of "
    "alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'"
)


def rj(
    name: str,
    *,
    replicas: int | None = 1,
    group: str | None = "default",
    parallelism: int | None = None,
    completions: int | None = None,
    mode: str | None = None,
    pod: dict[str, Any] | None = None,
    depends: list[tuple[str, str]] | None = None,
    **job_spec: Any,
) -> dict[str, Any]:
    """A replicated job as the Go tests write one (omitempty: unset fields are absent)."""
    spec: dict[str, Any] = {"template": copy.deepcopy(POD if pod is None else pod), **job_spec}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    if mode is not None:
        spec["completionMode"] = mode
    out: dict[str, Any] = {"name": name, "template": {"spec": spec}}
    if group is not None:
        out["groupName"] = group
    if replicas is not None:
        out["replicas"] = replicas
    if depends is not None:
        out["dependsOn"] = [{"name": n, "status": s} for n, s in depends]
    return out


def indexed(name: str = "rj", replicas: int = 1, n: int = 1, **extra: Any) -> dict[str, Any]:
    return rj(name, replicas=replicas, parallelism=n, completions=n, mode="Indexed", **extra)


def js(*jobs: dict[str, Any], name: str = "js", labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "default"}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": API, "kind": "JobSet", "metadata": metadata, "spec": {"replicatedJobs": list(jobs), **spec}}


ALL = {"successPolicy": {"operator": "All"}}


def _review(
    tmp_path, capsys, command: str, obj, old=None, *, gates: str | None = None, cluster_objects: Any = None
) -> dict[str, Any]:
    path = tmp_path / "review.json"
    path.write_text(json.dumps(admission_review(obj, operation="UPDATE" if old else "CREATE", old=old)))
    flags = ["--jobset-feature-gates", gates] if gates else []
    if cluster_objects is not None:
        objects = tmp_path / "cluster-objects.json"
        objects.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": cluster_objects}))
        flags += ["--cluster-objects", str(objects)]
    assert main(["review", *flags, command, str(path)]) == 0
    return json.loads(capsys.readouterr().out)["response"]


def message(response: dict[str, Any]) -> str:
    return "" if response["allowed"] else response["status"]["message"]


# --- TestValidateCreate ---------------------------------------------------------------------------

CREATE: list[tuple[str, dict[str, Any], list[str], str | None]] = [
    (
        "number of pods exceeds the limit",
        js(
            rj("test-jobset-replicated-job-0", replicas=INT32_MAX, parallelism=INT32_MAX),
            rj("test-jobset-replicated-job-1", replicas=INT32_MIN, parallelism=INT32_MIN),
            **ALL,
        ),
        [
            "the product of replicas and parallelism must not exceed 2147483647 for replicatedJob "
            "'test-jobset-replicated-job-0'",
            "the product of replicas and parallelism must not exceed 2147483647 for replicatedJob "
            "'test-jobset-replicated-job-1'",
        ],
        None,
    ),
    ("number of pods within the limit", js(rj("test-jobset-replicated-job-0"), **ALL), [], None),
    (
        "success policy has non matching replicated job",
        js(rj("test-jobset-replicated-job-0"), successPolicy={"operator": "All", "targetReplicatedJobs": ["nope"]}),
        ["<nil>: Internal error: invalid replicatedJob name 'nope' does not appear in .spec.ReplicatedJobs"],
        None,
    ),
    (
        "network has invalid dns name",
        js(rj("test-jobset-replicated-job-0"), network={"enableDNSHostnames": True, "subdomain": "a" * 64}, **ALL),
        [
            "spec.network.subdomain: Invalid value",
            ".spec.network.subdomain is too long, must be less than 63 characters",
        ],
        None,
    ),
    (
        "jobset name with invalid character",
        js(rj("username.llama65b"), **ALL),
        ['spec.replicatedJobs[0].name: Invalid value: "js-username.llama65b-0": ' + DNS1035],
        None,
    ),
    (
        "group name is not DNS 1035 compliant",
        js(rj("rj", group="a" * 64), **ALL),
        [".spec.replicatedJob[].groupName is too long, must be less than 63 characters"],
        None,
    ),
    (
        "jobset name will result in job name being too long",
        js(rj("rj"), name="a" * 62, **ALL),
        ["JobSet name is too long, job names generated for this JobSet will exceed 63 characters"],
        None,
    ),
    (
        "jobset name will result in a pod name being too long",
        js(indexed("rj"), name="a" * 56, **ALL),
        ["JobSet name is too long, pod names generated for this JobSet will exceed 63 characters"],
        None,
    ),
    (
        "jobset controller name is not a domain-prefixed path",
        js(indexed(), managedBy="notDomainPrefixedPathControllerName", **ALL),
        [
            'spec.managedBy: Invalid value: "notDomainPrefixedPathControllerName": must be a domain-prefixed path '
            '(such as "acme.io/foo")'
        ],
        None,
    ),
    (
        "jobset controller name is too long",
        js(indexed(), managedBy="foo.bar/" + "a" * 63, **ALL),
        ["spec.managedBy: Too long: may not be more than 63 bytes"],
        None,
    ),
    (
        "jobset controller name is set and valid",
        js(indexed(), managedBy="jobset.sigs.k8s.io/jobset-controller", **ALL),
        [],
        None,
    ),
    ("jobset controller name is unset", js(indexed(), **ALL), [], None),
    (
        "failure policy rule name is valid",
        js(indexed(), failurePolicy={"rules": [{"name": "superAwesomeFailurePolicyRule", "action": "FailJobSet"}]}),
        [],
        None,
    ),
    (
        "failure policy has an invalid on job failure reason",
        js(indexed(), failurePolicy={"rules": [{"action": "FailJobSet", "onJobFailureReasons": ["fakeReason"]}]}),
        ["invalid job failure reason 'fakeReason' in failure policy is not a recognized job failure reason"],
        None,
    ),
    (
        "failure policy has an invalid replicated job",
        js(indexed(), failurePolicy={"rules": [{"action": "FailJobSet", "targetReplicatedJobs": ["fakeRJ"]}]}),
        ["invalid replicatedJob name 'fakeRJ' in failure policy does not appear in .spec.ReplicatedJobs"],
        None,
    ),
    (
        # Go's validator sees the empty name; jobgate's /mutate names it first (failurePolicyRule0), as
        # JobSet's defaulter does before its validator in a cluster: admitted (JobSet's table calls the
        # validator alone).
        "failure policy rule name unset is defaulted, not refused",
        js(indexed(), failurePolicy={"rules": [{"action": "FailJobSet"}]}),
        [],
        None,
    ),
    (
        "failure policy rule name is greater than 128 characters long",
        js(indexed(), failurePolicy={"rules": [{"name": "a" * 129, "action": "FailJobSet"}]}),
        [
            "invalid failure policy rule name of length 129, the rule name must be at least 1 characters long and "
            "at most 128 characters long"
        ],
        None,
    ),
    (
        "there are two failure policy rules with the same name",
        js(
            indexed(),
            failurePolicy={
                "rules": [
                    {"name": "repeatedRuleName", "action": "FailJobSet"},
                    {"name": "repeatedRuleName", "action": "FailJobSet"},
                ]
            },
        ),
        ["rule names are not unique, rules with indices [0 1] all have the same name 'repeatedRuleName'"],
        None,
    ),
    (
        "failure policy rule name does not start with an alphabetic character",
        js(indexed(), failurePolicy={"rules": [{"name": "1ruleToRuleThemAll", "action": "FailJobSet"}]}),
        [f"invalid failure policy rule name '1ruleToRuleThemAll', {RULE_NAME}"],
        None,
    ),
    (
        "failure policy rule name does not end with an alphanumeric nor '_'",
        js(indexed(), failurePolicy={"rules": [{"name": "ruleToRuleThemAll,", "action": "FailJobSet"}]}),
        [f"invalid failure policy rule name 'ruleToRuleThemAll,', {RULE_NAME}"],
        None,
    ),
    (
        "coordinator replicated job does not exist",
        js(
            indexed("replicatedjob-a", 2, 2),
            indexed("replicatedjob-b", 2, 2),
            coordinator={"replicatedJob": "fake-rjob", "jobIndex": 0, "podIndex": 0},
            **ALL,
        ),
        ["coordinator replicatedJob fake-rjob does not exist"],
        None,
    ),
    (
        # EXTRA: an Indexed Job with parallelism and no completions is refused by the apiserver when
        # JobSet's controller creates it (jobgate/job-template).
        "coordinator replicated job missing completions",
        js(
            rj("replicatedjob-a", replicas=2, parallelism=2, mode="Indexed"),
            indexed("replicatedjob-b", 2, 2),
            coordinator={"replicatedJob": "replicatedjob-a", "jobIndex": 0, "podIndex": 0},
            **ALL,
        ),
        [
            "job for coordinator pod must be indexed completion mode, and completions number must be set",
            "spec.replicatedJobs[0].template.spec.completions: Required value: when completion mode is Indexed",
        ],
        None,
    ),
    (
        "coordinator job index invalid",
        js(
            indexed("replicatedjob-a", 2, 2),
            indexed("replicatedjob-b", 2, 2),
            coordinator={"replicatedJob": "replicatedjob-a", "jobIndex": 2, "podIndex": 0},
            **ALL,
        ),
        ["coordinator job index 2 is invalid for replicatedJob replicatedjob-a"],
        None,
    ),
    (
        "coordinator pod index invalid",
        js(
            indexed("replicatedjob-a", 2, 2),
            indexed("replicatedjob-b", 2, 2),
            coordinator={"replicatedJob": "replicatedjob-a", "jobIndex": 0, "podIndex": 2},
            **ALL,
        ),
        ["coordinator pod index 2 is invalid for replicatedJob replicatedjob-a job index 0"],
        None,
    ),
    (
        "coordinator label value is too long due to long JobSet name",
        js(indexed("replicatedjob-a"), name="a" * 60, coordinator={"replicatedJob": "replicatedjob-a"}, **ALL),
        ["spec will lead to invalid label value"],
        None,
    ),
    (
        "coordinator label value is too long due to long ReplicatedJob name",
        js(indexed("a" * 60), name="jobset", coordinator={"replicatedJob": "a" * 60}, **ALL),
        ["spec will lead to invalid label value"],
        None,
    ),
    (
        "coordinator label value is too long due to long SubDomain",
        js(
            indexed("replicatedjob-a"),
            name="jobset",
            network={"subdomain": "a" * 60},
            coordinator={"replicatedJob": "replicatedjob-a"},
            **ALL,
        ),
        ["spec will lead to invalid label value"],
        None,
    ),
    (
        "RestartJob action and a replicated job with replicas > 1024",
        js(indexed(replicas=1025), failurePolicy={"rules": [{"action": "RestartJob", "name": "restartJobRule"}]}),
        [
            "JobSet cannot have a failure policy rule with RestartJob or RestartJobAndIgnoreMaxRestarts action and a "
            "replicated job with replicas > 1024"
        ],
        "RestartJob=true",
    ),
    (
        "RestartJobAndIgnoreMaxRestarts action and a replicated job with replicas > 1024",
        js(
            indexed(replicas=1025), failurePolicy={"rules": [{"action": "RestartJobAndIgnoreMaxRestarts", "name": "r"}]}
        ),
        ["replicated job with replicas > 1024"],
        "RestartJob=true",
    ),
    (
        "RestartJob action within 1024 replicas with the gate on",
        js(indexed(replicas=1024), failurePolicy={"rules": [{"action": "RestartJob", "name": "restartJobRule"}]}),
        [],
        "RestartJob=true",
    ),
    (
        "RestartJob action and RestartJob feature gate is disabled",
        js(indexed(), failurePolicy={"rules": [{"action": "RestartJob", "name": "restartJobRule"}]}),
        [
            "RestartJob and RestartJobAndIgnoreMaxRestarts failure policy actions are not allowed when RestartJob "
            "feature gate is disabled"
        ],
        None,
    ),
    (
        "RestartJobAndIgnoreMaxRestarts action and RestartJob feature gate is disabled",
        js(indexed(), failurePolicy={"rules": [{"action": "RestartJobAndIgnoreMaxRestarts", "name": "r"}]}),
        ["failure policy actions are not allowed when RestartJob feature gate is disabled"],
        None,
    ),
    (
        "DependsOn is valid since job-2 and job-3 depend on job-1",
        js(rj("job-1"), rj("job-2", depends=[("job-1", "Complete")]), rj("job-3", depends=[("job-1", "Complete")])),
        [],
        None,
    ),
    (
        "DependsOn is valid since job-2 depends on job-1 and job-3 depends on job-2",
        js(rj("job-1"), rj("job-2", depends=[("job-1", "Complete")]), rj("job-3", depends=[("job-2", "Ready")])),
        [],
        None,
    ),
    (
        "DependsOn is valid since job-3 depends on job-1 and job-2",
        js(rj("job-1"), rj("job-2"), rj("job-3", depends=[("job-1", "Complete"), ("job-2", "Complete")])),
        [],
        None,
    ),
    (
        "DependsOn is invalid since job-2 depends on job-3",
        js(rj("job-1"), rj("job-2", depends=[("job-3", "Complete")]), rj("job-3")),
        ["replicatedJob: job-2 cannot depend on replicatedJob: job-3"],
        None,
    ),
    (
        "DependsOn is invalid since job-2 depends on job-3 and job-1",
        js(rj("job-1"), rj("job-2", depends=[("job-3", "Complete"), ("job-1", "Complete")]), rj("job-3")),
        ["replicatedJob: job-2 cannot depend on replicatedJob: job-3"],
        None,
    ),
    (
        "job-2 depends on invalid ReplicatedJob",
        js(rj("job-1"), rj("job-2", depends=[("invalid", "Complete")])),
        ["replicatedJob: job-2 cannot depend on replicatedJob: invalid"],
        None,
    ),
    ("dependsOn should not fail if there are no replicated jobs", js(), [], None),
    (
        "dependsOn cannot be set for first replicated job",
        js(rj("job-1", depends=[("job-2", "Complete")]), rj("job-2")),
        [
            "DependsOn can't be set for the first ReplicatedJob",
            "replicatedJob: job-1 cannot depend on replicatedJob: job-2",
        ],
        None,
    ),
    (
        "InPlaceRestart restart strategy cannot be set when InPlaceRestart feature gate is disabled",
        js(indexed(), failurePolicy={"restartStrategy": "InPlaceRestart"}),
        ["InPlaceRestart restart strategy cannot be set when InPlaceRestart feature gate is disabled"],
        None,
    ),
    (
        "InPlaceRestart restart strategy can be set when InPlaceRestart feature gate is enabled",
        js(
            indexed(backoffLimit=INT32_MAX, podReplacementPolicy="Failed"),
            failurePolicy={"restartStrategy": "InPlaceRestart"},
        ),
        [],
        "InPlaceRestart=true",
    ),
    (
        "InPlaceRestart enabled: backoffLimit is not MaxInt32",
        js(indexed(backoffLimit=1, podReplacementPolicy="Failed"), failurePolicy={"restartStrategy": "InPlaceRestart"}),
        [
            "spec.replicatedJobs[0].template.spec.backoffLimit: Invalid value: 1: replicatedJob rj: must be set to "
            "2147483647 (MaxInt32) when in-place restart is enabled"
        ],
        "InPlaceRestart=true",
    ),
    (
        "InPlaceRestart enabled: podReplacementPolicy is not Failed",
        js(
            indexed(backoffLimit=INT32_MAX, podReplacementPolicy="TerminatingOrFailed"),
            failurePolicy={"restartStrategy": "InPlaceRestart"},
        ),
        ["replicatedJob rj: must be set to Failed when in-place restart is enabled"],
        "InPlaceRestart=true",
    ),
    (
        "InPlaceRestart enabled: completions != parallelism",
        js(
            rj(
                "rj",
                parallelism=2,
                completions=1,
                mode="Indexed",
                backoffLimit=INT32_MAX,
                podReplacementPolicy="Failed",
            ),
            failurePolicy={"restartStrategy": "InPlaceRestart"},
        ),
        ["replicatedJob rj: completions and parallelism must be set and equal to each other when in-place restart"],
        "InPlaceRestart=true",
    ),
    (
        "InPlaceRestart enabled: completions is nil",
        js(
            rj("rj", parallelism=1, mode="Indexed", backoffLimit=INT32_MAX, podReplacementPolicy="Failed"),
            failurePolicy={"restartStrategy": "InPlaceRestart"},
        ),
        ["completions and parallelism must be set and equal to each other"],
        "InPlaceRestart=true",
    ),
    (
        "InPlaceRestart enabled: parallelism is nil",
        js(
            rj("rj", completions=1, mode="Indexed", backoffLimit=INT32_MAX, podReplacementPolicy="Failed"),
            failurePolicy={"restartStrategy": "InPlaceRestart"},
        ),
        ["completions and parallelism must be set and equal to each other"],
        "InPlaceRestart=true",
    ),
]

CLAIM = {"metadata": {"name": "test-volume"}, "spec": {"accessModes": ["ReadWriteOnce"]}}


def _mounting(name: str = "test-volume", *, init: bool = False, volumes: list[Any] | None = None) -> dict[str, Any]:
    container = {
        "name": "init" if init else "test",
        "image": "bash:latest",
        "volumeMounts": [{"name": name, "mountPath": "/test/path"}],
    }
    spec: dict[str, Any] = {"containers": [{"name": "test", "image": "bash:latest"}]}
    spec["initContainers" if init else "containers"] = [container]
    if volumes is not None:
        spec["volumes"] = volumes
    return {"spec": spec}


def _claims(*templates: dict[str, Any]) -> dict[str, Any]:
    return {"volumeClaimPolicies": [{"templates": list(templates), "retentionPolicy": {"whenDeleted": "Delete"}}]}


CREATE += [
    (
        "volumeClaimPolicy is valid since volume exists in the container",
        js(rj("job-1", pod=_mounting()), **_claims(CLAIM)),
        [],
        None,
    ),
    (
        "volumeClaimPolicy is valid since volume exists in the initContainer",
        js(rj("job-1", pod=_mounting(init=True)), **_claims(CLAIM)),
        [],
        None,
    ),
    (
        "volumeClaimPolicy is invalid since template names are not unique",
        js(rj("job-1", pod=_mounting()), **_claims(CLAIM, CLAIM)),
        ['spec.volumeClaimPolicies[0].template[1].name: Invalid value: "test-volume": names must be unique'],
        None,
    ),
    (
        "volumeClaimPolicy is invalid since template name has uppercase letters",
        js(rj("job-1", pod=_mounting("Test-Volume")), **_claims({"metadata": {"name": "Test-Volume"}, "spec": {}})),
        ['spec.volumeClaimPolicies[0].template[0].name: Invalid value: "Test-Volume": a lowercase RFC 1123 subdomain'],
        None,
    ),
    (
        "volumeClaimPolicy is invalid since template name is too long",
        js(rj("job-1", pod=_mounting("a" * 64)), **_claims({"metadata": {"name": "a" * 64}, "spec": {}})),
        ["VolumeClaimPolicies template name is too long"],
        None,
    ),
    (
        "volumeClaimPolicy is invalid since no matching volumeMount in containers",
        js(rj("job-1"), **_claims(CLAIM)),
        ["replicatedJob containers don't have a matching volumeMount: test-volume from VolumeClaimPolicies"],
        None,
    ),
    (
        "volumeClaimPolicy is invalid since volume name conflicts with existing volume",
        js(rj("job-1", pod=_mounting(volumes=[{"name": "test-volume", "emptyDir": {}}])), **_claims(CLAIM)),
        [
            'spec.replicatedJobs[0].template.spec.template.spec.volumes[0].name: Invalid value: "test-volume": '
            "volume name conflicts with VolumeClaimPolicy template name: test-volume"
        ],
        None,
    ),
]


@pytest.mark.parametrize(("obj", "wanted", "gates"), [c[1:] for c in CREATE], ids=[c[0] for c in CREATE])
def test_jobset_validate_create_table(tmp_path, capsys, obj, wanted, gates):
    response = _review(tmp_path, capsys, "validate", obj, gates=gates)
    text = message(response)
    if not wanted:
        assert response["allowed"], text
        return
    assert not response["allowed"]
    assert response["status"]["code"] == 422 and response["status"]["reason"] == "Invalid"
    for line in wanted:
        assert line in text, text


# The three cases with an existing PVC (the Go test's existingObjs, its fake client's objects).
PVC_SPEC = {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}}


def _pvc(spec: dict[str, Any], name: str = "test-volume-js") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def _retained(when_deleted: str) -> dict[str, Any]:
    template = {"metadata": {"name": "test-volume"}, "spec": PVC_SPEC}
    return {"volumeClaimPolicies": [{"templates": [template], "retentionPolicy": {"whenDeleted": when_deleted}}]}


EXISTING_PVC: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[str]]] = [
    (
        "volumeClaimPolicy is valid when existing PVC matches template spec",
        js(rj("job-1", pod=_mounting()), **_retained("Retain")),
        [_pvc(PVC_SPEC)],
        [],
    ),
    (
        "volumeClaimPolicy retention policy must be retain for existing PVC",
        js(rj("job-1", pod=_mounting()), **_retained("Delete")),
        [_pvc(PVC_SPEC)],
        ["retentionPolicy must be retain when PVC exist"],
    ),
    (
        "volumeClaimPolicy is invalid when existing PVC does not match template spec",
        js(rj("job-1", pod=_mounting()), **_retained("Retain")),
        [_pvc({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2Gi"}}})],
        ["spec does not match existing PVC"],
    ),
]


@pytest.mark.parametrize(("obj", "objects", "wanted"), [c[1:] for c in EXISTING_PVC], ids=[c[0] for c in EXISTING_PVC])
def test_jobset_validate_create_existing_pvc_table(tmp_path, capsys, obj, objects, wanted):
    response = _review(tmp_path, capsys, "validate", obj, cluster_objects=objects)
    text = message(response)
    if not wanted:
        assert response["allowed"], text
        return
    assert not response["allowed"]
    assert response["status"]["code"] == 422 and response["status"]["reason"] == "Invalid"
    for line in wanted:
        assert line in text, text


# --- TestValidateUpdate ---------------------------------------------------------------------------

VALID_JOBS = [rj(f"test-jobset-replicated-job-{i}", group=None, parallelism=1) for i in (0, 1)]


def _with_pod(job: dict[str, Any], **pod_spec: Any) -> dict[str, Any]:
    out = copy.deepcopy(job)
    out["template"]["spec"]["template"]["spec"].update(pod_spec)
    return out


def _upd(*jobs: dict[str, Any], suspend: bool | None = None, conditions: list[str] | None = None, **spec: Any):
    obj = js(*jobs, **spec)
    if suspend is not None:
        obj["spec"]["suspend"] = suspend
    if conditions:
        obj["status"] = {"conditions": [{"type": t, "status": "True"} for t in conditions]}
    return obj


R0 = "test-jobset-replicated-job-0"
IMMUTABLE = ("spec.replicatedJobs", "FieldValueInvalid")

UPDATE: list[tuple[str, dict[str, Any], dict[str, Any], tuple[str, str] | None, str | None]] = [
    ("update suspend", _upd(*VALID_JOBS), _upd(*VALID_JOBS, suspend=True), None, None),
    (
        "update labels",
        {**_upd(*VALID_JOBS), "metadata": {"name": "js", "namespace": "default", "labels": {"hello": "world"}}},
        _upd(*VALID_JOBS, suspend=True),
        None,
        None,
    ),
    (
        "managedBy is immutable",
        _upd(*VALID_JOBS, managedBy="example.com/new"),
        _upd(*VALID_JOBS, managedBy="example.com/old"),
        ("spec.managedBy", "FieldValueInvalid"),
        None,
    ),
    (
        "replicated job pod template can be updated for suspended jobset",
        _upd(_with_pod(rj(R0, replicas=2, parallelism=2), nodeSelector={"a": "b"}), suspend=True),
        _upd(rj(R0, replicas=2, parallelism=2), suspend=True),
        None,
        None,
    ),
    (
        "replicated job pod template can be updated for jobset getting suspended",
        _upd(_with_pod(rj(R0, replicas=2, parallelism=2), nodeSelector={"a": "b"}), suspend=True),
        _upd(rj(R0, replicas=2, parallelism=2), suspend=False),
        None,
        None,
    ),
    (
        "replicated job pod template cannot be updated for running jobset",
        _upd(_with_pod(rj(R0, replicas=2, parallelism=2), nodeSelector={"a": "b"})),
        _upd(rj(R0, replicas=2, parallelism=2)),
        IMMUTABLE,
        None,
    ),
    (
        # Kueue adds pod labels: the template's metadata appears, and JobSet's typed comparison takes an
        # empty metadata for an absent one once the labels are set aside.
        "pod template labels can be added while suspended",
        _upd({**rj(R0), "template": {"spec": {"template": {**POD, "metadata": {"labels": {"a": "b"}}}}}}, suspend=True),
        _upd(rj(R0), suspend=True),
        None,
        None,
    ),
    (
        "schedulingGates for pod template can be updated for suspended JobSet",
        _upd(_with_pod(rj(R0, parallelism=2), schedulingGates=[{"name": "example.com/gate"}]), suspend=True),
        _upd(rj(R0, parallelism=2), suspend=True),
        None,
        None,
    ),
    (
        "schedulingGates for pod template cannot be updated for unsuspended JobSet",
        _upd(_with_pod(rj(R0, parallelism=2), schedulingGates=[{"name": "example.com/gate"}])),
        _upd(rj(R0, parallelism=2)),
        IMMUTABLE,
        None,
    ),
    (
        "replicated job name cannot be updated",
        _upd(rj("new-replicated-job-name", parallelism=2), suspend=True),
        _upd(rj(R0, parallelism=2), suspend=True),
        IMMUTABLE,
        None,
    ),
    (
        "containers cannot change even while suspended (only Kueue's fields)",
        _upd(_with_pod(rj(R0), containers=[{"name": "test", "image": "bash:5"}]), suspend=True),
        _upd(rj(R0), suspend=True),
        IMMUTABLE,
        None,
    ),
    (
        "valid scaling of parallelism and completions",
        _upd(rj(R0, parallelism=8, completions=8, mode="Indexed")),
        _upd(rj(R0, parallelism=2, completions=2, mode="Indexed")),
        None,
        "ElasticJobSet=true",
    ),
    (
        "invalid scaling of parallelism to < 1",
        _upd(rj(R0, parallelism=0, mode="Indexed")),
        _upd(rj(R0, parallelism=2, mode="Indexed")),
        ("spec.replicatedJobs[0].template.spec.parallelism", "FieldValueInvalid"),
        "ElasticJobSet=true",
    ),
    (
        "invalid scaling of completions to < 1",
        _upd(rj(R0, completions=0, mode="Indexed")),
        _upd(rj(R0, completions=2, mode="Indexed")),
        ("spec.replicatedJobs[0].template.spec.completions", "FieldValueInvalid"),
        "ElasticJobSet=true",
    ),
    (
        "cannot scale parallelism if JobSet is Completed",
        _upd(rj(R0, parallelism=4, mode="Indexed")),
        _upd(rj(R0, parallelism=2, mode="Indexed"), conditions=["Completed"]),
        ("spec.replicatedJobs[0].template.spec", "FieldValueForbidden"),
        "ElasticJobSet=true",
    ),
    (
        "cannot scale completions if JobSet is Failed",
        _upd(rj(R0, completions=4, mode="Indexed")),
        _upd(rj(R0, completions=2, mode="Indexed"), conditions=["Failed"]),
        ("spec.replicatedJobs[0].template.spec", "FieldValueForbidden"),
        "ElasticJobSet=true",
    ),
    (
        "immutability still enforced for other fields during valid scale",
        _upd(rj(R0, replicas=2, parallelism=4, mode="Indexed")),
        _upd(rj(R0, replicas=1, parallelism=2, mode="Indexed")),
        IMMUTABLE,
        "ElasticJobSet=true",
    ),
    (
        "invalid scaling of parallelism and completions when feature gate is disabled",
        _upd(rj(R0, parallelism=8, completions=8, mode="Indexed")),
        _upd(rj(R0, parallelism=2, completions=2, mode="Indexed")),
        IMMUTABLE,
        None,
    ),
    (
        "invalid scaling: parallelism and completions must be equal",
        _upd(rj(R0, parallelism=4, completions=5, mode="Indexed")),
        _upd(rj(R0, parallelism=2, completions=2, mode="Indexed")),
        ("spec.replicatedJobs[0].template.spec.completions", "FieldValueInvalid"),
        "ElasticJobSet=true",
    ),
    (
        "adding a new ReplicatedJob while suspended is rejected",
        _upd(rj("job-a", parallelism=2), rj("job-b", parallelism=2), suspend=True),
        _upd(rj("job-a", parallelism=2), suspend=True),
        IMMUTABLE,
        None,
    ),
    (
        "reordering ReplicatedJobs evaluates ElasticJobSet scaling by name",
        _upd(
            rj("job-b", parallelism=2, completions=2, mode="Indexed"),
            rj("job-a", parallelism=4, completions=4, mode="Indexed"),
        ),
        _upd(
            rj("job-a", parallelism=2, completions=2, mode="Indexed"),
            rj("job-b", parallelism=2, completions=2, mode="Indexed"),
        ),
        IMMUTABLE,
        "ElasticJobSet=true",
    ),
    (
        "immutability enforced for NonIndexed jobs even when ElasticJobSet is enabled",
        _upd(rj(R0, parallelism=4, completions=4, mode="NonIndexed")),
        _upd(rj(R0, parallelism=2, completions=2, mode="NonIndexed")),
        IMMUTABLE,
        "ElasticJobSet=true",
    ),
]


@pytest.mark.parametrize("case", UPDATE, ids=[c[0] for c in UPDATE])
def test_jobset_validate_update_table(tmp_path, capsys, case):
    _, new, old, cause, gates = case
    response = _review(tmp_path, capsys, "validate", new, old, gates=gates)
    if cause is None:
        assert response["allowed"], message(response)
        return
    assert not response["allowed"]
    causes = {(c["field"], c["reason"]) for c in response["status"]["details"]["causes"]}
    assert causes == {cause}, causes


# --- JobSet's CRD rules (CEL), which jobgate checks too --------------------------------------------


CEL: list[tuple[str, dict[str, Any], dict[str, Any] | None, list[str]]] = [
    (
        "startupPolicy InOrder with dependsOn",
        js(rj("a"), rj("b", depends=[("a", "Complete")]), startupPolicy={"startupPolicyOrder": "InOrder"}),
        None,
        ['spec: Invalid value: "object": StartupPolicy and DependsOn APIs are mutually exclusive'],
    ),
    (
        "a claim template with a namespace",
        js(
            rj("a", pod=_mounting()),
            **_claims({"metadata": {"name": "test-volume", "namespace": "other"}, "spec": {}}),
        ),
        None,
        ['spec.volumeClaimPolicies[0]: Invalid value: "object": namespace cannot be set for VolumeClaimPolicies'],
    ),
    (
        "network changed",
        js(rj("a"), network={"subdomain": "new"}),
        js(rj("a"), network={"subdomain": "old"}),
        ['spec.network: Invalid value: "object": Value is immutable'],
    ),
    (
        "successPolicy changed",
        js(rj("a"), successPolicy={"operator": "Any"}),
        js(rj("a"), successPolicy={"operator": "All"}),
        ['spec.successPolicy: Invalid value: "object": Value is immutable'],
    ),
    (
        "failurePolicy changed",
        js(rj("a"), failurePolicy={"maxRestarts": 2}),
        js(rj("a"), failurePolicy={"maxRestarts": 1}),
        ['spec.failurePolicy: Invalid value: "object": Value is immutable'],
    ),
    (
        "dependsOn changed while suspended",
        _upd(rj("a"), rj("b", depends=[("a", "Ready")]), suspend=True),
        _upd(rj("a"), rj("b", depends=[("a", "Complete")]), suspend=True),
        ['spec.replicatedJobs[1].dependsOn: Invalid value: "array": Value is immutable'],
    ),
    (
        "failurePolicy added (a transition rule needs both)",
        js(rj("a"), failurePolicy={"maxRestarts": 1}),
        js(rj("a")),
        [],
    ),
    ("the same JobSet applied again (defaults left out)", js(rj("a")), js(rj("a")), []),
]


@pytest.mark.parametrize(("obj", "old", "wanted"), [c[1:] for c in CEL], ids=[c[0] for c in CEL])
def test_jobset_crd_rules(tmp_path, capsys, obj, old, wanted):
    response = _review(tmp_path, capsys, "validate", obj, old)
    text = message(response)
    if not wanted:
        assert response["allowed"], text
    for line in wanted:
        assert line in text, text


# --- TestJobSetDefaulting ---------------------------------------------------------------------------


def stored(tmp_path, capsys, obj: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
    response = _review(tmp_path, capsys, "mutate", obj, old)
    assert response["allowed"] is True
    patch = json.loads(base64.b64decode(response["patch"])) if "patch" in response else []
    return apply_patch(copy.deepcopy(obj), patch)


def test_defaults_of_a_bare_jobset(tmp_path, capsys):
    spec = stored(tmp_path, capsys, js(rj("rj", group=None, replicas=None)))["spec"]
    assert spec["successPolicy"] == {"operator": "All"}
    assert spec["startupPolicy"] == {"startupPolicyOrder": "AnyOrder"}
    assert spec["network"] == {"enableDNSHostnames": True, "publishNotReadyAddresses": True}
    job = spec["replicatedJobs"][0]
    assert (job["groupName"], job["replicas"]) == ("default", 1)  # the CRD's
    assert job["template"]["spec"]["completionMode"] == "Indexed"
    assert job["template"]["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"
    assert "managedBy" not in spec  # managedBy field is left nil


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ({"completionMode": "NonIndexed"}, ("completionMode", "NonIndexed")),
    ],
)
def test_job_completion_mode_set_is_kept(tmp_path, capsys, given, kept):
    obj = js(rj("rj", **given))
    spec = stored(tmp_path, capsys, obj)["spec"]["replicatedJobs"][0]["template"]["spec"]
    assert spec[kept[0]] == kept[1]


def test_pod_restart_policy_set_is_kept(tmp_path, capsys):
    pod = {"spec": {"restartPolicy": "Never", "containers": [{"name": "t", "image": "bash"}]}}
    spec = stored(tmp_path, capsys, js(rj("rj", pod=pod)))["spec"]["replicatedJobs"][0]
    assert spec["template"]["spec"]["template"]["spec"]["restartPolicy"] == "Never"


@pytest.mark.parametrize(
    ("network", "expected"),
    [
        ({"enableDNSHostnames": False}, {"enableDNSHostnames": False, "publishNotReadyAddresses": True}),
        ({"publishNotReadyAddresses": False}, {"enableDNSHostnames": True, "publishNotReadyAddresses": False}),
        ({"publishNotReadyAddresses": True}, {"enableDNSHostnames": True, "publishNotReadyAddresses": True}),
    ],
)
def test_network_defaults(tmp_path, capsys, network, expected):
    assert stored(tmp_path, capsys, js(rj("rj"), network=network))["spec"]["network"] == expected


def test_success_policy_and_startup_policy_set_are_kept(tmp_path, capsys):
    obj = js(
        rj("rj"),
        successPolicy={"operator": "Any", "targetReplicatedJobs": ["rj"]},
        startupPolicy={"startupPolicyOrder": "InOrder"},
        managedBy="example.com/controller",
    )
    spec = stored(tmp_path, capsys, obj)["spec"]
    assert spec["successPolicy"] == {"operator": "Any", "targetReplicatedJobs": ["rj"]}
    assert spec["startupPolicy"] == {"startupPolicyOrder": "InOrder"}
    assert spec["managedBy"] == "example.com/controller"


def test_failure_policy_rule_names_are_defaulted_by_index(tmp_path, capsys):
    rules = [{"action": "FailJobSet", "name": "ruleA"}, {"action": "RestartJobSet"}]
    spec = stored(tmp_path, capsys, js(rj("rj"), failurePolicy={"rules": rules}))["spec"]
    assert [r["name"] for r in spec["failurePolicy"]["rules"]] == ["ruleA", "failurePolicyRule1"]
    assert spec["failurePolicy"]["restartStrategy"] == "Recreate"  # the CRD's


def test_volume_claim_retention_is_defaulted_to_delete(tmp_path, capsys):
    obj = js(rj("rj", pod=_mounting()), volumeClaimPolicies=[{"templates": [CLAIM]}])
    policy = stored(tmp_path, capsys, obj)["spec"]["volumeClaimPolicies"][0]
    assert policy["retentionPolicy"] == {"whenDeleted": "Delete"}


def test_update_gets_only_the_crds_defaults(tmp_path, capsys):
    """JobSet's defaulting webhook is registered for CREATE only."""
    old = stored(tmp_path, capsys, js(rj("rj")))
    new = copy.deepcopy(old)
    new["spec"]["replicatedJobs"][0].pop("groupName")
    del new["spec"]["successPolicy"]
    spec = stored(tmp_path, capsys, new, old)["spec"]
    assert spec["replicatedJobs"][0]["groupName"] == "default"
    assert "successPolicy" not in spec
