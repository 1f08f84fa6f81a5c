"""The walk: one pass over the tree that hands every call to the rules with its context.

The context says where a call is: enclosing class and function, the ``if`` branches that guard
it, the loops around it, and which arm of an ``if``/``try`` it sits in (for TEM005).
"""

from __future__ import annotations

import ast
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence

from lint_rules.analysis.blocks import after_if
from lint_rules.analysis.nodes import _FIELDS, _LEAVES, _node_fields, iter_nodes
from lint_rules.analysis.symbols import Branch, FunctionNode, dotted, target_names
from lint_rules.te import FLAG

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where a few files pass)
if TYPE_CHECKING:
    from typing import Any

COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


class Context:
    """Where the walk is: class, function chain, guarding branches, loops, exclusive arms.

    A value, never changed once made (a slotted class: the walk makes one per branch).
    """

    __slots__ = ("cls", "scope", "branches", "loops", "exclusive_path")

    def __init__(
        self,
        cls: ast.ClassDef | None,
        scope: tuple[FunctionNode, Context | None, ast.ClassDef | None] | None,
        branches: tuple[Branch, ...],
        loops: tuple[ast.AST, ...],
        exclusive_path: tuple[tuple[int, int], ...],
    ) -> None:
        self.cls = cls
        """The class whose body the walk is directly in (its functions are methods)."""
        self.scope = scope
        """The enclosing function, the context it was defined in, and its class if a method."""
        self.branches = branches
        self.loops = loops
        self.exclusive_path = exclusive_path

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


def called_names(loop: ast.AST) -> Iterator[str]:
    """The last names of the calls in a loop's body."""
    return _called_names(loop)


def _called_names(loop: ast.AST) -> Iterator[str]:
    """The last names of the calls in the loop's body (what ``ast.walk`` finds, without
    descending into the leaves that cannot hold a call)."""
    stack: list[Any] = list(reversed(getattr(loop, "body", ())))
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is ast.Call:
            func = node.func
            yield func.attr if type(func) is ast.Attribute else getattr(func, "id", "")
        fields = _FIELDS.get(kind)
        if fields is None:
            fields = _node_fields(kind)
        for name in fields:
            value = getattr(node, name, None)
            if type(value) is list:
                stack.extend(v for v in value if type(v) not in _LEAVES)
            elif value is not None and type(value) not in _LEAVES:
                stack.append(value)


def loop_runs_backward(loop: ast.AST) -> bool:
    """A loop that also calls ``.backward()`` is a microbatch loop, not a shared module."""
    # .backward(), torch.autograd.backward, backward_step
    return any("backward" in name for name in _called_names(loop))


def loop_steps_optimizer(loop: ast.AST) -> bool:
    """A loop whose body changes the weights: it steps an optimizer (``optimizer.step()``,
    ``zero_grad``...), or updates parameters in place by hand (``updates_parameters``)."""
    for name in _called_names(loop):
        lowered = name.lower()
        if lowered in ("step", "zero_grad") or ("optim" in lowered and "step" in lowered):
            return True
    return updates_parameters(loop)


_PARAMETER_LISTS = frozenset({"parameters", "named_parameters"})
_NOT_VALUES = frozenset({"requires_grad_", "share_memory_"})
"""In-place methods that change how a tensor is kept, not its values."""


def updates_parameters(loop: ast.AST) -> bool:
    """A hand-written optimizer step in the loop's body: a tensor changed in place
    (``-=``, ``+=``..., or a method ending in ``_`` such as ``add_``, ``copy_``) that is a
    parameter, read from a ``.parameters()`` or ``.named_parameters()`` loop, or that the same
    statement updates from its own ``.grad`` (``fc.weight -= lr * fc.weight.grad``). A
    ``.grad`` changed in place (``p.grad.zero_()``) is no update of the weights."""
    body = getattr(loop, "body", ())
    parameters: set[str] = set()
    nodes = [node for stmt in body for node in iter_nodes(stmt)]
    for node in nodes:
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            source = node.iter
            if (
                isinstance(source, ast.Call)
                and isinstance(source.func, ast.Attribute)
                and source.func.attr in _PARAMETER_LISTS
            ):
                parameters.update(name.id for name in target_names(node.target))
    for node in nodes:
        changed: ast.expr
        if isinstance(node, ast.AugAssign):
            changed = node.target
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr.endswith("_")
            and not node.func.attr.startswith("_")
            and node.func.attr not in _NOT_VALUES
        ):
            changed = node.func.value
        else:
            continue
        base = _tensor_base(changed)
        if base is None:
            continue
        if base in parameters or _reads_grad_of(node, base):
            return True
    return False


def _tensor_base(node: ast.expr) -> str | None:
    """``p`` for ``p`` and ``p.data``, ``fc.weight`` for ``fc.weight``; None for a gradient
    (``p.grad``) or anything but a name or an attribute chain."""
    if isinstance(node, ast.Attribute) and node.attr == "data":
        node = node.value
    spelled = dotted(node)
    if not spelled or spelled == "grad" or spelled.endswith(".grad"):
        return None
    return spelled


def _reads_grad_of(statement: ast.AST, base: str) -> bool:
    return any(
        isinstance(n, ast.Attribute) and n.attr == "grad" and dotted(n.value) == base
        for n in ast.walk(statement)
    )


_DECORATED = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})


class Walker:
    """Visit every call of a module once, in order, with its ``Context``.

    ``marks`` (``interesting_lines``), when given, says which lines can hold a call
    worth checking; the others are skipped.
    """

    def __init__(
        self,
        on_call: Callable[[ast.Call, Context], None],
        marks: list[int] | None = None,
        positional: int | None = None,
    ) -> None:
        self.on_call = on_call
        self.marks = marks
        self.positional = positional
        """None: hand every call to ``on_call``; else only calls that pass the flag or a splat
        by keyword, or at least this many positional arguments (a positional flag)."""

    def walk_body(self, body: Sequence[ast.AST], ctx: Context) -> None:
        marks = self.marks
        for node in body:
            kind = type(node)
            if kind in _LEAVES:  # import, pass, global...: no call
                if kind is ast.Break or kind is ast.Continue:
                    return  # nothing after it in the block runs (``blocks``)
                continue
            walk = marks is None
            if not walk:  # unless one of its lines can hold a call worth checking
                first = node.lineno  # type: ignore[attr-defined]
                if kind in _DECORATED and node.decorator_list:  # type: ignore[attr-defined]
                    first = node.decorator_list[0].lineno  # type: ignore[attr-defined]
                at = bisect_left(marks, first)  # type: ignore[arg-type]
                walk = at < len(marks) and marks[at] <= (node.end_lineno or node.lineno)  # type: ignore[arg-type,index,attr-defined]
            if walk:
                self.walk(node, ctx)
            if kind is ast.If:  # even when not walked: what follows depends on it (``blocks``)
                after = after_if(node)  # type: ignore[arg-type]
                if after is None:
                    return  # both arms leave the block
                for test, outcome in after:  # `if not tracked(cfg): return`: like an `else`
                    ctx = ctx.branch(test.test, outcome, test, 0 if outcome else 1)
            elif kind is ast.Return or kind is ast.Raise:
                return

    def walk(self, node: ast.AST, ctx: Context) -> None:
        kind = type(node)
        if kind is ast.Call:
            self._call(node, ctx)  # type: ignore[arg-type]
            return
        if kind is ast.Attribute:  # `a.b.c`: only the innermost value may hold a call
            value = node.value  # type: ignore[attr-defined]
            while type(value) is ast.Attribute:
                value = value.value
            if type(value) not in _LEAVES:
                self.walk(value, ctx)
            return
        special = _SPECIAL.get(kind)
        if special is not None:
            special(self, node, ctx)
            return
        for name in _FIELDS.get(kind) or _node_fields(kind):
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if type(item) not in _LEAVES:
                        self.walk(item, ctx)
            elif type(value) not in _LEAVES:
                self.walk(value, ctx)  # type: ignore[arg-type]

    def _call(self, node: ast.Call, ctx: Context) -> None:
        positional = self.positional
        if positional is None or len(node.args) >= positional:
            self.on_call(node, ctx)
        else:
            for keyword in node.keywords:
                if keyword.arg is None or keyword.arg == FLAG:  # a splat, or the flag
                    self.on_call(node, ctx)
                    break
        self._parts((node.func, *node.args, *[k.value for k in node.keywords]), ctx)

    def _assign(self, node: ast.Assign, ctx: Context) -> None:
        self._parts((*node.targets, node.value), ctx)

    def _value(self, node: ast.Expr | ast.Return, ctx: Context) -> None:
        if node.value is not None:
            self._parts((node.value,), ctx)

    def _parts(self, parts: Sequence[ast.expr], ctx: Context) -> None:
        """Walk the parts of a call or statement (``a.b.c``: only ``a`` may hold a call)."""
        for part in parts:
            while type(part) is ast.Attribute:
                part = part.value  # type: ignore[attr-defined]
            if type(part) not in _LEAVES:
                self.walk(part, ctx)

    def _class(self, node: ast.ClassDef, ctx: Context) -> None:
        for child in (*node.bases, *node.keywords, *node.decorator_list):
            self.walk(child, ctx)
        self.walk_body(node.body, Context(node, ctx.scope, (), (), ()))

    def _function(self, node: FunctionNode, ctx: Context) -> None:
        for default in (*node.args.defaults, *[d for d in node.args.kw_defaults if d]):
            if type(default) not in _LEAVES:
                self.walk(default, ctx)
        if not isinstance(node, ast.Lambda):
            for deco in node.decorator_list:
                self.walk(deco, ctx)
        inner = Context(None, (node, ctx, ctx.cls), (), (), ())
        if isinstance(node, ast.Lambda):
            self.walk(node.body, inner)
        else:
            self.walk_body(node.body, inner)

    def _if(self, node: ast.If, ctx: Context) -> None:
        self.walk(node.test, ctx)
        self.walk_body(node.body, ctx.branch(node.test, True, node, 0))
        self.walk_body(node.orelse, ctx.branch(node.test, False, node, 1))

    def _ifexp(self, node: ast.IfExp, ctx: Context) -> None:
        self.walk(node.test, ctx)
        self.walk(node.body, ctx.branch(node.test, True, node, 0))
        self.walk(node.orelse, ctx.branch(node.test, False, node, 1))

    def _try(self, node: ast.Try, ctx: Context) -> None:
        self.walk_body(node.body, ctx.exclusive(node, 0))
        for index, handler in enumerate(node.handlers, start=1):
            arm = ctx.exclusive(node, index)
            if handler.type is not None:
                self.walk(handler.type, arm)
            self.walk_body(handler.body, arm)
        self.walk_body(node.orelse, ctx.exclusive(node, 0))
        self.walk_body(node.finalbody, ctx)

    def _match(self, node: ast.AST, ctx: Context) -> None:
        self.walk(node.subject, ctx)  # type: ignore[attr-defined]
        for index, case in enumerate(node.cases):  # type: ignore[attr-defined]
            arm = ctx.exclusive(node, index)  # at most one arm runs, as with if/elif
            if case.guard is not None:
                self.walk(case.guard, arm)
            self.walk_body(case.body, arm)

    def _loop(self, node: ast.For | ast.AsyncFor | ast.While, ctx: Context) -> None:
        head = node.iter if not isinstance(node, ast.While) else node.test
        self.walk(head, ctx)
        self.walk_body(node.body, ctx.loop(node))
        self.walk_body(node.orelse, ctx)

    def _with(self, node: ast.With | ast.AsyncWith, ctx: Context) -> None:
        for item in node.items:
            self.walk(item.context_expr, ctx)
        self.walk_body(node.body, ctx)

    def _comprehension(self, node: ast.AST, ctx: Context) -> None:
        generators = node.generators  # type: ignore[attr-defined]
        if generators:
            self.walk(generators[0].iter, ctx)
        loop_ctx = ctx.loop(node)
        for index, gen in enumerate(generators):
            if index:
                self.walk(gen.iter, loop_ctx)
            for cond in gen.ifs:
                self.walk(cond, loop_ctx)
        if isinstance(node, ast.DictComp):
            self.walk(node.key, loop_ctx)
            self.walk(node.value, loop_ctx)
        else:
            self.walk(node.elt, loop_ctx)  # type: ignore[attr-defined]


_SPECIAL: dict[type, Callable[[Walker, Any, Context], None]] = {
    ast.Assign: Walker._assign,  # the most frequent statements, by their short paths
    ast.Expr: Walker._value,
    ast.Return: Walker._value,
    ast.ClassDef: Walker._class,
    ast.FunctionDef: Walker._function,
    ast.AsyncFunctionDef: Walker._function,
    ast.Lambda: Walker._function,
    ast.If: Walker._if,
    ast.IfExp: Walker._ifexp,
    ast.Try: Walker._try,
    ast.For: Walker._loop,
    ast.AsyncFor: Walker._loop,
    ast.While: Walker._loop,
    ast.With: Walker._with,
    ast.AsyncWith: Walker._with,
    **{kind: Walker._comprehension for kind in COMPREHENSIONS},
    **({ast.TryStar: Walker._try} if hasattr(ast, "TryStar") else {}),  # type: ignore[attr-defined]
    **({ast.Match: Walker._match} if hasattr(ast, "Match") else {}),  # type: ignore[attr-defined]
}
