"""Edits for a finding, built only when a face asks for them (flake8 never applies a fix).

Every builder gets the resolved callee (``resolve.Callee``) of the call it fixes, so that the
fix's applicability can depend on whether the callee is a resolved TE module.
"""

from __future__ import annotations

import ast

from lint_rules.analysis.resolve import Callee
from lint_rules.analysis.symbols import ModuleSymbols, Scope
from lint_rules.findings import Edit, Fix, Position, split_lines
from lint_rules.settings import Settings
from lint_rules.te import FLAG

_WRAP_IN_PARENS = (ast.Lambda, ast.IfExp, ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Starred)


def _start(node: ast.AST) -> Position:
    return (node.lineno, node.col_offset)  # type: ignore[attr-defined]


def _end(node: ast.AST) -> Position:
    return (node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]


class NoFixes:
    """What the rules use when no face asked for fixes: every fix is None, nothing is built."""

    def value_fix(self, *args: object, **kwargs: object) -> Fix | None:
        return None

    def positional_fix(self, *args: object, **kwargs: object) -> Fix | None:
        return None

    def none_fix(self, *args: object, **kwargs: object) -> Fix | None:
        return None


class FixBuilder:
    """Build the edits that make a flag ``None`` (or guarded) in one file."""

    def __init__(self, symbols: ModuleSymbols, settings: Settings, source: str | None) -> None:
        self.symbols = symbols
        self.settings = settings
        self.source = source
        self.source_lines: list[str] | None = None

    def value_fix(
        self,
        value: ast.expr,
        scope: Scope | None,
        repeated: str | None,
        callee: Callee,
        span: tuple[Position, Position] | None = None,
        prefix: str = "",
    ) -> Fix | None:
        """Rewrite ``value`` (or ``span``, its parenthesised extent) to None or guarded.

        ``prefix`` turns a positional argument into the keyword form.
        """
        if isinstance(value, ast.NamedExpr):
            return None  # `(f := x)`: any rewrite would change what `f` is bound to
        start, end = span or (_start(value), _end(value))
        if repeated or self.settings.fix_strategy == "none":
            return Fix((Edit(start, end, f"{prefix}None"),))
        guard = self._guard_expression(scope)
        if isinstance(guard, str):
            return Fix(
                (Edit(start, end, f"{prefix}None"),),
                note=f"guard strategy fell back to None: {guard}",
            )
        call, import_name = guard
        wrap = span is None and isinstance(value, _WRAP_IN_PARENS)
        opening, closing = ("((", ")") if wrap else ("(", "")
        return Fix(
            (
                Edit(start, start, f"{prefix}{opening}"),
                Edit(end, end, f"{closing} if {call} else None)"),
            ),
            guard_import=import_name,
        )

    def positional_fix(
        self, call: ast.Call, index: int, scope: Scope | None, repeated: str | None, callee: Callee
    ) -> Fix | None:
        """Keyword form where no positional argument follows, else the value in place."""
        arg = call.args[index]
        if index + 1 < len(call.args):
            return self.value_fix(arg, scope, repeated, callee)
        span = self._paren_span(arg)
        if span == "unsure":  # parentheses across lines: the value in place is always valid
            return self.value_fix(arg, scope, repeated, callee)
        return self.value_fix(arg, scope, repeated, callee, span, f"{FLAG}=")  # type: ignore[arg-type]

    def none_fix(self, value: ast.expr, callee: Callee) -> Fix | None:
        return self.value_fix(value, None, "shared", callee)

    def _paren_span(self, node: ast.expr) -> tuple[Position, Position] | str | None:
        """The extent of ``node`` with its own parentheses (``f(x, (a == b))``), if any.

        ``ast`` ranges exclude such parentheses, so a keyword inserted at the node's start would
        land inside them. Only parentheses on the node's own lines are seen; without the source
        there are none. "unsure" when they may span lines.
        """
        if self.source is None:
            return None
        if self.source_lines is None:
            self.source_lines = split_lines(self.source)
        head = self.source_lines[node.lineno - 1].encode("utf-8")
        tail = self.source_lines[node.end_lineno - 1].encode("utf-8")  # type: ignore[operator]
        start, depth = node.col_offset, 0
        outer_start = start
        while start > 0 and head[start - 1 : start] in (b" ", b"\t", b"("):
            start -= 1
            if head[start : start + 1] == b"(":
                depth += 1
                outer_start = start
        if start == 0:
            return "unsure"  # the value opens its line: a "(" may stand on the line above
        if depth == 0:
            return None
        end, closed = node.end_col_offset or 0, 0
        while closed < depth and end < len(tail) and tail[end : end + 1] in (b" ", b"\t", b")"):
            if tail[end : end + 1] == b")":
                closed += 1
            end += 1
        if closed != depth:
            return "unsure"
        return (node.lineno, outer_start), (node.end_lineno or node.lineno, end)

    def _config_root(self) -> str:
        return self.settings.guard_config.split(".", 1)[0].split("(", 1)[0].strip()

    def _guard_expression(self, scope: Scope | None) -> tuple[str, str | None] | str:
        """The guard call and the import it needs, or why the guard cannot be used here."""
        root = self._config_root()
        if (
            root
            and (scope is None or scope.lookup(root) is None)
            and root not in self.symbols.alias_choices
        ):
            return f"`{root}` is not in scope"
        dotted_name = self.settings.guard_import
        name = dotted_name.rsplit(".", 1)[-1]
        owner = scope.lookup(name) if scope is not None else None
        if owner is not None and not any(
            b.how == "import" and b.qualname == dotted_name for b in owner.bindings.get(name, [])
        ):
            return f"a local `{name}` would shadow the guard"
        needs_import: str | None = dotted_name if "." in dotted_name else None
        if name in self.symbols.alias_choices or name in self.symbols.functions:
            needs_import = None
        return f"{name}({self.settings.guard_config})", needs_import
