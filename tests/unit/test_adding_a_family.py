"""docs/adding-a-family.md, followed literally: its files written into a copy of the tree, its
registration line put in, its commands run; the toy family is then served like the others."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "adding-a-family.md"
BLOCK = re.compile(r"<!-- (file: (?P<path>\S+)|registration|commands) -->\n```\w*\n(?P<body>.*?)```", re.S)


def guide_parts() -> tuple[dict[str, str], str, list[str]]:
    files, registration, commands = {}, "", []
    for match in BLOCK.finditer(GUIDE.read_text()):
        if match["path"]:
            files[match["path"]] = match["body"]
        elif match.group(0).startswith("<!-- registration"):
            registration = match["body"].strip()
        else:
            commands = [line.split() for line in match["body"].strip().splitlines()]
    return files, registration, commands


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    if not (REPO / "jobgate" / "families").is_dir():
        pytest.skip("no source tree here (the compiled wheel's pass)")
    ignore = shutil.ignore_patterns("__pycache__", "*.so")
    shutil.copytree(REPO / "jobgate", tmp_path / "jobgate", ignore=ignore)
    shutil.copytree(REPO / "manifests", tmp_path / "manifests")
    shutil.copytree(REPO / "tests" / "e2e" / "crds", tmp_path / "tests" / "e2e" / "crds")
    return tmp_path


def run(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # The copy first on the path: ``jobgate`` is the copy's (the installed finder still serves the
    # parts kept at the repository's root, webhook/ and controller/, which the toy needs none of).
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(REPO)])}
    return subprocess.run(
        [sys.executable, "-m", "jobgate", *args], cwd=tree, env=env, capture_output=True, text=True, check=False
    )


def test_the_guide_has_every_part():
    if not GUIDE.is_file():
        pytest.skip("no docs/ here (the compiled wheel's pass)")
    files, registration, commands = guide_parts()
    assert set(files) == {
        "jobgate/families/toy/__init__.py",
        "jobgate/families/toy/models.py",
        "jobgate/families/toy/rules.py",
        "jobgate/families/toy/policy.py",
        "toyjob.yaml",
    }
    assert registration.startswith("FAMILY_NAMES")
    assert commands == [["jobgate", "manifests", "generate"], ["jobgate", "validate", "toyjob.yaml"]]


def test_a_toy_family_added_from_the_guide_is_served(tree: Path):
    files, registration, commands = guide_parts()
    for relative, content in files.items():
        (tree / relative).parent.mkdir(parents=True, exist_ok=True)
        (tree / relative).write_text(content)
    registry = tree / "jobgate" / "families" / "__init__.py"
    text, count = re.subn(r"^FAMILY_NAMES: .*$", registration, registry.read_text(), flags=re.M)
    assert count == 1
    registry.write_text(text)

    generated = run(tree, *commands[0][1:])
    assert generated.returncode == 0, generated.stderr
    assert (tree / "manifests" / "base" / "crds" / "toy.example.com_toyjobs.yaml").is_file()
    assert '"toy.example.com", "v1", "ToyJob"' in (tree / "jobgate" / "_generated" / "family_index.py").read_text()
    assert run(tree, "manifests", "generate", "--check").returncode == 0

    denied = run(tree, *commands[1][1:])
    assert denied.returncode == 1, denied.stdout + denied.stderr
    assert 'spec.image: Invalid value: "busybox": must name a tag or a digest' in denied.stdout
    (tree / "toyjob.yaml").write_text(files["toyjob.yaml"].replace("image: busybox", "image: busybox:1.36"))
    assert run(tree, "validate", "toyjob.yaml").returncode == 0
    stored = run(tree, "default", "toyjob.yaml")
    assert stored.returncode == 0, stored.stderr
    assert "replicas: 1" in stored.stdout

    conformance = subprocess.run(
        [sys.executable, "-c", "from jobgate.families import family\n"
         "from tests.family_conformance import problems\n"
         "print(problems(family('toy')))"],
        cwd=tree, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(REPO)])},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert conformance.returncode == 0, conformance.stderr
    assert conformance.stdout.strip() == "[]"
