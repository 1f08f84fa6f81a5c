"""Safe writes under interruption: every file is the original or the fully fixed text.

A ``fix --jobs 2`` run over 300 fixable files is killed part way, as a process group, after
some files have changed. Writes are slowed down (a ``sitecustomize`` on the child's path wraps
``os.fsync`` with a short sleep) so that the signal lands while temporary files exist.

Decision (issue 6): SIGTERM, SIGINT and SIGHUP are handled: the CLI calls
``fileio.install_cleanup_handlers()`` in its main process and in every worker (pool
initializer), which holds these signals back for the few system calls of each write and
removes pending temporary files before exiting; so after them no ``.*.tmp`` is left. SIGKILL
cannot be handled: the guarantee is then only "old or new" for every file, plus leftover
temporary files that match ``.<name>.<random>.tmp`` and never end in ``.py`` (so they are never
taken for source) -- and a second ``fix`` run completes the job.
"""

from __future__ import annotations

import functools
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers import cli, default_sigint

N_FILES = 300
TEMP_RE = re.compile(r"^\..+\.tmp$")

TEMPLATE = '''\
"""Generated module {index}: TE calls whose flag is not tracked."""
import transformer_engine.pytorch as te


class Block{index}:
    def __init__(self):
        self.fc = te.Linear(16, 16)
        self.proj = te.LayerNormLinear(16, 16)
        self.flag = True

    def forward(self, x):
{calls}        self.flag = False
        return x
'''
CALL = (
    "        x = self.fc(x, is_first_microbatch=self.flag)  # call {n} " + "padding " * 8 + "\n"
    "        x = self.proj(\n"
    "            x,\n"
    "            is_first_microbatch=self.flag,\n"
    "        )\n"
)

SITECUSTOMIZE = """\
import os
import time

_real_fsync = os.fsync


def _slow_fsync(fd):
    time.sleep(float(os.environ.get("TEM_TEST_FSYNC_DELAY", "0.01")))
    return _real_fsync(fd)


os.fsync = _slow_fsync
"""


def module_text(index: int) -> str:
    calls = "".join(CALL.format(n=n) for n in range(5 + index % 7))
    return TEMPLATE.format(index=index, calls=calls)


def slow_env(tmp_path: Path, delay: float) -> dict[str, str]:
    site = tmp_path / "slow_site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    python_path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": python_path, "TEM_TEST_FSYNC_DELAY": str(delay)}


def group_alive(pgid: int) -> bool:
    """Whether any non-zombie process is left in the process group (Linux /proc)."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat_line = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat_line.rsplit(")", 1)[-1].split()
        if fields and fields[0] != "Z" and int(fields[2]) == pgid:
            return True
    return False


def leftovers(tree: Path) -> list[str]:
    return sorted(p.name for p in tree.iterdir() if not p.name.endswith(".py"))


@functools.cache
def modules() -> tuple[dict[str, str], dict[str, str]]:
    """(original text, fixed text) per file name, made once for the tests that share them."""
    from lint_rules.fixing import fix_source

    originals: dict[str, str] = {}
    expected: dict[str, str] = {}
    for index in range(N_FILES):
        name = f"mod_{index:03d}.py"
        originals[name] = module_text(index)
        result = fix_source(originals[name])
        assert result.changed, "every generated module must have something to fix"
        expected[name] = result.text
    return originals, expected


def stamp(path: Path) -> tuple[int, int]:
    """What an atomic replace changes without reading the file: its inode and mtime."""
    status = path.stat()
    return status.st_ino, status.st_mtime_ns


def interrupted_fix(tmp_path: Path, sig: signal.Signals) -> tuple[Path, dict[str, str], int]:
    """Run ``fix --jobs 2`` on N_FILES files, send ``sig`` to its group part way, return
    (tree, expected fixed text per file name, exit status)."""
    originals, expected = modules()
    tree = tmp_path / "tree"
    tree.mkdir()
    for name, text in originals.items():
        (tree / name).write_text(text)
    stamps = {name: stamp(tree / name) for name in originals}

    log = (tmp_path / "stderr.txt").open("w")
    process = subprocess.Popen(
        [*cli(), "fix", "--jobs", "2", str(tree)],
        stdout=subprocess.DEVNULL,
        stderr=log,
        env=slow_env(tmp_path, 0.01),
        start_new_session=True,  # its own process group: the workers get the signal too
        preexec_fn=default_sigint,
    )
    deadline = time.monotonic() + 60
    changed = 0
    try:
        while time.monotonic() < deadline and process.poll() is None:
            changed = sum(stamp(tree / n) != stamps[n] for n in originals)
            if changed >= 20:
                os.killpg(process.pid, sig)
                break
            time.sleep(0.01)
        else:
            pytest.fail(f"the run ended (rc={process.poll()}) after {changed} files, unkilled")
        status = process.wait(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()
    stop = time.monotonic() + 15
    while group_alive(process.pid) and time.monotonic() < stop:
        time.sleep(0.05)
    assert not group_alive(process.pid), "worker processes outlived the kill"

    states = {"old": 0, "new": 0}
    for name, text in originals.items():
        now = (tree / name).read_text()
        if now == text:
            states["old"] += 1
        else:
            assert now == expected[name], f"{name} is neither the original nor the fixed text"
            states["new"] += 1
    assert states["new"] >= 20 and states["old"] >= 1, f"not interrupted part way: {states}"
    return tree, expected, status


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_handled_signal_leaves_old_or_new_and_no_temp_files(
    tmp_path: Path, sig: signal.Signals
) -> None:
    tree, _, status = interrupted_fix(tmp_path, sig)
    assert status != 0
    assert leftovers(tree) == [], "temporary files left behind after a handled signal"
    stderr = (tmp_path / "stderr.txt").read_text()
    assert "Traceback" not in stderr or sig == signal.SIGINT, stderr


@pytest.mark.slow
def test_sigkill_leaves_old_or_new_and_only_recognisable_temp_files(tmp_path: Path) -> None:
    tree, expected, status = interrupted_fix(tmp_path, signal.SIGKILL)
    assert status == -signal.SIGKILL
    stray = leftovers(tree)
    assert all(TEMP_RE.match(name) and not name.endswith(".py") for name in stray), stray
    # A leftover is never taken for source, and a second run finishes the job.
    again = subprocess.run(
        [*cli(), "fix", "--jobs", "2", str(tree)], capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0, again.stderr
    assert not any(".tmp" in line for line in again.stderr.splitlines() if "error" in line)
    for name, text in expected.items():
        assert (tree / name).read_text() == text
    for name in stray:
        (tree / name).unlink(missing_ok=True)


# ------------------------------------------------------------- fileio's own handlers, directly

WRITER = textwrap.dedent(
    """\
    import os, sys, time
    from lint_rules import fileio

    if sys.argv[2] == "handlers":
        fileio.install_cleanup_handlers()
    real_fsync = os.fsync

    def announce_then_wait(fd):
        print("in-write", flush=True)
        time.sleep(0.5)
        real_fsync(fd)

    os.fsync = announce_then_wait
    source = fileio.read_source(sys.argv[1])
    try:
        fileio.write_source_atomic(source, "x = 2\\n")
    except KeyboardInterrupt:
        print("interrupted after the write", flush=True)
        sys.exit(130)
    print("finished", flush=True)
    """
)


def signal_mid_write(tmp_path: Path, sig: signal.Signals, mode: str) -> tuple[int, str]:
    target = tmp_path / "target.py"
    target.write_text("x = 1\n")
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(target), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "in-write"
    child.send_signal(sig)
    out, err = child.communicate(timeout=30)
    return child.returncode, out + err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_signal_during_write_is_held_until_the_file_is_complete(
    tmp_path: Path, sig: signal.Signals
) -> None:
    status, output = signal_mid_write(tmp_path, sig, "handlers")
    assert status == -sig, output  # it still dies of the signal ...
    assert "finished" not in output
    assert (tmp_path / "target.py").read_text() == "x = 2\n"  # ... after the write completed
    assert leftovers(tmp_path) == []


def test_sigint_during_write_completes_it_then_raises_keyboardinterrupt(tmp_path: Path) -> None:
    status, output = signal_mid_write(tmp_path, signal.SIGINT, "handlers")
    assert status == 130 and "interrupted after the write" in output, output
    assert (tmp_path / "target.py").read_text() == "x = 2\n"
    assert leftovers(tmp_path) == []


def test_without_handlers_a_signal_mid_write_leaves_a_temp_file(tmp_path: Path) -> None:
    """Why the CLI must install the handlers: without them SIGTERM kills the write half way
    (the target is still intact -- old -- but a temporary file stays)."""
    status, output = signal_mid_write(tmp_path, signal.SIGTERM, "plain")
    assert status == -signal.SIGTERM, output
    assert (tmp_path / "target.py").read_text() == "x = 1\n"
    stray = leftovers(tmp_path)
    assert len(stray) == 1 and TEMP_RE.match(stray[0]) and stray[0].startswith(".target.py.")
