"""Only the optional native build lives here; everything else is in pyproject.toml."""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup

from build_support.native import extensions, requested, stage_package
from build_support.profile_guided import ProfileGuidedBuildExt

ext_modules = []
if requested():
    # mypyc needs the package in its installed layout (jobgate/webhook/…), not the repository's.
    staged = Path("build", "native").resolve()
    shutil.rmtree(staged, ignore_errors=True)
    ext_modules = extensions(stage_package(staged))

setup(ext_modules=ext_modules, cmdclass={"build_ext": ProfileGuidedBuildExt})
