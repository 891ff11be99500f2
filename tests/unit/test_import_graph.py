"""The package's import graph, read from the sources: the admission side never imports the
controller, and no two modules import each other, directly or through others (function-level
imports included: a late import is still a dependency)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from build_support.native import PACKAGE_DIRS

REPO = Path(__file__).resolve().parents[2]


def modules() -> dict[str, Path]:
    found = {}
    for installed, directory in PACKAGE_DIRS.items():
        package = installed.replace("/", ".")
        for path in (REPO / directory).rglob("*.py"):
            parts = [p for p in path.relative_to(REPO / directory).with_suffix("").parts if p != "__init__"]
            found[".".join([package, *parts])] = path
    return found


def imported_names(path: Path) -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def import_graph() -> dict[str, set[str]]:
    if not (REPO / "webhook").is_dir():
        # .ci/run's second pass tests the installed compiled wheel from a tree without sources.
        pytest.skip("no source tree here: the graph is read from the sources")
    known = modules()
    return {name: {t for t in imported_names(path) if t in known and t != name} for name, path in known.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root, targets in graph.items():
        if root in index:
            continue
        work = [(root, iter(sorted(targets)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_nothing_on_the_admission_side_imports_the_controller():
    graph = import_graph()
    admission_side = [name for name in graph if name.startswith(("jobgate.webhook", "jobgate.certs", "jobgate.kube"))]
    assert admission_side, "no modules found"
    assert [(a, b) for a in admission_side for b in graph[a] if b.startswith("jobgate.controller")] == []


def test_the_rules_import_no_transport():
    graph = import_graph()
    rules = [name for name in graph if name.startswith("jobgate.rules")]
    transports = ("jobgate.webhook.server", "jobgate.webhook.admission", "jobgate.cli", "jobgate.controller")
    assert [(a, b) for a in rules for b in graph[a] if b.startswith(transports)] == []


def test_no_import_cycle():
    assert cycles(import_graph()) == []
