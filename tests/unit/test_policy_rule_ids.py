"""Every platform-policy rule id a finding can carry has its record, and ``jobgate explain`` prints it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from jobgate.cli import main
from jobgate.policy import check
from jobgate.policy.constraints import DECLARED
from jobgate.policy.ruleids import POLICY_RULES

PACKAGE = Path(check.__file__).parents[1]
SOURCES = [
    PACKAGE / "policy" / "check.py",
    PACKAGE / "policy" / "findings.py",
    PACKAGE / "policy" / "review.py",
    PACKAGE / "policy" / "queuefit.py",
    PACKAGE / "offline" / "results.py",
]


def emitted_ids() -> set[str]:
    """The ids the checks spell: literals, and the declared constraints' (the checks read them there)."""
    if not all(source.is_file() for source in SOURCES):
        pytest.skip("the sources are not here (the compiled wheel's pass): the ids are read from them")
    found: set[str] = set()
    for source in SOURCES:
        for node in ast.walk(ast.parse(source.read_text())):
            text = node.value if isinstance(node, ast.Constant) else None
            if isinstance(text, str) and re.fullmatch(r"policy/[a-z-]*[a-z]", text):
                found.add(text)
    return found | set(DECLARED)


def test_every_emitted_id_has_a_record_and_every_record_is_emitted() -> None:
    emitted = emitted_ids()
    assert len(emitted) > 15
    assert emitted == set(POLICY_RULES)


@pytest.mark.parametrize("rule_id", sorted(POLICY_RULES))
def test_explain_prints_each_policy_rule(rule_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", rule_id]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{rule_id}\n") and POLICY_RULES[rule_id].constraint in out and "docs/policy.md" in out


def test_a_misspelt_policy_rule_is_a_usage_error_with_suggestions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "policy/max-gpus-per-jb"]) == 2
    assert "did you mean: policy/max-gpus-per-job" in capsys.readouterr().err
