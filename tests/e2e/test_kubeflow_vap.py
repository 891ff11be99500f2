"""Kubeflow's job-only rules enforced by the apiserver alone: a control plane of its own (the newest
release and the oldest jobgate supports, 1.30) with Kubeflow's CRDs (the tests' stand-ins,
tests/e2e/crds/kubeflow: Kubeflow's schema, no rule of jobgate's) and ``manifests/kubeflow-policies``
(the ValidatingAdmissionPolicies the ``kubeflow-admission-only`` overlay and the chart install), and
no webhook.

Every Kubeflow vector (tests/cel_vectors/kubeflow.yaml) and example goes to it and to the webhook's
rules (envtest/cel_differential.py), as jobgate's /mutate leaves it (``jobgate default``: the overlay
runs the mutating webhook before any validation, and jobgate generates no MutatingAdmissionPolicy for
Kubeflow's kinds): where the webhook refuses the job for a rule the catalogue places in a policy, the
policies refuse it with that rule's line, the webhook's own (field, error type, value, detail); they
refuse nothing the webhook admits; every policy rule is seen refusing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from envtest.cel_corpus import vectors
from envtest.cel_differential import (
    POLICY_DENIAL,
    Apiserver,
    Case,
    Outcome,
    comparable,
    defaulted,
    install,
    plane_kubectl,
    run_case,
)
from envtest.harness import ControlPlane
from envtest.versions import OLDEST_KUBERNETES_VERSION
from jobgate.engine.fielderrors import FieldError
from jobgate.engine.review import kind_of
from jobgate.families.kubeflow.catalogue import POLICY_NOTE
from jobgate.generate.cel.catalogue import Rule, Where, explaining_rule
from jobgate.generate.cel.generate import rules_for
from jobgate.generate.manifests import every_family_kind
from tests.e2e.conftest import KUBEFLOW_TEST_CRDS, started

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
POLICIES = REPO / "manifests/kubeflow-policies"
NAMESPACE = "kubeflow-vap"
VECTORS = vectors("kubeflow")
EXAMPLES = [
    Case(f"{path.relative_to(REPO)}#{index}", document)
    for path in sorted((REPO / "examples").glob("*/kubeflow-*.yaml"))
    for index, document in enumerate(d for d in yaml.safe_load_all(path.read_text()) if d)
]
CASES = [Case(v.id, v.obj, v.old) for v in VECTORS] + EXAMPLES
PROBE = next(v for v in VECTORS if v.name == "mpijob without a launcher")
RELEASES = {"newest": ControlPlane, "oldest": ControlPlane.oldest}


@pytest.fixture(scope="module", params=sorted(RELEASES), ids=lambda r: f"kubernetes-{r}")
def policies_only(request: pytest.FixtureRequest) -> Iterator[Apiserver]:
    plane = RELEASES[request.param]()
    with started(plane) as started_plane:
        kubectl = plane_kubectl(started_plane)
        if request.param == "oldest":
            assert OLDEST_KUBERNETES_VERSION in kubectl("version", "-o", "json")
        install(kubectl, str(KUBEFLOW_TEST_CRDS), str(POLICIES))
        kubectl("create", "namespace", NAMESPACE)
        apiserver = Apiserver(str(started_plane.kubeconfig))
        _wait_for_policies(apiserver)
        yield apiserver


def _wait_for_policies(apiserver: Apiserver, timeout: float = 120) -> None:
    """Policies take effect a moment after they are written: until a job only they refuse is refused."""
    import time

    probe = defaulted(Case(PROBE.id, PROBE.obj))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, answer = apiserver.create(
            dict(probe.obj, metadata={"name": "probe", "namespace": NAMESPACE}), NAMESPACE, dry_run=True
        )
        if status >= 300 and POLICY_DENIAL in str(answer.get("message", "")):
            return
        time.sleep(0.5)
    raise AssertionError("the Kubeflow policies never took effect")


def policy_lines(outcome: Outcome) -> list[str]:
    return [m.split(POLICY_DENIAL, 1)[1] for _, m in outcome.apiserver_causes if POLICY_DENIAL in m]


def policy_errors(case: Case, outcome: Outcome) -> list[tuple[FieldError, Rule]]:
    """The webhook's errors that a rule placed in a policy explains, with the rule."""
    kind = kind_of(case.obj)
    assert kind is not None
    rules = rules_for(kind)
    found = []
    for error in outcome.webhook_errors:
        explained = explaining_rule(rules, error)
        if explained is not None and explained[0].where is Where.POLICY:
            found.append((error, explained[0]))
    return found


def rule_of(line: str, expected: list[tuple[FieldError, Rule]]) -> str | None:
    """The rule whose error the policy's line gives: a rule written for Kubeflow's policies gives the
    webhook's line word for word; a shared rule carried from its CRD rule gives the error's type, at its
    field or at the list or map above it (where the CRD rule reports it), in the CRD rule's words."""
    field, _, rest = line.partition(": ")
    for error, rule in expected:
        if line == str(error):
            return rule.id
        if rule.why != POLICY_NOTE and rest.startswith(error.type.text + ":"):
            webhook_field = comparable(error.field)
            cause = comparable(field)
            if webhook_field == cause or webhook_field.startswith((f"{cause}.", f"{cause}[")):
                return rule.id
    return None


# Per apiserver (each release's run): the rules seen refusing a job.
ENFORCED: dict[int, set[str]] = {}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_policies_agree_with_the_webhook(policies_only: Apiserver, case: Case):
    sent = defaulted(case)
    outcome = run_case(policies_only, sent, NAMESPACE)
    assert not outcome.disagreements, "\n".join(outcome.disagreements)
    expected = policy_errors(sent, outcome)
    lines = policy_lines(outcome)
    if not outcome.webhook_errors:
        assert outcome.apiserver_allowed, outcome.apiserver_causes
    if expected:
        # A policy names the first violation only: one of the webhook's errors.
        assert lines, f"no policy refuses {[str(e) for e, _ in expected]}: {outcome.apiserver_causes}"
        rules = [rule_of(line, expected) for line in lines]
        assert None not in rules, (lines, [str(e) for e, _ in expected])
        ENFORCED.setdefault(id(policies_only), set()).update(r for r in rules if r is not None)
    else:
        assert not lines, lines


def test_every_policy_rule_refused_a_vector(policies_only: Apiserver):
    """Each rule the catalogue places in a Kubeflow policy was seen refusing a job there (run after
    the vectors; on its own it sends them itself)."""
    seen = ENFORCED.setdefault(id(policies_only), set())
    if not seen:
        for case in CASES:
            sent = defaulted(case)
            outcome = run_case(policies_only, sent, NAMESPACE)
            expected = policy_errors(sent, outcome)
            seen.update(r for r in (rule_of(line, expected) for line in policy_lines(outcome)) if r is not None)
    placed = {
        rule.id
        for kind in every_family_kind()
        if kind.family == "kubeflow"
        for rule in rules_for(kind)
        if rule.where is Where.POLICY
    }
    assert placed, "no Kubeflow rule is placed in a policy"
    assert sorted(placed - seen) == []
