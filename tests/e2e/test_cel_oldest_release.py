"""The generated CRDs on the oldest Kubernetes release jobgate supports (``OLDEST_KUBERNETES_VERSION``,
1.30): every rule loads (an apiserver refuses a CRD whose rule calls a function it does not know,
and the whole install with it), and a smoke run of the differential suite agrees there too.

1.30 has no MutatingAdmissionPolicy (``cel-only-validation``): the CRDs' schema defaults fill only
absent fields. So the jobs are sent as the webhook's defaults leave them (``jobgate default``), and
the stored objects are not compared: this shows the validation, the rules of all stages, on 1.30.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from envtest.cel_differential import Apiserver, Case, defaulted, install, plane_kubectl, run_case
from envtest.harness import ControlPlane
from envtest.versions import OLDEST_KUBERNETES_VERSION
from testkit.cel_corpus import enforced_examples, enforced_vectors, wait_for_policies
from tests.e2e.conftest import started

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = "cel-oldest"
VECTORS = enforced_vectors()
EXAMPLES = enforced_examples()


@pytest.fixture(scope="module")
def oldest() -> Iterator[Apiserver]:
    with started(ControlPlane.oldest()) as plane:
        kubectl = plane_kubectl(plane)
        assert OLDEST_KUBERNETES_VERSION in kubectl("version", "-o", "json")
        install(kubectl, str(REPO / "manifests/overlays/cel-only-validation"))
        kubectl("create", "namespace", NAMESPACE)
        apiserver = Apiserver(str(plane.kubeconfig))
        wait_for_policies(apiserver, mutating=False, namespace=NAMESPACE)
        yield apiserver


@pytest.mark.parametrize("case", [Case(v.id, v.obj, v.old) for v in VECTORS] + EXAMPLES, ids=lambda c: c.name)
def test_the_apiserver_agrees_with_the_webhook(oldest: Apiserver, case: Case):
    outcome = run_case(oldest, defaulted(case), NAMESPACE)
    assert not outcome.disagreements, "\n".join(outcome.disagreements)
