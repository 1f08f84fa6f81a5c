"""Shared test helpers (imported by name: pytest puts tests/ on sys.path)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
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


def other_grammar_python() -> str | None:
    """An interpreter on the other side of Python 3.12's grammar change (PEP 701 f-strings)
    from this one: a 3.12 or later when this is older, else a 3.11 or older; None if none is
    installed (python3.X on PATH, or pyenv's)."""
    import glob
    import subprocess

    newer = sys.version_info < (3, 12)
    minors = range(12, 15) if newer else range(11, 8, -1)
    candidates = [shutil.which(f"python3.{minor}") or "" for minor in minors]
    for minor in minors:
        pattern = os.path.expanduser(f"~/.pyenv/versions/3.{minor}.*/bin/python3")
        candidates += sorted(glob.glob(pattern))
    for path in filter(None, candidates):
        done = subprocess.run(
            [path, "-c", "import sys; print(sys.version_info >= (3, 12))"],
            capture_output=True,
            text=True,
        )
        if done.returncode == 0 and done.stdout.strip() == str(newer):
            return path
    return None


OTHER_GRAMMAR_SCRIPT = """
import json, sys
from lint_rules.noqa import add_noqa
job = json.loads(sys.stdin.read())
def compiles(text):
    try:
        compile(text.encode("utf-8"), "<fuzz>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True
theirs = add_noqa(job["text"], [tuple(f) for f in job["found"]])[0] if job["found"] else None
print(json.dumps({"input": compiles(job["text"]), "ours": [compiles(t) for t in job["outputs"]],
                  "theirs": theirs}))
"""


def other_grammar_env() -> dict[str, str]:
    """The environment for another interpreter to import this repository's ``lint_rules``:
    the repository and flake8's own folder (``noqa`` reads flake8's patterns; flake8 is pure
    Python, so this one's copy serves any version)."""
    import flake8

    root = str(Path(__file__).resolve().parent.parent)
    flake8_home = os.path.dirname(os.path.dirname(os.path.abspath(flake8.__file__)))
    import tempfile

    # a folder holding flake8 alone, not this venv's whole site-packages (built for this Python)
    shim = os.path.join(tempfile.gettempdir(), f"te-lint-flake8-only-{os.getuid()}")
    if not os.path.isdir(os.path.join(shim, "flake8")):
        os.makedirs(shim, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.symlink(os.path.join(flake8_home, "flake8"), os.path.join(shim, "flake8"))
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join((root, shim)),
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def on_other_grammar(python: str, text: str, outputs: list[str], found: list) -> dict:
    """Run by ``python`` (``other_grammar_python``): whether ``text`` and each of ``outputs``
    compile there, and ``add_noqa(text, found)`` as that Python writes it (``theirs``)."""
    import json
    import subprocess

    env = other_grammar_env()
    job = json.dumps({"text": text, "outputs": outputs, "found": found})
    done = subprocess.run(
        [python, "-c", OTHER_GRAMMAR_SCRIPT], input=job, capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict = json.loads(done.stdout)
    return result


SAMPLE_PYPROJECT = """[project]
name = 'sample'

[tool.te-microbatch-lint]
unresolved = "report"
"""
"""The sample tree's (``fixtures/cli/project``) configuration: ``pkg/sub/unresolved.py`` is about
callees nobody can show is TE, which only a strict project reports."""


_AGED = [0]


def age(root: Path) -> None:
    """Files written in the last seconds get a distinct time a minute ago: the index then
    knows them by their stat (a file younger than two seconds is always read again)."""
    now = time.time()
    for path in root.rglob("*"):
        if path.is_file() and path.stat().st_mtime > now - 10:
            _AGED[0] += 1
            os.utime(path, (now - 60 + _AGED[0] / 1000, now - 60 + _AGED[0] / 1000))


def modules_after(cwd: Path | None, *argv: str) -> tuple[str, int, set[str]]:
    """What a fresh interpreter prints for ``te-microbatch-lint ARGV`` in ``cwd`` (the command
    run in process, by ``lint_rules.cli.main``), the status it returns, and the modules it has
    imported by the end."""
    code = (
        "import sys\nfrom lint_rules.cli import main\n"
        f"status = main({list(argv)!r})\n"
        "print('\\0' + str(status) + '\\0' + ' '.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, check=True
    )
    out, status, modules = done.stdout.rsplit("\0", 2)
    return out, int(status), set(modules.split())
