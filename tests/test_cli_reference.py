"""docs/cli.md's ```` ```console ```` examples run as shown (tests/test_cli_docs.py runs the
```` ```text ```` ones): a ``$ `` line, optionally with ``< FILE`` as stdin, in a fresh copy of
``examples/``; its stdout followed by its stderr must equal the block's remaining lines."""

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
REFERENCE = PROJECT / "docs" / "cli.md"
CONSOLE_BLOCK = re.compile(r"```console\n\$ (?P<command>[^\n]+)\n(?P<output>.*?)```", re.S)


def console_examples() -> list[tuple[str, str]]:
    return [(m["command"], m["output"]) for m in CONSOLE_BLOCK.finditer(REFERENCE.read_text())]


def test_the_reference_shows_stdin() -> None:
    commands = [command for command, _ in console_examples()]
    assert any(c.startswith("te-microbatch-lint check - ") for c in commands)
    assert any(c.startswith("te-microbatch-lint fix - ") for c in commands)


@pytest.mark.parametrize(("command", "output"), console_examples(), ids=lambda v: v[:60])
def test_console_example_output_is_real(command: str, output: str, tmp_path: Path) -> None:
    shutil.copytree(PROJECT / "examples", tmp_path / "examples")
    argv = shlex.split(command)
    stdin = None
    if "<" in argv:
        at = argv.index("<")
        stdin = (tmp_path / argv[at + 1]).read_bytes()
        argv = argv[:at]
    argv[0] = str(Path(sys.executable).parent / argv[0])
    done = subprocess.run(
        argv,
        cwd=tmp_path,
        input=stdin,
        capture_output=True,
        env={**os.environ, "COLUMNS": "80"},
        timeout=120,
    )
    assert done.stdout.decode() + done.stderr.decode() == output, command
