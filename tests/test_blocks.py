"""Reachability and early exits are read in one place (``analysis/blocks.py``) for every walk:
what follows ``return``/``raise``/``continue``/``break`` never runs, and what follows an ``if``
whose arm leaves runs only under the other outcome, through an ``elif`` chain too. Each walk
built on it is checked here on one shape (the call walker in ``fixtures/catalogue``:
``unreachable_call.py``)."""

from __future__ import annotations

import ast

from lint_rules.analysis.blocks import after_if, block
from lint_rules.analysis.counters import counters
from lint_rules.analysis.facts import collect

CODE = """
class M:
    def reset(self, cfg):
        if not cfg.fp8:
            return
        elif cfg.skip_rearm:
            return
        self.is_first_microbatch = True

    def count(self):
        return
        self.step += 1

    def either(self, ok):
        if ok:
            return
        else:
            raise ValueError
        self.is_first_microbatch = False
"""


def _function(tree: ast.Module, name: str) -> ast.FunctionDef:
    return next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name)


def test_a_block_ends_where_the_rest_never_runs() -> None:
    tree = ast.parse(CODE)
    assert [type(s).__name__ for _, s, _ in block(_function(tree, "count").body)] == ["Return"]
    assert [type(s).__name__ for _, s, _ in block(_function(tree, "either").body)] == ["If"]
    chain = _function(tree, "reset").body[0]
    assert isinstance(chain, ast.If) and isinstance(chain.orelse[0], ast.If)
    assert after_if(chain) == ((chain, False), (chain.orelse[0], False))


def test_a_write_after_an_elif_chain_that_leaves_holds_every_test_false() -> None:
    writes = collect(ast.parse(CODE)).writes
    assert [(w.line, w.conditions) for w in writes] == [
        (8, ("not (not cfg.fp8)", "not (cfg.skip_rearm)"))
    ]  # (the write in `either` never runs)


def test_a_counter_stepped_only_where_nothing_runs_is_no_counter() -> None:
    assert counters(ast.parse(CODE)) == set()
    assert counters(
        ast.parse(CODE.replace("        return\n        self.step", "        self.step"))
    ) == {"M.step"}
