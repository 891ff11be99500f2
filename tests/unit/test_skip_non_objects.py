"""``jobgate validate --skip-non-objects`` (the pre-commit hook's): YAML and JSON that holds no
Kubernetes object is skipped, listed as such, rather than an error (exit 2); what was meant to be
an object stays an error, and without the flag every one of them is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobgate.cli import main

REPO = Path(__file__).resolve().parents[2]

WORKFLOW = """\
name: ci
on: [push]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
"""
HELM_UNPARSABLE = """\
apiVersion: training.kubedl.io/v1alpha1
kind: TFJob
metadata:
  name: {{ .Release.Name }}
  labels:
    {{- include "chart.labels" . | nindent 4 }}
spec: {}
"""
HELM_PARSABLE = """\
apiVersion: training.kubedl.io/v1alpha1
kind: TFJob
metadata:
  name: "{{ .Release.Name }}"
spec: {}
"""
JSON_WITH_COMMENTS = '{ // the compiler\n  "compilerOptions": {}\n}\n'
SCALAR = "just a sentence\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    files = {
        ".github/workflows/ci.yaml": WORKFLOW,
        "chart/templates/job.yaml": HELM_UNPARSABLE,
        "chart/templates/quoted.yaml": HELM_PARSABLE,
        "tsconfig.json": JSON_WITH_COMMENTS,
        "notes.yaml": SCALAR,
        "deploy/job.yaml": (REPO / "examples/valid/tfjob-mnist.yaml").read_text(),
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def _summary(out: str) -> dict:
    return json.loads(out)["summary"]


def test_without_the_flag_they_are_errors(tree: Path, capsys) -> None:
    assert main(["validate", "-o", "json", str(tree)]) == 2
    summary = _summary(capsys.readouterr().out)
    # The quoted template parses: a TFJob named "{{ .Release.Name }}", denied.
    assert summary == {"admitted": 1, "denied": 1, "skipped": 0, "error": 4}


def test_with_the_flag_they_are_skipped_and_listed(tree: Path, capsys) -> None:
    assert main(["validate", "--skip-non-objects", "-j", "1", str(tree)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "6 documents: 1 admitted, 0 denied, 5 skipped"
    lines = {line.split(":", 1)[0]: line for line in out.splitlines()[:-1]}
    assert (
        "skipped (not a Kubernetes object (no apiVersion, no kind))" in lines[str(tree / ".github/workflows/ci.yaml")]
    )
    for template in ("chart/templates/job.yaml", "chart/templates/quoted.yaml"):
        assert "skipped (a template ({{ }}), YAML only once rendered" in lines[str(tree / template)]
    assert "skipped (no Kubernetes object (no apiVersion)" in lines[str(tree / "tsconfig.json")]
    assert "skipped (not a Kubernetes object)" in lines[str(tree / "notes.yaml")]


def test_in_parallel_too(tree: Path, capsys) -> None:
    assert main(["validate", "--skip-non-objects", "-j", "2", "-o", "json", str(tree)]) == 0
    assert _summary(capsys.readouterr().out) == {"admitted": 1, "denied": 0, "skipped": 5, "error": 0}


@pytest.mark.parametrize(
    "text",
    [
        "kind: TFJob\nmetadata: {name: x}\n",  # an object without its apiVersion
        "apiVersion: v1\nkind: [\n",  # a manifest that does not parse
    ],
    ids=["half an object", "broken manifest"],
)
def test_what_was_meant_to_be_an_object_stays_an_error(tmp_path: Path, capsys, text: str) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(text)
    assert main(["validate", "--skip-non-objects", str(path)]) == 2
    assert ": error: " in capsys.readouterr().out


def test_a_denied_job_beside_skipped_files_still_fails(tree: Path, capsys) -> None:
    (tree / "deploy/bad.yaml").write_text((REPO / "examples/invalid/tfjob-chief-and-master.yaml").read_text())
    assert main(["validate", "--skip-non-objects", str(tree)]) == 1
    assert "[roles/one-leader]" in capsys.readouterr().out


def test_the_hook_passes_the_flag() -> None:
    hooks = (REPO / ".pre-commit-hooks.yaml").read_text()
    assert "entry: jobgate validate --skip-non-objects" in hooks
