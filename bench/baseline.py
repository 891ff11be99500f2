"""Builds of jobgate to measure side by side: this working tree, and any git ref (``--baseline REF``).

A baseline is the tree of a commit (``git archive``, so nothing of this checkout leaks in and the
repository's own worktree list is left alone) with two virtual environments of its own, as users and
the image get it: ``pure`` holds its ordinary wheel, ``compiled`` its ``JOBGATE_COMPILE=1`` wheel (the
rule engine compiled by mypyc, as ``.ci/run`` and the Dockerfile build it). Builds are kept by commit
under ``~/.cache/jobgate/bench-baselines/<sha>/`` (``$JOBGATE_BENCH_BASELINES``), outside the
repository: a second run against the same ref starts at once. A build that failed is started afresh.
Builds of one commit hold a lock (``<sha>/lock``): a bench started while another builds the same
baseline waits for it instead of building it twice at once.

Every build is run the same way: ``<python> -m jobgate ...`` in its own directory, so each benchmark
starts the working tree and its baselines with one command line.

    python -m bench.baseline REF...      # build (or find) the baselines, print where they are
"""

from __future__ import annotations

import argparse
import fcntl
import io
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("JOBGATE_BENCH_BASELINES", Path.home() / ".cache" / "jobgate" / "bench-baselines"))


@dataclass(frozen=True)
class Build:
    """One way of running jobgate: ``python -m jobgate`` run in ``cwd``, with ``env`` on top of the environment."""

    label: str
    python: Path
    cwd: Path
    env: dict[str, str] = field(default_factory=dict)
    compiled: bool = False
    baseline: str = ""  # the ref as given, for a baseline; "" for the working tree

    def command(self, *arguments: str) -> list[str]:
        return [str(self.python), "-m", "jobgate", *arguments]

    def environment(self) -> dict[str, str]:
        # A baseline must import its own installed package only, never this checkout's.
        inherited = {k: v for k, v in os.environ.items() if not (self.baseline and k == "PYTHONPATH")}
        return {**inherited, **self.env}


def working_tree(compiled_tree: Path | None = None, pure_tree: Path = REPO) -> list[Build]:
    """This checkout, pure Python (its editable install, or the copy ``pure_tree``:
    ``build_support.native.copied_tree``), and compiled in a copy when one is given."""
    builds = [Build("jobgate", Path(sys.executable), pure_tree)]
    if compiled_tree is not None:
        builds.append(Build("jobgate compiled", Path(sys.executable), compiled_tree, compiled=True))
    return builds


def add_baseline_flag(parser: argparse.ArgumentParser) -> None:
    """``--baseline REF`` (repeatable), as every bench that compares trees takes it."""
    parser.add_argument(
        "--baseline",
        action="append",
        default=[],
        metavar="REF",
        help="a git ref measured too, pure and compiled, with each figure's ratio to it (repeatable)",
    )


def resolve(ref: str) -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"--baseline {ref}: not a commit of this repository")
    return done.stdout.strip()


def _run(command: list[str], log: Path, **kwargs: object) -> None:
    with log.open("a") as handle:
        handle.write(f"$ {' '.join(map(str, command))}\n")
        handle.flush()
        done = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, check=False, **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        raise SystemExit(f"building a baseline failed: {' '.join(map(str, command))} (log: {log})")


def _export(sha: str, tree: Path) -> None:
    archive = subprocess.run(["git", "archive", "--format=tar", sha], cwd=REPO, capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(tree, filter="data")


def _environment(directory: Path, tree: Path, log: Path, *, compiled: bool) -> Path:
    """A virtual environment at ``directory`` with ``tree``'s wheel (compiled or not) and its dependencies."""
    python = directory / "bin" / "python"
    if (directory / "ready").exists():
        return python
    shutil.rmtree(directory, ignore_errors=True)
    _run([sys.executable, "-m", "venv", str(directory)], log)
    _run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"], log)
    wheels = directory / "wheels"
    env = {k: v for k, v in os.environ.items() if k not in ("JOBGATE_COMPILE", "PYTHONPATH")}
    if compiled:
        env["JOBGATE_COMPILE"] = "1"
    build = [str(python), "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(wheels), str(tree)]
    # The wheel is built from a copy: setuptools writes build/ and *.egg-info into the tree it builds.
    with_copy = directory / "source"
    shutil.copytree(tree, with_copy)
    _run([*build[:-1], str(with_copy)], log, env=env, cwd=directory)
    shutil.rmtree(with_copy)
    (wheel,) = wheels.glob("jobgate-*.whl")
    _run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], log, env=env, cwd=directory)
    (directory / "ready").write_text(wheel.name + "\n")
    return python


def baseline(ref: str, *, compiled: bool = True) -> list[Build]:
    """``ref`` built pure (and compiled when asked): its Builds, built on first use."""
    sha = resolve(ref)
    root = CACHE / sha
    root.mkdir(parents=True, exist_ok=True)
    # One builder per commit at a time: two benches started together would otherwise build (and
    # remove) the same tree and environments under each other. The second waits, then finds them ready.
    with _locked(root / "lock"):
        return _built(ref, sha, root, compiled=compiled)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (created if needed), released on exit or when the process ends."""
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for another build of {path.parent.name[:7]} ...", file=sys.stderr)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _built(ref: str, sha: str, root: Path, *, compiled: bool) -> list[Build]:
    log = root / "build.log"
    tree = root / "tree"
    if not (root / "tree.ready").exists():
        shutil.rmtree(tree, ignore_errors=True)
        _export(sha, tree)
        (root / "tree.ready").write_text(sha + "\n")
    # Run where no jobgate source lies, so that the installed package is the one imported.
    run_dir = root / "run"
    run_dir.mkdir(exist_ok=True)
    name = f"{ref} ({sha[:7]})" if not sha.startswith(ref) else sha[:7]
    variants = [("pure", False)] + ([("compiled", True)] if compiled else [])
    builds = []
    for variant, is_compiled in variants:
        print(f"baseline {name}, {variant}: {root / variant} ...", file=sys.stderr)
        python = _environment(root / variant, tree, log, compiled=is_compiled)
        label = f"{name} compiled" if is_compiled else name
        builds.append(Build(label, python, run_dir, compiled=is_compiled, baseline=ref))
    return builds


def baselines(refs: list[str], *, compiled: bool = True) -> list[Build]:
    return [build for ref in refs for build in baseline(ref, compiled=compiled)]


def counterpart(build: Build, builds: list[Build], ref: str) -> Build | None:
    """The build of baseline ``ref`` that ``build`` compares with: the same engine (pure or compiled)."""
    return next((b for b in builds if b.baseline == ref and b.compiled == build.compiled), None)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for built in baselines(sys.argv[1:]):
        print(f"{built.label}: {built.python} (run in {built.cwd})")
