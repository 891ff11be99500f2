"""Findings of a job against its effective policy, existingViolations on UPDATE, and CREATE defaults."""

from __future__ import annotations

import copy

import pytest

from jobgate.policy.check import PolicyFinding, apply_defaults, policy_defaults, policy_findings
from jobgate.policy.kinds import kind_map
from jobgate.policy.resolve import effective_policy
from tests.unit.test_policy_fixtures import cluster, dijob, kubedl, kubeflow, mxjob, namespaced, pod, t9k, volcano


def findings(job: dict, *policies: dict, old: dict | None = None) -> list[PolicyFinding]:
    eff = effective_policy(list(policies), "ns", {}, job)
    return policy_findings(job, old, kind_map(job).family, eff)


def rules(found: list[PolicyFinding]) -> list[str]:
    return [f.rule for f in found]


def defaults(job: dict, *policies: dict) -> list[tuple[list, object]]:
    eff = effective_policy(list(policies), "ns", {}, job)
    return policy_defaults(job, kind_map(job).family, eff)


GPUS = cluster("research-gpus", {"limits": {"maxGPUsPerJob": 32, "maxGPUsPerPod": 8}})


# --- GPU and replica limits ------------------------------------------------------------------------


def test_gpus_per_job_message_path_and_action() -> None:
    job = kubeflow(roles={"Master": (1, pod(8)), "Worker": (4, pod(8))})
    (f,) = findings(job, GPUS)
    assert f.rule == "policy/max-gpus-per-job" and f.action == "Deny" and f.path == "spec"
    assert "40 GPUs" in f.message and "exceeds 32 GPUs per job (ClusterTrainingJobPolicy research-gpus)" in f.message
    assert f.text().startswith('spec: Invalid value: "40": ')  # quoted, as the engine and the apiserver show it


def test_gpus_per_pod() -> None:
    job = kubeflow(roles={"Master": (1, pod(9))})
    (f,) = findings(job, GPUS)
    assert f.rule == "policy/max-gpus-per-pod"
    assert f.path == "spec.pytorchReplicaSpecs[Master].template.spec"


def test_within_limits_no_findings() -> None:
    assert findings(kubeflow(roles={"Master": (1, pod(8)), "Worker": (3, pod(8))}), GPUS) == []


def test_elastic_pytorch_counts_max_replicas() -> None:
    job = kubeflow(
        roles={"Master": (1, pod(8)), "Worker": (1, pod(8))}, elasticPolicy={"minReplicas": 1, "maxReplicas": 4}
    )
    (f,) = findings(job, GPUS)
    assert f.measure == 40
    role = cluster("roles", {"limits": {"maxReplicasPerRole": 3}})
    (f,) = findings(job, role)
    assert f.path == "spec.elasticPolicy.maxReplicas" and f.value == 4


def test_volcano_counts_replicas_not_min_available() -> None:
    job = volcano([{"name": "w", "replicas": 5, "minAvailable": 1, "template": pod(8)}])
    (f,) = findings(job, GPUS)
    assert f.measure == 40


def test_replicas_per_role_and_per_job() -> None:
    job = kubedl(replicas=5)
    assert rules(findings(job, cluster("r", {"limits": {"maxReplicasPerRole": 4}}))) == ["policy/max-replicas-per-role"]
    (f,) = findings(job, cluster("r", {"limits": {"maxReplicasPerJob": 4}}))
    assert f.rule == "policy/max-replicas-per-job" and f.path == "spec.tfReplicaSpecs"
    (f,) = findings(job, cluster("r", {"limits": {"maxReplicasPerRole": 4}}))
    assert f.path == "spec.tfReplicaSpecs[Worker].replicas"


def test_list_families_paths() -> None:
    (f,) = findings(mxjob(replicas=3), cluster("r", {"limits": {"maxReplicasPerRole": 2}}))
    assert f.path == "spec.replicaSpecs[0].replicas"
    (f,) = findings(dijob(), cluster("r", {"limits": {"maxReplicasPerJob": 0}}))
    assert f.path == "spec.tasks"


def test_a_dra_claim_no_view_shows_violates_each_gpu_limit() -> None:
    """Without a view of the claim templates (offline without --cluster-objects) the count cannot be
    made: each applying GPU cap is violated, naming the template (tests/unit/test_policy_dra.py has more)."""
    template = pod(None, resourceClaims=[{"name": "g", "resourceClaimTemplateName": "a100"}])
    job = kubeflow(roles={"Master": (1, template)})
    found = findings(job, GPUS)
    assert {f.rule for f in found} == {"policy/gpu-claim-unknown"} and len(found) == 2
    assert all(f.action == "Deny" for f in found)
    assert found[0].path == "spec.pytorchReplicaSpecs[Master].template.spec.resourceClaims[0].resourceClaimTemplateName"
    assert "ResourceClaimTemplate ns/a100 is not known here" in found[0].message
    assert findings(job, cluster("none", {})) == []


def test_warn_policy_gives_a_warning_and_deny_policy_a_denial() -> None:
    job = kubeflow(roles={"Master": (1, pod(8)), "Worker": (2, pod(8))})  # 24 GPUs
    warn = cluster("soft", {"enforcementAction": "Warn", "limits": {"maxGPUsPerJob": 16}})
    found = findings(job, GPUS, warn)
    assert [(f.rule, f.action) for f in found] == [("policy/max-gpus-per-job", "Warn")]
    job = kubeflow(roles={"Master": (1, pod(8)), "Worker": (4, pod(8))})  # 40 GPUs
    assert sorted(f.action for f in findings(job, GPUS, warn)) == ["Deny", "Warn"]


# --- TTL / deadline --------------------------------------------------------------------------------


REQUIRE_TTL = cluster("ttl", {"require": {"ttlSecondsAfterFinished": True, "activeDeadlineSeconds": True}})


def test_required_ttl_and_deadline_kubeflow() -> None:
    found = findings(kubeflow(), REQUIRE_TTL)
    assert [(f.path, f.type) for f in found] == [
        ("spec.runPolicy.ttlSecondsAfterFinished", "Required value"),
        ("spec.runPolicy.activeDeadlineSeconds", "Required value"),
    ]
    assert findings(kubeflow(runPolicy={"ttlSecondsAfterFinished": 1, "activeDeadlineSeconds": 2}), REQUIRE_TTL) == []


def test_max_ttl_and_deadline_kubedl_inline_and_mpijob_run_policy() -> None:
    caps = cluster("caps", {"limits": {"maxTTLSecondsAfterFinished": 100, "maxActiveDeadlineSeconds": 10}})
    found = findings(kubedl(ttlSecondsAfterFinished=101, activeDeadlineSeconds=11), caps)
    assert [f.path for f in found] == ["spec.ttlSecondsAfterFinished", "spec.activeDeadlineSeconds"]
    job = kubedl("MPIJob", ttlSecondsAfterFinished=1, runPolicy={"ttlSecondsAfterFinished": 500})
    (f,) = findings(job, caps)
    assert f.path == "spec.runPolicy.ttlSecondsAfterFinished" and f.value == 500


@pytest.mark.parametrize("job", [mxjob(), t9k(), dijob()], ids=["MxJob", "GenericJob", "DIJob"])
def test_ttl_not_applicable_is_a_warning(job: dict) -> None:
    found = findings(job, REQUIRE_TTL, cluster("caps", {"limits": {"maxTTLSecondsAfterFinished": 5}}))
    assert {f.rule for f in found} == {"policy/not-applicable"}
    assert {f.action for f in found} == {"Warn"}
    assert len(found) == 3
    assert "has no ttlSecondsAfterFinished" in found[0].message


def test_volcano_has_ttl_but_no_deadline() -> None:
    found = findings(volcano(ttlSecondsAfterFinished=5), REQUIRE_TTL)
    assert [(f.rule, f.action) for f in found] == [("policy/not-applicable", "Warn")]


def test_not_applicable_of_an_audit_policy_stays_audit() -> None:
    audit = cluster("a", {"enforcementAction": "Audit", "require": {"ttlSecondsAfterFinished": True}})
    assert [f.action for f in findings(mxjob(), audit)] == ["Audit"]


# --- allow-lists -----------------------------------------------------------------------------------


def test_queue_allow_list_per_family() -> None:
    queues = cluster("q", {"require": {"queues": ["team-a"]}})
    (f,) = findings(volcano(queue="default"), queues)
    assert f.path == "spec.queue" and f.type == "Unsupported value" and f.value == "default"
    assert (
        f.text() == 'spec.queue: Unsupported value: "default": supported values: "team-a" (ClusterTrainingJobPolicy q)'
    )
    (f,) = findings(kubeflow(), queues)
    assert f.path == "spec.runPolicy.schedulingPolicy.queue" and f.type == "Required value"
    assert findings(kubedl(schedulingPolicy={"queue": "team-a"}), queues) == []
    assert findings(t9k(scheduler={"t9kScheduler": {"queue": "team-a"}}), queues) == []
    assert rules(findings(mxjob(), queues)) == ["policy/not-applicable"]


def test_scheduler_allow_list_on_templates_counts_unset_as_default_scheduler() -> None:
    schedulers = cluster("s", {"require": {"schedulerNames": ["volcano"]}})
    (f,) = findings(kubedl(), schedulers)
    assert f.path == "spec.tfReplicaSpecs[Worker].template.spec.schedulerName" and f.value == "default-scheduler"
    assert findings(kubedl(template=pod(1, schedulerName="volcano")), schedulers) == []
    assert findings(volcano(schedulerName="volcano"), schedulers) == []


def test_priority_class_allow_list() -> None:
    classes = cluster("p", {"require": {"priorityClassNames": ["low", "high"]}})
    (f,) = findings(kubeflow(runPolicy={"schedulingPolicy": {"priorityClass": "urgent"}}), classes)
    assert f.path == "spec.runPolicy.schedulingPolicy.priorityClass"
    assert findings(volcano(priorityClassName="low"), classes) == []
    (f,) = findings(dijob(), classes)
    assert f.path == "spec.tasks[0].template.spec.priorityClassName"


def test_both_policies_of_an_intersection_are_checked_and_conflict_names_them() -> None:
    a = cluster("a", {"require": {"queues": ["q1"]}})
    b = namespaced("b", "ns", {"require": {"queues": ["q2"]}})
    found = findings(volcano(queue="q1"), a, b)
    assert sorted(rules(found)) == ["policy/allowed-queues", "policy/conflict"]
    conflict = next(f for f in found if f.rule == "policy/conflict")
    assert "ClusterTrainingJobPolicy a" in conflict.message and "TrainingJobPolicy ns/b" in conflict.message
    assert conflict.action == "Deny"


# --- labels, registries, forbid ----------------------------------------------------------------------


def test_required_labels() -> None:
    policy = cluster("l", {"require": {"labels": [{"key": "team"}, {"key": "cost-center", "values": ["1", "2"]}]}})
    job = kubeflow()
    found = findings(job, policy)
    assert [(f.path, f.type) for f in found] == [
        ("metadata.labels[team]", "Required value"),
        ("metadata.labels[cost-center]", "Required value"),
    ]
    job["metadata"]["labels"] = {"team": "x", "cost-center": "3"}
    (f,) = findings(job, policy)
    assert f.type == "Unsupported value" and f.value == "3"
    job["metadata"]["labels"]["cost-center"] = "2"
    assert findings(job, policy) == []


def test_image_registries() -> None:
    policy = cluster("r", {"require": {"imageRegistries": ["registry.example.com/ml/", "docker.io/library/"]}})
    assert findings(kubeflow(roles={"Master": (1, pod(image="python:3.11"))}), policy) == []
    job = kubeflow(roles={"Master": (1, pod(image="pytorch/pytorch:2"))})
    (f,) = findings(job, policy)
    assert f.path == "spec.pytorchReplicaSpecs[Master].template.spec.containers[0].image"
    assert "docker.io/pytorch/" in f.message and f.rule == "policy/image-registries"
    template = pod()
    template["spec"]["initContainers"] = [{"name": "i", "image": "quay.io/x/y"}]
    (f,) = findings(volcano([{"name": "w", "replicas": 1, "template": template}]), policy)
    assert f.path == "spec.tasks[0].template.spec.initContainers[0].image"


@pytest.mark.parametrize(
    ("item", "template", "path"),
    [
        ("hostNetwork", pod(hostNetwork=True), "template.spec.hostNetwork"),
        ("hostPID", pod(hostPID=True), "template.spec.hostPID"),
        ("hostIPC", pod(hostIPC=True), "template.spec.hostIPC"),
        ("hostPath", pod(volumes=[{"name": "v", "hostPath": {"path": "/"}}]), "template.spec.volumes[0].hostPath"),
        (
            "privileged",
            {"spec": {"containers": [{"name": "c", "image": "x", "securityContext": {"privileged": True}}]}},
            "template.spec.containers[0].securityContext.privileged",
        ),
    ],
)
def test_forbid(item: str, template: dict, path: str) -> None:
    policy = cluster("f", {"require": {"forbid": [item]}})
    (f,) = findings(kubedl(template=template), policy)
    assert f.path == f"spec.tfReplicaSpecs[Worker].{path}" and f.type == "Forbidden"
    assert findings(kubedl(), policy) == []


def test_forbid_host_path_in_dijob_volumes() -> None:
    policy = cluster("f", {"require": {"forbid": ["hostPath"]}})
    (f,) = findings(dijob(volumes=[{"name": "v", "hostPath": {"path": "/"}}]), policy)
    assert f.path == "spec.volumes[0].hostPath"


# --- existingViolations on UPDATE ---------------------------------------------------------------------


def big_job(workers: int) -> dict:
    return kubeflow(roles={"Master": (1, pod(8)), "Worker": (workers, pod(8))})


def test_existing_violation_allowed_when_not_worse() -> None:
    old = big_job(7)  # 64 GPUs, over the 32 cap
    new = copy.deepcopy(old)
    new["metadata"]["finalizers"] = ["example.com/x"]
    assert findings(new, GPUS) != []  # on CREATE it is denied
    assert findings(new, GPUS, old=old) == []  # a controller's update passes
    assert findings(big_job(5), GPUS, old=old) == []  # shrinking passes
    (f,) = findings(big_job(8), GPUS, old=old)  # growing does not
    assert f.measure == 72


def test_existing_violations_deny_keeps_them() -> None:
    strict = cluster("strict", {"existingViolations": "Deny", "limits": {"maxGPUsPerJob": 32}})
    old = big_job(7)
    assert rules(findings(copy.deepcopy(old), strict, old=old)) == ["policy/max-gpus-per-job"]


def test_existing_image_allowed_but_a_new_bad_image_is_not() -> None:
    policy = cluster("r", {"require": {"imageRegistries": ["ghcr.io/org/"]}})
    old = kubedl(template=pod(image="docker.io/evil/a:1"))
    assert findings(copy.deepcopy(old), policy, old=old) == []
    new = kubedl(template=pod(image="docker.io/evil/b:1"))
    assert rules(findings(new, policy, old=old)) == ["policy/image-registries"]


def test_new_violation_on_update_is_reported() -> None:
    policy = cluster("f", {"require": {"forbid": ["hostNetwork"]}})
    old = kubedl()
    assert rules(findings(kubedl(template=pod(hostNetwork=True)), policy, old=old)) == ["policy/forbid-hostnetwork"]


# --- defaults -------------------------------------------------------------------------------------


ALL_DEFAULTS = cluster(
    "d",
    {
        "defaults": {
            "queue": "team-a",
            "priorityClassName": "low",
            "schedulerName": "volcano",
            "ttlSecondsAfterFinished": 3600,
            "activeDeadlineSeconds": 7200,
            "labels": {"team": "a"},
            "kueueQueueName": "lq-a",
        }
    },
)


def test_defaults_kubeflow() -> None:
    ops = dict((tuple(p), v) for p, v in defaults(kubeflow(), ALL_DEFAULTS))
    assert ops == {
        ("spec", "runPolicy", "schedulingPolicy", "queue"): "team-a",
        ("spec", "runPolicy", "schedulingPolicy", "priorityClass"): "low",
        ("spec", "pytorchReplicaSpecs", "Master", "template", "spec", "schedulerName"): "volcano",
        ("spec", "pytorchReplicaSpecs", "Worker", "template", "spec", "schedulerName"): "volcano",
        ("spec", "runPolicy", "ttlSecondsAfterFinished"): 3600,
        ("spec", "runPolicy", "activeDeadlineSeconds"): 7200,
        ("metadata", "labels", "team"): "a",
        ("metadata", "labels", "kueue.x-k8s.io/queue-name"): "lq-a",
    }
    stored = apply_defaults(kubeflow(), defaults(kubeflow(), ALL_DEFAULTS))
    assert stored["spec"]["runPolicy"]["schedulingPolicy"] == {"queue": "team-a", "priorityClass": "low"}


def test_defaults_kubedl_inline_and_no_kueue_label() -> None:
    ops = dict((tuple(p), v) for p, v in defaults(kubedl(), ALL_DEFAULTS))
    assert ops[("spec", "schedulingPolicy", "queue")] == "team-a"
    assert ops[("spec", "schedulingPolicy", "priorityClassName")] == "low"
    assert ops[("spec", "ttlSecondsAfterFinished")] == 3600
    assert ("metadata", "labels", "kueue.x-k8s.io/queue-name") not in ops


def test_defaults_only_where_unset() -> None:
    job = kubeflow(runPolicy={"ttlSecondsAfterFinished": 5, "schedulingPolicy": {"queue": "mine"}})
    job["metadata"]["labels"] = {"team": "b", "kueue.x-k8s.io/queue-name": "own"}
    ops = dict((tuple(p), v) for p, v in defaults(job, ALL_DEFAULTS))
    assert ("spec", "runPolicy", "ttlSecondsAfterFinished") not in ops
    assert ("spec", "runPolicy", "schedulingPolicy", "queue") not in ops
    assert ("metadata", "labels", "team") not in ops
    assert ("metadata", "labels", "kueue.x-k8s.io/queue-name") not in ops


@pytest.mark.parametrize("job", [mxjob(), dijob()], ids=["MxJob", "DIJob"])
def test_defaults_skip_fields_the_kind_lacks(job: dict) -> None:
    paths = {tuple(p) for p, _ in defaults(job, ALL_DEFAULTS)}
    assert not any("queue" in p or "ttlSecondsAfterFinished" in p for p in paths)
    assert (
        "spec",
        "replicaSpecs" if job["kind"] == "MxJob" else "tasks",
        0,
        "template",
        "spec",
        "priorityClassName",
    ) in paths


@pytest.mark.parametrize(
    "spec", [{}, {"scheduler": None}, {"scheduler": {}}, {"scheduler": {"t9kScheduler": {}}}], ids=str
)
def test_t9k_queue_default_is_written_whether_or_not_the_job_names_the_t9k_scheduler(spec: dict) -> None:
    """A queue lives in spec.scheduler.t9kScheduler, created when missing (docs/policy.md): a GenericJob
    that names no scheduler gets the default and goes to T9k's scheduler with it."""
    ops = defaults(t9k(**spec), ALL_DEFAULTS)
    assert (["spec", "scheduler", "t9kScheduler", "queue"], "team-a") in ops
    queue_only = defaults(t9k(**spec), cluster("d", {"defaults": {"queue": "team-a"}}))
    assert apply_defaults(t9k(**spec), queue_only)["spec"]["scheduler"]["t9kScheduler"]["queue"] == "team-a"


def test_t9k_queue_default_keeps_the_authors_queue_and_what_is_no_object() -> None:
    assert not any("queue" in p for p, _ in defaults(t9k(scheduler={"t9kScheduler": {"queue": "b"}}), ALL_DEFAULTS))
    assert not any("queue" in p for p, _ in defaults(t9k(scheduler="t9k"), ALL_DEFAULTS))


def test_volcano_schema_default_queue_counts_as_unset() -> None:
    # Volcano's CRD schema sets queue: default before admission (admission-only overlay)...
    ops = defaults(volcano(queue="default"), ALL_DEFAULTS)
    assert (["spec", "queue"], "team-a") in ops
    # ...jobgate's CRD leaves it unset: the same result.
    assert (["spec", "queue"], "team-a") in defaults(volcano(), ALL_DEFAULTS)
    # Any other queue is the author's.
    assert not any(p == ["spec", "queue"] for p, _ in defaults(volcano(queue="research"), ALL_DEFAULTS))
    # Job-level fields of Volcano: scheduler and priority class at spec, no deadline.
    paths = {tuple(p) for p, _ in defaults(volcano(), ALL_DEFAULTS)}
    assert ("spec", "schedulerName") in paths and ("spec", "priorityClassName") in paths
    assert ("spec", "ttlSecondsAfterFinished") in paths and not any("activeDeadlineSeconds" in p for p in paths)


def test_namespaced_default_wins_in_the_written_value() -> None:
    ops = defaults(volcano(), ALL_DEFAULTS, namespaced("n", "ns", {"defaults": {"queue": "ns-q"}}))
    assert (["spec", "queue"], "ns-q") in ops


def test_conflicting_defaults_write_nothing() -> None:
    a = cluster("a", {"defaults": {"queue": "qa"}})
    b = cluster("b", {"defaults": {"queue": "qb"}})
    assert defaults(volcano(), a, b) == []


def test_kubedl_mpijob_defaults_go_to_run_policy_when_present() -> None:
    ops = defaults(kubedl("MPIJob", runPolicy={}), ALL_DEFAULTS)
    assert (["spec", "runPolicy", "ttlSecondsAfterFinished"], 3600) in ops


def test_unknown_kind_and_wrong_family_give_nothing() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "spec": {}}
    eff = effective_policy([GPUS], "ns", {}, job)
    assert policy_findings(job, None, "kubeflow", eff) == []
    assert policy_defaults(job, "kubeflow", eff) == []
    assert policy_findings(kubeflow(), None, "kubedl", eff) == []
