"""Offline policy checks never greener than the cluster, and policy mistakes said: unknown namespace
labels (a job not admitted), conflicting defaults (a warning), misplaced or malformed policies
(exit 2, every error on its own line in the apiserver's words)."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest
import yaml

from jobgate.cli import main
from jobgate.engine.context import CREATE, UPDATE, context_for
from jobgate.engine.views import NAMESPACE_NAME_LABEL as NAME
from jobgate.engine.views import ClusterViews, namespace_labels
from jobgate.policy.resolve import PolicySet, reads_unknown_labels, selected_by_unknown_labels
from jobgate.policy.review import NAMESPACE_LABELS_UNKNOWN
from jobgate.policy.schema_errors import field_path, schema_error
from jobgate.policy.snapshot import PolicySnapshot
from jobgate.review import kind_of, review_job
from jobgate.webhook.admission import Webhook, answer_review, parse_review
from testkit.builders import admission_review


def policy(name: str, spec: dict, *, namespace: str | None = None) -> dict:
    metadata = {"name": name} if namespace is None else {"name": name, "namespace": namespace}
    kind = "ClusterTrainingJobPolicy" if namespace is None else "TrainingJobPolicy"
    return {"apiVersion": "policy.jobgate.io/v1alpha1", "kind": kind, "metadata": metadata, "spec": spec}


def tfjob(namespace: str = "team-a", gpus: int = 8, workers: int = 3) -> dict:
    container = {"name": "tensorflow", "image": "tf:2", "resources": {"limits": {"nvidia.com/gpu": gpus}}}
    return {
        "apiVersion": "training.kubedl.io/v1alpha1",
        "kind": "TFJob",
        "metadata": {"name": "train", "namespace": namespace},
        "spec": {
            "tfReplicaSpecs": {"Worker": {"replicas": workers, "template": {"spec": {"containers": [container]}}}}
        },
    }


def mxjob(namespace: str = "team-a") -> dict:
    return {
        "apiVersion": "mxnet.mlkube.io/v1beta1",
        "kind": "MxJob",
        "metadata": {"name": "mx", "namespace": namespace},
        "spec": {
            "jobMode": "MXTrain",
            "replicaSpecs": [
                {"replicas": 1, "mxReplicaType": "WORKER", "PsRootPort": 9000, "template": _pod("mxnet")},
            ],
        },
    }


def _pod(name: str) -> dict:
    return {"spec": {"containers": [{"name": name, "image": "mx:1"}]}}


TEAM_A_GPUS = policy(
    "team-a-gpus", {"namespaceSelector": {"matchLabels": {"team": "a"}}, "limits": {"maxGPUsPerJob": 16}}
)


def views(*policies: dict, namespaces: dict | None = None) -> ClusterViews:
    return ClusterViews(policies=PolicySnapshot(policies, namespaces))


def verdict_in(views_: ClusterViews, job: dict, operation: str = CREATE):
    context = context_for(views_, operation=operation, namespace=job["metadata"]["namespace"])
    old = job if operation == UPDATE else None
    return review_job(kind_of(job), job, old, context=context)


# --- 5: never greener than the cluster ----------------------------------------------------------


def test_a_label_selector_over_unknown_labels_refuses_the_job_naming_the_policy():
    found = verdict_in(views(TEAM_A_GPUS), tfjob(gpus=1))  # within the cap: still not judged
    assert not found.allowed
    (error,) = found.errors
    assert error.field == "metadata.namespace"
    assert "ClusterTrainingJobPolicy team-a-gpus" in str(error)
    assert "--namespaces" in str(error) and "--cluster-objects" in str(error)
    assert error.rule == NAMESPACE_LABELS_UNKNOWN


def test_given_the_namespace_the_selection_is_made():
    labelled = views(TEAM_A_GPUS, namespaces={"team-a": {"team": "a"}})
    over = verdict_in(labelled, tfjob())
    assert [e.field for e in over.errors] == ["spec"] and "team-a-gpus" in str(over.errors[0])
    assert verdict_in(labelled, tfjob(gpus=1)).allowed
    elsewhere = views(TEAM_A_GPUS, namespaces={"team-a": {"team": "b"}})
    assert verdict_in(elsewhere, tfjob()).allowed


def test_a_namespace_missing_from_the_given_ones_is_unknown_too():
    assert not verdict_in(views(TEAM_A_GPUS, namespaces={"team-b": {"team": "b"}}), tfjob(gpus=1)).allowed


def test_what_the_name_gives_needs_no_namespace_object():
    by_name = policy(
        "by-name",
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "team-a"}},
            "limits": {"maxGPUsPerJob": 16},
        },
    )
    everywhere = policy("everywhere", {"namespaceSelector": {}, "limits": {"maxGPUsPerJob": 16}})
    malformed = policy("broken", {"namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Is"}]}})
    namespaced = policy("own", {"limits": {"maxGPUsPerJob": 16}}, namespace="team-a")
    found = verdict_in(views(by_name, everywhere, malformed, namespaced), tfjob())
    assert found.errors and all(e.field == "spec" for e in found.errors)  # the caps, judged; no guess needed
    assert verdict_in(views(by_name, everywhere, malformed, namespaced), tfjob(gpus=1)).allowed


def test_a_policy_that_cannot_apply_to_the_kind_needs_no_labels():
    volcano_only = policy(
        "volcano", {"namespaceSelector": {"matchLabels": {"team": "a"}}, "match": {"families": ["volcano"]}}
    )
    assert verdict_in(views(volcano_only), tfjob()).allowed
    assert selected_by_unknown_labels(PolicySet([volcano_only]), tfjob(), NAME) == []


def test_reads_unknown_labels():
    assert reads_unknown_labels({"matchLabels": {"team": "a"}}, NAME)
    assert reads_unknown_labels({"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}, NAME)
    assert not reads_unknown_labels(None, NAME)
    assert not reads_unknown_labels({}, NAME)
    assert not reads_unknown_labels({"matchLabels": {"kubernetes.io/metadata.name": "x"}}, NAME)
    assert not reads_unknown_labels({"matchLabels": "not a map"}, NAME)


def test_a_view_of_every_namespace_is_unaffected():
    """The webhook's view (its informer knows every namespace) has no knows_namespace: never "unknown"."""

    class WatchedNamespaces:
        def __init__(self, policies: list[dict]) -> None:
            self._policies = PolicySet(policies)

        def policies(self):
            return self._policies

        def namespace_labels(self, namespace: str):
            return namespace_labels(namespace, None)

    webhook_views = ClusterViews(policies=WatchedNamespaces([TEAM_A_GPUS]))
    assert context_for(webhook_views, namespace="team-a").namespace_labels_known
    assert verdict_in(webhook_views, tfjob()).allowed
    body = json.dumps(admission_review(tfjob())).encode()
    assert answer_review(parse_review(body), Webhook.VALIDATE, webhook_views)["response"]["allowed"] is True


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "policies.yaml").write_text(yaml.safe_dump(TEAM_A_GPUS))
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(tfjob(gpus=1)))
    namespaces = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": {"team": "a"}}}],
    }
    (tmp_path / "namespaces.yaml").write_text(yaml.safe_dump(namespaces))
    (tmp_path / "other.yaml").write_text(
        yaml.safe_dump({**namespaces, "items": [{"kind": "Namespace", "metadata": {"name": "b"}}]})
    )
    return tmp_path


def test_validate_without_the_namespace_exits_non_zero(files: Path, capsys):
    flags = ["--policies", str(files / "policies.yaml")]
    assert main(["validate", *flags, str(files / "job.yaml")]) == 1
    out = capsys.readouterr().out
    assert "ClusterTrainingJobPolicy team-a-gpus" in out and "[policy/namespace-labels-unknown]" in out
    assert main(["validate", *flags, "--namespaces", str(files / "other.yaml"), str(files / "job.yaml")]) == 1
    assert main(["validate", *flags, "--namespaces", str(files / "namespaces.yaml"), str(files / "job.yaml")]) == 0
    assert main(["validate", *flags, "--cluster-objects", str(files / "namespaces.yaml"), str(files / "job.yaml")]) == 0


def test_default_without_the_namespace_says_so_and_exits_2(files: Path, capsys):
    assert main(["default", "--policies", str(files / "policies.yaml"), str(files / "job.yaml")]) == 2
    err = capsys.readouterr().err
    assert "team-a-gpus" in err and "[policy/namespace-labels-unknown]" in err


def test_policy_explain_says_which_policies_it_cannot_place(files: Path, capsys):
    assert main(["policy", "explain", "--namespace", "team-a", "--policies", str(files / "policies.yaml")]) == 0
    assert "team-a-gpus" in capsys.readouterr().err


# --- 6: conflicting defaults said -----------------------------------------------------------------

QUEUE_A = policy("queue-a", {"priority": 5, "defaults": {"queue": "a", "labels": {"tier": "gold"}}})
QUEUE_B = policy("queue-b", {"priority": 5, "defaults": {"queue": "b", "labels": {"tier": "silver"}}})


def test_equal_priority_defaults_that_differ_warn_naming_both_policies_and_the_field():
    found = verdict_in(views(QUEUE_A, QUEUE_B, namespaces={"team-a": {}}), tfjob(gpus=1))
    assert found.allowed
    assert "queue" not in found.defaulted["spec"].get("schedulingPolicy", {})
    (queue,) = [w for w in found.warnings if w.startswith("defaults.queue:")]
    assert "ClusterTrainingJobPolicy queue-a" in queue and "ClusterTrainingJobPolicy queue-b" in queue
    assert "no default is applied" in queue
    assert any(w.startswith("defaults.labels[tier]:") for w in found.warnings)
    assert found.warning_rule(queue) == "policy/default-conflict"


def test_no_conflict_warning_on_update_or_for_a_field_the_kind_lacks():
    both = views(QUEUE_A, QUEUE_B, namespaces={"team-a": {}})
    assert not verdict_in(both, tfjob(gpus=1), operation=UPDATE).warnings
    mx = verdict_in(both, mxjob())
    assert not [w for w in mx.warnings if w.startswith("defaults.queue")]
    assert [w for w in mx.warnings if w.startswith("defaults.labels[tier]")]
    higher = policy("queue-c", {"priority": 6, "defaults": {"queue": "c"}})
    overridden = verdict_in(views(QUEUE_A, QUEUE_B, higher, namespaces={"team-a": {}}), tfjob(gpus=1))
    assert not [w for w in overridden.warnings if w.startswith("defaults.queue")]


def test_the_webhook_warns_of_conflicting_defaults():
    body = json.dumps(admission_review(tfjob(gpus=1))).encode()
    watched = views(QUEUE_A, QUEUE_B, namespaces={"team-a": {}})
    response = answer_review(parse_review(body), Webhook.VALIDATE, watched)["response"]
    assert response["allowed"] is True
    assert any("defaults.queue" in w and "queue-a" in w and "queue-b" in w for w in response["warnings"])
    mutated = answer_review(parse_review(body), Webhook.MUTATE, watched)["response"]
    ops = json.loads(base64.b64decode(mutated["patch"])) if "patch" in mutated else []
    assert not [op for op in ops if "queue" in op["path"]]


def test_validate_and_default_print_the_conflict(tmp_path: Path, capsys):
    (tmp_path / "policies.yaml").write_text(yaml.safe_dump_all([QUEUE_A, QUEUE_B]))
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(tfjob(gpus=1)))
    flags = ["--policies", str(tmp_path / "policies.yaml")]
    assert main(["validate", *flags, str(tmp_path / "job.yaml")]) == 0
    out = capsys.readouterr().out
    assert "warning: defaults.queue: the policies ClusterTrainingJobPolicy queue-a" in out
    assert "no default is applied [policy/default-conflict]" in out
    assert main(["default", *flags, str(tmp_path / "job.yaml")]) == 0
    assert "warning: defaults.queue: the policies ClusterTrainingJobPolicy queue-a" in capsys.readouterr().err


# --- 6: misplaced policies ----------------------------------------------------------------------


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


JOB = yaml.safe_dump(tfjob(gpus=1, namespace="default"))


def run_validate(tmp_path: Path, capsys, *flags: str) -> tuple[int, str]:
    job = write(tmp_path, "job/job.yaml", JOB)
    code = main(["validate", *flags, job])
    return code, capsys.readouterr().err


def test_a_namespaced_policy_without_a_namespace_is_an_error(tmp_path: Path, capsys):
    text = "apiVersion: policy.jobgate.io/v1alpha1\nkind: TrainingJobPolicy\nmetadata:\n  name: lost\nspec: {}\n"
    path = write(tmp_path, "lost.yaml", text)
    for flag in ("--policies", "--cluster-objects"):
        code, err = run_validate(tmp_path, capsys, flag, path)
        assert code == 2
        assert f"{path}:3: metadata.namespace: Required value" in err and "TrainingJobPolicy lost" in err


def test_a_document_of_a_kind_policies_does_not_know_is_an_error(tmp_path: Path, capsys):
    typo = "apiVersion: policy.jobgate.io/v1alpha1\nkind: ClusterTrainingJobPolicyy\nmetadata: {name: t}\n"
    path = write(tmp_path, "typo.yaml", typo)
    code, err = run_validate(tmp_path, capsys, "--policies", path)
    assert code == 2 and f'{path}:1: no matches for kind "ClusterTrainingJobPolicyy"' in err
    old = "apiVersion: policy.jobgate.io/v1beta1\nkind: ClusterTrainingJobPolicy\nmetadata: {name: t}\n"
    code, err = run_validate(tmp_path, capsys, "--cluster-objects", write(tmp_path, "old.yaml", old))
    assert code == 2 and 'in version "policy.jobgate.io/v1beta1"' in err
    config = "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
    path = write(tmp_path, "mixed.yaml", yaml.safe_dump(QUEUE_A) + config)
    code, err = run_validate(tmp_path, capsys, "--policies", path)
    assert code == 2 and f"{path}:" in err and "ConfigMap c: --policies reads" in err


def test_a_policies_path_holding_no_policy_is_an_error(tmp_path: Path, capsys):
    jobs = write(tmp_path, "jobs/a.yaml", JOB)
    code, err = run_validate(tmp_path, capsys, "--policies", str(Path(jobs).parent))
    assert code == 2 and "holds no ClusterTrainingJobPolicy or TrainingJobPolicy" in err
    empty = write(tmp_path, "none.yaml", "apiVersion: v1\nkind: List\nitems: []\n")
    code, _ = run_validate(tmp_path, capsys, "--policies", empty)
    assert code == 0  # an export of a cluster that has no policy
    not_namespaces = write(tmp_path, "ns.yaml", yaml.safe_dump(QUEUE_A))
    code, err = run_validate(tmp_path, capsys, "--namespaces", not_namespaces)
    assert code == 2 and "holds no Namespace" in err


def test_one_policy_given_twice_differently_is_an_error(tmp_path: Path, capsys):
    first = write(tmp_path, "a.yaml", yaml.safe_dump(QUEUE_A))
    changed = write(tmp_path, "b.yaml", yaml.safe_dump({**QUEUE_A, "spec": {"defaults": {"queue": "z"}}}))
    code, err = run_validate(tmp_path, capsys, "--policies", first, "--cluster-objects", changed)
    assert code == 2 and "ClusterTrainingJobPolicy queue-a is given twice" in err
    code, _ = run_validate(tmp_path, capsys, "--policies", first, "--cluster-objects", first)
    assert code == 0


# --- 7: malformed policies in the apiserver's words ----------------------------------------------

MALFORMED = """\
apiVersion: policy.jobgate.io/v1alpha1
kind: ClusterTrainingJobPolicy
metadata:
  name: bad
spec:
  enforcementAction: Dney
  limit: {}
  limits:
    maxGPUsPerJob: -1
    gpuResources:
      - name: a*b
  require:
    labels: [cost-center]
  defaults:
    queue: y
"""


def test_every_error_of_a_malformed_policy_on_its_own_line(tmp_path: Path, capsys):
    path = write(tmp_path, "bad.yaml", MALFORMED)
    code, err = run_validate(tmp_path, capsys, "--policies", path)
    assert code == 2
    lines = err.splitlines()
    assert "ClusterTrainingJobPolicy bad is invalid" in lines[0]
    assert lines[1:] == [
        f'{path}:6: spec.enforcementAction: Unsupported value: "Dney": supported values: "Deny", "Warn", "Audit"',
        f'{path}:7: unknown field "spec.limit"',
        f"{path}:9: spec.limits.maxGPUsPerJob: Invalid value: -1: must be greater than or equal to 0",
        f'{path}:11: spec.limits.gpuResources[0].name: Invalid value: "a*b": must be a resource name, '
        "optionally ending in a single '*'",
        f'{path}:13: spec.require.labels[0]: Invalid value: "cost-center": must be of type object',
        f"{path}:15: spec.defaults.queue: Invalid value: true: must be of type string (YAML reads the unquoted "
        "words y, yes, on, n, no, off, true, false as booleans: quote the value)",
    ]
    assert not re.search(r"Input should|type=|validation error|RequiredLabel|pydantic", err)


def test_errors_of_every_policy_file_are_listed(tmp_path: Path, capsys):
    one = write(tmp_path, "p/one.yaml", MALFORMED)
    two = write(
        tmp_path, "p/two.yaml", yaml.safe_dump(policy("x", {"limits": {"maxGPUsPerJob": 1, "maxGPUsPerPod": 2}}))
    )
    code, err = run_validate(tmp_path, capsys, "--policies", str(Path(one).parent))
    assert code == 2
    assert f"{one}:9: spec.limits.maxGPUsPerJob" in err
    assert f'{two}:6: spec.limits: Invalid value: "object": maxGPUsPerPod must not exceed maxGPUsPerJob' in err


def test_a_policy_inside_a_list_export_gets_its_own_lines(tmp_path: Path, capsys):
    export = {"apiVersion": "v1", "kind": "List", "items": [QUEUE_A, policy("neg", {"limits": {"maxGPUsPerPod": -2}})]}
    path = write(tmp_path, "export.json", json.dumps(export, indent=1))
    code, err = run_validate(tmp_path, capsys, "--cluster-objects", path)
    assert code == 2
    (line,) = [x for x in err.splitlines() if "maxGPUsPerPod" in x]
    number = int(line.split(":")[1])
    assert '"maxGPUsPerPod": -2' in Path(path).read_text().splitlines()[number - 1]


def test_policy_documents_read_as_jobs_use_the_same_words(tmp_path: Path, capsys):
    path = write(tmp_path, "bad.yaml", MALFORMED)
    assert main(["validate", "-o", "json", path]) == 1
    errors = json.loads(capsys.readouterr().out)["documents"][0]["errors"]
    messages = [e["message"] for e in errors]
    assert 'strict decoding error: unknown field "spec.limit"' in messages
    assert "spec.limits.maxGPUsPerJob: Invalid value: -1: must be greater than or equal to 0" in messages
    assert {e["rule"] for e in errors} == {"policy/schema"}


@pytest.mark.parametrize(
    ("entry", "text"),
    [
        ({"type": "missing", "loc": ("spec", "match", "kinds", 0, "kind")}, "spec.match.kinds[0].kind: Required value"),
        (
            {"type": "extra_forbidden", "loc": ("spec", "limits", "maxGpusPerJob"), "input": 3},
            'unknown field "spec.limits.maxGpusPerJob"',
        ),
        (
            {
                "type": "greater_than",
                "loc": ("spec", "limits", "gpuResources", 0, "weight"),
                "input": 0,
                "ctx": {"gt": 0.0},
            },
            "spec.limits.gpuResources[0].weight: Invalid value: 0: must be greater than 0",
        ),
        (
            {"type": "less_than_equal", "loc": ("spec", "priority"), "input": 2**31, "ctx": {"le": 2**31 - 1}},
            "spec.priority: Invalid value: 2147483648: must be less than or equal to 2147483647",
        ),
        (
            {"type": "int_parsing", "loc": ("spec", "priority"), "input": "high"},
            'spec.priority: Invalid value: "high": must be of type integer',
        ),
        (
            {"type": "list_type", "loc": ("spec", "require", "queues"), "input": "a"},
            'spec.require.queues: Invalid value: "a": must be of type array',
        ),
        (
            {"type": "string_too_short", "loc": ("spec", "defaults", "queue"), "input": "", "ctx": {"min_length": 1}},
            'spec.defaults.queue: Invalid value: "": must be at least 1 characters long',
        ),
        (
            {
                "type": "too_long",
                "loc": ("spec", "require", "queues"),
                "input": [],
                "ctx": {"max_length": 64, "actual_length": 65},
            },
            "spec.require.queues: Too many: 65: must have at most 64 items",
        ),
        (
            {
                "type": "value_error",
                "loc": ("spec", "require"),
                "msg": "Value error, imageRegistries: 'https://x/' must be a host[:port], or a host[:port]/path/ "
                "prefix ending in '/'",
                "input": {"imageRegistries": ["ok.io/", "https://x/"]},
            },
            'spec.require.imageRegistries[1]: Invalid value: "https://x/": must be a host[:port], or a '
            "host[:port]/path/ prefix ending in '/'",
        ),
        (
            {
                "type": "value_error",
                "loc": ("spec", "namespaceSelector", "matchExpressions", 0),
                "msg": "Value error, values: must be non-empty for In",
                "input": {"key": "a", "operator": "In"},
            },
            "spec.namespaceSelector.matchExpressions[0].values: Required value: must be non-empty for In",
        ),
        (
            {
                "type": "value_error",
                "loc": ("spec", "defaults", "labels"),
                "msg": "Value error, label value 'x y' of 'team' is not a valid label value",
                "input": {"team": "x y"},
            },
            'spec.defaults.labels[team]: Invalid value: "x y": must be a valid label value',
        ),
        (
            {"type": "string_type", "loc": ("spec", "namespaceSelector", "matchLabels", "team"), "input": 1},
            "spec.namespaceSelector.matchLabels[team]: Invalid value: 1: must be of type string",
        ),
    ],
)
def test_pydantic_errors_in_the_apiservers_words(entry: dict, text: str):
    assert schema_error(entry).text == text


def test_field_paths_are_spelt_as_the_apiserver_spells_them():
    assert field_path(("spec", "require", "labels", 0, "key")) == "spec.require.labels[0].key"
    assert field_path(("spec", "defaults", "labels", "team")) == "spec.defaults.labels[team]"


def test_every_refused_registry_and_default_label_is_listed():
    """The models stop at the first refused entry; the CRD checks each entry: so does the listing."""
    from pydantic import ValidationError

    from jobgate.policy.models import parse_policy
    from jobgate.policy.schema_errors import schema_errors

    spec = {
        "defaults": {"labels": {"a b": "x", "ok": "x y", "fine": "v"}},
        "require": {"imageRegistries": ["ok.io/", "https://x/", "r.io/ml"]},
    }
    with pytest.raises(ValidationError) as raised:
        parse_policy(policy("p", spec))
    assert [e.field for e in schema_errors(raised.value.errors(include_url=False))] == [
        "spec.defaults.labels[a b]",
        "spec.defaults.labels[ok]",
        "spec.require.imageRegistries[1]",
        "spec.require.imageRegistries[2]",
    ]
