"""Shared test helpers (imported by name: pytest puts tests/ on sys.path)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

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
    """``preexec_fn`` for a child that must get Ctrl-C: a shell's background job (and so a test
    run started with ``&``) starts with SIGINT ignored, which children inherit."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
