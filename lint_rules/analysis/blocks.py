"""The statement walk of a block: reachability and early exits, written once.

``block(body)`` gives a block's statements in order, each with what holds after it, and ends
where the rest of the block never runs: after a statement that leaves the block (``return``,
``raise``, ``continue``, ``break``), and after an ``if`` both of whose arms leave it. After an
``if`` one of whose arms leaves, what follows runs only when the test has the other arm's
outcome: the step says so (``after``), and the walker narrows what it knows. The lifecycle's
collector (``collector``) and the scan of where a class is built (``builds``) walk their
blocks with it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

LEAVING = (ast.Return, ast.Raise, ast.Continue, ast.Break)
"""The statements after which nothing more of their block runs."""

Step = tuple[int, ast.stmt, "tuple[ast.expr, bool] | None"]
"""A statement's index in its block, the statement, and ``(test, outcome)`` when what follows
it runs only where ``test`` is ``outcome`` (else None)."""


def leaves(stmt: ast.AST) -> bool:
    """Whether nothing of the block runs after ``stmt``."""
    return isinstance(stmt, LEAVING)


def block(body: Sequence[ast.stmt]) -> Iterator[Step]:
    """The statements of ``body`` that can run, in order (see the module's docstring)."""
    for index, stmt in enumerate(body):
        if isinstance(stmt, LEAVING):
            yield index, stmt, None
            return
        if type(stmt) is ast.If:
            body_leaves = bool(stmt.body) and isinstance(stmt.body[-1], LEAVING)
            else_leaves = bool(stmt.orelse) and isinstance(stmt.orelse[-1], LEAVING)
            if body_leaves and else_leaves:
                yield index, stmt, None
                return
            if body_leaves or else_leaves:
                yield index, stmt, (stmt.test, not body_leaves)
                continue
        yield index, stmt, None
