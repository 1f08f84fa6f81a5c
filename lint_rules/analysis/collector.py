"""The statement walk behind ``facts.collect``: one pass over a module's statements that knows
reachability (nothing after ``return``/``raise``/``continue``/``break`` in a block runs), early
exits (``if not cfg.fp8: return`` puts the rest under ``cfg.fp8``), the loops around a
statement and what they do, the step's first-microbatch test, and the object each write and
call goes through."""

from __future__ import annotations

import ast
from bisect import bisect_left
from collections.abc import Sequence

from lint_rules.analysis.blocks import block
from lint_rules.analysis.conditions import When, classify, condition_text, spelled
from lint_rules.analysis.counters import file_classes
from lint_rules.analysis.facts import (
    HOOKS,
    CallFact,
    Where,
    Write,
    _arg_kind,
    _last_name,
    _params,
    write_value,
)
from lint_rules.analysis.nodes import constant_str, statements
from lint_rules.analysis.objects import (
    BUILTINS,
    class_name,
    inside,
    is_tree,
    loop_target,
    named_lambda,
    target_nodes,
)
from lint_rules.analysis.prefilter import Gates
from lint_rules.analysis.treefacts import tree_facts
from lint_rules.analysis.walk import iter_nodes

_NONE: frozenset[str] = frozenset()
_STATIC = frozenset({"staticmethod", "classmethod"})


class Collector:
    """One walk of a module's statements (``body``): the writes and calls it meets, each with
    where it runs; what is read off the tree is asked of its ``TreeFacts``."""

    def __init__(
        self, tree: ast.Module, lines: Sequence[int] | None, source: str | None, gates: Gates
    ) -> None:
        self.tree = tree
        self.lines = lines
        self.source = source
        self.gates = gates
        self.writes: list[Write] = []
        self.calls: list[CallFact] = []
        self.getters: list[tuple[str, str]] = []
        self.no_globals = source is not None and not gates.may_declare_global(source)
        self.file = tree_facts(tree)
        """What every collector of this tree shares (``treefacts``)."""
        self._tests: dict[tuple[object, ...], tuple[When, str | None]] = {}

    # -- the walk ----------------------------------------------------------------------------

    def wanted(self, node: ast.stmt) -> bool:
        lines = self.lines
        if lines is None:
            return True
        at = bisect_left(lines, node.lineno)
        return at < len(lines) and lines[at] <= (node.end_lineno or node.lineno)

    def body(self, body: Sequence[ast.stmt], where: Where, top: bool = False) -> None:
        for index, stmt, after in block(body):  # only what can run (``blocks``)
            here = where._replace(top=index) if top else where
            if self.wanted(stmt):
                self.stmt(stmt, here)
            for test, outcome in after:  # `if not cfg.fp8: return`: what follows needs cfg
                where = self._branch(test.test, outcome, where)

    def _branch(self, test: ast.expr, outcome: bool, where: Where) -> Where:
        """``where`` inside the branch of ``test`` taken when it is ``outcome`` (a test read
        once for both branches)."""
        if isinstance(test, ast.Constant):
            text = condition_text(test, outcome)
            return where._replace(conditions=(*where.conditions, text)) if text else where
        key = (id(test), where.function, where.loops)
        known = self._tests.get(key)
        if known is None:
            reading = self.file.reading(where)
            kind = classify(test, reading)
            text = condition_text(test, True, reading, kind) if kind is When.RUN else None
            known = self._tests[key] = (kind, text)
        kind, text = known
        if text is not None:
            text = text if outcome else f"not ({text})"
            return where._replace(conditions=(*where.conditions, text))
        if outcome and kind in (When.FIRST, When.ONCE) and not where.first:
            return where._replace(first=kind.value)
        return where

    def stmt(self, stmt: ast.stmt, where: Where) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._function(stmt, where)
        elif isinstance(stmt, ast.ClassDef):
            qual = f"{where.function}.{stmt.name}" if where.function else stmt.name
            self.file.classes[stmt.name] = stmt
            inner = Where(qual, stmt.name, "", where.conditions, body_of="class")
            self.body(stmt.body, inner)
        elif isinstance(stmt, (ast.If, ast.While)):
            self._calls(stmt.test, where)
            inner = (
                where._replace(loops=(*where.loops, stmt)) if isinstance(stmt, ast.While) else where
            )
            self.body(stmt.body, self._branch(stmt.test, True, inner))
            self.body(stmt.orelse, self._branch(stmt.test, False, where))
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            self._calls(stmt.iter, where)
            inner = where._replace(loops=(*where.loops, stmt))
            if is_tree(stmt.iter) and loop_target(stmt):
                inner = inner._replace(trees=where.trees | {loop_target(stmt)})
            self.body(stmt.body, inner)
            self.body(stmt.orelse, where)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                self._calls(item.context_expr, where)
            self.body(stmt.body, where)
        elif type(stmt).__name__ in ("Try", "TryStar"):
            for name in ("body", "orelse", "finalbody"):
                self.body(getattr(stmt, name), where)
            for handler in stmt.handlers:  # type: ignore[attr-defined]
                self.body(handler.body, where)
        elif type(stmt).__name__ == "Match":
            for case in stmt.cases:  # type: ignore[attr-defined]
                self.body(case.body, where)
        elif (named := named_lambda(stmt)) is not None:
            self._function(named, where)  # its body runs where the name is called or handed
        else:
            self._simple(stmt, where)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, where: Where) -> None:
        qual = f"{where.function}.{node.name}" if where.function else node.name
        if not where.function:
            self._getter(node)
        self.file.functions[qual] = node
        params = _params(node)
        args = [*node.args.posonlyargs, *node.args.args]
        me, cls = where.me, where.cls
        if where.body_of == "class":
            static = any(_last_name(d) in _STATIC for d in node.decorator_list)
            me = args[0].arg if args and not static else ""
        elif me in params:
            me = ""
        trees = where.trees - params
        if args and node.name in self.file.applied(self.gates, self.source):
            trees = trees | {args[0].arg}  # `model.apply(fn)`: fn's module is each of a tree
        inner = Where(qual, cls, me, (), params, (), "", trees, body_of="function")
        self.body(node.body, inner, top=True)

    # -- writes and calls --------------------------------------------------------------------

    def _globals(self, function: str) -> frozenset[str]:
        return _NONE if self.no_globals else self.file.globals(function)

    def _target(self, receiver: ast.expr, where: Where, trees: frozenset[str] = _NONE) -> str:
        """The object a write goes to (``Write.target``)."""
        if isinstance(receiver, ast.Name):
            if receiver.id == where.me and where.me and where.cls:
                return f"self:{where.cls}"
            if receiver.id in where.trees or receiver.id in trees:
                return "tree"
            if receiver.id == "ctx" and "ctx" in where.params:
                return "ctx"  # an autograd Function's context: a fresh object, never a module
            if self.file.from_model(receiver.id, where):
                return "tree"
        if (
            isinstance(receiver, ast.Attribute)
            and isinstance(receiver.value, ast.Name)
            and receiver.value.id == where.me
            and where.me
            and where.cls
        ):
            built = self.file.attributes(where.cls).get(receiver.attr, "")
            if built:
                return f"obj:{built}"  # `self.fc.flag = True` where `self.fc = TELinear(...)`
        return f"unknown:{spelled(receiver)[:60]}"

    def _simple(self, stmt: ast.stmt, where: Where) -> None:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(stmt, ast.Assign):
            targets, value = list(stmt.targets), stmt.value
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
            if isinstance(stmt, ast.AugAssign):
                value = ast.Constant("step")  # `n += 1`: a step, never a re-arm
        function = where.function if where.body_of == "function" else ""
        for target in targets:
            for node in target_nodes(target):
                key = target_text = None
                if isinstance(node, ast.Attribute):
                    key, target_text = f"attr:{node.attr}", self._target(node.value, where)
                elif isinstance(node, ast.Name) and (
                    where.body_of == "module" or (function and node.id in self._globals(function))
                ):
                    key, target_text = f"global:{node.id}", ""
                if key is not None and target_text is not None:
                    kind = write_value(value if len(targets) == 1 else None, where.params)
                    self._write(key, kind, where, node, target_text)
        self._calls(stmt, where)

    def _write(self, key: str, kind: str, where: Where, node: ast.AST, target: str) -> None:
        function = where.function if where.body_of == "function" else ""
        self.writes.append(
            Write(
                key,
                kind,
                function,
                where.conditions,
                node.lineno,  # type: ignore[attr-defined]
                node.col_offset,  # type: ignore[attr-defined]
                target=target,
                first=self.file.placement(where),
            )
        )

    def _calls(self, node: ast.AST, where: Where) -> None:
        """The calls (and ``setattr`` writes) of an expression or simple statement, in
        ``ast.walk``'s order; a lambda handed to torch (``apply``, a hook) is a function of its
        own, called where torch calls it."""
        function = where.function if where.body_of == "function" else ""
        handled: list[ast.Lambda] = []
        for sub in iter_nodes(node):
            if type(sub) is not ast.Call or (handled and inside(sub, handled)):
                continue
            assert isinstance(sub, ast.Call)
            name = _last_name(sub.func) if not isinstance(sub.func, ast.Call) else ""
            hook = HOOKS.get(name)
            if hook is not None and sub.args:
                handed = sub.args[0] if hook != "apply" or len(sub.args) == 1 else None
                if isinstance(handed, ast.Lambda):
                    handled.append(handed)
                    self._lambda(sub, handed, hook, function, where)
                elif handed is not None and _last_name(handed):
                    self.calls.append(self._call(sub, _last_name(handed), where, f"hook:{hook}"))
            if name == "setattr" and len(sub.args) == 3:
                attr = constant_str(sub.args[1])
                if attr is not None:
                    kind = write_value(sub.args[2], where.params)
                    self._write(f"attr:{attr}", kind, where, sub, self._target(sub.args[0], where))
                continue
            if name:
                self.calls.append(self._call(sub, name, where, self._receiver(sub.func, where)))

    def _lambda(
        self, call: ast.Call, handed: ast.Lambda, hook: str, function: str, where: Where
    ) -> None:
        """``model.apply(lambda m: setattr(m, "flag", True))``: the lambda is called by torch
        (``hook:<kind>``), its first parameter a module of the tree."""
        label = f"<lambda:{handed.lineno}>"
        params = _params(handed)
        self.calls.append(self._call(call, label, where, f"hook:{hook}"))
        module = frozenset(a.arg for a in handed.args.args[:1])
        inner = Where(
            f"{function}.{label}" if function else label,
            where.cls,
            where.me if where.me not in params else "",
            (),
            params,
            (),
            "",
            (where.trees - params) | module,
            body_of="function",
        )
        self._calls(handed.body, inner)

    def _call(self, call: ast.Call, name: str, where: Where, receiver: str) -> CallFact:
        function = where.function if where.body_of == "function" else ""
        if receiver == "name" and name in BUILTINS:  # never a re-arm: no place to tell
            return CallFact(name, "", function, call.lineno, call.col_offset, receiver=receiver)
        return CallFact(
            name,
            _arg_kind(call),
            function,
            call.lineno,
            call.col_offset,
            evaluation=self.file.evaluating(function) if function else False,
            conditions=where.conditions,
            first=self.file.placement(where),
            receiver=receiver,
        )

    def _receiver(self, func: ast.expr, where: Where) -> str:
        if not isinstance(func, ast.Attribute):
            return "name"
        value = func.value
        if isinstance(value, ast.Call) and _last_name(value.func) == "super":
            return f"self:{where.cls}" if where.cls else "obj"
        if isinstance(value, ast.Name):
            if value.id == where.me and where.me and where.cls:
                return f"self:{where.cls}"
            if value.id in self.file.imports():
                return "module"
            function = where.function if where.body_of == "function" else ""
            built = class_name(self.file.locals(function).get(value.id)) if function else ""
            if not built:
                built = self.file.module_objects().get(value.id, "")
            return f"obj:{built}" if built else "obj"
        if (
            isinstance(value, ast.Attribute)
            and isinstance(value.value, ast.Name)
            and value.value.id == where.me
            and where.cls
        ):
            built = self.file.attributes(where.cls).get(value.attr, "")
            return f"obj:{built}" if built else "obj"
        return "obj"

    def _getter(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """``def get_flag(): return _FLAG`` (a module global) is a getter of ``_FLAG``."""
        returns = [s for s in statements(node.body) if isinstance(s, ast.Return)]
        if len(returns) == 1 and isinstance(returns[0].value, ast.Name):
            name = returns[0].value.id
            if name not in _params(node):
                self.getters.append((node.name, f"global:{name}"))

    def classes(self, lines: Sequence[int] | None) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Every class of the module's top level and class bodies, with its bases' last names
        (a file that shares no facts shares no classes)."""
        if lines is not None and not self.writes and not self.calls:
            return ()
        return tuple(sorted(file_classes(self.tree).items()))
