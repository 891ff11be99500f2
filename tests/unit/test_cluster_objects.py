"""``--cluster-objects FILE|DIR``: exported cluster objects routed by apiVersion and kind to the views
the checks read (jobgate/offline/cluster_objects.py), and the commands that take the flag."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from jobgate.cli import main
from jobgate.offline.cluster_objects import Located, Routed, route, unwrap

REPO = Path(__file__).resolve().parents[2]

NAMESPACE = {
    "apiVersion": "v1",
    "kind": "Namespace",
    "metadata": {"name": "team-a", "labels": {"team": "a", "kubernetes.io/metadata.name": "team-a"}},
}
GPU_POLICY = {
    "apiVersion": "policy.jobgate.io/v1alpha1",
    "kind": "ClusterTrainingJobPolicy",
    "metadata": {"name": "team-a-gpus", "resourceVersion": "12", "uid": "u-1"},
    "spec": {"namespaceSelector": {"matchLabels": {"team": "a"}}, "limits": {"maxGPUsPerJob": 16}},
}
QUEUE = {
    "apiVersion": "scheduling.volcano.sh/v1beta1",
    "kind": "Queue",
    "metadata": {"name": "research"},
    "spec": {"weight": 1},
    "status": {"state": "Open"},
}
TEMPLATE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "eight-gpus", "namespace": "team-a"},
    "spec": {
        "spec": {
            "devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 8}}]}
        }
    },
}
CLAIM = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "shared", "namespace": "team-a"},
    "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}},
}
DEVICE_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu.nvidia.com"},
    "spec": {"extendedResourceName": "nvidia.com/gpu"},
}
CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "team-a"}}


def export(*items: dict) -> dict:
    """What `kubectl get ... -A -o yaml` prints."""
    return {"apiVersion": "v1", "kind": "List", "items": list(items), "metadata": {"resourceVersion": ""}}


def located(*objects: dict) -> list[Located]:
    return [Located(obj, "cluster.yaml") for obj in objects]


def tfjob(gpus: int = 8, workers: int = 3, namespace: str = "team-a") -> dict:
    container = {"name": "tensorflow", "image": "tf:2", "resources": {"limits": {"nvidia.com/gpu": gpus}}}
    return {
        "apiVersion": "training.kubedl.io/v1alpha1",
        "kind": "TFJob",
        "metadata": {"name": "big", "namespace": namespace},
        "spec": {
            "tfReplicaSpecs": {"Worker": {"replicas": workers, "template": {"spec": {"containers": [container]}}}}
        },
    }


# --- routing ------------------------------------------------------------------------------------


def test_each_kind_goes_to_what_reads_it():
    routed = route(located(NAMESPACE, GPU_POLICY, QUEUE, TEMPLATE, CLAIM, DEVICE_CLASS, CONFIG_MAP))
    assert routed.namespaces == {"team-a": {"team": "a", "kubernetes.io/metadata.name": "team-a"}}
    assert [p.obj for p in routed.policies] == [GPU_POLICY]
    assert routed.queues == [QUEUE]
    assert routed.devices == [TEMPLATE, CLAIM, DEVICE_CLASS]
    assert routed.ignored == {"v1 ConfigMap": 1}
    assert routed.notes() == ["ignored 1 object of other kinds (v1 ConfigMap ×1)"]


def test_routing_reads_the_group_not_the_kind_alone():
    """A kind name is not unique across groups: a Queue of another group is no Volcano Queue."""
    kueue = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue", "metadata": {"name": "q"}}
    other_queue = {"apiVersion": "example.com/v1", "kind": "Queue", "metadata": {"name": "q"}}
    other_class = {"apiVersion": "example.com/v1", "kind": "DeviceClass", "metadata": {"name": "d"}}
    routed = route(located(kueue, other_queue, other_class))
    assert not routed.queues and not routed.devices
    assert routed.kueue == [kueue]  # Kueue's own queues go to require.fitsQueue
    assert sum(routed.ignored.values()) == 2


def test_kueue_queue_objects_are_routed_to_the_queue_fit_check():
    kinds = ("LocalQueue", "ClusterQueue", "ResourceFlavor", "Cohort")
    objects = [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, "metadata": {"name": "x"}} for kind in kinds]
    workload = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": "w"}}
    routed = route(located(*objects, workload))
    assert routed.kueue == objects
    assert routed.ignored == {"kueue.x-k8s.io/v1beta2 Workload": 1}


def test_an_alpha_dra_export_is_not_read_and_that_is_said():
    old = {**TEMPLATE, "apiVersion": "resource.k8s.io/v1alpha3"}
    routed = route(located(old, TEMPLATE))
    assert routed.devices == [TEMPLATE]
    assert routed.unread_devices == {"resource.k8s.io/v1alpha3 ResourceClaimTemplate": 1}
    (note,) = routed.notes()
    assert "resource.k8s.io/v1alpha3 ResourceClaimTemplate" in note and "versions v1, v1beta2, v1beta1" in note


def test_every_policy_group_object_goes_to_the_policy_check():
    """A misspelt kind of the policies' group is not ignored: the policy check refuses it."""
    typo = {**GPU_POLICY, "kind": "ClusterTrainingJobPolicyy"}
    routed = route(located(typo))
    assert [p.obj for p in routed.policies] == [typo] and not routed.ignored


def test_lists_unwrap_with_their_paths():
    items = list(unwrap(export(NAMESPACE, QUEUE)))
    assert items == [(NAMESPACE, ("items", 0)), (QUEUE, ("items", 1))]
    assert list(unwrap({"apiVersion": "v1", "kind": "NamespaceList", "items": [NAMESPACE]})) == [
        (NAMESPACE, ("items", 0))
    ]
    assert list(unwrap(NAMESPACE)) == [(NAMESPACE, ())]
    assert list(unwrap("text")) == []


def test_routing_adds_to_what_was_routed():
    routed = route(located(NAMESPACE))
    again = route(located(QUEUE), routed)
    assert again is routed and routed.namespaces and routed.queues
    assert isinstance(routed, Routed)


# --- the commands -------------------------------------------------------------------------------


@pytest.fixture
def cluster(tmp_path: Path) -> Path:
    (tmp_path / "cluster.yaml").write_text(
        yaml.safe_dump(export(NAMESPACE, GPU_POLICY, QUEUE, DEVICE_CLASS, CONFIG_MAP))
    )
    (tmp_path / "big.yaml").write_text(yaml.safe_dump(tfjob()))
    (tmp_path / "small.yaml").write_text(yaml.safe_dump(tfjob(gpus=4)))
    return tmp_path


def test_validate_reads_one_export_as_the_cluster(cluster: Path, capsys):
    assert main(["validate", "--cluster-objects", str(cluster / "cluster.yaml"), str(cluster / "big.yaml")]) == 1
    captured = capsys.readouterr()
    assert "exceeds 16 GPUs per job (ClusterTrainingJobPolicy team-a-gpus)" in captured.out
    assert "ignored 1 object of other kinds (v1 ConfigMap ×1)" in captured.err
    assert main(["validate", "--cluster-objects", str(cluster / "cluster.yaml"), str(cluster / "small.yaml")]) == 0


def test_a_directory_of_exports_is_read_recursively(cluster: Path, capsys):
    nested = cluster / "export" / "deep"
    nested.mkdir(parents=True)
    (nested / "namespaces.json").write_text(json.dumps(export(NAMESPACE)))
    (cluster / "export" / "policies.yaml").write_text(yaml.safe_dump(GPU_POLICY))
    assert main(["validate", "--cluster-objects", str(cluster / "export"), str(cluster / "big.yaml")]) == 1
    assert "team-a-gpus" in capsys.readouterr().out


def test_the_flag_repeats_and_combines_with_the_older_flags(cluster: Path, capsys):
    (cluster / "namespaces.yaml").write_text(yaml.safe_dump(export(NAMESPACE)))
    (cluster / "policy.yaml").write_text(yaml.safe_dump(GPU_POLICY))
    (cluster / "queue.yaml").write_text(yaml.safe_dump(QUEUE))
    # Policies from --policies, the namespace's labels from --cluster-objects.
    flags = ["--policies", str(cluster / "policy.yaml"), "--cluster-objects", str(cluster / "namespaces.yaml")]
    assert main(["validate", *flags, str(cluster / "big.yaml")]) == 1
    # Both from --cluster-objects, given twice.
    flags = ["--cluster-objects", str(cluster / "policy.yaml"), "--cluster-objects", str(cluster / "queue.yaml")]
    flags += ["--namespaces", str(cluster / "namespaces.yaml")]
    assert main(["validate", *flags, str(cluster / "big.yaml")]) == 1
    assert "team-a-gpus" in capsys.readouterr().out


def test_the_same_policy_from_two_flags_counts_once(cluster: Path, capsys):
    (cluster / "policy.yaml").write_text(yaml.safe_dump(GPU_POLICY))
    flags = ["--policies", str(cluster / "policy.yaml"), "--cluster-objects", str(cluster / "cluster.yaml")]
    assert main(["validate", "-o", "json", *flags, str(cluster / "big.yaml")]) == 1
    (document,) = json.loads(capsys.readouterr().out)["documents"]
    assert len(document["errors"]) == 1


def test_queues_from_the_export_replace_the_skipped_queue_check(cluster: Path, capsys):
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "vc", "namespace": "team-a"},
        "spec": {
            "queue": "missing",
            "tasks": [
                {"name": "w", "replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}
            ],
        },
    }
    (cluster / "vc.yaml").write_text(yaml.safe_dump(job))
    assert main(["validate", str(cluster / "vc.yaml")]) == 0
    assert "queue check" in capsys.readouterr().err
    assert main(["validate", "--cluster-objects", str(cluster / "cluster.yaml"), str(cluster / "vc.yaml")]) == 1
    captured = capsys.readouterr()
    assert "missing" in captured.out and "queue check" not in captured.err


def test_an_export_without_queues_keeps_the_queue_check_skipped(cluster: Path, capsys):
    """No Queue in the export says nothing of the cluster's queues: skipped (and said), never refused."""
    (cluster / "namespaces.yaml").write_text(yaml.safe_dump(export(NAMESPACE)))
    from jobgate.cli.offline import QuickArguments, _cluster_views
    from jobgate.offline.results import FieldValidation

    args = QuickArguments([], "text", FieldValidation.STRICT, None, cluster_objects=[str(cluster / "namespaces.yaml")])
    views, readable = _cluster_views(args)
    assert readable and views is not None
    assert views.queues is None
    assert views.devices is not None and views.devices.device_class("gpu.nvidia.com") is None


def test_the_device_objects_reach_the_review_context(cluster: Path):
    (cluster / "dra.yaml").write_text(
        yaml.safe_dump_all([TEMPLATE, CLAIM, DEVICE_CLASS, {**TEMPLATE, "metadata": {"name": "bare"}}])
    )
    from jobgate.cli.offline import QuickArguments, _cluster_views
    from jobgate.engine.context import context_for
    from jobgate.offline.results import FieldValidation

    args = QuickArguments(
        [], "text", FieldValidation.STRICT, None, namespace="team-b", cluster_objects=[str(cluster / "dra.yaml")]
    )
    views, _ = _cluster_views(args)
    devices = context_for(views, namespace="team-a").devices
    assert devices is not None
    assert devices.claim_template("team-a", "eight-gpus") == TEMPLATE
    assert devices.claim("team-a", "shared") == CLAIM
    assert devices.device_class("gpu.nvidia.com") == DEVICE_CLASS
    assert devices.extended_resource_classes() == {"nvidia.com/gpu": "gpu.nvidia.com"}
    # A namespaced object without a namespace is in --namespace's, as kubectl would create it.
    assert devices.claim_template("team-b", "bare") is not None


def test_default_and_review_take_the_flag(cluster: Path, capsys):
    default_policy = {
        "apiVersion": "policy.jobgate.io/v1alpha1",
        "kind": "ClusterTrainingJobPolicy",
        "metadata": {"name": "queue"},
        "spec": {"namespaceSelector": {"matchLabels": {"team": "a"}}, "defaults": {"queue": "team-a"}},
    }
    (cluster / "defaults.yaml").write_text(yaml.safe_dump(export(NAMESPACE, default_policy)))
    assert (
        main(
            ["default", "-o", "json", "--cluster-objects", str(cluster / "defaults.yaml"), str(cluster / "small.yaml")]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["spec"]["schedulingPolicy"]["queue"] == "team-a"
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "1",
            "kind": {"group": "training.kubedl.io", "version": "v1alpha1", "kind": "TFJob"},
            "resource": {"group": "training.kubedl.io", "version": "v1alpha1", "resource": "tfjobs"},
            "namespace": "team-a",
            "operation": "CREATE",
            "userInfo": {"username": "u"},
            "object": tfjob(),
        },
    }
    (cluster / "review.json").write_text(json.dumps(review))
    assert (
        main(["review", "validate", str(cluster / "review.json"), "--cluster-objects", str(cluster / "cluster.yaml")])
        == 0
    )
    response = json.loads(capsys.readouterr().out)["response"]
    assert response["allowed"] is False and "team-a-gpus" in response["status"]["message"]


def test_an_unreadable_export_is_a_usage_error(cluster: Path, capsys):
    (cluster / "broken.yaml").write_text("items: [\n")
    assert main(["validate", "--cluster-objects", str(cluster / "broken.yaml"), str(cluster / "big.yaml")]) == 2
    assert "--cluster-objects" in capsys.readouterr().err
    assert main(["validate", "--cluster-objects", str(cluster / "nowhere"), str(cluster / "big.yaml")]) == 2


def test_the_quick_parse_takes_the_flag():
    from jobgate.cli.offline import quick_validate_arguments
    from jobgate.cli.parser import build_parser

    words = ["validate", "--cluster-objects", "a/", "--cluster-objects=b.yaml", "-o", "json", "job.yaml"]
    quick = quick_validate_arguments(words)
    assert quick is not None and quick.cluster_objects == ["a/", "b.yaml"]
    assert build_parser("validate").parse_args(words).cluster_objects == ["a/", "b.yaml"]
    assert quick_validate_arguments(["validate", "--cluster-objects=", "job.yaml"]) is None


def test_validate_with_a_kubectl_list_export_as_a_subprocess(cluster: Path):
    """The command as CI runs it: one `kubectl get ... -A -o yaml` export (a `kind: List`), exit 1
    for the job the cluster refuses and 0 for the one it admits."""
    command = [sys.executable, "-m", "jobgate", "validate", "--cluster-objects", str(cluster / "cluster.yaml")]
    denied = subprocess.run(
        [*command, str(cluster / "big.yaml")], check=False, capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert denied.returncode == 1, denied.stderr
    assert "[policy/max-gpus-per-job]" in denied.stdout and "Traceback" not in denied.stderr
    admitted = subprocess.run(
        [*command, str(cluster / "small.yaml")], check=False, capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert admitted.returncode == 0, admitted.stdout + admitted.stderr


@pytest.mark.parametrize(
    ("api_version", "request_"),
    [
        ("resource.k8s.io/v1", {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 8}}),
        ("resource.k8s.io/v1beta2", {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 8}}),
        ("resource.k8s.io/v1beta1", {"name": "gpus", "deviceClassName": "gpu.nvidia.com", "count": 8}),
    ],
)
def test_a_claim_template_of_each_read_version_is_counted(tmp_path: Path, capsys, api_version, request_):
    template = {**TEMPLATE, "apiVersion": api_version, "spec": {"spec": {"devices": {"requests": [request_]}}}}
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(export(NAMESPACE, GPU_POLICY, template)))
    job = tfjob(gpus=0)
    worker = job["spec"]["tfReplicaSpecs"]["Worker"]
    worker["replicas"] = 3  # 3 pods × 8 claimed GPUs = 24 > 16
    worker["template"]["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": "eight-gpus"}]
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
    assert main(["validate", "--cluster-objects", str(tmp_path / "cluster.yaml"), str(tmp_path / "job.yaml")]) == 1
    assert "exceeds 16 GPUs per job (ClusterTrainingJobPolicy team-a-gpus)" in capsys.readouterr().out
