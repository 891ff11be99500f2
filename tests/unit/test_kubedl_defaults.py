"""Defaults of the KubeDL family, value by value."""

from __future__ import annotations

import copy

import pytest

from jobgate.engine.jsonpatch import apply_patch
from testkit.builders import REPLICA_FIELDS, container, kubedl_job, replica, review, tfjob

FALLBACK = "FallbackToLogsOnError"


def defaulted(obj):
    return review(obj).defaulted


def test_tfjob_defaults_every_replica_type():
    obj = tfjob({role: replica(container()) for role in ("PS", "Worker", "Chief", "Evaluator")})
    spec = defaulted(obj)["spec"]
    assert spec["cleanPodPolicy"] == "Running"
    assert spec["successPolicy"] == ""
    for role in ("PS", "Worker", "Chief", "Evaluator"):
        replica_spec = spec["tfReplicaSpecs"][role]
        assert replica_spec["replicas"] == 1
        assert replica_spec["restartPolicy"] == "ExitCode"
        (tensorflow,) = replica_spec["template"]["spec"]["containers"]
        assert tensorflow["ports"] == [{"name": "tfjob-port", "containerPort": 2222}]
        assert tensorflow["terminationMessagePolicy"] == FALLBACK


def test_tfjob_master_defaults():
    spec = defaulted(tfjob({"Master": replica(container())}))["spec"]["tfReplicaSpecs"]["Master"]
    assert (spec["replicas"], spec["restartPolicy"]) == (1, "ExitCode")


def test_given_values_are_kept():
    obj = tfjob(
        {"Worker": replica(container(terminationMessagePolicy="File"), replicas=3, restartPolicy="OnFailure")},
        cleanPodPolicy="All",
        successPolicy="AllWorkers",
    )
    spec = defaulted(obj)["spec"]
    assert spec["successPolicy"] == "AllWorkers"
    worker = spec["tfReplicaSpecs"]["Worker"]
    assert (worker["replicas"], worker["restartPolicy"], spec["cleanPodPolicy"]) == (3, "OnFailure", "All")
    assert worker["template"]["spec"]["containers"][0]["terminationMessagePolicy"] == "File"


def test_explicit_zero_replicas_is_kept():
    spec = defaulted(tfjob({"Worker": replica(container(), replicas=0)}))["spec"]
    assert spec["tfReplicaSpecs"]["Worker"]["replicas"] == 0


@pytest.mark.parametrize("key", ["worker", "WORKER", "wOrKeR"])
def test_replica_types_are_normalised(key):
    spec = defaulted(tfjob({key: replica(container()), "ps": replica(container())}))["spec"]["tfReplicaSpecs"]
    assert set(spec) == {"Worker", "PS"}


def test_normalisation_never_overwrites_an_existing_type():
    obj = tfjob({"Worker": replica(container(), replicas=2), "worker": replica(container(), replicas=5)})
    spec = defaulted(obj)["spec"]["tfReplicaSpecs"]
    assert spec["Worker"]["replicas"] == 2
    assert spec["worker"]["template"]


def test_two_other_spellings_of_one_type_are_both_kept():
    """Which of two would be renamed would depend on the order of the keys: neither is."""
    obj = tfjob({"worker": replica(container()), "WORKER": replica(container()), "ps": replica(container())})
    assert set(defaulted(obj)["spec"]["tfReplicaSpecs"]) == {"worker", "WORKER", "PS"}


def test_port_goes_to_the_framework_container_not_the_first():
    obj = tfjob({"Worker": replica(container("sidecar"), container("tensorflow"))})
    sidecar, tensorflow = defaulted(obj)["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    assert "ports" not in sidecar
    assert tensorflow["ports"] == [{"name": "tfjob-port", "containerPort": 2222}]
    assert sidecar["terminationMessagePolicy"] == FALLBACK


def test_port_goes_to_the_first_container_without_a_framework_container():
    obj = tfjob({"Worker": replica(container("trainer"))})
    (trainer,) = defaulted(obj)["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    assert trainer["ports"] == [{"name": "tfjob-port", "containerPort": 2222}]


def test_existing_port_of_that_name_keeps_its_number():
    port = {"name": "tfjob-port", "containerPort": 3333}
    obj = tfjob({"Worker": replica(container(ports=[port]))})
    (tensorflow,) = defaulted(obj)["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    assert tensorflow["ports"] == [port]


def test_port_is_appended_after_other_ports():
    obj = tfjob({"Worker": replica(container(ports=[{"name": "metrics", "containerPort": 9090}]))})
    (tensorflow,) = defaulted(obj)["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    assert [p["name"] for p in tensorflow["ports"]] == ["metrics", "tfjob-port"]


def test_pytorchjob_defaults():
    obj = kubedl_job(
        "PyTorchJob", {"master": replica(container("pytorch")), "Worker": replica(container("pytorch"), replicas=2)}
    )
    spec = defaulted(obj)["spec"]
    master, worker = spec["pytorchReplicaSpecs"]["Master"], spec["pytorchReplicaSpecs"]["Worker"]
    assert (master["replicas"], master["restartPolicy"]) == (1, "ExitCode")
    assert (worker["replicas"], worker["restartPolicy"]) == (2, "OnFailure")
    assert master["template"]["spec"]["containers"][0]["ports"] == [{"name": "pytorchjob-port", "containerPort": 23456}]
    # KubeDL puts the port on the Master only.
    assert "ports" not in worker["template"]["spec"]["containers"][0]
    assert worker["template"]["spec"]["containers"][0]["terminationMessagePolicy"] == FALLBACK
    assert spec["cleanPodPolicy"] == "Running"


def test_pytorchjob_master_port_needs_a_pytorch_container():
    obj = kubedl_job("PyTorchJob", {"Master": replica(container("trainer"))})
    (trainer,) = defaulted(obj)["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"]
    assert "ports" not in trainer


def test_xgboostjob_defaults():
    obj = kubedl_job(
        "XGBoostJob", {"Master": replica(container("xgboostjob")), "worker": replica(container("xgboostjob"))}
    )
    spec = defaulted(obj)["spec"]
    assert spec["ttlSecondsAfterFinished"] == 100
    assert spec["cleanPodPolicy"] == "Running"
    for role in ("Master", "Worker"):
        replica_spec = spec["xgbReplicaSpecs"][role]
        assert (replica_spec["replicas"], replica_spec["restartPolicy"]) == (1, "Never")
        ports = replica_spec["template"]["spec"]["containers"][0]["ports"]
        assert ports == [{"name": "xgboostjob-port", "containerPort": 9999}]


def test_xgboostjob_keeps_a_given_ttl():
    obj = kubedl_job("XGBoostJob", ttlSecondsAfterFinished=0)
    assert defaulted(obj)["spec"]["ttlSecondsAfterFinished"] == 0


def test_mpijob_defaults_and_no_normalisation():
    obj = kubedl_job(
        "MPIJob", {"Launcher": replica(container("launcher")), "Worker": replica(container("mpi"), replicas=4)}
    )
    spec = defaulted(obj)["spec"]
    launcher, worker = spec["mpiReplicaSpecs"]["Launcher"], spec["mpiReplicaSpecs"]["Worker"]
    assert (launcher["replicas"], launcher["restartPolicy"]) == (1, "Never")
    assert (worker["replicas"], worker["restartPolicy"]) == (4, "Never")
    port = [{"name": "mpi-port", "containerPort": 2222}]
    assert launcher["template"]["spec"]["containers"][0]["ports"] == port
    assert worker["template"]["spec"]["containers"][0]["ports"] == port
    assert spec["cleanPodPolicy"] == "Running"
    lower = defaulted(kubedl_job("MPIJob", {"launcher": replica(container("mpi"))}))["spec"]["mpiReplicaSpecs"]
    assert list(lower) == ["launcher"]


def test_mpijob_run_policy_block_gets_the_clean_pod_policy():
    obj = kubedl_job("MPIJob", runPolicy={"backoffLimit": 2})
    spec = defaulted(obj)["spec"]
    assert spec["runPolicy"] == {"backoffLimit": 2, "cleanPodPolicy": "Running"}
    assert "cleanPodPolicy" not in spec


def test_xdljob_defaults():
    obj = kubedl_job("XDLJob", {"PS": replica(container("xdl")), "worker": replica(container("xdl"))})
    spec = defaulted(obj)["spec"]
    assert (spec["backoffLimit"], spec["minFinishWorkRate"], spec["cleanPodPolicy"]) == (20, 90, "Running")
    for role in ("PS", "Worker"):
        replica_spec = spec["xdlReplicaSpecs"][role]
        assert (replica_spec["replicas"], replica_spec["restartPolicy"]) == (1, "Never")
        assert replica_spec["template"]["spec"]["containers"][0]["ports"] == [
            {"name": "xdljob-port", "containerPort": 2222}
        ]


def test_xdljob_min_finish_rate_only_when_neither_is_set():
    spec = defaulted(kubedl_job("XDLJob", minFinishWorkNum=3, backoffLimit=1))["spec"]
    assert "minFinishWorkRate" not in spec
    assert spec["backoffLimit"] == 1


def test_marsjob_defaults():
    obj = kubedl_job(
        "MarsJob",
        {
            "Scheduler": replica(container("mars")),
            "WebService": replica(container("mars")),
            "Worker": replica(container("mars")),
        },
    )
    spec = defaulted(obj)["spec"]
    policies = {role: spec["marsReplicaSpecs"][role]["restartPolicy"] for role in spec["marsReplicaSpecs"]}
    assert policies == {"Scheduler": "Never", "WebService": "Always", "Worker": "ExitCode"}
    assert spec["workerMemoryTuningPolicy"] == {"plasmaStore": "/dev/shm", "lockFreeFileIO": True}
    ports = spec["marsReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["ports"]
    assert ports == [{"name": "mars-port", "containerPort": 11111}]
    assert spec["cleanPodPolicy"] == "Running"


def test_marsjob_memory_policy_only_with_workers_and_merged():
    assert "workerMemoryTuningPolicy" not in defaulted(kubedl_job("MarsJob"))["spec"]
    obj = kubedl_job(
        "MarsJob",
        {"Worker": replica(container("mars"))},
        workerMemoryTuningPolicy={"plasmaStore": "/plasma", "spillDirs": ["/spill"]},
    )
    policy = defaulted(obj)["spec"]["workerMemoryTuningPolicy"]
    assert policy == {"plasmaStore": "/plasma", "spillDirs": ["/spill"], "lockFreeFileIO": True}


@pytest.mark.parametrize("kind", sorted(REPLICA_FIELDS))
def test_defaulting_is_idempotent_and_keeps_unknown_fields(kind):
    obj = kubedl_job(kind, name="keep", unknownSpecField={"x": 1})
    obj["metadata"]["annotations"] = {"note": "kept"}
    obj["status"] = {"anything": True}
    first = review(obj)
    assert first.defaulted["spec"]["unknownSpecField"] == {"x": 1}
    assert first.defaulted["metadata"] == obj["metadata"]
    assert first.defaulted["status"] == {"anything": True}
    second = review(first.defaulted)
    assert second.patch == []
    assert second.defaulted == first.defaulted


@pytest.mark.parametrize(
    "replicas",
    [
        {"Worker": None},
        {"Worker": {}},
        {"Worker": {"template": None}},
        {"Worker": {"template": {"spec": {"containers": []}}}},
        {"Worker": {"template": {"spec": {"containers": "tensorflow"}}}},
        {"Worker": {"template": {"spec": {"containers": [None, 3, "x"]}}}},
        {"Worker": {"template": {"spec": {"containers": [{"name": "tensorflow", "ports": "2222"}]}}}},
        {"Worker": {"replicas": "two", "template": []}},
        "not-a-map",
        [],
    ],
)
def test_half_written_input_never_crashes_and_is_reported(replicas):
    verdict = review(tfjob(replicas))
    assert not verdict.allowed


def test_patch_for_a_half_written_replica_leaves_it_untouched():
    obj = tfjob({"Worker": replica(container()), "PS": None})
    verdict = review(obj)
    assert verdict.defaulted["spec"]["tfReplicaSpecs"]["PS"] is None
    assert all(not op["path"].startswith("/spec/tfReplicaSpecs/PS") for op in verdict.patch)


def test_reapplied_lower_case_key_replaces_the_stored_entry_on_update():
    """kubectl apply of a manifest saying `worker` re-adds it beside the stored `Worker`."""
    stored = review(tfjob({"worker": replica(container(), replicas=2)})).defaulted
    assert list(stored["spec"]["tfReplicaSpecs"]) == ["Worker"]
    applied = copy.deepcopy(stored)
    applied["spec"]["tfReplicaSpecs"]["worker"] = replica(container(), replicas=3)
    verdict = review(applied, old=stored)
    assert verdict.errors == []
    replicas = verdict.defaulted["spec"]["tfReplicaSpecs"]
    assert list(replicas) == ["Worker"]
    assert replicas["Worker"]["replicas"] == 3
    assert apply_patch(applied, verdict.patch) == verdict.defaulted
    # Re-applying the unchanged manifest ends in the stored object again.
    unchanged = copy.deepcopy(stored)
    unchanged["spec"]["tfReplicaSpecs"]["worker"] = replica(container(), replicas=2)
    assert review(unchanged, old=stored).defaulted == stored


def test_both_spellings_given_on_purpose_stay_a_duplicate():
    stored = review(tfjob({"Worker": replica(container(), replicas=2)})).defaulted
    edited = copy.deepcopy(stored)
    edited["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 5  # the stored entry was changed too
    edited["spec"]["tfReplicaSpecs"]["worker"] = replica(container())
    assert [e.field for e in review(edited, old=stored).errors] == ["spec.tfReplicaSpecs[worker]"]


def test_stored_entry_sent_again_without_its_defaults_is_stale_once_defaulted():
    """As the apiserver's reinvoked defaults see it: the stored `Worker`, sent again as first written
    (no defaults), beside `worker`, is the stored entry; `worker` takes its place."""
    written = tfjob({"Worker": replica(container(), replicas=2)})
    stored = review(written).defaulted
    sent = copy.deepcopy(written)
    sent["spec"]["tfReplicaSpecs"]["worker"] = replica(container(), replicas=3)
    verdict = review(sent, old=stored)
    assert verdict.errors == []
    assert list(verdict.defaulted["spec"]["tfReplicaSpecs"]) == ["Worker"]
    assert verdict.defaulted["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == 3
    assert apply_patch(sent, verdict.patch) == verdict.defaulted


def test_a_manifest_given_as_the_stored_job_is_read_defaulted():
    """`jobgate review --old manifest.yaml`: the apiserver keeps the job defaulted, so the old one is."""
    written = tfjob({"worker": replica(container(), replicas=2)})
    stored = review(written).defaulted
    applied = copy.deepcopy(stored)
    applied["spec"]["tfReplicaSpecs"]["worker"] = replica(container(), replicas=3)
    assert review(applied, old=written).defaulted == review(applied, old=stored).defaulted


def test_mutate_reads_a_manifest_given_as_the_stored_job_defaulted_too():
    """/mutate's patch (defaulting_patch) is the patch review_job gives: both read the old job as stored."""
    from jobgate.review import defaulting_patch, kind_of

    written = tfjob({"worker": replica(container(), replicas=2)})
    applied = copy.deepcopy(review(written).defaulted)
    applied["spec"]["tfReplicaSpecs"]["worker"] = replica(container(), replicas=3)
    patch = defaulting_patch(kind_of(applied), copy.deepcopy(applied), written)
    assert patch == review(applied, old=written).patch
    assert apply_patch(applied, patch) == review(applied, old=written).defaulted
