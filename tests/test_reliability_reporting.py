"""Reports stay one line per problem and say what is left (reproducers of a reliability review,
each kept as a test)."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

import lint_rules.fileio as fileio
from lint_rules.cli import main

MODULE = (
    "import transformer_engine.pytorch as te\n\n\nclass B:\n    def __init__(self):\n"
    "        self.fc = te.Linear(4, 4)\n        self.flag = True\n\n    def forward(self, x):\n"
    "        return self.fc(x, is_first_microbatch=self.flag)\n"
)


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_ten_thousand_nested_minus_signs_is_a_parse_error(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/fixes.md promises `cannot parse: expression too deeply nested`; the parser's own
    MemoryError was reported as an internal error."""
    (here / "m.py").write_text(MODULE + "z = " + "-" * 10_000 + "1\n")
    assert main(["check", "--no-cache", "m.py"]) == 2
    err = capsys.readouterr().err
    assert "m.py: error: cannot parse: expression too deeply nested" in err
    assert "internal error" not in err


def test_a_failed_write_leaves_its_findings_counted(
    here: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (here / "m.py").write_text(MODULE)

    def disk_full(fd: int, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fileio, "_write_all", disk_full)
    assert main(["fix", "--no-cache", "m.py"]) == 2
    err = capsys.readouterr().err
    assert "m.py: error: cannot write: No space left on device" in err
    assert "0 fixed, 1 remaining" in err and "TEM001 x1" in err
    assert (here / "m.py").read_text() == MODULE


def test_a_file_name_with_a_newline_is_one_escaped_line(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (here / "bad\nname\x1b[31m.py").write_bytes(b"x = 1\x00\n")
    assert main(["check", "--no-cache", "."]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert lines == ["./bad\\nname\\x1b[31m.py: error: contains a NUL byte (line 1)"]


def test_each_fixed_line_is_written_whole(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers share stderr: `print` wrote the text and its newline in two calls, so lines from
    two workers glued together. Each line is now one write."""
    (here / "m.py").write_text(MODULE)
    writes: list[str] = []

    class Recorder(io.StringIO):
        def write(self, text: str) -> int:
            writes.append(text)
            return len(text)

    monkeypatch.setattr("sys.stderr", Recorder())
    assert main(["fix", "--no-cache", "m.py"]) == 0
    assert "fixed m.py (1 finding)\n" in writes
    assert os.path.exists("m.py")
