"""The generated platform-policy MutatingAdmissionPolicies (manifests/policy-maps): their objects, the
places each writes a default (the field map's), and what they take from the engine's own
behaviour (jobgate.policy.check.policy_defaults). The written values are proven on a real apiserver
by tests/e2e/test_policy_map.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jobgate.generate.manifests import policy_map_files
from jobgate.generate.policy_map import (
    DEFAULT_FIELDS,
    _job_level_writes,
    _pointer,
    kind_documents,
    patch_expression,
    policy_map_kinds,
)
from jobgate.policy.check import policy_defaults
from jobgate.policy.fieldmap import KUEUE_LABEL, TEMPLATE, KindMap
from jobgate.policy.kinds import KINDS
from jobgate.policy.resolve import effective_policy

REPO = Path(__file__).resolve().parents[2]


def _policies(kmap: KindMap) -> list[dict[str, Any]]:
    return [d for d in kind_documents(kmap, "things", "v9", {"a": "b"}) if d["kind"] == "MutatingAdmissionPolicy"]


def test_two_policies_and_bindings_per_kind_create_only_failing_open():
    for kmap in KINDS.values():
        documents = kind_documents(kmap, "things", "v9", {})
        policies = [d for d in documents if d["kind"] == "MutatingAdmissionPolicy"]
        bindings = [d for d in documents if d["kind"] == "MutatingAdmissionPolicyBinding"]
        assert len(policies) == len(bindings) == 2
        assert {d["apiVersion"] for d in documents} == {"admissionregistration.k8s.io/v1"}
        assert {p["spec"]["paramKind"]["kind"] for p in policies} == {"ClusterTrainingJobPolicy", "TrainingJobPolicy"}
        for policy in policies:
            spec = policy["spec"]
            (rule,) = spec["matchConstraints"]["resourceRules"]
            assert rule == {
                "apiGroups": [kmap.group],
                "apiVersions": ["v9"],
                "resources": ["things"],
                "operations": ["CREATE"],
            }
            assert spec["failurePolicy"] == "Ignore"
            assert spec["reinvocationPolicy"] == "IfNeeded"
            (mutation,) = spec["mutations"]
            assert mutation["patchType"] == "JSONPatch"
            assert mutation["jsonPatch"]["expression"].startswith("!variables.applies ? [] : ")
            applies = next(v for v in spec["variables"] if v["name"] == "applies")["expression"]
            # Defaults apply whatever the policy's enforcementAction; selection as the VAPs select.
            assert "enforcementAction" not in applies
            assert "objectSelector" in applies and "match.kinds" in applies and "match.families" in applies
            cluster = spec["paramKind"]["kind"] == "ClusterTrainingJobPolicy"
            assert ("namespaceSelector" in applies) == cluster
        for binding in bindings:
            assert binding["spec"]["paramRef"] == {"selector": {}, "parameterNotFoundAction": "Allow"}
            (excluded,) = binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
            assert excluded["operator"] == "NotIn" and set(excluded["values"]) == {"kube-system", "jobgate-system"}
            assert "validationActions" not in binding["spec"]


def test_every_default_the_kind_has_is_written_where_the_field_map_keeps_it():
    for kmap in KINDS.values():
        expression = patch_expression(kmap)
        written = {w.path for w in _job_level_writes(kmap)}
        for field in DEFAULT_FIELDS:
            locator = kmap.locator(field)
            mentioned = f"params.spec.defaults.{field}" in expression
            assert mentioned == (locator is not None), (kmap.kind, field)
            if locator is None:
                continue
            if locator == TEMPLATE:
                assert f"/template/spec/{field}'" in expression, (kmap.kind, field)
                continue
            for shape in ({"spec": {}}, {"spec": {"runPolicy": {}}}):
                path = tuple(str(s) for s in locator(shape))  # type: ignore[operator]
                assert path in written, (kmap.kind, field, path)
                assert f"path: '{_pointer(path)}'" in expression
        assert "params.spec.defaults.labels" in expression
        assert (KUEUE_LABEL.replace("/", "~1") in expression) == kmap.kueue, kmap.kind


def test_the_objects_on_the_way_are_created_once_outermost_first_before_the_defaults():
    kmap = KINDS["kubeflow.org", "PyTorchJob"]
    expression = patch_expression(kmap)
    creations = ["'/spec/runPolicy'", "'/spec/runPolicy/schedulingPolicy'"]
    places = [expression.index(f"path: {c}, value: {{}}") for c in creations]
    assert places == sorted(places)
    assert all(expression.count(f"path: {c}, value: {{}}") == 1 for c in creations)
    assert places[-1] < expression.index("path: '/spec/runPolicy/schedulingPolicy/queue'")
    # An object is created only when a default goes under it: the deadline does not need schedulingPolicy.
    creation = expression[expression.rindex("(", 0, places[1]) : places[1]]
    assert "writeQueue" in creation and "writeActiveDeadlineSeconds" not in creation


def test_a_kubedl_mpijob_gets_its_defaults_inline_or_under_its_run_policy():
    kmap = KINDS["training.kubedl.io", "MPIJob"]
    variables = {v["name"]: v["expression"] for v in _policies(kmap)[0]["spec"]["variables"]}
    assert variables["writeQueue0"].startswith("!(has(object.spec) && has(object.spec.runPolicy))")
    assert variables["writeQueue1"].startswith("(has(object.spec) && has(object.spec.runPolicy))")
    expression = patch_expression(kmap)
    assert "path: '/spec/schedulingPolicy/queue'" in expression
    assert "path: '/spec/runPolicy/schedulingPolicy/queue'" in expression


def _engine_writes(kmap: KindMap, field: str, value: Any, job: dict[str, Any]) -> bool:
    policy = {
        "apiVersion": "policy.jobgate.io/v1alpha1",
        "kind": "ClusterTrainingJobPolicy",
        "metadata": {"name": "p"},
        "spec": {"defaults": {field: value}},
    }
    job = {"apiVersion": f"{kmap.group}/v1", "kind": kmap.kind, "metadata": {"name": "j"}, **job}
    return bool(policy_defaults(job, kmap.family, effective_policy([policy], "ns", {}, job), kmap))


def test_the_t9k_queue_is_written_where_the_engine_writes_it():
    """The generator asks the engine which objects must exist first: a GenericJob that names no T9k
    scheduler gets the queue (the scheduler objects created) exactly when the webhook gives it one."""
    kmap = KINDS["batch.tensorstack.dev", "GenericJob"]
    variables = {v["name"]: v["expression"] for v in _policies(kmap)[0]["spec"]["variables"]}
    expression = patch_expression(kmap)
    without = _engine_writes(kmap, "queue", "q", {"spec": {}})
    with_scheduler = _engine_writes(kmap, "queue", "q", {"spec": {"scheduler": {"t9kScheduler": {}}}})
    assert with_scheduler
    gated = "has(object.spec.scheduler.t9kScheduler)) && !" in variables["writeQueue"]
    assert gated == (not without)
    assert ("path: '/spec/scheduler/t9kScheduler', value: {}" in expression) == without


def test_only_volcanos_schema_queue_counts_as_unset():
    for kmap in KINDS.values():
        variables = {v["name"]: v["expression"] for v in _policies(kmap)[0]["spec"]["variables"]}
        replaced = any("== 'default'" in e for n, e in variables.items() if n.startswith("writeQueue"))
        assert replaced == (kmap.family == "volcano"), kmap.kind
        if kmap.queue is not None and kmap.queue != TEMPLATE:
            path = kmap.queue({"spec": {}})
            job: dict[str, Any] = {}
            node = job
            for step in path[:-1]:
                node = node.setdefault(str(step), {})
            node[str(path[-1])] = "default"
            assert _engine_writes(kmap, "queue", "q", job) == replaced, kmap.kind


def test_pod_template_fields_go_into_each_template_with_a_spec():
    mx = patch_expression(KINDS["mxnet.mlkube.io", "MxJob"])
    assert "object.spec.replicaSpecs.transformList(i, g, has(g.template) && has(g.template.spec)" in mx
    assert "'/spec/replicaSpecs/' + string(i) + '/template/spec/priorityClassName'" in mx
    tf = patch_expression(KINDS["training.kubedl.io", "TFJob"])
    # A role name escaped as a JSON pointer token.
    assert "'/spec/tfReplicaSpecs/' + r.replace('~', '~0').replace('/', '~1') + '/template/spec/schedulerName'" in tf


def test_labels_are_added_by_key_the_kueue_label_last():
    expression = patch_expression(KINDS["kubeflow.org", "TFJob"])
    create = expression.index("path: '/metadata/labels', value: {}")
    each = expression.index("'/metadata/labels/' + k.replace('~', '~0').replace('/', '~1')")
    kueue = expression.index("path: '/metadata/labels/kueue.x-k8s.io~1queue-name'")
    assert create < each < kueue
    assert "params.spec.defaults.labels.filter(k, !(k in variables.labels))" in expression


def test_the_policy_maps_are_generated_apart_from_the_policy_vaps_and_named_by_cel_only():
    """policy-vaps loads on 1.30; a MutatingAdmissionPolicy v1 only on 1.36: their own directory."""
    files = policy_map_files()
    assert "policy-maps/kustomization.yaml" in files
    # (manifests/ is what `jobgate manifests generate` writes: tests/unit/test_manifests.py)
    assert not any("MutatingAdmissionPolicy" in path.read_text() for path in (REPO / "manifests/policy-vaps").iterdir())
    kinds = {f"{k.group}/{k.kind}" for k in policy_map_kinds()}
    maps = [text for name, text in files.items() if name.startswith("policy-maps/") and "kustomization" not in name]
    # Kinds whose pods no field of theirs holds (a TrainJob's are its runtime's) get none.
    assert len(maps) == len(kinds) == len([k for k in KINDS.values() if k.replica_field])
    text = (REPO / "manifests/overlays/cel-only/kustomization.yaml").read_text()
    assert "manifests/policy-maps" in text and "../../policy-maps" not in text


@pytest.mark.skipif(not (REPO / "docs").is_dir(), reason="no docs/ here (the compiled wheel's pass)")
def test_the_enforcement_table_places_the_defaults_in_the_apiserver():
    from jobgate.generate.policy_vap import enforcement_rows

    rows = {what: where for what, where, _ in enforcement_rows()}
    defaults = next(what for what in rows if what.startswith("defaults ("))
    assert "policy-maps" in rows[defaults]
    assert any("priority" in what and where == "webhook" for what, where in rows.items())
