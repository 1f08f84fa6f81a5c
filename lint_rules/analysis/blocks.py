"""The statement walk of a block: reachability and early exits, written once.

``block(body)`` gives a block's statements in order, each with what holds after it, and ends
where the rest of the block never runs: after a statement that leaves the block (``return``,
``raise``, ``continue``, ``break``), and after an ``if`` both of whose arms leave it. After an
``if`` one of whose arms leaves, what follows runs only when the test has the other arm's
outcome: the step says so (``after``, ``after_if``), and the walker narrows what it knows.
The lifecycle's collector (``collector``) and the scan of where a class is built (``builds``)
walk their blocks with ``block``; the call walker (``walk.Walker``, which skips what the
prefilter rules out, and so also ``stateful``) asks ``leaves`` and ``after_if`` statement by
statement, without a generator in its hot loop.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

LEAVING = (ast.Return, ast.Raise, ast.Continue, ast.Break)
"""The statements after which nothing more of their block runs."""

Narrowing = tuple[tuple[ast.If, bool], ...]
"""What holds after a statement: each ``(if_node, outcome)`` says that what follows runs only
where ``if_node.test`` has that outcome (outermost first; empty: nothing more is known)."""

Step = tuple[int, ast.stmt, Narrowing]
"""A statement's index in its block, the statement, and what holds after it."""

_NOTHING: Narrowing = ()


def leaves(stmt: ast.AST) -> bool:
    """Whether nothing of the block runs after ``stmt``."""
    return isinstance(stmt, LEAVING)


def after_if(stmt: ast.If) -> Narrowing | None:
    """What holds after an ``if``: None when both of its arms leave the block (nothing after
    it runs); ``((stmt, False), ...)`` when its body leaves (through an ``elif`` chain whose
    arms each leave, every test false); ``((stmt, True),)`` when its ``else`` leaves."""
    body, orelse = stmt.body, stmt.orelse
    if body and isinstance(body[-1], LEAVING):
        if orelse and isinstance(orelse[-1], LEAVING):
            return None
        if len(orelse) == 1 and type(orelse[0]) is ast.If:
            inner = after_if(orelse[0])
            return ((stmt, False), *inner) if inner else ((stmt, False),)
        return ((stmt, False),)
    if orelse and isinstance(orelse[-1], LEAVING):
        return ((stmt, True),)
    return _NOTHING


def block(body: Sequence[ast.stmt]) -> Iterator[Step]:
    """The statements of ``body`` that can run, in order (see the module's docstring)."""
    for index, stmt in enumerate(body):
        if isinstance(stmt, LEAVING):
            yield index, stmt, _NOTHING
            return
        if type(stmt) is ast.If:
            after = after_if(stmt)
            if after is None:
                yield index, stmt, _NOTHING
                return
            yield index, stmt, after
            continue
        yield index, stmt, _NOTHING
