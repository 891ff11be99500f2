"""GPU limits count what a pod asks through DRA (issue 43): ResourceClaimTemplates per pod, shared
ResourceClaims once per job, ``firstAvailable`` at its largest, ``allocationMode: All`` and objects
not seen as findings, implicit and explicit DRA extended resources; the lists added to the built-in
ones (``gpuResources``, ``gpuDeviceClasses``); image volumes against ``require.imageRegistries``."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from jobgate.engine.context import ReviewContext
from jobgate.engine.views import DeviceSnapshot
from jobgate.policy.check import PolicyFinding, policy_findings
from jobgate.policy.findings import _all_findings
from jobgate.policy.gpu import DEFAULT_GPU_DEVICE_CLASSES, claim_devices, gpu_weight
from jobgate.policy.kinds import kind_map
from jobgate.policy.plan import _plan
from jobgate.policy.resolve import effective_policy
from jobgate.policy.snapshot import PolicySnapshot
from jobgate.review import kind_of, review_job
from tests.unit.test_policy_fixtures import cluster, dijob, kubedl, kubeflow, pod, volcano

NS = "ns"
CAP8 = cluster("cap", {"limits": {"maxGPUsPerJob": 8}})


def template(name: str, *requests: dict[str, Any], namespace: str = NS, version: str = "v1") -> dict[str, Any]:
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": list(requests)}}},
    }


def claim(name: str, *requests: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"devices": {"requests": list(requests)}},
    }


def exactly(device_class: str = "gpu.nvidia.com", count: int | None = None, **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"deviceClassName": device_class, **extra}
    if count is not None:
        spec["count"] = count
    return {"name": "r", "exactly": spec}


def device_class(name: str, extended: str | None = None) -> dict[str, Any]:
    spec = {"extendedResourceName": extended} if extended else {}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def claiming(*names: str, field: str = "resourceClaimTemplateName") -> dict[str, Any]:
    """A pod template whose pod takes its GPUs through claims (no GPU container resource)."""
    claims = [{"name": f"c{i}", field: name} for i, name in enumerate(names)]
    return pod(None, resourceClaims=claims)


def findings(job: dict, *policies: dict, devices: DeviceSnapshot | None = None, old: dict | None = None) -> list:
    eff = effective_policy(list(policies), NS, {}, job)
    return policy_findings(job, old, kind_map(job).family, eff, devices=devices)


def rules(found: list[PolicyFinding]) -> list[str]:
    return [f.rule for f in found]


FOUR = DeviceSnapshot([template("four-gpus", exactly(count=4))])


# --- claim templates ---------------------------------------------------------------------------------


def test_a_template_of_four_gpus_on_four_replicas_exceeds_an_eight_gpu_cap() -> None:
    job = kubedl(replicas=4, template=claiming("four-gpus"))
    (f,) = findings(job, CAP8, devices=FOUR)
    assert f.rule == "policy/max-gpus-per-job" and f.action == "Deny"
    assert "requests 16 GPUs at its largest (Worker 4 × 4), exceeds 8 GPUs per job" in f.message
    assert findings(kubedl(replicas=2, template=claiming("four-gpus")), CAP8, devices=FOUR) == []


def test_per_pod_cap_counts_the_pods_template_devices_and_containers() -> None:
    spec = claiming("four-gpus")
    spec["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 1}}
    job = kubedl(replicas=1, template=spec)
    (f,) = findings(job, cluster("pod", {"limits": {"maxGPUsPerPod": 4}}), devices=FOUR)
    assert f.rule == "policy/max-gpus-per-pod" and f.value == "5"


@pytest.mark.parametrize(
    ("request_", "gpus"),
    [
        (exactly(), 1),  # count absent: 1
        (exactly(count=3), 3),
        (exactly(count=3, allocationMode="ExactCount"), 3),
        (exactly("nic.example.com", count=8), 0),  # not a GPU class
        (exactly(count=8, adminAccess=True), 0),  # admin access takes no device
        ({"name": "r", "deviceClassName": "gpu.nvidia.com", "count": 2}, 2),  # v1beta1: on the request itself
        (
            {
                "name": "r",
                "firstAvailable": [
                    {"name": "big", "deviceClassName": "gpu.nvidia.com", "count": 2},
                    {"name": "mig", "deviceClassName": "mig.nvidia.com", "count": 4},
                    {"name": "nic", "deviceClassName": "nic.example.com", "count": 9},
                ],
            },
            4,  # the largest alternative
        ),
    ],
)
def test_each_request_shape_counts(request_: dict[str, Any], gpus: int) -> None:
    def weigh(name: str) -> Any:
        return gpu_weight(name, DEFAULT_GPU_DEVICE_CLASSES)

    count = claim_devices({"devices": {"requests": [request_]}}, weigh)
    assert count.gpus == gpus and count.unbounded == []


def test_older_exports_are_read_in_both_shapes() -> None:
    """v1beta1 (fields on the request) and v1beta2 (``exactly``, as v1) give the same count."""
    beta1 = template("t", {"name": "r", "deviceClassName": "gpu.nvidia.com", "count": 4}, version="v1beta1")
    beta2 = template("t", exactly(count=4), version="v1beta2")
    job = kubedl(replicas=4, template=claiming("t"))
    for obj in (beta1, beta2):
        assert [f.value for f in findings(job, CAP8, devices=DeviceSnapshot([obj]))] == ["16"]


def test_allocation_mode_all_violates_every_applying_cap() -> None:
    devices = DeviceSnapshot([template("every-gpu", exactly(allocationMode="All"))])
    job = kubedl(replicas=1, template=claiming("every-gpu"))
    caps = cluster("caps", {"limits": {"maxGPUsPerPod": 4, "maxGPUsPerJob": 8}})
    found = findings(job, caps, devices=devices)
    assert rules(found) == ["policy/gpu-claim-unbounded"] * 2
    assert found[0].path == "spec.tfReplicaSpecs[Worker].template.spec.resourceClaims[0].resourceClaimTemplateName"
    assert "ResourceClaimTemplate ns/every-gpu asks for all devices of class gpu.nvidia.com (allocationMode: All)" in (
        found[0].message
    )
    assert "cannot be bounded, so limits.maxGPUsPerPod (4) cannot hold" in found[0].message
    assert "limits.maxGPUsPerJob (8)" in found[1].message
    assert found[0].text().startswith("spec.tfReplicaSpecs[Worker].template.spec.resourceClaims[0]")
    # Of a class that is no GPU, or without any GPU limit: nothing to say.
    nic = DeviceSnapshot([template("every-gpu", exactly("nic.example.com", allocationMode="All"))])
    assert findings(job, caps, devices=nic) == []
    assert findings(job, cluster("none", {"require": {"queues": ["q"]}}), devices=devices) != []  # queue only
    assert "policy/gpu-claim-unbounded" not in rules(findings(job, cluster("q", {}), devices=devices))


def test_first_available_with_an_unbounded_alternative_is_unbounded() -> None:
    request = {
        "name": "r",
        "firstAvailable": [
            {"name": "one", "deviceClassName": "gpu.nvidia.com", "count": 1},
            {"name": "all", "deviceClassName": "gpu.nvidia.com", "allocationMode": "All"},
        ],
    }
    devices = DeviceSnapshot([template("t", request)])
    assert rules(findings(kubedl(replicas=1, template=claiming("t")), CAP8, devices=devices)) == [
        "policy/gpu-claim-unbounded"
    ]


def test_a_template_not_seen_is_a_finding_naming_it_and_how_to_give_it() -> None:
    job = kubedl(replicas=1, template=claiming("missing"))
    for devices in (None, FOUR):  # no view at all (offline without objects), or a view without it
        (f,) = findings(job, CAP8, devices=devices)
        assert f.rule == "policy/gpu-claim-unknown" and f.action == "Deny" and f.type == "Forbidden"
        assert "ResourceClaimTemplate ns/missing is not known here" in f.message
        assert "create it in namespace ns before the job (offline: pass it with --cluster-objects)" in f.message
    # A template of another namespace is not the job's.
    elsewhere = DeviceSnapshot([template("missing", exactly(), namespace="other")])
    assert rules(findings(job, CAP8, devices=elsewhere)) == ["policy/gpu-claim-unknown"]
    # A Warn policy warns.
    warn = cluster("soft", {"enforcementAction": "Warn", "limits": {"maxGPUsPerJob": 8}})
    assert [f.action for f in findings(job, warn)] == ["Warn"]


def test_an_unseen_template_on_update_is_an_existing_violation() -> None:
    job = kubedl(replicas=1, template=claiming("missing"))
    assert findings(job, CAP8, old=copy.deepcopy(job)) == []
    deny = cluster("strict", {"existingViolations": "Deny", "limits": {"maxGPUsPerJob": 8}})
    assert rules(findings(job, deny, old=copy.deepcopy(job))) == ["policy/gpu-claim-unknown"]


# --- shared claims -----------------------------------------------------------------------------------


def test_a_shared_claim_counts_once_per_job() -> None:
    devices = DeviceSnapshot([claim("shared", exactly(count=8))])
    roles = {
        "Master": (1, claiming("shared", field="resourceClaimName")),
        "Worker": (3, claiming("shared", field="resourceClaimName")),
    }
    job = kubeflow(roles=roles)
    assert findings(job, CAP8, devices=devices) == []  # 8 once, not 4 × 8
    (f,) = findings(job, cluster("cap7", {"limits": {"maxGPUsPerJob": 7}}), devices=devices)
    assert f.value == "8" and "ResourceClaim shared 8" in f.message
    # A pod using it holds its devices: the per-pod cap counts them.
    found = findings(job, cluster("pod", {"limits": {"maxGPUsPerPod": 4}}), devices=devices)
    assert rules(found) == ["policy/max-gpus-per-pod"] * 2  # a pod of each role


def test_a_shared_claim_not_seen_is_a_finding() -> None:
    job = volcano(tasks=[{"name": "w", "replicas": 2, "template": claiming("gone", field="resourceClaimName")}])
    (f,) = findings(job, CAP8, devices=DeviceSnapshot([]))
    assert f.rule == "policy/gpu-claim-unknown" and "ResourceClaim ns/gone" in f.message
    assert f.path == "spec.tasks[0].template.spec.resourceClaims[0].resourceClaimName"


# --- DRA extended resources --------------------------------------------------------------------------


def gpu_container(resource: str, amount: int) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "m", "image": "x", "resources": {"limits": {resource: amount}}}]}}


def test_implicit_device_class_resources_count_as_devices_of_the_class() -> None:
    job = kubedl(replicas=4, template=gpu_container("deviceclass.resource.kubernetes.io/gpu.nvidia.com", 4))
    (f,) = findings(job, CAP8)
    assert f.rule == "policy/max-gpus-per-job" and f.value == "16"
    # A class no list counts is not GPUs; weighted by gpuDeviceClasses.
    nic = kubedl(replicas=4, template=gpu_container("deviceclass.resource.kubernetes.io/nic.example.com", 4))
    assert findings(nic, CAP8) == []
    heavy = cluster(
        "h", {"limits": {"maxGPUsPerJob": 8, "gpuDeviceClasses": [{"name": "nic.example.com", "weight": 2}]}}
    )
    assert [f.value for f in findings(nic, heavy)] == ["32"]


def test_a_device_classs_extended_resource_name_counts_as_its_devices() -> None:
    devices = DeviceSnapshot([device_class("gpu.nvidia.com", "example.com/gpu")])
    job = kubedl(replicas=4, template=gpu_container("example.com/gpu", 4))
    assert findings(job, CAP8) == []  # not a GPU resource by name
    (f,) = findings(job, CAP8, devices=devices)
    assert f.rule == "policy/max-gpus-per-job" and f.value == "16"
    # The plan leaves such a container to the checks.
    eff = effective_policy([CAP8], NS, {}, job)
    kmap = kind_map(job)
    extended = {"example.com/gpu": 1}
    assert not _plan(eff, kmap).clean(job, kmap, extended)
    small = kubedl(replicas=1, template=gpu_container("example.com/gpu", 4))
    assert findings(small, CAP8, devices=devices) == []


def test_a_job_without_claims_is_clean_on_the_plan_with_devices_around() -> None:
    job = kubedl(replicas=2)
    eff = effective_policy([CAP8], NS, {}, job)
    kmap = kind_map(job)
    assert _plan(eff, kmap).clean(job, kmap, {})


# --- the lists added to the built-in ones (point 4) --------------------------------------------------


def test_a_mig_only_gpu_resources_list_still_counts_whole_gpus() -> None:
    job = kubeflow(roles={"Master": (1, pod(8)), "Worker": (2, pod(8))})  # 24 nvidia.com/gpu
    mig = cluster(
        "mig", {"limits": {"maxGPUsPerJob": 16, "gpuResources": [{"name": "nvidia.com/mig-*", "weight": 0.5}]}}
    )
    (f,) = findings(job, mig)
    assert f.rule == "policy/max-gpus-per-job" and f.value == "24"


def test_weight_zero_excludes_and_an_exact_name_beats_a_pattern() -> None:
    job = kubeflow(roles={"Master": (1, pod(8)), "Worker": (2, pod(8))})
    off = cluster("off", {"limits": {"maxGPUsPerJob": 16, "gpuResources": [{"name": "nvidia.com/gpu", "weight": 0}]}})
    assert findings(job, off) == []
    mig = gpu_container("nvidia.com/mig-1g.5gb", 4)
    slices = kubedl(replicas=4, template=mig)
    exact_off = cluster(
        "x",
        {
            "limits": {
                "maxGPUsPerJob": 8,
                "gpuResources": [
                    {"name": "nvidia.com/mig-*", "weight": 1},
                    {"name": "nvidia.com/mig-1g.5gb", "weight": 0},
                ],
            }
        },
    )
    assert findings(slices, exact_off) == []
    pattern_off = cluster(
        "p", {"limits": {"maxGPUsPerJob": 8, "gpuResources": [{"name": "nvidia.com/mig-*", "weight": 0}]}}
    )
    assert findings(slices, pattern_off) == []
    assert [f.value for f in findings(slices, CAP8)] == ["16"]  # the built-in list counts them


def test_gpu_device_classes_set_weights_and_exclude() -> None:
    job = kubedl(replicas=4, template=claiming("four-gpus"))
    double = cluster(
        "d", {"limits": {"maxGPUsPerJob": 16, "gpuDeviceClasses": [{"name": "gpu.nvidia.com", "weight": 2}]}}
    )
    assert [f.value for f in findings(job, double, devices=FOUR)] == ["32"]
    off = cluster("o", {"limits": {"maxGPUsPerJob": 8, "gpuDeviceClasses": [{"name": "gpu.nvidia.com", "weight": 0}]}})
    assert findings(job, off, devices=FOUR) == []
    # A pattern does not take an exact built-in name off: the exact name beats it.
    pattern = cluster("o", {"limits": {"maxGPUsPerJob": 8, "gpuDeviceClasses": [{"name": "gpu.*", "weight": 0}]}})
    assert [f.value for f in findings(job, pattern, devices=FOUR)] == ["16"]
    exact_wins = cluster(
        "e",
        {
            "limits": {
                "maxGPUsPerJob": 8,
                "gpuDeviceClasses": [{"name": "gpu.*", "weight": 3}, {"name": "gpu.nvidia.com", "weight": 1}],
            }
        },
    )
    assert [f.value for f in findings(job, exact_wins, devices=FOUR)] == ["16"]
    custom = DeviceSnapshot([template("four-gpus", exactly("tpu.example.com", count=4))])
    assert findings(job, CAP8, devices=custom) == []  # not a GPU class by default
    tpu = cluster("t", {"limits": {"maxGPUsPerJob": 8, "gpuDeviceClasses": [{"name": "tpu.example.com"}]}})
    assert [f.value for f in findings(job, tpu, devices=custom)] == ["16"]


def test_the_effective_lists_are_the_built_in_ones_with_the_policies_added() -> None:
    eff = effective_policy(
        [
            cluster("a", {"limits": {"gpuDeviceClasses": [{"name": "gpu.amd.com", "weight": 0}]}}),
            cluster("b", {"limits": {"gpuDeviceClasses": [{"name": "x.example.com", "weight": 0.5}]}}),
        ],
        NS,
        {},
        None,
    )
    assert dict(eff.gpu_device_classes) == {
        **dict(DEFAULT_GPU_DEVICE_CLASSES),
        "gpu.amd.com": 0,
        "x.example.com": 0.5,
    }
    assert [str(s) for s in eff.gpu_device_classes_sources] == [
        "ClusterTrainingJobPolicy a",
        "ClusterTrainingJobPolicy b",
    ]


# --- image volumes (point 3) -------------------------------------------------------------------------

REGISTRIES = cluster("reg", {"require": {"imageRegistries": ["registry.example.com/"]}})


def test_an_image_volume_from_another_registry_is_refused_with_its_path() -> None:
    volume = {"name": "model", "image": {"reference": "evil.example.org/weights:1"}}
    job = kubedl(replicas=1, template=pod(1, volumes=[volume]))
    (f,) = findings(job, REGISTRIES)
    assert f.rule == "policy/image-registries" and f.value == "evil.example.org/weights:1"
    assert f.path == "spec.tfReplicaSpecs[Worker].template.spec.volumes[0].image.reference"
    assert "it comes from evil.example.org/" in f.message
    ok = kubedl(
        replicas=1, template=pod(1, volumes=[{"name": "m", "image": {"reference": "registry.example.com/w:1"}}])
    )
    assert findings(ok, REGISTRIES) == []
    # DIJob's job-level volumes go into every pod.
    (f,) = findings(dijob(volumes=[volume]), REGISTRIES)
    assert f.path == "spec.volumes[0].image.reference"


def test_the_plan_sends_a_bad_image_volume_to_the_checks() -> None:
    volume = {"name": "model", "image": {"reference": "evil.example.org/weights:1"}}
    for job in (kubedl(replicas=1, template=pod(1, volumes=[volume])), dijob(volumes=[volume])):
        eff = effective_policy([REGISTRIES], NS, {}, job)
        kmap = kind_map(job)
        assert not _plan(eff, kmap).clean(job, kmap)
        assert rules(_all_findings(job, eff)) == ["policy/image-registries"]
    fine = kubedl(
        replicas=1, template=pod(1, volumes=[{"name": "m", "image": {"reference": "registry.example.com/w"}}])
    )
    eff = effective_policy([REGISTRIES], NS, {}, fine)
    kmap = kind_map(fine)
    assert _plan(eff, kmap).clean(fine, kmap)


# --- through a review --------------------------------------------------------------------------------


def test_a_review_reads_the_contexts_device_view() -> None:
    job = kubedl(replicas=4, template=claiming("four-gpus"))
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = "tensorflow"
    snapshot = PolicySnapshot([CAP8])
    for devices, allowed in ((FOUR, False), (None, False), (DeviceSnapshot([template("four-gpus", exactly())]), True)):
        context = ReviewContext(
            namespace=NS, namespace_labels=snapshot.namespace_labels(NS), policies=snapshot.policies(), devices=devices
        )
        verdict = review_job(kind_of(job), copy.deepcopy(job), context=context)
        assert verdict.allowed == allowed, [str(e) for e in verdict.errors]


def test_offline_a_claim_template_not_given_is_not_admitted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Point 5: ``jobgate validate --policies`` without the template the count needs says which, and
    exits 1 (never "admitted")."""
    import yaml

    from jobgate.cli import main

    job = kubedl(replicas=1, template=claiming("four-gpus"))
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = "tensorflow"
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(CAP8))
    assert main(["validate", "--policies", str(tmp_path / "policy.yaml"), str(tmp_path / "job.yaml")]) == 1
    out = capsys.readouterr().out
    assert "resourceClaims[0].resourceClaimTemplateName" in out
    assert "ResourceClaimTemplate ns/four-gpus is not known here" in out and "--cluster-objects" in out
