"""Ctrl-C: during start-up (no traceback) and right after a rename in ``fix`` (still named).

Both interrupts are made deterministic: the first by an import hook that raises
``KeyboardInterrupt`` while the command's modules load, the second by sending SIGINT to the
process from inside ``exchange._exchange``, just after the file has been swapped into place.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import default_sigint

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

STARTUP = """
import sys

class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == "lint_rules.settings":
            raise KeyboardInterrupt
        return None

sys.meta_path.insert(0, Interrupt())
from lint_rules.cli import main  # what the console script does
sys.exit(main(["check", "."]))
"""

AFTER_RENAME = """
import os, signal, sys
from lint_rules import exchange as swap

real = swap._exchange

def exchange(src, dst):
    swapped = real(src, dst)
    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C the moment the file is in place
    return swapped

swap._exchange = exchange
from lint_rules.cli import main
sys.exit(main(["fix", "--jobs", "1", "--isolated", "."]))
"""


def python(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=default_sigint,
    )


MODULE = STARTUP.replace(
    "from lint_rules.cli import main  # what the console script does\n"
    'sys.exit(main(["check", "."]))',
    'import runpy\nsys.argv = ["te-microbatch-lint", "check", "."]\n'
    'runpy.run_module("lint_rules.cli", run_name="__main__")',
)


@pytest.mark.parametrize("script", [STARTUP, MODULE], ids=["command", "python -m"])
def test_ctrl_c_during_start_up_is_one_line_and_exit_130(tmp_path: Path, script: str) -> None:
    assert script.count("sys.meta_path") == 1 and (script is STARTUP or "runpy" in script)
    result = python(script, tmp_path)
    assert result.returncode == 130
    assert result.stderr == "te-microbatch-lint: interrupted\n"


def test_ctrl_c_right_after_a_rename_still_names_the_file(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(EXAMPLES, tree)
    before = {p.name: p.read_text() for p in tree.glob("*.py")}
    result = python(AFTER_RENAME, tree)
    assert result.returncode == 130, result.stderr
    changed = [name for name, text in before.items() if (tree / name).read_text() != text]
    assert len(changed) == 1, changed  # the first file written, then the interrupt
    assert f"fixed ./{changed[0]} (2 findings)" in result.stderr.splitlines(), result.stderr
    assert result.stderr.splitlines()[-1] == "te-microbatch-lint: interrupted"
