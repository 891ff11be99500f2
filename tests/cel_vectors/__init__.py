"""Test vectors of the rules the apiserver enforces: jobs of each family, valid and invalid, each
naming the rules (``webhook/cel`` catalogue ids) its errors come from.

A family's vectors are ``<family>.yaml``: documents of

    name: what the case shows
    base: examples/valid/tfjob-mnist.yaml    # a job to start from (a path from the repository), or
    object: {...}                            # the job itself
    patch: {...}                             # a JSON merge patch (RFC 7386) applied to the base
    old: {...} | old_patch: {...}            # an UPDATE: the stored job (old_patch: of the base)
    rules: [replicas/types, ...]             # the rules the webhook's errors come from; [] when valid

``tests/unit/test_cel_vectors.py`` holds each vector to the webhook's verdict (offline);
``tests/e2e/test_cel_enforcement.py`` sends each to a real apiserver with only the generated CRDs
and policies in force.
"""

from __future__ import annotations

from pathlib import Path

from jobgate.generate.cel.vectors import Vector, load_vectors, merge_patch

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

__all__ = ["HERE", "REPO", "Vector", "example_files", "merge_patch", "vectors"]


def vectors(family: str | None = None) -> list[Vector]:
    return load_vectors(HERE, REPO, family)


def example_files() -> list[Path]:
    return sorted((REPO / "examples").glob("*/*.yaml"))
