"""jobgate's rules enforced by the apiserver alone: a control plane of its own with
``manifests/overlays/cel-only`` applied (the CRDs with their schema keywords and CEL rules, the
MutatingAdmissionPolicies) and no webhook. Every test vector (tests/cel_vectors) and every example
goes to it and to the webhook's rules (envtest/cel_differential.py): where the catalogue says the
apiserver enforces a rule, it refuses the job at that rule's field; it refuses nothing the webhook
admits; and it stores a valid job as ``jobgate default`` prints it.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from envtest.cel_differential import POLICY_DENIAL, Apiserver, Case, Outcome, install, run_case
from envtest.harness import ControlPlane
from jobgate.engine.review import kind_of
from jobgate.generate.cel.generate import family_rules, rules_for
from jobgate.generate.manifests import every_family_kind
from tests.cel_vectors import example_files, vectors
from tests.e2e.conftest import started

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = "cel"


def _enforced_families() -> set[str]:
    return {k.family for k in every_family_kind() if family_rules(k) is not None}


VECTORS = [v for v in vectors() if v.family in _enforced_families()]


def _examples() -> list[Case]:
    cases = []
    for path in example_files():
        for index, document in enumerate(d for d in yaml.safe_load_all(path.read_text()) if d):
            kind = kind_of(document)
            if kind is not None and kind.family in _enforced_families():
                cases.append(Case(f"{path.relative_to(REPO)}#{index}", document))
    return cases


EXAMPLES = _examples()


@pytest.fixture(scope="module")
def cel_only() -> Iterator[Apiserver]:
    with started(ControlPlane()) as plane:
        kubectl = plane_kubectl(plane)
        install(kubectl, str(REPO / "manifests/overlays/cel-only"))
        kubectl("create", "namespace", NAMESPACE)
        apiserver = Apiserver(str(plane.kubeconfig))
        wait_for_policies(apiserver, mutating=True)
        yield apiserver


def plane_kubectl(plane: ControlPlane) -> Callable[..., str]:
    def kubectl(*args: str) -> str:
        result = subprocess.run(plane.kubectl_command(*args), capture_output=True, text=True, timeout=120, check=False)
        assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stdout}{result.stderr}"
        return result.stdout

    return kubectl


def wait_for_policies(
    apiserver: Apiserver, *, mutating: bool, namespace: str = NAMESPACE, timeout: float = 120
) -> None:
    """Policies take effect a moment after they are written (ValidatingAdmissionPolicies seconds after
    the MutatingAdmissionPolicies): wait until a job only a ValidatingAdmissionPolicy refuses is
    refused and, with ``mutating``, a default is applied."""
    import time

    defaulted = next(v for v in VECTORS if v.name == "tfjob valid as given")
    refused = next(v for v in VECTORS if v.name == "fractional GPU" and v.family == "kubedl")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, stored = apiserver.create(
            dict(defaulted.obj, metadata={"name": "probe", "namespace": namespace}), namespace, dry_run=True
        )
        renamed = not mutating or (status < 300 and "Worker" in stored["spec"]["tfReplicaSpecs"])  # worker renamed
        status, answer = apiserver.create(
            dict(refused.obj, metadata={"name": "probe", "namespace": namespace}), namespace, dry_run=True
        )
        if renamed and POLICY_DENIAL in str(answer.get("message", "")):
            return
        time.sleep(0.5)
    raise AssertionError("the admission policies never took effect")


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
