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
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def package_dirs() -> dict[str, str]:
    """pyproject.toml's package-dir as paths: installed (``jobgate/webhook``) -> in the repository
    (``webhook``). Compiling needs the installed layout, so that mypyc names every module
    ``jobgate.…`` (it derives names from directories)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    mapping = project["tool"]["setuptools"]["package-dir"]
    return {package.replace(".", "/"): directory for package, directory in mapping.items()}


PACKAGE_DIRS = package_dirs()
TREE = ("pyproject.toml", "setup.py", "build_support", "envtest", "testkit", "bench", "tests", "examples", "manifests")

# Hot per-review code. Left out: fielderrors (a str subclass, which mypyc cannot compile
# natively) and registry (a Protocol with ``...`` defaults), both cheap; and the ``__init__`` of
# a family package (``families.volcano``: its kind, whose methods call the compiled modules):
# compiled, mypyc would give the package a ``__path__`` derived from the shared library's place,
# wrong with the library inside the package: a submodule not yet imported could not be found.
# The engine's and the shared rules' hot modules; each family names its own in its record.
SHARED_COMPILED_MODULES = (
    "jobgate.rules.quantity",
    "jobgate.rules.names",
    "jobgate.engine.jsonpatch",
    "jobgate.engine.findings",
    "jobgate.engine.schema",
    "jobgate.rules.dicts",
    "jobgate.rules.jobmeta",
    "jobgate.rules.podtemplate",
    "jobgate.rules.replicajobs",
    "jobgate.rules.crd_lists",
    "jobgate.review",
    # What a review knows: compiled, the rules read its attributes directly, not by attribute lookup.
    "jobgate.engine.context",
    # Platform policy's per-review checks (resolution is remembered; these run for every job).
    "jobgate.policy.check",
    "jobgate.policy.findings",
    "jobgate.policy.plan",
    "jobgate.policy.defaults",
    "jobgate.policy.gpu",
    "jobgate.policy.images",
    "jobgate.policy.fieldmap",
    "jobgate.policy.kinds",
    "jobgate.policy.review",
    "jobgate.policy.memo",
    # The per-entry scopes' checks, called by the pod template's loops for every container.
    "jobgate._generated.scoped_rules",
)


def module_path(module: str) -> str:
    """``jobgate.review`` → ``jobgate/review.py`` (the installed layout)."""
    return module.replace(".", "/") + ".py"


def source_path(module: str) -> Path:
    """Where ``module`` is in the repository."""
    relative = module_path(module)
    for installed, repository in sorted(PACKAGE_DIRS.items(), key=lambda item: -len(item[0])):
        if relative.startswith(installed + "/"):
            return REPO / repository / relative.removeprefix(installed + "/")
    raise ValueError(f"{module} is not in the jobgate package")


def compiled_modules() -> tuple[str, ...]:
    """Every module the compiled build compiles: the shared ones, the forms' runtime modules (the shared
    twins, then each family's record's ``form_checks``), the families' generated declared rules, then
    each family's (its record's)."""
    sys.path.insert(0, str(REPO))
    try:
        from jobgate.families import every_family
        from jobgate.forms.runtime_modules import RUNTIME_MODULES
    finally:
        sys.path.remove(str(REPO))
    families = tuple(m for record in every_family() for m in record.compiled_modules)
    # The declared rules' generated calls (docs/rule-forms.md), one module per family that declares
    # any, run by the families' compiled rules for every review.
    declared = tuple(
        module
        for module in (f"jobgate._generated.declared.{record.name}" for record in every_family())
        if source_path(module).exists()
    )
    return SHARED_COMPILED_MODULES + RUNTIME_MODULES + declared + families


COMPILED_MODULES = compiled_modules()
# mypyc's shared library (every compiled module's code) lives inside the package, not beside it
# in site-packages under a hash of the module names.
SHARED_LIBRARY_GROUP = "jobgate.rules_native"
SWITCH = "JOBGATE_COMPILE"
_IGNORED = shutil.ignore_patterns("__pycache__", "*.so", ".hypothesis", ".pytest_cache")


def compile_requirements() -> list[str]:
    """The ``compile`` extra of pyproject.toml: what compiling needs beyond setuptools."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    return list(project["project"]["optional-dependencies"]["compile"])


def stage_package(destination: Path) -> Path:
    """Copy the package's sources to ``destination`` in the installed layout (``destination/jobgate/…``)."""
    for installed, repository in PACKAGE_DIRS.items():
        shutil.copytree(REPO / repository, destination / installed, ignore=_IGNORED, dirs_exist_ok=True)
    return destination


def extensions(staged: Path) -> list[Any]:
    """mypyc's extension modules for COMPILED_MODULES of a package staged at ``staged``.

    Their C sources are written under ``staged/build`` and named by absolute path, so setuptools
    may build them from any directory.
    """
    from mypyc.build import mypycify

    here = Path.cwd()
    os.chdir(staged)
    try:
        built = list(
            mypycify(
                [module_path(m) for m in COMPILED_MODULES],
                opt_level="3",
                target_dir=str(staged / "build"),
                group_name=SHARED_LIBRARY_GROUP,
            )
        )
    finally:
        os.chdir(here)
    for extension in built:
        extension.extra_compile_args = [*extension.extra_compile_args, *LOCAL_CALLS]
    return built


# The compiled functions call one another inside one shared library. As -fPIC code with default
# visibility, each such call goes through the PLT and may be interposed, so the C compiler may
# neither inline it nor jump to it directly. Hidden symbols make them local calls; the modules'
# PyInit_ functions stay exported (Python's PyMODINIT_FUNC marks them visible). Measured:
# docs/performance.md, "Issue 48: local calls and a profile-guided build".
LOCAL_CALLS = ("-fvisibility=hidden", "-fno-semantic-interposition")


def copied_tree(destination: Path) -> Path:
    """A copy of the tree at ``destination``, the package in its installed layout, pure Python:
    ``python -m jobgate`` run there uses it (a snapshot that later edits of the tree do not reach)."""
    destination.mkdir(parents=True, exist_ok=True)
    for name in TREE:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, destination / name, ignore=_IGNORED, dirs_exist_ok=True)
        else:
            shutil.copy2(source, destination / name)
    return stage_package(destination)


def compiled_tree(destination: Path) -> Path:
    """A copy of the tree at ``destination``, the package in its installed layout with the modules
    above compiled in place: ``python -m jobgate`` run there uses them.

    Needs the ``compile`` extra and a C compiler; raises CalledProcessError with mypyc's output.
    """
    copied_tree(destination)
    subprocess.run(
        [sys.executable, "-m", "build_support.native", "--in-place", str(destination)],
        cwd=destination,
        check=True,
        capture_output=True,
        text=True,
    )
    return destination


def _build_in_place(staged: Path) -> None:
    from setuptools import setup

    from build_support.profile_guided import ProfileGuidedBuildExt

    os.chdir(staged)
    # The extensions go beside their sources by module name (build-lib = the staged root), not by
    # ``--inplace``: that places them by the staged pyproject.toml's package-dir (webhook/…, absent here).
    script_args = ["--quiet", "build_ext", "--build-lib", str(staged)]
    setup(
        name="jobgate-native",
        ext_modules=extensions(staged),
        script_args=script_args,
        cmdclass={"build_ext": ProfileGuidedBuildExt},
    )


def is_compiled(module: str) -> bool:
    """Whether ``module`` (e.g. ``jobgate.review``) is imported from an extension module."""
    import importlib

    imported = importlib.import_module(module)
    return not (imported.__file__ or "").endswith(".py")


def requested() -> bool:
    return os.environ.get(SWITCH, "") == "1"


if __name__ == "__main__":
    if sys.argv[1:2] == ["--in-place"]:
        _build_in_place(Path(sys.argv[2]).resolve())
        sys.exit(0)
    try:
        print(compiled_tree(Path(sys.argv[1]).resolve()))
    except subprocess.CalledProcessError as failure:
        sys.exit(f"compiling the rule engine failed (needs: {', '.join(compile_requirements())}):\n"
                 f"{failure.stdout}{failure.stderr}")  # fmt: skip
