"""pyproject.toml lists the wheel's packages by hand (setuptools ``packages``): a package directory
left out is missing from every installed jobgate, yet the editable checkout imports it from the tree,
so only the compiled pass used to notice (``jobgate.forms``, ``jobgate.families.volcano.forms``)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from build_support.native import PACKAGE_DIRS

REPO = Path(__file__).resolve().parents[2]


def listed_packages() -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    return set(project["tool"]["setuptools"]["packages"])


def package_directories() -> dict[str, Path]:
    """Every directory of the package's sources that holds a .py file, by its installed dotted name
    (``webhook/`` is ``jobgate.webhook``: pyproject.toml's package-dir)."""
    found = {}
    for installed, directory in PACKAGE_DIRS.items():
        root = REPO / directory
        for source in root.rglob("*.py"):
            relative = source.parent.relative_to(root)
            if "__pycache__" in relative.parts:
                continue
            found[".".join([installed.replace("/", "."), *relative.parts])] = source.parent
    return found


def test_the_walk_finds_nested_packages_and_the_mapped_ones():
    if not (REPO / "webhook").is_dir():
        pytest.skip("no source tree here")
    found = package_directories()
    assert found["jobgate.families.volcano.forms"] == REPO / "jobgate/families/volcano/forms"
    assert found["jobgate.controller.adapters"] == REPO / "controller/adapters"


def test_every_package_directory_is_listed():
    if not (REPO / "webhook").is_dir():
        # .ci/run's compiled pass tests the installed wheel from a tree without sources.
        pytest.skip("no source tree here")
    assert sorted(set(package_directories()) - listed_packages()) == []


def test_every_listed_package_is_a_directory_of_python():
    if not (REPO / "webhook").is_dir():
        pytest.skip("no source tree here")
    assert sorted(listed_packages() - set(package_directories())) == []
