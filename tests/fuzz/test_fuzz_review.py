"""The CI slice of the review fuzzer (fixed seeds), and each finding of longer runs as a regression test."""

from __future__ import annotations

import json

import pytest

from jobgate.webhook.admission import Webhook
from testkit.fuzzing.review_mutator import check, check_both, deep_value, inputs, review_of, seed_reviews

SLICE_SEEDS = [1, 2, 3]
SLICE_SIZE = 300


@pytest.mark.parametrize("seed", SLICE_SEEDS)
def test_fixed_seed_slice(seed):
    outcomes = {check_both(body) for body in inputs(seed, SLICE_SIZE)}
    # The slice must reach the rules (patches and denials), not only the parser's 400s.
    assert ("patched", "denied") in outcomes
    assert ("400", "400") in outcomes


def _tfjob_review() -> dict:
    return next(r for r in seed_reviews() if r["request"]["kind"]["kind"] == "TFJob")


def _first_container(review: dict) -> dict:
    replicas = review["request"]["object"]["spec"]["tfReplicaSpecs"]
    return next(iter(replicas.values()))["template"]["spec"]["containers"][0]


def _body(review: dict) -> bytes:
    return json.dumps(review).encode()


@pytest.mark.parametrize("quantity", ["1e400", "9" * 5000, "9" * 5000 + "Ei", "1e-400"])
def test_regression_huge_quantities_get_a_verdict(quantity):
    # Found by fuzzing: "1e400" overflowed, 5000-digit quantities hit int()'s digit limit (internal errors).
    review = _tfjob_review()
    _first_container(review)["resources"] = {"limits": {"cpu": quantity}}
    assert check(_body(review), Webhook.VALIDATE) in ("allowed", "denied")
    assert check(_body(review), Webhook.MUTATE) in ("allowed", "patched")


def test_regression_float_quantity_past_float_range_after_scaling():
    # 1e300 CPUs as a JSON number: math.ceil(1e300 * 1e9) raised OverflowError.
    review = _tfjob_review()
    _first_container(review)["resources"] = {"limits": {"cpu": 1e300}}
    assert check(_body(review), Webhook.VALIDATE) in ("allowed", "denied")


@pytest.mark.parametrize("place", ["backoffLimit", "env", "spec", "schedulingPolicy"])
@pytest.mark.parametrize("as_list", [True, False])
def test_regression_values_nested_just_below_the_parser_limit(place, as_list):
    # 990-1018 levels: the parser accepts them, Python's default recursion limit did not (internal errors).
    review = _tfjob_review()
    job = review["request"]["object"]
    value = deep_value(1005, as_list)  # plus the ~15 levels above env: just under 1024
    if place == "env":
        _first_container(review)["env"] = value
    elif place == "spec":
        job["spec"] = value
    else:
        job["spec"][place] = value
    assert check(_body(review), Webhook.VALIDATE) == "denied"
    assert check(_body(review), Webhook.MUTATE) in ("allowed", "patched")


def test_nesting_past_the_parser_limit_is_a_400():
    review = review_of({"apiVersion": "training.kubedl.io/v1alpha1", "kind": "TFJob", "spec": deep_value(1100, True)})
    assert check_both(_body(review)) == ("400", "400")


@pytest.mark.parametrize("replicas", [99999999999999999999, 2**63, -(2**63) - 1, 1e300])
@pytest.mark.parametrize("where", ["task", "partition"])
def test_regression_volcano_min_available_defaulted_from_a_count_beyond_int64(replicas, where):
    # Found by fuzzing: minAvailable defaulted from replicas 1e20 was an int beyond int64, which the
    # patch encoder cannot write (internal error on /mutate).
    review = next(r for r in seed_reviews() if r["request"]["kind"]["kind"] == "Job")
    task = review["request"]["object"]["spec"]["tasks"][0]
    task.pop("minAvailable", None)
    if where == "task":
        task["replicas"] = replicas
    else:
        task["partitionPolicy"] = {"minPartitions": replicas, "partitionSize": replicas, "totalPartitions": 1}
    assert check(_body(review), Webhook.MUTATE) in ("allowed", "patched")
    assert check(_body(review), Webhook.VALIDATE) == "denied"


def _genericjob_review() -> dict:
    return next(r for r in seed_reviews() if r["request"]["kind"]["kind"] == "GenericJob")


@pytest.mark.parametrize("replicas", [2**31 - 1, 2**63 - 1, 10**30, 1e300])
@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"])
def test_regression_genericjob_huge_replicas_do_not_expand_into_rules(replicas, operation):
    # Found by fuzzing: the default finish rules list every replica, so "replicas: 2000000000" made
    # /mutate and /validate allocate gigabytes (MemoryError, OverflowError: internal errors).
    review = _genericjob_review()
    job = review["request"]["object"]
    for key in ("successRules", "failureRules"):
        job["spec"].pop(key, None)
    if operation == "UPDATE":
        review["request"]["operation"] = "UPDATE"
        review["request"]["oldObject"] = json.loads(json.dumps(job))
    job["spec"]["replicaSpecs"][0]["replicas"] = replicas
    assert check(_body(review), Webhook.MUTATE) in ("allowed", "patched")
    assert check(_body(review), Webhook.VALIDATE) in ("allowed", "denied")


@pytest.mark.parametrize("field", ["Worker replicas", "minReplicas", "maxReplicas"])
def test_regression_kubeflow_elastic_policy_copies_only_integers(field):
    # Found by fuzzing: a deep list as the Worker's replicas was copied into the elastic policy's
    # defaults, and the patch was too deep for the JSON encoder (internal errors on /mutate).
    review = next(r for r in seed_reviews() if r["request"]["kind"]["group"] == "kubeflow.org"
                  and r["request"]["kind"]["kind"] == "PyTorchJob")  # fmt: skip
    spec = review["request"]["object"]["spec"]
    deep = deep_value(300, True)
    if field == "Worker replicas":
        spec["elasticPolicy"] = {}
        spec["pytorchReplicaSpecs"]["Worker"]["replicas"] = deep
    else:
        spec["elasticPolicy"] = {field: deep}
    assert check(_body(review), Webhook.MUTATE) in ("allowed", "patched")
    assert check(_body(review), Webhook.VALIDATE) == "denied"


def _review_of_kind(kind: str) -> dict:
    return next(r for r in seed_reviews() if r["request"]["kind"]["kind"] == kind)


def _as_update(review: dict) -> dict:
    review["request"]["operation"] = "UPDATE"
    review["request"]["oldObject"] = json.loads(json.dumps(review["request"]["object"]))
    return review


@pytest.mark.parametrize("key", [{}, [], {"a": [1]}])
@pytest.mark.parametrize("place", ["success targets", "failure targets", "mount name", "volume name"])
def test_regression_jobset_names_that_are_not_strings(place, key):
    # Found by fuzzing: an object or list where JobSet expects a replicated job's or a volume's name
    # was looked up in a set (TypeError: unhashable type, internal errors).
    review = _review_of_kind("JobSet")
    spec = review["request"]["object"]["spec"]
    pod = spec["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    if place == "success targets":
        spec["successPolicy"] = {"operator": "All", "targetReplicatedJobs": [key]}
    elif place == "failure targets":
        spec["failurePolicy"] = {"rules": [{"name": "r", "action": "FailJobSet", "targetReplicatedJobs": [key]}]}
    else:
        spec["volumeClaimPolicies"] = [{"templates": [{"metadata": {"name": "data"}, "spec": {}}]}]
        if place == "mount name":
            pod["containers"][0]["volumeMounts"] = [{"name": key, "mountPath": "/data"}]
        else:
            pod["volumes"] = [{"name": key, "emptyDir": {}}]
    assert check(_body(review), Webhook.MUTATE) in ("allowed", "patched")
    assert check(_body(review), Webhook.VALIDATE) == "denied"


@pytest.mark.parametrize("manager", [{}, [], {"a": [1]}])
@pytest.mark.parametrize("side", ["old", "new", "both"])
def test_regression_trainjob_patch_managers_that_are_not_strings(side, manager):
    # Found by fuzzing: runtimePatches are keyed by manager on an update; an object or list as the
    # manager was used as a dictionary key (TypeError: unhashable type, internal errors).
    review = _as_update(_review_of_kind("TrainJob"))
    for which, obj in (("new", review["request"]["object"]), ("old", review["request"]["oldObject"])):
        if side in (which, "both"):
            obj["spec"]["runtimePatches"] = [{"manager": manager}]
    assert check(_body(review), Webhook.MUTATE) in ("allowed", "patched")
    assert check(_body(review), Webhook.VALIDATE) == "denied"


@pytest.mark.parametrize("name", [{}, [], {"a": [1]}])
@pytest.mark.parametrize("side", ["old", "new"])
def test_regression_training_runtime_job_names_that_are_not_strings(side, name):
    # Found by fuzzing: a runtime's replicated jobs are matched by name against the stored runtime;
    # an object or list as a name was used as a dictionary key (internal errors). The template is a
    # JobSetSpec in Trainer's CRDs: a name that is no string is refused, as the apiserver refuses it;
    # a stored one is no reason to refuse a valid update.
    review = _as_update(_review_of_kind("ClusterTrainingRuntime"))
    which = "oldObject" if side == "old" else "object"
    review["request"][which]["spec"]["template"]["spec"]["replicatedJobs"][0]["name"] = name
    assert check(_body(review), Webhook.MUTATE) in ("allowed", "patched")
    assert check(_body(review), Webhook.VALIDATE) == ("denied" if side == "new" else "allowed")
