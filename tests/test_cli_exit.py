"""How the command's process ends (``cli._leave``): without tearing every object down, but as
a normal exit would in everything a user or a tool can see: the exit code, the output flushed,
the ``atexit`` handlers run (coverage, a pool's finalizers), a profiler's file written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

FLAGGED = (Path(__file__).parents[1] / "examples" / "megatron_style.py").read_text()
"""A file with findings (TEM001)."""


def _console(tmp_path: Path, *before: str) -> subprocess.CompletedProcess[str]:
    code = "\n".join(
        [
            "import sys",
            *before,
            "sys.argv = ['te-microbatch-lint', 'check', '--no-cache', '.']",
            "from lint_rules.cli import console",
            "console()",
            "print('not reached')",
        ]
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )


def test_the_exit_code_and_the_output_are_those_of_the_run(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(FLAGGED)
    done = _console(tmp_path)
    assert done.returncode == 1, done.stderr
    assert "train.py:" in done.stdout and " TEM001 " in done.stdout
    assert "not reached" not in done.stdout
    (tmp_path / "train.py").write_text("x = 1\n")
    done = _console(tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "All checks passed!\n", "")


def test_the_exit_handlers_run_and_what_they_print_is_flushed(tmp_path: Path) -> None:
    done = _console(tmp_path, "import atexit", "atexit.register(print, 'handler ran')")
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("handler ran\n")


def test_a_thread_still_running_is_joined_as_by_a_normal_exit(tmp_path: Path) -> None:
    done = _console(
        tmp_path,
        "import threading, time",
        "threading.Thread(target=lambda: (time.sleep(0.5), print('thread done'))).start()",
    )
    assert done.returncode == 0, done.stderr
    assert "thread done" in done.stdout


def test_a_profile_of_the_command_is_written(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(FLAGGED)
    out = tmp_path / "run.prof"
    done = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "lint_rules.cli", "check", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert " TEM001 " in done.stdout  # (cProfile itself exits 0 whatever the code)
    assert out.stat().st_size > 0


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("findings", [True, False])
def test_output_that_cannot_be_written_is_one_line_and_exit_2(
    tmp_path: Path, findings: bool
) -> None:
    if findings:
        (tmp_path / "train.py").write_text(FLAGGED)
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "lint_rules.cli", "check", "--no-cache", "."],
            cwd=tmp_path,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "te-microbatch-lint: error: cannot write: No space left on device\n" in done.stderr
