"""The fold of a local that only fed the flag: with ``None`` in place of its one read, the
local would be assigned and never used (pyflakes' F841), so the fix deletes its assignments too.

``fold_local`` answers one of three things:

- ``()``: nothing to fold (not a local of the function, or read somewhere else too);
- edits: every assignment of the local deleted (a statement that is the whole of its block
  becomes ``pass``; one target of ``a = b = value`` goes alone); where a statement cannot go
  (unpacking, ``with ... as``, a comment or other code on its lines, a value with an effect)
  its target becomes ``_``, which pyflakes never reports, when the function never names ``_``;
- ``None``: the local cannot go without changing the program: the function reads its locals
  dynamically (``eval``, ``exec``, ``vars()``, ``locals()``, ``dir()``, its frame), a
  ``match`` captures it, or ``_`` is in use. The ``None`` fix would then leave a new pyflakes
  warning (or change what a dynamic read sees), so it is not safe.

A local whose reads several fixes drop together (passed as the flag more than once, read
inside a replaced value, read only by an assignment that is itself deleted) is folded by
``together.combine`` with ``bindings``, ``plan`` and ``delete``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence

from lint_rules.analysis.symbols import Scope
from lint_rules.findings import Edit

_EFFECTS = (ast.Call, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)
_DYNAMIC = frozenset({"eval", "exec", "locals"})
_DYNAMIC_NO_ARGUMENT = frozenset({"vars", "dir"})
_FRAMES = frozenset({"_getframe", "currentframe", "getframeinfo", "stack", "f_locals"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_EQUALS = re.compile(rb"[ \t]*=(?!=)[ \t]*")
_CAPTURES = tuple(getattr(ast, name) for name in ("MatchAs", "MatchStar") if hasattr(ast, name))


def reads_locals_dynamically(function: ast.AST) -> bool:
    """Whether code in ``function`` may read its locals by name at run time."""
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            callee = node.func
            name = (
                callee.id
                if isinstance(callee, ast.Name)
                else callee.attr
                if isinstance(callee, ast.Attribute)
                else ""
            )
            if name in _DYNAMIC or name in _FRAMES:
                return True
            if name in _DYNAMIC_NO_ARGUMENT and not node.args and not node.keywords:
                return True
        elif isinstance(node, ast.Attribute) and node.attr == "f_locals":
            return True
    return False


def _blocks(function: ast.AST) -> Iterator[list[ast.stmt]]:
    """Every statement list of ``function``'s own body (nested scopes excluded)."""
    stack: list[ast.AST] = [function]
    while stack:
        node = stack.pop()
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block
                stack.extend(s for s in block if not isinstance(s, _SCOPES))
        for child in (*getattr(node, "handlers", ()), *getattr(node, "cases", ())):
            stack.append(child)


def bindings(function: ast.AST, name: str) -> tuple[list[ast.Name], list[ast.Name]] | None:
    """(loads, stores) of ``name`` in ``function``; None when ``del``, ``global`` or
    ``nonlocal`` name it."""
    loads: list[ast.Name] = []
    stores: list[ast.Name] = []
    updated = {id(n.target) for n in ast.walk(function) if isinstance(n, ast.AugAssign)}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and node.id == name:
            if isinstance(node.ctx, ast.Load) or id(node) in updated:  # `_F += 1` reads it
                loads.append(node)
            elif isinstance(node.ctx, ast.Del):
                return None
            else:
                stores.append(node)
        elif isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return None
        elif isinstance(node, _CAPTURES) and getattr(node, "name", None) == name:
            stores.append(ast.Name(id=name, ctx=ast.Store()))  # never a plain assignment
        elif getattr(node, "rest", None) == name:  # `case {**rest}`
            stores.append(ast.Name(id=name, ctx=ast.Store()))
    return loads, stores


def fold_local(value: ast.expr, scope: Scope | None, lines: list[str]) -> tuple[Edit, ...] | None:
    """The edits that delete the local ``value`` reads, when the fix replaces that read (see
    the module's docstring). ``lines``: the file's lines as ``ast`` numbers them."""
    return fold_reads((value,), scope, lines)


def fold_reads(
    values: Sequence[ast.expr], scope: Scope | None, lines: list[str]
) -> tuple[Edit, ...] | None:
    """``fold_local`` for fixes applied together, each replacing one of ``values`` (distinct
    reads of one name in ``scope``): the local goes only when they are all its reads."""
    value = values[0]
    if not isinstance(value, ast.Name) or scope is None or scope.node is None:
        return ()
    if value.id in scope.params:
        return ()
    if len({id(v) for v in values}) != len(values) or any(
        not isinstance(v, ast.Name) or v.id != value.id for v in values
    ):
        return ()
    function = scope.node
    found = bindings(function, value.id)
    if found is None:
        return ()
    loads, stores = found
    captured = any(not hasattr(store, "lineno") for store in stores)  # `case _F:`
    if scope.lookup(value.id) is not scope and not captured:
        return ()
    if len(loads) != len(values) or not stores:
        return ()  # read somewhere else too: it stays in use
    planned = plan(function, stores, lines)
    if planned is None:
        return None
    edits, whole = planned
    return (*edits, *delete(whole, function, lines))


def plan(
    function: ast.AST, stores: list[ast.Name], lines: list[str]
) -> tuple[list[Edit], list[ast.stmt]] | None:
    """How a local of ``function`` bound at ``stores`` goes once nothing reads it: the edits of
    its targets, and the statements to delete whole (``delete``); None when it cannot go (see
    the module's docstring)."""
    if reads_locals_dynamically(function):
        return None
    free = _underscore_free(function)
    whole: list[ast.stmt] = []
    edits: list[Edit] = []
    for store in stores:
        statement = _statement_of(function, store)
        if statement is not None and _alone(statement, lines):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if len(targets) > 1:  # `a = _F = value`: this target alone goes
                line = lines[store.lineno - 1].encode("utf-8")
                after = _EQUALS.match(line, store.end_col_offset or 0)
                if after is not None:
                    end = (store.lineno, after.end())
                    edits.append(Edit((store.lineno, store.col_offset), end, ""))
                    continue
            else:
                value_node = statement.value
                if value_node is not None and not any(
                    isinstance(n, _EFFECTS) for n in ast.walk(value_node)
                ):
                    if statement not in whole:
                        whole.append(statement)
                    continue
        if not free or not hasattr(store, "lineno"):
            return None  # a `match` capture, or `_` is in use here
        # Anything else (unpacking, `with ... as`, a comment or other code on its line, a
        # value with an effect): the target becomes `_`, which pyflakes never reports.
        end = (store.end_lineno or store.lineno, store.end_col_offset or 0)
        edits.append(Edit((store.lineno, store.col_offset), end, "_"))
    return edits, whole


def _underscore_free(function: ast.AST) -> bool:
    """Whether ``function`` never names ``_`` (binding it there then changes nothing)."""
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and node.id == "_":
            return False
        if isinstance(node, (ast.Global, ast.Nonlocal)) and "_" in node.names:
            return False
    return True


def _statement_of(function: ast.AST, store: ast.Name) -> ast.Assign | ast.AnnAssign | None:
    """The plain assignment whose target is ``store`` (None: any other way of binding)."""
    for block in _blocks(function):
        for statement in block:
            if isinstance(statement, ast.Assign) and any(t is store for t in statement.targets):
                return statement
            if (
                isinstance(statement, ast.AnnAssign)
                and statement.target is store
                and statement.value is not None
            ):
                return statement
    return None


def _alone(statement: ast.stmt, lines: list[str]) -> bool:
    """Whether ``statement`` stands alone on its lines, with no comment in or after it."""
    first, last = statement.lineno, statement.end_lineno or statement.lineno
    if last >= len(lines):
        return False
    head = lines[first - 1].encode("utf-8")[: statement.col_offset]
    tail = lines[last - 1].encode("utf-8")[statement.end_col_offset or 0 :]
    if head.strip() or tail.strip():
        return False  # shares its line with other code, or a comment follows
    return not any("#" in line for line in lines[first - 1 : last])


def delete(whole: list[ast.stmt], function: ast.AST, lines: list[str]) -> Iterator[Edit]:
    """Delete each statement's lines; one that would leave its block empty becomes ``pass``."""
    gone = {id(s) for s in whole}
    emptied: set[int] = set()
    for block in _blocks(function):
        if all(id(s) in gone for s in block):
            emptied.add(id(block[0]))
    for statement in whole:
        first, last = statement.lineno, statement.end_lineno or statement.lineno
        if id(statement) in emptied:
            end = (last, statement.end_col_offset or 0)
            yield Edit((first, statement.col_offset), end, "pass")
        else:
            yield Edit((first, 0), (last + 1, 0), "")


def warned_unused(function: ast.AST, name: str) -> bool:
    """Whether pyflakes may report ``name`` when nothing reads it (F841): it is bound other than
    as a ``for`` loop's (or a comprehension's) target, which pyflakes never reports."""
    targets: set[int] = set()
    for node in ast.walk(function):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            targets.update(id(n) for n in ast.walk(node.target))
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            if id(node) not in targets:
                return True
        elif getattr(node, "name", None) == name and isinstance(
            node, (ast.ExceptHandler, *_CAPTURES)
        ):
            return True  # `except E as name`, `case [name]`
    return False
