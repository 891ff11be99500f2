"""The package's import graph, read from the sources: the layers hold, nothing imports upward, no
circle, and the tooling keeps apart from the product and from itself.

Every import counts, function-level and type-checking ones included: a late import is still a
dependency, and an annotation names what a reader must open.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from build_support.native import PACKAGE_DIRS

REPO = Path(__file__).resolve().parents[2]

# Lowest first. A module may import its own layer and the layers below; ``*`` is a family's name.
# The most specific pattern decides (``jobgate.families.kubedl.models`` is a model, its rules
# ``jobgate.families.kubedl.rules`` the family's, its CEL ``jobgate.families.kubedl.cel`` a generator).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "models and shared helpers",
        (
            "jobgate.api",
            "jobgate.families.*.models",
            "jobgate.families.*.bus_models",
            "jobgate.common",
            "jobgate.kube",
            "jobgate.certs",
            # The family list and each family's record (``jobgate.families.kubedl``): data that names
            # its modules by string and imports none, so every layer may read it (policy does).
            "jobgate.families",
            "jobgate.families.*",
        ),
    ),
    (
        "engine",
        (
            "jobgate.engine",
            # The generated data tables (family index, schemas, rule ids) the engine reads.
            "jobgate._generated",
        ),
    ),
    (
        "rule language",
        (
            # The rule language: the forms, their runtime twins and the calls generated from them.
            "jobgate.forms",
            # A family's runtime twins of the forms only it uses (Volcano's, T9k's): rule language the
            # generated calls import, whatever package holds them.
            "jobgate.families.*.form_checks",
            "jobgate._generated.declared",
            "jobgate._generated.scoped_rules",
            # Helpers of the rule language and the rules alike (names, quantities, dict walks).
            "jobgate.rules.names",
            "jobgate.rules.quantity",
            "jobgate.rules.dicts",
        ),
    ),
    ("rules and policy", ("jobgate.rules", "jobgate.policy")),
    (
        "families",
        (
            "jobgate.families.*.rules",
            "jobgate.families.*.declared",
            "jobgate.families.*.policy",
            # The forms only one family uses (Volcano's, T9k's).
            "jobgate.families.*.forms",
        ),
    ),
    ("review", ("jobgate.review",)),
    (
        "generators and transports",
        (
            "jobgate.generate",
            "jobgate.families.*.cel",
            "jobgate.families.*.catalogue",
            "jobgate.offline",
            "jobgate.webhook",
            "jobgate.controller",
        ),
    ),
    ("command", ("jobgate.cli", "jobgate.__main__")),
)
# Arrows back up tolerated while a move is under way, each (importer, imported); none is left. A line
# added here must go when its arrow does (``test_every_known_exception_is_still_an_arrow`` fails until then).
KNOWN_UPWARD: frozenset[tuple[str, str]] = frozenset()
# The parts of the generators-and-transports layer stand beside each other: none imports another.
SIBLINGS: dict[str, tuple[str, ...]] = {
    "generators": ("jobgate.generate", "jobgate.families.*.cel", "jobgate.families.*.catalogue"),
    "offline command": ("jobgate.offline",),
    "webhook server": ("jobgate.webhook",),
    "controller": ("jobgate.controller",),
}
# The only module-level state the engine keeps, written at start-up, never by a rule: the kinds
# families register on import, and the families a process serves (``--families``).
ENGINE_GLOBALS = {("jobgate.engine.registry", "serve_families")}


def modules() -> dict[str, Path]:
    found = {}
    for installed, directory in PACKAGE_DIRS.items():
        package = installed.replace("/", ".")
        for path in (REPO / directory).rglob("*.py"):
            parts = [p for p in path.relative_to(REPO / directory).with_suffix("").parts if p != "__init__"]
            found[".".join([package, *parts])] = path
    return found


def imported_names(path: Path, module: str = "") -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or node.level):
            # A relative import (inside webhook/, controller/, certs/) from the importing module's package.
            package = module.split(".")[: len(module.split(".")) - node.level + (path.name == "__init__.py")]
            base = node.module if node.level == 0 else ".".join([*package, *([node.module] if node.module else [])])
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph() -> dict[str, set[str]]:
    if not (REPO / "webhook").is_dir():
        # .ci/run's second pass tests the installed compiled wheel from a tree without sources.
        pytest.skip("no source tree here: the graph is read from the sources")
    known = modules()
    return {name: {t for t in imported_names(path, name) if t in known and t != name} for name, path in known.items()}


def _matches(module: str, pattern: str) -> int:
    """How specific a match ``pattern`` is for ``module`` (its number of parts), 0 for none."""
    parts, wanted = module.split("."), pattern.split(".")
    if len(parts) < len(wanted):
        return 0
    if all(w in ("*", p) for w, p in zip(wanted, parts, strict=False)):
        return len(wanted)
    return 0


def _best(module: str, table: dict[str, tuple[str, ...]]) -> str | None:
    scored = [(_matches(module, p), name) for name, patterns in table.items() for p in patterns]
    score, name = max(scored, default=(0, None))
    return name if score else None


def layer_of(module: str) -> int:
    if module == "jobgate":
        return 0
    table = {str(index): patterns for index, (_, patterns) in enumerate(LAYERS)}
    found = _best(module, table)
    if found is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS")
    return int(found)


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
                    work.append((child, iter(sorted(graph.get(child, ())))))
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


def _layer(name: str) -> int:
    return next(index for index, (layer, _) in enumerate(LAYERS) if layer == name)


def test_the_layer_table_places_modules_by_their_most_specific_pattern():
    assert layer_of("jobgate.families.kubedl.models") == _layer("models and shared helpers")
    assert layer_of("jobgate.families.kubedl") == _layer("models and shared helpers")
    assert layer_of("jobgate._generated.family_index") == _layer("engine")
    assert layer_of("jobgate._generated.declared.kubedl") == _layer("rule language")
    assert layer_of("jobgate.families.volcano.form_checks") == _layer("rule language")
    assert layer_of("jobgate.families.volcano.forms.bounds") == _layer("families")
    assert layer_of("jobgate.rules.jobmeta") == _layer("rules and policy")
    assert layer_of("jobgate.policy.kinds") == _layer("rules and policy")
    assert layer_of("jobgate.families.volcano.rules.job") == _layer("families")
    assert layer_of("jobgate.families.volcano.policy") == _layer("families")
    assert layer_of("jobgate.review") == _layer("review")
    assert layer_of("jobgate.families.volcano.cel.job") == _layer("generators and transports")
    assert layer_of("jobgate.controller.adapters.kubedl") == _layer("generators and transports")
    assert layer_of("jobgate.cli.offline") == _layer("command")
    assert _best("jobgate.families.t9k.cel", SIBLINGS) == "generators"


def test_every_module_is_in_a_layer():
    table = {name: patterns for name, patterns in LAYERS}
    assert [m for m in import_graph() if m != "jobgate" and _best(m, table) is None] == []


def upward_arrows(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return [(a, b) for a, targets in sorted(graph.items()) for b in sorted(targets) if layer_of(b) > layer_of(a)]


def test_nothing_imports_upward():
    upward = [
        f"{a} ({LAYERS[layer_of(a)][0]}) imports {b} ({LAYERS[layer_of(b)][0]})"
        for a, b in upward_arrows(import_graph())
        if (a, b) not in KNOWN_UPWARD
    ]
    assert upward == []


def test_an_upward_arrow_is_found():
    graph = {"jobgate.engine.registry": {"jobgate.families.kubedl.rules"}, "jobgate.families.kubedl.rules": set()}
    assert upward_arrows(graph) == [("jobgate.engine.registry", "jobgate.families.kubedl.rules")]


def test_every_known_exception_is_still_an_arrow():
    """Once the step that removes an exception is merged, its line goes from ``KNOWN_UPWARD``."""
    assert sorted(KNOWN_UPWARD - set(upward_arrows(import_graph()))) == []


def test_the_engine_imports_nothing_of_rules_policy_families_or_generated_rule_code():
    graph = import_graph()
    above = ("jobgate.rules", "jobgate.policy", "jobgate.families", "jobgate.review")
    generated_code = ("jobgate._generated.declared", "jobgate._generated.scoped_rules")
    found = [
        f"{a} imports {b}"
        for a, targets in sorted(graph.items())
        if a.startswith("jobgate.engine")
        for b in sorted(targets)
        if b.startswith(tuple(f"{p}." for p in above)) or b in above or b.startswith(generated_code)
    ]
    assert found == []


def test_the_runtime_twins_import_no_declaration():
    """A review imports the forms' runtime twins (shared or a family's) and never a form's declaration:
    a twin imports no module of jobgate/forms/ but the other twins."""
    graph = import_graph()
    patterns = ("jobgate.forms.checks", "jobgate.families.*.form_checks")
    twins = [name for name in graph if any(_matches(name, p) for p in patterns)]
    assert "jobgate.families.volcano.form_checks" in twins
    found = [
        f"{a} imports {b}"
        for a in sorted(twins)
        for b in sorted(graph[a])
        if _matches(b, "jobgate.forms") and not _matches(b, "jobgate.forms.checks")
    ]
    assert found == []


def test_generators_offline_command_webhook_and_controller_stand_apart():
    graph = import_graph()
    crossing = [
        f"{a} ({_best(a, SIBLINGS)}) imports {b} ({_best(b, SIBLINGS)})"
        for a, targets in sorted(graph.items())
        if _best(a, SIBLINGS) is not None
        for b in sorted(targets)
        if _best(b, SIBLINGS) not in (None, _best(a, SIBLINGS))
    ]
    assert crossing == []


def test_the_controller_never_imports_the_webhook_server():
    graph = import_graph()
    controller = [name for name in graph if name.startswith("jobgate.controller")]
    assert controller, "no modules found"
    assert [(a, b) for a in controller for b in graph[a] if b.startswith("jobgate.webhook")] == []


def test_no_import_cycle():
    assert cycles(import_graph()) == []


def test_the_engine_keeps_no_state_a_rule_could_read():
    """No ``global`` statement in the engine, the rules, policy, a family's rules or the review, but
    the registry's start-up setting: what a review needs of its request and the cluster comes in its
    context."""
    graph = import_graph()
    found = []
    for name, path in modules().items():
        if name not in graph or not _layer("engine") <= layer_of(name) <= _layer("review"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Global) and (name, node.name) not in ENGINE_GLOBALS:
                        found.append(f"{name}.{node.name}: global {', '.join(inner.names)}")
    assert found == []


# --- the tooling ---------------------------------------------------------------------------------


def tooling_imports(directory: str) -> dict[str, set[str]]:
    """Every import of the modules under ``directory`` of the repository, by file."""
    found = {}
    for path in sorted((REPO / directory).rglob("*.py")):
        found[str(path.relative_to(REPO))] = set(imported_names(path))
    return found


def _importing(directory: str, prefixes: tuple[str, ...]) -> list[str]:
    return [
        f"{file} imports {name}"
        for file, names in tooling_imports(directory).items()
        for name in sorted(names)
        if name in prefixes or name.startswith(tuple(f"{p}." for p in prefixes))
    ]


def test_unit_tests_import_neither_the_benchmarks_nor_other_test_tiers():
    if not (REPO / "bench").is_dir():
        pytest.skip("no bench/ here")
    tiers = ("bench", "tests.e2e", "tests.envtest", "tests.fuzz", "tests.chart", "tests.packaging", "tests.server")
    assert _importing("tests/unit", tiers) == []


def test_the_benchmarks_import_no_test_module():
    if not (REPO / "bench").is_dir():
        pytest.skip("no bench/ here")
    assert _importing("bench", ("tests",)) == []


def test_the_harness_imports_neither_tests_nor_benchmarks():
    if not (REPO / "envtest").is_dir():
        pytest.skip("no envtest/ here")
    assert _importing("envtest", ("tests", "bench")) == []


def test_the_test_kit_imports_neither_tests_nor_benchmarks():
    if not (REPO / "testkit").is_dir():
        pytest.skip("no testkit/ here")
    assert _importing("testkit", ("tests", "bench")) == []
