"""The wheel users install: one import name in site-packages, and a working command from it.

Built from the repository, installed with its dependencies into a fresh virtual environment
(pip's cache makes the second run quick), and run from a directory outside the repository so
that nothing of the source tree can stand in for what the wheel lacks.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from build_support.native import PACKAGE_DIRS

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if k != "JOBGATE_COMPILE"}
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out), str(REPO)],
        check=True,
        env=env,
        capture_output=True,
    )
    (built,) = out.glob("jobgate-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel and its dependencies; its bin directory."""
    root = tmp_path_factory.mktemp("venv")
    venv.create(root, with_pip=True)
    python = root / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "--quiet", str(wheel)], check=True, capture_output=True)
    return root / "bin"


def test_the_wheel_holds_one_top_level_name(wheel: Path):
    with zipfile.ZipFile(wheel) as archive:
        roots = {name.split("/")[0] for name in archive.namelist()}
        (dist_info,) = (r for r in roots if r.endswith(".dist-info"))
        data = dist_info.replace(".dist-info", ".data")
        assert roots == {"jobgate", dist_info, data}
        # The command: one script, installed into the environment's bin (not site-packages).
        assert [n for n in archive.namelist() if n.startswith(f"{data}/")] == [f"{data}/scripts/jobgate"]
        assert archive.read(f"{dist_info}/top_level.txt").decode().split() == ["jobgate"]
        names = set(archive.namelist())
    # The three parts kept at the repository's root are inside the package; the test harness,
    # the benchmarks and the build helpers are not shipped.
    shipped = ("webhook/server.py", "controller/engine.py", "certs/authority.py", "kube/client.py", "cli/__init__.py",
               "_generated/structural_schemas.py", "policy/check.py")  # fmt: skip
    assert [m for m in shipped if f"jobgate/{m}" not in names] == []
    assert not [
        n
        for n in names
        if n.startswith(("jobgate/envtest", "jobgate/testkit", "jobgate/bench", "jobgate/build_support"))
    ]
    # pyproject.toml lists the packages: a new subpackage missing there would be left out.
    sources = {
        f"{installed}/{path.relative_to(REPO / directory).as_posix()}"
        for installed, directory in PACKAGE_DIRS.items()
        for path in (REPO / directory).rglob("*.py")
    }
    assert sorted(sources - names) == []


def test_the_installed_command_validates_the_examples(installed: Path, tmp_path: Path):
    result = subprocess.run(
        [installed / "jobgate", "validate", str(REPO / "examples")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1, result.stderr  # the examples hold invalid jobs on purpose
    # The examples hold invalid jobs on purpose, and the cluster objects some examples need
    # (Queues, Namespaces, policy tests), which jobgate does not serve and counts as skipped.
    summary = result.stdout.rstrip().splitlines()[-1]
    counts = re.fullmatch(r"(\d+) documents: (\d+) admitted, (\d+) denied(?:, (\d+) skipped)?", summary)
    assert counts is not None, result.stdout
    assert int(counts[2]) > 0 and int(counts[3]) > 0, summary
    valid = subprocess.run(
        [installed / "python", "-m", "jobgate", "validate", str(REPO / "examples" / "valid")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert valid.returncode == 0, valid.stdout + valid.stderr


# One small valid example of each family, as bench/cli_bench.py times them.
ONE_FILE_EXAMPLES = (
    "xgboostjob-higgs.yaml",
    "mxjob-local.yaml",
    "t9k-genericjob-ps.yaml",
    "dijob-gobigger.yaml",
    "volcano-pytorch.yaml",
    "kubeflow-pytorchjob-elastic.yaml",
    "jobset-pytorch.yaml",
    # A TrainJob with its runtime beside it: two documents.
    "trainer-trainjob-torch.yaml",
)
# What `jobgate validate FILE` does not import, the command run as users run it (pip's console
# script): each of these costs a one-file check about as much as its rules, or more. argparse
# with gettext and locale (the command line is read by hand), typing and collections.abc
# (annotations only), json (messages only), importlib and warnings, math, dataclasses,
# threading (whose absence lets the command skip the interpreter's teardown: console_main in
# jobgate/cli/__init__.py), and re, enum, functools and collections (together more than a third
# of a one-file check's instructions: a valid document never needs a pattern, and the enums and
# caches are written out); a module named here stands for its submodules too.
NOT_IMPORTED_BY_ONE_FILE = (
    "argparse", "gettext", "locale", "typing", "collections", "json", "importlib", "warnings", "math",
    "dataclasses", "threading", "pydantic", "ruamel", "yaml", "aiohttp", "kubernetes",
    "re", "enum", "functools",
)  # fmt: skip
NOT_IMPORTED_DOTTED = tuple(f"{name}." for name in NOT_IMPORTED_BY_ONE_FILE)


@pytest.mark.parametrize("name", ONE_FILE_EXAMPLES)
def test_one_file_of_each_family_imports_nothing_it_does_not_need(installed: Path, tmp_path: Path, name: str):
    path = REPO / "examples" / "valid" / name
    command = [installed / "python", "-X", "importtime", installed / "jobgate", "validate", str(path)]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.rstrip().endswith(" admitted, 0 denied"), result.stdout
    imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}
    assert "jobgate.review" in imported, "the importtime output changed shape"
    assert sorted(m for m in imported if m in NOT_IMPORTED_BY_ONE_FILE or m.startswith(NOT_IMPORTED_DOTTED)) == []


def test_the_installed_environment_has_no_bare_webhook_controller_or_certs(installed: Path, tmp_path: Path):
    probe = (
        "import importlib.util, jobgate.webhook, jobgate.controller, jobgate.certs, jobgate.kube;"
        "print([n for n in ('webhook', 'controller', 'certs', 'envtest', 'testkit', 'bench', 'build_support')"
        " if importlib.util.find_spec(n) is not None])"
    )
    command = [installed / "python", "-c", probe]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_installed_command_serves_the_webhook(installed: Path, tmp_path: Path):
    """The webhook starts its large-review workers with multiprocessing's spawn, which imports the
    command's script as the main module: unguarded, each worker ran the command again."""
    import signal
    import time

    from jobgate.certs.authority import init_directory

    tls = tmp_path / "tls"
    init_directory(tls, ["localhost"], ["127.0.0.1"])
    log = tmp_path / "webhook.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [installed / "jobgate", "webhook", f"--tls-dir={tls}", "--host=127.0.0.1", "--port=0"],
            cwd=tmp_path,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 60
            while "serving /mutate and /validate" not in log.read_text() and time.monotonic() < deadline:
                assert process.poll() is None, log.read_text()
                time.sleep(0.2)
            assert "serving /mutate and /validate" in log.read_text(), log.read_text()
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
