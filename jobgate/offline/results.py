"""The offline verdict of ``jobgate validate``: each document through mutate-then-validate.

Files are checked one at a time (or by ``-j N`` worker processes) and their results
streamed in input order, so memory follows the largest file, not the number of files.
"""

from __future__ import annotations

import os

from jobgate.engine.context import context_for
from jobgate.engine.registry import GroupVersionKind, lookup
from jobgate.engine.values import FrozenValue, Member, Value, set_members
from jobgate.offline.sources import (
    STDIN,
    Document,
    SourceError,
    display_name,
    expand_paths,
    iter_documents,
    printable,
    read_source,
)
from jobgate.review import Verdict, review_job

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any, ClassVar

    from jobgate.engine.views import ClusterViews


class TextMember(str, Member):
    """One of a class's fixed set of texts: a ``StrEnum``'s members, written out (``Member``). Each
    member is a str, equal to its text; its name is its text in capitals."""

    __slots__ = ()

    @property
    def value(self) -> str:
        return str.__str__(self)

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.upper()

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__}.{self.name}: {str.__repr__(self)}>"


class Outcome(TextMember):
    """What became of a document (``OUTCOMES`` lists them)."""

    __slots__ = ()
    ADMITTED: ClassVar[Outcome]
    DENIED: ClassVar[Outcome]
    SKIPPED: ClassVar[Outcome]
    ERROR: ClassVar[Outcome]


class FieldValidation(TextMember):
    """kubectl's ``--validate``: what an unknown field does (strict: kubectl's default)."""

    __slots__ = ()
    STRICT: ClassVar[FieldValidation]
    WARN: ClassVar[FieldValidation]
    IGNORE: ClassVar[FieldValidation]

    @classmethod
    def parse(cls, text: str) -> FieldValidation:
        """The member ``text`` names; kubectl also takes the older booleans. ValueError for another text."""
        aliases = {"true": cls.STRICT, "false": cls.IGNORE}
        if text in aliases:
            return aliases[text]
        if text.islower():
            try:
                return cls.named(text.upper())
            except KeyError:
                pass
        raise ValueError(f"{text!r} is not a valid FieldValidation")


OUTCOMES = set_members(Outcome, (Outcome("admitted"), Outcome("denied"), Outcome("skipped"), Outcome("error")))
set_members(FieldValidation, (FieldValidation("strict"), FieldValidation("warn"), FieldValidation("ignore")))


# The fields of every custom resource's top level (the CRD schema knows nothing else).
_TOP_LEVEL_FIELDS = frozenset(("apiVersion", "kind", "metadata", "spec", "status"))


# The classes below are not dataclasses (jobgate.engine.values says why).


class Finding(FrozenValue):
    """An error or a warning at a line, with the id of the rule that produced it and its field where
    known; read-only, compared by value. Pickled to the parent by ``-j`` workers."""

    FIELDS = ("line", "message", "field", "rule")
    __slots__ = FIELDS
    line: int
    message: str
    field: str
    rule: str

    def __init__(self, line: int, message: str, field: str = "", rule: str = "") -> None:
        object.__setattr__(self, "line", line)
        object.__setattr__(self, "message", message)
        object.__setattr__(self, "field", field)
        object.__setattr__(self, "rule", rule)


class DocumentResult(Value):
    FIELDS = (
        "source",
        "index",
        "line",
        "outcome",
        "api_version",
        "kind",
        "namespace",
        "name",
        "reason",
        "errors",
        "warnings",
    )
    __slots__ = FIELDS

    # The signature of the dataclass this was, positional fields included.
    def __init__(  # noqa: PLR0917
        self,
        source: str,
        index: int,
        line: int,
        outcome: Outcome,
        api_version: str = "",
        kind: str = "",
        namespace: str = "",
        name: str = "",
        reason: str = "",
        errors: list[Finding] | None = None,
        warnings: list[Finding] | None = None,
    ) -> None:
        self.source = source
        self.index = index
        self.line = line
        self.outcome = outcome
        self.api_version = api_version
        self.kind = kind
        self.namespace = namespace
        self.name = name
        self.reason = reason
        self.errors: list[Finding] = [] if errors is None else errors
        self.warnings: list[Finding] = [] if warnings is None else warnings

    __hash__ = None  # type: ignore[assignment]  # mutable: unhashable, as the dataclass was

    @property
    def title(self) -> str:
        who = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {who}".strip() if self.kind else f"document {self.index + 1}"


class Run:
    """Counts of a run; the results themselves only when the output format needs them all."""

    __slots__ = ("counts", "keep_results", "results")

    def __init__(
        self,
        results: list[DocumentResult] | None = None,
        counts: dict[Outcome, int] | None = None,
        keep_results: bool = True,
    ) -> None:
        self.results: list[DocumentResult] = [] if results is None else results
        self.counts: dict[Outcome, int] = dict.fromkeys(OUTCOMES, 0) if counts is None else counts
        self.keep_results = keep_results

    def add(self, result: DocumentResult) -> None:
        self.counts[result.outcome] += 1
        if self.keep_results:
            self.results.append(result)

    def count(self, outcome: Outcome) -> int:
        return self.counts[outcome]

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def exit_code(self) -> int:
        if self.count(Outcome.ERROR):
            return 2
        if self.count(Outcome.DENIED):
            return 1
        return 0


def _metadata(obj: dict[str, Any]) -> tuple[str, str]:
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        return "", ""
    name = metadata.get("name") or metadata.get("generateName") or ""
    namespace = metadata.get("namespace") or ""
    return printable(str(name)), printable(str(namespace))


def job_documents(document: Document) -> Iterator[tuple[Any, tuple[Any, ...]]]:
    """(object, path prefix) for a document, expanding ``kind: List`` into its items."""
    data = document.data
    if isinstance(data, dict) and data.get("kind") == "List" and isinstance(data.get("items"), list):
        for index, item in enumerate(data["items"]):
            yield item, ("items", index)
    else:
        yield data, ()


def _unknown_top_level(obj: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(key,) for key in obj if key not in _TOP_LEVEL_FIELDS]


def evaluate(
    document: Document,
    obj: Any,
    prefix: tuple[Any, ...],
    validation: FieldValidation = FieldValidation.STRICT,
    *,
    with_patch: bool = False,
    views: ClusterViews | None = None,
    skip_non_objects: bool = False,
) -> tuple[DocumentResult, Verdict | None]:
    """The verdict on one object; ``with_patch`` also records the mutating patch (``jobgate default``).

    ``views``: the cluster objects given on the command line (``--queues``), which the review's
    context shows the rules. ``skip_non_objects``: a document with neither apiVersion nor kind (or
    no mapping at all) is skipped rather than an error (the pre-commit hook, among other YAML).
    """
    source = display_name(document.source)
    if not isinstance(obj, dict):
        line = document.line_of(prefix)
        outcome = Outcome.SKIPPED if skip_non_objects else Outcome.ERROR
        return DocumentResult(source, document.index, line, outcome, reason=NOT_AN_OBJECT), None
    gvk = GroupVersionKind.from_object(obj)
    name, namespace = _metadata(obj)
    if gvk is None or not gvk.version or not gvk.kind:
        line = document.line_of(prefix)
        if skip_non_objects and "apiVersion" not in obj and "kind" not in obj:
            return DocumentResult(source, document.index, line, Outcome.SKIPPED, name=name, reason=NO_TYPE), None
        reason = "not a Kubernetes object: apiVersion and kind are required"
        return DocumentResult(source, document.index, line, Outcome.ERROR, name=name, reason=reason), None
    api_version, kind_name = printable(gvk.api_version), printable(gvk.kind)
    if gvk.group == POLICY_GROUP and gvk.kind in POLICY_KINDS:
        return _policy_result(document, obj, prefix, source, (api_version, kind_name, namespace, name)), None
    kind = lookup(gvk)
    if kind is None:
        # The line of a document is only looked up when there is something to say about it.
        line = document.line_of(prefix)
        result = DocumentResult(source, document.index, line, Outcome.SKIPPED, api_version, kind_name, namespace, name)
        result.reason = f"jobgate does not serve {api_version} {kind_name}"
        return result, None
    context = context_for(views, namespace=namespace or (views.default_namespace if views is not None else None))
    verdict = review_job(kind, obj, context=context, with_patch=with_patch)
    unknown: list[tuple[Any, ...]] = []
    plain_warnings: list[str] = []
    if verdict.warnings:
        # Imported only for warnings: one module fewer for a check without any.
        from jobgate.engine.unknownfields import UnknownField

        unknown = [w.path for w in verdict.warnings if isinstance(w, UnknownField)]
        plain_warnings = [w for w in verdict.warnings if not isinstance(w, UnknownField)]
    unknown += _unknown_top_level(obj)
    quiet = not document.notes and (not unknown or validation is FieldValidation.IGNORE)
    if not verdict.errors and not plain_warnings and quiet:
        # The common case, admitted without a word: no line numbers needed.
        line = document.chunk.content_line
        result = DocumentResult(source, document.index, line, Outcome.ADMITTED, api_version, kind_name, namespace, name)
        return result, verdict
    line = document.line_of(prefix)
    result = DocumentResult(source, document.index, line, Outcome.ADMITTED, api_version, kind_name, namespace, name)
    errors: list[Finding] = []
    if verdict.errors:
        errors = [
            Finding(document.line_of((*prefix, *e.path)), printable(str(e)), e.field, e.rule) for e in verdict.errors
        ]
    from jobgate.engine.fielderrors import render_path
    from jobgate.engine.ruleids import STRICT_DECODING
    from jobgate.engine.unknownfields import kubectl_path  # see above
    from jobgate.engine.warningids import DUPLICATE_KEY

    warnings = [
        Finding(note_line, printable(note), "", DUPLICATE_KEY.id if note.startswith("duplicate key ") else "")
        for note_line, note in document.notes
    ]
    for w in plain_warnings:
        known = verdict.warning_rules.get(w)
        if known is not None:
            # A policy's warning: at its field's line, with its field, as an error is.
            rule, path = known
            warnings.append(Finding(document.line_of((*prefix, *path)), printable(w), render_path(path), rule))
        else:
            warnings.append(Finding(line, printable(w), "", verdict.warning_rule(w)))

    for path in unknown:
        where = document.line_of((*prefix, *path))
        if validation is FieldValidation.STRICT:
            # kubectl apply's default (--validate=strict), in the apiserver's words.
            message = f'strict decoding error: unknown field "{printable(kubectl_path(path))}"'
            errors.append(Finding(where, message, kubectl_path(path), STRICT_DECODING))
        elif validation is FieldValidation.WARN:
            warnings.append(
                Finding(where, f'unknown field "{printable(kubectl_path(path))}"', kubectl_path(path), STRICT_DECODING)
            )
    result.errors = sorted(errors, key=lambda f: f.line)
    result.warnings = warnings
    if result.errors:
        result.outcome = Outcome.DENIED
    return result, verdict


# Platform policies: checked as their CRDs check them, so that CI catches a malformed policy too.
POLICY_GROUP = "policy.jobgate.io"
POLICY_KINDS = ("ClusterTrainingJobPolicy", "TrainingJobPolicy")


def _policy_result(
    document: Document, obj: dict[str, Any], prefix: tuple[Any, ...], source: str, names: tuple[str, str, str, str]
) -> DocumentResult:
    """A policy document: admitted when its CRD (and the command's ``--policies``) would take it."""
    from jobgate.policy.plain import parse_policy_plain

    line = document.line_of(prefix)
    result = DocumentResult(source, document.index, line, Outcome.ADMITTED, *names)
    if parse_policy_plain(obj) is not None:
        return result  # plainly valid: the models (and pydantic) are needed only to word what is wrong
    from pydantic import ValidationError

    from jobgate.policy.models import parse_policy
    from jobgate.policy.schema_errors import schema_errors

    try:
        parse_policy(obj)
    except ValidationError as exc:
        errors = []
        # In the apiserver's words (an unknown field as kubectl's strict decoding error, as for jobs).
        for error in schema_errors(exc.errors(include_url=False)):
            text = f"strict decoding error: {error.text}" if error.text.startswith("unknown field") else error.text
            line = document.line_of((*prefix, *error.path))
            errors.append(Finding(line, printable(text), printable(error.field), "policy/schema"))
        result.errors = sorted(errors, key=lambda f: f.line)
        result.outcome = Outcome.DENIED
    return result


# What a document that is no Kubernetes object is told, skipped (``skip_non_objects``).
NOT_AN_OBJECT = "not a Kubernetes object"
NO_TYPE = "not a Kubernetes object (no apiVersion, no kind)"


# A Helm (Go) template action on one of Helm's objects or a control word: the file's values are
# placeholders until rendered, even where it parses as YAML.
_TEMPLATE_ACTION = (
    r"\{\{-?\s*(\.(Values|Release|Chart|Capabilities|Template|Files)\b"
    r"|(include|template|define|if|range|with|end|toYaml)\b)"
)


def _template(text: str, source: str) -> DocumentResult | None:
    """A whole file skipped as a Helm template (``skip_non_objects``), or None."""
    if "{{" not in text:
        return None
    import re

    match = re.search(_TEMPLATE_ACTION, text)
    if match is None:
        return None
    line = text.count("\n", 0, match.start()) + 1
    reason = "a template ({{ }}), YAML only once rendered: render it (helm template) to check it"
    return DocumentResult(display_name(source), 0, line, Outcome.SKIPPED, reason=reason)


def _unreadable(text: str, source: str, exc: SourceError, skip_non_objects: bool) -> DocumentResult:
    """A file jobgate cannot read: an error, or (``skip_non_objects``) skipped when it is a template
    (``{{ }}``, YAML only once rendered) or has no apiVersion anywhere (no Kubernetes object in it)."""
    where = display_name(source)
    if skip_non_objects and "{{" in text:
        reason = f"a template ({{{{ }}}}), YAML only once rendered: render it to check it ({exc.message})"
        return DocumentResult(where, 0, exc.line or 0, Outcome.SKIPPED, reason=reason)
    if skip_non_objects and "apiVersion" not in text:
        reason = f"no Kubernetes object (no apiVersion) and not YAML jobgate reads ({exc.message})"
        return DocumentResult(where, 0, exc.line or 0, Outcome.SKIPPED, reason=reason)
    return DocumentResult(where, 0, exc.line or 0, Outcome.ERROR, reason=exc.message)


TRAINER_GROUP = "trainer.kubeflow.org/"
JOBSET_GROUP = "jobset.x-k8s.io/"


def check_text(
    text: str,
    source: str,
    validation: FieldValidation,
    views: ClusterViews | None = None,
    skip_non_objects: bool = False,
) -> list[DocumentResult]:
    """Every document of one file's text, checked."""
    if skip_non_objects:
        template = _template(text, source)
        if template is not None:
            return [template]
    results: list[DocumentResult] = []
    if TRAINER_GROUP in text:
        # Kubeflow Trainer's runtimes written beside the TrainJobs that use them.
        from jobgate.offline.trainer_runtimes import with_runtimes_beside

        views = with_runtimes_beside(text, source, views)
    if "PersistentVolumeClaim" in text and JOBSET_GROUP in text:
        from jobgate.offline.jobset_claims import with_claims_beside

        views = with_claims_beside(text, source, views)
    try:
        for document in iter_documents(text, source):
            if document.data is None:
                continue
            for obj, prefix in job_documents(document):
                results.append(
                    evaluate(document, obj, prefix, validation, views=views, skip_non_objects=skip_non_objects)[0]
                )
    except SourceError as exc:
        results.append(_unreadable(text, source, exc, skip_non_objects))
    except RecursionError:  # a bound missed somewhere: still one line, never a traceback
        results.append(DocumentResult(display_name(source), 0, 0, Outcome.ERROR, reason="nesting too deep"))
    return results


def check_file(
    source: str,
    validation: FieldValidation = FieldValidation.STRICT,
    views: ClusterViews | None = None,
    skip_non_objects: bool = False,
) -> list[DocumentResult]:
    try:
        text = read_source(source)
    except SourceError as exc:
        return [DocumentResult(display_name(source), 0, exc.line or 0, Outcome.ERROR, reason=exc.message)]
    return check_text(text, source, validation, views, skip_non_objects)


def _check_file_task(task: tuple[str, FieldValidation, ClusterViews | None, bool]) -> list[DocumentResult]:
    return check_file(*task)


def _sources(paths: list[str]) -> Iterator[str | DocumentResult]:
    for raw in paths:
        try:
            yield from expand_paths([raw])
        except SourceError as exc:
            yield DocumentResult(display_name(exc.source), 0, 0, Outcome.ERROR, reason=exc.message)


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def iter_results(
    paths: list[str],
    validation: FieldValidation = FieldValidation.STRICT,
    jobs: int = 1,
    views: ClusterViews | None = None,
    *,
    skip_non_objects: bool = False,
) -> Iterator[list[DocumentResult]]:
    """The results of each file, in input order, as they are ready."""
    sources = list(_sources(paths))  # names only: a few bytes per file
    files = [s for s in sources if isinstance(s, str) and s != STDIN]
    if jobs <= 1 or len(files) < 2:
        for item in sources:
            yield [item] if isinstance(item, DocumentResult) else check_file(item, validation, views, skip_non_objects)
        return
    yield from _parallel(sources, validation, jobs, views, skip_non_objects)


def _parallel(
    sources: list[str | DocumentResult],
    validation: FieldValidation,
    jobs: int,
    views: ClusterViews | None,
    skip_non_objects: bool,
) -> Iterator[list[Any]]:
    import multiprocessing

    files = [(s, validation, views, skip_non_objects) for s in sources if isinstance(s, str) and s != STDIN]
    # fork: the workers inherit the loaded rule engine; imap keeps input order and a bounded queue.
    context = multiprocessing.get_context("fork")
    chunksize = max(1, min(32, len(files) // (jobs * 8)))
    with context.Pool(jobs) as pool:
        checked: Iterable[list[DocumentResult]] = pool.imap(_check_file_task, files, chunksize)
        iterator = iter(checked)
        for item in sources:
            if isinstance(item, DocumentResult):
                yield [item]
            elif item == STDIN:
                yield check_file(item, validation, views, skip_non_objects)
            else:
                yield next(iterator)


def validate_paths(paths: list[str], validation: FieldValidation = FieldValidation.STRICT, jobs: int = 1) -> Run:
    run = Run()
    for results in iter_results(paths, validation, jobs):
        for result in results:
            run.add(result)
    return run


def load(paths: list[str]) -> Iterator[Document | DocumentResult]:
    """Every non-empty document under ``paths`` (for ``jobgate default``); failures as ERROR results."""
    for item in _sources(paths):
        if isinstance(item, DocumentResult):
            yield item
            continue
        try:
            documents = list(iter_documents(read_source(item), item))
        except SourceError as exc:
            yield DocumentResult(display_name(item), 0, exc.line or 0, Outcome.ERROR, reason=exc.message)
            continue
        except RecursionError:
            yield DocumentResult(display_name(item), 0, 0, Outcome.ERROR, reason="nesting too deep")
            continue
        yield from (d for d in documents if d.data is not None)
