"""What the generated CEL costs the apiserver, read from the expressions (``jobgate.generate.cost``),
and the generator's ways of keeping it down: uniqueness without pairs, MutatingAdmissionPolicies
that run only when a default is missing, and independent patches joined into one mutation."""

from __future__ import annotations

import pytest

from jobgate.forms.catalogue import bound, unique_field
from jobgate.generate.cel.generate import merged_mutations, mutating_policy, patches_nonempty
from jobgate.generate.cost import generated_report, growth, main
from jobgate.generate.manifests import every_family_kind

PAIRWISE = "self.all(a, !has(a.name) || self.exists_one(b, has(b.name) && b.name == a.name))"


def test_a_pairwise_comprehension_is_quadratic():
    assert growth(PAIRWISE) == "quadratic: self x self"


def test_a_walk_of_the_object_is_linear():
    assert growth("self.containers.all(c, !has(c.ports) || c.ports.all(p, p.containerPort > 0))") == "linear"
    assert growth("has(self.name) && self.name != ''") == "constant"


def test_uniqueness_by_native_lookups_is_not_quadratic():
    rule = unique_field("name").rule
    assert "exists_one" not in rule
    assert growth(rule).startswith("linear field reads, native compares")


def test_a_binding_is_no_loop():
    assert growth(bound("self.volumes.map(v, v.name)", "names", "size(names) > 0")) == "linear"


def test_no_pod_template_rule_is_quadratic():
    quadratic = [
        line
        for line in generated_report(every_family_kind())
        if " pod-template/" in line and ": quadratic" in line.split(" (its message")[0]
    ]
    assert quadratic == []


def test_the_cost_command_lists_every_generated_rule(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "TFJob (training.kubedl.io) CRD rule at spec/tfReplicaSpecs/*/template/spec/containers/[]/ports" in out
    assert "TFJob (training.kubedl.io) MAP match condition" in out
    assert "VAP" in out


ADD_A = "has(object.spec.a) ? [] : [JSONPatch{op: 'add', path: '/spec/a', value: 1}]"
ADD_B = "has(object.spec.b) ? [] : [JSONPatch{op: 'add', path: '/spec/b', value: 'x'}]"
READS_A = "has(object.spec.a) && !has(object.spec.c) ? [JSONPatch{op: 'add', path: '/spec/c', value: 2}] : []"
MOVES = "has(object.spec.d) ? [JSONPatch{op: 'move', from: '/spec/d', path: '/spec/e'}] : []"


def test_independent_additions_become_one_mutation():
    assert merged_mutations([ADD_A, ADD_B]) == [f"({ADD_A}) + ({ADD_B})"]


@pytest.mark.parametrize(
    ("patches", "count"),
    [([ADD_A, READS_A], 2), ([MOVES, ADD_A, ADD_B], 2), ([ADD_A, MOVES, ADD_B], 3), ([ADD_A, ADD_A], 2)],
)
def test_a_patch_that_reads_what_another_adds_stays_apart(patches, count):
    assert len(merged_mutations(patches)) == count


def test_the_match_condition_has_no_patch_type():
    condition = patches_nonempty([ADD_A, MOVES])
    assert "JSONPatch" not in condition
    assert condition == ("size(has(object.spec.a) ? [] : [0]) > 0 || size(has(object.spec.d) ? [0] : []) > 0")


def test_every_mutating_policy_runs_only_when_a_default_is_missing():
    for kind in every_family_kind():
        documents = mutating_policy(kind, {})
        if documents:
            (condition,) = documents[0]["spec"]["matchConditions"]
            assert "JSONPatch" not in condition["expression"]
