"""The oldest Kubernetes release jobgate supports (``OLDEST_KUBERNETES_VERSION``), on a real
etcd + kube-apiserver built like the default plane (``ControlPlane.oldest()``).

jobgate's CRD validation rules and ValidatingAdmissionPolicies must load there. These tests show
the plane serves what they need (``admissionregistration.k8s.io/v1`` policies, CEL rules of the
1.29-era libraries) and that it really is that release: a rule calling the ``format`` library,
which Kubernetes 1.31 added, is refused. Locally they skip when the binaries cannot be built
(no Go toolchain); with CI=true a plane that cannot be built or started is a failure.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from envtest.harness import ControlPlane
from envtest.versions import KUBERNETES_VERSION, OLDEST_KUBERNETES_VERSION
from tests.e2e.conftest import REPO, Cluster, started

pytestmark = pytest.mark.e2e

GROUP = "oldest.jobgate.test"


@pytest.fixture(scope="module")
def oldest() -> Iterator[Cluster]:
    with started(ControlPlane.oldest()) as plane:
        yield Cluster(plane)


def crd(plural: str, rule: str) -> str:
    """A namespaced CRD whose spec carries ``rule`` over a bounded list of names."""
    return f"""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: {plural}.{GROUP}}}
spec:
  group: {GROUP}
  names: {{kind: {plural.capitalize()[:-1]}, listKind: {plural.capitalize()[:-1]}List, plural: {plural}}}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              names:
                type: array
                maxItems: 16
                items: {{type: string, maxLength: 63}}
            x-kubernetes-validations:
            - rule: {json.dumps(rule)}
              message: every name must be a DNS-1123 label
"""


def test_the_server_is_the_oldest_release(oldest: Cluster) -> None:
    version = json.loads(oldest.kubectl("version", "-o", "json", check=True).stdout)
    assert version["serverVersion"]["gitVersion"] == OLDEST_KUBERNETES_VERSION
    assert version["clientVersion"]["gitVersion"] == OLDEST_KUBERNETES_VERSION
    assert "kube-controller-manager" not in oldest.plane.processes


def test_validating_admission_policies_are_served_in_v1(oldest: Cluster) -> None:
    listing = oldest.kubectl("api-resources", "--api-group=admissionregistration.k8s.io", "--no-headers", check=True)
    served = {(row.split()[0], row.split()[-3]) for row in listing.stdout.splitlines() if row.strip()}
    assert ("validatingadmissionpolicies", "admissionregistration.k8s.io/v1") in served, listing.stdout
    assert ("validatingadmissionpolicybindings", "admissionregistration.k8s.io/v1") in served, listing.stdout
    policy = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: oldest-replicas}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}
  validations:
  - expression: "object.spec.replicas <= 5"
    message: at most 5 replicas
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: oldest-replicas}
spec:
  policyName: oldest-replicas
  validationActions: [Deny]
"""
    oldest.kubectl("create", "-f", "-", input=policy, check=True)
    stored = oldest.get_json("validatingadmissionpolicies.v1.admissionregistration.k8s.io", "oldest-replicas")
    assert stored["apiVersion"] == "admissionregistration.k8s.io/v1"


def test_a_rule_of_the_1_29_libraries_is_accepted_and_enforced(oldest: Cluster) -> None:
    rule = "!has(self.names) || self.names.all(n, n.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'))"
    oldest.kubectl("create", "-f", "-", input=crd("gadgets", rule), check=True)
    oldest.kubectl("wait", "--for=condition=Established", f"crd/gadgets.{GROUP}", "--timeout=60s", check=True)
    good = f"apiVersion: {GROUP}/v1\nkind: Gadget\nmetadata: {{name: good, namespace: default}}\n"
    good += "spec: {names: [a, b-1]}\n"
    oldest.kubectl("create", "-f", "-", input=good, check=True)
    refused = oldest.kubectl("create", "-f", "-", input=good.replace("good", "bad").replace("b-1", "B_1"))
    assert refused.returncode != 0
    assert "every name must be a DNS-1123 label" in refused.stderr, refused.stderr


def test_a_rule_of_the_1_31_format_library_is_refused(oldest: Cluster) -> None:
    rule = "!has(self.names) || self.names.all(n, !format.dns1123Label().validate(n).hasValue())"
    refused = oldest.kubectl("create", "-f", "-", input=crd("doohickeys", rule))
    assert refused.returncode != 0, "a 1.30 apiserver has no format library"
    assert "undeclared reference to 'format'" in refused.stderr, refused.stderr
    assert oldest.kubectl("get", f"crd/doohickeys.{GROUP}").returncode != 0


@pytest.mark.parametrize("command", ["build", "up"])
def test_a_malformed_release_is_one_line_and_exit_2(command: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "envtest", command, "--version", "1.30"],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    expected = f"not a Kubernetes release: '1.30' (expected v1.MINOR.PATCH, e.g. {KUBERNETES_VERSION})"
    assert result.stderr.splitlines() == [expected]
