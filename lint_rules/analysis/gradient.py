"""The gradient model of TEM005: where a module called twice can lose a weight gradient.

Two calls of one TE module lose a gradient only when one backward pass runs through the
outputs of both (backward runs in reverse, so the first call's wgrad is written last, and a
``True`` flag on it overwrites what the others accumulated). So:

- in a module's code (a method of a class that is a module: it defines ``forward`` or
  derives from ``torch.nn.Module``, a TE module or an in-file module, and the functions nested
  in one), the caller runs backward: a repeated call is reported as it is;
- elsewhere (tests, benchmarks, scripts, training loops), only when a backward can follow both
  calls with none between them: a backward later in the function (or anywhere in a loop around
  the later call), or an output of the later call returned to the caller;
- never under ``torch.no_grad()``, ``torch.inference_mode()``, ``torch.set_grad_enabled(False)``
  or in a function decorated with one, nor when an output is discarded (a bare expression
  statement, ``_ = ...``) or detached on the spot (``.detach()``, ``.item()``, ``.tolist()``).

A backward is ``x.backward()``, ``torch.autograd.backward``, ``torch.autograd.grad``, a call
whose name says ``backward`` (``backward_step``), or an in-file function or method that runs
one. Facts are gathered per function, once, and only for a call that TEM005 looks at.
"""

from __future__ import annotations

import ast

from lint_rules.analysis.kinds import LocalFunction, LocalMethod, ProjectClass, QualName, TEClass
from lint_rules.analysis.nodes import FunctionNode, dotted, iter_nodes
from lint_rules.analysis.scopes import Scope
from lint_rules.slotted import Record

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where a few files pass)

if TYPE_CHECKING:
    from lint_rules.analysis.resolve import Resolver
    from lint_rules.analysis.symbols import ModuleSymbols
    from lint_rules.analysis.walk import Context

_NO_GRAD = frozenset(
    {
        "torch.no_grad",
        "torch.inference_mode",
        "torch.autograd.no_grad",
        "torch.autograd.inference_mode",
        "torch.autograd.grad_mode.no_grad",
        "torch.autograd.grad_mode.inference_mode",
    }
)
_SET_GRAD = frozenset(
    {
        "torch.set_grad_enabled",
        "torch.autograd.set_grad_enabled",
        "torch.autograd.grad_mode.set_grad_enabled",
    }
)
_BACKWARD = frozenset({"torch.autograd.backward", "torch.autograd.grad"})
_DETACHING = frozenset({"detach", "item", "tolist"})
_APPENDS = frozenset({"append", "extend", "insert", "add"})
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_BRANCHES = (
    (ast.If, ast.IfExp, ast.Try, ast.Match)
    if hasattr(ast, "Match")
    else (ast.If, ast.IfExp, ast.Try)
)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)

Span = tuple[tuple[int, int], tuple[int, int]]


def _span(node: ast.AST) -> Span:
    return (
        (node.lineno, node.col_offset),  # type: ignore[attr-defined]
        (node.end_lineno or node.lineno, node.end_col_offset or 0),  # type: ignore[attr-defined]
    )


class _Backward(Record):
    __slots__ = ("span", "branches", "loops")
    span: Span
    branches: frozenset[int]
    """The ``if``/``try``/``match`` nodes around it in its function (it may not run)."""
    loops: tuple[Span, ...]

    def __init__(
        self,
        span: Span,
        branches: frozenset[int],
        loops: tuple[Span, ...],
    ) -> None:
        self._fill(locals())


class _Facts(Record):
    """What one function (or the module's own code) says about gradients."""

    __slots__ = (
        "parents",
        "branches",
        "loops",
        "backwards",
        "no_grad",
        "returned",
        "returned_calls",
    )
    parents: dict[int, ast.AST]
    branches: dict[int, frozenset[int]]
    """For each call: the ``if``/``try``/``match`` nodes around it."""
    loops: dict[int, tuple[Span, ...]]
    backwards: list[_Backward]
    no_grad: list[Span]
    returned: set[str]
    """The names a ``return``/``yield`` of the function mentions."""
    returned_calls: set[int]

    def __init__(
        self,
        parents: dict[int, ast.AST] | None = None,
        branches: dict[int, frozenset[int]] | None = None,
        loops: dict[int, tuple[Span, ...]] | None = None,
        backwards: list[_Backward] | None = None,
        no_grad: list[Span] | None = None,
        returned: set[str] | None = None,
        returned_calls: set[int] | None = None,
    ) -> None:
        if parents is None:
            parents = dict()
        if branches is None:
            branches = dict()
        if loops is None:
            loops = dict()
        if backwards is None:
            backwards = list()
        if no_grad is None:
            no_grad = list()
        if returned is None:
            returned = set()
        if returned_calls is None:
            returned_calls = set()
        self._fill(locals())


class Gradients:
    """The gradient model's answers for one file, memoised per function."""

    def __init__(self, resolver: Resolver, tree: ast.Module) -> None:
        self.resolver = resolver
        self.symbols = resolver.symbols
        self.tree = tree
        self._facts: dict[int, _Facts] = {}
        self._runs_backward: dict[int, bool] = {}
        self._module_class: dict[int, bool] = {}

    # -- where the call is ----------------------------------------------------------------

    def in_module_code(self, ctx: Context) -> bool:
        """The call is in a method of a module class (or a function nested in one)."""
        scope = ctx.scope
        while scope is not None:
            _node, outer, cls = scope
            if cls is not None and self.module_class(cls):
                return True
            scope = outer.scope if outer is not None else None
        return False

    def module_class(self, cls: ast.ClassDef) -> bool:
        known = self._module_class.get(id(cls))
        if known is None:
            known = self._module_class[id(cls)] = self._is_module_class(cls)
        return known

    def _is_module_class(self, cls: ast.ClassDef) -> bool:
        classes = self.resolver.classes
        if classes is None:
            return False
        if classes.defines(cls, "forward"):
            return True
        for kind in classes.outside_bases(cls):
            if isinstance(kind, (TEClass, ProjectClass)):
                return True
            if isinstance(kind, QualName) and kind.name.rsplit(".", 1)[-1].endswith("Module"):
                return True
        return any(
            (dotted(base) or "").rsplit(".", 1)[-1].endswith("Module")
            for node in classes.lineage(cls)
            for base in node.bases
        )

    def silent(self, call: ast.Call, ctx: Context) -> bool:
        """No gradient can come out of this call: grad mode off, or its output dropped."""
        facts = self.facts(ctx)
        return self._no_grad(call, ctx, facts) or self._dropped(call, facts)

    def _no_grad(self, call: ast.Call, ctx: Context, facts: _Facts) -> bool:
        start = _span(call)[0]
        if any(lo <= start < hi for lo, hi in facts.no_grad):
            return True
        scope = ctx.scope
        while scope is not None:
            node, outer, _cls = scope
            if isinstance(node, _FUNCTIONS) and any(
                self._disables_grad(d, outer) for d in node.decorator_list
            ):
                return True
            scope = outer.scope if outer is not None else None
        return False

    def _dropped(self, call: ast.Call, facts: _Facts) -> bool:
        parent = facts.parents.get(id(call))
        if isinstance(parent, ast.Expr):
            return True  # a bare expression statement: the output is thrown away
        if isinstance(parent, ast.Assign) and all(
            isinstance(t, ast.Name) and t.id == "_" for t in parent.targets
        ):
            return True
        return isinstance(parent, ast.Attribute) and parent.attr in _DETACHING

    # -- the two questions TEM005 asks ----------------------------------------------------

    def loop_loses(self, call: ast.Call, ctx: Context, loop: ast.AST) -> bool:
        """A call repeated by ``loop`` (whose body runs no backward) can lose a gradient."""
        if self.silent(call, ctx):
            return False
        if self.in_module_code(ctx):
            return True
        facts = self.facts(ctx)
        here = _span(loop)
        if any(here in b.loops for b in facts.backwards):
            return False  # its body runs backward (through a call): a microbatch loop
        return self._escapes(call, facts) or any(
            b.span[0] >= here[1] or any(_inside(s, here) for s in b.loops) for b in facts.backwards
        )

    def pair_loses(self, one: ast.Call, other: ast.Call, ctx: Context) -> bool:
        """Two calls of one module in one function can lose a gradient: a backward can
        follow both with none between them (always so in a module's code)."""
        if self.silent(one, ctx) or self.silent(other, ctx):
            return False
        if self.in_module_code(ctx):
            return True
        facts = self.facts(ctx)
        first, second = sorted((one, other), key=lambda c: _span(c)[0])
        after_first, before_second = _span(first)[1], _span(second)[0]
        around_second = facts.branches.get(id(second), frozenset())
        for b in facts.backwards:
            between = after_first <= b.span[0] and b.span[1] <= before_second
            if between and b.branches <= around_second:
                return False  # a backward always runs between them
        end = _span(second)[1]
        loops = facts.loops.get(id(second), ())
        return self._escapes(second, facts) or any(
            b.span[0] >= end or any(s in loops for s in b.loops) for b in facts.backwards
        )

    def _escapes(self, call: ast.Call, facts: _Facts) -> bool:
        """The output is handed to the caller: returned, or stored in a name returned."""
        if id(call) in facts.returned_calls:
            return True
        node: ast.AST | None = call
        while node is not None and not isinstance(node, ast.stmt):
            node = facts.parents.get(id(node))
        names: set[str] = set()
        if isinstance(node, ast.Assign):
            for target in node.targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            names.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            func = node.value.func
            if isinstance(func, ast.Attribute) and func.attr in _APPENDS:
                names.update(n.id for n in ast.walk(func.value) if isinstance(n, ast.Name))
        return bool(names & facts.returned)

    # -- facts ----------------------------------------------------------------------------

    def facts(self, ctx: Context) -> _Facts:
        function = ctx.scope[0] if ctx.scope is not None else None
        key = id(function) if function is not None else 0
        found = self._facts.get(key)
        if found is None:
            found = self._facts[key] = self._gather(function, ctx)
        return found

    def _gather(self, function: FunctionNode | None, ctx: Context) -> _Facts:
        facts = _Facts()
        scope = scope_of(self.symbols, ctx)
        body: list[ast.AST]
        if function is None:
            body = list(self.tree.body)
        elif isinstance(function, ast.Lambda):
            body = [function.body]
            facts.returned_calls.update(
                id(n) for n in ast.walk(function.body) if isinstance(n, ast.Call)
            )
        else:
            body = list(function.body)
        stack: list[tuple[ast.AST, ast.AST | None, frozenset[int], tuple[Span, ...]]] = [
            (node, None, frozenset(), ()) for node in reversed(body)
        ]
        while stack:
            node, parent, branches, loops = stack.pop()
            if parent is not None:
                facts.parents[id(node)] = parent
            if isinstance(node, ast.Call):
                facts.branches[id(node)] = branches
                facts.loops[id(node)] = loops
                if self._is_backward(node, scope):
                    facts.backwards.append(_Backward(_span(node), branches, loops))
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                items = node.items
                if node.body and any(self._disables_grad(i.context_expr, ctx) for i in items):
                    facts.no_grad.append((_span(node.body[0])[0], _span(node)[1]))
            elif isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)) and node.value:
                for inner in ast.walk(node.value):
                    if isinstance(inner, ast.Name):
                        facts.returned.add(inner.id)
                    elif isinstance(inner, ast.Call):
                        facts.returned_calls.add(id(inner))
            if isinstance(node, _NESTED) and parent is not None:
                continue  # its body runs elsewhere, when it is called
            inner_branches = branches | {id(node)} if isinstance(node, _BRANCHES) else branches
            inner_loops = (*loops, _span(node)) if isinstance(node, _LOOPS) else loops
            children = list(ast.iter_child_nodes(node))
            for child in reversed(children):
                stack.append((child, node, inner_branches, inner_loops))
        return facts

    def _qualname(self, node: ast.expr) -> str:
        spelled = dotted(node) or ""
        head, _, rest = spelled.partition(".")
        choices = self.symbols.alias_choices.get(head)
        if choices:
            return f"{choices[0]}.{rest}" if rest else choices[0]
        return spelled

    def _disables_grad(self, node: ast.expr, ctx: object) -> bool:
        """``torch.no_grad()``, ``torch.inference_mode()``, ``torch.set_grad_enabled(False)``
        (a decorator may omit the parentheses)."""
        if isinstance(node, ast.Call):
            qual = self._qualname(node.func)
            if qual in _NO_GRAD:
                mode = node.args[0] if node.args else None
                return not (isinstance(mode, ast.Constant) and mode.value is False)
            if qual in _SET_GRAD and node.args:
                arg = node.args[0]
                return isinstance(arg, ast.Constant) and arg.value is False
            return False
        return self._qualname(node) in _NO_GRAD

    def _is_backward(self, call: ast.Call, scope: Scope | None) -> bool:
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if "backward" in name:
            return True
        if self._qualname(func) in _BACKWARD:
            return True
        if not isinstance(func, (ast.Name, ast.Attribute)):
            return False
        kind = self.resolver.resolve(func, scope)
        if isinstance(kind, (LocalFunction, LocalMethod)) and isinstance(kind.node, _FUNCTIONS):
            return self._function_runs_backward(kind.node)
        return False

    def _function_runs_backward(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        known = self._runs_backward.get(id(function))
        if known is not None:
            return known
        self._runs_backward[id(function)] = False  # a recursive function stops here
        found = False
        for node in iter_nodes(function):  # (``ast.walk``'s calls, in its order)
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if "backward" in name or self._qualname(func) in _BACKWARD:
                    found = True
                    break
                if isinstance(func, ast.Name) and func.id in self.symbols.functions:
                    inner = self.symbols.functions[func.id]
                    if isinstance(inner, _FUNCTIONS) and self._function_runs_backward(inner):
                        found = True
                        break
        self._runs_backward[id(function)] = found
        return found


def scope_of(symbols: ModuleSymbols, ctx: Context) -> Scope | None:
    """The scope of the function the walk is in (``Analysis.scope_of``, without the analysis)."""
    if ctx.scope is None:
        return None
    node, outer, method_class = ctx.scope
    cached = symbols.cached_scope(node)
    if cached is not None:
        return cached
    parent = scope_of(symbols, outer) if outer is not None else None
    return symbols.scope(node, parent, method_class)


def _inside(outer: Span, inner: Span) -> bool:
    return outer[0] <= inner[0] and inner[1] <= outer[1]
