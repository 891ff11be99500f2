"""The webhook's view of Trainer's runtimes (webhook/trainer_runtimes.py): informers' caches first, the
API on a miss (a runtime created a moment before its TrainJob), and a view without a cluster that says so."""

from __future__ import annotations

from typing import Any

from jobgate.engine.views import ClusterViews
from jobgate.kube.client import ApiError
from jobgate.webhook.trainer_runtimes import NO_VIEW_HINT, RuntimeCache, start_runtime_cache


class FakeKube:
    """Answers GETs from a dict of paths; 404 for the rest."""

    def __init__(self, objects: dict[str, dict[str, Any]]) -> None:
        self.objects = objects
        self.asked: list[str] = []

    def get(self, path: str, **_: Any) -> dict[str, Any]:
        self.asked.append(path)
        if path not in self.objects:
            raise ApiError(404, "Not Found")
        return self.objects[path]

    def serves(self, *_: Any) -> bool:
        return False


def test_a_miss_is_read_from_the_api():
    fresh = {"kind": "ClusterTrainingRuntime", "metadata": {"name": "new"}, "spec": {}}
    kube = FakeKube({"/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes/new": fresh})
    cache = RuntimeCache(kube)  # type: ignore[arg-type]
    assert cache.runtime("ClusterTrainingRuntime", None, "new") == fresh
    assert cache.runtime("TrainingRuntime", "team-a", "none") is None
    assert kube.asked[-1] == "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team-a/trainingruntimes/none"


def test_a_cached_runtime_needs_no_api_call():
    kube = FakeKube({})
    cache = RuntimeCache(kube)  # type: ignore[arg-type]
    cached = {"kind": "TrainingRuntime", "metadata": {"name": "mine", "namespace": "team-a"}, "spec": {}}
    cache.namespaced._cache["team-a/mine"] = cached
    assert cache.runtime("TrainingRuntime", "team-a", "mine") == cached
    assert kube.asked == []


def test_the_jobset_is_read_from_the_api():
    jobset = {"kind": "JobSet", "metadata": {"name": "job"}}
    kube = FakeKube({"/apis/jobset.x-k8s.io/v1alpha2/namespaces/team-a/jobsets/job": jobset})
    assert RuntimeCache(kube).jobset("team-a", "job") == jobset  # type: ignore[arg-type]


def test_without_a_cluster_the_view_says_why_the_runtime_is_not_found():
    views = ClusterViews()
    assert start_runtime_cache(None, views) is None
    assert views.runtimes.offline_hint == NO_VIEW_HINT
    assert views.runtimes.runtime("ClusterTrainingRuntime", None, "x") is None


def test_trainers_crds_not_served_leave_the_empty_view():
    views = ClusterViews()
    assert start_runtime_cache(FakeKube({}), views) is None  # type: ignore[arg-type]
    assert views.runtimes.offline_hint == NO_VIEW_HINT
