"""TEM005 for a repeated stateful TE wrapper: the flag is not at the repeated call at all.

A *stateful TE wrapper* is a class whose method passes its own state to TE as the flag:
``super().forward(x, is_first_microbatch=self.is_first_microbatch)``, or a local computed from
that attribute (Megatron's ``TELinear``). A module that holds such wrappers (through
attributes, containers, classes of the file, and in a CLI run TE subclasses of the other files)
and is called more than once per forward (in a loop over depths that does not pick another
module each time, ``self.layers[0]`` per depth, or twice in one function) runs the wrapper's
flag ``True`` through both calls: the earlier call's gradient is written last and overwrites.
It is reported at the repeated call, with the chain from the call to the wrapper as evidence,
and has no fix there (the fix is ``None`` in the wrapper).
"""

from __future__ import annotations

import ast

from lint_rules.analysis.kinds import (
    Container,
    Kind,
    LocalInstance,
    TEInstance,
    TEModule,
    TEUnbound,
)
from lint_rules.analysis.nodes import dotted, iter_nodes
from lint_rules.analysis.walk import COMPREHENSIONS, Context, Walker, exclusive
from lint_rules.findings import Evidence
from lint_rules.rules import repeat_text
from lint_rules.slotted import Frozen

TYPE_CHECKING = False  # `typing` is not imported at run time (a run where a few files pass)

if TYPE_CHECKING:
    from lint_rules.analysis.checks import Rule
    from lint_rules.analysis.core import Analysis
    from lint_rules.analysis.project import Project
    from lint_rules.analysis.scopes import Scope
    from lint_rules.analysis.sites import FlagCall
    from lint_rules.analysis.symbols import ModuleSymbols

_DEPTH = 4
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class StateFlag(Frozen):
    """Where a wrapper class passes its own attribute to TE as the flag."""

    __slots__ = ("attr", "line", "col")
    attr: str
    line: int
    col: int

    def __init__(
        self,
        attr: str,
        line: int,
        col: int,
    ) -> None:
        self._fill(locals())


class StateFlags:
    """Where each class of the file passes its own attribute to a TE module as the flag: the
    flag-passing calls the walk hands the rules (``note``, one ``FlagCall`` each), kept by the
    method they sit in. A class's flag is the first such call (by position) of its first such
    method (in ``class_info`` order). Told from the rules' own sites, it needs no walk of its
    own, and it sees a call exactly when the rules do (the text gates included)."""

    def __init__(self) -> None:
        self._found: dict[int, list[tuple[int, int, StateFlag]]] = {}

    def note(self, site: FlagCall) -> None:
        """A call passing ``self.X`` to a TE module (or a local assigned from ``self.X``)."""
        value = site.value
        scope = site.ctx.scope
        if value is None or scope is None or not isinstance(site.callee, TEModule):
            return
        while scope[2] is None:  # a function nested in a method: the method's `self`
            outer = scope[1]
            if outer is None or outer.scope is None:
                return
            scope = outer.scope
        method = scope[0]
        if isinstance(method, ast.Lambda):
            return
        args = method.args.posonlyargs + method.args.args
        if not args:
            return
        self_name = args[0].arg
        attr = None
        if isinstance(value, ast.Attribute) and _is_name(value.value, self_name):
            attr = value.attr
        elif isinstance(value, ast.Name) and site.scope is not None:
            attr = _local_from_self(site.scope, value.id, self_name)
        if attr is not None:
            found = StateFlag(attr, value.lineno, value.col_offset)
            self._found.setdefault(id(method), []).append((value.lineno, value.col_offset, found))

    def of(self, symbols: ModuleSymbols, cls: ast.ClassDef) -> StateFlag | None:
        """The attribute ``cls``'s methods pass to a TE module as the flag, if any."""
        if not self._found:
            return None
        for method in symbols.class_info(cls).methods.values():
            found = self._found.get(id(method))
            if found:
                return min(found)[2]
        return None


def _local_from_self(scope: Scope, name: str, self_name: str) -> str | None:
    """The attribute of ``self`` that an assignment of the local ``name`` reads
    (``flag = None if cond else self.flag``), if one does."""
    holder = scope.lookup(name)
    if holder is None:
        return None
    for binding in holder.bindings.get(name, ()):
        if binding.how == "assign" and binding.value is not None:
            read = _self_attribute_read(binding.value, self_name)
            if read is not None:
                return read
    return None


def _self_attribute_read(value: ast.expr, self_name: str) -> str | None:
    for node in iter_nodes(value):
        if (
            isinstance(node, ast.Attribute)
            and _is_name(node.value, self_name)
            and node.attr != "config"
        ):
            return node.attr
    return None


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


class StatefulCheck:
    """The check over one file, once its other findings are known."""

    def __init__(self, a: Analysis, rule: Rule) -> None:
        self.a = a
        self.rule = rule
        """TEM005's rule object, which reports what this check finds."""
        self._ties: dict[tuple[int, int], tuple[Evidence, ...] | None] = {}

    def flag_of(self, cls: ast.ClassDef) -> StateFlag | None:
        return self.a.state_flags.of(self.a.symbols, cls)

    def _may_hold_a_project_wrapper(self, project: Project) -> bool:
        """Whether the file may tie a module to a stateful wrapper of another file of the run:
        it names one (or a factory, which may build one) in its text."""
        names = {
            key.rsplit(".", 1)[-1]
            for key, export in project.index.items()
            if export.stateful or export.kind == "factory"
        }
        return bool(names) and self.a.gates.spells_any(self.a.source, names)

    def tie(self, kind: Kind, depth: int = 0) -> tuple[Evidence, ...] | None:
        """The chain from a value to a stateful TE wrapper it is or holds, if any."""
        if depth > _DEPTH:
            return None
        if isinstance(kind, Container) and kind.element is not None:
            return self.tie(kind.element, depth + 1)
        if isinstance(kind, TEInstance) and kind.node is not None:
            node = kind.node
            project = self.a.project
            attr = project.stateful(node) if project is not None else ""
            if attr:
                text = f"`{node.name}` (another file of the run) passes its own `self.{attr}`"
                return (Evidence(f"{text} to TE as the flag"),)
            if getattr(node, "lineno", None) is None:
                return None  # a stand-in for a class of another file
            flag = self.flag_of(node)
            if flag is None:
                return None
            text = f"`{node.name}` passes its own `self.{flag.attr}` to TE as the flag"
            return (Evidence(text, flag.line, flag.col),)
        if not isinstance(kind, LocalInstance):
            return None
        node = kind.node
        key = (id(node), depth)
        if key in self._ties:
            return self._ties[key]
        self._ties[key] = None  # a class that holds itself stops here
        found = None
        info = self.a.symbols.class_info(node)
        for attr, values in info.attributes.items():
            held = self.a.resolver.classes.self_attribute(node, attr)  # type: ignore[union-attr]
            chain = self.tie(held, depth + 1)
            if chain is not None:
                value = values[0][0]
                step = Evidence(f"`{node.name}.{attr}` holds it", value.lineno, value.col_offset)
                found = (step, *chain)
                break
        self._ties[key] = found
        return found

    def run(self) -> None:
        a = self.a
        classes = a.symbols.all_classes()
        project = a.project
        if not any(self.flag_of(cls) for cls in classes) and not (
            project is not None and self._may_hold_a_project_wrapper(project)
        ):
            return  # no stateful wrapper in the file or in the run
        gradients = a.gradients
        reported = {(f.line, f.code) for f in a.findings}
        for cls in classes:
            if not gradients.module_class(cls):
                continue
            for method in a.symbols.class_info(cls).methods.values():
                self._method(cls, method, reported)

    def _method(
        self,
        cls: ast.ClassDef,
        method: ast.FunctionDef | ast.AsyncFunctionDef,
        reported: set[tuple[int, str]],
    ) -> None:
        args = method.args.posonlyargs + method.args.args
        if not args:
            return
        self_name = args[0].arg
        calls: list[tuple[ast.Call, Context]] = []

        def on_call(call: ast.Call, ctx: Context) -> None:
            if ctx.scope is not None and ctx.scope[0] is method and _held(call.func, self_name):
                calls.append((call, ctx))

        Walker(on_call).walk_body(method.body, Context(None, (method, None, cls), (), (), ()))
        if not calls:
            return
        keys = [dotted(_holder(call.func)) or ast.dump(call.func) for call, _ in calls]
        for index, (call, ctx) in enumerate(calls):
            if (call.lineno, "TEM005") in reported:
                continue
            repeated = self._repeated(call, ctx, keys[index], keys, calls)
            if repeated is None or self.a.gradients.silent(call, ctx):
                continue  # (a repeated call first: the gradient facts walk the whole method)
            why, where, more = repeated
            scope = self.a.scope_of(ctx)
            kind = self.a.resolver.resolve(call.func, scope)
            if isinstance(kind, TEUnbound) or (
                isinstance(call.func, ast.Attribute) and call.func.attr == "forward"
            ):
                kind = self.a.resolver.resolve(call.func.value, scope)  # type: ignore[attr-defined]
            chain = self.tie(kind)
            if chain is None:
                continue
            wrapper = chain[-1].message.split("`")[1]
            spelled = ast.unparse(call.func)
            target = f"`{spelled if len(spelled) <= 60 else spelled[:57] + '...'}`"
            text = f"`{spelled}` is called more than once per forward ({why}{more})"
            first = Evidence(text, where)
            self.rule.report(
                call.func,
                target,
                None,
                why=f"{why}; via {wrapper}",
                evidence=(first, *chain),
                verdict="repeated",
            )
            reported.add((call.lineno, "TEM005"))

    def _repeated(
        self,
        call: ast.Call,
        ctx: Context,
        key: str,
        keys: list[str],
        calls: list[tuple[ast.Call, Context]],
    ) -> tuple[str, int, str] | None:
        """Why (and where) the call runs more than once per forward: a loop that does not pick
        another module each time, or a later call of the same module (the earlier call's
        gradient is written last: it is the one reported)."""
        for loop in reversed(ctx.loops):
            bound, runs_backward = self.a.loop_facts(loop)
            if runs_backward:
                return None
            used = {n.id for n in ast.walk(call.func) if isinstance(n, ast.Name)}
            same = ""
            if used & bound:
                if not constant_index(call.func, ctx):
                    return None
                same = ", with an index that is constant when its condition holds"
            kind = (
                "comprehension"
                if isinstance(loop, COMPREHENSIONS)
                else ("while loop" if isinstance(loop, ast.While) else "for loop")
            )
            line = loop.lineno  # type: ignore[attr-defined]
            return repeat_text(kind, line), line, same
        end = (call.end_lineno, call.end_col_offset)
        for other_key, (other, other_ctx) in zip(keys, calls):
            if other is call or other_key != key or (other.lineno, other.col_offset) < end:
                continue
            if not exclusive(other_ctx.exclusive_path, ctx.exclusive_path):
                return f"also at line {other.lineno}", other.lineno, ""
        return None


def _holder(func: ast.expr) -> ast.expr:
    """``self.layers[0]`` for ``self.layers[0].forward``."""
    if isinstance(func, ast.Attribute) and func.attr == "forward":
        return func.value
    return func


def _held(func: ast.expr, self_name: str) -> bool:
    """``self.x``, ``self.x[i]``, ``self.x.forward``: a module the class holds."""
    node = _holder(func)
    while isinstance(node, ast.Subscript):
        node = node.value
    return isinstance(node, ast.Attribute) and _is_name(node.value, self_name)


def constant_index(func: ast.expr, ctx: Context) -> bool:
    """``self.layers[0 if repeated else i]`` (or through a local bound to such a choice): the
    same module on every iteration when the condition holds."""
    node = _holder(func)
    if not isinstance(node, ast.Subscript):
        return False
    index = node.slice
    if isinstance(index, ast.Name) and ctx.scope is not None:
        function = ctx.scope[0]
        for stmt in iter_nodes(function):
            if (
                isinstance(stmt, ast.Assign)
                and any(_is_name(t, index.id) for t in stmt.targets)
                and _constant_arm(stmt.value)
            ):
                return True
        return False
    return _constant_arm(index)


def _constant_arm(value: ast.expr) -> bool:
    return isinstance(value, ast.IfExp) and (
        isinstance(value.body, ast.Constant) or isinstance(value.orelse, ast.Constant)
    )
