"""The walk never reaches, through a symlink, a file it would skip by that file's own path
(reproducers of a reliability review, each kept as a test)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from lint_rules.cli import main

MODULE = (
    "import transformer_engine.pytorch as te\n\n\nclass B:\n    def __init__(self):\n"
    "        self.fc = te.Linear(4, 4)\n        self.flag = True\n\n    def forward(self, x):\n"
    "        return self.fc(x, is_first_microbatch=self.flag)\n"
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for folder in (".venv/lib", "third_party", "gen", "src"):
        (tmp_path / folder).mkdir(parents=True)
    for name in (".venv/lib/site.py", "third_party/v.py", "gen/out.py", "src/own.py"):
        (tmp_path / name).write_text(MODULE)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.te-microbatch-lint]\nexclude = ["third_party/*"]\n'
    )
    (tmp_path / ".gitignore").write_text("gen/\n")
    os.symlink("../.venv/lib/site.py", tmp_path / "src/a.py")
    os.symlink("../third_party/v.py", tmp_path / "src/b.py")
    os.symlink("../gen/out.py", tmp_path / "src/c.py")
    os.symlink("own.py", tmp_path / "src/d.py")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_fix_never_writes_through_a_link_into_skipped_excluded_or_ignored_dirs(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["fix", "--no-cache", "."]) == 0
    for name in (".venv/lib/site.py", "third_party/v.py", "gen/out.py"):
        assert (project / name).read_text() == MODULE, name
    assert "is_first_microbatch=None" in (project / "src/own.py").read_text()
    err = capsys.readouterr().err
    for link in ("a.py", "b.py", "c.py"):
        assert f"src/{link}: note: skipped: symlink to a file the walk skips" in err


def test_a_symlink_loop_in_the_walk_is_an_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    os.symlink("loop.py", tmp_path / "loop.py")
    assert main(["check", "--no-cache", "."]) == 2
    assert "loop.py: error: symlink loop" in capsys.readouterr().err
