"""Output formats of ``jobgate validate``: text, json, junit, github.

text and github are written as each file's results arrive (memory stays flat however many
files there are); json and junit need the whole run and are written at the end.
"""

from __future__ import annotations

from jobgate.offline.results import OUTCOMES, DocumentResult, Finding, Outcome, Run

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TextIO

FORMATS = ("text", "json", "junit", "github")
STREAMED_FORMATS = ("text", "github")


def render(run: Run, fmt: str) -> str:
    return {"text": render_text, "json": render_json, "junit": render_junit, "github": render_github}[fmt](run)


class Reporter:
    """Writes a run in one format: streamed formats result by result, the others at the end."""

    def __init__(self, fmt: str, out: TextIO) -> None:
        self.fmt = fmt
        self.out = out
        self.run = Run(keep_results=fmt not in STREAMED_FORMATS)
        self._lines: Callable[[DocumentResult], list[str]] | None = {
            "text": text_lines,
            "github": github_lines,
        }.get(fmt)

    def add(self, results: list[DocumentResult]) -> None:
        for result in results:
            self.run.add(result)
            if self._lines is not None:
                lines = self._lines(result)
                if lines:
                    self.out.write("\n".join(lines) + "\n")

    def finish(self) -> int:
        if self._lines is not None:
            self.out.write(_summary(self.run) + "\n")
        else:
            self.out.write(render(self.run, self.fmt))
        self.out.flush()
        return self.run.exit_code


def _summary(run: Run) -> str:
    total = run.total
    parts = [
        f"{run.count(o)} {o.value}{'s' if o is Outcome.ERROR and run.count(o) != 1 else ''}"
        for o in OUTCOMES
        if run.count(o) or o in (Outcome.ADMITTED, Outcome.DENIED)
    ]
    return f"{total} document{'s' if total != 1 else ''}: {', '.join(parts)}"


def text_lines(result: DocumentResult) -> list[str]:
    where = f"{result.source}:{result.line}" if result.line else result.source
    if result.outcome is Outcome.ERROR:
        return [f"{where}: error: {result.reason}"]
    header = f"{where}: {result.title}: {result.outcome.value}"
    if result.reason:
        header += f" ({result.reason})"
    lines = [header]
    lines.extend(f"{result.source}:{e.line}: error: {_labelled(e)}" for e in result.errors)
    lines.extend(f"{result.source}:{w.line}: warning: {_labelled(w)}" for w in result.warnings)
    return lines


def _labelled(finding: Finding) -> str:
    """The message with its rule id after it: ``... must be 1 [roles/master]``."""
    return f"{finding.message} [{finding.rule}]" if finding.rule else finding.message


def render_text(run: Run) -> str:
    lines = [line for result in run.results for line in text_lines(result)]
    lines.append(_summary(run))
    return "\n".join(lines) + "\n"


def _as_dict(result: DocumentResult) -> dict[str, object]:
    return {
        "file": result.source,
        "document": result.index,
        "line": result.line,
        "apiVersion": result.api_version,
        "kind": result.kind,
        "namespace": result.namespace,
        "name": result.name,
        "outcome": result.outcome.value,
        "reason": result.reason,
        "errors": [{"line": e.line, "field": e.field, "message": e.message, "rule": e.rule} for e in result.errors],
        "warnings": [{"line": w.line, "field": w.field, "message": w.message, "rule": w.rule} for w in result.warnings],
    }


def render_json(run: Run) -> str:
    import json  # only -o json needs it

    summary = {o.value: run.count(o) for o in OUTCOMES}
    document = {"documents": [_as_dict(r) for r in run.results], "summary": summary, "exitCode": run.exit_code}
    return json.dumps(document, indent=2) + "\n"


def render_junit(run: Run) -> str:
    from xml.etree import ElementTree

    suite = ElementTree.Element(
        "testsuite",
        name="jobgate validate",
        tests=str(run.total),
        failures=str(run.count(Outcome.DENIED)),
        errors=str(run.count(Outcome.ERROR)),
        skipped=str(run.count(Outcome.SKIPPED)),
    )
    for result in run.results:
        case = ElementTree.SubElement(
            suite, "testcase", classname=result.source, name=f"{result.title} (line {result.line})"
        )
        if result.outcome is Outcome.DENIED:
            failure = ElementTree.SubElement(case, "failure", message=f"{len(result.errors)} error(s)", type="denied")
            failure.text = "\n".join(f"{result.source}:{e.line}: {_labelled(e)}" for e in result.errors)
        elif result.outcome is Outcome.ERROR:
            ElementTree.SubElement(case, "error", message=result.reason, type="unreadable")
        elif result.outcome is Outcome.SKIPPED:
            ElementTree.SubElement(case, "skipped", message=result.reason)
        if result.warnings:
            ElementTree.SubElement(case, "system-out").text = "\n".join(
                f"warning: {_labelled(w)}" for w in result.warnings
            )
    suites = ElementTree.Element("testsuites")
    suites.append(suite)
    ElementTree.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(suites, encoding="unicode") + "\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _annotation(level: str, source: str, line: int, title: str, message: str) -> str:
    properties = f"file={_escape_property(source)}"
    if line:
        properties += f",line={line}"
    properties += f",title={_escape_property(title)}"
    return f"::{level} {properties}::{_escape_data(message)}"


def github_lines(result: DocumentResult) -> list[str]:
    """GitHub Actions workflow commands: each error and warning annotates its line in the diff."""
    lines = []
    title = f"jobgate: {result.title}"
    if result.outcome is Outcome.ERROR:
        lines.append(_annotation("error", result.source, result.line, "jobgate", result.reason))
    lines.extend(_annotation("error", result.source, e.line, title, _labelled(e)) for e in result.errors)
    lines.extend(_annotation("warning", result.source, w.line, title, _labelled(w)) for w in result.warnings)
    return lines


def render_github(run: Run) -> str:
    lines = [line for result in run.results for line in github_lines(result)]
    lines.append(_summary(run))
    return "\n".join(lines) + "\n"
