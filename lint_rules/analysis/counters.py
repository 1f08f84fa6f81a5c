"""What a module's text says about its classes and counters, read from the whole tree (not
only the statements a run shares): each class's bases, and the counters a first-of-k test may
read (``conditions.counter_first``)."""

from __future__ import annotations

import ast
from collections.abc import Sequence

from lint_rules.analysis.blocks import LEAVING, after_if
from lint_rules.analysis.facts import _last_name
from lint_rules.analysis.nodes import iter_nodes, statements


def file_classes(tree: ast.Module) -> dict[str, tuple[str, ...]]:
    """The classes of a module's top level and class bodies, with their bases' last names."""
    found: dict[str, tuple[str, ...]] = {}
    pending = list(statements(tree.body))
    while pending:
        stmt = pending.pop()
        if isinstance(stmt, ast.ClassDef):
            bases = tuple(n for n in (_last_name(b) for b in stmt.bases) if n)
            found[stmt.name] = tuple(dict.fromkeys((*found.get(stmt.name, ()), *bases)))
            pending.extend(s for s in stmt.body if isinstance(s, ast.ClassDef))
    return found


def _guarded_by_training(test: ast.expr) -> bool:
    return any(
        (isinstance(n, ast.Attribute) and n.attr == "training")
        or (isinstance(n, ast.Call) and _last_name(n.func) == "is_grad_enabled")
        for n in iter_nodes(test)
    )


def counters(tree: ast.Module) -> set[str]:
    """``Class.name`` for each counter stepped with ``+=``/``-=`` only by training (outside a
    forward, or in one under ``self.training``/``torch.is_grad_enabled()``), and
    ``refill:Class.name`` for those also assigned outside ``__init__`` (a countdown)."""
    stepped: set[str] = set()
    drifting: set[str] = set()
    assigned: set[str] = set()

    def walk(body: Sequence[ast.stmt], cls: str, forward: bool, guarded: bool, init: bool) -> None:
        for stmt in body:  # only what can run (``blocks``: the rest of a block ends here)
            if isinstance(stmt, LEAVING):
                return
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = stmt.name
                runs = name == "__call__" or name.lstrip("_").startswith("forward")
                walk(stmt.body, cls, runs, False, name == "__init__")
                continue
            if isinstance(stmt, ast.ClassDef):
                walk(stmt.body, stmt.name, False, False, False)
                continue
            if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, (ast.Add, ast.Sub)):
                name = f"{cls}.{_last_name(stmt.target)}"
                stepped.add(name)
                if forward and not guarded:
                    drifting.add(name)
            elif isinstance(stmt, ast.Assign) and not init:
                assigned.update(f"{cls}.{_last_name(t)}" for t in stmt.targets)
            if isinstance(stmt, (ast.If, ast.While)):
                # (read only in a forward: elsewhere a guard changes nothing)
                inner = guarded or (forward and _guarded_by_training(stmt.test))
                walk(stmt.body, cls, forward, inner, init)
                walk(stmt.orelse, cls, forward, guarded, init)
                if type(stmt) is ast.If and after_if(stmt) is None:
                    return  # both arms leave
            else:
                for block in ("body", "orelse", "finalbody"):
                    walk(getattr(stmt, block, ()), cls, forward, guarded, init)
                for handler in getattr(stmt, "handlers", ()):
                    walk(handler.body, cls, forward, guarded, init)

    walk(tree.body, "", False, False, False)
    kept = stepped - drifting
    return kept | {f"refill:{n}" for n in kept & assigned}
