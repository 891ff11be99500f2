"""The pure parts of the peer benchmark (envtest/peers.py): the wrapper module built for each Go
controller, the audit-log count of a controller's requests, and what each one's right status is."""

from __future__ import annotations

import json

from envtest.peers import (
    CONTROLLER_USER,
    KUBEDL,
    TRAINING_OPERATOR,
    audit_breakdown,
    audit_requests,
    go_directive,
    jobgate_status_right,
    kubedl_status_right,
    replace_block,
    training_operator_status_right,
    training_operator_webhooks,
    wrapper_gomod,
)

KUBEDL_GOMOD = """module github.com/alibaba/kubedl

go 1.16

require (
\tk8s.io/api v0.22.6
\tsigs.k8s.io/controller-runtime v0.10.3
)

replace (
\tk8s.io/api => k8s.io/api v0.22.6 // the staging twin
\tk8s.io/client-go => k8s.io/client-go v0.22.6

\tgithub.com/example/local => ./hack/local
)

replace github.com/one/line => github.com/one/line v1.2.3
"""


def test_the_replace_block_is_copied_without_comments_or_local_paths():
    assert replace_block(KUBEDL_GOMOD) == [
        "k8s.io/api => k8s.io/api v0.22.6",
        "k8s.io/client-go => k8s.io/client-go v0.22.6",
        "github.com/one/line => github.com/one/line v1.2.3",
    ]


def test_a_go_mod_without_replacements_gives_none():
    assert replace_block("module x\n\ngo 1.23\n\nrequire k8s.io/api v0.31.3\n") == []


def test_the_wrapper_requires_the_peer_and_keeps_its_replacements():
    text = wrapper_gomod(KUBEDL, KUBEDL_GOMOD)
    assert "module jobgate.invalid/kubedlbuild" in text
    assert "require github.com/alibaba/kubedl v0.5.0" in text
    assert "\tk8s.io/client-go => k8s.io/client-go v0.22.6" in text
    assert "./hack/local" not in text
    # kubedl says go 1.16; the wrapper asks for the pruned module graph of 1.22 at least.
    assert "\ngo 1.22\n" in text


def test_the_go_directive_is_the_peers_when_newer():
    assert go_directive("module x\n\ngo 1.23\n") == "1.23"
    assert go_directive("module x\n\ngo 1.16\n") == "1.22"
    assert go_directive("module x\n") == "1.22"
    text = wrapper_gomod(TRAINING_OPERATOR, "module github.com/kubeflow/training-operator\n\ngo 1.23\n")
    assert "replace" not in text and "\ngo 1.23\n" in text


def _event(
    audit_id: str,
    verb: str,
    *,
    stage: str = "ResponseComplete",
    user: str = CONTROLLER_USER,
    resource: str = "pods",
    subresource: str | None = None,
) -> str:
    target = {"resource": resource, "namespace": "bench"}
    if subresource:
        target["subresource"] = subresource
    event = {"auditID": audit_id, "verb": verb, "stage": stage, "user": {"username": user}, "objectRef": target}
    return json.dumps(event)


def test_audit_requests_count_each_request_once_for_the_controller_only():
    lines = [
        _event("1", "create"),
        _event("2", "watch", stage="ResponseStarted"),
        _event("2", "watch"),  # the same watch, when it ends
        _event("3", "list"),
        _event("4", "update"),
        _event("5", "create", user="jobgate-envtest-admin"),  # the bench's own
        "",
        '{"auditID": "6", "verb": "get", "user": {"usern',  # cut by the apiserver's exit
    ]
    assert audit_requests(lines) == {"CREATE": 1, "LIST": 1, "UPDATE": 1, "WATCH": 1}


def _job(status: dict) -> dict:
    return {"apiVersion": "training.kubedl.io/v1alpha1", "kind": "TFJob", "status": status}


CREATED = {"type": "Created", "status": "True"}


def test_jobgate_is_right_with_every_replica_active_and_none_running():
    status = {
        "conditions": [CREATED],
        "replicaStatuses": {"PS": {"active": 1}, "Worker": {"active": 4}},
        "replicaSummary": "PS 0/1, Worker 0/4",
    }
    assert jobgate_status_right(_job(status))
    assert not jobgate_status_right(_job({**status, "replicaStatuses": {"PS": {"active": 1}, "Worker": {"active": 3}}}))
    assert not jobgate_status_right(_job({**status, "conditions": []}))
    assert not jobgate_status_right(_job({}))


def test_kubedl_is_right_with_a_start_time_and_every_replica_type():
    # What KubeDL v0.5.0 writes for a job whose pods exist but do not run (seen on the test plane).
    status = {"replicaStatuses": {"PS": {}, "Worker": {}}, "startTime": "2026-11-26T18:37:59Z"}
    assert kubedl_status_right(_job(status))
    assert not kubedl_status_right(_job({"replicaStatuses": {"PS": {}}, "startTime": "2026-11-26T18:37:59Z"}))
    assert not kubedl_status_right(_job({"replicaStatuses": {"PS": {}, "Worker": {}}}))


def test_training_operator_is_right_when_created_with_every_replica_type():
    status = {"conditions": [CREATED], "replicaStatuses": {"PS": {}, "Worker": {}}}
    assert training_operator_status_right(_job(status))
    assert not training_operator_status_right(_job({**status, "conditions": [{"type": "Created", "status": "False"}]}))
    assert not training_operator_status_right(_job({"conditions": [CREATED], "replicaStatuses": {"Worker": {}}}))


WEBHOOKS = """---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validating-webhook-configuration
webhooks:
- admissionReviewVersions: [v1]
  clientConfig:
    service:
      name: webhook-service
      namespace: system
      path: /validate-kubeflow-org-v1-tfjob
  failurePolicy: Fail
  name: validator.tfjob.training-operator.kubeflow.org
  rules:
  - apiGroups: [kubeflow.org]
    apiVersions: [v1]
    operations: [CREATE, UPDATE]
    resources: [tfjobs]
  sideEffects: None
"""


def test_training_operators_webhooks_are_named_as_it_expects_and_select_no_namespace():
    (configuration,) = training_operator_webhooks(WEBHOOKS)
    assert configuration["metadata"]["name"] == "validator.training-operator.kubeflow.org"
    (webhook,) = configuration["webhooks"]
    assert webhook["clientConfig"]["service"] == {
        "name": "training-operator",
        "namespace": "kubeflow",
        "path": "/validate-kubeflow-org-v1-tfjob",
    }
    assert webhook["namespaceSelector"] == {"matchLabels": {"jobgate.bench/never": "selected"}}
    assert webhook["rules"][0]["resources"] == ["tfjobs"]


def test_the_breakdown_names_the_resource_and_subresource():
    lines = [
        _event("1", "create"),
        _event("2", "create"),
        _event("3", "create", resource="events"),
        _event("4", "update", resource="tfjobs", subresource="status"),
        _event("5", "update", resource="tfjobs", subresource="status", stage="ResponseStarted"),
        _event("5", "update", resource="tfjobs", subresource="status"),
    ]
    assert audit_breakdown(lines) == {"CREATE pods": 2, "UPDATE tfjobs/status": 2, "CREATE events": 1}
    assert list(audit_breakdown(lines)) == ["CREATE pods", "UPDATE tfjobs/status", "CREATE events"]


def test_kueue_runs_on_loopback_with_nothing_to_wait_for():
    from pathlib import Path

    from envtest.kueue import KUEUE, configuration

    assert KUEUE.module == "sigs.k8s.io/kueue" and KUEUE.package == "sigs.k8s.io/kueue/cmd/kueue"
    config = configuration(["kubeflow.org/pytorchjob"], 8081, 9443, Path("/tmp/certs"))
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2" and config["kind"] == "Configuration"
    assert config["health"]["healthProbeBindAddress"] == "127.0.0.1:8081"
    assert config["webhook"] == {"port": 9443, "host": "127.0.0.1", "certDir": "/tmp/certs"}
    assert config["metrics"] == {"bindAddress": "0"}
    # Neither waits on objects nothing here makes (a lease holder; webhook configurations to inject a CA into).
    assert config["leaderElection"] == {"leaderElect": False}
    assert config["internalCertManagement"] == {"enable": False}
    assert config["integrations"] == {"frameworks": ["kubeflow.org/pytorchjob"]}
    assert config["featureGates"] == {"VisibilityOnDemand": False}  # its own server, on every interface


def test_a_peer_of_several_commands_is_cached_only_with_every_binary_of_its_stamp(tmp_path, monkeypatch):
    from envtest.volcano import VOLCANO

    monkeypatch.setenv("JOBGATE_PEERS_CACHE", str(tmp_path))
    assert list(VOLCANO.binaries()) == ["vc-scheduler", "vc-controller-manager", "vc-webhook-manager"]
    directory = VOLCANO.directory
    directory.mkdir()
    for name in VOLCANO.binaries():
        (directory / name).write_text("#!/bin/sh\n")
        (directory / name).chmod(0o755)
    assert VOLCANO.cached() is None  # no stamp: an interrupted build
    stamp = {"peer": "volcano", "binaries": {"vc-scheduler": VOLCANO.package}}
    (directory / "build-info.json").write_text(json.dumps(stamp))
    assert VOLCANO.cached() is None  # built before the other commands were added
    (directory / "build-info.json").write_text(json.dumps({**stamp, "binaries": VOLCANO.binaries()}))
    assert VOLCANO.cached() == directory / "vc-scheduler"
    (directory / "vc-webhook-manager").unlink()
    assert VOLCANO.cached() is None


def test_a_single_command_peers_stamp_without_binaries_still_counts(tmp_path, monkeypatch):
    monkeypatch.setenv("JOBGATE_PEERS_CACHE", str(tmp_path))
    assert KUBEDL.binaries() == {"kubedl": "github.com/alibaba/kubedl"}
    KUBEDL.directory.mkdir()
    (KUBEDL.directory / "kubedl").write_text("#!/bin/sh\n")
    (KUBEDL.directory / "kubedl").chmod(0o755)
    (KUBEDL.directory / "build-info.json").write_text(json.dumps({"peer": "kubedl"}))
    assert KUBEDL.cached() == KUBEDL.directory / "kubedl"


VOLCANO_WEBHOOKS = """{{- if .Values.custom.admission_enable }}

{{- if .Values.custom.enabled_admissions | regexMatch "/jobs/mutate" }}
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: volcano-admission-service-jobs-mutate
  {{- if .Values.custom.common_labels }}
  labels:
    {{- toYaml .Values.custom.common_labels | nindent 4 }}
  {{- end }}
webhooks:
  - clientConfig:
      service:
        name: {{ .Release.Name }}-admission-service
        namespace: {{ .Release.Namespace }}
        path: /jobs/mutate
    name: mutatejob.volcano.sh
    namespaceSelector:
      matchExpressions:
        - key: kubernetes.io/metadata.name
          operator: NotIn
          values:
            - {{ .Release.Namespace }}
{{- end }}

{{- if .Values.custom.enabled_admissions | regexMatch "/pods/validate" }}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: volcano-admission-service-pods-validate
webhooks:
  - clientConfig:
      service:
        path: /pods/validate
    name: validatepod.volcano.sh
{{- end }}
{{- end }}
"""


def test_volcanos_chart_webhooks_are_rendered_with_its_values_and_called_by_url():
    import base64

    from envtest.volcano import webhook_configurations

    values = {"custom": {"admission_enable": True, "enabled_admissions": "/jobs/mutate,/jobs/validate"}}
    documents = webhook_configurations("https://127.0.0.1:9443/", b"CA", VOLCANO_WEBHOOKS, values)
    # /pods/validate is not in enabled_admissions; common_labels is unset, so no labels.
    assert [d["metadata"] for d in documents] == [{"name": "volcano-admission-service-jobs-mutate"}]
    webhook = documents[0]["webhooks"][0]
    assert webhook["clientConfig"] == {
        "url": "https://127.0.0.1:9443/jobs/mutate",
        "caBundle": base64.b64encode(b"CA").decode(),
    }
    assert webhook["namespaceSelector"]["matchExpressions"][0]["values"] == ["volcano-system"]
    assert webhook_configurations("https://h", b"", VOLCANO_WEBHOOKS, {"custom": {}}) == []


def test_a_chart_construct_the_renderer_does_not_know_is_refused():
    import pytest

    from envtest.volcano import TemplateError, render_chart_template

    with pytest.raises(TemplateError, match="unknown template expression"):
        render_chart_template("name: {{ .Values.other }}\n", {})
    with pytest.raises(TemplateError, match="unknown template action"):
        render_chart_template("{{- range .Values.list }}\n", {})
    with pytest.raises(TemplateError, match="without its end"):
        render_chart_template("{{- if .Values.custom.x }}\n", {"custom": {"x": True}})


V1_11_CHART_SCHEDULER_CONF = """actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
- plugins:
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


def test_hierarchical_queues_are_the_capacity_plugin_with_enable_hierarchy_in_place_of_the_queue_plugin():
    import pytest
    import yaml

    from envtest.volcano import hierarchical_scheduler_conf

    conf = yaml.safe_load(hierarchical_scheduler_conf(V1_11_CHART_SCHEDULER_CONF))
    assert conf["actions"] == "enqueue, allocate, backfill"
    assert [p["name"] for p in conf["tiers"][1]["plugins"]] == ["drf", "predicates", "capacity", "nodeorder"]
    assert conf["tiers"][1]["plugins"][2] == {"name": "capacity", "enableHierarchy": True}
    # v1.10's chart already names capacity: it gains the flag.
    capacity = V1_11_CHART_SCHEDULER_CONF.replace("proportion", "capacity")
    assert yaml.safe_load(hierarchical_scheduler_conf(capacity))["tiers"][1]["plugins"][2]["enableHierarchy"] is True
    with pytest.raises(ValueError, match="found 0"):
        hierarchical_scheduler_conf(V1_11_CHART_SCHEDULER_CONF.replace("proportion", "binpack"))


def test_each_volcano_version_has_its_own_cache_and_the_unserved_one_says_how_to_build_it(tmp_path, monkeypatch):
    from envtest.versions import VOLCANO_HIERARCHY_VERSION, VOLCANO_VERSION
    from envtest.volcano import HIERARCHICAL, VOLCANO, unavailable_reason

    monkeypatch.setenv("JOBGATE_PEERS_CACHE", str(tmp_path))
    assert VOLCANO.directory == tmp_path / f"volcano-{VOLCANO_VERSION}"
    assert HIERARCHICAL.directory == tmp_path / f"volcano-{VOLCANO_HIERARCHY_VERSION}"
    assert HIERARCHICAL.binaries() == VOLCANO.binaries()
    assert "--git DIR" in (unavailable_reason(HIERARCHICAL) or "")
    assert "--git" not in (unavailable_reason(VOLCANO) or "")


def _git_repository(path, gomod: str, tag: str) -> None:
    import subprocess

    path.mkdir()
    (path / "go.mod").write_text(gomod)
    identity = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    for command in (["init", "-q"], ["add", "go.mod"], [*identity, "commit", "-qm", "x"], ["tag", tag]):
        subprocess.run(["git", "-C", str(path), *command], check=True, capture_output=True)


def test_a_build_from_git_needs_the_versions_tag_and_volcanos_module(tmp_path, monkeypatch):
    import shutil

    import pytest

    from envtest.volcano import build_from_git, tag_commit, volcano_peer

    monkeypatch.setenv("JOBGATE_PEERS_CACHE", str(tmp_path / "cache"))
    repository = tmp_path / "repo"
    _git_repository(repository, "module example.invalid/other\n", "v9.9.9")
    assert len(tag_commit(repository, "v9.9.9")) == 40
    with pytest.raises(RuntimeError, match=r"has no tag v9\.9\.8"):
        build_from_git(volcano_peer("v9.9.8"), repository, log=lambda _: None)
    if shutil.which("go") is None:
        pytest.skip("no go: the module check comes after go is found")
    with pytest.raises(RuntimeError, match=r"is not module volcano\.sh/volcano"):
        build_from_git(volcano_peer("v9.9.9"), repository, log=lambda _: None)
    # Nothing half-built is left behind to be taken for a build.
    assert [p.name for p in (tmp_path / "cache").iterdir()] == []


def test_a_build_from_git_keeps_its_trees_crds_and_chart_as_the_peers_source(tmp_path, monkeypatch):
    import json as json_module

    from envtest.volcano import SOURCE_COPY, crds, source, volcano_peer

    monkeypatch.setenv("JOBGATE_PEERS_CACHE", str(tmp_path))
    peer = volcano_peer("v9.9.9")
    kept = peer.directory / SOURCE_COPY / "config/crd/volcano/bases"
    kept.mkdir(parents=True)
    (kept / "scheduling.volcano.sh_queues.yaml").write_text("kind: CustomResourceDefinition\n")
    for name in peer.binaries():
        (peer.directory / name).write_text("#!/bin/sh\n")
        (peer.directory / name).chmod(0o755)
    (peer.directory / "build-info.json").write_text(json_module.dumps({"binaries": peer.binaries()}))
    assert source(peer) == peer.directory / SOURCE_COPY
    assert [p.name for p in crds(peer)] == ["scheduling.volcano.sh_queues.yaml"]


def test_a_volcano_the_module_proxy_refuses_is_pointed_at_a_build_from_git(tmp_path, monkeypatch, capsys):
    from envtest import volcano

    def refused(peer, log=print):
        raise RuntimeError(f"go mod download -json volcano.sh/volcano@{peer.version} failed")

    monkeypatch.setenv("JOBGATE_PEERS_CACHE", str(tmp_path))
    monkeypatch.setattr(volcano, "build", refused)
    assert volcano.main(["--version", "v1.11.0"]) == 1
    assert "build the release's tag from git: --git DIR" in capsys.readouterr().err


def test_an_installed_build_is_found_by_its_stamp_and_replaces_an_older_one(tmp_path, monkeypatch):
    """``install``, shared by the module-proxy and the git builds: the scratch directory becomes the
    peer's cache directory, its stamp naming the commands (and what else the builder records)."""
    import time

    from envtest.peers import _STAMP, Peer, install

    monkeypatch.setenv("JOBGATE_PEERS_CACHE", str(tmp_path / "peers"))
    peer = Peer("toy", "example.com/toy", "v1.0.0", "example.com/toy/cmd/toy", "config/crd",
                commands=(("toy-a", "example.com/toy/cmd/a"), ("toy-b", "example.com/toy/cmd/b")))  # fmt: skip
    peer.directory.mkdir(parents=True)
    (peer.directory / "stale").write_text("an older build")
    scratch = tmp_path / "peers" / ".scratch"
    scratch.mkdir()
    for name in peer.binaries():
        (scratch / name).write_text("#!/bin/sh\n")
        (scratch / name).chmod(0o755)
    install(peer, scratch, peer.binaries(), "go1.26.8", time.monotonic(), source={"tag": "v1.0.0"})
    assert not scratch.exists() and not (peer.directory / "stale").exists()
    assert peer.cached() == peer.directory / "toy-a"
    stamp = json.loads((peer.directory / _STAMP).read_text())
    assert stamp["binaries"] == peer.binaries()
    assert stamp["source"] == {"tag": "v1.0.0"} and stamp["go"] == "go1.26.8"
    assert list(stamp)[:5] == ["peer", "module", "version", "package", "binaries"]
