"""The flag's life as facts: every write of a state the flag may come from, and every call that
may re-arm it, with the function each sits in and the conditions that guard it.

``collect`` reads one module tree. ``lines`` limits it to the statements whose lines may hold
such a write or call (``prefilter.state_lines``, the text gate a run over several files uses to
share facts); ``None`` reads every statement (the file's own verdicts). Facts are plain tuples,
so that a run's worker processes and its result cache pass them on unchanged.
"""

from __future__ import annotations

import ast
from bisect import bisect_left
from collections.abc import Sequence
from typing import NamedTuple

from lint_rules.analysis.nodes import SIMPLE_STATEMENTS, constant_str, target_names
from lint_rules.analysis.nodes import blocks as _blocks


class Write(NamedTuple):
    """``<object>.name = value`` (``key`` ``attr:name``) or a module global (``global:name``)."""

    key: str
    value: str
    """``true``, ``false``, ``none``, ``zero`` (a count reset), ``const`` (another constant, or
    a step ``n += 1``), ``param:<name>``, ``copy`` (another state's value) or ``derived``
    (anything else: a mode, a function of an argument)."""
    function: str
    """The qualified name of the function it sits in (``Class.method``); "" at module level."""
    conditions: tuple[str, ...]
    """The configuration conditions it runs under (``condition_text``), outermost first."""
    line: int
    col: int
    path: str | None = None


class CallFact(NamedTuple):
    """A call of a function or method by its last name, with its first argument's kind."""

    name: str
    arg: str
    """``true``, ``false`` or "" (anything else, or no argument)."""
    function: str
    line: int
    col: int
    path: str | None = None


class FileFacts(NamedTuple):
    writes: tuple[Write, ...] = ()
    calls: tuple[CallFact, ...] = ()
    getters: tuple[tuple[str, str], ...] = ()
    """Module-level functions that return a state: ``(function name, key)``."""


EMPTY = FileFacts()

_EXISTENCE = frozenset({"hasattr", "getattr", "isinstance", "callable", "issubclass"})
CONFIGURATION_WORDS = ("config", "fp8", "fp4", "quant", "kitchen", "recipe", "precision")
"""A condition that reads one of these is a condition on the run's configuration: a re-arm
under it keeps the flag only in the runs it holds in. Existence tests (``hasattr(m, ...)``),
counters (``n % k == 0``), modes (``self.training``) and the step's own first-microbatch test
are per-step control flow, not configuration."""
MODE_ATTRIBUTES = frozenset({"training"})
"""State that torch itself keeps every phase (``module.train()``/``eval()``)."""


def condition_text(test: ast.expr, outcome: bool) -> str | None:
    """The condition a branch adds, as the user wrote it (``not (...)`` on the else side), when
    it reads the configuration; None for per-step control flow."""
    if _is_existence(test):
        return None
    text = ast.unparse(test)
    lowered = text.lower()
    if not any(word in lowered for word in CONFIGURATION_WORDS):
        return None
    text = " ".join(text.split())
    if len(text) > 100:
        text = text[:97] + "..."
    return text if outcome else f"not ({text})"


def _is_existence(test: ast.expr) -> bool:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _is_existence(test.operand)
    if isinstance(test, ast.BoolOp):
        return all(_is_existence(v) for v in test.values)
    return (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id in _EXISTENCE
    )


def write_value(value: ast.expr | None, params: frozenset[str]) -> str:
    if value is None:
        return "derived"
    if isinstance(value, ast.Constant):
        if value.value is True:
            return "true"
        if value.value is False:
            return "false"
        if value.value is None:
            return "none"
        return "zero" if value.value == 0 and not isinstance(value.value, bool) else "const"
    if isinstance(value, ast.Name) and value.id in params:
        return f"param:{value.id}"
    if isinstance(value, ast.Attribute) and value.attr not in MODE_ATTRIBUTES:
        return "copy"
    return "derived"


def _arg_kind(call: ast.Call) -> str:
    if call.args and isinstance(call.args[0], ast.Constant):
        if call.args[0].value is True:
            return "true"
        if call.args[0].value is False:
            return "false"
    return ""


def _params(node: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    a = node.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    return frozenset(names)


def _leaves(stmt: ast.stmt) -> bool:
    return isinstance(stmt, (ast.Return, ast.Raise, ast.Continue, ast.Break))


class _Collector:
    def __init__(self, lines: Sequence[int] | None) -> None:
        self.lines = lines
        self.writes: list[Write] = []
        self.calls: list[CallFact] = []
        self.getters: list[tuple[str, str]] = []
        self.globals_: set[str] = set()

    def wanted(self, node: ast.stmt) -> bool:
        lines = self.lines
        if lines is None:
            return True
        at = bisect_left(lines, node.lineno)
        return at < len(lines) and lines[at] <= (node.end_lineno or node.lineno)

    def body(
        self,
        body: Sequence[ast.stmt],
        function: str,
        conditions: tuple[str, ...],
        params: frozenset[str],
        declared: frozenset[str],
    ) -> None:
        for stmt in body:
            if self.wanted(stmt):
                self.stmt(stmt, function, conditions, params, declared)
            if isinstance(stmt, ast.If):  # `if not cfg.fp8: return`: what follows needs cfg
                if stmt.body and _leaves(stmt.body[-1]):
                    extra = condition_text(stmt.test, False)
                    if extra:
                        conditions = (*conditions, extra)
                elif stmt.orelse and _leaves(stmt.orelse[-1]):
                    extra = condition_text(stmt.test, True)
                    if extra:
                        conditions = (*conditions, extra)

    def stmt(
        self,
        stmt: ast.stmt,
        function: str,
        conditions: tuple[str, ...],
        params: frozenset[str],
        declared: frozenset[str],
    ) -> None:
        kind = type(stmt)
        if kind in (ast.FunctionDef, ast.AsyncFunctionDef):
            assert isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
            qual = f"{function}.{stmt.name}" if function else stmt.name
            inner = frozenset(
                n for s in _all_statements(stmt) if type(s) is ast.Global for n in s.names  # type: ignore[attr-defined]
            )
            if not function:
                self._getter(stmt)
            self.body(stmt.body, qual, (), _params(stmt), inner)
            return
        if kind is ast.ClassDef:
            assert isinstance(stmt, ast.ClassDef)
            qual = f"{function}.{stmt.name}" if function else stmt.name
            self.body(stmt.body, qual, conditions, params, declared)
            return
        if kind in (ast.If, ast.While):
            test = stmt.test  # type: ignore[attr-defined]
            self._calls(test, function)
            yes = condition_text(test, True)
            no = condition_text(test, False)
            self.body(
                stmt.body, function, (*conditions, yes) if yes else conditions, params, declared
            )  # type: ignore[attr-defined]
            self.body(
                stmt.orelse, function, (*conditions, no) if no else conditions, params, declared
            )  # type: ignore[attr-defined]
            return
        if kind in (ast.For, ast.AsyncFor):
            self._calls(stmt.iter, function)  # type: ignore[attr-defined]
            self.body(stmt.body, function, conditions, params, declared)  # type: ignore[attr-defined]
            self.body(stmt.orelse, function, conditions, params, declared)  # type: ignore[attr-defined]
            return
        if kind in (ast.With, ast.AsyncWith):
            for item in stmt.items:  # type: ignore[attr-defined]
                self._calls(item.context_expr, function)
            self.body(stmt.body, function, conditions, params, declared)  # type: ignore[attr-defined]
            return
        blocks = [getattr(stmt, name, None) for name in ("body", "orelse", "finalbody")]
        if kind.__name__ in ("Try", "TryStar"):
            for handler in stmt.handlers:  # type: ignore[attr-defined]
                self.body(handler.body, function, conditions, params, declared)
            for block in blocks:
                self.body(block or (), function, conditions, params, declared)
            return
        if kind.__name__ == "Match":
            for case in stmt.cases:  # type: ignore[attr-defined]
                self.body(case.body, function, conditions, params, declared)
            return
        self._simple(stmt, function, conditions, params, declared)

    def _simple(
        self,
        stmt: ast.stmt,
        function: str,
        conditions: tuple[str, ...],
        params: frozenset[str],
        declared: frozenset[str],
    ) -> None:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(stmt, ast.Assign):
            targets, value = list(stmt.targets), stmt.value
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
            if isinstance(stmt, ast.AugAssign):
                value = ast.Constant("step")  # `n += 1`: a step, never a re-arm
        for target in targets:
            for node in _targets(target):
                key = None
                if isinstance(node, ast.Attribute):
                    key = f"attr:{node.attr}"
                elif isinstance(node, ast.Name) and (not function or node.id in declared):
                    key = f"global:{node.id}"
                if key is not None:
                    kind = write_value(value if len(targets) == 1 else None, params)
                    self.writes.append(
                        Write(key, kind, function, conditions, node.lineno, node.col_offset)
                    )
        self._calls(stmt, function, conditions, params)

    def _calls(
        self,
        node: ast.AST,
        function: str,
        conditions: tuple[str, ...] = (),
        params: frozenset[str] = frozenset(),
    ) -> None:
        for sub in ast.walk(node):
            if type(sub) is not ast.Call:
                continue
            func = sub.func  # type: ignore[attr-defined]
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "setattr" and len(sub.args) == 3:  # type: ignore[attr-defined]
                attr = constant_str(sub.args[1])  # type: ignore[attr-defined]
                if attr is not None:
                    kind = write_value(sub.args[2], params)  # type: ignore[attr-defined]
                    self.writes.append(
                        Write(
                            f"attr:{attr}", kind, function, conditions, sub.lineno, sub.col_offset
                        )
                    )
                continue
            if name:
                self.calls.append(
                    CallFact(name, _arg_kind(sub), function, sub.lineno, sub.col_offset)  # type: ignore[arg-type]
                )

    def _getter(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """``def get_flag(): return _FLAG`` (a module global) is a getter of ``_FLAG``."""
        returns = [s for s in _all_statements(node) if type(s) is ast.Return]
        if len(returns) == 1 and isinstance(returns[0].value, ast.Name):
            name = returns[0].value.id
            if name not in _params(node):
                self.getters.append((node.name, f"global:{name}"))


def _all_statements(stmt: ast.stmt) -> list[ast.stmt]:
    """``stmt`` and every statement in it, nested scopes included: what ``ast.walk`` finds of
    ``Global`` and ``Return`` (statements both), without visiting a single expression."""
    found: list[ast.stmt] = []
    pending = [stmt]
    while pending:
        node = pending.pop()
        found.append(node)
        if type(node) not in SIMPLE_STATEMENTS:
            pending.extend(_blocks(node))
    return found


def _targets(target: ast.expr) -> list[ast.expr]:
    if isinstance(target, (ast.Tuple, ast.List)):
        found: list[ast.expr] = []
        for item in target.elts:
            found.extend(_targets(item))
        return found
    if isinstance(target, ast.Starred):
        return _targets(target.value)
    if isinstance(target, ast.Name):
        return list(target_names(target))
    return [target] if isinstance(target, ast.Attribute) else []


def collect(tree: ast.Module, lines: Sequence[int] | None = None) -> FileFacts:
    """The facts of one module (``lines``: only statements on these lines, ascending)."""
    if lines is not None and not lines:
        return EMPTY
    collector = _Collector(lines)
    collector.body(tree.body, "", (), frozenset(), frozenset())
    return FileFacts(tuple(collector.writes), tuple(collector.calls), tuple(collector.getters))


def with_path(facts: FileFacts, path: str) -> FileFacts:
    """The facts of another file of the run, each naming it."""
    return FileFacts(
        tuple(w._replace(path=path) for w in facts.writes),
        tuple(c._replace(path=path) for c in facts.calls),
        facts.getters,
    )
