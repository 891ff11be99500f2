"""``jobgate policy test [PATH...]``: declarative tests of platform policies, run offline by the same
engine as ``jobgate validate``.

A test file (``jobgate-test.yaml``; a directory is searched recursively for files of that name, a
file given by path is read whatever its name) names the policies and exceptions, the other cluster
objects, the jobs, and what each job must give::

    apiVersion: jobgate.io/v1alpha1
    kind: PolicyTest
    name: gpu-caps                     # optional, shown in the results
    policies: [policies/]              # as --policies: policies and TrainingJobPolicyExceptions
    clusterObjects: [cluster.yaml]     # as --cluster-objects: Namespaces, Queues, DRA objects, ...
    namespace: team-a                  # as --namespace: for jobs that name none
    now: "2026-12-01T00:00:00Z"        # as --now: the time exceptions are judged at
    jobs: [jobs/]                      # job manifests (files or directories)
    results:
    - job: big-run                     # the job's name, or namespace/name
      kind: TFJob                      # optional: when a name is not enough
      outcome: denied                  # admitted (no warning) | warned (admitted, warnings) | denied
      rules: [policy/max-gpus-per-job] # optional: the rule ids of its errors (denied) or warnings (warned)
      stored:                          # optional: fields of the object as stored (defaults)
        spec.ttlSecondsAfterFinished: 3600
        metadata.labels[team]: a       # [key] for a map key with dots or slashes; null: absent

Paths are relative to the test file. Exit status: 0 every expectation met, 1 any not met, 2 a test
file, a path or a policy that cannot be used (the message says which and why). ``--update`` writes
each file's ``results`` from what the engine now says (rules and the stored fields already listed).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from jobgate.cli.offline import EXIT_DENIED, EXIT_OK, EXIT_USAGE

TEST_FILE = "jobgate-test.yaml"
API_VERSION = "jobgate.io/v1alpha1"
KIND = "PolicyTest"
OUTCOMES = ("admitted", "warned", "denied")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Expectation(_Model):
    job: Annotated[str, Field(min_length=1)]
    kind: str | None = None
    outcome: Literal["admitted", "warned", "denied"]
    rules: list[str] | None = None
    stored: dict[str, Any] | None = None


class PolicyTestFile(_Model):
    apiVersion: Literal["jobgate.io/v1alpha1"]
    kind: Literal["PolicyTest"]
    name: str | None = None
    policies: list[str] = Field(default_factory=list)
    clusterObjects: list[str] = Field(default_factory=list)
    namespace: str | None = None
    now: str | None = None
    jobs: Annotated[list[str], Field(min_length=1)]
    results: list[Expectation] = Field(default_factory=list)


class BadTest(Exception):
    """A test that cannot be run: the message says which file and why."""


class JobResult:
    """What the engine says of one job."""

    def __init__(self, job: str, kind: str, outcome: str, rules: list[str], stored: dict[str, Any]) -> None:
        self.job = job
        self.kind = kind
        self.outcome = outcome
        self.rules = rules
        self.stored = stored


class Checked:
    """One expectation with what the engine said, and why they differ (empty: passed)."""

    def __init__(self, expected: Expectation | None, got: JobResult, reasons: list[str]) -> None:
        self.expected = expected
        self.got = got
        self.reasons = reasons

    @property
    def passed(self) -> bool:
        return not self.reasons


class TestRun:
    def __init__(self, path: Path, name: str, checked: list[Checked]) -> None:
        self.path = path
        self.name = name
        self.checked = checked


# --- reading ---------------------------------------------------------------------------------


def test_files(paths: list[str]) -> list[Path]:
    """The test files under ``paths`` (a directory: every ``jobgate-test.yaml`` below it)."""
    found: list[Path] = []
    for given in paths or ["."]:
        path = Path(given)
        if path.is_dir():
            found += sorted(p for p in path.rglob(TEST_FILE) if ".git" not in p.parts)
        elif path.is_file():
            found.append(path)
        else:
            raise BadTest(f"{given}: no such file or directory")
    if not found:
        raise BadTest(f"no {TEST_FILE} under {', '.join(paths or ['.'])}")
    return found


def read_test(path: Path) -> PolicyTestFile:
    import yaml

    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise BadTest(f"{path}: cannot be read: {exc}") from None
    except yaml.YAMLError as exc:
        raise BadTest(f"{path}: not YAML: {exc}".splitlines()[0]) from None
    try:
        return PolicyTestFile.model_validate(data)
    except ValidationError as exc:
        lines = []
        for error in exc.errors(include_url=False):
            where = ".".join(str(p) for p in error["loc"]) or "(the document)"
            lines.append(f"{path}: {where}: {error['msg']}")
        raise BadTest("\n".join(lines)) from None


# --- running ---------------------------------------------------------------------------------


class _Arguments:
    """What the offline commands' loader reads of a command line, from a test file."""

    def __init__(self, spec: PolicyTestFile, base: Path) -> None:
        self.queues = None
        self.namespaces = None
        self.policies = [str(_relative(base, p)) for p in spec.policies] or None
        self.cluster_objects = [str(_relative(base, p)) for p in spec.clusterObjects] or None
        self.namespace = spec.namespace
        self.now = None
        if spec.now is not None:
            from jobgate.policy.exceptions import parse_time

            self.now = parse_time(spec.now)
            if self.now is None:
                raise BadTest(f"{base / TEST_FILE}: now: {spec.now!r} is not an RFC 3339 date-time with a time zone")


def _relative(base: Path, given: str) -> Path:
    path = base / given
    if not path.exists():
        raise BadTest(f"{base}: {given}: no such file or directory")
    return path


def run_test(path: Path, spec: PolicyTestFile) -> list[JobResult]:
    """What the engine says of every job the test names (stored objects kept whole)."""
    import contextlib
    import io

    from jobgate.cli.offline import _cluster_views
    from jobgate.offline.results import DocumentResult, Outcome, evaluate, job_documents, load

    base = path.parent
    arguments = _Arguments(spec, base)
    errors = io.StringIO()
    with contextlib.redirect_stderr(errors):
        views, readable = _cluster_views(arguments)  # type: ignore[arg-type]
    if not readable:
        raise BadTest(f"{path}: the policies or cluster objects cannot be used:\n{errors.getvalue().rstrip()}")
    outcomes: list[JobResult] = []
    job_paths = [str(_relative(base, p)) for p in spec.jobs]
    for item in load(job_paths):
        if isinstance(item, DocumentResult):
            raise BadTest(f"{path}: {item.source}:{item.line}: {item.reason}")
        for obj, prefix in job_documents(item):
            result, verdict = evaluate(item, obj, prefix, with_patch=False, views=views)
            if result.outcome is Outcome.SKIPPED or result.api_version.startswith("policy.jobgate.io/"):
                continue  # not a job (a policy kept beside the jobs is read by `policies:`)
            if result.outcome is Outcome.ERROR:
                raise BadTest(f"{path}: {result.source}:{result.line}: {result.reason}")
            if result.errors:
                outcome, rules = "denied", sorted({e.rule for e in result.errors if e.rule})
            elif result.warnings:
                outcome, rules = "warned", sorted({w.rule for w in result.warnings if w.rule})
            else:
                outcome, rules = "admitted", []
            stored = verdict.defaulted if verdict is not None else {}
            outcomes.append(JobResult(f"{result.namespace}/{result.name}", result.kind, outcome, rules, stored))
    return outcomes


def _select(expected: Expectation, outcomes: list[JobResult], path: Path) -> JobResult:
    def named(o: JobResult) -> bool:
        name = o.job.partition("/")[2]
        return expected.job in (name, o.job) and (expected.kind is None or expected.kind == o.kind)

    matching = [o for o in outcomes if named(o)]
    if not matching:
        raise BadTest(f"{path}: results: no job {expected.job!r}{_of_kind(expected)} among the test's jobs")
    if len(matching) > 1:
        listed = ", ".join(f"{o.kind} {o.job}" for o in matching)
        raise BadTest(f"{path}: results: {expected.job!r} names several jobs ({listed}): give namespace/name or kind")
    return matching[0]


def _of_kind(expected: Expectation) -> str:
    return f" of kind {expected.kind}" if expected.kind else ""


_SEGMENT = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]")


def field_at(obj: Any, dotted: str) -> Any:
    """The value at ``spec.a[key].b[0]`` in ``obj`` (None when absent)."""
    node = obj
    for plain, bracketed in _SEGMENT.findall(dotted):
        key: Any = plain or bracketed
        if isinstance(node, list):
            try:
                node = node[int(key)]
            except (ValueError, IndexError):
                return None
        elif isinstance(node, dict):
            node = node.get(key)
        else:
            return None
        if node is None:
            return None
    return node


def compare(expected: Expectation, got: JobResult) -> list[str]:
    reasons = []
    if expected.outcome != got.outcome:
        reasons.append(f"outcome: expected {expected.outcome}, got {got.outcome}")
    if expected.rules is not None and sorted(set(expected.rules)) != got.rules:
        reasons.append(f"rules: expected [{', '.join(sorted(set(expected.rules)))}], got [{', '.join(got.rules)}]")
    for dotted, value in (expected.stored or {}).items():
        actual = field_at(got.stored, dotted)
        if actual != value:
            reasons.append(f"stored {dotted}: expected {json.dumps(value)}, got {json.dumps(actual)}")
    return reasons


def check(path: Path) -> TestRun:
    spec = read_test(path)
    outcomes = run_test(path, spec)
    checked: list[Checked] = []
    seen: set[int] = set()
    for expected in spec.results:
        got = _select(expected, outcomes, path)
        seen.add(id(got))
        checked.append(Checked(expected, got, compare(expected, got)))
    for got in outcomes:
        if id(got) not in seen:
            checked.append(Checked(None, got, []))  # no expectation: listed, never failed
    return TestRun(path, spec.name or str(path), checked)


# --- writing expectations ----------------------------------------------------------------------


def update(run: TestRun) -> None:
    """Rewrite the file's ``results`` with what the engine said (comments elsewhere kept)."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.width = 4096
    data = yaml.load(run.path.read_text())
    results = []
    for checked in run.checked:
        got, expected = checked.got, checked.expected
        entry: dict[str, Any] = {"job": got.job if expected is None else expected.job}
        if expected is not None and expected.kind is not None:
            entry["kind"] = expected.kind
        elif expected is None:
            entry["kind"] = got.kind
        entry["outcome"] = got.outcome
        if got.rules:
            entry["rules"] = list(got.rules)
        if expected is not None and expected.stored:
            entry["stored"] = {dotted: field_at(got.stored, dotted) for dotted in expected.stored}
        results.append(entry)
    data["results"] = results
    import io

    buffer = io.StringIO()
    yaml.dump(data, buffer)
    run.path.write_text(buffer.getvalue())


# --- reporting ---------------------------------------------------------------------------------


def _expected_text(checked: Checked) -> str:
    expected = checked.expected
    if expected is None:
        return "(no expectation)"
    rules = f" [{', '.join(expected.rules)}]" if expected.rules else ""
    return f"{expected.outcome}{rules}"


def _got_text(got: JobResult) -> str:
    rules = f" [{', '.join(got.rules)}]" if got.rules else ""
    return f"{got.outcome}{rules}"


def render_table(runs: list[TestRun]) -> str:
    rows = [("TEST", "JOB", "EXPECTED", "GOT", "RESULT")]
    details: list[str] = []
    for run in runs:
        for checked in run.checked:
            verdict = "-" if checked.expected is None else ("pass" if checked.passed else "FAIL")
            job = f"{checked.got.kind} {checked.got.job}"
            rows.append((run.name, job, _expected_text(checked), _got_text(checked.got), verdict))
            details += [f"{run.path}: {job}: {reason}" for reason in checked.reasons]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True)) + "  " + row[4]
             for row in rows]  # fmt: skip
    passed, failed = _counts(runs)
    lines += details
    lines.append(f"{passed + failed} results: {passed} passed, {failed} failed")
    return "\n".join(lines) + "\n"


def _counts(runs: list[TestRun]) -> tuple[int, int]:
    done = [c for run in runs for c in run.checked if c.expected is not None]
    failed = sum(not c.passed for c in done)
    return len(done) - failed, failed


def render_json(runs: list[TestRun]) -> str:
    passed, failed = _counts(runs)
    tests = []
    for run in runs:
        results = []
        for checked in run.checked:
            got = checked.got
            entry: dict[str, Any] = {
                "job": got.job,
                "kind": got.kind,
                "got": {"outcome": got.outcome, "rules": got.rules},
                "passed": None if checked.expected is None else checked.passed,
                "reasons": checked.reasons,
            }
            if checked.expected is not None:
                entry["expected"] = checked.expected.model_dump(exclude_none=True)
            results.append(entry)
        tests.append({"file": str(run.path), "name": run.name, "results": results})
    body = {
        "tests": tests,
        "summary": {"passed": passed, "failed": failed},
        "exitCode": EXIT_DENIED if failed else EXIT_OK,
    }
    return json.dumps(body, indent=2) + "\n"


def render_junit(runs: list[TestRun]) -> str:
    from xml.sax.saxutils import escape, quoteattr

    lines = ['<?xml version="1.0" encoding="UTF-8"?>']
    passed, failed = _counts(runs)
    lines.append(f'<testsuites name="jobgate policy test" tests="{passed + failed}" failures="{failed}">')
    for run in runs:
        done = [c for c in run.checked if c.expected is not None]
        failures = sum(not c.passed for c in done)
        lines.append(f'  <testsuite name={quoteattr(run.name)} tests="{len(done)}" failures="{failures}">')
        for checked in done:
            name = quoteattr(f"{checked.got.kind} {checked.got.job}: {_expected_text(checked)}")
            if checked.passed:
                lines.append(f"    <testcase classname={quoteattr(str(run.path))} name={name}/>")
            else:
                message = escape("; ".join(checked.reasons))
                lines.append(f"    <testcase classname={quoteattr(str(run.path))} name={name}>")
                lines.append(f"      <failure message={quoteattr('; '.join(checked.reasons))}>{message}</failure>")
                lines.append("    </testcase>")
        lines.append("  </testsuite>")
    lines.append("</testsuites>")
    return "\n".join(lines) + "\n"


def policy_test(args: Any) -> int:
    """The command: run every test file, print the results, write expectations with ``--update``."""
    try:
        runs = [check(path) for path in test_files(args.paths)]
    except BadTest as exc:
        print(f"jobgate: policy test: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.update:
        for run in runs:
            update(run)
        print(f"jobgate: policy test: wrote the results of {len(runs)} test file(s)", file=sys.stderr)
        return EXIT_OK
    render = {"table": render_table, "json": render_json, "junit": render_junit}[args.output]
    sys.stdout.write(render(runs))
    return EXIT_DENIED if _counts(runs)[1] else EXIT_OK
