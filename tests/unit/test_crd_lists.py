"""JobSet's CRD list checks (maxItems, list-map keys) offline, for a JobSet and a Trainer runtime's template,
in the apiserver's words and ratcheted on UPDATE as it ratchets them (issue 44)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from jobgate.engine.fielderrors import render_path
from jobgate.review import kind_of, review_job
from jobgate.rules import crd_lists

ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"


def job(name: str, **fields: Any) -> dict[str, Any]:
    pod = {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}
    return {"name": name, "template": {"spec": {"template": pod}}, **fields}


def jobset(*jobs: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "default"},
        "spec": {"replicatedJobs": list(jobs or [job("a")]), **spec},
    }


def runtime(*jobs: dict[str, Any]) -> dict[str, Any]:
    node = job("node")
    node["template"]["metadata"] = {"labels": {ANCESTOR: "trainer"}}
    node["template"]["spec"]["template"]["spec"]["containers"][0]["name"] = "node"
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "torch"},
        "spec": {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": {"replicatedJobs": [node, *jobs]}}},
    }


def errors(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    kind = kind_of(obj)
    assert kind is not None
    return [(str(e), e.rule) for e in review_job(kind, obj, old).errors]


def depends(count: int) -> list[dict[str, str]]:
    return [{"name": f"j{i}", "status": "Ready"} for i in range(count)]


def many_jobs(count: int) -> list[dict[str, Any]]:
    return [job(f"j{i}") for i in range(count)]


def pod_spec(obj: dict[str, Any], index: int = 0) -> dict[str, Any]:
    spec = obj["spec"]["template"]["spec"] if obj["kind"] != "JobSet" else obj["spec"]
    return spec["replicatedJobs"][index]["template"]["spec"]["template"]["spec"]


# --- maxItems ----------------------------------------------------------------------------------------


def test_a_jobsets_depends_on_beyond_five_is_refused_as_its_crd_refuses_it():
    obj = jobset(*many_jobs(6), job("late", dependsOn=depends(6)))
    assert (
        "spec.replicatedJobs[6].dependsOn: Too many: 6: must have at most 5 items",
        "jobset/list-bounds",
    ) in errors(obj)
    ok = jobset(*many_jobs(6), job("late", dependsOn=depends(5)))
    assert not [e for e in errors(ok) if e[1] == "jobset/list-bounds"]


def test_a_jobsets_volume_claim_policies_are_bounded():
    templates = [{"metadata": {"name": f"c{i}"}} for i in range(51)]
    found = errors(jobset(volumeClaimPolicies=[{"templates": templates}]))
    assert (
        "spec.volumeClaimPolicies[0].templates: Too many: 51: must have at most 50 items",
        "jobset/list-bounds",
    ) in found
    found = errors(jobset(volumeClaimPolicies=[{"templates": []}] * 51))
    assert ("spec.volumeClaimPolicies: Too many: 51: must have at most 50 items", "jobset/list-bounds") in found


def test_a_too_long_list_left_unchanged_is_ratcheted_on_update():
    old = jobset(*many_jobs(6), job("late", dependsOn=depends(6)), suspend=True)
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {"team": "a"}
    assert not [e for e in errors(new, old) if e[1] == "jobset/list-bounds"]
    # Not stored so: refused.
    stored = jobset(*many_jobs(6), job("late", dependsOn=depends(5)), suspend=True)
    assert [e for e in errors(new, stored) if e[1] == "jobset/list-bounds"]


def test_trainers_list_bounds_are_the_shared_walks():
    obj = runtime(*many_jobs(6), job("late", dependsOn=depends(6)))
    assert (
        "spec.template.spec.replicatedJobs[7].dependsOn: Too many: 6: must have at most 5 items",
        "trainer/list-bounds",
    ) in errors(obj)


# --- list-map keys -----------------------------------------------------------------------------------


def test_two_replicated_jobs_of_one_name_are_refused_in_a_jobset():
    assert errors(jobset(job("a"), job("a"))) == [
        ('spec.replicatedJobs[1]: Duplicate value: {"name":"a"}', "jobset/list-map-keys")
    ]


def test_two_replicated_jobs_of_one_name_are_refused_in_a_runtime_template():
    assert (
        'spec.template.spec.replicatedJobs[1]: Duplicate value: {"name":"node"}',
        "trainer/list-map-keys",
    ) in errors(runtime(job("node")))


def test_depends_on_of_one_name_twice_is_refused():
    obj = jobset(job("a"), job("b", dependsOn=[{"name": "a", "status": "Ready"}, {"name": "a", "status": "Complete"}]))
    assert ('spec.replicatedJobs[1].dependsOn[1]: Duplicate value: {"name":"a"}', "jobset/list-map-keys") in errors(obj)


@pytest.mark.parametrize(
    ("field", "items", "shown"),
    [
        ("volumes", [{"name": "v", "emptyDir": {}}] * 2, '{"name":"v"}'),
        ("schedulingGates", [{"name": "g"}] * 2, '{"name":"g"}'),
        ("hostAliases", [{"ip": "10.0.0.1"}] * 2, '{"ip":"10.0.0.1"}'),
        (
            "topologySpreadConstraints",
            [{"topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "maxSkew": 1}] * 2,
            '{"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule"}',
        ),
    ],
)
def test_a_pod_templates_list_maps_are_keyed_as_core_v1_keys_them(field, items, shown):
    for obj in (jobset(), runtime()):
        pod_spec(obj)[field] = copy.deepcopy(items)
        found = [line for line, rule in errors(obj) if rule.endswith("/list-map-keys")]
        assert found == [f"{render_path(prefix(obj))}.{field}[1]: Duplicate value: {shown}"]


def prefix(obj: dict[str, Any]) -> tuple[Any, ...]:
    spec = ("spec", "template", "spec") if obj["kind"] != "JobSet" else ("spec",)
    return (*spec, "replicatedJobs", 0, "template", "spec", "template", "spec")


def test_a_containers_ports_are_keyed_by_port_and_protocol_with_tcp_the_default():
    obj = jobset()
    container = pod_spec(obj)["containers"][0]
    container["ports"] = [{"containerPort": 80}, {"containerPort": 80, "protocol": "UDP"}]
    assert not [e for e in errors(obj) if e[1] == "jobset/list-map-keys"]
    container["ports"].append({"containerPort": 80, "protocol": "TCP"})
    assert [e for e in errors(obj) if e[1] == "jobset/list-map-keys"] == [
        (
            "spec.replicatedJobs[0].template.spec.template.spec.containers[0].ports[2]: "
            'Duplicate value: {"containerPort":80,"protocol":"TCP"}',
            "jobset/list-map-keys",
        )
    ]


def test_volume_mounts_are_keyed_by_mount_path_not_name():
    obj = jobset()
    container = pod_spec(obj)["containers"][0]
    pod_spec(obj)["volumes"] = [{"name": "v", "emptyDir": {}}]
    container["volumeMounts"] = [{"name": "v", "mountPath": "/a"}, {"name": "v", "mountPath": "/b"}]
    assert not [e for e in errors(obj) if e[1] == "jobset/list-map-keys"]
    container["volumeMounts"][1]["mountPath"] = "/a"
    assert [e[0] for e in errors(obj) if e[1] == "jobset/list-map-keys"] == [
        'spec.replicatedJobs[0].template.spec.template.spec.containers[0].volumeMounts[1]: Duplicate value: {"mountPath":"/a"}'  # noqa: E501
    ]


def test_keys_of_different_types_are_different_keys():
    tree = {"items": crd_lists.ListMap(("key",))}
    value = {"items": [{"key": 1}, {"key": True}, {"key": "1"}, {"key": 1}]}
    assert [str(e) for e in crd_lists.duplicate_key_errors(value, tree, ("spec",), "r")] == [
        'spec.items[3]: Duplicate value: {"key":1}'
    ]


def test_duplicate_keys_are_not_checked_on_update_when_the_stored_object_has_some():
    """apiextensions checks list-map keys on UPDATE only when the stored object passes that check."""
    old = jobset(job("a"), job("a"), suspend=True)
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {"team": "a"}
    assert not [e for e in errors(new, old) if e[1] == "jobset/list-map-keys"]
    assert [e for e in errors(new, jobset(job("a"), suspend=True)) if e[1] == "jobset/list-map-keys"]
    old_runtime = runtime(job("node"))
    new_runtime = copy.deepcopy(old_runtime)
    new_runtime["spec"]["mlPolicy"]["numNodes"] = 2
    assert not [e for e in errors(new_runtime, old_runtime) if e[1] == "trainer/list-map-keys"]
    assert [e for e in errors(new_runtime, runtime(job("other"))) if e[1] == "trainer/list-map-keys"]


# --- a runtime's pod templates' core/v1 types -------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "field", "wanted"),
    [
        (lambda p: p.update(containers="x"), "containers", 'Invalid value: "x": must be of type array'),
        (lambda p: p["containers"][0].update(image=5), "containers[0].image", "Invalid value: 5: must be of type"),
    ],
)
def test_a_runtime_pod_templates_core_v1_types_are_checked(change, field, wanted):
    obj = runtime()
    change(pod_spec(obj))
    line = f"{render_path(prefix(obj))}.{field}: {wanted}"
    assert any(e[0].startswith(line) and e[1] == "schema/types" for e in errors(obj)), errors(obj)


def test_only_the_pod_template_checks_type_errors_hold_for_a_runtime():
    """A runtime's container without an image is Trainer's to allow (a TrainJob's trainer.image fills it)."""
    obj = runtime()
    del pod_spec(obj)["containers"][0]["image"]
    pod_spec(obj)["containers"][0]["ports"] = [{"containerPort": 70000}]
    assert errors(obj) == []


def test_a_stored_runtimes_unchanged_pod_type_error_is_ratcheted():
    old = runtime()
    pod_spec(old)["containers"][0]["image"] = 5
    new = copy.deepcopy(old)
    new["spec"]["mlPolicy"]["numNodes"] = 2
    assert not [e for e in errors(new, old) if e[1] == "schema/types"]
    assert [e for e in errors(new, runtime()) if e[1] == "schema/types"]


# --- a TrainJob's list-maps ------------------------------------------------------------------------


def trainjob_errors(spec: dict[str, Any], old_spec: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    from jobgate.engine.context import ReviewContext
    from jobgate.families.trainer.rules.runtimes import RuntimeSnapshot

    def obj(spec: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "job", "namespace": "default"},
            "spec": {"runtimeRef": {"name": "torch"}, **spec},
        }

    operation = "UPDATE" if old_spec is not None else "CREATE"
    context = ReviewContext(operation=operation, runtimes=RuntimeSnapshot([runtime()]))
    kind = kind_of(obj(spec))
    assert kind is not None
    old = obj(old_spec) if old_spec is not None else None
    found = review_job(kind, obj(spec), old, context=context).errors
    return [(str(e), e.rule) for e in found if e.rule == "trainer/list-map-keys"]


def patch(manager: str, *pod_specs: dict[str, Any], names: tuple[str, ...] = ("node",)) -> dict[str, Any]:
    jobs = [
        {"name": name, "template": {"spec": {"template": {"spec": pod}}}}
        for name, pod in zip(names, pod_specs or [{"nodeSelector": {"a": "b"}}] * len(names), strict=True)
    ]
    return {"manager": manager, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": jobs}}}}


def test_a_trainjobs_patches_of_one_manager_are_refused():
    spec = {"runtimePatches": [patch("example.com/a"), patch("example.com/a")]}
    assert trainjob_errors(spec) == [
        ('spec.runtimePatches[1]: Duplicate value: {"manager":"example.com/a"}', "trainer/list-map-keys")
    ]
    assert trainjob_errors({"runtimePatches": [patch("example.com/a"), patch("example.com/b")]}) == []


def test_a_patchs_lists_are_keyed_as_trainers_crd_keys_them():
    spec = {"runtimePatches": [patch("example.com/a", names=("node", "node"))]}
    assert trainjob_errors(spec) == [
        (
            "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[1]: "
            'Duplicate value: {"name":"node"}',
            "trainer/list-map-keys",
        )
    ]
    # A patch's volume mounts are keyed by name (Trainer's type), not by mountPath (core/v1's).
    mounts = [{"name": "v", "mountPath": "/a"}, {"name": "v", "mountPath": "/b"}]
    spec = {"runtimePatches": [patch("example.com/a", {"containers": [{"name": "node", "volumeMounts": mounts}]})]}
    assert [line for line, _ in trainjob_errors(spec)] == [
        "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec"
        '.containers[0].volumeMounts[1]: Duplicate value: {"name":"v"}'
    ]


def test_a_trainers_env_of_one_name_twice_is_refused_but_not_when_stored_so():
    spec = {"trainer": {"env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}}
    assert trainjob_errors(spec) == [('spec.trainer.env[1]: Duplicate value: {"name":"A"}', "trainer/list-map-keys")]
    assert trainjob_errors(spec, old_spec=spec) == []
