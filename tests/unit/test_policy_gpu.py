"""GPU arithmetic: PodRequests with sidecars and init containers, requests else limits, weights, quantities."""

from __future__ import annotations

from fractions import Fraction

import pytest

from jobgate.policy.gpu import DEFAULT_GPU_RESOURCES, QuantityError, gpu_weight, parse_quantity, pod_gpus, pod_requests

GPU = "nvidia.com/gpu"


def c(name: str, requests: dict | None = None, limits: dict | None = None, **extra: object) -> dict:
    resources = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": name, "image": "x", "resources": resources, **extra}


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        (2, 2),
        ("2", 2),
        ("500m", Fraction(1, 2)),
        ("1k", 1000),
        ("1Ki", 1024),
        ("1e3", 1000),
        ("+1", 1),
        (".5", Fraction(1, 2)),
        (1.5, Fraction(3, 2)),
    ],
)
def test_quantities(raw: object, value: Fraction) -> None:
    assert parse_quantity(raw) == value


@pytest.mark.parametrize("raw", ["two", "1.2.3", "1 Gi", "", "1Xi", True, None, [1], "1e99999", float("nan")])
def test_garbage_quantities_are_refused(raw: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(raw)


def test_app_containers_are_summed() -> None:
    spec = {"containers": [c("a", {GPU: 2}), c("b", {GPU: 3})]}
    assert pod_requests(spec)[GPU] == 5


def test_requests_win_over_limits_and_limits_count_alone() -> None:
    spec = {"containers": [c("a", {GPU: 1}, {GPU: 4}), c("b", None, {GPU: 2})]}
    assert pod_requests(spec)[GPU] == 3


def test_plain_init_container_larger_than_the_app_sets_the_request() -> None:
    spec = {"initContainers": [c("init", {GPU: 8})], "containers": [c("a", {GPU: 2})]}
    assert pod_requests(spec)[GPU] == 8


def test_sidecar_adds_to_the_app_containers() -> None:
    spec = {"initContainers": [c("side", {GPU: 1}, restartPolicy="Always")], "containers": [c("a", {GPU: 2})]}
    assert pod_requests(spec)[GPU] == 3


def test_init_container_after_a_sidecar_counts_the_sidecar() -> None:
    # PodRequests: the init container's peak is its own request plus the sidecars started before it.
    spec = {
        "initContainers": [c("side", {GPU: 2}, restartPolicy="Always"), c("init", {GPU: 4})],
        "containers": [c("a", {GPU: 1})],
    }
    assert pod_requests(spec)[GPU] == 6
    # The same init container *before* the sidecar: peak 4, app+sidecar 3.
    spec["initContainers"].reverse()
    assert pod_requests(spec)[GPU] == 4


def test_overhead_is_added() -> None:
    spec = {"containers": [c("a", {"cpu": "1"})], "overhead": {"cpu": "250m"}}
    assert pod_requests(spec)["cpu"] == Fraction(5, 4)


def test_weights_exact_beats_pattern_and_longer_pattern_beats_shorter() -> None:
    resources = [("nvidia.com/*", 1), ("nvidia.com/mig-*", 0.5), ("nvidia.com/mig-7g.80gb", 1)]
    assert gpu_weight("nvidia.com/mig-1g.10gb", resources) == Fraction(1, 2)
    assert gpu_weight("nvidia.com/mig-7g.80gb", resources) == 1
    assert gpu_weight("nvidia.com/gpu", resources) == 1
    assert gpu_weight("amd.com/gpu", resources) is None


@pytest.mark.parametrize(
    "name",
    [
        "nvidia.com/gpu",
        "nvidia.com/mig-1g.5gb",
        "amd.com/gpu",
        "gpu.intel.com/i915",
        "gpu.intel.com/xe",
        "habana.ai/gaudi",
        "aws.amazon.com/neuron",
        "aws.amazon.com/neuroncore",
        "volcano.sh/vgpu-number",
    ],
)
def test_default_list_covers_the_vendors(name: str) -> None:
    assert gpu_weight(name, DEFAULT_GPU_RESOURCES) == 1


def test_default_list_does_not_count_vgpu_memory_or_cpu() -> None:
    assert gpu_weight("volcano.sh/vgpu-memory", DEFAULT_GPU_RESOURCES) is None
    assert gpu_weight("cpu", DEFAULT_GPU_RESOURCES) is None


def test_mig_profiles_weighted() -> None:
    template = {"spec": {"containers": [c("a", {"nvidia.com/mig-1g.5gb": 2, "nvidia.com/mig-3g.20gb": 1})]}}
    count = pod_gpus(template, [("nvidia.com/mig-1g*", 0.25), ("nvidia.com/mig-*", 0.5)], "t")
    assert count.gpus == Fraction(1)


def test_dra_claims_are_not_container_resources() -> None:
    """pod_gpus counts the containers; a pod's claims are counted from their templates (claim_devices)."""
    template = {
        "spec": {
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "a100"}],
            "containers": [{"name": "a", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}],
        }
    }
    count = pod_gpus(template, DEFAULT_GPU_RESOURCES, "spec.template")
    assert count.gpus == 0 and count.uncounted == []


def test_unparseable_quantity_is_uncounted_not_a_crash() -> None:
    count = pod_gpus({"spec": {"containers": [c("a", {GPU: "lots"})]}}, DEFAULT_GPU_RESOURCES, "t")
    assert count.gpus == 0 and count.uncounted
