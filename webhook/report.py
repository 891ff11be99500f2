"""Output formats of ``jobgate validate``: text, json, junit, github."""

from __future__ import annotations

import json
from xml.etree import ElementTree

from webhook.offline import DocumentResult, Outcome, Run

FORMATS = ("text", "json", "junit", "github")


def render(run: Run, fmt: str) -> str:
    return {"text": render_text, "json": render_json, "junit": render_junit, "github": render_github}[fmt](run)


def _summary(run: Run) -> str:
    total = len(run.results)
    parts = [f"{run.count(o)} {o.value}" for o in Outcome if run.count(o) or o in (Outcome.ADMITTED, Outcome.DENIED)]
    return f"{total} document{'s' if total != 1 else ''}: {', '.join(parts)}"


def render_text(run: Run) -> str:
    lines = []
    for result in run.results:
        where = f"{result.source}:{result.line}" if result.line else result.source
        if result.outcome is Outcome.ERROR:
            lines.append(f"{where}: error: {result.reason}")
            continue
        header = f"{where}: {result.title}: {result.outcome.value}"
        if result.reason:
            header += f" ({result.reason})"
        lines.append(header)
        lines.extend(f"{result.source}:{e.line}: error: {e.message}" for e in result.errors)
        lines.extend(f"{result.source}:{w.line}: warning: {w.message}" for w in result.warnings)
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
        "errors": [{"line": e.line, "field": e.field, "message": e.message} for e in result.errors],
        "warnings": [{"line": w.line, "message": w.message} for w in result.warnings],
    }


def render_json(run: Run) -> str:
    summary = {o.value: run.count(o) for o in Outcome}
    document = {"documents": [_as_dict(r) for r in run.results], "summary": summary, "exitCode": run.exit_code}
    return json.dumps(document, indent=2) + "\n"


def render_junit(run: Run) -> str:
    suite = ElementTree.Element(
        "testsuite",
        name="jobgate validate",
        tests=str(len(run.results)),
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
            failure.text = "\n".join(f"{result.source}:{e.line}: {e.message}" for e in result.errors)
        elif result.outcome is Outcome.ERROR:
            ElementTree.SubElement(case, "error", message=result.reason, type="unreadable")
        elif result.outcome is Outcome.SKIPPED:
            ElementTree.SubElement(case, "skipped", message=result.reason)
        if result.warnings:
            ElementTree.SubElement(case, "system-out").text = "\n".join(
                f"warning: {w.message}" for w in result.warnings
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


def render_github(run: Run) -> str:
    """GitHub Actions workflow commands: each error and warning annotates its line in the diff."""
    lines = []
    for result in run.results:
        title = f"jobgate: {result.title}"
        if result.outcome is Outcome.ERROR:
            lines.append(_annotation("error", result.source, result.line, "jobgate", result.reason))
        lines.extend(_annotation("error", result.source, e.line, title, e.message) for e in result.errors)
        lines.extend(_annotation("warning", result.source, w.line, title, w.message) for w in result.warnings)
    lines.append(_summary(run))
    return "\n".join(lines) + "\n"
