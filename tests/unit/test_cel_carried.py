"""CRD rules carried into a ValidatingAdmissionPolicy (jobgate/forms/carried.py), and Kubeflow's
policies generated from its catalogue's records (the CEL on a real apiserver: tests/e2e/test_kubeflow_vap.py)."""

from __future__ import annotations

import pytest

from jobgate.families.kubeflow import rules as kubeflow
from jobgate.forms.carried import NotCarried, carried, placement_check
from jobgate.forms.catalogue import LIST_ITEMS, MAP_VALUES, Placement, Produces, Rule, Validation, Where
from jobgate.generate.cel.generate import rules_for, validating_policy
from jobgate.generate.manifests import peer_policy_files


def test_a_placement_on_a_list_visits_every_item_and_names_the_list():
    check = placement_check(
        ("spec", "tasks", LIST_ITEMS, "ports"),
        Validation(rule="self.size() < 3", message="too many ports", reason="FieldValueForbidden"),
    )
    # Every task (by index) is visited; the field is the list the rule sits on, the type the reason's.
    assert "object.spec.tasks.map(v0, " in check.message
    assert "'[' + string(object.spec.tasks.indexOf(v0)) + ']'" in check.message
    assert "((object.spec.tasks[v0].ports.size() < 3) ? '' : " not in check.message  # bound to the item
    assert "((v0.ports.size() < 3) ? '' : " in check.message
    assert "': Forbidden: ' + 'too many ports'" in check.message


def test_a_placement_on_a_map_names_the_key_and_keeps_its_field_path():
    check = placement_check(
        ("spec", "replicaSpecs", MAP_VALUES),
        Validation(rule="has(self.template)", message="must be given", field_path=".template"),
    )
    assert "object.spec.replicaSpecs.map(v0, " in check.message
    assert "'[' + v0 + ']'" in check.message
    assert "+ '.template' + ': Invalid value: ' + 'must be given'" in check.message


def test_a_message_that_says_its_own_type_is_not_given_another():
    check = placement_check(("spec",), Validation(rule="true", message_expression="'Duplicate value: \"x\"'"))
    assert "'spec' + ': ' + 'Duplicate value: \"x\"'" in check.message
    assert "Invalid value" not in check.message


def test_a_placement_at_the_root_names_its_field_without_a_leading_dot():
    check = placement_check((), Validation(rule="true", message="m", field_path=".metadata.name"))
    assert "'metadata.name' + ': Invalid value: '" in check.message


def test_a_transition_rule_is_not_carried():
    with pytest.raises(NotCarried):
        placement_check(("spec",), Validation(rule="self.queue == oldSelf.queue", message="field is immutable"))


def test_carried_keeps_the_rule_and_drops_schema_keywords():
    rule = Rule(
        "x/y",
        "a rule",
        Where.CRD_RULE,
        (Produces("spec.a", "INVALID"),),
        (Placement(("spec",), {"maxProperties": 3}), Placement(("spec",), validation=Validation("true", "m"))),
    )
    moved = carried(rule, "why")
    assert (moved.id, moved.summary, moved.produces, moved.where) == (
        rule.id,
        rule.summary,
        rule.produces,
        Where.POLICY,
    )
    assert moved.placements == () and len(moved.policy) == 1 and moved.why == "why"


@pytest.mark.parametrize("kind", kubeflow.KINDS, ids=lambda k: k.kind)
def test_kubeflows_policy_is_its_catalogues_policy_rules(kind):
    """One validation per policy check of the kind's catalogue, in order, each the check's CEL."""
    checks = [c for rule in rules_for(kind) if rule.where is Where.POLICY for c in rule.policy]
    assert checks
    policy, binding = validating_policy(kind, {})
    assert binding["kind"] == "ValidatingAdmissionPolicyBinding"
    resource_rule = policy["spec"]["matchConstraints"]["resourceRules"][0]
    assert resource_rule["apiGroups"] == ["kubeflow.org"] and resource_rule["apiVersions"] == ["v1"]
    variables = {v["name"]: v["expression"] for v in policy["spec"]["variables"]}
    validations = policy["spec"]["validations"]
    # Each message written once, as a variable the check and its message both read.
    assert [variables[v["messageExpression"].removeprefix("variables.")] for v in validations] == [
        c.message for c in checks
    ]
    assert all(v["expression"] == f"{v['messageExpression']} == ''" for v in validations)


def test_kubeflows_own_rules_are_all_in_its_policies():
    for kind in kubeflow.KINDS:
        own = [rule for rule in rules_for(kind) if rule.id.startswith("kubeflow/")]
        assert own and all(rule.where is Where.POLICY for rule in own), kind.kind


def test_the_policies_of_kubeflow_are_written_for_each_kind():
    files = peer_policy_files()
    assert sorted(files) == sorted(
        [f"kubeflow-policies/kubeflow.org_{kind.plural}.yaml" for kind in kubeflow.KINDS]
        + ["kubeflow-policies/kustomization.yaml"]
    )


def test_a_shared_record_that_cannot_be_carried_stays_with_the_webhook_and_says_why():
    from jobgate.families.kubeflow import catalogue

    transition = Rule(
        "x/immutable",
        "never changes",
        Where.CRD_RULE,
        (Produces("spec.a", "INVALID"),),
        (Placement(("spec",), validation=Validation("self.a == oldSelf.a", "field is immutable")),),
    )
    kept = catalogue._shared(kubeflow.PYTORCHJOB, transition)
    assert kept.where is Where.WEBHOOK and kept.why.startswith("not carried into a policy: a transition rule")
