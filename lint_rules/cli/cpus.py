"""How many worker processes a run may use: the cores that are idle now.

``default_cpus`` reads the machine's CPU time (``/proc/stat``) over a window, the first pass of
the run (reading every file), and counts the cores the machine left idle plus the one this
process kept busy. A load average would keep counting a run that has just ended (the previous
run of this command, back to back in CI or pre-commit) for a minute; the window sees only now.
Without ``/proc/stat`` (macOS, Windows) the cores less the one-minute load average are used.

Either way the pool never exceeds the cores this process may use: those of its CPU affinity
(``os.sched_getaffinity``) and its cgroup's CPU quota (``allowed_cpus``), so that a container
limited to two CPUs on a 64-core host does not start 64 workers.
"""

from __future__ import annotations

import os
import time

from lint_rules.slotted import Frozen


class CpuSample(Frozen):
    """The machine's CPU time (``/proc/stat``'s ``cpu`` line, in clock ticks; None where there
    is none), this process's own CPU time and the clock, at one moment."""

    __slots__ = ("ticks", "own", "wall")

    ticks: tuple[int, ...] | None
    own: float
    wall: float

    def __init__(self, ticks: tuple[int, ...] | None, own: float, wall: float) -> None:
        self._fill(locals())

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


MIN_WINDOW_TICKS = 4
"""Clock ticks (all cores together) below which a window says nothing (a tick is 10 ms): on
two cores, 20 ms. A shorter first pass waits for them (at 8, a first pass of 30 ms, as on
transformer-engine, waited 16 ms for a pool that saves 40)."""


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


CGROUP_ROOT = "/sys/fs/cgroup"
PROC_CGROUP = "/proc/self/cgroup"


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as handle:
            return handle.read().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _ratio(quota: str | None, period: str | None) -> float | None:
    """``quota / period`` CPUs, or None for no limit (``max``, ``-1``) or what cannot be read."""
    try:
        if quota is None or period is None or quota in ("max", "-1"):
            return None
        value = int(quota) / int(period)
    except (ValueError, ZeroDivisionError):
        return None
    return value if value > 0 else None


def cgroup_quota(root: str = CGROUP_ROOT, proc_cgroup: str = PROC_CGROUP) -> float | None:
    """The CPUs this process's cgroup may use (the smallest quota on its way up to the root),
    or None when none is set: cgroup v2's ``cpu.max`` (``QUOTA PERIOD`` or ``max PERIOD``), else
    v1's ``cpu.cfs_quota_us / cpu.cfs_period_us`` (``-1``: none)."""
    own = _read(proc_cgroup) or ""
    v2: str | None = None
    v1: tuple[str, str] | None = None
    for entry in own.splitlines():
        number, _, rest = entry.partition(":")
        controllers, _, path = rest.partition(":")
        if number == "0" and controllers == "":
            v2 = path
        elif "cpu" in controllers.split(","):
            v1 = (controllers, path)
    limits = []
    if v2 is not None and os.path.exists(os.path.join(root, "cgroup.controllers")):
        folder = os.path.join(root, v2.lstrip("/"))
        while True:
            text = _read(os.path.join(folder, "cpu.max"))
            if text:
                quota, _, period = text.partition(" ")
                limits.append(_ratio(quota, period or "100000"))
            if os.path.normpath(folder) == os.path.normpath(root):
                break
            folder = os.path.dirname(folder)
    else:
        names = [v1[0]] if v1 else []
        names += ["cpu", "cpu,cpuacct", "cpuacct,cpu"]
        paths = [v1[1].lstrip("/"), ""] if v1 else [""]
        for name in dict.fromkeys(names):
            for path in paths:
                folder = os.path.join(root, name, path)
                limits.append(
                    _ratio(
                        _read(os.path.join(folder, "cpu.cfs_quota_us")),
                        _read(os.path.join(folder, "cpu.cfs_period_us")),
                    )
                )
    known = [limit for limit in limits if limit is not None]
    return min(known) if known else None


def allowed_cpus() -> int:
    """The cores this process may run on: its CPU affinity, within its cgroup's CPU quota
    (rounded up: a quota of 1.5 CPUs can keep two workers busy half the time)."""
    if hasattr(os, "sched_getaffinity"):
        cores = max(1, len(os.sched_getaffinity(0)))
    else:  # pragma: no cover - macOS, Windows
        cores = max(1, os.cpu_count() or 1)
    quota = cgroup_quota()
    if quota is not None:
        import math

        cores = min(cores, max(1, math.ceil(quota)))
    return cores


_cores = allowed_cpus


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
