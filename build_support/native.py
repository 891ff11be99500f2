"""The optional native build of the rule engine's hot path (mypyc).

``JOBGATE_COMPILE=1 pip install .`` (or ``pip wheel .``) compiles the modules below to C
extensions; the container image is built that way. Everything else, and every other
install, stays pure Python. The compiled modules are the same source: the test suite runs
against them in CI (``.ci/run``), and ``bench/webhook_bench.py`` measures both builds.

Editable installs are never compiled (see backend.py). ``python -m build_support.native DIR``
copies the tree to DIR and compiles it there in place, for CI and the benchmark.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TREE = ("pyproject.toml", "setup.py", "build_support", "webhook", "controller", "certs", "envtest", "bench",
        "tests", "examples", "manifests")  # fmt: skip

# Hot per-review code. Left out: fielderrors (a str subclass, which mypyc cannot compile
# natively) and registry (a Protocol with ``...`` defaults), both cheap.
COMPILED_MODULES = (
    "webhook/rules/quantity.py",
    "webhook/rules/names.py",
    "webhook/rules/jsonpatch.py",
    "webhook/rules/schema.py",
    "webhook/rules/jobmeta.py",
    "webhook/rules/podtemplate.py",
    "webhook/rules/families/kubedl.py",
    "webhook/rules/families/mlkube.py",
    "webhook/rules/families/t9k.py",
    "webhook/rules/families/diengine.py",
    "webhook/rules/volcano_rules.py",
    "webhook/rules/families/volcano.py",
    "webhook/rules/engine.py",
)
SWITCH = "JOBGATE_COMPILE"


def compile_requirements() -> list[str]:
    """The ``compile`` extra of pyproject.toml: what compiling needs beyond setuptools."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    return list(project["project"]["optional-dependencies"]["compile"])


def compiled_tree(destination: Path) -> Path:
    """A copy of the tree at ``destination`` with the modules above compiled in place.

    Needs the ``compile`` extra and a C compiler; raises CalledProcessError with mypyc's output.
    """
    destination.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.so", ".hypothesis", ".pytest_cache")
    for name in TREE:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, destination / name, ignore=ignore, dirs_exist_ok=True)
        else:
            shutil.copy2(source, destination / name)
    subprocess.run(
        [sys.executable, "setup.py", "--quiet", "build_ext", "--inplace"],
        cwd=destination,
        env={**os.environ, SWITCH: "1"},
        check=True,
        capture_output=True,
        text=True,
    )
    return destination


def is_compiled(module_path: str) -> bool:
    """Whether ``module_path`` (e.g. ``webhook/rules/engine.py``) is imported from an extension module."""
    import importlib

    module = importlib.import_module(module_path.removesuffix(".py").replace("/", "."))
    return not (module.__file__ or "").endswith(".py")


if __name__ == "__main__":
    try:
        print(compiled_tree(Path(sys.argv[1]).resolve()))
    except subprocess.CalledProcessError as failure:
        sys.exit(f"compiling the rule engine failed (needs: {', '.join(compile_requirements())}):\n"
                 f"{failure.stdout}{failure.stderr}")  # fmt: skip


def requested() -> bool:
    return os.environ.get(SWITCH, "") == "1"
