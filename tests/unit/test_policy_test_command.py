"""``jobgate policy test``: declarative policy tests run offline (issue 46)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from jobgate.cli import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "policy-tests"


@pytest.fixture
def examples(tmp_path: Path) -> Path:
    """A copy of the examples (the test reads ../policies)."""
    shutil.copytree(REPO / "examples" / "policies", tmp_path / "policies")
    shutil.copytree(EXAMPLE, tmp_path / "policy-tests")
    return tmp_path / "policy-tests"


def _edit(path: Path, change) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_the_repositorys_example_policies_pass_their_tests(capsys):
    assert main(["policy", "test", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "research/big-run" in out and "FAIL" not in out
    assert out.rstrip().endswith("5 results: 5 passed, 0 failed")


def test_a_directory_is_searched_for_test_files(examples, capsys):
    assert main(["policy", "test", str(examples.parent)]) == 0


def test_a_changed_outcome_is_a_failure_naming_what_differs(examples, capsys):
    test = examples / "jobgate-test.yaml"
    _edit(test, lambda d: d["results"][1].update(outcome="admitted", rules=None))
    assert main(["policy", "test", str(test)]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out
    assert "research/other-big: outcome: expected admitted, got denied" in out
    assert "5 results: 4 passed, 1 failed" in out


def test_rules_and_stored_fields_are_compared(examples, capsys):
    test = examples / "jobgate-test.yaml"

    def change(data):
        data["results"][1]["rules"] = ["policy/max-gpus-per-pod"]
        data["results"][2]["stored"]["spec.runPolicy.ttlSecondsAfterFinished"] = 60

    _edit(test, change)
    assert main(["policy", "test", str(test)]) == 1
    out = capsys.readouterr().out
    assert "rules: expected [policy/max-gpus-per-pod], got [policy/max-gpus-per-job]" in out
    assert "stored spec.runPolicy.ttlSecondsAfterFinished: expected 60, got 86400" in out


def test_an_exception_expired_at_the_tests_time_changes_the_outcome(examples, capsys):
    test = examples / "jobgate-test.yaml"
    _edit(test, lambda d: d.update(now="2026-12-05T00:00:00Z"))
    assert main(["policy", "test", str(test)]) == 1
    assert "research/big-run: outcome: expected warned, got denied" in capsys.readouterr().out


def test_update_writes_the_current_results(examples, capsys):
    test = examples / "jobgate-test.yaml"
    _edit(test, lambda d: d.update(results=[{"job": "small", "outcome": "denied", "stored": {"metadata.name": "x"}}]))
    assert main(["policy", "test", str(test)]) == 1
    assert main(["policy", "test", "--update", str(test)]) == 0
    results = yaml.safe_load(test.read_text())["results"]
    assert {"job": "small", "outcome": "admitted", "stored": {"metadata.name": "small"}} in results
    assert len(results) == 5  # the jobs without an expectation get one
    capsys.readouterr()
    assert main(["policy", "test", str(test)]) == 0


def test_json_and_junit(examples, capsys):
    test = examples / "jobgate-test.yaml"
    _edit(test, lambda d: d["results"][0].update(outcome="denied"))
    assert main(["policy", "test", "-o", "json", str(test)]) == 1
    body = json.loads(capsys.readouterr().out)
    assert body["summary"] == {"passed": 4, "failed": 1} and body["exitCode"] == 1
    first = body["tests"][0]["results"][0]
    assert first["passed"] is False and first["got"]["outcome"] == "warned"
    assert main(["policy", "test", "-o", "junit", str(test)]) == 1
    junit = capsys.readouterr().out
    assert '<testsuites name="jobgate policy test" tests="5" failures="1">' in junit
    assert "<failure message=" in junit


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("jobs"), "jobs: Field required"),
        (lambda d: d.update(jobs=["missing/"]), "missing/: no such file or directory"),
        (lambda d: d.update(polices=["x"]), "polices: Extra inputs are not permitted"),
        (lambda d: d.update(now="tomorrow"), "now: 'tomorrow' is not an RFC 3339 date-time"),
        (lambda d: d["results"].append({"job": "nobody", "outcome": "admitted"}), "no job 'nobody'"),
        (lambda d: d["results"].append({"job": "small", "outcome": "maybe"}), "results.5.outcome"),
    ],
)
def test_a_test_that_cannot_run_is_a_usage_error(examples, capsys, change, message):
    test = examples / "jobgate-test.yaml"
    _edit(test, change)
    assert main(["policy", "test", str(test)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jobgate: policy test: ") and message in err, err


def test_a_malformed_exception_in_a_test_is_a_usage_error(examples, capsys):
    _edit(examples / "exception.yaml", lambda d: d["spec"].pop("reason"))
    assert main(["policy", "test", str(examples)]) == 2
    err = capsys.readouterr().err
    assert "TrainingJobPolicyException research/q4-big-run is invalid" in err and "spec.reason: Required value" in err


def test_no_test_file_is_a_usage_error(tmp_path, capsys):
    assert main(["policy", "test", str(tmp_path)]) == 2
    assert "no jobgate-test.yaml under" in capsys.readouterr().err
