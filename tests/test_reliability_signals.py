"""A signal to the main process of a ``--jobs N`` run ends its workers too (reproducers of a
reliability review, each kept as a test): SIGTERM, SIGHUP and SIGINT reap the pool before the
main process exits; after a SIGKILL the kernel ends them (Linux: the parent-death signal).
Before, they stayed blocked on the call queue with ppid 1, holding the run's stdout, which hung
``timeout``, CI cancellation and ``$(...)`` pipelines."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import cli
from test_kill import group_alive, module_text, slow_env


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc and prctl")
@pytest.mark.parametrize(
    "sig",
    [
        pytest.param(signal.SIGTERM, id="SIGTERM"),
        pytest.param(signal.SIGHUP, id="SIGHUP", marks=pytest.mark.slow),
        pytest.param(signal.SIGINT, id="SIGINT", marks=pytest.mark.slow),
        pytest.param(signal.SIGKILL, id="SIGKILL", marks=pytest.mark.slow),
    ],
)
def test_a_signal_to_the_main_process_leaves_no_worker(tmp_path: Path, sig: signal.Signals) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    originals = {}
    for index in range(200):
        originals[f"m{index:03d}.py"] = text = module_text(index)
        (tree / f"m{index:03d}.py").write_text(text)
    process = subprocess.Popen(
        [*cli(), "fix", "-q", "--jobs", "2", str(tree)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=slow_env(tmp_path, 0.02),
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            if sum((tree / n).read_text() != t for n, t in originals.items()) >= 5:
                break
            time.sleep(0.01)
        else:
            pytest.fail("the run ended before it could be interrupted")
        os.kill(process.pid, sig)  # the main process only, as `kill PID` or `timeout` does
        process.wait(timeout=30)
        stop = time.monotonic() + 20
        while group_alive(process.pid) and time.monotonic() < stop:
            time.sleep(0.05)
        assert not group_alive(process.pid), "worker processes outlived the main process"
        assert process.stdout is not None
        process.stdout.read()  # the pipe closes: no worker holds it
    finally:
        with __import__("contextlib").suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
