"""The jobgate command: exit codes, output formats, line numbers."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from xml.etree import ElementTree

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from jobgate.cli import main
from testkit.builders import admission_review, tfjob

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

VALID = """\
apiVersion: training.kubedl.io/v1alpha1
kind: TFJob
metadata:
  name: ok
spec:
  tfReplicaSpecs:
    worker:
      template:
        spec:
          containers:
            - name: tensorflow
              image: tf:2
"""

DENIED = """\
apiVersion: training.kubedl.io/v1alpha1
kind: TFJob
metadata:
  name: bad
spec:
  backoffLimit: -1
  tfReplicaSpecs:
    worker:
      replicas: -3
      template:
        spec:
          containers:
            - name: tensorflow
              image: tf:2
"""

CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data: {a: b}
"""


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def run(argv, capsys, stdin: str | None = None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_valid_file_exits_0(tmp_path, capsys):
    code, out, _ = run(["validate", write(tmp_path, "ok.yaml", VALID)], capsys)
    assert code == 0
    assert "TFJob ok: admitted" in out
    assert out.endswith("1 document: 1 admitted, 0 denied\n")


def test_denied_file_exits_1_with_lines(tmp_path, capsys):
    path = write(tmp_path, "bad.yaml", DENIED)
    code, out, _ = run(["validate", path], capsys)
    assert code == 1
    assert f"{path}:6: error: spec.backoffLimit: Invalid value: -1: spec.backoffLimit in body should be" in out
    # Reported at the key as written (worker), although defaulting renamed it to Worker.
    assert f"{path}:9: error: spec.tfReplicaSpecs.Worker.replicas: Invalid value: -3" in out


def test_missing_field_points_at_the_deepest_existing_parent(tmp_path, capsys):
    text = VALID.replace(
        "            - name: tensorflow\n              image: tf:2\n", "            - name: tensorflow\n"
    )
    path = write(tmp_path, "noimage.yaml", text)
    code, out, _ = run(["validate", path], capsys)
    assert code == 1
    assert f"{path}:11: error: spec.tfReplicaSpecs[Worker].template.spec.containers[0].image: Required value" in out


def test_multi_document_files_report_each_document(tmp_path, capsys):
    path = write(tmp_path, "multi.yaml", VALID + "---\n" + DENIED + "---\n" + CONFIGMAP + "---\n")
    code, out, _ = run(["validate", path], capsys)
    assert code == 1
    assert f"{path}:1: TFJob ok: admitted" in out
    assert f"{path}:14: TFJob bad: denied" in out
    assert f"{path}:19: error: spec.backoffLimit" in out
    assert f"{path}:29: v1 ConfigMap" not in out
    assert f"{path}:29: ConfigMap cfg: skipped (jobgate does not serve v1 ConfigMap)" in out
    assert out.endswith("3 documents: 1 admitted, 1 denied, 1 skipped\n")


def test_only_unserved_kinds_exit_0(tmp_path, capsys):
    code, out, _ = run(["validate", write(tmp_path, "cm.yaml", CONFIGMAP)], capsys)
    assert code == 0
    assert "skipped" in out


def test_directories_are_walked_recursively(tmp_path, capsys):
    write(tmp_path, "a/one.yaml", VALID)
    write(tmp_path, "a/b/two.yml", VALID.replace("name: ok", "name: ok2"))
    write(tmp_path, "a/b/three.json", json.dumps(tfjob(name="ok3")))
    write(tmp_path, "a/notes.txt", "not a manifest")
    code, out, _ = run(["validate", str(tmp_path / "a")], capsys)
    assert code == 0
    assert out.endswith("3 documents: 3 admitted, 0 denied\n")


def test_stdin(capsys, monkeypatch):
    code, out, _ = run(["validate", "-"], capsys, stdin=DENIED, monkeypatch=monkeypatch)
    assert code == 1
    assert "<stdin>:6: error: spec.backoffLimit" in out


def test_list_kind_is_expanded(tmp_path, capsys):
    listing = {"apiVersion": "v1", "kind": "List", "items": [tfjob(name="one"), tfjob(name="two", backoffLimit=-1)]}
    code, out, _ = run(["validate", write(tmp_path, "list.json", json.dumps(listing, indent=1))], capsys)
    assert code == 1
    assert "TFJob default/one: admitted" in out
    assert "TFJob default/two: denied" in out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: [unclosed\n", "cannot parse YAML"),
        ("a: 1\n  b: 2\n", "cannot parse YAML"),
        ("- just\n- a list\n", "not a Kubernetes object"),
        ("metadata: {name: x}\n", "apiVersion and kind are required"),
    ],
)
def test_unparseable_input_exits_2(tmp_path, capsys, text, message):
    path = write(tmp_path, "broken.yaml", text)
    code, out, _ = run(["validate", path, write(tmp_path, "ok.yaml", VALID)], capsys)
    assert code == 2
    assert message in out
    assert "TFJob ok: admitted" in out  # the other files are still checked


def test_binary_file_exits_2(tmp_path, capsys):
    path = tmp_path / "blob.yaml"
    path.write_bytes(b"\xff\xfe\x00garbage")
    code, out, _ = run(["validate", str(path)], capsys)
    assert code == 2
    assert "not UTF-8 text" in out


def test_missing_path_exits_2(tmp_path, capsys):
    code, out, _ = run(["validate", str(tmp_path / "nope.yaml")], capsys)
    assert code == 2
    assert "no such file or directory" in out


@pytest.mark.parametrize("argv", [[], ["validate"], ["validate", "-o", "xml", "x.yaml"], ["frobnicate"]])
def test_usage_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2


# Words a `jobgate validate` command line is made of, the odd ones included.
QUICK_WORDS = ["-o", "--output", "-j", "--jobs", "--validate", "--queues", "-h", "--", "-", "--out", "-oj", "-j2",
               "--output=json", "--output=", "--jobs=2", "--jobs=0", "--validate=warn", "--validate=no", "text",
               "json", "junit", "github", "xml", "1", "2", "0", "-1", " 3", "1_0", "strict", "warn", "ignore",
               "true", "false", "a.yaml", "dir/", "", "--x=y", "-x", "--policies", "--namespaces", "--namespace",
               "--policies=p.yaml", "--policies=", "--namespaces=n.yaml", "--namespace=team-a", "--queues=q.yaml",
               "--namespace=-x", "--polic", "--names", "p/", "team-a", "--cluster-objects",
               "--cluster-objects=c.yaml", "--cluster-objects="]  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(words=st.lists(st.sampled_from(QUICK_WORDS), max_size=7))
def test_the_quick_parse_reads_what_argparse_reads(words):
    """`jobgate validate` without argparse (jobgate/cli/offline.py): whatever it accepts, argparse accepts
    and reads the same; the rest it leaves to argparse."""
    from jobgate.cli.offline import quick_validate_arguments as _quick_validate_arguments
    from jobgate.cli.parser import build_parser

    arguments = ["validate", *words]
    quick = _quick_validate_arguments(arguments)
    if quick is None:
        return
    parsed = build_parser("validate").parse_args(arguments)  # SystemExit: the quick parse took a usage error
    fields = (
        "command",
        "paths",
        "output",
        "validate",
        "jobs",
        "queues",
        "policies",
        "namespaces",
        "namespace",
        "cluster_objects",
        "handler",
    )
    assert [getattr(quick, f) for f in fields] == [getattr(parsed, f) for f in fields]


@pytest.mark.parametrize(
    "words",
    [
        ["a.yaml"],
        ["-o", "json", "a.yaml", "b.yaml"],
        ["a.yaml", "-j", "1"],
        ["--output=github", "--jobs=3", "--validate=false", "a.yaml"],
        ["--validate", "warn", "-o", "junit", "-"],
        ["--policies", "p.yaml", "--policies=dir/", "--namespaces", "n.yaml", "--namespace=team-a", "a.yaml"],
        ["-j", "1", "--queues", "q.yaml", "--policies", "p.yaml", "a.yaml", "b.yaml"],
    ],
)
def test_the_quick_parse_takes_the_common_command_lines(words):
    from jobgate.cli.offline import quick_validate_arguments as _quick_validate_arguments

    assert _quick_validate_arguments(["validate", *words]) is not None


def test_json_output(tmp_path, capsys):
    path = write(tmp_path, "multi.yaml", VALID + "---\n" + DENIED)
    code, out, _ = run(["validate", "-o", "json", path], capsys)
    report = json.loads(out)
    assert code == report["exitCode"] == 1
    assert report["summary"] == {"admitted": 1, "denied": 1, "skipped": 0, "error": 0}
    denied = report["documents"][1]
    assert (denied["kind"], denied["name"], denied["outcome"], denied["line"]) == ("TFJob", "bad", "denied", 14)
    assert denied["errors"][0] == {
        "line": 19,
        "field": "spec.backoffLimit",
        "message": "spec.backoffLimit: Invalid value: -1: "
        "spec.backoffLimit in body should be greater than or equal to 0",
        "rule": "schema/ranges",
    }


def test_junit_output(tmp_path, capsys):
    path = write(tmp_path, "multi.yaml", VALID + "---\n" + DENIED + "---\n" + CONFIGMAP)
    code, out, _ = run(["validate", "-o", "junit", path], capsys)
    assert code == 1
    suite = ElementTree.fromstring(out).find("testsuite")
    assert suite.attrib["tests"] == "3"
    assert suite.attrib["failures"] == "1"
    assert suite.attrib["skipped"] == "1"
    cases = suite.findall("testcase")
    failure = cases[1].find("failure")
    assert f"{path}:19: spec.backoffLimit" in failure.text
    assert cases[2].find("skipped") is not None


def test_github_output(tmp_path, capsys):
    path = write(tmp_path, "bad.yaml", DENIED)
    code, out, _ = run(["validate", "-o", "github", path], capsys)
    assert code == 1
    escaped = path.replace(":", "%3A").replace(",", "%2C")
    assert f"::error file={escaped},line=6,title=jobgate%3A TFJob bad::spec.backoffLimit: Invalid value: -1" in out
    assert "in body should be greater than or equal to 0 [schema/ranges]\n" in out


def test_default_prints_the_stored_object(tmp_path, capsys):
    path = write(tmp_path, "multi.yaml", "# my job\n" + VALID + "---\n" + CONFIGMAP)
    code, out, err = run(["default", path], capsys)
    assert code == 0
    assert "ConfigMap cfg: jobgate does not serve v1 ConfigMap" in err
    assert out.startswith("# my job\n")
    (document,) = list(YAML(typ="safe").load_all(out))
    worker = document["spec"]["tfReplicaSpecs"]["Worker"]
    assert (worker["replicas"], worker["restartPolicy"]) == (1, "ExitCode")
    assert document["spec"]["cleanPodPolicy"] == "Running"


def test_default_on_unparseable_input_exits_2(tmp_path, capsys):
    code, _, err = run(["default", write(tmp_path, "x.yaml", "a: [\n")], capsys)
    assert code == 2
    assert "cannot parse YAML" in err


@pytest.mark.parametrize(("webhook", "allowed"), [("mutate", True), ("validate", False)])
def test_review_prints_the_exact_response(tmp_path, capsys, webhook, allowed):
    path = write(tmp_path, "review.json", json.dumps(admission_review(tfjob(backoffLimit=-1), uid="u-1")))
    code, out, _ = run(["review", webhook, path], capsys)
    assert code == 0
    response = json.loads(out)["response"]
    assert (response["uid"], response["allowed"]) == ("u-1", allowed)


def test_review_names_the_rules_of_a_denial_on_stderr_only(tmp_path, capsys):
    from jobgate.webhook.admission import Webhook, review_body

    review = json.dumps(admission_review(tfjob(backoffLimit=-1), uid="u-1"))
    path = write(tmp_path, "review.json", review)
    code, out, err = run(["review", "validate", path], capsys)
    assert code == 0
    assert out == review_body(review, Webhook.VALIDATE).decode() + "\n"
    assert "jobgate: spec.backoffLimit: rule schema/ranges" in err
    _, _, err = run(["review", "mutate", path], capsys)
    assert "rule" not in err


def test_review_names_the_rules_of_warnings_on_stderr_only(tmp_path, capsys):
    from jobgate.webhook.admission import Webhook, review_body
    from testkit.builders import container, replica

    job = tfjob({"Worker": replica(container(), pod_spec={"restartPolicy": "Always"})})
    review = json.dumps(admission_review(job, uid="u-2"))
    code, out, err = run(["review", "validate", write(tmp_path, "review.json", review)], capsys)
    assert code == 0
    answer = json.loads(out)["response"]
    # The webhook's warning is the peers' text as it is; only stderr names its rule.
    assert answer["warnings"] == json.loads(review_body(review, Webhook.VALIDATE))["response"]["warnings"]
    assert not any("[pod-template/" in warning for warning in answer["warnings"])
    assert "rule pod-template/restart-policy-overridden" in err


def test_review_from_stdin(capsys, monkeypatch):
    code, out, _ = run(
        ["review", "mutate"], capsys, stdin=json.dumps(admission_review(tfjob())), monkeypatch=monkeypatch
    )
    assert code == 0
    assert json.loads(out)["response"]["patchType"] == "JSONPatch"


@pytest.mark.parametrize("text", ["{", "[]", "apiVersion: v1\nkind: Pod\n", ""])
def test_review_of_something_else_exits_2(tmp_path, capsys, text):
    code, out, err = run(["review", "validate", write(tmp_path, "r.json", text)], capsys)
    assert code == 2
    assert out == ""
    assert err.startswith("jobgate: ")


def test_bundled_examples(capsys):
    code, out, _ = run(["validate", str(EXAMPLES / "valid")], capsys)
    assert code == 0, out
    for path in sorted((EXAMPLES / "invalid").glob("*.yaml")):
        code, out, _ = run(["validate", str(path)], capsys)
        assert code == 1, out


def test_offline_path_imports_no_server_or_cluster_client(tmp_path):
    path = write(tmp_path, "ok.yaml", VALID)
    script = textwrap.dedent(
        f"""
        import sys
        from jobgate.cli import main
        code = main(["validate", {path!r}])
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("aiohttp", "kubernetes", "prometheus_client"))
        assert not heavy, heavy
        sys.exit(code)
        """
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_version_prints_the_installed_version(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"jobgate {version('jobgate')}"


@pytest.mark.parametrize("command", ["controller", "webhook"])
def test_every_flag_of_the_long_running_commands_has_help(command):
    from jobgate.cli.parser import build_parser

    parser = build_parser(command)
    subparsers = next(a for a in parser._actions if a.dest == "command")
    undocumented = [
        action.option_strings[0]
        for action in subparsers.choices[command]._actions
        if action.option_strings and action.help is None
    ]
    assert undocumented == []


def test_the_summary_counts_errors_in_the_plural(tmp_path, capsys):
    write(tmp_path, "a.yaml", "kind: Nothing\n")
    write(tmp_path, "b.yaml", "kind: Nothing\n")
    code, out, _ = run(["validate", str(tmp_path)], capsys)
    assert code == 2
    assert out.splitlines()[-1] == "2 documents: 0 admitted, 0 denied, 2 errors"
    (tmp_path / "b.yaml").unlink()
    _, out, _ = run(["validate", str(tmp_path)], capsys)
    assert out.splitlines()[-1] == "1 document: 0 admitted, 0 denied, 1 error"
