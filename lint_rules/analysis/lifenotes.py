"""What the lifecycle's evidence says of a write, and what it reads off a class: the notes a
user reads (``describe``), and the methods a forward calls or that only return a state."""

from __future__ import annotations

import ast
from collections.abc import Sequence

from lint_rules.analysis.conditions import MODE_ATTRIBUTES
from lint_rules.analysis.facts import Write
from lint_rules.analysis.runfacts import last_name as _last
from lint_rules.analysis.steps import runs_as_forward
from lint_rules.findings import Evidence


def is_mode(value: ast.expr) -> bool:
    """``self.training`` or ``not self.training``."""
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
        value = value.operand
    return isinstance(value, ast.Attribute) and value.attr in MODE_ATTRIBUTES


def unknown_note(write: Write) -> Evidence:
    target = write.target.split(":", 1)[1]
    spelled = write.key.split(":", 1)[1]
    where = f"`{write.function}`" if write.function else "module level"
    return Evidence(
        f"`{target}.{spelled}` is set in {where} on an object not known to be this one "
        "(unknown): not counted as its re-arm",
        write.line,
        write.col,
        write.path,
    )


def first_of_each(writes: Sequence[Write]) -> list[Write]:
    """One set-up write and one clear, the first of each, for the evidence."""
    chosen: list[Write] = []
    seen: set[str] = set()
    for write in writes:
        kind = (
            "init" if (not write.function or _last(write.function) == "__init__") else write.value
        )
        if kind in ("init", "false") and kind not in seen:
            seen.add(kind)
            chosen.append(write)
    return chosen


def describe(write: Write, condition: str = "") -> Evidence:
    spelled = write.key.split(":", 1)[1]
    where = f"`{write.function}`" if write.function else "module level"
    if not write.function or _last(write.function) == "__init__":
        text = f"`{spelled}` set to {value_text(write.value)} in {where}"
    elif write.value == "false":
        text = f"`{spelled}` cleared to False in {where}"
    else:
        text = f"re-armed ({value_text(write.value)}) by {where}"
        if condition:
            text += f" only if `{condition}`"
    return Evidence(text, write.line, write.col, write.path)


def value_text(value: str) -> str:
    return {
        "true": "True",
        "false": "False",
        "none": "None",
        "zero": "0",
        "const": "a constant",
        "copy": "a copy",
        "derived": "a computed value",
    }.get(value, f"its argument `{value[6:]}`" if value.startswith("param:") else value)


def returned_state(cls: ast.ClassDef | None, name: str) -> ast.Attribute | None:
    """``self.<attr>`` when the method ``name`` of ``cls`` only returns it."""
    for method in getattr(cls, "body", ()):
        if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and method.name == name:
            args = method.args.args
            body = [
                s
                for s in method.body
                if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
            ]
            if (
                args
                and len(body) == 1
                and isinstance(body[0], ast.Return)
                and isinstance(body[0].value, ast.Attribute)
                and isinstance(body[0].value.value, ast.Name)
                and body[0].value.value.id == args[0].arg
            ):
                return body[0].value
    return None


def called_by_forward(cls: ast.ClassDef, name: str) -> bool:
    """Whether a method of ``cls`` that runs as the forward calls ``self.<name>(...)``,
    directly or through other methods of the class."""
    methods = {
        m.name: m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    todo = [m for n, m in methods.items() if runs_as_forward(n)]
    seen: set[str] = set()
    while todo:
        method = todo.pop()
        if method.name in seen:
            continue
        seen.add(method.name)
        for node in ast.walk(method):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "self"
            ):
                called = node.func.attr
                if called == name:
                    return True
                if called in methods:
                    todo.append(methods[called])
    return False
