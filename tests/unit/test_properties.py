"""Properties that must hold for any input: no exception, idempotence, patch == defaulting."""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobgate.engine.jsonpatch import apply_patch
from jobgate.review import kind_of, review_job
from jobgate.webhook.admission import Webhook, answer_review, parse_review
from testkit.builders import KUBEDL, MLKUBE, REPLICA_FIELDS, VOLCANO, container, replica

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
json_like = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=25,
)
field_names = st.sampled_from(
    [
        "replicas",
        "template",
        "restartPolicy",
        "spec",
        "containers",
        "name",
        "image",
        "ports",
        "resources",
        "requests",
        "limits",
        "env",
        "volumeMounts",
        "volumes",
        "mxReplicaType",
        "PsRootPort",
        "schedulingPolicy",
        "minAvailable",
        "queue",
        "cleanPodPolicy",
        "Worker",
        "worker",
        "Master",
        "PS",
        "Launcher",
        "tensorflow",
        # GenericJob and DIJob fields
        "type",
        "successRules",
        "failureRules",
        "runMode",
        "debug",
        "pause",
        "enabled",
        "resumeSpecs",
        "replicaSpecs",
        "command",
        "service",
        "port",
        "scheduler",
        "t9kScheduler",
        "priority",
        "policy",
        "limit",
        "cleanUpPolicy",
        "tasks",
        "backoffLimit",
        "preemptible",
        "learner",
        "collector",
        "none",
        # Volcano Job fields
        "policies",
        "event",
        "events",
        "exitCode",
        "action",
        "plugins",
        "mpi",
        "maxRetry",
        "partitionPolicy",
        "totalPartitions",
        "partitionSize",
        "minPartitions",
        "dependsOn",
        "hostNetwork",
        "dnsPolicy",
        "topologyPolicy",
        "networkTopology",
        "highestTierAllowed",
        "highestTierName",
        "mountPath",
        "volumeClaim",
        "volumeClaimName",
    ]
)
# Objects shaped like jobs, with wrong types and nulls anywhere: the realistic half-written input.
job_like = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(field_names, children, max_size=5),
    max_leaves=40,
)


def kubedl_documents():
    def build(kind, replicas, extra):
        field, _ = REPLICA_FIELDS[kind]
        return {"apiVersion": KUBEDL, "kind": kind, "metadata": {"name": "p"}, "spec": {field: replicas, **extra}}

    return st.builds(
        build,
        st.sampled_from(sorted(REPLICA_FIELDS)),
        st.dictionaries(field_names, job_like, max_size=3) | job_like,
        st.dictionaries(field_names, job_like, max_size=3),
    )


def mx_documents():
    def build(mode, specs):
        return {
            "apiVersion": MLKUBE,
            "kind": "MxJob",
            "metadata": {"name": "p"},
            "spec": {"jobMode": mode, "replicaSpecs": specs},
        }

    return st.builds(build, st.sampled_from(["local", "dist", None, 3]), st.lists(job_like, max_size=3) | job_like)


T9K = "batch.tensorstack.dev/v1beta1"
DIENGINE = "diengine.opendilab.org/v2alpha1"


def generic_job_documents():
    def build(specs, extra):
        return {
            "apiVersion": T9K,
            "kind": "GenericJob",
            "metadata": {"name": "g"},
            "spec": {**extra, "replicaSpecs": specs},
        }

    return st.builds(
        build, st.lists(job_like, max_size=3) | job_like, st.dictionaries(field_names, job_like, max_size=4)
    )


def dijob_documents():
    def build(tasks, extra):
        return {"apiVersion": DIENGINE, "kind": "DIJob", "metadata": {"name": "d"}, "spec": {**extra, "tasks": tasks}}

    return st.builds(
        build, st.lists(job_like, max_size=3) | job_like, st.dictionaries(field_names, job_like, max_size=4)
    )


def valid_generic_jobs():
    policies = st.none() | st.fixed_dictionaries(
        {}, optional={"policy": st.sampled_from(["Always", "OnFailure", "Never"]), "limit": st.integers(0, 5)}
    )
    replica_specs = st.lists(
        st.builds(
            lambda t, n, policy: {
                "type": t,
                "template": {"spec": {"containers": [container("main")]}},
                **({"replicas": n} if n is not None else {}),
                **({"restartPolicy": policy} if policy is not None else {}),
            },
            st.sampled_from(["master", "worker", "ps", "chief"]),
            st.none() | st.integers(0, 4),
            policies,
        ),
        min_size=1,
        max_size=4,
        unique_by=lambda r: r["type"],
    )
    return st.builds(
        lambda r, cleanup: {
            "apiVersion": T9K,
            "kind": "GenericJob",
            "metadata": {"name": "g"},
            "spec": {"replicaSpecs": r, **({"cleanUpPolicy": cleanup} if cleanup else {})},
        },
        replica_specs,
        st.none() | st.sampled_from(["None", "Unfinished", "All"]),
    )


def valid_dijobs():
    def build(types, untyped, replicas):
        tasks = [{"type": t} for t in types] + [{"name": f"extra-{i}"} for i in range(untyped)]
        for index, task in enumerate(tasks):
            task["template"] = {"spec": {"containers": [container("di-container")]}}
            if replicas[index % len(replicas)] is not None:
                task["replicas"] = replicas[index % len(replicas)]
        return {"apiVersion": DIENGINE, "kind": "DIJob", "metadata": {"name": "d"}, "spec": {"tasks": tasks}}

    return st.builds(
        build,
        st.lists(st.sampled_from(["learner", "collector", "evaluator"]), unique=True, max_size=3),
        st.integers(0, 2),
        st.lists(st.none() | st.integers(1, 4), min_size=1, max_size=3),
    ).filter(lambda obj: obj["spec"]["tasks"])


def volcano_documents():
    """Volcano Jobs with half-written tasks, plugins, policies and volumes, plus unknown fields."""

    def build(tasks, plugins, policies, volumes, extra):
        spec = {"tasks": tasks, "plugins": plugins, "policies": policies, "volumes": volumes, **extra}
        return {"apiVersion": VOLCANO, "kind": "Job", "metadata": {"name": "v", "namespace": "n"}, "spec": spec}

    task = st.dictionaries(field_names, job_like, max_size=6) | st.builds(
        lambda n, name, extra: {
            "name": name,
            "replicas": n,
            "template": {"spec": {"containers": [container()]}},
            **extra,
        },
        st.none() | st.integers(-1, 4),
        st.none() | st.sampled_from(["master", "worker", "ps", "", "Bad_Name"]),
        st.dictionaries(field_names, job_like, max_size=2),
    )
    return st.builds(
        build,
        st.lists(task, max_size=3) | job_like,
        st.none() | st.dictionaries(st.sampled_from(["mpi", "svc", "ssh", "tensorflow", "env", "x"]), job_like),
        st.none() | st.lists(st.dictionaries(field_names, job_like, max_size=4), max_size=3),
        st.none() | job_like,
        st.dictionaries(field_names, job_like, max_size=3),
    )


def valid_tfjobs():
    roles = st.dictionaries(
        st.sampled_from(["PS", "ps", "Worker", "WORKER", "Evaluator", "Chief"]),
        st.builds(
            lambda n, policy: replica(container(), replicas=n, **({"restartPolicy": policy} if policy else {})),
            st.none() | st.integers(0, 5),
            st.none() | st.sampled_from(["Always", "OnFailure", "Never", "ExitCode"]),
        ),
        min_size=1,
        max_size=4,
    )
    return st.builds(
        lambda r: {"apiVersion": KUBEDL, "kind": "TFJob", "metadata": {"name": "t"}, "spec": {"tfReplicaSpecs": r}},
        roles,
    )


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check_invariants(obj):
    kind = kind_of(obj)
    snapshot = copy.deepcopy(obj)
    verdict = review_job(kind, obj)
    assert obj == snapshot
    assert apply_patch(obj, verdict.patch) == verdict.defaulted
    again = review_job(kind, verdict.defaulted)
    assert again.patch == []
    assert again.defaulted == verdict.defaulted
    assert [str(e) for e in again.errors] == [str(e) for e in verdict.errors]
    for error in verdict.errors:
        assert str(error)


@SETTINGS
@given(kubedl_documents())
def test_kubedl_never_raises_and_patch_reproduces_defaults(obj):
    _check_invariants(obj)


@SETTINGS
@given(mx_documents())
def test_mxjob_never_raises_and_patch_reproduces_defaults(obj):
    _check_invariants(obj)


@SETTINGS
@given(volcano_documents())
def test_volcano_job_never_raises_and_patch_reproduces_defaults(obj):
    _check_invariants(obj)


@SETTINGS
@given(volcano_documents(), st.text(max_size=8), job_like)
def test_volcano_unknown_fields_survive_defaulting(obj, name, value):
    obj["spec"][f"x-{name}"] = value
    verdict = review_job(kind_of(obj), obj)
    assert verdict.defaulted["spec"][f"x-{name}"] == value


@SETTINGS
@given(volcano_documents(), volcano_documents())
def test_volcano_update_never_raises(obj, old):
    kind = kind_of(obj)
    verdict = review_job(kind, obj, old)
    for error in verdict.errors:
        assert str(error)


@SETTINGS
@given(valid_tfjobs())
def test_patch_applied_to_raw_equals_defaulted(obj):
    _check_invariants(obj)


@SETTINGS
@given(generic_job_documents())
def test_generic_job_never_raises_and_patch_reproduces_defaults(obj):
    _check_invariants(obj)


@SETTINGS
@given(dijob_documents())
def test_dijob_never_raises_and_patch_reproduces_defaults(obj):
    _check_invariants(obj)


@SETTINGS
@given(st.one_of(valid_generic_jobs(), valid_dijobs()))
def test_well_formed_generic_jobs_and_dijobs_are_admitted_with_their_defaults(obj):
    _check_invariants(obj)
    assert review_job(kind_of(obj), obj).errors == []


@SETTINGS
@given(
    st.sampled_from([KUBEDL, MLKUBE, T9K, DIENGINE, VOLCANO]),
    st.sampled_from(["TFJob", "MxJob", "MPIJob", "GenericJob", "DIJob", "Job"]),
    json_like,
)
def test_arbitrary_spec_and_metadata(api_version, kind_name, value):
    obj = {"apiVersion": api_version, "kind": kind_name, "metadata": value, "spec": copy.deepcopy(value)}
    if kind_of(obj) is not None:
        _check_invariants(obj)


@SETTINGS
@given(json_like, st.sampled_from(list(Webhook)))
def test_reviews_of_arbitrary_objects_always_answer(obj, webhook):
    import json

    body = json.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "u",
                "kind": {"group": "training.kubedl.io", "version": "v1alpha1", "kind": "TFJob"},
                "operation": "CREATE",
                "object": {"apiVersion": KUBEDL, "kind": "TFJob", "spec": obj} if isinstance(obj, dict) else obj,
            },
        }
    )
    try:
        review = parse_review(body)
    except ValueError:
        return
    try:
        answer = answer_review(review, webhook)
    except ValueError:
        assert not isinstance(review.request.object, dict)
        return
    assert answer["response"]["uid"] == "u"
    assert "status" not in answer["response"] or answer["response"]["status"]["code"] == 422
