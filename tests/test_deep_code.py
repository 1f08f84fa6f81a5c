"""No recursion limit on valid code (docs/fixes.md, "Deep code").

A 100,000-term expression and 500-level nesting are analysed and fixed in every face that gets
that far: the core, ``fix_source`` (what the libcst codemod calls), the flake8 plugin given the
tree, and the command line. The release lost such a file to ``RecursionError ... internal
error``. (flake8's own parse and pyflakes, and libcst's runner, stop at such files themselves.)
"""

from __future__ import annotations

import ast
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from helpers import cli

from lint_rules.analysis import analyze_source
from lint_rules.fixing import fix_source
from lint_rules.flake8_plugin import TEMicrobatchChecker
from lint_rules.settings import Settings

HEAD = (
    "import transformer_engine.pytorch as te\n\n\n"
    "class Block:\n"
    "    def __init__(self):\n"
    "        self.fc = te.Linear(4, 4)\n"
    "        self.fc2 = te.Linear(4, 4)\n"
    "        self.fc3 = te.Linear(4, 4)\n"
    "        self.config = None\n\n"
    "    def forward(self, x, a, c):\n"
)
CALL = "self.fc(x, is_first_microbatch=self.flag)"
FLAT = HEAD + f"        return {' + '.join(['a'] * 100_000)} + {CALL}\n"
NESTED = HEAD + (
    f"        y = {'a if c else ' * 500}{CALL}\n"
    f"        z = {'not ' * 500}{CALL.replace('fc', 'fc2')}\n"
    f"        f = {'lambda: ' * 500}{CALL.replace('fc', 'fc3')}\n"
    "        return y, z, f\n"
)
FLAT_PARSES = sys.version_info < (3, 12)
"""Python 3.12+ refuses to build an ast this deep (a few thousand levels at most)."""

pytestmark = pytest.mark.slow


def programs() -> list[object]:
    flat = pytest.param(
        FLAT,
        1,
        marks=[
            pytest.mark.skipif(not FLAT_PARSES, reason="ast.parse caps depth on 3.12+"),
            pytest.mark.long,
        ],
        id="flat-100000",
    )
    return [flat, pytest.param(NESTED, 3, id="nested-500")]


@pytest.mark.parametrize(("text", "calls"), programs())
def test_core_and_fixer(text: str, calls: int) -> None:
    assert sys.getrecursionlimit() < 100_000
    findings = analyze_source(text)
    assert sum(f.code == "TEM001" for f in findings) == calls
    result = fix_source(text)
    assert result.text.count("is_first_microbatch=None") == calls
    guarded = fix_source(text, Settings(fix_strategy="guard"))
    assert guarded.text.count("if is_first_microbatch_tracked(self.config) else None") == calls
    assert "from megatron.core.transformer.module import is_first_microbatch_tracked\n" in (
        guarded.text
    )
    assert fix_source(result.text).text == result.text


def _parse_deep(text: str) -> ast.Module:
    """What flake8 would hand the plugin, if its own parse got that far."""
    out: list[ast.Module] = []
    limit = sys.getrecursionlimit()
    threading.stack_size(1 << 28)
    try:
        sys.setrecursionlimit(400_000)
        worker = threading.Thread(target=lambda: out.append(ast.parse(text)))
        worker.start()
        worker.join()
    finally:
        threading.stack_size(0)
        sys.setrecursionlimit(limit)
    return out[0]


@pytest.mark.parametrize(("text", "calls"), programs())
def test_flake8_plugin(text: str, calls: int) -> None:
    tree = _parse_deep(text)
    checker = TEMicrobatchChecker(tree, text.splitlines(True), "deep.py")
    found = [message for _line, _col, message, _type in checker.run()]
    assert sum(m.startswith("TEM001") for m in found) == calls


@pytest.mark.parametrize(("text", "calls"), programs())
def test_command_line(tmp_path: Path, text: str, calls: int) -> None:
    path = tmp_path / "deep.py"
    path.write_text(text)
    checked = subprocess.run(
        [*cli(), "check", str(path)], capture_output=True, text=True, timeout=300
    )
    assert checked.returncode == 1, checked.stderr
    assert checked.stdout.count("TEM001") == calls and "error" not in checked.stderr
    fixed = subprocess.run([*cli(), "fix", str(path)], capture_output=True, text=True, timeout=300)
    assert fixed.returncode == 0, fixed.stderr
    assert path.read_text().count("is_first_microbatch=None") == calls


@pytest.mark.skipif(FLAT_PARSES, reason="this Python parses the flat program")
def test_too_deep_for_this_python_is_an_error_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "deep.py"
    path.write_text(FLAT)
    checked = subprocess.run(
        [*cli(), "check", str(path)], capture_output=True, text=True, timeout=300
    )
    assert checked.returncode == 2
    assert "cannot parse: expression too deeply nested" in checked.stderr
    assert "internal error" not in checked.stderr


def test_deep_thread_gets_its_large_stack() -> None:
    """The retry thread must start with the large stack (the size is read at ``start()``):
    a 300,000-term expression needs more C stack than a default thread has (the release
    crashed with a segmentation fault)."""
    program = HEAD + f"        return {' + '.join(['a'] * 300_000)} + {CALL}\n"
    code = (
        "import sys\n"
        "from lint_rules.analysis import analyze_source\n"
        "print(len(analyze_source(sys.stdin.read())))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], input=program, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "1"


def test_past_the_parser_limit_is_a_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Past the depth this Python's parser builds (here a deep thread's limit lowered to
    3,000, as Python 3.12's own cap does), the file is an error in one line, exit 2, untouched."""
    from lint_rules import deep
    from lint_rules.cli import main

    monkeypatch.setattr(deep, "RECURSION_LIMIT", 3_000)
    path = tmp_path / "deep.py"
    text = HEAD + f"        return {' + '.join(['a'] * 20_000)} + {CALL}\n"
    path.write_text(text)
    for command in (["check"], ["fix"], ["fix", "--diff"]):
        assert main([*command, "--isolated", "--jobs", "1", str(path)]) == 2
        err = capsys.readouterr().err
        assert f"{path}: error: cannot parse: expression too deeply nested\n" in err, err
        assert "internal error" not in err
    assert path.read_text() == text
