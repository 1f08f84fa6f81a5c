"""Guards and tracked values: when a flag is safe to pass to a TE module.

A value is tracked when it is ``None``, a parameter passed on unchanged, selected to ``None``
whenever a guard call is false, or a local whose every assignment is tracked; a call is guarded
when it sits in a branch that only runs when a guard call returned True.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from lint_rules.analysis.lifecycle import first_value_name
from lint_rules.analysis.symbols import (
    Branch,
    ModuleSymbols,
    Scope,
    dotted,
    is_none,
    target_names,
)
from lint_rules.analysis.walk import loop_runs_backward, loop_steps_optimizer


class Tracker:
    """Answer "is this guarded / tracked?" for one file, given the guard function names and
    the project's functions that return a tracked flag."""

    def __init__(
        self, symbols: ModuleSymbols, guards: Sequence[str], tracked: Sequence[str] = ()
    ) -> None:
        self.symbols = symbols
        self.guards = tuple(guards)
        self.tracked_functions = tuple(tracked)
        self._microbatch_loops: dict[int, bool] = {}

    def is_guard_call(self, node: ast.expr, scope: Scope | None) -> bool:
        return self.calls_one_of(node, scope, self.guards)

    def calls_one_of(self, node: ast.expr, scope: Scope | None, names: Sequence[str]) -> bool:
        """Is ``node`` a call of one of ``names`` (matched on the resolved dotted name, or
        its last part for a name without a dot)?"""
        if not names or not isinstance(node, ast.Call):
            return False
        spelled = dotted(node.func)
        if spelled is None:
            return False
        head, _, rest = spelled.partition(".")
        qual = spelled
        owner = scope.lookup(head) if scope is not None else None
        imported = (
            [b.qualname for b in owner.bindings.get(head, []) if b.how == "import"] if owner else []
        )
        alias_choices = self.symbols.alias_choices
        if imported:
            qual = imported[0] + ("." + rest if rest else "")
        elif owner is None and head in alias_choices:
            qual = alias_choices[head][0] + ("." + rest if rest else "")
        for guard in names:
            if "." in guard:
                if (
                    qual == guard
                    or spelled == guard
                    or qual.endswith("." + guard)
                    or spelled.endswith("." + guard)
                ):
                    return True
            elif qual.rsplit(".", 1)[-1] == guard:
                return True
        return False

    def implies_guard(
        self, test: ast.expr, positive: bool, scope: Scope | None, depth: int = 0
    ) -> bool:
        """Does the test having this outcome prove that a guard call returned True?"""
        if depth > 20:
            return False
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.implies_guard(test.operand, not positive, scope, depth + 1)
        if isinstance(test, ast.BoolOp):
            parts = [self.implies_guard(v, positive, scope, depth + 1) for v in test.values]
            if isinstance(test.op, ast.And):
                return any(parts) if positive else all(parts)
            return all(parts) if positive else any(parts)
        if isinstance(test, ast.NamedExpr):
            return self.implies_guard(test.value, positive, scope, depth + 1)
        if not positive:
            return False
        if self.is_guard_call(test, scope):
            return True
        if isinstance(test, ast.Name) and scope is not None:
            owner = scope.lookup(test.id)
            if owner is not None and test.id not in owner.params:
                bindings = owner.bindings.get(test.id, [])
                return bool(bindings) and all(
                    b.how == "assign" and b.value is not None and self.is_guard_call(b.value, owner)
                    for b in bindings
                )
        return False

    def branches_guarded(self, branches: Sequence[Branch], scope: Scope | None) -> bool:
        return any(self.implies_guard(test, outcome, scope) for test, outcome in branches)

    def is_tracked(
        self,
        value: ast.expr,
        scope: Scope | None,
        seen: set[str] | None = None,
        loops: Sequence[ast.AST] = (),
    ) -> bool:
        """Is this flag value safe to pass to TE (None, a parameter, guarded, re-armed by
        construction every step)? ``loops``: the loops around the call, in its function."""
        if is_none(value):
            return True
        if isinstance(value, ast.IfExp):
            body_ok = self.implies_guard(value.test, True, scope) or self.is_tracked(
                value.body, scope, seen, loops
            )
            else_ok = self.implies_guard(value.test, False, scope) or self.is_tracked(
                value.orelse, scope, seen, loops
            )
            return body_ok and else_ok
        if self.calls_one_of(value, scope, self.tracked_functions):
            return True  # the project re-arms it every step (option tracked-functions)
        if self.microbatch_index_test(value, loops):
            return True
        if isinstance(value, ast.Name) and scope is not None:
            seen = seen if seen is not None else set()
            if value.id in seen:
                return False
            owner = scope.lookup(value.id)
            if owner is None:
                return False
            bindings = owner.bindings.get(value.id, [])
            if value.id in owner.params and not bindings:
                return True
            if not bindings:  # bound only where the code never runs (``Scope.unbound``): the
                return value.id in owner.unbound  # read raises, no flag reaches TE
            seen = seen | {value.id}
            inner_loops = loops if owner is scope else ()
            for binding in bindings:
                if self.branches_guarded(binding.branches, owner):
                    continue
                if binding.how != "assign" or binding.value is None:
                    return False
                if not self.is_tracked(binding.value, owner, seen, inner_loops):
                    return False
            return True
        return False

    def microbatch_index_test(self, value: ast.expr, loops: Sequence[ast.AST]) -> bool:
        """``i == 0`` where ``i`` is the index of an enclosing loop that runs the microbatches
        of one step (its body runs backward, not the optimizer step): true on the first
        microbatch of every step, so it is tracked by construction. The index of a loop that
        also changes the weights (``walk.loop_steps_optimizer``) is true once per process (the
        resume bug): not tracked."""
        name = _first_index_name(value)
        if name is None:
            return False
        for loop in reversed(loops):
            if isinstance(loop, (ast.For, ast.AsyncFor)) and name in {
                n.id for n in target_names(loop.target)
            }:
                return self._is_microbatch_loop(loop)
        return False

    def _is_microbatch_loop(self, loop: ast.AST) -> bool:
        known = self._microbatch_loops.get(id(loop))
        if known is None:
            known = loop_runs_backward(loop) and not loop_steps_optimizer(loop)
            self._microbatch_loops[id(loop)] = known
        return known


def _first_index_name(value: ast.expr) -> str | None:
    """The ``i`` of ``i == 0``, ``0 == i``, ``i < 1``, ``i <= 0`` or ``not i`` (a plain name)."""
    node = first_value_name(value)
    return node.id if isinstance(node, ast.Name) else None
