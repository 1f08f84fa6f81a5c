"""Function scopes: what a function binds (parameters, assignments, loop targets, imports,
nested definitions, keys stored in mappings), each binding with the branches it sits in.

Only statements that can run bind (``blocks``: nothing after ``return``, ``raise``,
``continue`` or ``break`` in its block, nor after an ``if`` both of whose arms leave it), and a
binding after ``if test: return`` sits in the branch where ``test`` is false. A name assigned
only where the code never runs is still the function's own (Python decides which names are
local when it compiles the function): ``Scope.unbound`` keeps it, with no value, so that
``lookup`` stops there as Python does (a read of it raises UnboundLocalError).

Built lazily by ``symbols.ModuleSymbols.scope``, one function at a time.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from lint_rules.analysis.blocks import block
from lint_rules.analysis.nodes import (
    SIMPLE_STATEMENTS,
    Branch,
    FunctionNode,
    constant_str,
    imported_name,
    target_names,
    target_paths,
)
from lint_rules.slotted import Record
from lint_rules.te import FLAG


class Binding:
    """One way a local name gets a value inside a function (a slotted class: a scope makes
    one per assignment)."""

    __slots__ = ("how", "value", "branches", "qualname", "definition", "path")

    def __init__(
        self,
        how: str,
        value: ast.expr | None,
        branches: tuple[Branch, ...],
        qualname: str = "",
        definition: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef | None = None,
        path: tuple[int, ...] | None = (),
    ) -> None:
        self.how = how
        """"assign" | "unpack" | "for" | "import" | "def" | "class" | "aug" | "other"."""
        self.value = value
        self.branches = branches
        self.qualname = qualname
        self.definition = definition
        self.path = path
        """For "for" and "unpack": where the name sits in the target (``for i, x in ...``:
        (1,))."""

    def __repr__(self) -> str:
        return f"Binding({self.how!r}, {self.value!r}, {self.branches!r})"


class Scope(Record):
    """What a function binds: parameters, local assignments, dict-key stores, loop names."""

    __slots__ = ("node", "parent", "cls", "params", "bindings", "key_stores", "unbound")
    node: FunctionNode | None
    parent: Scope | None
    cls: ast.ClassDef | None
    params: dict[str, ast.expr | None]
    bindings: dict[str, list[Binding]]
    key_stores: dict[str, list[tuple[ast.AST, ast.expr, tuple[Branch, ...]]]]
    unbound: frozenset[str]
    """Names local to the function that no statement that can run binds: each is assigned
    (imported, defined...) only where the code never runs. Not parameters, not in
    ``bindings``, not declared ``global`` or ``nonlocal``."""

    def __init__(
        self,
        node: FunctionNode | None,
        parent: Scope | None,
        cls: ast.ClassDef | None,
        params: dict[str, ast.expr | None] | None = None,
        bindings: dict[str, list[Binding]] | None = None,
        key_stores: dict[str, list[tuple[ast.AST, ast.expr, tuple[Branch, ...]]]] | None = None,
        unbound: frozenset[str] = frozenset(),
    ) -> None:
        if params is None:
            params = dict()
        if bindings is None:
            bindings = dict()
        if key_stores is None:
            key_stores = dict()
        self._fill(locals())

    def lookup(self, name: str) -> Scope | None:
        """The function whose local ``name`` is, as Python compiles it: the nearest one
        that binds it anywhere (also where the code never runs)."""
        scope: Scope | None = self
        while scope is not None:
            if name in scope.params or name in scope.bindings or name in scope.unbound:
                return scope
            scope = scope.parent
        return None

    def enclosing_class(self) -> ast.ClassDef | None:
        """The class of the nearest enclosing method."""
        current: Scope | None = self
        while current is not None:
            if current.cls is not None:
                return current.cls
            current = current.parent
        return None

    @property
    def self_name(self) -> str | None:
        """The first parameter of a method (``self``), if this function is one."""
        return self._first_parameter() if self._method_kind() == "instance" else None

    @property
    def cls_name(self) -> str | None:
        """The first parameter of a classmethod (``cls``), if this function is one."""
        return self._first_parameter() if self._method_kind() == "class" else None

    def _first_parameter(self) -> str | None:
        assert isinstance(self.node, (ast.FunctionDef, ast.AsyncFunctionDef))
        args = self.node.args.posonlyargs + self.node.args.args
        return args[0].arg if args else None

    def _method_kind(self) -> str | None:
        if self.cls is None or not isinstance(self.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        names = {d.id for d in self.node.decorator_list if isinstance(d, ast.Name)}
        if "staticmethod" in names:
            return None
        return "class" if "classmethod" in names else "instance"


_INERT = frozenset({ast.Return, ast.Pass, ast.Raise, ast.Break, ast.Continue, ast.Delete})
_INERT |= {ast.Assert, ast.Global, ast.Nonlocal}
"""Statements that bind no name (but a walrus in their expressions) and hold no block."""


class ScopeCollector:
    """Collect a function's bindings, with the guarding branches each one sits in: the
    statements that can run, walked with ``blocks.block``."""

    def __init__(self, scope: Scope, walrus: bool = True) -> None:
        self.scope = scope
        self.walrus = walrus
        """False when the file has no ``:=``: expressions then bind nothing."""
        self.dead: list[ast.stmt] = []
        """The statements that never run (the rest of a block after it leaves)."""

    def bind(self, name: str, binding: Binding) -> None:
        self.scope.bindings.setdefault(name, []).append(binding)

    def collect(self, node: FunctionNode) -> None:
        args = node.args
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
            self.scope.params[arg.arg] = arg.annotation
        for rest in (args.vararg, args.kwarg):
            if rest is not None:
                self.scope.params[rest.arg] = None
        if isinstance(node, ast.Lambda):
            self.expr(node.body, ())
        else:
            self.block(node.body, ())
        if self.dead:
            self.scope.unbound = self._unbound(node)

    def block(self, body: Sequence[ast.stmt], branches: tuple[Branch, ...]) -> None:
        """The statements of ``body`` that can run; those after one that leaves are kept
        aside in ``dead`` (they only make names local)."""
        ran = 0
        for index, stmt, after in block(body):
            ran = index + 1
            self.stmt(stmt, branches)
            for test, outcome in after:  # `if not ok: return`: what follows runs when ok
                branches = (*branches, (test.test, outcome))
        if ran < len(body):
            self.dead.extend(body[ran:])

    def _unbound(self, node: FunctionNode) -> frozenset[str]:
        """The names that only the dead statements make local: what they assign, import or
        define (also where a ``:=`` or a ``del`` is), less the names the function declares
        ``global`` or ``nonlocal`` anywhere (a declaration holds where the code never runs
        too: it is read when the function is compiled)."""
        scope = self.scope
        local, _ = compile_time_names(self.dead)
        if not local:
            return frozenset()
        _, declared = compile_time_names(node.body)  # type: ignore[arg-type]
        return frozenset(
            name
            for name in local - declared
            if name not in scope.params and name not in scope.bindings
        )

    def stmt(self, stmt: ast.stmt, branches: tuple[Branch, ...]) -> None:
        kind = type(stmt)
        if kind is ast.Assign:  # the most frequent first: a scope is built per function
            for target in stmt.targets:  # type: ignore[attr-defined]
                self.assign_target(target, stmt.value, branches)  # type: ignore[attr-defined]
        elif kind in _INERT:
            if not self.walrus:
                return
        elif kind is ast.Expr:
            self.update_call(stmt.value, branches)  # type: ignore[attr-defined]
        elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            self.bind(stmt.name, Binding("def", None, branches, definition=stmt))  # type: ignore[attr-defined,arg-type]
            return
        elif kind is ast.ClassDef:
            self.bind(stmt.name, Binding("class", None, branches, definition=stmt))  # type: ignore[attr-defined,arg-type]
            return
        elif kind is ast.If:
            self.expr(stmt.test, branches)  # type: ignore[attr-defined]
            self.block(stmt.body, (*branches, (stmt.test, True)))  # type: ignore[attr-defined]
            self.block(stmt.orelse, (*branches, (stmt.test, False)))  # type: ignore[attr-defined]
            return
        elif kind is ast.AnnAssign:
            if stmt.value is not None:  # type: ignore[attr-defined]
                self.assign_target(stmt.target, stmt.value, branches)  # type: ignore[attr-defined]
        elif kind is ast.AugAssign:
            for name in target_names(stmt.target):  # type: ignore[attr-defined]
                self.bind(name.id, Binding("aug", stmt.value, branches))  # type: ignore[attr-defined]
            if isinstance(stmt.op, ast.BitOr) and isinstance(stmt.target, ast.Name):  # type: ignore[attr-defined]
                self.literal_stores(stmt.target.id, stmt.value, branches)  # type: ignore[attr-defined]
        elif kind is ast.For or kind is ast.AsyncFor:
            for name, path in target_paths(stmt.target):  # type: ignore[attr-defined]
                self.bind(name.id, Binding("for", stmt.iter, branches, path=path))  # type: ignore[attr-defined]
        elif kind is ast.With or kind is ast.AsyncWith:
            for item in stmt.items:  # type: ignore[attr-defined]
                if item.optional_vars is not None:
                    for name in target_names(item.optional_vars):
                        self.bind(name.id, Binding("other", None, branches))
        elif kind is ast.Import:
            for alias in stmt.names:  # type: ignore[attr-defined]
                local = alias.asname or alias.name.split(".")[0]
                qual = alias.name if alias.asname else alias.name.split(".")[0]
                self.bind(local, Binding("import", None, branches, qual))
        elif kind is ast.ImportFrom:
            module = "." * stmt.level + (stmt.module or "")  # type: ignore[attr-defined]
            for alias in stmt.names:  # type: ignore[attr-defined]
                local = alias.asname or alias.name
                self.bind(
                    local, Binding("import", None, branches, imported_name(module, alias.name))
                )
        elif kind is ast.Try or kind.__name__ == "TryStar":
            self.block(stmt.body, branches)  # type: ignore[attr-defined]
            for handler in stmt.handlers:  # type: ignore[attr-defined]
                if handler.name:
                    self.bind(handler.name, Binding("other", None, branches))
                self.block(handler.body, branches)
            self.block(stmt.orelse, branches)  # type: ignore[attr-defined]
            self.block(stmt.finalbody, branches)  # type: ignore[attr-defined]
            return
        if self.walrus:
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.expr):
                    self.expr(child, branches)
        if kind in SIMPLE_STATEMENTS:
            return
        for field_name in ("body", "orelse"):  # for, while, with: the same branches
            self.block(getattr(stmt, field_name, ()), branches)

    def assign_target(
        self, target: ast.expr, value: ast.expr, branches: tuple[Branch, ...]
    ) -> None:
        if isinstance(target, ast.Name):
            self.bind(target.id, Binding("assign", value, branches))
        elif isinstance(target, (ast.Tuple, ast.List)):
            for name, path in target_paths(target):
                self.bind(name.id, Binding("unpack", value, branches, path=path))
        elif (
            isinstance(target, ast.Subscript)
            and isinstance(target.value, ast.Name)
            and constant_str(target.slice) == FLAG
        ):
            self.scope.key_stores.setdefault(target.value.id, []).append((target, value, branches))

    def update_call(self, call: ast.expr, branches: tuple[Branch, ...]) -> None:
        """``kw.update(is_first_microbatch=v)``, ``kw.update({"is_first_microbatch": v})`` and
        ``kw.setdefault("is_first_microbatch", v)`` store the key like a subscript would."""
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr in ("update", "setdefault")
            and isinstance(call.func.value, ast.Name)
        ):
            name = call.func.value.id
            for kw in call.keywords:
                if kw.arg == FLAG:
                    self.scope.key_stores.setdefault(name, []).append((kw, kw.value, branches))
            args = call.args
            if call.func.attr == "update" and len(args) == 1:
                self.literal_stores(name, args[0], branches)
            elif len(args) == 2 and constant_str(args[0]) == FLAG:  # setdefault(key, v)
                self.scope.key_stores.setdefault(name, []).append((args[0], args[1], branches))

    def literal_stores(self, name: str, value: ast.expr, branches: tuple[Branch, ...]) -> None:
        """``kw |= {"is_first_microbatch": v}`` (or ``update`` with it): the key is stored."""
        if isinstance(value, ast.Dict):
            for key, item in zip(value.keys, value.values):
                if key is not None and constant_str(key) == FLAG:
                    self.scope.key_stores.setdefault(name, []).append((key, item, branches))

    def expr(self, expr: ast.expr, branches: tuple[Branch, ...]) -> None:
        """Walrus targets bind in the function; nested scopes are skipped."""
        if not self.walrus:
            return
        stack: list[ast.AST] = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.NamedExpr):
                self.bind(node.target.id, Binding("assign", node.value, branches))
            if isinstance(node, (ast.Lambda,)):
                continue
            stack.extend(ast.iter_child_nodes(node))


_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def compile_time_names(body: Sequence[ast.stmt]) -> tuple[set[str], set[str]]:
    """What ``body`` makes local when its function is compiled, run or not (the names it
    assigns, deletes, imports, defines, catches or captures, ``:=`` targets included), and the
    names it declares ``global`` or ``nonlocal``. Nested functions and classes are not entered
    (only their names count), nor lambdas, nor a comprehension's own targets."""
    local: set[str] = set()
    declared: set[str] = set()
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Load):
                local.add(node.id)
            continue
        if isinstance(node, _NESTED):  # its name; what it evaluates here (a `:=` in a default)
            local.add(node.name)
            stack.extend(node.decorator_list)
            if isinstance(node, ast.ClassDef):
                stack.extend((*node.bases, *node.keywords))
            else:
                stack.append(node.args)
            continue
        if isinstance(node, ast.Lambda):
            stack.append(node.args)
            continue
        if isinstance(node, ast.arguments):  # the defaults, not the parameters
            stack.extend((*node.defaults, *(d for d in node.kw_defaults if d is not None)))
            continue
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    local.add(alias.asname or alias.name.split(".")[0])
            continue
        if isinstance(node, _COMPREHENSIONS):
            for generator in node.generators:  # its targets are the comprehension's own
                stack.append(generator.iter)
                stack.extend(generator.ifs)
            stack.extend((node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,))
            continue
        name = getattr(node, "name", None)  # except ... as name; case ... as name / *name
        if isinstance(name, str) and isinstance(
            node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)
        ):
            local.add(name)
        rest = getattr(node, "rest", None)  # case {**rest}
        if isinstance(rest, str) and isinstance(node, ast.MatchMapping):
            local.add(rest)
        stack.extend(ast.iter_child_nodes(node))
    return local, declared
