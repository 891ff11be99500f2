"""The README's "Adding a rule" runs the checkout's code: generating from another copy of jobgate
(after ``pip install .`` rather than ``-e``) stops with what to run instead, never half-writes."""

from __future__ import annotations

from pathlib import Path

import pytest

import jobgate
from build_support import checkout
from jobgate.cli import main


def test_generate_refuses_a_checkout_that_is_not_the_running_jobgate(tmp_path: Path, capsys) -> None:
    (tmp_path / "jobgate").mkdir()
    (tmp_path / "jobgate" / "__init__.py").write_text("")
    (tmp_path / "manifests").mkdir()
    assert main(["manifests", "generate", "--dir", str(tmp_path / "manifests")]) == 2
    err = capsys.readouterr().err
    assert "is a checkout of jobgate, but this jobgate runs from" in err
    assert "pip install -e '.[test]'" in err
    assert list((tmp_path / "manifests").iterdir()) == []


# .ci/run's compiled pass runs these tests from a copy of the tree against an installed wheel.
editable_only = pytest.mark.skipif(
    Path(jobgate.__file__).resolve().parents[1] != Path(__file__).resolve().parents[2],
    reason="jobgate is installed, not this checkout in editable mode",
)


@editable_only
def test_build_support_accepts_this_editable_checkout() -> None:
    assert checkout.install_problem() == ""


def test_build_support_refuses_another_copy(monkeypatch) -> None:
    monkeypatch.setattr(jobgate, "__file__", "/somewhere/site-packages/jobgate/__init__.py")
    problem = checkout.install_problem()
    assert "not from this checkout" in problem and "pip install -e '.[test]'" in problem


@editable_only
def test_build_support_refuses_a_checkout_without_its_mapped_packages(monkeypatch) -> None:
    real = checkout.importlib.util.find_spec
    monkeypatch.setattr(
        checkout.importlib.util, "find_spec", lambda name: None if name == "jobgate.controller" else real(name)
    )
    assert checkout.install_problem().startswith("jobgate.controller cannot be imported")
