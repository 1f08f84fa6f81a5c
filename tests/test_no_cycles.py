"""The analysis leaves no reference cycles behind.

``analyze_source`` switches the cyclic collector off while it parses and analyses a file (the
collector would traverse the growing tree again and again), so anything the analysis leaves in
a cycle (the tree, its scopes, the resolver's memo) is freed only when the collector next runs:
in a run over thousands of files, that is every tree, traversed again at each collection.
(``ast.dump``'s own recursive helper is a small cycle of the standard library's, holding no
node: it is not counted.)
"""

from __future__ import annotations

import ast
import gc
from pathlib import Path

import pytest

from lint_rules.analysis import analyze_source

CATALOGUE = Path(__file__).resolve().parent.parent / "fixtures" / "catalogue"
SAMPLES = [
    "tem002_attribute_holders.py",
    "containers_and_instances.py",
    "guard_config_never_set.py",
    "comments_in_values.py",
]


@pytest.mark.parametrize("fixes", [True, False], ids=["with-fixes", "without-fixes"])
@pytest.mark.parametrize("name", SAMPLES)
def test_analysis_leaves_no_cycles(name: str, fixes: bool) -> None:
    text = (CATALOGUE / name).read_text(encoding="utf-8")
    assert analyze_source(text, fixes=fixes), "the sample should have findings"
    collecting = gc.isenabled()
    gc.disable()
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what the collector finds is kept in gc.garbage
    try:
        findings = analyze_source(text, fixes=fixes)
        gc.collect()
        left = [o for o in gc.garbage if _ours(o)]
        assert not left, f"the analysis left {len(left)} objects in cycles: {left[:5]}"
        assert findings
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if collecting:
            gc.enable()


def _ours(obj: object) -> bool:
    """A node of the analysed tree, or anything of the analysis (not the stdlib's helpers)."""
    if isinstance(obj, ast.AST):
        return True
    module = getattr(type(obj), "__module__", "") or ""
    if module.startswith("lint_rules"):
        return True
    code = getattr(obj, "__code__", None)  # a function (a bound method: its __func__)
    return code is not None and "lint_rules" in code.co_filename


RUN_MODULES = {
    "lint_rules.analysis.faces",
    "lint_rules.analysis.filework",
    "lint_rules.analysis.plan",
    "lint_rules.analysis.records",
    "lint_rules.analysis.reported",
    "lint_rules.analysis.root",
    "lint_rules.analysis.run",
    "lint_rules.analysis.runindex",
    "lint_rules.analysis.store",
}
"""The run over a project (the core's entry point for every face) and its records."""


def _import_graph() -> dict[str, set[str]]:
    """Which modules of ``lint_rules`` each one imports, at its top or inside a function."""
    package = Path(__file__).resolve().parent.parent / "lint_rules"
    modules = {}
    for path in package.rglob("*.py"):
        name = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        modules[name.removesuffix(".__init__")] = path
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def _reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        if node not in seen:
            seen.add(node)
            todo.extend(graph[node])
    return False


def test_the_run_and_the_cli_import_no_cycle() -> None:
    """No module of the CLI or of the run over a project is imported back by what it imports
    (``running`` <-> ``crossfile`` <-> ``reporting`` was such a cycle)."""
    graph = _import_graph()
    ours = sorted(m for m in graph if m.startswith("lint_rules.cli") or m in RUN_MODULES)
    assert "lint_rules.analysis.run" in ours
    cycles = [m for m in ours if any(_reaches(graph, n, m) for n in graph[m])]
    assert cycles == []
