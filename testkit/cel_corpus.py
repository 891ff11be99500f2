"""The CEL corpus: test vectors of the rules the apiserver enforces (jobs of each family, valid and
invalid, each naming the rules, ``jobgate/generate/cel`` catalogue ids, its errors come from) and the
examples, and the wait for a control plane's admission policies to take effect.

A family's vectors are ``tests/cel_vectors/<family>.yaml`` (data, read by path): documents of

    name: what the case shows
    base: examples/valid/tfjob-mnist.yaml    # a job to start from (a path from the repository), or
    object: {...}                            # the job itself
    patch: {...}                             # a JSON merge patch (RFC 7386) applied to the base
    old: {...} | old_patch: {...}            # an UPDATE: the stored job (old_patch: of the base)
    rules: [replicas/types, ...]             # the rules the webhook's errors come from; [] when valid

``tests/unit/test_cel_vectors.py`` holds each vector to the webhook's verdict (offline);
``tests/e2e/test_cel_enforcement.py`` and ``tests/e2e/test_cel_oldest_release.py`` send each (and
each example) to a real apiserver with only the generated CRDs and policies in force;
``python -m bench.cel_fuzz`` mutates them (``testkit/fuzzing/cel_cases.py``).
"""

from __future__ import annotations

import time
from pathlib import Path

import yaml

from envtest.cel_differential import POLICY_DENIAL, Apiserver, Case
from jobgate.generate.cel.generate import family_rules
from jobgate.generate.cel.vectors import Vector, load_vectors
from jobgate.generate.manifests import every_family_kind
from jobgate.review import kind_of

REPO = Path(__file__).resolve().parents[1]
VECTORS_DIR = REPO / "tests" / "cel_vectors"


def vectors(family: str | None = None) -> list[Vector]:
    """The vectors of the checkout (one loader: ``jobgate.generate.cel.vectors``, which ``jobgate
    explain`` reads its examples with)."""
    return load_vectors(VECTORS_DIR, REPO, family)


def example_files() -> list[Path]:
    return sorted((REPO / "examples").glob("*/*.yaml"))


def enforced_families() -> set[str]:
    """The families whose rules the apiserver enforces (those with generated CEL rules)."""
    return {k.family for k in every_family_kind() if family_rules(k) is not None}


def enforced_vectors() -> list[Vector]:
    """The vectors of the families whose rules the apiserver enforces."""
    families = enforced_families()
    return [v for v in vectors() if v.family in families]


def enforced_examples() -> list[Case]:
    """Every document of ``examples/`` of a family whose rules the apiserver enforces, named
    ``<path>#<index>``."""
    families = enforced_families()
    cases = []
    for path in example_files():
        for index, document in enumerate(d for d in yaml.safe_load_all(path.read_text()) if d):
            kind = kind_of(document)
            if kind is not None and kind.family in families:
                cases.append(Case(f"{path.relative_to(REPO)}#{index}", document))
    return cases


def wait_for_policies(apiserver: Apiserver, *, mutating: bool, namespace: str, timeout: float = 120) -> None:
    """Policies take effect a moment after they are written (ValidatingAdmissionPolicies seconds after
    the MutatingAdmissionPolicies): wait until a job only a ValidatingAdmissionPolicy refuses is
    refused and, with ``mutating``, a default is applied."""
    corpus = enforced_vectors()
    defaulted = next(v for v in corpus if v.name == "tfjob valid as given")
    refused = next(v for v in corpus if v.name == "fractional GPU" and v.family == "kubedl")
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
