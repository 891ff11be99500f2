"""The catalogue of where each rule is enforced (jobgate/generate/cel): its parts, and what it generates."""

from __future__ import annotations

import json

import pytest

from build_support import readme_tables
from jobgate.engine.fielderrors import Key
from jobgate.forms.catalogue import PathPattern, Rule, Where
from jobgate.generate.cel.generate import CatalogueError, enforcement_rows, rules_for
from jobgate.generate.manifests import custom_resource_definition, every_family_kind, plain_crd


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("spec.tfReplicaSpecs[*].replicas", ("spec", "tfReplicaSpecs", Key("Worker"), "replicas"), True),
        ("spec.tfReplicaSpecs[*].replicas", ("spec", "tfReplicaSpecs", "Worker", "replicas"), False),
        ("spec.tasks[*].template.**", ("spec", "tasks", 0, "template", "spec", "containers", 1, "name"), True),
        ("spec.x[Master]", ("spec", "x", Key("Master")), True),
        ("spec.x[Master]", ("spec", "x", Key("Worker")), False),
        ("spec.*.y", ("spec", "a", "y"), True),
        ("spec.*.y", ("spec", Key("a"), "y"), False),
        ("**", (), True),
    ],
)
def test_path_patterns(pattern, path, matches):
    assert PathPattern(pattern).matches(path) is matches


def test_a_webhook_only_rule_says_why():
    with pytest.raises(ValueError, match="must say why"):
        Rule("x", "x", Where.WEBHOOK, ())


def test_a_crd_rule_places_a_validation():
    with pytest.raises(ValueError, match="places no validation"):
        Rule("x", "x", Where.CRD_RULE, ())


def test_rule_ids_are_unique_per_kind():
    for kind in every_family_kind():
        ids = [rule.id for rule in rules_for(kind)]
        assert len(ids) == len(set(ids)), kind


def test_a_crd_without_the_catalogue_is_the_models_schema_alone():
    for kind in every_family_kind():
        plain = json.dumps(custom_resource_definition(kind, with_catalogue=False))
        assert "x-kubernetes-validations" not in plain and '"default"' not in plain
        assert plain_crd(f"{kind.plural}.{kind.gvk.group}") == json.loads(plain)
    assert plain_crd("commands.bus.volcano.sh") is None


def test_every_family_is_in_the_table():
    families = {row[0] for row in enforcement_rows(every_family_kind())}
    assert families == {kind.family for kind in every_family_kind()}


def test_a_placement_where_the_schema_has_nothing_is_a_clear_error(monkeypatch):
    from jobgate.families.kubedl import rules as kubedl
    from jobgate.forms.catalogue import Placement, Produces
    from jobgate.generate.cel import generate

    stray = Rule(
        "x/stray", "x", Where.SCHEMA, (Produces("**", "INVALID"),), (Placement(("spec", "nowhere"), {"maxLength": 1}),)
    )
    real = generate.family_rules
    monkeypatch.setattr(generate, "family_rules", lambda kind: [*(real(kind) or []), stray])
    with pytest.raises(CatalogueError, match="no schema at spec/nowhere"):
        custom_resource_definition(kubedl.TFJOB)


def test_the_readme_tables_are_current():
    if not readme_tables.README.exists():
        pytest.skip("no README.md here (the compiled pass copies the tests, not the README)")
    text = readme_tables.README.read_text()
    assert readme_tables.updated(text) == text, "run `python -m build_support.readme_tables`"
