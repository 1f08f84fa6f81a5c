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
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lint_rules.analysis import prefilter
from lint_rules.analysis.kinds import Kind, Tag, TEModule
from lint_rules.analysis.nodes import dotted
from lint_rules.analysis.walk import COMPREHENSIONS, Context, Walker, exclusive
from lint_rules.findings import Evidence
from lint_rules.rules import repeat_text
from lint_rules.te import FLAG, FLAG_POSITION

if TYPE_CHECKING:
    from lint_rules.analysis.checks import Rule
    from lint_rules.analysis.core import Analysis
    from lint_rules.analysis.project import Project
    from lint_rules.analysis.resolve import Resolver

_DEPTH = 4
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class StateFlag:
    """Where a wrapper class passes its own attribute to TE as the flag."""

    attr: str
    line: int
    col: int


def state_flag(
    resolver: Resolver, cls: ast.ClassDef, marks: list[int] | None = None
) -> StateFlag | None:
    """The attribute a class's methods pass to a TE module as the flag, if any: ``self.X``,
    or a local whose assignment reads ``self.X`` (``None if cond else self.X``). ``marks``:
    the lines that can hold a call passing the flag (``prefilter.interesting_lines``); a class
    with none passes no flag."""
    if marks is not None and not prefilter.spans_a_mark(marks, cls):
        return None
    memo = resolver.state_flags
    if id(cls) not in memo:
        memo[id(cls)] = _state_flag(resolver, cls)
    found = memo[id(cls)]
    assert found is None or isinstance(found, StateFlag)
    return found


def _state_flag(resolver: Resolver, cls: ast.ClassDef) -> StateFlag | None:
    symbols = resolver.symbols
    if not prefilter.class_may_pass_flag(symbols, cls):
        return None
    info = symbols.class_info(cls)
    for method in info.methods.values():
        args = method.args.posonlyargs + method.args.args
        if not args:
            continue
        self_name = args[0].arg
        locals_from_self: dict[str, str] = {}
        for node in ast.walk(method):
            if isinstance(node, ast.Assign):
                read = _self_attribute_read(node.value, self_name)
                if read is not None:
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            locals_from_self[target.id] = read
            if not isinstance(node, ast.Call):
                continue
            values = [k.value for k in node.keywords if k.arg == FLAG]
            positional = len(node.args) >= 2
            if not values and not positional:
                continue
            # Only a value read off `self` can make the class stateful: resolve no other call
            # (a positional flag is never the first argument).
            if not any(
                _reads_self(v, self_name, locals_from_self) for v in values or node.args[1:]
            ):
                continue
            callee = resolver.callee(node, symbols.scope(method, None, cls))
            if not isinstance(callee, TEModule):
                continue
            if not values:  # `super().forward(x, self.flag)`: at the class's position
                position = (
                    callee.index if callee.index is not None else FLAG_POSITION.get(callee.cls)
                )
                index = None if position is None else position + callee.shift
                if index is None or index >= len(node.args):
                    continue
                if any(isinstance(a, ast.Starred) for a in node.args[: index + 1]):
                    continue
                values = [node.args[index]]
            for value in values:
                attr = None
                if isinstance(value, ast.Attribute) and _is_name(value.value, self_name):
                    attr = value.attr
                elif isinstance(value, ast.Name):
                    attr = locals_from_self.get(value.id)
                if attr is not None:
                    return StateFlag(attr, value.lineno, value.col_offset)
    return None


def _reads_self(value: ast.expr, self_name: str, locals_from_self: dict[str, str]) -> bool:
    """``self.X``, or a local assigned from it: what ``state_flag`` takes for the state."""
    if isinstance(value, ast.Attribute):
        return _is_name(value.value, self_name)
    return isinstance(value, ast.Name) and value.id in locals_from_self


def _self_attribute_read(value: ast.expr, self_name: str) -> str | None:
    for node in ast.walk(value):
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
        self._flags: dict[int, StateFlag | None] = {}
        self._ties: dict[tuple[int, int], tuple[Evidence, ...] | None] = {}

    def flag_of(self, cls: ast.ClassDef) -> StateFlag | None:
        if id(cls) not in self._flags:
            self._flags[id(cls)] = state_flag(self.a.resolver, cls, self.a.marks)
        return self._flags[id(cls)]

    def _may_hold_a_project_wrapper(self, project: Project) -> bool:
        """Whether the file may tie a module to a stateful wrapper of another file of the run:
        it names one (or a factory, which may build one) in its text."""
        names = {
            key.rsplit(".", 1)[-1]
            for key, export in project.index.items()
            if export.stateful or export.kind == "factory"
        }
        return bool(names) and prefilter.spells_any(self.a.source, names)

    def tie(self, kind: Kind, depth: int = 0) -> tuple[Evidence, ...] | None:
        """The chain from a value to a stateful TE wrapper it is or holds, if any."""
        if depth > _DEPTH:
            return None
        if kind.tag is Tag.CONTAINER and kind.element is not None:
            return self.tie(kind.element, depth + 1)
        node = kind.node
        if not isinstance(node, ast.ClassDef):
            return None
        if kind.tag is Tag.TE_INSTANCE:
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
        if kind.tag is not Tag.LOCAL_INSTANCE:
            return None
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
            if kind.tag is Tag.UNBOUND or (
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
        for stmt in ast.walk(function):
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
