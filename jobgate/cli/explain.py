"""``jobgate explain RULE``: a rule's documentation, from the catalogue.

What the rule checks, the kinds it applies to, the errors it produces (field, type, message), where
it is enforced and why, the link to its page in ``docs/rules/<family>.md``, and, run from a
checkout, one refused and one admitted example taken from the test vectors
(``tests/cel_vectors/``) or the examples (``examples/``), which the wheel does not install.
"""

from __future__ import annotations

import sys
from functools import cache, lru_cache
from pathlib import Path

from jobgate.cli.offline import EXIT_OK, EXIT_USAGE

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from jobgate.engine.registry import JobKind
    from jobgate.forms.catalogue import Rule

UNKNOWN = "unknown rule ID; `jobgate manifests enforcement` lists them"
# A checkout: the package's parent holds the vectors and the examples.
CHECKOUT = Path(__file__).resolve().parents[2]


class Entry:
    """One rule id of one family: its records for each kind that has it."""

    def __init__(self, family: str, rule_id: str) -> None:
        self.family = family
        self.id = rule_id
        self.records: list[tuple[JobKind, Rule]] = []

    @property
    def kinds(self) -> list[str]:
        return [kind.gvk.kind for kind, _ in self.records]


@lru_cache(maxsize=1)
def catalogue() -> dict[tuple[str, str], Entry]:
    """Every (family, rule id) of every kind's catalogue (``rules_for``), in the families' order."""
    from jobgate.generate.cel.generate import rules_for
    from jobgate.generate.manifests import every_family_kind

    entries: dict[tuple[str, str], Entry] = {}
    for kind in every_family_kind():
        for rule in rules_for(kind):
            entry = entries.setdefault((kind.family, rule.id), Entry(kind.family, rule.id))
            entry.records.append((kind, rule))
    return entries


def find(entries: dict[tuple[str, str], Entry], wanted: str, family: str | None) -> list[Entry]:
    """The entries of ``wanted``: an id (every family that has it) or ``FAMILY/ID``."""
    found = [e for (f, i), e in entries.items() if i == wanted and family in (None, f)]
    if not found and "/" in wanted:
        prefix, rest = wanted.split("/", 1)
        found = [e for (f, i), e in entries.items() if f == prefix and i == rest and family in (None, f)]
    return found


def _explain(args: argparse.Namespace) -> int:
    import difflib

    from jobgate.engine.warningids import BY_ID
    from jobgate.policy.ruleids import POLICY_RULES

    if args.rule in POLICY_RULES:
        sys.stdout.write(describe_policy_rule(args.rule))
        return EXIT_OK
    if args.rule in BY_ID:
        sys.stdout.write(describe_warning_rule(args.rule))
        return EXIT_OK
    entries = catalogue()
    found = find(entries, args.rule, args.family)
    if not found:
        names = sorted({i for _, i in entries} | {f"{f}/{i}" for f, i in entries} | set(POLICY_RULES) | set(BY_ID))
        close = difflib.get_close_matches(args.rule, names, n=5, cutoff=0.6)
        print(f"jobgate: {args.rule}: {UNKNOWN}", file=sys.stderr)
        if close:
            print(f"did you mean: {', '.join(close)}", file=sys.stderr)
        return EXIT_USAGE
    sys.stdout.write("\n".join(describe(entry) for entry in found))
    return EXIT_OK


def describe(entry: Entry) -> str:
    from jobgate.engine.fielderrors import ErrorType
    from jobgate.engine.pathpattern import rule_anchor

    first = entry.records[0][1]
    lines = [f"{entry.id}", f"  family:    {entry.family} ({', '.join(entry.kinds)})"]
    summaries = list(dict.fromkeys(rule.summary for _, rule in entry.records))
    lines.append(f"  checks:    {'; '.join(summaries)}")
    lines.append("  errors:")
    produced = dict.fromkeys((p.path, p.type, p.detail) for _, rule in entry.records for p in rule.produces)
    for path, type_name, detail in produced:
        readable = detail.replace("\\ ", " ").replace("\\-", "-")
        shown = f"  (detail matching /{readable}/)" if detail else ""
        lines.append(f"    {path}: {ErrorType.named(type_name).text}{shown}")
    lines.append(f"  enforced:  {first.where.value}" + (f": {first.why}" if first.why else ""))
    refused, admitted = examples(entry)
    if refused is not None:
        lines += ["  refused example:", *_indent(refused, 4)]
    if admitted is not None:
        lines += ["  admitted example:", *_indent(admitted, 4)]
    if refused is None and admitted is None:
        lines.append("  examples:  in the rule reference (the test vectors are not installed with the wheel)")
    lines.append(f"  docs:      docs/rules/{entry.family}.md#{rule_anchor(entry.id)}")
    return "\n".join(lines) + "\n"


def describe_policy_rule(rule_id: str) -> str:
    """A platform-policy rule: what states it, what it checks, the error it gives, where it is enforced."""
    from jobgate.generate.policy_vap import enforcement_rows
    from jobgate.policy.ruleids import DOCUMENTATION, POLICY_RULES

    rule = POLICY_RULES[rule_id]
    lines = [
        rule.id,
        f"  stated by: {rule.constraint} of a ClusterTrainingJobPolicy or TrainingJobPolicy",
        f"  checks:    {rule.checks}",
        f"  error:     {rule.error_type}, at the job's field, the message naming the policy; "
        "Deny refuses, Warn warns, Audit records (the policy's enforcementAction)",
        "  enforced:  the jobgate webhook, and offline by jobgate validate|default|review --policies",
    ]
    apiserver = [f"{where} ({note})" for constraint, where, note in enforcement_rows() if constraint == rule.constraint]
    if apiserver:
        lines.append(f"  without the webhook: {'; '.join(apiserver)}")
    lines.append(f"  docs:      {DOCUMENTATION} and docs/policy-enforcement.md")
    return "\n".join(lines) + "\n"


def describe_warning_rule(rule_id: str) -> str:
    """A warning of the families' rules: what it says; it never refuses a job."""
    from jobgate.engine.warningids import BY_ID

    rule = BY_ID[rule_id]
    lines = [
        rule.id,
        f"  family:    {', '.join(rule.families) if rule.families else 'every family'}",
        f"  says:      {rule.says}",
        "  warning:   the job is admitted; the webhook sends it as an admission warning, jobgate validate "
        "prints it, each with this id after it",
        "  docs:      docs/families.md",
    ]
    return "\n".join(lines) + "\n"


def _indent(text: str, width: int) -> list[str]:
    return [" " * width + line for line in text.rstrip("\n").splitlines()]


def _errors_of(kind: JobKind, obj: dict[str, Any], old: dict[str, Any] | None) -> list[tuple[str, str]]:
    """(rule id, message) of each error jobgate gives ``obj``."""
    from jobgate.review import review_job

    verdict = review_job(kind, obj, old)
    return [(e.rule, str(e)) for e in verdict.errors]


def examples(entry: Entry) -> tuple[str | None, str | None]:
    """A refused and an admitted example of the rule's family (None where the checkout has none)."""
    refused = _vector_example(entry, refused=True) or _file_example(entry, refused=True)
    admitted = _vector_example(entry, refused=False) or _file_example(entry, refused=False)
    return refused, admitted


def _dump(data: Any) -> str:
    import yaml

    return str(yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=100))


@cache
def _vectors(family: str) -> list[tuple[Any, Any, list[tuple[str, str]]]]:
    """(vector, kind, its errors as (rule id, message)) of the family's vectors in the checkout."""
    directory = CHECKOUT / "tests" / "cel_vectors"
    if not (directory / f"{family}.yaml").is_file():
        return []
    from jobgate.generate.cel.vectors import load_vectors
    from jobgate.review import kind_of

    found = []
    for vector in load_vectors(directory, CHECKOUT, family):
        kind = kind_of(vector.obj)
        if kind is not None:
            found.append((vector, kind, _errors_of(kind, vector.obj, vector.old)))
    return found


def _vector_example(entry: Entry, *, refused: bool) -> str | None:
    kinds = set(entry.kinds)
    for vector, kind, errors in _vectors(entry.family):
        if (entry.id in vector.rules) != refused or (not refused and vector.rules) or kind.gvk.kind not in kinds:
            continue
        shown = {k: v for k, v in vector.entry.items() if k != "rules"}
        text = f"(tests/cel_vectors/{entry.family}.yaml)\n" + _dump(shown)
        if refused:
            text += "jobgate says:\n" + "".join(f"  {message}\n" for rule, message in errors if rule == entry.id)
        return text
    return None


@cache
def _example_files(refused: bool) -> list[tuple[str, Any, list[tuple[str, str]]]]:
    """(file name, kind, its errors) of each job of ``examples/invalid`` (or ``valid``) in the checkout."""
    directory = CHECKOUT / "examples" / ("invalid" if refused else "valid")
    if not directory.is_dir():
        return []
    import yaml

    from jobgate.review import kind_of

    found = []
    for path in sorted(directory.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            kind = kind_of(document) if isinstance(document, dict) else None
            if kind is not None:
                found.append((path.name, kind, _errors_of(kind, document, None)))
    return found


def _file_example(entry: Entry, *, refused: bool) -> str | None:
    """For a family without vectors (Kubeflow): a file of ``examples/`` it refuses, or admits."""
    kinds = set(entry.kinds)
    for name, kind, errors in _example_files(refused):
        if kind.family != entry.family or kind.gvk.kind not in kinds:
            continue
        said = [message for rule, message in errors if rule == entry.id]
        if refused and said:
            return f"(examples/invalid/{name})\njobgate says:\n" + "".join(f"  {m}\n" for m in said)
        if not refused and not errors:
            return f"(examples/valid/{name})\n"
    return None
