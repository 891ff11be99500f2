"""jobgate's rules enforced by the apiserver alone: a control plane of its own with
``manifests/overlays/cel-only`` applied (the CRDs with their schema keywords and CEL rules, the
MutatingAdmissionPolicies) and no webhook. Every test vector (tests/cel_vectors, read by
testkit/cel_corpus.py) and every example goes to it and to the webhook's rules
(envtest/cel_differential.py): where the catalogue says the apiserver enforces a rule, it refuses
the job at that rule's field; it refuses nothing the webhook admits; and it stores a valid job as
``jobgate default`` prints it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from envtest.cel_differential import Apiserver, Case, Outcome, install, plane_kubectl, run_case
from envtest.harness import ControlPlane
from jobgate.generate.cel.generate import family_rules, rules_for
from jobgate.generate.manifests import every_family_kind
from testkit.cel_corpus import enforced_examples, enforced_vectors, wait_for_policies
from tests.e2e.conftest import started

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = "cel"
VECTORS = enforced_vectors()
EXAMPLES = enforced_examples()


@pytest.fixture(scope="module")
def cel_only() -> Iterator[Apiserver]:
    with started(ControlPlane()) as plane:
        kubectl = plane_kubectl(plane)
        install(kubectl, str(REPO / "manifests/overlays/cel-only"))
        kubectl("create", "namespace", NAMESPACE)
        apiserver = Apiserver(str(plane.kubeconfig))
        wait_for_policies(apiserver, mutating=True, namespace=NAMESPACE)
        yield apiserver


def _check(outcome: Outcome) -> None:
    assert not outcome.disagreements, "\n".join(outcome.disagreements)
    if not outcome.webhook_errors:
        assert outcome.stored is not None, "the apiserver refuses a job the webhook admits"


ENFORCED: dict[str, set[str]] = {}


@pytest.mark.parametrize("vector", VECTORS, ids=[v.id for v in VECTORS])
def test_vector(cel_only: Apiserver, vector):
    outcome = run_case(cel_only, Case(vector.id, vector.obj, vector.old), NAMESPACE)
    ENFORCED.setdefault(vector.family, set()).update(outcome.enforced_rules)
    _check(outcome)


@pytest.mark.parametrize("case", EXAMPLES, ids=[c.name for c in EXAMPLES])
def test_example(cel_only: Apiserver, case: Case):
    _check(run_case(cel_only, case, NAMESPACE))


def test_every_rule_the_table_marks_was_enforced_by_the_apiserver(cel_only: Apiserver):
    """Each rule the catalogue places in the apiserver was seen refusing a job there (run after the
    vectors; on its own it sends them itself)."""
    if not ENFORCED:
        for vector in VECTORS:
            outcome = run_case(cel_only, Case(vector.id, vector.obj, vector.old), NAMESPACE)
            ENFORCED.setdefault(vector.family, set()).update(outcome.enforced_rules)
    missing = sorted(
        f"{kind.family}: {rule.id}"
        for kind in every_family_kind()
        if family_rules(kind) is not None
        for rule in rules_for(kind)
        if rule.where.in_apiserver
        and not rule.id.startswith("schema/")
        and rule.id not in ENFORCED.get(kind.family, set())
    )
    assert not missing, missing
