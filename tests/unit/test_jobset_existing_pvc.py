"""JobSet's check of existing PVCs (J18): offline from --cluster-objects and documents beside the JobSet,
in the webhook from a read of the API by name; without any PVC given, admitted with a warning."""

from __future__ import annotations

import json
from typing import Any

import pytest

from jobgate.cli import main
from jobgate.engine.context import ReviewContext
from jobgate.families.jobset.rules import JOBSET
from jobgate.families.jobset.rules.claims import (
    NO_VIEW_WARNING,
    R_EXISTING_CLAIMS,
    ClaimLookupError,
    ClaimSnapshot,
    comparable_spec,
)
from jobgate.kube.client import ApiError
from jobgate.offline.cluster_objects import Located, route
from jobgate.webhook.jobset_claims import ClaimReader, start_claim_reader

SPEC = {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}}
OTHER_SPEC = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2Gi"}}}


def jobset(when_deleted: str = "Retain", *, name: str = "js", spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": "team"},
        "spec": {
            "volumeClaimPolicies": [
                {
                    "templates": [{"metadata": {"name": "data"}, "spec": SPEC if spec is None else spec}],
                    "retentionPolicy": {"whenDeleted": when_deleted},
                }
            ],
            "replicatedJobs": [
                {
                    "name": "workers",
                    "template": {
                        "spec": {
                            "template": {
                                "spec": {
                                    "containers": [
                                        {
                                            "name": "main",
                                            "image": "bash:latest",
                                            "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                                        }
                                    ]
                                }
                            }
                        }
                    },
                }
            ],
        },
    }


def pvc(spec: dict[str, Any], *, name: str = "data-js", namespace: str | None = "team") -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata, "spec": spec}


def validate(obj: dict[str, Any], claims: Any = None, old: dict[str, Any] | None = None) -> Any:
    context = ReviewContext(namespace="team", claims=claims, operation="UPDATE" if old else "CREATE")
    return JOBSET.validate(JOBSET.default(obj), old, context)


def texts(found: Any) -> list[str]:
    return [str(e) for e in found.errors]


# --- the rule -----------------------------------------------------------------------------------------


def test_an_existing_pvc_of_another_spec_is_refused_with_jobsets_path_and_message():
    found = validate(jobset(), ClaimSnapshot([pvc(OTHER_SPEC)]))
    [error] = found.errors
    assert error.rule == R_EXISTING_CLAIMS
    assert str(error).startswith("spec.volumeClaimPolicies[0].template[0].spec: Invalid value: {")
    assert str(error).endswith(": spec does not match existing PVC data-js in namespace team")


def test_an_existing_pvc_requires_retain():
    found = validate(jobset("Delete"), ClaimSnapshot([pvc(SPEC)]))
    assert texts(found) == [
        'spec.volumeClaimPolicies[0].retentionPolicy.whenDeleted: Invalid value: "Delete": '
        "retentionPolicy must be retain when PVC exists"
    ]


def test_the_defaulted_retention_is_delete_and_refused():
    obj = jobset()
    del obj["spec"]["volumeClaimPolicies"][0]["retentionPolicy"]
    found = validate(obj, ClaimSnapshot([pvc(SPEC)]))
    assert [e.path[-1] for e in found.errors] == ["whenDeleted"]


def test_a_matching_pvc_with_retain_is_admitted_without_warning():
    found = validate(jobset(), ClaimSnapshot([pvc(SPEC)]))
    assert found.errors == [] and found.warnings == []


def test_no_such_pvc_is_admitted():
    found = validate(
        jobset("Delete"), ClaimSnapshot([pvc(OTHER_SPEC, name="data-other"), pvc(OTHER_SPEC, namespace="x")])
    )
    assert found.errors == [] and found.warnings == []


def test_both_errors_in_jobsets_order_after_the_templates_own():
    obj = jobset("Delete")
    obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = []
    found = validate(obj, ClaimSnapshot([pvc(OTHER_SPEC)]))
    assert [e.field for e in found.errors] == [
        "spec.replicatedJobs",
        "spec.volumeClaimPolicies[0].template[0].spec",
        "spec.volumeClaimPolicies[0].retentionPolicy.whenDeleted",
    ]


def test_without_a_view_of_pvcs_admitted_with_a_warning_saying_how_to_give_them():
    found = validate(jobset("Delete"), None)
    assert found.errors == []
    assert found.warnings == [NO_VIEW_WARNING]
    assert "--cluster-objects" in NO_VIEW_WARNING and len(NO_VIEW_WARNING) <= 120


def test_a_jobset_without_claim_templates_gets_no_warning():
    obj = jobset()
    obj["spec"]["volumeClaimPolicies"] = []
    assert validate(obj, None).warnings == []


def test_a_generated_name_names_no_pvc_yet():
    obj = jobset("Delete")
    obj["metadata"] = {"generateName": "js", "namespace": "team"}
    claims = ClaimSnapshot([pvc(OTHER_SPEC, name="data-js")])
    assert validate(obj, claims).errors == []


def test_update_does_not_look_pvcs_up():
    obj = jobset("Delete")
    assert validate(obj, ClaimSnapshot([pvc(OTHER_SPEC)]), old=obj).errors == []


def test_a_failed_read_is_jobsets_internal_error_at_the_template():
    class Failing:
        def claim(self, namespace: str, name: str) -> None:
            raise ClaimLookupError('persistentvolumeclaims "data-js" is forbidden')

    assert texts(validate(jobset(), Failing())) == [
        "spec.volumeClaimPolicies[0].template[0]: Internal error: failed to check for existing PVC data-js: "
        'persistentvolumeclaims "data-js" is forbidden'
    ]


def test_the_jobsets_own_namespace_is_the_one_looked_in():
    seen = []

    class Recording:
        def claim(self, namespace: str, name: str) -> None:
            seen.append((namespace, name))

    validate(jobset(), Recording())
    assert seen == [("team", "data-js")]


# --- comparing specs ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "stored"),
    [
        ({"resources": {"requests": {"storage": "1024Mi"}}}, {"resources": {"requests": {"storage": "1Gi"}}}),
        ({"accessModes": [], "volumeName": ""}, {}),
        ({"resources": {}}, {}),
        ({"selector": {"matchLabels": {"a": "b"}}}, {"selector": {"matchLabels": {"a": "b"}}}),
    ],
)
def test_specs_equal_as_jobsets_decoded_structs_hold_them(template, stored):
    assert comparable_spec(template) == comparable_spec(stored)


@pytest.mark.parametrize(
    ("template", "stored"),
    [
        ({"storageClassName": ""}, {}),  # a pointer: "" (no class) is not "not set"
        ({}, {"volumeMode": "Filesystem"}),  # the apiserver's default on the stored PVC, as JobSet compares
        ({"resources": {"requests": {"storage": "1Gi"}}}, {"resources": {"requests": {"storage": "2Gi"}}}),
        ({"accessModes": ["ReadWriteOnce"]}, {"accessModes": ["ReadWriteMany"]}),
        ({"volumeName": "pv-1"}, {}),
        ({"selector": {"matchLabels": {"a": ""}}}, {"selector": {"matchLabels": {}}}),  # a map keeps "" values
    ],
)
def test_specs_that_differ(template, stored):
    assert comparable_spec(template) != comparable_spec(stored)


# --- offline: --cluster-objects and documents beside --------------------------------------------------


def test_pvcs_are_routed_from_cluster_objects():
    routed = route([Located(pvc(SPEC), "x.yaml"), Located({"apiVersion": "v1", "kind": "ConfigMap"}, "x.yaml")])
    assert routed.claims == [pvc(SPEC)]
    assert routed.ignored == {"v1 ConfigMap": 1}


def _write(path, *objects: dict[str, Any]) -> str:
    path.write_text("\n---\n".join(json.dumps(o) for o in objects))
    return str(path)


def test_validate_with_cluster_objects_refuses(tmp_path, capsys):
    objects = _write(tmp_path / "pvcs.yaml", {"apiVersion": "v1", "kind": "List", "items": [pvc(OTHER_SPEC)]})
    job = _write(tmp_path / "js.yaml", jobset())
    assert main(["validate", "--cluster-objects", objects, job]) == 1
    assert "spec does not match existing PVC data-js in namespace team" in capsys.readouterr().out


def test_validate_with_the_pvc_beside_the_jobset(tmp_path, capsys):
    job = _write(tmp_path / "js.yaml", jobset("Delete"), pvc(SPEC))
    assert main(["validate", job]) == 1
    assert "retentionPolicy must be retain when PVC exists" in capsys.readouterr().out


def test_validate_a_pvc_without_namespace_is_in_the_default_namespace(tmp_path, capsys):
    objects = _write(tmp_path / "pvcs.yaml", pvc(OTHER_SPEC, namespace=None))
    job = _write(tmp_path / "js.yaml", jobset())
    assert main(["validate", "--namespace", "team", "--cluster-objects", objects, job]) == 1
    capsys.readouterr()


def test_validate_without_pvcs_admits_with_the_warning(tmp_path, capsys):
    job = _write(tmp_path / "js.yaml", jobset("Delete"))
    assert main(["validate", job]) == 0
    assert NO_VIEW_WARNING in capsys.readouterr().out


def test_review_with_cluster_objects_admits_a_matching_retained_pvc(tmp_path, capsys):
    from testkit.builders import admission_review

    objects = _write(tmp_path / "pvcs.yaml", pvc(SPEC))
    review = _write(tmp_path / "review.json", admission_review(jobset(), operation="CREATE"))
    assert main(["review", "--cluster-objects", objects, "validate", review]) == 0
    response = json.loads(capsys.readouterr().out)["response"]
    assert response["allowed"] and "warnings" not in response


# --- the webhook's read -------------------------------------------------------------------------------


class StubKube:
    """Answers GETs from a table (path -> object or ApiError); records the paths read."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.paths: list[str] = []

    def request(self, method: str, path: str, **options: Any) -> Any:
        assert method == "GET" and options["timeout"] < 10  # within the apiserver's webhook timeout
        self.paths.append(path)
        answer = self.answers.get(path, ApiError(404, "Not Found"))
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_the_webhook_reads_one_pvc_by_name():
    kube = StubKube({"/api/v1/namespaces/team/persistentvolumeclaims/data-js": pvc(OTHER_SPEC)})
    reader = ClaimReader(kube)  # type: ignore[arg-type]
    assert reader.claim("team", "data-js") == pvc(OTHER_SPEC)
    assert reader.claim("team", "other") is None
    assert kube.paths == [
        "/api/v1/namespaces/team/persistentvolumeclaims/data-js",
        "/api/v1/namespaces/team/persistentvolumeclaims/other",
    ]


def test_the_webhook_refuses_on_a_failed_read_with_the_apiservers_words():
    forbidden = ApiError(403, "Forbidden", {"message": 'persistentvolumeclaims "data-js" is forbidden', "reason": "x"})
    reader = ClaimReader(StubKube({"/api/v1/namespaces/team/persistentvolumeclaims/data-js": forbidden}))  # type: ignore[arg-type]
    with pytest.raises(ClaimLookupError, match="is forbidden"):
        reader.claim("team", "data-js")


def test_the_webhook_without_a_cluster_has_no_view():
    from jobgate.engine.views import ClusterViews

    views = ClusterViews()
    assert start_claim_reader(None, views) is None and views.claims is None
    start_claim_reader(StubKube({}), views)  # type: ignore[arg-type]
    assert isinstance(views.claims, ClaimReader)


def test_jobgate_webhook_reads_pvcs_when_it_has_a_cluster(tmp_path):
    from jobgate.cli.serve import _jobset_claims
    from jobgate.engine.views import ClusterViews

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    without = ClusterViews()
    _jobset_claims(None, False, without)
    assert without.claims is None
    given = ClusterViews()
    _jobset_claims(str(kubeconfig), False, given)
    assert isinstance(given.claims, ClaimReader)
    # An API that cannot be reached refuses the JobSet as JobSet's webhook does when its read fails.
    [error] = validate(jobset(), given.claims).errors
    assert str(error).startswith(
        "spec.volumeClaimPolicies[0].template[0]: Internal error: failed to check for existing PVC data-js: "
    )
