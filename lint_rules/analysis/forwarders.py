"""Callers of forwarding functions: a flag handed to a helper that passes it on to TE.

A function (or method) whose parameter reaches a TE module's ``is_first_microbatch``
unchanged, directly or through other such functions, is a *forwarder*: the forwarding site is
not a bug (its callers decide), so each call of the forwarder in the file is judged instead
(by the rule of the way it passes the argument, ``checks``),
as if its argument were passed to TE there. A stale argument is reported at that call, with the
chain as evidence (``self._run(x, self.is_first_microbatch)`` where ``_run`` passes its
``flag`` to ``self.fc``).

A module-level forwarder is exported to the other files of a run (``project``), whose calls of
it are judged the same way. Only calls the walk hands over (they pass the flag, a splat, or two
positional arguments) are seen.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping

from lint_rules.analysis.exports import Export
from lint_rules.analysis.nodes import dotted
from lint_rules.analysis.walk import MODULE_CONTEXT, Walker
from lint_rules.findings import Evidence
from lint_rules.slotted import NamedTuple

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where a few files pass)

if TYPE_CHECKING:
    from lint_rules.analysis.core import Analysis
    from lint_rules.analysis.scopes import Scope
    from lint_rules.analysis.walk import Context


class Forwarder(NamedTuple):
    """``name`` passes its parameter ``param`` (position ``position`` after ``self``) to TE."""

    name: str
    method: bool
    param: str
    position: int | None
    target: str
    """Where it goes, as messages name a callee (``TE Linear `self.fc```)."""
    line: int
    origin: str = ""
    """The module of another file of the run it is imported from ("": this file)."""


def parameter_index(function: ast.AST, name: str, method: bool) -> int | None:
    args = getattr(function, "args", None)
    if args is None:
        return None
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    if method and positional:
        positional = positional[1:]
    return positional.index(name) if name in positional else None


class Forwarded(NamedTuple):
    """A call of a forwarder, with the argument it passes on to TE: the rules judge it
    (``checks``) as if the argument were passed to TE there."""

    call: ast.Call
    ctx: Context
    scope: Scope | None
    value: ast.expr
    keyword: ast.keyword | None
    target: str
    chain: Evidence
    """The first step of the evidence: where the forwarder passes it on."""


class Forwarders:
    """The file's forwarders and the calls that may call one, judged once the walk is done."""

    def __init__(self) -> None:
        self.found: dict[tuple[str, bool], Forwarder] = {}
        self.calls: list[tuple[ast.Call, Context]] = []

    def note(self, value: ast.expr | None, scope: Scope | None, target: str, line: int) -> None:
        """A TE call (or a forwarder's call) passing ``value``: a parameter of its function
        makes that function a forwarder."""
        if not isinstance(value, ast.Name) or scope is None or scope.node is None:
            return
        if scope.lookup(value.id) is not scope or value.id not in scope.params:
            return
        if scope.bindings.get(value.id):
            return  # reassigned before the call: not passed on unchanged
        function = scope.node
        name = getattr(function, "name", None)
        if not name:
            return
        method = scope.self_name is not None
        key = (name, method)
        if key not in self.found:
            index = parameter_index(function, value.id, method)
            self.found[key] = Forwarder(name, method, value.id, index, target, line)

    def finish(self, a: Analysis, judge: Callable[[Forwarded], None]) -> None:
        """Hand each call of a forwarder to ``judge`` (to a fixed point: a caller that passes
        its own parameter on is a forwarder too). The calls are found by a walk of the lines that
        spell a forwarder's name (every line with the gates off)."""
        done: set[int] = set()
        walked: set[str] = set()
        self._imported(a)
        while True:
            names = {name for name, _ in self.found} - walked
            if not names:
                return
            walked |= names
            self.calls = []
            marks = _lines_naming(a, names)
            if marks is None or marks:
                Walker(self._collect, marks).walk_body(a.tree.body, MODULE_CONTEXT)
            for call, ctx in self.calls:
                if id(call) in done:
                    continue
                forwarder = self._forwarder(call)
                if forwarder is None:
                    continue
                value, keyword = _argument(call, forwarder)
                if value is None:
                    continue
                done.add(id(call))
                judge(self._judge(a, call, ctx, forwarder, value, keyword))

    def _imported(self, a: Analysis) -> None:
        """The forwarders of other files of the run this file imports by name."""
        project = a.project
        if project is None or not project.index:
            return
        for name, choices in a.symbols.alias_choices.items():
            if len(choices) != 1 or (name, False) in self.found:
                continue
            export = project.forwarder(choices[0])
            if export is not None:
                origin = choices[0].rpartition(".")[0]
                forwarder = Forwarder(name, False, export.param, export.index, export.label, 0)
                self.found[(name, False)] = forwarder._replace(origin=origin)

    def exports(self, functions: Mapping[str, ast.AST]) -> dict[str, Export]:
        """The module-level forwarders of this file (``functions``: its module-level
        functions), as the run's index holds them."""
        return {
            name: Export("forwarder", f.target, "", f.position, False, None, param=f.param)
            for (name, method), f in self.found.items()
            if not method and not f.origin and functions.get(name) is not None
        }

    def _collect(self, call: ast.Call, ctx: Context) -> None:
        if self._forwarder(call) is not None:
            self.calls.append((call, ctx))

    def _forwarder(self, call: ast.Call) -> Forwarder | None:
        func = call.func
        if isinstance(func, ast.Name):
            return self.found.get((func.id, False))
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in ("self", "cls")
        ):
            return self.found.get((func.attr, True))
        return None

    def _judge(
        self,
        a: Analysis,
        call: ast.Call,
        ctx: Context,
        forwarder: Forwarder,
        value: ast.expr,
        keyword: ast.keyword | None,
    ) -> Forwarded:
        scope = a.scope_of(ctx)
        spelled = dotted(call.func) or forwarder.name
        target = f"`{spelled}`, which passes it to {forwarder.target}"
        self.note(value, scope, target, forwarder.line)  # a forwarder of a forwarder
        where = f" (of `{forwarder.origin}`)" if forwarder.origin else ""
        chain = Evidence(
            f"`{forwarder.name}`{where} passes its `{forwarder.param}` to {forwarder.target}",
            forwarder.line,
        )
        return Forwarded(call, ctx, scope, value, keyword, target, chain)


def _lines_naming(a: Analysis, names: set[str]) -> list[int] | None:
    """The lines that spell one of ``names`` (ascending); None: walk every line."""
    if a.source is None or not a.source.isascii():
        return None
    return a.gates.lines_naming(a.lines, names, a.source)


def _argument(call: ast.Call, forwarder: Forwarder) -> tuple[ast.expr | None, ast.keyword | None]:
    for keyword in call.keywords:
        if keyword.arg == forwarder.param:
            return keyword.value, keyword
    index = forwarder.position
    if index is not None and len(call.args) > index:
        if any(isinstance(arg, ast.Starred) for arg in call.args[: index + 1]):
            return None, None
        return call.args[index], None
    return None, None
