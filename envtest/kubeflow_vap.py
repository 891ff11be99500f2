"""Kubeflow's policies (``manifests/kubeflow-policies``) on a real apiserver against the webhook: the
corpus, the install, and the judgement of one job. Used by tests/e2e/test_kubeflow_vap.py and
``python -m bench.cel_fuzz --kubeflow``.

A control plane with Kubeflow's CRDs (the tests' stand-ins, tests/e2e/crds/kubeflow: the models'
schema, no rule of jobgate's) and the policies, no webhook. Jobs are sent as jobgate's /mutate leaves
them (``defaulted``): the ``kubeflow-admission-only`` overlay runs it before any validation, and
jobgate generates no MutatingAdmissionPolicy for Kubeflow's kinds. ``run_case`` compares the verdicts
and fields (envtest/cel_differential.py); ``policy_problems`` adds the policies' own words: a rule
written for Kubeflow's policies refuses with the webhook's line, word for word; a shared rule carried
from its CRD rule with the error's type at its field or at the list or map above it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import yaml

from envtest.cel_differential import POLICY_DENIAL, Apiserver, Case, Outcome, comparable, defaulted, install
from jobgate.engine.fielderrors import FieldError
from jobgate.forms.catalogue import Rule, Where, explaining_rule
from jobgate.generate.cel.generate import rules_for
from jobgate.generate.cel.vectors import load_vectors
from jobgate.review import kind_of, review_job

REPO = Path(__file__).resolve().parents[1]
POLICIES = REPO / "manifests/kubeflow-policies"
KUBEFLOW_TEST_CRDS = REPO / "tests/e2e/crds/kubeflow"
PROBE = "mpijob without a launcher"  # a vector only a policy refuses


def corpus() -> list[Case]:
    """The Kubeflow vectors (tests/cel_vectors/kubeflow.yaml) and examples (examples/*/kubeflow-*.yaml)."""
    cases = [Case(v.id, v.obj, v.old) for v in load_vectors(REPO / "tests/cel_vectors", REPO, "kubeflow")]
    for path in sorted((REPO / "examples").glob("*/kubeflow-*.yaml")):
        for index, document in enumerate(d for d in yaml.safe_load_all(path.read_text()) if d):
            cases.append(Case(f"{path.relative_to(REPO)}#{index}", document))
    return cases


def install_policies(kubectl: Callable[..., str], apiserver: Apiserver, namespace: str, timeout: float = 300) -> None:
    """Kubeflow's CRDs and the policies, then a wait until the policies take effect (a moment after
    they are written, longer on a loaded machine, and kind by kind): until, for every kind of the
    corpus, a job only a policy refuses is refused."""
    install(kubectl, str(KUBEFLOW_TEST_CRDS), str(POLICIES))
    kubectl("create", "namespace", namespace)
    waiting = probes()
    deadline = time.monotonic() + timeout
    while waiting and time.monotonic() < deadline:
        for kind, probe in list(waiting.items()):
            status, answer = apiserver.create(
                dict(probe.obj, metadata={"name": "probe", "namespace": namespace}), namespace, dry_run=True
            )
            if status >= 300 and POLICY_DENIAL in str(answer.get("message", "")):
                del waiting[kind]
        time.sleep(0.5)
    assert not waiting, f"the Kubeflow policies of {sorted(waiting)} never took effect"


def probes() -> dict[str, Case]:
    """Per kind of the corpus, a job as /mutate leaves it that a policy refuses (PROBE first)."""
    found: dict[str, Case] = {}
    cases = corpus()
    cases.sort(key=lambda c: c.name != f"kubeflow:{PROBE}")
    for case in cases:
        kind = str(case.obj.get("kind"))
        if case.old is not None or kind in found:
            continue
        sent = defaulted(case)
        verdict_kind = kind_of(sent.obj)
        assert verdict_kind is not None
        errors = review_job(verdict_kind, sent.obj, None, with_patch=False).errors
        rules = rules_for(verdict_kind)
        # Sent under another name, so a refusal of the job's own name (metadata) does not count.
        if any(
            (e := explaining_rule(rules, error)) is not None
            and e[0].where is Where.POLICY
            and not error.field.startswith("metadata")
            for error in errors
        ):
            found[kind] = sent
    return found


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
    """The rule whose error the policy's line gives (None: no error of the webhook's is that line)."""
    from jobgate.families.kubeflow.catalogue import POLICY_NOTE

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


def policy_problems(sent: Case, outcome: Outcome) -> tuple[list[str], set[str]]:
    """What the policies did that the webhook would not have (and what they failed to refuse), with
    the rules seen refusing. When the apiserver refused before the policies (its own checks of the
    name, the stand-in CRD's schema), the policies were not asked: only their silence is excused."""
    expected = policy_errors(sent, outcome)
    lines = policy_lines(outcome)
    before = [m for _, m in outcome.apiserver_causes if POLICY_DENIAL not in m]
    problems = [d for d in outcome.disagreements if "polic" in d]
    if lines and not outcome.webhook_errors:
        problems.append(f"a policy refuses a job the webhook admits: {lines}")
    if expected and not before and not lines:
        problems.append(f"no policy refuses {[str(e) for e, _ in expected]}")
    seen = set()
    for line in lines:
        rule = rule_of(line, expected)
        if rule is None:
            problems.append(f"not a line of the webhook's: {line} (the webhook: {[str(e) for e, _ in expected]})")
        else:
            seen.add(rule)
    return problems, seen
