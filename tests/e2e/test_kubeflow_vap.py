"""Kubeflow's job-only rules enforced by the apiserver alone: a control plane of its own (the newest
release and the oldest jobgate supports, 1.30) with Kubeflow's CRDs (the tests' stand-ins,
tests/e2e/crds/kubeflow: Kubeflow's schema, no rule of jobgate's) and ``manifests/kubeflow-policies``
(the ValidatingAdmissionPolicies the ``kubeflow-admission-only`` overlay and the chart install), and
no webhook (envtest/kubeflow_vap.py).

Every Kubeflow vector (tests/cel_vectors/kubeflow.yaml) and example goes to it and to the webhook's
rules (envtest/cel_differential.py), as jobgate's /mutate leaves it (``jobgate default``: the overlay
runs the mutating webhook before any validation, and jobgate generates no MutatingAdmissionPolicy for
Kubeflow's kinds): where the webhook refuses the job for a rule the catalogue places in a policy, the
policies refuse it (a rule written for Kubeflow's policies with the webhook's own line, word for word;
a shared rule carried from its CRD rule with the error's type at its field or the list or map above
it); they refuse nothing the webhook admits; every policy rule is seen refusing.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from envtest.cel_differential import Apiserver, Case, defaulted, plane_kubectl, run_case
from envtest.harness import ControlPlane
from envtest.kubeflow_vap import corpus, install_policies, policy_lines, policy_problems
from envtest.versions import OLDEST_KUBERNETES_VERSION
from jobgate.forms.catalogue import Where
from jobgate.generate.cel.generate import rules_for
from jobgate.generate.manifests import every_family_kind
from tests.e2e.conftest import started

pytestmark = pytest.mark.e2e

NAMESPACE = "kubeflow-vap"
CASES = corpus()
RELEASES = {"newest": ControlPlane, "oldest": ControlPlane.oldest}


@pytest.fixture(scope="module", params=sorted(RELEASES), ids=lambda r: f"kubernetes-{r}")
def policies_only(request: pytest.FixtureRequest) -> Iterator[Apiserver]:
    with started(RELEASES[request.param]()) as plane:
        kubectl = plane_kubectl(plane)
        if request.param == "oldest":
            assert OLDEST_KUBERNETES_VERSION in kubectl("version", "-o", "json")
        apiserver = Apiserver(str(plane.kubeconfig))
        install_policies(kubectl, apiserver, NAMESPACE)
        yield apiserver


# Per apiserver (each release's run): the rules seen refusing a job.
ENFORCED: dict[int, set[str]] = {}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_policies_agree_with_the_webhook(policies_only: Apiserver, case: Case):
    sent = defaulted(case)
    outcome = run_case(policies_only, sent, NAMESPACE)
    assert not outcome.disagreements, "\n".join(outcome.disagreements)
    problems, seen = policy_problems(sent, outcome)
    assert not problems, "\n".join(problems)
    if not outcome.webhook_errors:
        assert outcome.apiserver_allowed, outcome.apiserver_causes
    else:
        assert seen or not policy_lines(outcome)
    ENFORCED.setdefault(id(policies_only), set()).update(seen)


def test_every_policy_rule_refused_a_vector(policies_only: Apiserver):
    """Each rule the catalogue places in a Kubeflow policy was seen refusing a job there (run after
    the vectors; on its own it sends them itself)."""
    seen = ENFORCED.setdefault(id(policies_only), set())
    if not seen:
        for case in CASES:
            sent = defaulted(case)
            seen.update(policy_problems(sent, run_case(policies_only, sent, NAMESPACE))[1])
    placed = {
        rule.id
        for kind in every_family_kind()
        if kind.family == "kubeflow"
        for rule in rules_for(kind)
        if rule.where is Where.POLICY
    }
    assert placed, "no Kubeflow rule is placed in a policy"
    assert sorted(placed - seen) == []
