"""``jobgate validate`` at repository scale: unknown fields, -j, streaming, start-up, generated schemas."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import get_args

import pytest

from jobgate.cli import main

REPO = Path(__file__).resolve().parents[2]

UNKNOWN_FIELD = """\
apiVersion: training.kubedl.io/v1alpha1
kind: TFJob
metadata:
  name: typo
spec:
  tfReplicaSpecs:
    Worker:
      replica: 2
      template:
        spec:
          containers:
            - name: tensorflow
              image: tf:2
"""


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def typo(tmp_path) -> str:
    path = tmp_path / "typo.yaml"
    path.write_text(UNKNOWN_FIELD)
    return str(path)


@pytest.mark.parametrize("flag", [[], ["--validate=strict"], ["--validate=true"], ["--validate", "strict"]])
def test_unknown_fields_are_denied_by_default_in_kubectls_words(typo, capsys, flag):
    code, out, _ = run(["validate", *flag, typo], capsys)
    assert code == 1
    assert f'{typo}:8: error: strict decoding error: unknown field "spec.tfReplicaSpecs.Worker.replica"' in out


def test_unknown_fields_warn(typo, capsys):
    code, out, _ = run(["validate", "--validate=warn", typo], capsys)
    assert code == 0
    assert f'{typo}:8: warning: unknown field "spec.tfReplicaSpecs.Worker.replica"' in out


@pytest.mark.parametrize("mode", ["ignore", "false"])
def test_unknown_fields_ignored(typo, capsys, mode):
    code, out, _ = run(["validate", f"--validate={mode}", typo], capsys)
    assert code == 0
    assert "replica" not in out


def test_unknown_top_level_fields(tmp_path, capsys):
    path = tmp_path / "top.yaml"
    path.write_text(UNKNOWN_FIELD.replace("      replica: 2\n", "") + "specs: {}\n")
    code, out, _ = run(["validate", str(path)], capsys)
    assert code == 1
    assert 'strict decoding error: unknown field "specs"' in out


def test_bad_validate_mode_is_a_usage_error(typo, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["validate", "--validate=maybe", typo])
    assert exit_info.value.code == 2


def test_the_webhook_still_only_warns_about_unknown_fields():
    from jobgate.review import kind_of, review_job
    from testkit.builders import tfjob

    job = tfjob()
    job["spec"]["tfReplicaSpecs"]["Worker"]["replica"] = 2
    verdict = review_job(kind_of(job), job)
    assert verdict.allowed
    # spec.tfReplicaSpecs[Worker].replica, or with dotted map keys spec.tfReplicaSpecs.Worker.replica
    assert any(
        w.startswith("unknown field spec.tfReplicaSpecs") and "Worker" in w and ".replica:" in w
        for w in verdict.warnings
    )


def make_tree(root: Path, count: int) -> list[Path]:
    valid = (REPO / "examples" / "valid" / "tfjob-mnist.yaml").read_text()
    invalid_files = sorted((REPO / "examples" / "invalid").glob("*.yaml"))
    paths = []
    for index in range(count):
        directory = root / f"d{index % 3}"
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"f{index:03d}.yaml"
        if index % 4 == 1:
            path.write_text(invalid_files[index % len(invalid_files)].read_text())
        elif index % 9 == 2:
            path.write_text("a: [unclosed\n")
        else:
            path.write_text(valid.replace("name: mnist", f"name: mnist-{index}"))
        paths.append(path)
    return paths


@pytest.mark.parametrize("fmt", ["text", "json", "github", "junit"])
def test_parallel_output_is_the_serial_output(tmp_path, capsys, fmt):
    make_tree(tmp_path, 40)
    serial = run(["validate", "-j", "1", "-o", fmt, str(tmp_path)], capsys)
    parallel = run(["validate", "-j", "3", "-o", fmt, str(tmp_path)], capsys)
    assert serial == parallel
    assert serial[0] == 2


def test_default_jobs_is_the_number_of_cpus(tmp_path, capsys, monkeypatch):
    from jobgate.offline import results as offline

    seen = []
    real = offline.iter_results

    def spy(paths, validation, jobs, views=None, **options):
        seen.append(jobs)
        return real(paths, validation, jobs, views, **options)

    monkeypatch.setattr(offline, "iter_results", spy)
    make_tree(tmp_path, 2)
    run(["validate", str(tmp_path)], capsys)
    assert seen == [offline.default_jobs()]


def test_jobs_must_be_positive(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["validate", "-j", "0", "x.yaml"])
    assert exit_info.value.code == 2


def test_text_output_is_streamed_and_results_are_not_kept(tmp_path, monkeypatch):
    """Memory follows the largest file: text output keeps no result once written."""
    from jobgate.offline.report import Reporter
    from jobgate.offline.results import iter_results

    make_tree(tmp_path, 12)
    written = []

    class Sink:
        def write(self, text: str) -> None:
            written.append(text)

        def flush(self) -> None:
            pass

    reporter = Reporter("text", Sink())  # type: ignore[arg-type]
    for count, results in enumerate(iter_results([str(tmp_path)]), start=1):
        reporter.add(results)
        assert len(written) == count  # each file's lines are out before the next is read
    assert reporter.run.results == []
    assert reporter.finish() == 2


def test_progress_line_only_after_two_seconds(capsys):
    from jobgate.cli.offline import _Progress

    progress = _Progress()
    progress.show(10, 1.0)
    assert capsys.readouterr().err == ""
    progress.show(500, 2.5)
    progress.clear()
    err = capsys.readouterr().err
    assert "500 files checked" in err
    assert err.endswith("\r\033[K")


def test_default_json_is_the_stored_object(tmp_path, capsys):
    path = tmp_path / "job.yaml"
    path.write_text(UNKNOWN_FIELD.replace("      replica: 2\n", "      replicas: 0x2\n") + "  backoffLimit: 010\n")
    code, out, _ = run(["default", "-o", "json", str(path)], capsys)
    assert code == 0
    stored = json.loads(out)
    assert stored["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == 2
    assert stored["spec"]["backoffLimit"] == 8
    assert stored["spec"]["cleanPodPolicy"] == "Running"


def test_one_small_file_imports_nothing_heavy(tmp_path):
    """Start-up: no pydantic (models or schema building), no aiohttp, no kubernetes client, no dataclasses."""
    path = tmp_path / "ok.yaml"
    path.write_text((REPO / "examples" / "valid" / "tfjob-mnist.yaml").read_text())
    script = textwrap.dedent(
        f"""
        import sys
        from jobgate.cli import main
        code = main(["validate", {str(path)!r}])
        roots = ("pydantic", "pydantic_core", "aiohttp", "kubernetes", "prometheus_client")
        servers = ("jobgate.controller", "jobgate.kube", "jobgate.webhook.server")
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in roots or m.startswith(servers))
        assert not heavy, heavy
        # dataclasses imports inspect, ast, dis and tokenize, and builds each class from source
        # text: more than the rules of a small file cost.
        assert "dataclasses" not in sys.modules, "imported by a module of a one-file check"
        # Nor what the quick path of `jobgate validate` leaves out (jobgate/cli/offline.py): argparse and
        # its gettext and locale, typing (annotations only), json (messages only). Each of these
        # costs a one-file check as much as its rules (tests/packaging checks the installed command).
        skipped = ("argparse", "gettext", "locale", "typing", "json")
        assert not [m for m in skipped if m in sys.modules], [m for m in skipped if m in sys.modules]
        sys.exit(code)
        """
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("paths", "code"),
    [
        (["examples/valid/mxjob-local.yaml"], 0),
        (["examples/valid", "examples/invalid"], 1),
        (["examples/valid/mxjob-local.yaml", "no-such-file.yaml"], 2),
    ],
)
def test_the_command_exits_with_every_line_written(paths, code):
    """``python -m jobgate validate`` (console_main, as the installed command) skips the
    interpreter's teardown: its output, block-buffered into a pipe, and its status are still
    those of main() run in this process."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    argv = ["validate", "-j", "1", *(str(REPO / p) for p in paths)]
    command = [sys.executable, "-m", "jobgate", *argv]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False, env=env)
    script = f"import sys; from jobgate.cli import main; sys.exit(main({argv!r}))"
    expected = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=False)
    assert (result.returncode, result.stdout, result.stderr) == (code, expected.stdout, expected.stderr)
    assert expected.returncode == code


def test_the_command_with_policies_exits_with_every_line_written(tmp_path):
    """With ``--policies`` pydantic imports threading, which starts no thread: the exit still skips
    the teardown, and writes what main() writes."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    # The examples' namespace, whose labels the cluster policy's namespaceSelector reads.
    (tmp_path / "namespaces.json").write_text(
        '{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}'
    )
    argv = ["validate", "-j", "1", "--policies", str(REPO / "examples/policies")]
    argv += ["--namespaces", str(tmp_path / "namespaces.json"), str(REPO / "examples/valid")]
    result = subprocess.run(
        [sys.executable, "-m", "jobgate", *argv], cwd=REPO, capture_output=True, text=True, check=False, env=env
    )
    script = f"import sys; from jobgate.cli import main; sys.exit(main({argv!r}))"
    expected = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=False)
    assert (result.returncode, result.stdout, result.stderr) == (expected.returncode, expected.stdout, expected.stderr)
    assert re.search(r"(\d+) documents: \1 admitted, 0 denied", result.stdout)


def test_the_generated_schema_table_is_current():
    from jobgate.generate.manifests import stale_package_tables

    assert stale_package_tables() == [], "run `jobgate manifests generate`"


def test_the_schema_table_is_what_the_models_give():
    from jobgate.engine.registry import served_kinds
    from jobgate.engine.schema import schema_table, structural_schema

    table = schema_table()
    for kind in served_kinds():
        assert table[str(kind.spec_model)] == structural_schema(kind.spec_model)


def test_a_family_naming_its_model_class_still_works():
    """Families written in the older style (spec_model=SomeSpec, a class) keep working."""
    from jobgate.engine.modelref import ModelRef, model_key
    from jobgate.engine.schema import schema_checker
    from jobgate.families.kubedl.models import TFJobSpec

    assert model_key(TFJobSpec) == "jobgate.families.kubedl.models:TFJobSpec"
    errors: list = []
    schema_checker(TFJobSpec)({"backoffLimit": "x"}, ("spec",), errors, [])
    assert any(str(e).startswith("spec.backoffLimit: Invalid value") for e in errors), errors
    assert ModelRef("jobgate.families.kubedl.models:TFJobSpec").resolve() is TFJobSpec


def test_a_model_missing_from_the_table_is_built_from_pydantic():
    from pydantic import BaseModel

    from jobgate.engine.schema import schema_checker

    class Fresh(BaseModel):
        count: int

    errors: list = []
    schema_checker(Fresh)({"count": "many"}, ("spec",), errors, [])
    assert len(errors) == 1


def test_light_constants_agree_with_the_models():
    from jobgate.api import common, constants
    from jobgate.families.kubedl import models as kubedl
    from jobgate.families.mlkube import models as mlkube

    assert get_args(common.RestartPolicy) == constants.RESTART_POLICIES
    assert get_args(common.CleanPodPolicy) == constants.CLEAN_POD_POLICIES
    assert get_args(mlkube.MxReplicaType) == constants.MX_REPLICA_TYPES
    assert get_args(mlkube.JobMode) == constants.MX_JOB_MODES
    assert (kubedl.GROUP, kubedl.VERSION) == (constants.KUBEDL_GROUP, constants.KUBEDL_VERSION)
    assert (mlkube.GROUP, mlkube.VERSION) == (constants.MLKUBE_GROUP, constants.MLKUBE_VERSION)


def test_pre_commit_hook_definition():
    from ruamel.yaml import YAML

    definition = REPO / ".pre-commit-hooks.yaml"
    if not definition.exists():
        pytest.skip("not in this copy of the tree (CI's compiled run copies tests, not the repository root)")
    hooks = YAML(typ="safe").load(definition.read_text())
    hook, policy_test = hooks
    assert policy_test["entry"] == "jobgate policy test" and policy_test["pass_filenames"] is False
    assert hook["entry"].split()[:2] == ["jobgate", "validate"]
    assert hook["language"] == "python"
    assert set(hook["types_or"]) == {"yaml", "json"}


def test_admitted_documents_point_at_their_first_line(capsys):
    path = str(REPO / "examples" / "valid" / "tfjob-mnist.yaml")  # three comment lines first
    code, out, _ = run(["validate", path], capsys)
    assert code == 0
    assert out.startswith(f"{path}:4: TFJob default/mnist: admitted")


def test_default_yaml_keeps_the_last_of_duplicate_keys_as_kubectl(tmp_path, capsys):
    from ruamel.yaml import YAML

    path = tmp_path / "dup.yaml"
    path.write_text(UNKNOWN_FIELD.replace("      replica: 2\n", "") + "  backoffLimit: 1\n  backoffLimit: 4\n")
    code, out, _ = run(["default", str(path)], capsys)
    assert code == 0
    assert YAML(typ="safe").load(out)["spec"]["backoffLimit"] == 4
    code, out, _ = run(["validate", str(path)], capsys)
    assert code == 0
    assert f'{path}:14: warning: duplicate key "backoffLimit": kubectl keeps the last value' in out
