"""Hostile files for ``jobgate validate``, ``default`` and ``review``: one line, exit 2, no traceback, no hang.

Each case runs the real command in a subprocess with a time limit, so a hang fails the
test and a crash shows up as a traceback on stderr.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from testkit.builders import admission_review, container, replica, tfjob

REPO = Path(__file__).resolve().parents[2]

VALID = """\
apiVersion: training.kubedl.io/v1alpha1
kind: TFJob
metadata:
  name: ok
spec:
  tfReplicaSpecs:
    Worker:
      template:
        spec:
          containers:
            - name: tensorflow
              image: tf:2
"""


def jobgate(*argv: str, stdin: bytes | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "jobgate", *argv],
        cwd=REPO,
        input=stdin.decode("utf-8", "surrogateescape") if stdin is not None else None,
        capture_output=True,
        text=True,
        errors="backslashreplace",
        timeout=timeout,
        check=False,
    )
    assert "Traceback" not in result.stderr, result.stderr
    assert "Traceback" not in result.stdout, result.stdout
    return result


def alias_bomb(levels: int = 10) -> str:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


# (file name, content as bytes, what the one-line message says)
HOSTILE_CONTENT = [
    ("bomb.yaml", alias_bomb().encode(), "excessive aliasing"),
    ("bomb-in-job.yaml", (VALID + "  extra: &x [a, a]\n" + alias_bomb()).encode(), "excessive aliasing"),
    ("deep-block.yaml", ("- " * 20000 + "x\n").encode(), "nesting deeper than 100 levels"),
    ("deep-flow.yaml", ("spec: " + "[" * 3000 + "]" * 3000 + "\n").encode(), "nesting deeper than 100 levels"),
    ("deep-map.yaml", "".join(" " * i + "k:\n" for i in range(1200)).encode(), "nesting deeper than 100 levels"),
    ("deep-json.json", ('{"spec": ' + "[" * 3000 + "]" * 3000 + "}").encode(), "nesting deeper than 100 levels"),
    ("bigint.yaml", ("apiVersion: v1\nkind: X\nn: " + "9" * 5000 + "\n").encode(), "longer than 1000"),
    ("surrogate-key.yaml", b'apiVersion: v1\nkind: "\\ud800"\nmetadata: {name: "\\udfff"}\n', ""),
    ("latin1.yaml", b"apiVersion: v1\nkind: Caf\xe9\n", "not UTF-8 text"),
    ("binary.yaml", b"\xff\xfe\x00\x00garbage", "not UTF-8 text"),
    ("unhashable.yaml", b"? [a]\n: 1\n", "a mapping key must be a scalar"),
    ("unhashable-map.yaml", b"? {a: 1}\n: 1\n", "a mapping key must be a scalar"),
    ("inf.yaml", (VALID + "  backoffLimit: .inf\n").encode(), "json: unsupported value"),
    ("separator.yaml", b"a: 1\n--- b: 2\n", "only a comment may follow ---"),
    ("nul.yaml", b"apiVersion: v1\x00\n", "cannot parse YAML"),
    ("tabs.yaml", b"a:\n\tb: 1\n", "cannot parse YAML"),
]


@pytest.mark.parametrize(("name", "content", "message"), HOSTILE_CONTENT, ids=[c[0] for c in HOSTILE_CONTENT])
@pytest.mark.parametrize("command", ["validate", "default"])
def test_hostile_content(tmp_path, name, content, message, command):
    path = tmp_path / name
    path.write_bytes(content)
    result = jobgate(command, str(path))
    output = result.stdout + result.stderr
    if name == "surrogate-key.yaml":
        # Read as kubectl does (U+FFFD), printed without a crash; not a job jobgate serves.
        assert result.returncode in (0, 2), output
        return
    assert result.returncode == 2, output
    assert message in output
    lines = [line for line in output.splitlines() if message in line]
    assert lines and lines[0].startswith((f"{path}:", f"jobgate: {path}:")), output


def test_surrogates_in_a_served_job_are_printed_escaped(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(VALID.replace("name: ok", 'name: "\\ud800bad"'))
    result = jobgate("validate", str(path))
    assert result.returncode == 1
    assert "metadata.name" in result.stdout


def test_a_big_document(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text(VALID + "  padding: '" + "x" * (3 * 1024 * 1024) + "'\n")
    result = jobgate("validate", str(path))
    assert result.returncode == 2
    assert f"{path}:1: error: document larger than 3 MiB" in result.stdout


def test_a_file_over_the_limit_is_not_read(tmp_path):
    path = tmp_path / "huge.yaml"
    with path.open("wb") as handle:
        handle.truncate(64 * 1024 * 1024)  # sparse: nothing is written, stat says 64 MiB
    result = jobgate("validate", str(path))
    assert result.returncode == 2
    assert f"{path}: error: larger than 32 MiB" in result.stdout


def test_dev_zero_and_other_devices():
    for device in ("/dev/zero", "/dev/null", "/dev/urandom"):
        result = jobgate("validate", device, timeout=30)
        assert result.returncode == 2
        assert f"{device}: error: not a regular file" in result.stdout


def test_a_fifo_without_a_writer_does_not_hang(tmp_path):
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    for command in (["validate"], ["default"], ["review", "validate"]):
        result = jobgate(*command, str(fifo), timeout=30)
        assert result.returncode == 2
        assert "not a regular file" in result.stdout + result.stderr


def test_symlink_loops(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    result = jobgate("validate", str(tmp_path / "a"))
    assert result.returncode == 2
    assert "too many levels of symbolic links" in result.stdout

    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "up").symlink_to(tree, target_is_directory=True)  # a directory loop
    (tree / "job.yaml").write_text(VALID)
    result = jobgate("validate", str(tree), timeout=30)
    assert result.returncode == 0, result.stdout
    assert "1 document: 1 admitted" in result.stdout


def test_a_very_long_path(tmp_path):
    long_name = str(tmp_path / ("x" * 300 + ".yaml"))
    result = jobgate("validate", long_name)
    assert result.returncode == 2
    assert "file name too long" in result.stdout.lower()
    deep = "/".join(["d" * 200] * 30)
    result = jobgate("validate", deep)
    assert result.returncode == 2


def test_missing_file_and_directory_given_as_file(tmp_path):
    result = jobgate("validate", str(tmp_path / "nope.yaml"))
    assert result.returncode == 2
    assert "no such file or directory" in result.stdout.lower()
    result = jobgate("review", "validate", str(tmp_path))
    assert result.returncode == 2
    assert "is a directory" in result.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_permission_denied(tmp_path):
    path = tmp_path / "secret.yaml"
    path.write_text(VALID)
    path.chmod(0)
    result = jobgate("validate", str(path))
    assert result.returncode == 2
    assert "permission denied" in result.stdout.lower()


def test_permission_denied_message(monkeypatch, tmp_path):
    """The same path as above for root, which the kernel lets read anything."""
    from jobgate.offline import sources

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(sources.os, "open", refuse)
    with pytest.raises(sources.SourceError, match="cannot read: permission denied"):
        sources.read_source(str(tmp_path / "x.yaml"))


def test_the_other_files_are_still_checked(tmp_path):
    bomb = tmp_path / "a-bomb.yaml"
    bomb.write_text(alias_bomb())
    good = tmp_path / "b-good.yaml"
    good.write_text(VALID)
    result = jobgate("validate", str(bomb), str(good), "/dev/zero")
    assert result.returncode == 2
    assert "TFJob ok: admitted" in result.stdout
    assert result.stdout.count(": error:") == 2


REVIEW_CASES = [
    ("deep.json", b'{"request": ' + b"[" * 50000 + b"]" * 50000 + b"}"),
    ("bomb.yaml", alias_bomb().encode()),
    ("latin1.json", b'{"kind": "Caf\xe9"}'),
    ("surrogate.json", b'{"apiVersion": "admission.k8s.io/v1", "kind": "\\ud800"}'),
    ("bigint.json", b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "x": ' + b"9" * 5000 + b"}"),
    ("unhashable.yaml", b"? [a]\n: 1\n"),
]


@pytest.mark.parametrize(("name", "content"), REVIEW_CASES, ids=[c[0] for c in REVIEW_CASES])
@pytest.mark.parametrize("webhook", ["mutate", "validate"])
def test_hostile_reviews(tmp_path, name, content, webhook):
    path = tmp_path / name
    path.write_bytes(content)
    result = jobgate("review", webhook, str(path))
    assert result.returncode == 2, result.stdout
    assert result.stdout == ""
    assert result.stderr.startswith("jobgate: ")
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_deeply_nested_job_in_a_review_is_answered(tmp_path):
    job = tfjob()
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"] = "DEEP"
    text = json.dumps(admission_review(job)).replace('"DEEP"', "[" * 2000 + '"x"' + "]" * 2000)
    path = tmp_path / "review.json"
    path.write_text(text)
    for webhook in ("mutate", "validate"):
        result = jobgate("review", webhook, str(path))
        assert result.returncode in (0, 2)
        assert len((result.stdout + result.stderr).strip().splitlines()) == 1


# A guard against a hang, not a figure: tests never assert a time. That the work stays linear
# in the findings is held by counting it (test_each_mapping_is_indexed_once).
HOSTILE_TIME_LIMIT = 300
MANY_TYPES = 10_000


def job_with_many_findings() -> dict[str, object]:
    """A TFJob of MANY_TYPES replica types, each with two findings (its name, its replicas)."""
    return tfjob({f"Worker{i}": replica(container(), replicas=-1) for i in range(MANY_TYPES)})


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_thousands_of_findings_are_located_in_time(tmp_path, suffix):
    """Each finding's line is looked up in the document: once per finding, not once per key."""
    import yaml

    job = job_with_many_findings()
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    text = json.dumps(job) if suffix == ".json" else yaml.dump(job, Dumper=dumper, sort_keys=False)
    path = tmp_path / f"types{suffix}"
    path.write_text(text)
    result = jobgate("validate", str(path), timeout=HOSTILE_TIME_LIMIT)
    assert result.returncode == 1, result.stdout[-2000:]
    errors = [line for line in result.stdout.splitlines() if ": error: " in line]
    assert len(errors) == 2 * MANY_TYPES
    written = text.splitlines()
    for i in (0, MANY_TYPES // 2, MANY_TYPES - 1):
        if suffix == ".json":
            type_line = replicas_line = 1
        else:
            type_line = written.index(f"    Worker{i}:") + 1
            replicas_line = written.index("      replicas: -1", type_line) + 1
        assert f"{path}:{type_line}: error: spec.tfReplicaSpecs[Worker{i}]: Unsupported value" in result.stdout
        assert f"{path}:{replicas_line}: error: spec.tfReplicaSpecs.Worker{i}.replicas: Invalid value" in result.stdout


def test_each_mapping_is_indexed_once(monkeypatch):
    """Locating 20,000 findings in one mapping of 10,000 keys indexes each mapping once: the work is
    the document's size plus the findings' paths, never the findings times the mapping's size."""
    import yaml

    from jobgate.offline import lines as lines_module

    job = job_with_many_findings()
    root = yaml.compose(json.dumps(job), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    mappings = 0
    stack = [root]
    while stack:
        node = stack.pop()
        if node.id == "mapping":
            mappings += 1
            stack.extend(value for _, value in node.value)
        elif node.id == "sequence":
            stack.extend(node.value)
    indexed: list[int] = []
    real_index = lines_module._index

    def counted_index(node: Any) -> Any:
        indexed.append(id(node))
        return real_index(node)

    monkeypatch.setattr(lines_module, "_index", counted_index)
    located = lines_module.NodeLines(root, 1)
    for i in range(MANY_TYPES):
        located.line_of(["spec", "tfReplicaSpecs", f"Worker{i}"])
        located.line_of(["spec", "tfReplicaSpecs", f"Worker{i}", "replicas"])
    assert len(indexed) == len(set(indexed)) <= mappings


DEPTH = 50_000
# A YAML AdmissionReview whose request nests far past the limit, in each style.
DEEP_YAML_REQUESTS = [
    ("flow-sequences", " " + "[" * DEPTH + "]" * DEPTH + "\n"),
    ("flow-mappings", " " + "{" * DEPTH + "}" * DEPTH + "\n"),
    ("flow-items", " " + "[a, " * DEPTH + "]" * DEPTH + "\n"),
    ("flow-pairs", " " + "[{a: " * (DEPTH // 2) + "1" + "}]" * (DEPTH // 2) + "\n"),
    ("flow-anchors", " " + "&a [" * DEPTH + "]" * DEPTH + "\n"),
    ("flow-lines", "\n" + " [\n" * DEPTH + " ]\n" * DEPTH),
    ("block-sequences", "\n  " + "- " * DEPTH + "x\n"),
    ("block-mappings", "\n" + "".join(" " * level + "k:\n" for level in range(1, 1200)) + " " * 1200 + "x\n"),
]


@pytest.mark.parametrize(("name", "request_text"), DEEP_YAML_REQUESTS, ids=[c[0] for c in DEEP_YAML_REQUESTS])
@pytest.mark.parametrize("webhook", ["mutate", "validate"])
def test_deeply_nested_yaml_reviews_are_refused_in_time(tmp_path, name, request_text, webhook):
    path = tmp_path / f"{name}.yaml"
    path.write_text("apiVersion: admission.k8s.io/v1\nkind: AdmissionReview\nrequest:" + request_text)
    result = jobgate("review", webhook, str(path), timeout=HOSTILE_TIME_LIMIT)
    assert result.returncode == 2, result.stdout
    assert result.stdout == ""
    # Not YAML the loader accepts, so read as JSON, which it is not either: the review's answer.
    assert result.stderr.startswith("jobgate: malformed JSON: "), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_deeply_nested_flow_collections_are_refused_in_time(tmp_path):
    path = tmp_path / "deep.yaml"
    path.write_text("apiVersion: v1\nkind: X\nspec: " + "[a, " * DEPTH + "]" * DEPTH + "\n")
    result = jobgate("validate", str(path), timeout=HOSTILE_TIME_LIMIT)
    assert result.returncode == 2
    assert f"{path}:1: error: nesting deeper than 100 levels" in result.stdout
