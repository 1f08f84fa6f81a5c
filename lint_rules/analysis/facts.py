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
from collections.abc import Callable, Sequence
from typing import NamedTuple

from lint_rules.analysis.nodes import constant_str, statements, target_names
from lint_rules.analysis.prefilter import may_declare_global


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
    """The conditions on the run it runs under (``condition_text``), outermost first."""
    line: int
    col: int
    path: str | None = None
    evaluation: bool = False
    """Its function runs without gradients (``evaluating``): a re-arm there is evaluation's."""


class CallFact(NamedTuple):
    """A call of a function or method by its last name, with its first argument's kind."""

    name: str
    arg: str
    """``true``, ``false`` or "" (anything else, or no argument)."""
    function: str
    line: int
    col: int
    path: str | None = None
    evaluation: bool = False
    """The calling function runs without gradients (``evaluating``): evaluation, not a step."""


class FileFacts(NamedTuple):
    writes: tuple[Write, ...] = ()
    calls: tuple[CallFact, ...] = ()
    getters: tuple[tuple[str, str], ...] = ()
    """Module-level functions that return a state: ``(function name, key)``."""


EMPTY = FileFacts()

_EXISTENCE = frozenset({"hasattr", "isinstance", "callable", "issubclass"})
_NONE: frozenset[str] = frozenset()
MODE_ATTRIBUTES = frozenset({"training"})
"""State that torch itself keeps every phase (``module.train()``/``eval()``)."""


def condition_text(
    test: ast.expr, outcome: bool, flags: Callable[[], frozenset[str]] = lambda: _NONE
) -> str | None:
    """The condition a branch adds, as the user wrote it (``not (...)`` on the else side); None
    when it is per-step control flow (``per_step``). ``flags()``: the function's locals that
    only ever hold constants (``found = False`` ... ``found = True``)."""
    if isinstance(test, ast.Constant):  # `if True:`: no condition; its `else` never runs
        return None if bool(test.value) is outcome else "False"
    if per_step(test, flags):
        return None
    text = " ".join(ast.unparse(test).split())
    if len(text) > CONDITION_CHARS:
        text = text[: CONDITION_CHARS - 3] + "..."
    return text if outcome else f"not ({text})"


CONDITION_CHARS = 240
"""A condition longer than this is shortened ("..."): megatron-core 0.19.2's re-arm condition
(four tests, 150 characters) is kept whole."""


def per_step(test: ast.expr, flags: Callable[[], frozenset[str]] = lambda: _NONE) -> bool:
    """Whether a test is control flow every step takes the same way in every run, not a
    condition on the run (its configuration, a switch): existence tests (``hasattr(m, ...)``,
    ``isinstance``, ``x is None`` on a local), counters (``n % k == 0``), modes
    (``self.training``, ``torch.is_grad_enabled()``), the step's own first-microbatch test (a
    name that spells ``first``) and the function's own constant flags."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return per_step(test.operand, flags)
    if isinstance(test, ast.BoolOp):
        return all(per_step(v, flags) for v in test.values)
    if isinstance(test, ast.Call):
        func = test.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name in _EXISTENCE or name == "is_grad_enabled"
    if isinstance(test, ast.Compare):
        parts = [test.left, *test.comparators]
        if any(isinstance(p, ast.BinOp) and isinstance(p.op, ast.Mod) for p in parts):
            return True
        return (
            isinstance(test.left, ast.Name)
            and all(isinstance(op, (ast.Is, ast.IsNot)) for op in test.ops)
            and all(isinstance(c, ast.Constant) and c.value is None for c in test.comparators)
        )
    if isinstance(test, ast.Attribute):
        return test.attr in MODE_ATTRIBUTES or "first" in test.attr.lower()
    if isinstance(test, ast.Name):
        return "first" in test.id.lower() or test.id in flags()
    return False


def constant_flags(function: ast.AST) -> frozenset[str]:
    """The locals of ``function`` that every assignment gives a constant."""
    values: dict[str, bool] = {}
    for node in statements(getattr(function, "body", ())):
        if isinstance(node, ast.Assign):
            constant = isinstance(node.value, ast.Constant)
            for target in node.targets:
                if isinstance(target, ast.Name):
                    values[target.id] = values.get(target.id, True) and constant
    return frozenset(name for name, constant in values.items() if constant)


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


_GRAD_OFF = frozenset({"no_grad", "inference_mode"})


def evaluating(function: ast.AST) -> bool:
    """A function that runs without gradients: it turns them off (``with torch.no_grad():``,
    ``inference_mode``, ``set_grad_enabled(False)``, or such a decorator) and calls no
    backward. What it re-arms, its own forwards under no_grad use up: no training step reads
    it (an evaluation loop that resets the flags first)."""
    decorators = getattr(function, "decorator_list", ())
    body = getattr(function, "body", ())
    if not any(_turns_grad_off(d) for d in decorators) and not any(
        isinstance(stmt, (ast.With, ast.AsyncWith))
        and any(_turns_grad_off(item.context_expr) for item in stmt.items)
        for stmt in statements(body)
    ):
        return False  # (found from the statements alone: most functions stop here)
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if "backward" in name:
                return False
    return True


def _turns_grad_off(node: ast.expr) -> bool:
    call = node if isinstance(node, ast.Call) else None
    func = call.func if call is not None else node
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name in _GRAD_OFF:
        return True
    if name == "set_grad_enabled" and call is not None and call.args:
        mode = call.args[0]
        return isinstance(mode, ast.Constant) and mode.value is False
    return False


class _Collector:
    def __init__(self, lines: Sequence[int] | None) -> None:
        self.lines = lines
        self.writes: list[Write] = []
        self.calls: list[CallFact] = []
        self.getters: list[tuple[str, str]] = []
        self.globals_: set[str] = set()
        self.no_globals = False
        self.functions: dict[str, ast.AST] = {}
        self._memo: dict[tuple[str, str], frozenset[str]] = {}
        self._evaluation: dict[str, bool] = {}

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
    ) -> None:
        for stmt in body:
            if self.wanted(stmt):
                self.stmt(stmt, function, conditions, params)
            if isinstance(stmt, ast.If):  # `if not cfg.fp8: return`: what follows needs cfg
                if stmt.body and _leaves(stmt.body[-1]):
                    extra = condition_text(stmt.test, False, self._flags_of(function))
                    if extra:
                        conditions = (*conditions, extra)
                elif stmt.orelse and _leaves(stmt.orelse[-1]):
                    extra = condition_text(stmt.test, True, self._flags_of(function))
                    if extra:
                        conditions = (*conditions, extra)

    def stmt(
        self,
        stmt: ast.stmt,
        function: str,
        conditions: tuple[str, ...],
        params: frozenset[str],
    ) -> None:
        kind = type(stmt)
        if kind in (ast.FunctionDef, ast.AsyncFunctionDef):
            assert isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
            qual = f"{function}.{stmt.name}" if function else stmt.name
            if not function:
                self._getter(stmt)
            self.functions[qual] = stmt
            self.body(stmt.body, qual, (), _params(stmt))
            return
        if kind is ast.ClassDef:
            assert isinstance(stmt, ast.ClassDef)
            qual = f"{function}.{stmt.name}" if function else stmt.name
            self.body(stmt.body, qual, conditions, params)
            return
        if isinstance(stmt, (ast.If, ast.While)):
            self._calls(stmt.test, function)
            flags = self._flags_of(function)
            yes = condition_text(stmt.test, True, flags)
            no = condition_text(stmt.test, False, flags)
            body = (*conditions, yes) if yes else conditions
            orelse = (*conditions, no) if no else conditions
            self.body(stmt.body, function, body, params)
            self.body(stmt.orelse, function, orelse, params)
            return
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            self._calls(stmt.iter, function)
            self.body(stmt.body, function, conditions, params)
            self.body(stmt.orelse, function, conditions, params)
            return
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                self._calls(item.context_expr, function)
            self.body(stmt.body, function, conditions, params)
            return
        if kind.__name__ in ("Try", "TryStar"):
            for handler in stmt.handlers:  # type: ignore[attr-defined]
                self.body(handler.body, function, conditions, params)
            for name in ("body", "orelse", "finalbody"):
                self.body(getattr(stmt, name), function, conditions, params)
            return
        if kind.__name__ == "Match":
            for case in stmt.cases:  # type: ignore[attr-defined]
                self.body(case.body, function, conditions, params)
            return
        self._simple(stmt, function, conditions, params)

    def _lazy(self, what: str, function: str) -> frozenset[str]:
        """A function's ``global`` names or constant flags, read only when a write or a test
        asks (most functions a file's facts pass through are never asked)."""
        key = (what, function)
        found = self._memo.get(key)
        if found is None:
            node = self.functions.get(function)
            if node is None:
                found = _NONE
            elif what == "globals":
                found = frozenset(
                    n
                    for s in statements(getattr(node, "body", ()))
                    if isinstance(s, ast.Global)
                    for n in s.names
                )
            else:
                found = constant_flags(node)
            self._memo[key] = found
        return found

    def _globals(self, function: str) -> frozenset[str]:
        return _NONE if self.no_globals else self._lazy("globals", function)

    def _flags_of(self, function: str) -> Callable[[], frozenset[str]]:
        return lambda: self._lazy("flags", function)

    def _simple(
        self,
        stmt: ast.stmt,
        function: str,
        conditions: tuple[str, ...],
        params: frozenset[str],
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
                elif isinstance(node, ast.Name) and (
                    not function or node.id in self._globals(function)
                ):
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
                fact = CallFact(name, _arg_kind(sub), function, sub.lineno, sub.col_offset)  # type: ignore[arg-type]
                if self._evaluating(function):
                    fact = fact._replace(evaluation=True)
                self.calls.append(fact)

    def _evaluating(self, function: str) -> bool:
        known = self._evaluation.get(function)
        if known is None:
            node = self.functions.get(function)
            known = self._evaluation[function] = node is not None and evaluating(node)
        return known

    def _getter(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """``def get_flag(): return _FLAG`` (a module global) is a getter of ``_FLAG``."""
        returns = [s for s in statements(node.body) if isinstance(s, ast.Return)]
        if len(returns) == 1 and isinstance(returns[0].value, ast.Name):
            name = returns[0].value.id
            if name not in _params(node):
                self.getters.append((node.name, f"global:{name}"))


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


def collect(
    tree: ast.Module, lines: Sequence[int] | None = None, source: str | None = None
) -> FileFacts:
    """The facts of one module (``lines``: only statements on these lines, ascending;
    ``source``: its text, which tells that no function declares a ``global``)."""
    if lines is not None and not lines:
        return EMPTY
    collector = _Collector(lines)
    collector.no_globals = source is not None and not may_declare_global(source)
    collector.body(tree.body, "", (), frozenset())
    writes = tuple(
        w._replace(evaluation=True) if w.function and collector._evaluating(w.function) else w
        for w in collector.writes
    )
    return FileFacts(writes, tuple(collector.calls), tuple(collector.getters))


def with_path(facts: FileFacts, path: str) -> FileFacts:
    """The facts of another file of the run, each naming it."""
    return FileFacts(
        tuple(w._replace(path=path) for w in facts.writes),
        tuple(c._replace(path=path) for c in facts.calls),
        facts.getters,
    )
