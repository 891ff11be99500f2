"""Platform policy defaults written by the apiserver alone: ``manifests/policy-maps``
(MutatingAdmissionPolicies with policy.jobgate.io params) beside ``manifests/policy-vaps`` and the
``cel-only`` overlay (CRDs, the families' ValidatingAdmissionPolicies and MutatingAdmissionPolicies),
NO jobgate webhook, on Kubernetes 1.36 (MutatingAdmissionPolicy v1).

The policies pair each default with a requirement it satisfies (``defaults.queue`` with
``require.queues``, default labels with required labels, a default TTL and deadline with
``require.ttlSecondsAfterFinished``/``activeDeadlineSeconds`` and a TTL cap, a default priority class
and scheduler with their allow-lists, the Kueue label). For every valid example of the kinds jobgate
serves, as written (no family default applied: the apiserver's own policies write those) and with
changes no default can fix, a server-side dry-run create is compared with ``review_job`` given the
same policies: the same verdict, and on an admitted job every field a policy default may write holds
the value the webhook writes. Then a job that relies on the defaults is created for real and read
back, and one whose own value breaks a requirement is refused.
"""

from __future__ import annotations

import copy
import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from envtest.cel_differential import Apiserver
from envtest.harness import ControlPlane
from envtest.versions import KUBERNETES_VERSION
from jobgate.engine.context import CREATE, ReviewContext
from jobgate.generate.policy_map import DEFAULT_FIELDS
from jobgate.policy.fieldmap import KUEUE_LABEL, field_locations
from jobgate.policy.kinds import kind_map
from jobgate.review import kind_of, review_job
from tests.e2e.conftest import KUBEFLOW_TEST_CRDS, started
from tests.e2e.test_policy_vap import (
    _cluster,
    _examples,
    _first_group,
    _gpus,
    _install,
    _kubectl_of,
    _namespaced,
)

REPO = Path(__file__).resolve().parents[2]
NAMESPACES = {"pm-research": {"tier": "research"}, "pm-team": {"tier": "prod", "team": "a"}}

POLICIES: list[dict[str, Any]] = [
    _cluster(
        "pm-research",
        {
            "namespaceSelector": {"matchLabels": {"tier": "research"}},
            "defaults": {
                "queue": "research-q",
                "ttlSecondsAfterFinished": 3600,
                "activeDeadlineSeconds": 7200,
                "labels": {"cost-center": "ml", "example.com/tier": "gold"},
                "kueueQueueName": "lq-research",
            },
            "require": {
                "queues": ["research-q", "spare-q"],
                "labels": [{"key": "cost-center"}, {"key": "example.com/tier", "values": ["gold", "silver"]}],
                "ttlSecondsAfterFinished": True,
                "activeDeadlineSeconds": True,
            },
            "limits": {"maxTTLSecondsAfterFinished": 86400, "maxGPUsPerJob": 16},
        },
    ),
    _namespaced(
        "pm-team",
        "pm-team",
        {
            "defaults": {
                "queue": "team-q",
                "priorityClassName": "team-low",
                "schedulerName": "team-sched",
                "labels": {"owner": "team-a"},
            },
            "require": {
                "queues": ["team-q"],
                "priorityClassNames": ["team-low", "team-high"],
                # volcano: Volcano's own MutatingAdmissionPolicy may write its scheduler first (below)
                "schedulerNames": ["team-sched", "volcano"],
                "labels": [{"key": "owner"}],
            },
        },
    ),
]
DEFAULT_LABEL_KEYS = ("cost-center", "example.com/tier", "owner", KUEUE_LABEL)

# Fields the family's own MutatingAdmissionPolicy also defaults: MAPs run in no specified order, so
# the apiserver may keep the family's value where the webhook writes the policy's first
# (docs/policy-enforcement.md). Either value is accepted there.
FAMILY_DEFAULTED = {
    ("batch.volcano.sh", "Job", "schedulerName"): "volcano",
    ("training.kubedl.io", "XGBoostJob", "ttlSecondsAfterFinished"): 100,
}


def _own_queue(job: dict[str, Any]) -> None:
    """The job names a queue outside every allow-list: a default never overwrites it."""
    kmap = kind_map(job)
    assert kmap is not None
    if kmap.queue is not None:
        path = kmap.queue(job)
        node = job
        for step in path[:-1]:
            node = node.setdefault(step, {})
        node[path[-1]] = "rogue-q"


def _own_label(job: dict[str, Any]) -> None:
    job.setdefault("metadata", {}).setdefault("labels", {})["example.com/tier"] = "bronze"


def _own_scheduler(job: dict[str, Any]) -> None:
    _first_group(job)[1]["schedulerName"] = "kube-batch"


MUTATIONS: dict[str, Callable[[dict[str, Any]], None]] = {
    "as-is": lambda job: None,
    "own-queue": _own_queue,
    "own-label": _own_label,
    "own-scheduler": _own_scheduler,
    "gpus-32": _gpus("nvidia.com/gpu", 32),
}


def corpus() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for name, job in _examples():
        for mutation, mutate in MUTATIONS.items():
            mutated = copy.deepcopy(job)
            mutate(mutated)
            out.append((f"{name}/{mutation}", mutated))
    return out


def _as_sent(job: dict[str, Any], namespace: str, name: str = "pm-job") -> dict[str, Any]:
    obj = copy.deepcopy(job)
    obj.setdefault("metadata", {})["namespace"] = namespace
    obj["metadata"]["name"] = name
    obj["metadata"].pop("generateName", None)
    return obj


def _review(job: dict[str, Any], namespace: str, policies: list[dict[str, Any]]) -> Any:
    kind = kind_of(job)
    assert kind is not None
    context = ReviewContext(
        operation=CREATE,
        namespace=namespace,
        namespace_labels={**NAMESPACES[namespace], "kubernetes.io/metadata.name": namespace},
        policies=policies,
    )
    return review_job(kind, copy.deepcopy(job), None, context=context)


def defaulted_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """Every place a policy default may write, with its value in ``obj``."""
    kmap = kind_map(obj)
    assert kmap is not None
    out: dict[str, Any] = {}
    for field in DEFAULT_FIELDS:
        for path, value in field_locations(kmap, field, obj) or []:
            out[".".join(map(str, path))] = (field, value)
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for key in DEFAULT_LABEL_KEYS:
        out[f"metadata.labels[{key}]"] = ("label", labels.get(key))
    return out


def field_problems(job: dict[str, Any], stored: dict[str, Any], webhook: dict[str, Any]) -> list[str]:
    kmap = kind_map(job)
    assert kmap is not None
    got, want = defaulted_fields(stored), defaulted_fields(webhook)
    problems = []
    for where in sorted(set(got) | set(want)):
        field, value = want.get(where, (None, None))
        actual = got.get(where, (None, None))[1]
        if actual == value:
            continue
        family_value = FAMILY_DEFAULTED.get((kmap.group, kmap.kind, field or got.get(where, ("",))[0]))
        if family_value is not None and actual == family_value:
            continue
        problems.append(f"{where}: apiserver {actual!r}, webhook {value!r}")
    return problems


class Server(Apiserver):
    pass


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[Server, Callable[..., subprocess.CompletedProcess[str]]]]:
    with started(ControlPlane()) as plane:
        kubectl = _kubectl_of(plane)
        paths = (
            REPO / "manifests/overlays/cel-only",
            KUBEFLOW_TEST_CRDS,
            REPO / "manifests/policy-vaps",
            REPO / "manifests/policy-maps",
        )
        _install(kubectl, paths, NAMESPACES)
        assert KUBERNETES_VERSION in kubectl("version", "-o", "json").stdout
        apiserver = Server(str(plane.kubeconfig))
        _warm_up(apiserver, kubectl)
        yield apiserver, kubectl


def _until(pending: dict[str, dict[str, Any]], done: Callable[[dict[str, Any]], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while pending and time.monotonic() < deadline:
        for key, job in list(pending.items()):
            if done(job):
                del pending[key]
        time.sleep(2)


def _warm_up(apiserver: Server, kubectl: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    """The apiserver compiles the many policies in the background: wait until a policy refusing every
    job refuses one example of every kind, and one defaulting a label writes it into each."""
    probe = _cluster("pm-warm-up", {"defaults": {"labels": {"pm-probe": "yes"}}, "limits": {"maxReplicasPerJob": 0}})
    kubectl("apply", "-f", "-", input=yaml.safe_dump(probe)).check_returncode()
    examples = {f"{kind_map(job).group}/{kind_map(job).kind}": job for _, job in _examples()}  # type: ignore[union-attr]
    pending = dict(examples)
    _until(pending, lambda job: apiserver.create(_as_sent(job, "pm-team"), "pm-team", dry_run=True)[0] >= 300, 900)
    assert not pending, f"the ValidatingAdmissionPolicies of {sorted(pending)} never took effect"
    probe["spec"].pop("limits")
    kubectl("apply", "-f", "-", input=yaml.safe_dump(probe)).check_returncode()

    def labelled(job: dict[str, Any]) -> bool:
        status, stored = apiserver.create(_as_sent(job, "pm-team"), "pm-team", dry_run=True)
        return status < 300 and (stored.get("metadata", {}).get("labels") or {}).get("pm-probe") == "yes"

    pending = dict(examples)
    _until(pending, labelled, 600)
    kubectl("delete", "-f", "-", "--wait", input=yaml.safe_dump(probe))
    assert not pending, f"the MutatingAdmissionPolicies of {sorted(pending)} never took effect"
    time.sleep(5)


def _in_force(apiserver: Server) -> None:
    """Params reach the admission plugins through informers: wait until the defaults are written."""
    name, job = _examples()[0]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        stored = [apiserver.create(_as_sent(job, ns), ns, dry_run=True) for ns in NAMESPACES]
        if all(s < 300 and "owner" in (o["metadata"].get("labels") or {}) for s, o in stored[1:]) and all(
            s < 300 and "cost-center" in (o["metadata"].get("labels") or {}) for s, o in stored[:1]
        ):
            return
        time.sleep(1)
    raise AssertionError(f"the policies never took effect on {name}: {stored}")


@pytest.fixture(scope="module")
def policies(server: tuple[Server, Callable[..., subprocess.CompletedProcess[str]]]) -> Iterator[Server]:
    apiserver, kubectl = server
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all(POLICIES)).check_returncode()
    _in_force(apiserver)
    yield apiserver
    kubectl("delete", "-f", "-", "--wait", input=yaml.safe_dump_all(POLICIES))


@pytest.mark.timeout(3600)
def test_the_apiserver_writes_the_webhooks_defaults_and_agrees_on_the_verdict(policies: Server) -> None:
    apiserver = policies
    disagreements: list[str] = []
    compared = admitted = needing = 0
    for name, job in corpus():
        for namespace in NAMESPACES:
            sent = _as_sent(job, namespace)
            plain = _review(sent, namespace, [])
            if plain.errors:
                continue  # the family's rules refuse it: another suite's business
            want = _review(sent, namespace, POLICIES)
            status, stored = apiserver.create(sent, namespace, dry_run=True)
            compared += 1
            allowed = status < 300
            if allowed != (not want.errors):
                verdicts = (
                    f"apiserver {'admits' if allowed else 'refuses'}, "
                    f"webhook {'admits' if not want.errors else 'refuses'}"
                )
                message = stored.get("message", "") if not allowed else ""
                disagreements.append(f"{name} in {namespace}: {verdicts}: {message[:500]} {want.errors[:2]}")
                continue
            if not allowed:
                continue
            admitted += 1
            # Admitted only thanks to a default: the job as sent breaks a requirement.
            needing += bool(_review_without_defaults(sent, namespace))
            problems = field_problems(sent, stored, want.defaulted)
            if problems:
                disagreements.append(f"{name} in {namespace}: " + "; ".join(problems))
    print(f"{compared} compared, {admitted} admitted ({needing} only thanks to a default), {len(disagreements)} differ")
    assert not disagreements, "\n".join(disagreements[:30])
    assert needing > 0, "no admitted job relied on a policy default"


def _review_without_defaults(job: dict[str, Any], namespace: str) -> list[Any]:
    """The policies' errors on ``job`` judged as sent (the family's defaults applied, no policy
    default): a requirement only a default meets."""
    from jobgate.policy.review import judge

    kind = kind_of(job)
    assert kind is not None
    context = ReviewContext(
        operation=CREATE,
        namespace=namespace,
        namespace_labels={**NAMESPACES[namespace], "kubernetes.io/metadata.name": namespace},
        policies=POLICIES,
    )
    judged = judge(kind.family, kind.default(copy.deepcopy(job)), None, context)
    return list(judged.errors) if judged is not None else []


def test_a_job_relying_on_the_defaults_is_stored_with_them_and_an_unfixable_one_refused(policies: Server) -> None:
    apiserver = policies
    job = next(j for n, j in _examples() if n.startswith("tfjob-mnist"))
    assert not (job.get("metadata") or {}).get("labels", {}).get("cost-center")
    namespace = "pm-research"
    sent = _as_sent(job, namespace, "pm-relies-on-defaults")
    status, stored = apiserver.create(sent, namespace, dry_run=False)
    assert status < 300, json.dumps(stored)[:1000]
    try:
        read = apiserver.api.get_namespaced_custom_object(
            "training.kubedl.io", "v1alpha1", namespace, "tfjobs", "pm-relies-on-defaults"
        )
        assert read["spec"]["schedulingPolicy"]["queue"] == "research-q"
        assert read["spec"]["ttlSecondsAfterFinished"] == 3600
        assert read["spec"]["activeDeadlineSeconds"] == 7200
        assert read["metadata"]["labels"]["cost-center"] == "ml"
        assert read["metadata"]["labels"]["example.com/tier"] == "gold"
        assert KUEUE_LABEL not in read["metadata"]["labels"]  # KubeDL's TFJob: not a kind Kueue integrates
        assert not field_problems(sent, read, _review(sent, namespace, POLICIES).defaulted)
    finally:
        apiserver.delete(sent, namespace)

    # The job's own queue is kept (a default never overwrites a value), and require.queues refuses it;
    # a limit no default touches still holds. The refusal is one of the webhook's lines for the job.
    for name, change in (("pm-own-queue", _own_queue), ("pm-too-big", _gpus("nvidia.com/gpu", 32))):
        refused = _as_sent(job, namespace, name)
        change(refused)
        lines = [str(e) for e in _review(refused, namespace, POLICIES).errors]
        assert lines, f"{name}: the webhook admits it"
        status, answer = apiserver.create(refused, namespace, dry_run=False)
        assert status == 422, answer
        assert any(line in answer["message"] for line in lines), (answer["message"], lines)
