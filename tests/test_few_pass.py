"""A cold run where a few files pass the prefilter (NeMo: ten of nine hundred): the analysis
runs, but on records of its own (``slotted``), so neither ``dataclasses`` (with ``inspect``)
nor ``typing`` is imported, and ``class X(NamedTuple)`` is made without ``typing``."""

from __future__ import annotations

import pickle
import typing
from pathlib import Path

import pytest
from helpers import modules_after

from lint_rules.findings import Edit, Evidence, Finding, Fix
from lint_rules.slotted import FrozenRecordError, NamedTuple, replace

BLOCK = """import transformer_engine.pytorch as te


class Block:
    def __init__(self):
        self.fc = te.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)
"""


def test_a_cold_run_that_analyses_imports_neither_dataclasses_nor_typing(tmp_path: Path) -> None:
    """A package where one file passes (it imports TE and names a class that takes the flag)
    and has nothing to report, checked cold in a fresh interpreter: the analysis ran, and none
    of ``dataclasses``, ``inspect`` or ``typing`` is among the modules imported."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "block.py").write_text(BLOCK)
    (package / "other.py").write_text("import torch\n")
    out, status, modules = modules_after(
        tmp_path, "check", "--isolated", "--no-cache", "-j1", "--output-format", "json", "pkg"
    )
    assert (out, status) == ("[]\n", 0)  # no finding, no error
    assert {"lint_rules.analysis.core", "lint_rules.analysis.lifecycle", "ast"} <= modules
    assert not {"dataclasses", "inspect", "typing"} & modules


class _Ours(NamedTuple):
    """A docstring."""

    name: str
    line: int
    col: int = 0
    tags: tuple[str, ...] = ()

    def where(self) -> str:
        return f"{self.name}:{self.line}"


class _Theirs(typing.NamedTuple):
    """A docstring."""

    name: str
    line: int
    col: int = 0
    tags: tuple[str, ...] = ()

    def where(self) -> str:
        return f"{self.name}:{self.line}"


def test_the_named_tuple_is_typings() -> None:
    ours, theirs = _Ours("a", 3, tags=("x",)), _Theirs("a", 3, tags=("x",))
    assert ours == theirs == ("a", 3, 0, ("x",))
    assert hash(ours) == hash(theirs)
    assert _Ours._fields == _Theirs._fields
    assert _Ours._field_defaults == _Theirs._field_defaults
    assert _Ours.__doc__ == _Theirs.__doc__ == "A docstring."
    assert _Ours.__name__ == "_Ours" and _Ours.__module__ == __name__
    assert ours.where() == theirs.where() == "a:3"
    assert repr(ours) == repr(theirs).replace("_Theirs", "_Ours")
    assert ours._replace(col=2) == theirs._replace(col=2)
    assert pickle.loads(pickle.dumps(ours)) == ours
    with pytest.raises(TypeError):
        _Ours("a")  # type: ignore[call-arg]


def test_a_finding_keeps_what_the_dataclass_gave_it() -> None:
    """``==`` and the hash over where and what (not the fix, verdict or evidence), frozen,
    ``replace`` through ``__init__``, pickled across a pool."""
    fix = Fix((Edit((1, 0), (1, 4), "None"),), applicability="unsafe")
    finding = Finding("TEM001", "m", 1, 0, 1, 4, fix, "stale", (Evidence("e", 1),))
    bare = Finding("TEM001", "m", 1, 0, 1, 4)
    assert finding == bare and hash(finding) == hash(bare)
    assert finding != replace(bare, line=2)
    assert replace(finding, fix=None).fix is None and replace(finding, fix=None).verdict == "stale"
    assert pickle.loads(pickle.dumps(finding)).fix == fix
    assert Fix((Edit((1, 0), (1, 4), "None"),)) != fix  # the applicability is compared
    with pytest.raises(FrozenRecordError):
        finding.line = 3  # type: ignore[misc]
    assert repr(Evidence("e")) == "Evidence(message='e', line=0, col=0, path=None)"
