"""Shared test helpers (imported by name: pytest puts tests/ on sys.path)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest


def te_lint_command() -> str:
    """The installed ``te-microbatch-lint`` script of this interpreter; fails if missing."""
    bindir = str(Path(sys.executable).parent)
    exe = shutil.which("te-microbatch-lint", path=os.pathsep.join([bindir, os.environ["PATH"]]))
    if exe is None:
        pytest.fail("the te-microbatch-lint command is not installed (pip install -e .)")
    return exe


def cli() -> list[str]:
    """The command as an argv prefix."""
    return [te_lint_command()]


def default_sigint() -> None:
    """``preexec_fn`` for a child that must get the signals a test sends: a shell's background
    job (and so a test run started with ``&``) starts with SIGINT ignored, and one started with
    ``nohup`` with SIGHUP ignored, which children inherit (the CLI keeps an ignored signal
    ignored, as a user who ran it so asked)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def without_notes(done: Any) -> Any:
    """``done`` (a finished ``check``) with the evidence's ``  note:`` lines taken out of its
    stdout: what is left is one flake8 line per finding (the notes: test_evidence_faces.py)."""
    import re

    plain = re.compile(r"\x1b\[[0-9;]*m")
    done.stdout = "".join(
        line
        for line in done.stdout.splitlines(keepends=True)
        if not plain.sub("", line).startswith("  note: ")
    )
    return done


IN_PROCESS_UNSAFE = frozenset({"-", "--stdin-filename", "--watch", "-j", "--jobs"})
"""Arguments that read standard input, watch, or start a pool: those runs stay processes."""


def run_in_process(args: list[str], cwd: Path) -> Any:
    """The command run in this process (``lint_rules.cli.main``) from ``cwd``: what
    ``subprocess.run(..., capture_output=True, text=True)`` of the console script gives
    (stdout, stderr, the exit code), without a process start and its imports. For the runs that
    need a process of their own (``IN_PROCESS_UNSAFE``) use a subprocess; the documented
    commands (test_cli_docs.py) always run as processes."""
    import contextlib
    import io
    import subprocess

    from lint_rules.cli import main

    out, err = io.StringIO(), io.StringIO()
    before = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as stop:  # argparse's usage errors
                code = stop.code if isinstance(stop.code, int) else 1
    finally:
        os.chdir(before)
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


SAMPLE_PYPROJECT = """[project]
name = 'sample'

[tool.te-microbatch-lint]
unresolved = "report"
"""
"""The sample tree's (``fixtures/cli/project``) configuration: ``pkg/sub/unresolved.py`` is about
callees nobody can show is TE, which only a strict project reports."""
