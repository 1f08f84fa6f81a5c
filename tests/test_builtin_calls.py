"""A call of a builtin's name (``isinstance(x, cls)``, ``getattr(obj, name)``) is never a TE
module where no statement of the file binds that name: with the gates on it is not resolved
(its function's scope is not read for it); a file that binds the name resolves it as before."""

from __future__ import annotations

import pytest

from lint_rules.analysis import analyze_source
from lint_rules.analysis.prefilter import OFF, ON, Gates, never_bound
from lint_rules.analysis.resolve import Resolver

TE_FILE = """import transformer_engine.pytorch as te


class M:
    def __init__(self):
        self.fc = te.Linear(4, 4)

    def forward(self, x):
        if isinstance(x, tuple):
            x = getattr(x, "data", x)
        return x
"""


@pytest.mark.parametrize(
    "text",
    [
        "isinstance(a, b)\nx = isinstance(c, d)\n",
        "isinstance(a, b)  # isinstance(\n",
        "y = obj.isinstance(a, b)\n",
        "@isinstance(a)\ndef f(): pass\n",
    ],
)
def test_a_name_spelled_only_as_a_call_is_never_bound(text: str) -> None:
    assert never_bound(text, "isinstance")


@pytest.mark.parametrize(
    "text",
    [
        "isinstance = f\nisinstance(a, b)\n",
        "from m import isinstance\nisinstance(a, b)\n",
        "import m as isinstance\n",
        "def f(isinstance):\n    return isinstance(a, b)\n",
        "def f(isinstance=None):\n    return isinstance(a, b)\n",
        "def isinstance(a, b):\n    pass\n",
        "async  def  isinstance(a, b):\n    pass\n",
        "class isinstance(object):\n    pass\n",
        "def \\\n  isinstance(a, b):\n    pass\n",
        "for isinstance in xs:\n    isinstance(a, b)\n",
        "with f() as isinstance:\n    pass\n",
        "global isinstance\n",
        "(isinstance := f)\n",
        "lambda isinstance: isinstance(a, b)\n",
        "isinstance (a, b)\n",  # not told here: resolved
        "ｉsinstance = f\nisinstance(a, b)\n",  # NFKC: the same name
    ],
)
def test_a_name_spelled_otherwise_may_be_bound(text: str) -> None:
    assert not never_bound(text, "isinstance")


def test_the_gates_off_never_say_a_name_is_unbound() -> None:
    assert ON.never_bound("isinstance(a, b)\n", "isinstance")
    assert not OFF.never_bound("isinstance(a, b)\n", "isinstance")


def _resolved_callees(monkeypatch: pytest.MonkeyPatch, text: str, gates: Gates) -> list[str]:
    called: list[str] = []
    callee = Resolver.callee

    def counted(self: Resolver, call, scope):  # type: ignore[no-untyped-def]
        called.append(getattr(call.func, "id", "") or getattr(call.func, "attr", ""))
        return callee(self, call, scope)

    monkeypatch.setattr(Resolver, "callee", counted)
    analyze_source(text, gates=gates)
    return called


def test_a_builtin_call_is_not_resolved(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "isinstance" not in _resolved_callees(monkeypatch, TE_FILE, ON)
    assert "getattr" not in _resolved_callees(monkeypatch, TE_FILE, ON)
    assert "isinstance" in _resolved_callees(monkeypatch, TE_FILE, OFF)


def test_a_builtin_name_bound_to_a_te_module_is_resolved() -> None:
    # `zip` holds the TE module here: `zip(x, True)` passes the flag positionally (TEM002).
    text = TE_FILE.replace(
        "        return x\n", "        zip = self.fc\n        return zip(x, True)\n"
    )
    for gates in (ON, OFF):
        assert [(f.code, f.line) for f in analyze_source(text, gates=gates)] == [("TEM002", 12)]


def test_a_star_import_may_bind_a_builtin_name() -> None:
    from lint_rules.analysis.symbols import ModuleSymbols
    import ast

    text = "from m import *\nisinstance(a, b)\n"
    assert not ModuleSymbols(ast.parse(text), text, (), ON).never_bound("isinstance")
    text = "import m\nisinstance(a, b)\n"
    assert ModuleSymbols(ast.parse(text), text, (), ON).never_bound("isinstance")
