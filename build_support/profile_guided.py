"""The compiled engine's profile-guided build: GCC compiles it once instrumented, the instrumented
engine reviews every example job (valid and invalid, every served family) as /mutate and /validate
do, and GCC compiles it again with that profile.

Why: a compiled /validate took about 10 % less time with the profile than without, more than
any change of the source gained (docs/performance.md, "Issue 48: local calls and a profile-guided
build"). With a profile GCC knows which of mypyc's many error branches are cold. Functions the
training never runs are optimised as before (``-fprofile-partial-training``).

The training jobs are ``profile_jobs.json`` beside this module, written from ``examples/`` by
``python -m build_support.profile_guided`` (a test fails when it is stale), so that a build from
the image's context, which holds no examples and no YAML parser, trains on the same jobs.
When the compiler is not GCC, when ``JOBGATE_COMPILE_PROFILE=0``, or when the training fails (said
on stderr), the engine is compiled once, without a profile.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
TRAINING_JOBS = HERE / "profile_jobs.json"
EXAMPLES = HERE.parent / "examples"
TRAINING_ROUNDS = 20
SWITCH = "JOBGATE_COMPILE_PROFILE"


def instrumented(profiles: Path) -> list[str]:
    return [f"-fprofile-generate={profiles}", "-fprofile-update=single"]


def profiled(profiles: Path) -> list[str]:
    # A function the training never ran keeps the usual optimisation; an object no example reaches
    # has no profile, which is no error under mypyc's -Werror.
    return [f"-fprofile-use={profiles}", "-fprofile-partial-training", "-Wno-missing-profile"]


# Run by the build's interpreter in the built tree, which it imports: only jobgate and the
# standard library (a review of a served kind needs nothing else).
TRAINING = """
import json, sys
from jobgate.review import defaulting_patch, kind_of, review_job
jobs, rounds = json.load(open(sys.argv[1])), int(sys.argv[2])
reviewed = 0
for _ in range(rounds):
    for job in jobs:
        kind = kind_of(job)
        if kind is None:
            continue
        defaulting_patch(kind, job)
        review_job(kind, job, with_patch=False)
        reviewed += 1
if not reviewed:
    sys.exit("no training job is of a served kind")
"""


def example_jobs(examples: Path = EXAMPLES) -> list[dict[str, Any]]:
    """Every job of ``examples/valid`` and ``examples/invalid``, in file order."""
    import yaml

    jobs = []
    for path in sorted([*examples.glob("valid/*.yaml"), *examples.glob("invalid/*.yaml")]):
        for document in yaml.safe_load_all(path.read_text()):
            if isinstance(document, dict) and "apiVersion" in document and isinstance(document.get("spec"), dict):
                jobs.append(document)
    return jobs


def training_text(jobs: list[dict[str, Any]]) -> str:
    return json.dumps(jobs, indent=1, sort_keys=True) + "\n"


def _is_gcc() -> bool:
    """Whether build_ext's C compiler (``CC``, else Python's own) is GCC: the flags are GCC's."""
    command = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    try:
        answer = subprocess.run([command[0], "-v"], capture_output=True, text=True, check=False)
    except OSError:
        return False
    return "gcc version" in answer.stderr


def _train(built: Path) -> bool:
    # The built tree's own jobgate, never a checkout's on PYTHONPATH.
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", TRAINING, str(TRAINING_JOBS), str(TRAINING_ROUNDS)],
        cwd=built,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        print(
            f"profile-guided build: the training failed, compiling without a profile:\n{done.stderr[-3000:]}",
            file=sys.stderr,
        )
    return done.returncode == 0


class ProfileGuidedBuildExt(build_ext):
    """build_ext, twice around a training run when the compiler is GCC (see the module's doc)."""

    def run(self) -> None:
        self.force = True  # both compiles, whatever an earlier build left
        if os.environ.get(SWITCH, "1") == "0" or not TRAINING_JOBS.exists() or not _is_gcc():
            super().run()
            return
        # One directory for the profiles, by absolute path: the training runs elsewhere than the compiler.
        profiles = Path(self.build_temp).resolve() / "profiles"
        shutil.rmtree(profiles, ignore_errors=True)
        plain = {ext.name: (list(ext.extra_compile_args), list(ext.extra_link_args)) for ext in self.extensions}
        for ext in self.extensions:
            ext.extra_compile_args = [*plain[ext.name][0], *instrumented(profiles)]
            ext.extra_link_args = [*plain[ext.name][1], f"-fprofile-generate={profiles}"]
        compiler = self.compiler  # the option (a name or None): run() replaces it with the compiler it made
        super().run()
        trained = _train(Path(self.build_lib).resolve())
        for ext in self.extensions:
            ext.extra_compile_args = [*plain[ext.name][0], *(profiled(profiles) if trained else ())]
            ext.extra_link_args = plain[ext.name][1]
        self.compiler = compiler
        super().run()


if __name__ == "__main__":
    written = example_jobs()
    TRAINING_JOBS.write_text(training_text(written))
    print(f"{TRAINING_JOBS.relative_to(HERE.parent)}: {len(written)} jobs")
