"""A function's scope (``analysis/scopes.py``) binds only what can run, and owns every name that
Python makes local when it compiles the function.

Reachability comes from ``blocks`` (``tests/test_blocks.py``): a binding after
``return``/``raise``/``continue``/``break`` in its block, or after an ``if`` both of whose arms
leave, gives no value; one after ``if test: return`` sits in the branch where ``test`` is false.
A name assigned only where nothing runs is still local (``Scope.unbound``): reading it raises
UnboundLocalError, it is never the enclosing function's or the module's. The catalogue cases:
``fixtures/catalogue/tem001_dead_bindings.py``, ``tem001_dead_binding_scope.py``,
``tem001_forwarder_dead_reassignment.py``, ``tem003_dead_key_store.py``,
``guard_shadowed_dead_local.py``.
"""

from __future__ import annotations

import ast
import symtable
import textwrap

import pytest

from lint_rules.analysis.scopes import Scope, ScopeCollector, compile_time_names


def _functions(code: str) -> dict[str, ast.FunctionDef]:
    tree = ast.parse(textwrap.dedent(code))
    return {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}


def _scope(function: ast.FunctionDef, parent: Scope | None = None) -> Scope:
    scope = Scope(function, parent, None)
    ScopeCollector(scope).collect(function)
    return scope


def _values(scope: Scope, name: str) -> list[str]:
    return [ast.unparse(b.value) if b.value else b.how for b in scope.bindings.get(name, [])]


LEAVING = """
def after_return(flag):
    x = 1
    return x
    x = 2
    y = 3

def after_raise():
    x = 1
    if x:
        raise ValueError
        x = 2
    return x

def after_continue(items):
    for x in items:
        y = 1
        continue
        y = 2

def after_break(items):
    while items:
        y = 1
        break
        y = 2
    else:
        y = 3

def after_leaving_if(ok):
    x = 1
    if ok:
        return x
    elif x:
        raise ValueError
    else:
        return None
    x = 2

def in_try(ok):
    try:
        x = 1
        raise ValueError
        x = 2
    except ValueError:
        x = 3
        return x
        x = 4
    finally:
        x = 5
        return x
        x = 6
"""


@pytest.mark.parametrize(
    ("function", "name", "values"),
    [
        ("after_return", "x", ["1"]),
        ("after_raise", "x", ["1"]),
        ("after_continue", "y", ["1"]),
        ("after_break", "y", ["1", "3"]),  # the loop's `else` is a block of its own
        ("in_try", "x", ["1", "3", "5"]),
    ],
)
def test_a_binding_after_a_statement_that_leaves_its_block_binds_nothing(
    function: str, name: str, values: list[str]
) -> None:
    assert _values(_scope(_functions(LEAVING)[function]), name) == values


def test_a_binding_after_an_if_whose_arms_all_leave_binds_nothing() -> None:
    # (an elif chain leaves only when its own last arm does: `blocks.after_if`)
    scope = _scope(_functions(LEAVING)["after_leaving_if"])
    assert _values(scope, "x") == ["1", "2"]
    code = LEAVING.replace("    elif x:\n        raise ValueError\n", "")
    assert _values(_scope(_functions(code)["after_leaving_if"]), "x") == ["1"]


def test_a_name_bound_only_where_nothing_runs_stays_local_without_a_value() -> None:
    scope = _scope(_functions(LEAVING)["after_return"])
    assert "y" not in scope.bindings
    assert scope.unbound == frozenset({"y"})  # `x` has a binding that runs
    assert scope.lookup("y") is scope  # not the module's `y`: a read raises UnboundLocalError


def test_a_parameter_reassigned_only_where_nothing_runs_keeps_the_callers_value() -> None:
    code = """
    def forward(self, x, flag):
        return self.fc(x, is_first_microbatch=flag)
        flag = None
    """
    scope = _scope(_functions(code)["forward"])
    assert "flag" in scope.params and "flag" not in scope.bindings
    assert scope.unbound == frozenset()  # a parameter is bound by the call


def test_an_enclosing_functions_dead_binding_is_still_its_own() -> None:
    code = """
    def outer():
        def inner():
            return fc
        return inner
        fc = None
    """
    functions = _functions(code)
    outer = _scope(functions["outer"])
    inner = _scope(functions["inner"], outer)
    assert inner.lookup("fc") is outer  # a free variable of `outer`, never bound: NameError


def test_global_and_nonlocal_declarations_hold_anywhere_in_the_function() -> None:
    code = """
    def declared_live():
        global first
        return first
        first = False

    def declared_dead(x):
        return x
        global first
        first = False

    def outer():
        count = 0
        def inner():
            return count
            nonlocal count
            count = 1
        return inner
    """
    functions = _functions(code)
    for name in ("declared_live", "declared_dead"):
        scope = _scope(functions[name])
        assert scope.unbound == frozenset() and scope.lookup("first") is None, name
    outer = _scope(functions["outer"])
    inner = _scope(functions["inner"], outer)
    assert inner.lookup("count") is outer


def test_a_binding_after_an_early_exit_sits_in_the_other_branch() -> None:
    code = """
    def forward(self, x):
        flag = None
        for _ in range(1):
            if not is_first_microbatch_tracked(self.config):
                break
            flag = self.first
        kwargs = {}
        if self.training:
            pass
        else:
            return x
        kwargs["is_first_microbatch"] = flag
        return self.fc(x, **kwargs)
    """
    function = _functions(code)["forward"]
    scope = _scope(function)
    early = function.body[1].body[0]  # type: ignore[attr-defined]
    none, first = scope.bindings["flag"]
    assert none.branches == () and first.branches == ((early.test, False),)
    ((_, _, branches),) = scope.key_stores["kwargs"]
    assert branches == ((function.body[3].test, True),)  # type: ignore[attr-defined]


COMPILED = """
def every_kind(a, *rest, **kw):
    x = 1
    y: int
    z: int = 2
    w += 1
    del v
    for i, (j, *k) in a:
        with open(i) as (f, g):
            pass
    import os.path, numpy as np
    from m import (p, q as r)
    def inner(d=(s := 1)): pass
    class C: pass
    try:
        pass
    except E as err:
        pass
    match a:
        case [1, *others] if (t := 2):
            pass
        case {"k": _, **mapped}:
            pass
        case Point(x=px) as point:
            pass
    squares = [u * u for u in a if (kept := u)]
    pairs = {m2: n2 for m2, n2 in a}
    lam = lambda lam_arg: (lam_inner := lam_arg)
    global declared_g
    if a:
        return
        late = 1
"""


def test_compile_time_names_are_the_names_python_makes_local() -> None:
    """Checked against the compiler's own symbol table (``symtable``)."""
    table = symtable.symtable(COMPILED, "<case>", "exec").get_children()[0]
    assert isinstance(table, symtable.Function)
    expected = {
        s.get_name()
        for s in table.get_symbols()
        if s.is_local() and not s.is_parameter() and not s.is_global()
    }
    declared = {s.get_name() for s in table.get_symbols() if s.is_declared_global()}
    function = ast.parse(COMPILED).body[0]
    assert isinstance(function, ast.FunctionDef)
    assert compile_time_names(function.body) == (expected, declared)
    assert {"s", "kept", "t", "mapped", "point", "late"} <= expected  # (the case is complete)
