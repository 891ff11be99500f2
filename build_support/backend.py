"""setuptools' build backend, plus the native build switch (``JOBGATE_COMPILE=1``).

PEP 517 lets an in-tree backend add build requirements at build time; pyproject.toml cannot
make them depend on an environment variable. Editable installs are always pure Python: a
compiled module in the source tree would shadow later edits of its ``.py`` file.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403 - the backend is setuptools' own

from build_support.native import SWITCH, compile_requirements, requested

Settings = dict[str, Any] | None


def get_requires_for_build_wheel(config_settings: Settings = None) -> list[str]:
    if requested():
        # setuptools' own answer runs setup.py, which cannot import mypyc before it is installed.
        return compile_requirements()
    return _setuptools.get_requires_for_build_wheel(config_settings)


def _pure_python() -> None:
    if requested():
        print(f"{SWITCH}=1 ignored for an editable install", file=sys.stderr)
        del os.environ[SWITCH]


def get_requires_for_build_editable(config_settings: Settings = None) -> list[str]:
    _pure_python()
    return _setuptools.get_requires_for_build_editable(config_settings)


def prepare_metadata_for_build_editable(metadata_directory: str, config_settings: Settings = None) -> str:
    _pure_python()
    return _setuptools.prepare_metadata_for_build_editable(metadata_directory, config_settings)


def build_editable(
    wheel_directory: str, config_settings: Settings = None, metadata_directory: str | None = None
) -> str:
    _pure_python()
    return _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)


def build_wheel(wheel_directory: str, config_settings: Settings = None, metadata_directory: str | None = None) -> str:
    # setuptools copies the package into build/ and never removes a module deleted from the tree
    # since the last build: without a fresh build/, a wheel could ship a module that is gone.
    shutil.rmtree("build", ignore_errors=True)
    return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)
