"""What the analysis of one file does not do again or for nothing: a function whose text
spells no ``yield`` is not walked to tell that it is no generator (with the gates off it is),
and a file without findings has its text split into lines by nobody."""

from __future__ import annotations

import pytest

from lint_rules.analysis import analyze_source, reported
from lint_rules.analysis import resolve as resolve_module
from lint_rules.analysis.prefilter import OFF, ON, Gates

FACTORY = """import transformer_engine.pytorch as te


def make(n):
    layer = te.Linear(n, n)
    return layer


class M:
    def __init__(self):
        self.fc = make(4)
        self.flag = True

    def forward(self, x):
        out = self.fc(x, is_first_microbatch=self.flag)
        self.flag = False
        return out
"""


def _walked(monkeypatch: pytest.MonkeyPatch, text: str, gates: Gates) -> list[str]:
    """The functions ``Resolver.returns`` walks for a ``yield``."""
    walked: list[str] = []
    real = resolve_module.iter_nodes

    def counted(root):  # type: ignore[no-untyped-def]
        walked.append(getattr(root, "name", ""))
        return real(root)

    monkeypatch.setattr(resolve_module, "iter_nodes", counted)
    findings = analyze_source(text, gates=gates)
    assert [f.code for f in findings] == ["TEM001"]  # the factory's product is resolved
    return walked


def test_a_factory_that_spells_no_yield_is_not_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _walked(monkeypatch, FACTORY, ON) == []
    assert _walked(monkeypatch, FACTORY, OFF) == ["make"]


def test_a_factory_that_spells_yield_is_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    text = FACTORY.replace("    return layer\n", "    return layer  # no yield here\n")
    assert _walked(monkeypatch, text, ON) == ["make"]


def test_a_decorator_that_yields_is_in_the_function(monkeypatch: pytest.MonkeyPatch) -> None:
    # (`ast.walk` of a function visits its decorators: their lines are its lines)
    text = FACTORY.replace("def make(n):", "@(lambda f: (yield f))\ndef make(n):")
    walked: list[str] = []
    real = resolve_module.iter_nodes

    def counted(root):  # type: ignore[no-untyped-def]
        walked.append(getattr(root, "name", ""))
        return real(root)

    monkeypatch.setattr(resolve_module, "iter_nodes", counted)
    analyze_source(text, gates=ON)
    assert walked == ["make"]


def test_a_file_without_findings_is_not_split(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(text: str) -> list[str]:
        raise AssertionError("split")

    monkeypatch.setattr(reported, "split_lines", refused)
    assert reported.reported_findings("a.py", "x = 1\n" * 1000, []) == ()
    findings = analyze_source(FACTORY)
    with pytest.raises(AssertionError, match="split"):
        reported.reported_findings("a.py", FACTORY, findings)
