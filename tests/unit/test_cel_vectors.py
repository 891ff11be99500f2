"""The test vectors of the apiserver's rules, held to the webhook (offline): each vector's errors
come from exactly the rules it names, and every rule the catalogue says the apiserver enforces has
a vector that breaks it (so that the end-to-end suite, which sends every vector to a real
apiserver, fails when a generated rule is removed)."""

from __future__ import annotations

import pytest

from jobgate.forms.catalogue import explaining_rule
from jobgate.generate.cel.generate import family_rules, rules_for
from jobgate.generate.manifests import every_family_kind
from jobgate.review import kind_of, review_job
from testkit.cel_corpus import vectors

VECTORS = vectors()


@pytest.mark.parametrize("vector", VECTORS, ids=[v.id for v in VECTORS])
def test_each_vector_breaks_the_rules_it_names(vector):
    kind = kind_of(vector.obj)
    assert kind is not None and kind.family == vector.family
    verdict = review_job(kind, vector.obj, vector.old)
    rules = rules_for(kind)
    broken = set()
    for error in verdict.errors:
        found = explaining_rule(rules, error)
        assert found is not None, f"no rule of the catalogue explains {error}"
        broken.add(found[0].id)
    assert broken == set(vector.rules), [str(e) for e in verdict.errors]


def _in_apiserver(kind) -> bool:
    """A family with CEL rules, or with a catalogue that places some rule in a policy (Kubeflow's)."""
    return family_rules(kind) is not None or any(rule.where.in_apiserver for rule in rules_for(kind))


def test_every_rule_the_apiserver_enforces_has_a_vector():
    named = {(v.family, rule) for v in VECTORS for rule in v.rules}
    missing = sorted(
        f"{kind.family}: {rule.id}"
        for kind in every_family_kind()
        if _in_apiserver(kind)
        for rule in rules_for(kind)
        if rule.where.in_apiserver and not rule.id.startswith("schema/") and (kind.family, rule.id) not in named
    )
    assert not missing, missing


def test_kubeflows_policy_rules_are_counted():
    """Kubeflow has no CEL module: its policy rules come from its catalogue, and need vectors too."""
    assert any(kind.family == "kubeflow" and _in_apiserver(kind) for kind in every_family_kind())


def test_every_family_with_apiserver_rules_has_valid_and_update_vectors():
    for family in {k.family for k in every_family_kind() if _in_apiserver(k)}:
        own = [v for v in VECTORS if v.family == family]
        assert any(not v.rules for v in own), f"{family}: no valid vector"
        assert any(v.old is not None for v in own), f"{family}: no UPDATE vector"
