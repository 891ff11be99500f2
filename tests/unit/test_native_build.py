"""The optional mypyc build of the rule engine (``build_support/native.py``).

CI builds a JOBGATE_COMPILE=1 wheel, installs it in its own environment and runs the unit and
server tests against it with JOBGATE_EXPECT_COMPILED=1: the compiled modules pass the very
tests the source passes.
"""

from __future__ import annotations

import os

import pytest

from build_support.native import COMPILED_MODULES, compile_requirements, is_compiled, source_path
from jobgate.review import engine_build

EXPECT_COMPILED = os.environ.get("JOBGATE_EXPECT_COMPILED") == "1"


def test_mypy_is_a_compile_requirement():
    assert any(r.startswith("mypy") for r in compile_requirements())


@pytest.mark.skipif(not EXPECT_COMPILED, reason="source tree (.ci/run compiles a copy)")
def test_the_rule_engine_runs_compiled():
    assert [m for m in COMPILED_MODULES if not is_compiled(m)] == []
    assert engine_build() == "compiled (mypyc)"


@pytest.mark.skipif(EXPECT_COMPILED, reason="compiled tree")
def test_the_source_tree_runs_pure_python():
    for module in COMPILED_MODULES:
        assert source_path(module).is_file(), module
    # A stray extension module in the source tree would shadow edits of its .py file.
    assert [m for m in COMPILED_MODULES if is_compiled(m)] == []
    assert engine_build() == "pure Python"


@pytest.mark.skipif(not EXPECT_COMPILED, reason="source tree (.ci/run installs the compiled wheel)")
def test_the_compiled_wheel_installs_one_top_level_name():
    from importlib.metadata import distribution

    dist = distribution("jobgate")
    roots = {file.parts[0] for file in dist.files or [] if file.parts[0] != ".."}  # ../../bin/jobgate
    assert roots == {"jobgate", f"jobgate-{dist.version}.dist-info"}


def test_every_family_module_is_compiled():
    """A family's rule classes subclass compiled ones (replicajobs, podtemplate): left interpreted,
    its module would fail to import from a compiled wheel ("interpreted classes cannot inherit
    from compiled"), as a new family once did in the image."""
    if EXPECT_COMPILED:
        pytest.skip("compiled tree: no sources to list")
    from jobgate.families import every_family

    modules = set()
    for record in every_family():
        # A rules package (Volcano's) compiles its modules, never its __init__ (see native.py).
        package = source_path(record.rules).with_suffix("")
        if not package.is_dir():
            modules.add(record.rules)
            continue
        modules |= {f"{record.rules}.{path.stem}" for path in package.glob("*.py") if path.name != "__init__.py"}
    assert sorted(modules - set(COMPILED_MODULES)) == []


def test_the_profile_training_jobs_are_the_examples():
    """The image's build context has no examples and no YAML parser: the profile-guided build
    trains on their copy in build_support/profile_jobs.json, written by
    ``python -m build_support.profile_guided``."""
    if EXPECT_COMPILED:
        pytest.skip("compiled tree: the source's examples are not beside build_support")
    from build_support.profile_guided import TRAINING_JOBS, example_jobs, training_text

    jobs = example_jobs()
    assert {job["apiVersion"] for job in jobs} >= {"training.kubedl.io/v1alpha1", "batch.volcano.sh/v1alpha1"}
    assert TRAINING_JOBS.read_text() == training_text(jobs), "run: python -m build_support.profile_guided"


def test_the_profile_training_reviews_every_family():
    """The training the profile-guided build runs succeeds, and reaches every family: a failure
    there would silently give a build without a profile (said only on the build's stderr)."""
    import json
    import subprocess
    import sys

    from build_support.profile_guided import TRAINING, TRAINING_JOBS
    from jobgate.review import kind_of

    done = subprocess.run(
        [sys.executable, "-c", TRAINING, str(TRAINING_JOBS), "1"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    served = set()
    for job in json.loads(TRAINING_JOBS.read_text()):
        kind = kind_of(job)
        if kind is not None:
            served.add(kind.family)
    from jobgate.families import every_family

    assert served == {record.name for record in every_family()}
