"""charts/jobgate: generated from manifests/ and current, lint-clean, its helm-unittest suite
passing, and rendering the same objects as the kustomize overlays it stands for."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from build_support import chart
from tests.chart.conftest import CHART, REPO, Helm, kustomize, objects, template

# The values that make the chart render exactly what an overlay renders. namespace.create and
# crds.keep differ from their defaults because the defaults deliberately differ from the base
# (see test_default_values_differ_from_the_base_only_where_helm_needs_it).
AS_THE_BASE = ("namespace.create=true", "crds.keep=false")
OVERLAYS = {
    "self-signed": (),
    "cert-manager": ("certificates.mode=certManager",),
    "volcano-admission-only": ("families={volcano}", "admissionOnly=true"),
    "kubeflow-admission-only": ("families={kubeflow}", "admissionOnly=true", "crds.install=false"),
    "jobset-admission-only": ("families={jobset}", "admissionOnly=true", "crds.install=false"),
    "trainer-admission-only": ("families={trainer}", "admissionOnly=true", "crds.install=false"),
}

# A values file that changes every knob at once (lint and unittest-independent rendering).
NON_DEFAULT = {
    "image": {"repository": "registry.example.com/jobgate", "tag": "9.9.9", "pullPolicy": "IfNotPresent"},
    "imagePullSecrets": [{"name": "pull"}],
    "families": ["kubedl", "volcano"],
    "certificates": {"mode": "certManager"},
    "crds": {"keep": False},
    "admission": {
        "failurePolicy": "Ignore",
        "namespaceSelector": {"matchLabels": {"jobgate": "on"}},
        "mutatingTimeoutSeconds": 7,
        "validatingTimeoutSeconds": 9,
    },
    "webhook": {
        "replicas": 3,
        # Helm merges maps into the defaults: a key is removed with null.
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": None},
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": None,  # not {}: Helm would merge it into the default
        "priorityClassName": "system-cluster-critical",
        "extraArgs": ["--shutdown-delay=7"],
        "podDisruptionBudget": {"maxUnavailable": 1},
    },
    "controller": {"replicas": 1},
    "metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}}},
}


# --- generated and current (no helm needed) -------------------------------------------------


def test_the_chart_is_current():
    stale = chart.differences()
    assert stale == [], f"run `python -m build_support.chart`; stale: {stale}"


def test_check_mode_reports_drift_and_write_repairs_it(tmp_path, capsys):
    target = tmp_path / "jobgate"
    assert chart.main(["--dir", str(target)]) == 0
    assert chart.main(["--dir", str(target), "--check"]) == 0
    deployment = target / "templates/base/deployment.yaml"
    deployment.write_text(deployment.read_text().replace(".Values.webhook.replicas", "3"))
    (target / "templates/leftover.yaml").write_text("kind: ConfigMap\n")
    (target / "tests").mkdir()
    (target / "tests/mine_test.yaml").write_text("suite: hand-written\n")  # never touched
    assert chart.main(["--dir", str(target), "--check"]) == 1
    err = capsys.readouterr().err
    assert "templates/base/deployment.yaml: differs" in err
    assert "templates/leftover.yaml: not generated" in err
    assert "tests/" not in err
    assert chart.main(["--dir", str(target)]) == 0
    assert chart.differences(target) == []
    assert not (target / "templates/leftover.yaml").exists()
    assert (target / "tests/mine_test.yaml").exists()


def _manifests_copy(tmp_path: Path) -> Path:
    copied = tmp_path / "manifests"
    shutil.copytree(REPO / "manifests", copied)
    return copied


ADDED_CRONJOB = """\
apiVersion: batch/v1
kind: CronJob
metadata:
  name: jobgate-certs-report
  namespace: jobgate-system
spec:
  schedule: "17 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
            - name: renew
              image: ghcr.io/jobgate/jobgate:0.1.0
              args: [certs, renew, --secret=jobgate-system/jobgate-webhook-tls]
"""


def test_an_object_added_to_the_self_signed_overlay_is_in_the_next_chart(tmp_path):
    """Generic: a CronJob added to overlays/self-signed needs no change to the generator."""
    manifests = _manifests_copy(tmp_path)
    overlay = manifests / "overlays/self-signed"
    (overlay / "renew.yaml").write_text(ADDED_CRONJOB)
    kustomization = yaml.safe_load((overlay / "kustomization.yaml").read_text())
    kustomization["resources"].append("renew.yaml")
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    files = chart.chart_files(manifests)
    text = files["templates/self-signed/renew.yaml"]
    assert text.startswith("{{- /* Generated from manifests/overlays/self-signed/renew.yaml")
    assert '{{- if eq .Values.certificates.mode "selfSigned" }}' in text
    assert 'image: {{ include "jobgate.image" . | quote }}' in text
    assert '"--secret={{ .Release.Namespace }}/jobgate-webhook-tls"' in text
    assert '(index .Values.certificates.selfSigned.extraArgs "jobgate-certs-report")' in text  # the args hook


def _patches(target: dict[str, str], patch: str) -> Callable[[dict], None]:
    return lambda kustomization: kustomization.setdefault("patches", []).append({"target": target, "patch": patch})


WEBHOOK_DEPLOYMENT = {"kind": "Deployment", "name": "jobgate"}
STRATEGIC_MERGE = "apiVersion: v1\nkind: Service\nmetadata: {name: jobgate-webhook}"


@pytest.mark.parametrize(
    ("overlay", "change", "message"),
    [
        (
            "cert-manager",
            lambda k: k.update(images=[{"name": "x"}]),
            "['images'] not supported by build_support/chart.py",
        ),
        ("cert-manager", lambda k: k["patches"].append({"patch": STRATEGIC_MERGE}), "a strategic-merge patch"),
        ("cert-manager", _patches({"kind": "Service", "name": "no"}, "- {op: add, path: /x, value: 1}"), "matches 0"),
        ("self-signed", _patches(WEBHOOK_DEPLOYMENT, "- {op: remove, path: /spec/replicas}"), "op 'remove' is not"),
        (
            "self-signed",
            _patches(WEBHOOK_DEPLOYMENT, "- {op: add, path: /spec/template/spec/containers/9/args/-, value: x}"),
            "containers/9/args/-: no such place",
        ),
        ("self-signed", lambda k: k["resources"].append("missing.yaml"), "missing.yaml: cannot read it"),
        (
            "self-signed",
            _patches(WEBHOOK_DEPLOYMENT, "- {op: replace, path: /spec/replicas, value: 5}"),
            "/spec/replicas is already templated by the chart",
        ),
    ],
)
def test_what_the_generator_cannot_carry_over_is_refused_with_the_reason(tmp_path, capsys, overlay, change, message):
    manifests = _manifests_copy(tmp_path)
    path = manifests / "overlays" / overlay / "kustomization.yaml"
    kustomization = yaml.safe_load(path.read_text())
    change(kustomization)
    path.write_text(yaml.safe_dump(kustomization))
    assert chart.main(["--dir", str(tmp_path / "chart"), "--manifests", str(manifests)]) == 2
    assert message in capsys.readouterr().err


def test_the_template_emitter_quotes_what_yaml_or_helm_would_misread():
    assert chart.scalar("Fail") == "Fail"
    assert chart.scalar("--port=9443") == "--port=9443"
    assert chart.scalar("yes") == '"yes"'  # YAML 1.1 would read a boolean
    assert chart.scalar("0777") == '"0777"'
    assert chart.scalar("a: b") == '"a: b"'
    assert chart.scalar("") == '""'
    assert chart.scalar("{{ .Values.x }}") == '{{ "{{ .Values.x }}" | toJson }}'  # not a template
    assert chart.scalar("jobgate-webhook.jobgate-system.svc") == '"jobgate-webhook.{{ .Release.Namespace }}.svc"'


# --- helm ----------------------------------------------------------------------------------------


def _values_file(tmp_path: Path, values: dict) -> str:
    path = tmp_path / "values.yaml"
    path.write_text(json.dumps(values))
    return str(path)


def test_helm_lint_with_the_defaults(helm: Helm):
    result = helm("lint", "--strict", str(CHART))
    assert "1 chart(s) linted, 0 chart(s) failed" in result.stdout


def test_helm_lint_with_every_value_changed(helm: Helm, tmp_path):
    result = helm("lint", "--strict", str(CHART), "--values", _values_file(tmp_path, NON_DEFAULT))
    assert "0 chart(s) failed" in result.stdout


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"admission": {"failurePolicy": "Sometimes"}}, "failurePolicy"),
        ({"families": ["kubeflow-v2"]}, "families"),
        ({"webhook": {"replica": 3}}, "replica"),  # a typo: additional properties are refused
        ({"certificates": {"mode": "vault"}}, "mode"),
        ({"admission": {"validatingTimeoutSeconds": 31}}, "validatingTimeoutSeconds"),
        ({"admissionOnly": True}, "admissionOnly: true needs families"),
    ],
)
def test_bad_values_are_refused_with_the_field(helm: Helm, tmp_path, values, message):
    # helm template, as helm install renders: helm lint reports a template's `fail` as INFO only.
    result = helm("template", "j", str(CHART), "--values", _values_file(tmp_path, values), check=False)
    assert result.returncode != 0
    assert message in result.stdout + result.stderr


def test_the_helm_unittest_suite_passes(helm: Helm):
    result = helm("unittest", "--color=false", str(CHART), check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Charts:      1 passed, 1 total" in result.stdout
    suites = len(list((CHART / "tests").glob("*_test.yaml")))
    assert f"Test Suites: {suites} passed, {suites} total" in result.stdout


def test_the_helm_unittest_suite_can_fail(helm: Helm, tmp_path):
    """The suite judges the chart: the same tests on a chart with a wrong default fail."""
    broken = tmp_path / "jobgate"
    shutil.copytree(CHART, broken)
    values = broken / "values.yaml"
    values.write_text(values.read_text().replace("failurePolicy: Fail", "failurePolicy: Ignore"))
    result = helm("unittest", "--color=false", str(broken), check=False)
    assert result.returncode != 0
    assert "failurePolicy" in result.stdout


# --- the chart and the overlays render the same objects --------------------------------------------


@pytest.mark.parametrize("overlay", sorted(OVERLAYS))
def test_the_chart_renders_exactly_what_the_overlay_renders(helm: Helm, kubectl: Path, overlay: str):
    expected = kustomize(kubectl, overlay)
    rendered = template(helm, *AS_THE_BASE, *OVERLAYS[overlay])
    assert sorted(rendered) == sorted(expected)
    for key, obj in expected.items():
        assert rendered[key] == obj, key


def test_default_values_differ_from_the_base_only_where_helm_needs_it(helm: Helm, kubectl: Path):
    """`helm template` with the defaults against `kubectl kustomize manifests/overlays/self-signed`.

    Two differences, both deliberate: no Namespace (helm install stores the release in the
    namespace before creating anything, so it must exist first; namespace.create renders it), and
    `helm.sh/resource-policy: keep` on the CRDs (helm uninstall would otherwise delete every job)."""
    expected = copy.deepcopy(kustomize(kubectl, "self-signed"))
    (namespace,) = [key for key in expected if key[0] == "Namespace"]
    del expected[namespace]
    crds = [key for key in expected if key[0] == "CustomResourceDefinition"]
    assert len(crds) == 14  # 10 job kinds, Volcano's Command, the two platform-policy kinds and their exceptions
    for key in crds:
        expected[key]["metadata"].setdefault("annotations", {})["helm.sh/resource-policy"] = "keep"
    rendered = template(helm)
    assert sorted(rendered) == sorted(expected)
    for key, obj in expected.items():
        assert rendered[key] == obj, key


def test_the_base_namespace_and_its_pod_security_label_follow_the_release(helm: Helm):
    rendered = objects(
        helm("template", "j", str(CHART), "--namespace", "ml-admission", "--set=namespace.create=true").stdout
    )
    namespace = rendered[("Namespace", "", "ml-admission")]
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert {key[1] for key in rendered if key[0] not in ("Namespace", "CustomResourceDefinition")} - {""} == {
        "ml-admission"
    }
    text = json.dumps(list(rendered.values()))
    assert "jobgate-system" not in text
    hook = rendered[("ValidatingWebhookConfiguration", "", "jobgate-validating")]["webhooks"][0]
    assert hook["clientConfig"]["service"]["namespace"] == "ml-admission"
    assert hook["namespaceSelector"]["matchExpressions"][0]["values"] == ["kube-system", "ml-admission"]


def test_every_value_changed_renders_what_was_asked(helm: Helm, tmp_path):
    rendered = objects(
        helm("template", "j", str(CHART), "-n", "jobgate-system", "-f", _values_file(tmp_path, NON_DEFAULT)).stdout
    )
    webhook = rendered[("Deployment", "jobgate-system", "jobgate")]
    pod = webhook["spec"]["template"]["spec"]
    (box,) = pod["containers"]
    assert webhook["spec"]["replicas"] == 3
    assert box["image"] == "registry.example.com/jobgate:9.9.9" and box["imagePullPolicy"] == "IfNotPresent"
    assert box["args"][-2:] == ["--families=kubedl,volcano", "--shutdown-delay=7"]
    assert box["resources"] == {"requests": {"cpu": "50m", "memory": "64Mi"}}
    assert "affinity" not in pod and pod["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert pod["priorityClassName"] == "system-cluster-critical" and pod["imagePullSecrets"] == [{"name": "pull"}]
    assert rendered[("PodDisruptionBudget", "jobgate-system", "jobgate")]["spec"] == {
        "selector": {"matchLabels": {"app.kubernetes.io/name": "jobgate"}},
        "maxUnavailable": 1,
    }
    for kind, name, timeout in (
        ("MutatingWebhookConfiguration", "jobgate-mutating", 7),
        ("ValidatingWebhookConfiguration", "jobgate-validating", 9),
    ):
        configuration = rendered[(kind, "", name)]
        assert configuration["metadata"]["annotations"] == {
            "cert-manager.io/inject-ca-from": "jobgate-system/jobgate-webhook"
        }
        (hook,) = configuration["webhooks"]
        assert hook["failurePolicy"] == "Ignore" and hook["timeoutSeconds"] == timeout
        assert hook["namespaceSelector"] == {"matchLabels": {"jobgate": "on"}}
        assert [rule["apiGroups"] for rule in hook["rules"]] == [["batch.volcano.sh"], ["training.kubedl.io"]]
    assert ("Job", "jobgate-system", "jobgate-certs") not in rendered
    assert rendered[("Certificate", "jobgate-system", "jobgate-webhook")]
    monitor = rendered[("ServiceMonitor", "jobgate-system", "jobgate-webhook")]
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    controller = rendered[("Deployment", "jobgate-system", "jobgate-controller")]
    assert controller["spec"]["replicas"] == 1
    assert "--families=kubedl,volcano" in controller["spec"]["template"]["spec"]["containers"][0]["args"]
