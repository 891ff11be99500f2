"""``jobgate explain RULE``: a rule's documentation, its examples from the checkout, its docs link."""

from __future__ import annotations

import pytest

from jobgate.cli import main
from jobgate.cli.explain import CHECKOUT, UNKNOWN, catalogue
from jobgate.engine.pathpattern import rule_anchor

# The examples come from a checkout's vectors and examples, which the wheel does not install
# (.ci/run's compiled-wheel pass imports jobgate from site-packages).
from_a_checkout = pytest.mark.skipif(
    not (CHECKOUT / "tests" / "cel_vectors").is_dir(), reason="jobgate is installed, not run from a checkout"
)


def run(argv, capsys):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@from_a_checkout
def test_explain_prints_the_rule(capsys):
    code, out, _ = run(["explain", "roles/one-leader"], capsys)
    assert code == 0
    assert out.startswith("roles/one-leader\n  family:    kubedl (TFJob)\n")
    assert "spec.tfReplicaSpecs: Forbidden" in out
    assert "enforced:  CRD validation rule" in out
    assert "refused example:\n    (tests/cel_vectors/kubedl.yaml)" in out
    assert (
        "jobgate says:\n      spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role\n" in out
    )
    assert "admitted example:" in out
    assert out.rstrip().endswith("docs/rules/kubedl.md#roles-one-leader")


@from_a_checkout
def test_a_webhook_only_rule_says_why(capsys):
    code, out, _ = run(["explain", "pod-template/containers/image", "--family", "kubeflow"], capsys)
    assert code == 0
    assert "enforced:  webhook only: structural-schema keywords of jobgate's CRDs" in out
    assert "docs/rules/kubeflow.md#pod-template-containers-image" in out


@from_a_checkout
def test_a_rule_no_vector_breaks_takes_its_refused_example_from_examples():
    from jobgate.cli import explain

    entry = explain.catalogue()[("kubeflow", "kubeflow/one-launcher")]
    example = explain._file_example(entry, refused=True)
    assert example is not None and example.startswith("(examples/invalid/kubeflow-mpijob-no-launcher.yaml)")
    assert "Master ReplicaSpec must be present" in example


@from_a_checkout
def test_a_kubeflow_rule_in_a_policy_says_so_with_its_vector(capsys):
    code, out, _ = run(["explain", "kubeflow/one-launcher"], capsys)
    assert code == 0
    assert "enforced:  ValidatingAdmissionPolicy: a ValidatingAdmissionPolicy over Kubeflow's kind" in out
    assert "(tests/cel_vectors/kubeflow.yaml)\n    name: mpijob without a launcher" in out
    assert "docs/rules/kubeflow.md#kubeflow-one-launcher" in out


def test_an_id_of_several_families_is_explained_for_each_unless_one_is_named(capsys):
    _, every, _ = run(["explain", "schema/ranges"], capsys)
    families = [line.split()[1] for line in every.splitlines() if line.startswith("  family:")]
    assert len(families) == len(set(families)) > 1
    code, one, _ = run(["explain", "schema/ranges", "--family", "t9k"], capsys)
    assert code == 0 and one.count("  family:") == 1 and "family:    t9k" in one
    _, qualified, _ = run(["explain", "t9k/schema/ranges"], capsys)
    assert qualified == one


def test_an_unknown_id_exits_2_with_close_matches(capsys):
    code, out, err = run(["explain", "roles/one-leadr"], capsys)
    assert code == 2 and out == ""
    assert UNKNOWN in err
    assert "did you mean: roles/one-leader" in err


def test_every_rule_id_is_explained(capsys):
    """Every id the catalogue gives (each family's), explained without failing."""
    for family, rule_id in catalogue():
        code, out, _ = run(["explain", rule_id, "--family", family], capsys)
        assert code == 0, (family, rule_id)
        assert f"docs/rules/{family}.md#{rule_anchor(rule_id)}" in out


@pytest.mark.parametrize("command", [["--help"], ["explain", "--help"]])
def test_the_command_is_listed(command, capsys):
    with pytest.raises(SystemExit):
        main(command)
    assert "explain" in capsys.readouterr().out
