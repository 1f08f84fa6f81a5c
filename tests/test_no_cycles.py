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
