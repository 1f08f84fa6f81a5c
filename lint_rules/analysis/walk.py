"""The walk: one pass over the tree that hands every call to the rules with its context.

The context says where a call is: enclosing class and function, the ``if`` branches that guard
it, the loops around it, and which arm of an ``if``/``try`` it sits in (for TEM005).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from lint_rules.analysis.symbols import Branch, FunctionNode, target_names

_LEAVES = frozenset(
    {ast.Name, ast.Constant, ast.Load, ast.Store, ast.Del, ast.alias, ast.Pass, ast.Break}
    | {ast.Continue, ast.Global, ast.Nonlocal, ast.Import, ast.ImportFrom}
    | {type(op) for op in (ast.Add(), ast.Sub(), ast.Mult(), ast.Div(), ast.Mod(), ast.Pow())}
    | {ast.And, ast.Or, ast.Not, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Is}
    | {ast.IsNot, ast.In, ast.NotIn, ast.USub, ast.UAdd, ast.Invert, ast.FloorDiv, ast.MatMult}
    | {ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift}
)
"""Nodes that can never contain a call: the walk does not descend into them."""

COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


@dataclass(frozen=True)
class Context:
    """Where the walk is: class, function chain, guarding branches, loops, exclusive arms."""

    cls: ast.ClassDef | None
    """The class whose body the walk is directly in (its functions are methods)."""
    scope: tuple[FunctionNode, Context | None, ast.ClassDef | None] | None
    """The enclosing function, the context it was defined in, and its class if a method."""
    branches: tuple[Branch, ...]
    loops: tuple[ast.AST, ...]
    exclusive_path: tuple[tuple[int, int], ...]

    def branch(self, test: ast.expr, outcome: bool, node: ast.AST, arm: int) -> Context:
        return Context(
            self.cls,
            self.scope,
            (*self.branches, (test, outcome)),
            self.loops,
            (*self.exclusive_path, (id(node), arm)),
        )

    def exclusive(self, node: ast.AST, arm: int) -> Context:
        return Context(
            self.cls, self.scope, self.branches, self.loops, (*self.exclusive_path, (id(node), arm))
        )

    def loop(self, node: ast.AST) -> Context:
        return Context(
            self.cls, self.scope, self.branches, (*self.loops, node), self.exclusive_path
        )


MODULE_CONTEXT = Context(None, None, (), (), ())


def exclusive(path_a: Sequence[tuple[int, int]], path_b: Sequence[tuple[int, int]]) -> bool:
    """Two places in different arms of the same ``if``/``try`` never both run."""
    arms_a = dict(path_a)
    return any(node in arms_a and arms_a[node] != arm for node, arm in path_b)


def _leaves_block(stmt: ast.AST) -> bool:
    return isinstance(stmt, (ast.Return, ast.Raise, ast.Continue, ast.Break))


def loop_bound_names(loop: ast.AST) -> set[str]:
    """The names a loop (or comprehension) binds in its target and body."""
    names: set[str] = set()
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        names.update(n.id for n in target_names(loop.target))
    if isinstance(loop, COMPREHENSIONS):
        for gen in loop.generators:
            names.update(n.id for n in target_names(gen.target))
        return names
    for stmt in getattr(loop, "body", ()):
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


def _called_names(loop: ast.AST) -> Iterator[str]:
    for stmt in getattr(loop, "body", ()):
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call):
                func = node.func
                yield func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def loop_runs_backward(loop: ast.AST) -> bool:
    """A loop that also calls ``.backward()`` is a microbatch loop, not a shared module."""
    # .backward(), torch.autograd.backward, backward_step
    return any("backward" in name for name in _called_names(loop))


def loop_steps_optimizer(loop: ast.AST) -> bool:
    """A loop whose body steps the optimizer (``optimizer.step()``, ``zero_grad``...)."""
    for name in _called_names(loop):
        lowered = name.lower()
        if lowered in ("step", "zero_grad") or ("optim" in lowered and "step" in lowered):
            return True
    return False


class Walker:
    """Visit every call of a module once, in order, with its ``Context``."""

    def __init__(self, on_call: Callable[[ast.Call, Context], None]) -> None:
        self.on_call = on_call

    def walk_body(self, body: Sequence[ast.AST], ctx: Context) -> None:
        for node in body:
            self.walk(node, ctx)
            if isinstance(node, ast.If) and node.body and _leaves_block(node.body[-1]):
                # `if not tracked(cfg): return ...`: what follows runs only when the test is
                # false, exclusive with the `if` body (like an `else`).
                ctx = ctx.branch(node.test, False, node, 1)
            elif isinstance(node, ast.If) and node.orelse and _leaves_block(node.orelse[-1]):
                ctx = ctx.branch(node.test, True, node, 0)

    def walk(self, node: ast.AST, ctx: Context) -> None:
        if isinstance(node, ast.ClassDef):
            for child in (*node.bases, *node.keywords, *node.decorator_list):
                self.walk(child, ctx)
            self.walk_body(node.body, Context(node, ctx.scope, (), (), ()))
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for default in (*node.args.defaults, *[d for d in node.args.kw_defaults if d]):
                self.walk(default, ctx)
            if not isinstance(node, ast.Lambda):
                for deco in node.decorator_list:
                    self.walk(deco, ctx)
            inner = Context(None, (node, ctx, ctx.cls), (), (), ())
            if isinstance(node, ast.Lambda):
                self.walk(node.body, inner)
            else:
                self.walk_body(node.body, inner)
            return
        if isinstance(node, ast.If):
            self.walk(node.test, ctx)
            self.walk_body(node.body, ctx.branch(node.test, True, node, 0))
            self.walk_body(node.orelse, ctx.branch(node.test, False, node, 1))
            return
        if isinstance(node, ast.IfExp):
            self.walk(node.test, ctx)
            self.walk(node.body, ctx.branch(node.test, True, node, 0))
            self.walk(node.orelse, ctx.branch(node.test, False, node, 1))
            return
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            self.walk_body(node.body, ctx.exclusive(node, 0))  # type: ignore[attr-defined]
            for index, handler in enumerate(node.handlers, start=1):  # type: ignore[attr-defined]
                self.walk(handler, ctx.exclusive(node, index))
            self.walk_body(node.orelse, ctx.exclusive(node, 0))  # type: ignore[attr-defined]
            self.walk_body(node.finalbody, ctx)  # type: ignore[attr-defined]
            return
        if isinstance(node, getattr(ast, "Match", ())):
            self.walk(node.subject, ctx)  # type: ignore[attr-defined]
            for index, case in enumerate(node.cases):  # type: ignore[attr-defined]
                arm = ctx.exclusive(node, index)  # at most one arm runs, as with if/elif
                if case.guard is not None:
                    self.walk(case.guard, arm)
                self.walk_body(case.body, arm)
            return
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            head = node.iter if not isinstance(node, ast.While) else node.test
            self.walk(head, ctx)
            self.walk_body(node.body, ctx.loop(node))
            self.walk_body(node.orelse, ctx)
            return
        if isinstance(node, COMPREHENSIONS):
            if node.generators:
                self.walk(node.generators[0].iter, ctx)
            loop_ctx = ctx.loop(node)
            for index, gen in enumerate(node.generators):
                if index:
                    self.walk(gen.iter, loop_ctx)
                for cond in gen.ifs:
                    self.walk(cond, loop_ctx)
            if isinstance(node, ast.DictComp):
                self.walk(node.key, loop_ctx)
                self.walk(node.value, loop_ctx)
            else:
                self.walk(node.elt, loop_ctx)
            return
        if isinstance(node, ast.Call):
            self.on_call(node, ctx)
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST) and type(item) not in _LEAVES:
                        self.walk(item, ctx)
            elif isinstance(value, ast.AST) and type(value) not in _LEAVES:
                self.walk(value, ctx)
