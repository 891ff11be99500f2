"""Every module docstring's references resolve: dotted names (``jobgate.policy.check.policy_findings``,
``webhook.admission``) and repository paths (``jobgate/policy/check.py``, ``docs/policy.md``).

A move or rename leaves the old name in the docstrings that explained it; nothing else would notice
(tests/unit/test_docs.py holds the links of README.md and docs/, not the code's own prose).
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# .ci/run's compiled pass copies the tests, not the sources whose docstrings this reads.
pytestmark = pytest.mark.skipif(not (REPO / "jobgate").is_dir(), reason="no jobgate/ sources here (the compiled pass)")
PACKAGE_DIRS = {"jobgate.webhook": "webhook", "jobgate.controller": "controller", "jobgate.certs": "certs"}
SCANNED = ("jobgate", "webhook", "controller", "certs", "envtest", "bench", "build_support", "testkit")
# The repository's top-level directories a path in prose may start with.
ROOTS = (*SCANNED, "tests", "docs", "examples", "manifests", "charts", ".ci")
# jobgate's subpackages: a double-backticked name starting with one (``webhook.loader``,
# ``rules.schema``) names jobgate.<it>, as the docstrings write it for short. Not ``common``: KubeDL's
# and Kubeflow's Go package of that name (``common.ReplicaSpec``) is cited too.
SUBPACKAGES = (
    frozenset(
        p.name
        for p in ((REPO / "jobgate").iterdir() if (REPO / "jobgate").is_dir() else ())
        if (p / "__init__.py").is_file() and not p.name.startswith("_")
    )
    | {"webhook", "controller", "certs"}
) - {"common"}
# A host or an API group, not a module: jobgate.local/jobgate:<version>, policy.jobgate.io.
NOT_MODULES = re.compile(r"\.jobgate\.|\.(?:io|local|com|org|dev|sh)$")

DOTTED = re.compile(r"(?<![\w./])jobgate(?:\.[A-Za-z_]\w*)+")
SHORT = re.compile(r"``([a-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\(\))?``")
PATH = re.compile(rf"(?<![\w./<-])(?:{'|'.join(re.escape(r) for r in ROOTS)})/[\w./-]*[\w/]")
FILE_SUFFIXES = (".py", ".md", ".yaml", ".yml", ".json", ".toml", ".txt", ".sh", ".go", ".tpl")


def module_files() -> list[Path]:
    files = []
    for root in SCANNED:
        if (REPO / root).is_dir():
            files += [p for p in (REPO / root).rglob("*.py") if "_generated" not in p.parts]
    return sorted(files)


def module_docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text()), clean=False) or ""


def resolves(dotted: str) -> bool:
    """Whether ``dotted`` is a module of the tree, or a name (an attribute of one, any depth) in one."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        name = ".".join(parts[:cut])
        if not _is_module(name):
            continue
        obj: object = importlib.import_module(name)
        for attribute in parts[cut:]:
            if not hasattr(obj, attribute):
                return False
            obj = getattr(obj, attribute)
        return True
    return False


def _is_module(name: str) -> bool:
    parts = name.split(".")
    if parts[0] != "jobgate":
        return False
    directory = REPO / "jobgate"
    if len(parts) > 1 and ".".join(parts[:2]) in PACKAGE_DIRS:
        directory, parts = REPO / PACKAGE_DIRS[".".join(parts[:2])], parts[1:]
    relative = Path(*parts[1:]) if len(parts) > 1 else Path()
    base = directory / relative
    return (base / "__init__.py").is_file() or base.with_suffix(".py").is_file() if parts[1:] else True


def broken_references(path: Path) -> list[str]:
    text = module_docstring(path)
    broken = []
    names = set(DOTTED.findall(text))
    for short in SHORT.findall(text):
        if short.split(".")[0] in SUBPACKAGES and not short.endswith(FILE_SUFFIXES):
            names.add(f"jobgate.{short}")
    broken += [name for name in sorted(names) if not NOT_MODULES.search(name) and not resolves(name)]
    for path_text in sorted({found.rstrip(".") for found in PATH.findall(text)}):
        if len(path_text.rsplit("/", 1)[1]) > 1 and not (REPO / path_text).exists():  # not a rate (manifests/s)
            broken.append(path_text)
    return broken


@pytest.mark.parametrize("path", module_files(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_module_docstring_references_exist(path: Path) -> None:
    assert broken_references(path) == []


def test_a_stale_reference_is_found(tmp_path: Path) -> None:
    module = tmp_path / "stale.py"
    module.write_text(
        '"""Reads with ``webhook.loader`` (moved), calls jobgate.policy.check.no_such_function, and is\n'
        'held by tests/unit/test_no_such_file.py; jobgate.policy.check.policy_findings is fine."""\n'
    )
    assert broken_references(module) == [
        "jobgate.policy.check.no_such_function",
        "jobgate.webhook.loader",
        "tests/unit/test_no_such_file.py",
    ]
