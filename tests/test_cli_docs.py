"""Every ``$ command`` example in README.md prints what the docs say it prints.

Each ```` ```text ```` block that starts with ``$ `` is run in a fresh copy of ``examples/``;
its stdout followed by its stderr must equal the block's remaining lines. pre-commit examples
need hook installs and are covered by tests/test_precommit.py instead.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent
DOC = PROJECT / "README.md"
BLOCK = re.compile(r"```text\n\$ (?P<command>[^\n]+)\n(?P<output>.*?)```", re.S)


def examples() -> list[tuple[str, str]]:
    found = [(m["command"], m["output"]) for m in BLOCK.finditer(DOC.read_text("utf-8"))]
    return [(command, output) for command, output in found if not command.startswith("pre-commit")]


def test_the_docs_have_examples() -> None:
    commands = [command for command, _ in examples()]
    assert any(c.startswith("te-microbatch-lint check") for c in commands)
    assert any(c.startswith("te-microbatch-lint fix") for c in commands)
    assert any(c.startswith("python -m libcst.tool") for c in commands)


@pytest.mark.parametrize(("command", "output"), examples(), ids=[c for c, _ in examples()])
def test_example_output_is_real(command: str, output: str, tmp_path: Path) -> None:
    shutil.copytree(PROJECT / "examples", tmp_path / "examples")
    argv = shlex.split(command)
    bindir = Path(sys.executable).parent
    if argv[0] == "python":
        argv[0] = sys.executable
    else:
        argv[0] = str(bindir / argv[0])
    env = {**os.environ, "COLUMNS": "80"}
    done = subprocess.run(
        argv, cwd=tmp_path, capture_output=True, text=True, encoding="utf-8", env=env, timeout=120
    )
    assert done.stdout + done.stderr == output
