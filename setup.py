"""Only the optional native build lives here; everything else is in pyproject.toml."""

from __future__ import annotations

from setuptools import setup

from build_support.native import COMPILED_MODULES, requested

ext_modules = []
if requested():
    from mypyc.build import mypycify

    ext_modules = mypycify(list(COMPILED_MODULES), opt_level="3")

setup(ext_modules=ext_modules)
