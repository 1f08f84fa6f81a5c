"""What the command leaves alone because it cannot matter: files it never parses, modules it
never imports. Behaviour only (which files are analysed, which modules load); the time these
save is measured in benchmarks/."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import lint_rules.analysis
from lint_rules.cli import command

ROOT = Path(__file__).resolve().parent.parent
REEXPORT = ROOT / "fixtures" / "imports" / "reexport"


@pytest.fixture
def analysed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The first line of every text the run analyses (in this process: ``--jobs 1``)."""
    seen: list[str] = []
    real = lint_rules.analysis.analyze_source

    def spy(text: str, *args: object, **kwargs: object) -> object:
        seen.append(text.splitlines()[0] if text else "")
        return real(text, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(lint_rules.analysis, "analyze_source", spy)
    return seen


def _check(capsys: pytest.CaptureFixture[str], path: Path) -> set[tuple[str, int, str]]:
    command.main(["check", "--isolated", "--no-cache", "--jobs", "1", "--format", "json", str(path)])
    rows = json.loads(capsys.readouterr().out or "[]")
    return {(Path(r["path"]).name, r["line"], r["code"]) for r in rows}


def test_no_init_is_parsed_when_no_file_can_have_a_finding(
    tmp_path: Path, analysed: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from .layers import Block\n")
    (tmp_path / "pkg" / "layers.py").write_text("class Block:\n    pass\n")
    assert _check(capsys, tmp_path) == set()
    assert analysed == []


def test_only_the_init_that_an_import_goes_through_is_parsed(
    tmp_path: Path, analysed: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(REEXPORT, tree)
    (tree / "unrelated").mkdir()
    (tree / "unrelated" / "__init__.py").write_text("from .mod import thing  # unrelated\n")
    (tree / "unrelated" / "mod.py").write_text("thing = 1\n")
    found = _check(capsys, tree)
    assert found == {("model.py", 5, "TEM002"), ("model.py", 6, "TEM001")}
    assert "from .layers import MyLinear, make_fc" in analysed  # pkg/__init__.py: re-exports
    assert not any("unrelated" in line for line in analysed)
