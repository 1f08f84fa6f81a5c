"""What object a statement writes or calls through, read off its syntax: a module tree (a
``.modules()`` loop), a class built by name, a builtin that never re-arms."""

from __future__ import annotations

import ast
import weakref
from collections.abc import Sequence

from lint_rules.analysis.facts import _last_name
from lint_rules.analysis.nodes import target_names

_TREE_CALLS = frozenset({"modules", "children", "named_modules", "named_children"})
_TREE_WORDS = ("module", "layer", "block", "children")
BUILTINS = frozenset(
    {"hasattr", "getattr", "setattr", "isinstance", "issubclass", "callable", "len", "range"}
    | {"enumerate", "zip", "print", "super", "list", "dict", "tuple", "set", "int", "float"}
    | {"str", "bool", "min", "max", "any", "all", "sorted", "reversed", "iter", "next", "type"}
    | {"id", "repr", "abs", "sum", "map", "filter", "vars", "open", "round", "divmod"}
)
"""Builtins: called by name, they never re-arm a flag (their calls need no place)."""


def is_tree(iterable: ast.expr) -> bool:
    """``m.modules()``, ``named_modules()``, ``children()``, or a container that spells module
    or layer (``self.layers``, ``self.modules_with_is_first_microbatch``)."""
    if isinstance(iterable, ast.Call):
        name = _last_name(iterable.func)
        if name in _TREE_CALLS:
            return True
        if name in ("enumerate", "list", "tuple", "reversed") and iterable.args:
            return is_tree(iterable.args[0])
        return False
    name = _last_name(iterable).lower()
    return bool(name) and any(word in name for word in _TREE_WORDS)


def loop_target(loop: ast.For | ast.AsyncFor) -> str:
    """The name a tree loop binds to the module (the last of ``for name, m in ...``)."""
    names = list(target_names(loop.target))
    return names[-1].id if names else ""


def class_name(value: ast.expr | None) -> str:
    """``Timer`` of ``Timer(...)`` / ``utils.Timer(...)``: a capitalised callee is a class."""
    if isinstance(value, ast.Call):
        name = _last_name(value.func)
        if name[:1].isupper():
            return name
    return ""


def inside(node: ast.AST, lambdas: Sequence[ast.Lambda]) -> bool:
    """Whether ``node`` lies within one of ``lambdas`` (read as functions of their own)."""
    at = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
    return any(
        (outer.lineno, outer.col_offset) <= at <= (outer.end_lineno or 0, outer.end_col_offset or 0)
        for outer in lambdas
    )


def target_nodes(target: ast.expr) -> list[ast.expr]:
    if isinstance(target, (ast.Tuple, ast.List)):
        found: list[ast.expr] = []
        for item in target.elts:
            found.extend(target_nodes(item))
        return found
    if isinstance(target, ast.Starred):
        return target_nodes(target.value)
    if isinstance(target, ast.Name):
        return list(target_names(target))
    return [target] if isinstance(target, ast.Attribute) else []


_NAMED: weakref.WeakKeyDictionary[ast.stmt, ast.FunctionDef] = weakref.WeakKeyDictionary()


def named_lambda(stmt: ast.stmt) -> ast.FunctionDef | None:
    """``rearm = lambda m: setattr(m, "first", True)``: the function a lambda bound to a name
    is (``def rearm(m): return setattr(...)``), so that handing or calling the name runs its
    body there, not where it is bound; None for any other statement. One per statement."""
    if not (
        type(stmt) is ast.Assign
        and type(stmt.value) is ast.Lambda
        and len(stmt.targets) == 1
        and type(stmt.targets[0]) is ast.Name
    ):
        return None
    found = _NAMED.get(stmt)
    if found is None:
        lam = stmt.value
        body = ast.copy_location(ast.Return(lam.body), lam.body)
        found = ast.FunctionDef(stmt.targets[0].id, lam.args, [body], [], None, None)  # type: ignore[call-arg]
        found = _NAMED[stmt] = ast.copy_location(found, stmt)
    return found
