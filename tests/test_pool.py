"""The run's process pool (``cli.running.Pool``): one per run, this process among its workers,
files dealt largest first, outcomes in the order of the files, workers ended on an exception."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lint_rules.cli import running
from lint_rules.cli.running import Job, Outcome, Pool


def _whose(job: Job, path: str, settings: Any, source: Any = None, project: Any = None) -> Outcome:
    """The outcome of a file says which process judged it."""
    return Outcome(path, error=str(os.getpid()))


def _files(folder: Path, sizes: list[int]) -> list[tuple[str, None]]:
    items = []
    for index, size in enumerate(sizes):
        path = folder / f"m{index}.py"
        path.write_text("#" * size)
        items.append((str(path), None))
    return items


def test_outcomes_come_in_file_order_and_the_largest_file_stays_here(tmp_path: Path) -> None:
    items = _files(tmp_path, [10, 500, 20, 400, 30, 300, 40, 1000])
    with Pool(2, min_bytes=0) as pool:
        outcomes = list(pool(_whose, Job(), items, 2))
        again = list(pool(_whose, Job(), items[:3], 2))
    assert [o.path for o in outcomes] == [path for path, _ in items]
    here = str(os.getpid())
    assert outcomes[7].error == here  # the largest: this process, which can keep its analysis
    assert outcomes[1].error != here  # the next: dealt to the worker before this process began
    assert [o.path for o in again] == [path for path, _ in items[:3]]
    assert again[1].error == here and again[2].error == outcomes[1].error  # the same worker


def test_no_worker_is_forked_for_little_to_parse(tmp_path: Path) -> None:
    items = _files(tmp_path, [10, 20, 30])
    with Pool(2, min_bytes=1000) as pool:
        outcomes = list(pool(_whose, Job(), items, 2))
        assert pool._executor is None
    assert {o.error for o in outcomes} == {str(os.getpid())}


def test_one_worker_allowed_means_none_forked(tmp_path: Path) -> None:
    items = _files(tmp_path, [10, 20, 30])
    with Pool(2, min_bytes=0) as pool:
        outcomes = list(pool(_whose, Job(), items, 1))
        assert pool._executor is None
    assert {o.error for o in outcomes} == {str(os.getpid())}


def test_an_exception_ends_the_workers_without_joining(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(running, "POOL_INTERRUPTED", False)
    items = _files(tmp_path, [10, 20, 30, 40])
    pool = Pool(2, min_bytes=0)
    with pytest.raises(KeyboardInterrupt), pool:
        list(pool(_whose, Job(), items, 2))
        processes = list(pool._executor._processes.values())
        raise KeyboardInterrupt
    assert running.POOL_INTERRUPTED
    deadline = time.monotonic() + 30
    for process in processes:
        # The executor's own thread reaps its workers too: a join racing it can see the
        # process gone from the kernel (ECHILD) before its return code is recorded.
        while process.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not process.is_alive()


def _slow_away(
    job: Job, path: str, settings: Any, source: Any = None, project: Any = None
) -> Outcome:
    """A worker is slow (a loaded machine): this process is not."""
    if os.getpid() != settings:
        import time

        time.sleep(1.0)
    return Outcome(path, error=str(os.getpid()))


def test_files_queued_for_a_busy_worker_are_taken_back(tmp_path: Path) -> None:
    here = os.getpid()
    items = [(path, here) for path, _ in _files(tmp_path, [300, 200, 100])]
    with Pool(2, min_bytes=0) as pool:
        outcomes = list(pool(_slow_away, Job(), items, 2))
    assert [o.path for o in outcomes] == [path for path, _ in items]
    assert outcomes[0].error == str(here)  # the largest
    assert outcomes[1].error != str(here)  # the worker's first
    assert outcomes[2].error == str(here)  # queued behind it: taken back, not waited for


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


def _slow_here(
    job: Job, path: str, settings: Any, source: Any = None, project: Any = None
) -> Outcome:
    """This process is slow (it judges the largest files): the worker is not."""
    if os.getpid() == settings:
        import time

        time.sleep(0.1)
    return Outcome(path, error=str(os.getpid()))


def test_small_files_go_to_a_worker_together_but_the_last_one_by_one(tmp_path: Path) -> None:
    """Each task costs the pool's threads and the worker about as much as a few KB of source:
    small files are sent together (``CHUNK_BYTES``, ``CHUNK_FILES``), the last ones alone, so
    that those queued for a busy worker can still be taken back one by one."""
    here = os.getpid()
    items = [(path, here) for path, _ in _files(tmp_path, [100 + n for n in range(60)])]
    sent: list[int] = []
    with Pool(2, min_bytes=0) as pool:
        executor = pool._start(False)
        submit = executor.submit
        executor.submit = lambda fn, chunk: sent.append(len(chunk)) or submit(fn, chunk)
        outcomes = list(pool(_slow_here, Job(), items, 2))
        assert sys.getswitchinterval() <= running.SWITCH_INTERVAL  # the pool's threads wait less
    assert [o.path for o in outcomes] == [path for path, _ in items]
    away = [o for o in outcomes if o.error != str(here)]
    assert sum(sent) >= len(away) > len(sent)  # fewer tasks than files judged away
    assert max(sent) == running.CHUNK_FILES
    assert sent[-1] == 1


def test_the_switch_interval_is_given_back_with_the_pool(tmp_path: Path) -> None:
    before = sys.getswitchinterval()
    with Pool(2, min_bytes=0) as pool:
        list(pool(_whose, Job(), _files(tmp_path, [10, 20, 30]), 2))
        assert sys.getswitchinterval() < before
    assert sys.getswitchinterval() == before
