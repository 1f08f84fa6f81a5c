"""Small facts about ``ast`` nodes that every part of the analysis uses: dotted names,
constants, assignment targets, the statements of a body, source spans, and whether a
statement stores the flag in a mapping.

Nothing here knows about TE or about bindings.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator, Sequence

from lint_rules.te import FLAG

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where a few files pass)
if TYPE_CHECKING:
    from typing import Any, Union

if TYPE_CHECKING:
    FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda]
else:  # the alias is the type checker's: at run time, its classes
    FunctionNode = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
Branch = tuple[ast.expr, bool]
"""A guarding condition and the outcome under which the code runs (True: the ``if`` body)."""


def dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of attributes on a name, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def constant_str(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def is_none(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def imported_name(module: str, name: str) -> str:
    """What ``from MODULE import NAME`` binds, dotted: ``pkg.layers.X``, ``.layers.X`` (relative),
    and ``.layers`` for ``from . import layers`` (``module`` is only dots there)."""
    return f"{module}{name}" if not module.strip(".") else f"{module}.{name}"


def target_names(target: ast.expr) -> Iterator[ast.Name]:
    """The names an assignment or loop target binds."""
    if isinstance(target, ast.Name):
        yield target
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from target_names(elt)
    elif isinstance(target, ast.Starred):
        yield from target_names(target.value)


def target_paths(
    target: ast.expr, path: tuple[int, ...] | None = ()
) -> Iterator[tuple[ast.Name, tuple[int, ...] | None]]:
    """The names a target binds, each with its position in nested tuples (None after ``*``)."""
    if isinstance(target, ast.Name):
        yield target, path
    elif isinstance(target, (ast.Tuple, ast.List)):
        for index, elt in enumerate(target.elts):
            yield from target_paths(elt, None if path is None else (*path, index))
    elif isinstance(target, ast.Starred):
        yield from target_paths(target.value, None)


def statements(body: Sequence[ast.stmt]) -> list[ast.stmt]:
    """Every statement of a body, through compound statements but not into nested scopes,
    in source order.

    Assignments are statements, so this finds ``self.x = ...`` without visiting expressions.
    """
    found: list[ast.stmt] = []
    pending = list(reversed(body))
    closed = _NO_BLOCK
    while pending:
        stmt = pending.pop()
        found.append(stmt)
        if type(stmt) not in closed:
            pending.extend(reversed(blocks(stmt)))
    return found


def blocks(stmt: ast.stmt) -> list[ast.stmt]:
    """The statements a compound statement holds, in order: its body, ``else``, ``finally``,
    then its ``except`` handlers' and ``match`` cases' bodies."""
    kind = type(stmt)
    if kind in _BODY_ELSE:  # (the most common compound statements, by their fields)
        return [*stmt.body, *stmt.orelse]  # type: ignore[attr-defined]
    if kind is ast.With or kind is ast.AsyncWith:
        return list(stmt.body)  # type: ignore[attr-defined]
    inner: list[ast.stmt] = []
    for name in ("body", "orelse", "finalbody"):
        inner.extend(getattr(stmt, name, ()))
    for handler in getattr(stmt, "handlers", ()):
        inner.extend(handler.body)
    for case in getattr(stmt, "cases", ()):
        inner.extend(case.body)
    return inner


NESTED_SCOPES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})
SIMPLE_STATEMENTS = frozenset(
    {ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return, ast.Pass, ast.Raise}
    | {ast.Import, ast.ImportFrom, ast.Break, ast.Continue, ast.Delete, ast.Global}
    | {ast.Nonlocal, ast.Assert}
)
"""Statements that hold no block."""
_NO_BLOCK = SIMPLE_STATEMENTS | NESTED_SCOPES
"""What ``statements`` does not look into."""
_BODY_ELSE = frozenset({ast.If, ast.For, ast.AsyncFor, ast.While})
"""Statements whose blocks are their ``body`` and ``orelse``, and no other."""


def span(node: ast.AST) -> tuple[tuple[int, int], tuple[int, int]]:
    """Where a node starts and ends in the source: ``(line, column)`` pairs."""
    start = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
    return start, (node.end_lineno or start[0], node.end_col_offset or 0)  # type: ignore[attr-defined]


def contains(outer: ast.AST, inner: ast.AST) -> bool:
    """``inner`` lies within ``outer``'s source range."""
    (start, end), (inner_start, inner_end) = span(outer), span(inner)
    return start <= inner_start and inner_end <= end


def runs_before(function: FunctionNode, node: ast.AST) -> Iterator[ast.stmt]:
    """The statements of ``function`` that have run whenever ``node`` runs: those ahead of it
    in each block that encloses it (not inside a loop, ``try`` or branch it is not in)."""
    if isinstance(function, ast.Lambda):
        return
    body: Sequence[ast.stmt] = function.body
    while body:
        inner: Sequence[ast.stmt] = ()
        for index, stmt in enumerate(body):
            if contains(stmt, node):
                yield from body[:index]
                if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    blocks = [getattr(stmt, name, ()) for name in ("body", "orelse", "finalbody")]
                    blocks += [h.body for h in getattr(stmt, "handlers", ())]
                    blocks += [c.body for c in getattr(stmt, "cases", ())]
                    inner = next((b for b in blocks if b and _contains_block(b, node)), ())
                break
        body = inner


def _contains_block(block: Sequence[ast.stmt], node: ast.AST) -> bool:
    return any(contains(stmt, node) for stmt in block)


def stores_flag(stmt: ast.stmt, mapping: str) -> bool:
    """Does ``stmt`` replace (or drop) the flag's key of the mapping named ``mapping``:
    ``m["is_first_microbatch"] = v``, ``m.update(is_first_microbatch=v)``, ``del m[...]``,
    ``m.pop("is_first_microbatch")``, or ``m = <a new mapping that does not mention m>``?"""

    def is_key(target: ast.expr) -> bool:
        return (
            isinstance(target, ast.Subscript)
            and isinstance(target.value, ast.Name)
            and target.value.id == mapping
            and constant_str(target.slice) == FLAG
        )

    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if any(is_key(t) for t in targets):
            return True
        rebinds = any(isinstance(t, ast.Name) and t.id == mapping for t in targets)
        mentions = any(isinstance(n, ast.Name) and n.id == mapping for n in ast.walk(stmt.value))
        return rebinds and not mentions
    if (
        isinstance(stmt, ast.AugAssign)
        and isinstance(stmt.op, ast.BitOr)
        and isinstance(stmt.target, ast.Name)
        and stmt.target.id == mapping
    ):
        return _dict_has_flag(stmt.value)
    if isinstance(stmt, ast.Delete):
        return any(is_key(t) for t in stmt.targets)
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        func = call.func
        if not (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == mapping
        ):
            return False
        if func.attr == "update":
            literal = call.args[0] if len(call.args) == 1 else None
            return any(kw.arg == FLAG for kw in call.keywords) or _dict_has_flag(literal)
        if func.attr == "pop":
            return bool(call.args) and constant_str(call.args[0]) == FLAG
    return False


def _dict_has_flag(node: ast.expr | None) -> bool:
    """A dict literal with the flag's key (``{"is_first_microbatch": v}``)."""
    return isinstance(node, ast.Dict) and any(
        key is not None and constant_str(key) == FLAG for key in node.keys
    )


_LEAVES = frozenset(
    {ast.Name, ast.Constant, ast.Load, ast.Store, ast.Del, ast.alias, ast.Pass, ast.Break}
    | {ast.Continue, ast.Global, ast.Nonlocal, ast.Import, ast.ImportFrom}
    | {type(op) for op in (ast.Add(), ast.Sub(), ast.Mult(), ast.Div(), ast.Mod(), ast.Pow())}
    | {ast.And, ast.Or, ast.Not, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Is}
    | {ast.IsNot, ast.In, ast.NotIn, ast.USub, ast.UAdd, ast.Invert, ast.FloorDiv, ast.MatMult}
    | {ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift}
    | {str, int, bool, float, complex, bytes, type(None), type(...)}
)
"""Nodes (and field values) that can never contain a call: the walk does not descend into them."""

_SCALAR_FIELDS = frozenset(
    {"ctx", "op", "ops", "id", "attr", "arg", "name", "names", "module", "level", "kind"}
    | {"conversion", "is_async", "simple", "type_comment", "kwd_attrs", "rest", "tag"}
)
_FIELDS: dict[type, tuple[str, ...]] = {}
"""Per node type, the fields that may hold a node (computed once per type)."""


def _node_fields(kind: type) -> tuple[str, ...]:
    names: tuple[str, ...] = kind._fields  # type: ignore[attr-defined]
    fields = _FIELDS[kind] = tuple(f for f in names if f not in _SCALAR_FIELDS)
    return fields


def iter_nodes(root: ast.AST) -> Iterator[Any]:
    """What ``ast.walk(root)`` gives, in its order, less the leaves that can never hold a call
    (names, constants, operators): a third of the nodes, walked without ``ast.iter_fields``."""
    todo: deque[Any] = deque([root])
    while todo:
        node = todo.popleft()
        yield node
        kind = type(node)
        fields = _FIELDS.get(kind)
        if fields is None:
            fields = _node_fields(kind)
        for name in fields:
            value = getattr(node, name, None)
            if type(value) is list:
                todo.extend(v for v in value if type(v) not in _LEAVES)
            elif value is not None and type(value) not in _LEAVES:
                todo.append(value)
