"""The run's process pool (``cli.running.Pool``): one per run, this process among its workers,
files dealt largest first, outcomes in the order of the files, workers ended on an exception."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from lint_rules.cli import running
from lint_rules.cli.running import Job, Outcome, Pool


def _whose(job: Job, path: str, settings: Any, source: Any = None, project: Any = None) -> Outcome:
    """The outcome of a file says which process judged it."""
    return Outcome(path, error=str(os.getpid()))


def _files(folder: Path, sizes: list[int], settings: Any = None) -> list[tuple[str, Any]]:
    items = []
    for index, size in enumerate(sizes):
        path = folder / f"m{index}.py"
        path.write_text("#" * size)
        items.append((str(path), settings))
    return items


def _open_files() -> int:
    """How many descriptors this process holds (Linux: ``/proc/self/fd``)."""
    return len(os.listdir("/proc/self/fd"))


def _worker_first(
    job: Job, path: str, settings: Any, source: Any = None, project: Any = None
) -> Outcome:
    """``settings``: this process's id, a log (one per parse) and whether to wait. A worker
    notes each file it judges in the log; this process, on a file it must wait on, waits
    until a worker noted one (so that the worker draws while this process holds its file)."""
    here, log, wait = settings
    if os.getpid() != here:
        with open(log, "a") as handle:
            handle.write(f"{path}\n")
    elif wait:
        deadline = time.monotonic() + 60
        while not _lines(log) and time.monotonic() < deadline:
            time.sleep(0.005)
    return Outcome(path, error=str(os.getpid()))


def _lines(log: str) -> int:
    return len(Path(log).read_text().splitlines()) if os.path.exists(log) else 0


def test_outcomes_come_in_file_order_and_the_largest_file_stays_here(tmp_path: Path) -> None:
    here, log = os.getpid(), str(tmp_path / "log")
    files = _files(tmp_path, [10, 500, 20, 400, 30, 300, 40, 1000])
    items = [(p, (here, log, n == 7)) for n, (p, _) in enumerate(files)]
    again_log = str(tmp_path / "again")
    again_items = [(p, (here, again_log, n == 1)) for n, (p, _) in enumerate(files[:3])]
    with Pool(2, min_bytes=0) as pool:
        outcomes = list(pool(_worker_first, Job(), items, 2))
        again = list(pool(_worker_first, Job(), again_items, 2))
    assert [o.path for o in outcomes] == [path for path, _ in items]
    assert outcomes[7].error == str(here)  # the largest: this process, which can keep it
    assert outcomes[1].error != str(here)  # the next: drawn by the worker meanwhile
    assert [o.path for o in again] == [path for path, _ in items[:3]]
    assert again[1].error == str(here) and again[2].error == outcomes[1].error  # the same worker


def test_no_worker_is_forked_for_little_to_parse(tmp_path: Path) -> None:
    items = _files(tmp_path, [10, 20, 30])
    with Pool(2, min_bytes=1000) as pool:
        outcomes = list(pool(_whose, Job(), items, 2))
        assert pool.pids() == []
    assert {o.error for o in outcomes} == {str(os.getpid())}


def test_one_worker_allowed_means_none_forked(tmp_path: Path) -> None:
    items = _files(tmp_path, [10, 20, 30])
    with Pool(2, min_bytes=0) as pool:
        outcomes = list(pool(_whose, Job(), items, 1))
        assert pool.pids() == []
    assert {o.error for o in outcomes} == {str(os.getpid())}


def test_an_exception_ends_the_workers_without_joining(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(running, "POOL_INTERRUPTED", False)
    items = _files(tmp_path, [10, 20, 30, 40])
    pool = Pool(2, min_bytes=0)
    with pytest.raises(KeyboardInterrupt), pool:
        list(pool(_whose, Job(), items, 2))
        processes = pool.pids()
        assert processes
        raise KeyboardInterrupt
    assert running.POOL_INTERRUPTED
    deadline = time.monotonic() + 30
    for pid in processes:
        while os.waitpid(pid, os.WNOHANG) == (0, 0) and time.monotonic() < deadline:
            time.sleep(0.02)  # ended by SIGTERM, not joined: reaped here
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def _slow_away(
    job: Job, path: str, settings: Any, source: Any = None, project: Any = None
) -> Outcome:
    """A worker is slow (a loaded machine): this process is not."""
    if os.getpid() != settings:
        time.sleep(1.0)
    return Outcome(path, error=str(os.getpid()))


def test_no_file_waits_for_a_busy_worker(tmp_path: Path) -> None:
    """Every process draws the next file from one queue when it is free: a slow worker holds
    up only the file it began, and this process judges every other one."""
    here = os.getpid()
    items = _files(tmp_path, [300, 200, 100, 90, 80, 70, 60, 50], here)
    with Pool(2, min_bytes=0) as pool:
        outcomes = list(pool(_slow_away, Job(), items, 2))
    assert [o.path for o in outcomes] == [path for path, _ in items]
    assert outcomes[0].error == str(here)  # the largest
    assert len([o for o in outcomes if o.error != str(here)]) <= 1


def _dies_away(
    job: Job, path: str, settings: Any, source: Any = None, project: Any = None
) -> Outcome:
    """A worker dies on the first file it takes."""
    if os.getpid() != settings:
        os._exit(3)
    time.sleep(0.05)  # long enough for the worker to take one
    return Outcome(path, error=str(os.getpid()))


def test_the_files_of_a_worker_that_died_are_judged_here(tmp_path: Path) -> None:
    here = os.getpid()
    items = _files(tmp_path, [300, 200, 100, 90], here)
    with Pool(2, min_bytes=0) as pool:
        outcomes = list(pool(_dies_away, Job(), items, 2))
        again = list(pool(_dies_away, Job(), items, 2))  # no worker left: all here
    assert [o.path for o in outcomes] == [path for path, _ in items]
    assert {o.error for o in outcomes + again} == {str(here)}


def test_a_first_analysis_kept_by_a_worker_is_judged_again_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``layers.py``'s verdict reads ``module.py``'s re-arm, known only after the first pass:
    its first analysis is kept to be judged again. Made by the worker (this process takes a
    larger file that imports TE), it is judged again by that worker (``filework.rejudge_kept``),
    not analysed again in full in this process; the output is ``-j 1``'s."""
    import shutil

    from helpers import run_in_process

    from lint_rules.analysis.core import Analysis

    case = tmp_path / "case"
    shutil.copytree(
        Path(__file__).resolve().parents[1] / "fixtures/lifecycle/rearm_every_step", case
    )
    big = "import transformer_engine.pytorch as te\n\n" + "x = 1  # is_first_microbatch\n" * 400
    (case / "model" / "big.py").write_text(big)
    log = tmp_path / "log"
    run, rejudge = Analysis.run, Analysis.rejudge

    def note(what: str) -> None:
        with open(log, "a") as handle:
            handle.write(f"{os.getpid()} {what}\n")

    monkeypatch.setattr(Analysis, "run", lambda a: note("run") or run(a))
    monkeypatch.setattr(Analysis, "rejudge", lambda a, r: note("again") or rejudge(a, r))
    args = ["check", "--no-cache", "--isolated", "--output-format", "json", "model"]
    pooled = run_in_process([*args, "-j", "2"], case)
    events = [line.split() for line in log.read_text().splitlines()]
    log.unlink()
    alone = run_in_process([*args, "-j", "1"], case)
    here = str(os.getpid())
    assert [pid for pid, what in events if what == "again"] != [here]
    assert len([1 for _, what in events if what == "again"]) == 1
    assert len([1 for _, what in events if what == "run"]) == 4  # each file once
    assert {pid for pid, _ in events} != {here}  # a worker judged files
    assert (pooled.returncode, pooled.stdout) == (alone.returncode, alone.stdout)


def test_each_file_is_judged_once_and_no_thread_runs(tmp_path: Path) -> None:
    """No file is judged twice (none is taken back from a worker that may have begun it), and
    the pool runs no thread in this process (so none competes with its analysis for the
    interpreter) and leaves the collector as it found it."""
    import gc
    import threading

    here, log = os.getpid(), str(tmp_path / "log")
    files = _files(tmp_path, [100 + n for n in range(60)])
    items = [(path, (here, log, n == 59)) for n, (path, _) in enumerate(files)]
    with Pool(2, min_bytes=0) as pool:
        outcomes = list(pool(_worker_first, Job(), items, 2))
        assert threading.active_count() == 1
    assert gc.get_freeze_count() == 0
    assert [o.path for o in outcomes] == [path for path, _ in items]
    away = Path(log).read_text().splitlines()  # judged by the worker
    here_judged = [o.path for o in outcomes if o.error == str(here)]
    assert sorted(away + here_judged) == sorted(path for path, _ in items)  # each once
    assert away and here_judged  # both drew files


def test_a_parse_left_at_its_last_outcome_closes_after_the_pool(tmp_path: Path) -> None:
    """``zip`` stops at its shortest input: a parse is left suspended at its last outcome and
    closed later, when the pool may be gone."""
    items = _files(tmp_path, [10, 20, 30, 40])
    with Pool(2, min_bytes=0) as pool:
        stream = pool(_whose, Job(), items, 2)
        outcomes = [next(stream) for _ in items]
    stream.close()
    assert [o.path for o in outcomes] == [path for path, _ in items]


@pytest.mark.parametrize("kept", [False, True], ids=["drawn", "kept"])
def test_a_worker_that_died_between_parses_leaves_the_next_one_here(
    tmp_path: Path, kept: bool
) -> None:
    """A worker killed while idle between two parses of a run (the OOM killer, a user's
    ``kill``): the next parse cannot be handed to it (its task pipe is closed), so its files
    are judged here; the run does not fail on the closed pipe."""
    import signal

    from lint_rules.analysis.filework import rejudge_kept
    from lint_rules.settings import Settings

    here = os.getpid()
    items = _files(tmp_path, [300, 200, 100, 90], here)
    with Pool(2, min_bytes=0) as pool:
        list(pool(_whose, Job(), items, 2))
        (pid,) = pool.pids()
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        if kept:  # a second pass of a cross-file run: each file to the worker that kept it
            again = list(pool(rejudge_kept, Job(), [(p, Settings(), None) for p, _ in items], 2))
        else:
            again = list(pool(_whose, Job(), items, 2))
    assert [o.path for o in again] == [path for path, _ in items]
    if not kept:
        assert {o.error for o in again} == {str(here)}
    else:
        assert all(o.error is None for o in again)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts open files in /proc")
@pytest.mark.parametrize("forked", [0, 1], ids=["none", "one of two"])
def test_a_fork_that_fails_leaves_fewer_workers_and_nothing_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forked: int
) -> None:
    """``os.fork`` refused (EAGAIN: a container's process limit, ENOMEM): the run goes on
    with the workers it could start (none: all here), and leaves no pipe open and the
    collector unfrozen."""
    import gc

    from lint_rules.analysis.filework import rejudge_kept
    from lint_rules.settings import Settings

    real, started = os.fork, []

    def fork() -> int:
        if len(started) >= forked:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        pid = real()
        if pid:
            started.append(pid)
        return pid

    here = os.getpid()
    items = _files(tmp_path, [300, 200, 100, 90], here)
    open_before = _open_files()
    monkeypatch.setattr(os, "fork", fork)
    with Pool(3, min_bytes=0) as pool:
        outcomes = list(pool(_whose, Job(), items, 3))
        assert pool.pids() == started
        kept = [(path, Settings(), None) for path, _ in items]  # a cross-file run's next pass
        again = list(pool(rejudge_kept, Job(), kept, 3))
    assert [o.path for o in outcomes] == [path for path, _ in items]
    assert [o.path for o in again] == [path for path, _ in items]
    assert gc.get_freeze_count() == 0
    assert _open_files() == open_before


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts open files in /proc")
def test_too_many_open_files_leaves_fewer_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pipes of a worker refused (EMFILE: ``ulimit -n`` under ``--jobs`` of many): the run
    goes on with the workers it could start, not ``cannot write: Too many open files``."""
    import errno

    real, made = os.pipe, []

    def pipe() -> tuple[int, int]:
        if len(made) >= 3:  # the queue's, then one worker's two
            raise OSError(errno.EMFILE, "Too many open files")
        made.append(1)
        return real()

    here = os.getpid()
    items = _files(tmp_path, [300, 200, 100, 90], here)
    open_before = _open_files()
    monkeypatch.setattr(os, "pipe", pipe)
    with Pool(3, min_bytes=0) as pool:
        outcomes = list(pool(_whose, Job(), items, 3))
        assert len(pool.pids()) == 1
    assert [o.path for o in outcomes] == [path for path, _ in items]
    assert _open_files() == open_before


def _away_slowly(
    job: Job, path: str, settings: Any, source: Any = None, project: Any = None
) -> Outcome:
    """A worker takes a while: this process, done first, waits for its outcomes."""
    if os.getpid() != settings:
        time.sleep(0.2)
    return Outcome(path, error=str(os.getpid()))


def test_workers_whose_pipes_are_numbered_past_1024_are_waited_on(tmp_path: Path) -> None:
    """A process with many files open (a long-lived host, ``--jobs`` in the hundreds): the
    pipes of the workers get numbers ``select`` cannot wait on (FD_SETSIZE, 1024)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip("cannot open 1100 files")
    here = os.getpid()
    items = _files(tmp_path, [300, 200, 100, 90], here)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    held = []
    try:
        while not held or held[-1] < 1100:
            held.append(os.open(os.devnull, os.O_RDONLY))
        with Pool(2, min_bytes=0) as pool:
            outcomes = list(pool(_away_slowly, Job(), items, 2))
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert [o.path for o in outcomes] == [path for path, _ in items]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts open files in /proc")
def test_ctrl_c_while_the_workers_are_forked_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C between two forks (a long-lived process: ``--watch``, a host calling ``main``):
    the worker already forked ends, no pipe stays open, the collector is unfrozen."""
    import gc

    real, started = os.fork, []

    def fork() -> int:
        if started:
            raise KeyboardInterrupt
        pid = real()
        if pid:
            started.append(pid)
        return pid

    items = _files(tmp_path, [300, 200, 100, 90])
    open_before = _open_files()
    monkeypatch.setattr(os, "fork", fork)
    with pytest.raises(KeyboardInterrupt), Pool(3, min_bytes=0) as pool:
        list(pool(_whose, Job(), items, 3))
    assert gc.get_freeze_count() == 0
    assert _open_files() == open_before

    def ended(pid: int) -> bool:
        try:
            return os.waitpid(pid, os.WNOHANG) != (0, 0)
        except ChildProcessError:  # reaped already
            return True

    deadline = time.monotonic() + 30
    while not ended(started[0]) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ended(started[0])


def test_a_queue_whose_size_cannot_be_asked_never_blocks_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where a pipe's size cannot be asked (``F_GETPIPE_SZ``: Linux only) and the pipe holds
    less than 64 KB (macOS starts at 16 KB), the tickets of a parse are written a pipe's worth
    at a time all the same: this process never waits to write them while no worker reads."""
    import fcntl
    import signal

    real = fcntl.fcntl

    def fcntl_(fd: int, command: int, arg: int = 0) -> Any:
        if command == getattr(fcntl, "F_GETPIPE_SZ", 1032):
            raise OSError("not asked here")
        if command == getattr(fcntl, "F_SETPIPE_SZ", 1031):
            return real(fd, command, 4096)  # a small pipe
        return real(fd, command, arg)

    def stuck(signum: int, frame: Any) -> None:
        raise TimeoutError("this process waits to write tickets that no one reads")

    items = [(str(tmp_path / f"m{n}.py"), None) for n in range(1100)]
    for path, _ in items:
        Path(path).write_text("#")
    monkeypatch.setattr(fcntl, "fcntl", fcntl_)
    previous = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(60)  # not a timing: what would otherwise hang for ever fails
    try:
        with Pool(2, min_bytes=0) as pool:
            outcomes = list(pool(_whose, Job(), items, 2))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert [o.path for o in outcomes] == [path for path, _ in items]


def test_the_next_project_gets_the_cache_lock_the_workers_inherited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pool forks while a project's cache lock is held (``store.run_once``): the workers
    share its descriptor, so closing it here alone would not let the lock go, and the next
    project of the run would wait for it (``LOCK_WAIT_S``, 300 s; 0 here: not got)."""
    from helpers import run_in_process

    from lint_rules.analysis import store

    source = (
        "import transformer_engine.pytorch as te\n\n\nclass Block:\n"
        "    def __init__(self):\n        self.fc = te.Linear(16, 16)\n\n"
        "    def forward(self, x):\n        return self.fc(x, is_first_microbatch=True)\n"
    )
    for root in ("A", "B"):
        package = tmp_path / root / f"p{root.lower()}"
        package.mkdir(parents=True)
        (tmp_path / root / "pyproject.toml").write_text(f'[project]\nname = "{root}"\n')
        (package / "__init__.py").write_text("")
        for n in range(3):
            (package / f"m{n}.py").write_text(source)
    got: list[int | None] = []
    real = store._lock
    monkeypatch.setattr(store, "LOCK_WAIT_S", 0.0)
    monkeypatch.setattr(store, "_lock", lambda d, p: got.append(real(d, p)) or got[-1])
    cache = str(tmp_path / "cache")
    args = ["check", "--cache-dir", cache, "--output-format", "json", "A", "B"]
    pooled = run_in_process([*args, "-j", "2"], tmp_path)
    assert len(got) >= 2 and None not in got
    import json

    named = {f"{r}/p{r.lower()}/m{n}.py" for r in ("A", "B") for n in range(3)}
    assert pooled.returncode == 1
    assert {finding["path"] for finding in json.loads(pooled.stdout)} == named
