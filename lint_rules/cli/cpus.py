"""How many worker processes a run may use: the cores that are idle now.

``default_cpus`` reads the machine's CPU time (``/proc/stat``) over a window, the first pass of
the run (reading every file), and counts the cores the machine left idle plus the one this
process kept busy. A load average would keep counting a run that has just ended (the previous
run of this command, back to back in CI or pre-commit) for a minute; the window sees only now.
Without ``/proc/stat`` (macOS, Windows) the cores less the one-minute load average are used.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class CpuSample:
    """The machine's CPU time (``/proc/stat``'s ``cpu`` line, in clock ticks; None where there
    is none), this process's own CPU time and the clock, at one moment."""

    ticks: tuple[int, ...] | None
    own: float
    wall: float

    @classmethod
    def now(cls) -> CpuSample:
        ticks = None
        try:
            with open("/proc/stat", "rb") as handle:
                line = handle.readline()
            if line.startswith(b"cpu "):
                ticks = tuple(int(field) for field in line.split()[1:9])
        except (OSError, ValueError):
            ticks = None
        times = os.times()
        return cls(ticks, times.user + times.system, time.monotonic())


MIN_WINDOW_TICKS = 8
"""Clock ticks (all cores together) below which a window says nothing (a tick is 10 ms)."""


def idle_cores(before: CpuSample, after: CpuSample, cpus: int) -> float | None:
    """Cores free for this process over the window: those the machine left idle, plus the
    share this process itself kept busy (it would go to its pool). None without ``/proc/stat``
    or over too short a window."""
    if before.ticks is None or after.ticks is None:
        return None
    delta = [b - a for a, b in zip(before.ticks, after.ticks)]
    total = sum(delta)  # user nice system idle iowait irq softirq steal (guest is in user)
    wall = after.wall - before.wall
    if total < MIN_WINDOW_TICKS or wall <= 0:
        return None
    idle = cpus * (delta[3] + delta[4]) / total
    return idle + min(1.0, max(0.0, (after.own - before.own) / wall))


def _cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)  # pragma: no cover - macOS, Windows


def default_cpus(since: CpuSample | None = None) -> int:
    """Cores this process may use that are not already busy: the idle share of the machine
    over the window from ``since`` (the first pass's start) until now, rounded, at least one,
    at most the cores it may run on. The window is what the machine does now, not a load
    average, which keeps counting a run that just ended (the previous run of this command).
    Without ``/proc/stat``: the cores less the one-minute load average."""
    cores = _cores()
    if since is not None:
        after = CpuSample.now()
        if after.ticks is not None and since.ticks is not None:
            short = MIN_WINDOW_TICKS - (sum(after.ticks) - sum(since.ticks))
            if short > 0:  # a few ms more: ticks come at 100 Hz per core
                time.sleep(short / (100 * max(1, os.cpu_count() or 1)))
                after = CpuSample.now()
        idle = idle_cores(since, after, os.cpu_count() or cores)
        if idle is not None:
            return max(1, min(cores, int(idle + 0.5)))
    try:
        busy = os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - Windows
        busy = 0.0
    return max(1, min(cores, int(cores - busy + 0.5)))
