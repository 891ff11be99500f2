"""The pre-commit hook works as the README writes it: ``pre-commit try-repo`` installs this
repository into pre-commit's own environment (one pip install: slow, hence this tier) and runs
``jobgate-validate`` on a valid file beside a workflow and a Helm template (passes, those skipped) and an
invalid one (fails, naming the rule)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VALID = "examples/valid/tfjob-mnist.yaml"
INVALID = "examples/invalid/tfjob-chief-and-master.yaml"


def _pre_commit() -> str:
    found = shutil.which("pre-commit")
    if found is None:
        pytest.skip("pre-commit is not installed (pip install -e '.[test]')")
    return found


def test_try_repo_runs_the_hook_on_a_valid_and_an_invalid_file(tmp_path):
    pre_commit = _pre_commit()
    # try-repo takes the repository's HEAD plus its uncommitted changes; it runs in a git work tree.
    work = tmp_path / "project"
    (work / "jobs").mkdir(parents=True)
    shutil.copy(REPO / VALID, work / "jobs" / "valid.yaml")
    shutil.copy(REPO / INVALID, work / "jobs" / "invalid.yaml")
    # Other YAML of a repository, skipped by the hook (--skip-non-objects), not an error.
    (work / ".github" / "workflows").mkdir(parents=True)
    (work / ".github" / "workflows" / "ci.yaml").write_text("on: [push]\njobs: {test: {runs-on: ubuntu-latest}}\n")
    (work / "chart" / "templates").mkdir(parents=True)
    (work / "chart" / "templates" / "job.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n"
    )
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), GIT_CONFIG_GLOBAL=os.devnull)
    for command in (["git", "init", "-q"], ["git", "add", "."]):
        subprocess.run(command, cwd=work, env=env, check=True, capture_output=True)

    def try_repo(*files: str) -> subprocess.CompletedProcess[str]:
        command = [pre_commit, "try-repo", str(REPO), "jobgate-validate", "--verbose", "--files", *files]
        return subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, check=False, timeout=900)

    # The one install: the next run reuses pre-commit's environment.
    passed = try_repo("jobs/valid.yaml", ".github/workflows/ci.yaml", "chart/templates/job.yaml")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout
    assert "3 documents: 1 admitted, 0 denied, 2 skipped" in passed.stdout  # --verbose shows them
    assert "chart/templates/job.yaml:4: document 1: skipped (a template" in passed.stdout
    failed = try_repo("jobs/invalid.yaml")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "Failed" in failed.stdout
    assert "must not have more than 1 Chief or Master role [roles/one-leader]" in failed.stdout
