"""Run one command, timed, with its CPU time and peak memory.

``run_timed`` starts the command, waits with ``os.wait4`` (wall time, user+sys CPU time and
``ru_maxrss``: the largest single process among the command and the descendants it waited
for) and, when ``sample_memory`` is set, also polls ``/proc`` every few milliseconds for the
summed RSS of the whole process tree (parent plus parallel workers). Sampling costs CPU, so
timing runs leave it off and a separate run measures memory.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass
class RunResult:
    cmd: list[str]
    rc: int
    wall_s: float
    cpu_s: float
    maxrss_mb: float
    """Largest single process: ``/usr/bin/time``'s (``sample_memory``) or ``ru_maxrss`` via
    wait4 (which may start from this parent's own RSS: only an upper bound then)."""
    tree_rss_mb: float | None = None
    """Peak of the summed RSS over the process tree (sampled), when requested."""
    stdout: str = field(default="", repr=False)
    stderr: str = field(default="", repr=False)


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may contain spaces and parentheses
        after = stat[stat.rfind(b")") + 2 :].split()
        children.setdefault(int(after[1]), []).append(int(entry.name))
    return children


def _rss_pages(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", "rb") as handle:
            return int(handle.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0


class _TreeSampler(threading.Thread):
    def __init__(self, pid: int, interval: float = 0.02) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.interval = interval
        self.peak_pages = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            children = _children_map()
            todo, total = [self.pid], 0
            while todo:
                pid = todo.pop()
                total += _rss_pages(pid)
                todo.extend(children.get(pid, ()))
            self.peak_pages = max(self.peak_pages, total)
            self.stop.wait(self.interval)


TIME_V = "/usr/bin/time"


def run_timed(
    cmd: list[str],
    cwd: Path | str | None = None,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
    sample_memory: bool = False,
) -> RunResult:
    """Run ``cmd`` (no shell) and measure it; output is captured through temporary files.

    With ``sample_memory`` the command also runs under ``/usr/bin/time`` (when present), whose
    "maximum resident set size" is the largest single process of the command's tree: taken
    from our own ``wait4`` instead, it would start from this (possibly large) parent's RSS.
    """
    time_out = None
    if sample_memory and os.path.exists(TIME_V):
        handle, time_out = tempfile.mkstemp(prefix="te-bench-time-")
        os.close(handle)
        cmd = [TIME_V, "-o", time_out, "-f", "%M", *cmd]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err)
        sampler = _TreeSampler(proc.pid) if sample_memory else None
        if sampler:
            sampler.start()
        killer = threading.Timer(timeout, proc.kill) if timeout else None
        if killer:
            killer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            if killer:
                killer.cancel()
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if sampler:
            sampler.stop.set()
            sampler.join()
        out.seek(0)
        err.seek(0)
        maxrss_mb = usage.ru_maxrss / 1024.0
        if time_out:
            try:
                with open(time_out, encoding="utf-8") as handle:
                    maxrss_mb = int(handle.read().split()[-1]) / 1024.0
            except (OSError, ValueError, IndexError):
                pass
            finally:
                os.unlink(time_out)
        return RunResult(
            cmd=list(cmd),
            rc=proc.returncode,
            wall_s=wall,
            cpu_s=usage.ru_utime + usage.ru_stime,
            maxrss_mb=maxrss_mb,
            tree_rss_mb=(sampler.peak_pages * _PAGE / 2**20) if sampler else None,
            stdout=out.read().decode("utf-8", "replace"),
            stderr=err.read().decode("utf-8", "replace"),
        )
