"""The offline verdict of ``jobgate validate``: each document through mutate-then-validate."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from webhook.rules.engine import Verdict, review_job
from webhook.rules.registry import GroupVersionKind, lookup
from webhook.sources import Document, SourceError, display_name, expand_paths, parse_documents, read_source


class Outcome(StrEnum):
    ADMITTED = "admitted"
    DENIED = "denied"
    SKIPPED = "skipped"
    ERROR = "error"


@dataclass(frozen=True)
class Finding:
    line: int
    message: str
    field: str = ""


@dataclass
class DocumentResult:
    source: str
    index: int
    line: int
    outcome: Outcome
    api_version: str = ""
    kind: str = ""
    namespace: str = ""
    name: str = ""
    reason: str = ""
    errors: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)

    @property
    def title(self) -> str:
        who = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {who}".strip() if self.kind else f"document {self.index + 1}"


@dataclass
class Run:
    results: list[DocumentResult] = field(default_factory=list)

    def count(self, outcome: Outcome) -> int:
        return sum(1 for r in self.results if r.outcome is outcome)

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
    return str(name), str(namespace)


def job_documents(document: Document) -> Iterator[tuple[Any, tuple[Any, ...]]]:
    """(object, path prefix) for a document, expanding ``kind: List`` into its items."""
    data = document.data
    if isinstance(data, dict) and data.get("kind") == "List" and isinstance(data.get("items"), list):
        for index, item in enumerate(data["items"]):
            yield item, ("items", index)
    else:
        yield data, ()


def evaluate(document: Document, obj: Any, prefix: tuple[Any, ...]) -> tuple[DocumentResult, Verdict | None]:
    source = display_name(document.source)
    line = document.line_of(prefix)
    if not isinstance(obj, dict):
        result = DocumentResult(source, document.index, line, Outcome.ERROR, reason="not a Kubernetes object")
        return result, None
    gvk = GroupVersionKind.from_object(obj)
    name, namespace = _metadata(obj)
    if gvk is None or not gvk.version or not gvk.kind:
        reason = "not a Kubernetes object: apiVersion and kind are required"
        return DocumentResult(source, document.index, line, Outcome.ERROR, name=name, reason=reason), None
    result = DocumentResult(source, document.index, line, Outcome.ADMITTED, gvk.api_version, gvk.kind, namespace, name)
    kind = lookup(gvk)
    if kind is None:
        result.outcome = Outcome.SKIPPED
        result.reason = f"jobgate does not serve {gvk.api_version} {gvk.kind}"
        return result, None
    verdict = review_job(kind, obj)
    located = [Finding(document.line_of((*prefix, *e.path)), str(e), e.field) for e in verdict.errors]
    result.errors = sorted(located, key=lambda f: f.line)
    result.warnings = [Finding(line, w) for w in verdict.warnings]
    if not verdict.allowed:
        result.outcome = Outcome.DENIED
    return result, verdict


def load(paths: list[str]) -> Iterator[Document | DocumentResult]:
    """Every non-empty document under ``paths``; unreadable input becomes an ERROR result."""
    try:
        sources = list(expand_paths(paths))
    except SourceError as exc:
        yield DocumentResult(display_name(exc.source), 0, 0, Outcome.ERROR, reason=exc.message)
        return
    for source in sources:
        try:
            documents = parse_documents(read_source(source), source)
        except SourceError as exc:
            yield DocumentResult(display_name(source), 0, exc.line or 0, Outcome.ERROR, reason=exc.message)
            continue
        yield from (d for d in documents if d.data is not None)


def validate_paths(paths: list[str]) -> Run:
    run = Run()
    for item in load(paths):
        if isinstance(item, DocumentResult):
            run.results.append(item)
            continue
        for obj, prefix in job_documents(item):
            result, _ = evaluate(item, obj, prefix)
            run.results.append(result)
    return run
