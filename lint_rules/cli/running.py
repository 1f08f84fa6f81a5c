"""Per-file work (check, fix): read, prefilter, cache, then parse in order, in a pool if it pays.

The run has two passes. The first reads every file in the main process and applies the core's
byte prefilter (``analysis.mentions_flag``): a file that never spells the flag is done without
being parsed, and a file whose result is in the cache (``analysis.store``) is done too. Only
the rest is parsed, with worker processes when ``--jobs`` allows it and the bytes to parse are
enough to pay for them (``POOL_MIN_BYTES``, measured in benchmarks/README.md), else in this
process. Each file is judged with its project (``analysis.faces``, ``cli.project``).
The run has one ``Pool``: forked once, after the analysis core is imported, for the first
parse that needs it, and kept for the later passes of a cross-file run; this process judges
files too. Outcomes come back in the order of the files, whatever the number of jobs, one by
one as they finish, so the text format streams. Each worker returns plain picklable data
(``Outcome``); libcst is imported only by ``fixing`` (guard strategy), flake8 never.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Iterator, Sequence

from lint_rules.analysis.filework import (
    ELSEWHERE,
    KEPT,
    Work,
    check_file,
    guarded,
    keep_here,
    let_go_here,
    rejudge_file,
    rejudge_kept,
)
from lint_rules.analysis.plan import Plan, plan_files
from lint_rules.analysis.records import Job, Outcome, Reported, content_digest
from lint_rules.cli.cpus import CpuSample, default_cpus
from lint_rules.cli.formats import shown_path
from lint_rules.settings import Settings

TYPE_CHECKING = False  # neither `typing` nor `findings` in a run where nothing passes
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "CpuSample",
    "Job",
    "Outcome",
    "Plan",
    "Reported",
    "Work",
    "check_file",
    "content_digest",
    "fix_file",
    "parse_files",
    "plan_files",
    "rejudge_file",
    "shown_path",
]

POOL_MIN_BYTES = 400_000
"""Below this many bytes to parse, a process pool costs more than it saves (2-core machine:
pool start-up and imports about 60 ms; parsing and analysis about 3 MB/s per core)."""


@guarded
def fix_file(
    job: Job, path: str, settings: Settings, source: Any = None, project: Any = None
) -> Outcome:
    """Fix one file: write it (mode ``write``), or only say what would change."""
    from lint_rules.fileio import SourceError, read_source, signals_held, write_source_atomic
    from lint_rules.fixing import FixError, fix_source

    source = source or read_source(path)
    try:
        result = fix_source(
            source.text, settings, job.disable_noqa, project, source.encoding, job.gates
        )
    except FixError as error:
        return Outcome(path, error=f"not fixed: {error}")
    notes = tuple(result.notes)
    new_text = result.text if job.mode == "stdout" else None
    remaining = tuple(sorted(f.code for f in result.remaining))
    unsafe = len(result.unsafe)
    added = tuple(result.added_imports)
    if not result.changed or result.text == source.text:
        return Outcome(
            path,
            notes=notes,
            new_text=new_text,
            remaining=remaining,
            unsafe=unsafe,
            added_imports=added,
        )
    from lint_rules.cli.fixcount import left_after

    remaining = left_after(result.text, settings, job.disable_noqa, project)
    diff = unified_diff(source.text, result.text, path) if job.mode == "diff" else ""
    fixed = len(result.applied)
    if job.mode == "write":
        with signals_held():  # the rename and its report line, or neither
            try:
                write_source_atomic(source, result.text)
            except SourceError as error:  # nothing written: every finding is still there
                codes = [f.code for f in (*result.applied, *result.remaining)]
                return Outcome(
                    path,
                    error=error.reason,
                    notes=notes,
                    remaining=tuple(sorted(codes)),
                    unsafe=unsafe,
                    added_imports=added,
                )
            if job.name_writes:  # one write per line: lines from workers never interleave
                sys.stderr.write(f"fixed {shown_path(path)} ({fixed_count(fixed)})\n")
                sys.stderr.flush()
    return Outcome(
        path,
        changed=True,
        fixed=fixed,
        notes=notes,
        diff=diff,
        new_text=new_text,
        remaining=remaining,
        unsafe=unsafe,
        added_imports=added,
    )


def fixed_count(number: int) -> str:
    return f"{number} finding{'' if number == 1 else 's'}"


def unified_diff(old: str, new: str, path: str) -> str:
    """A ``git apply``-able unified diff; newlines stay as in the file."""
    import difflib

    name = os.path.normpath(path)
    before, after = (name, name) if os.path.isabs(name) else (f"a/{name}", f"b/{name}")
    from lint_rules.findings import split_lines

    lines = difflib.unified_diff(split_lines(old), split_lines(new), fromfile=before, tofile=after)
    out = []
    for line in lines:
        out.append(line)
        if not line.endswith(("\n", "\r")):
            out.append("\n\\ No newline at end of file\n")
    return "".join(out)


def _worker_init(write: bool, parent: int) -> None:
    """Pool initializer: an interrupted ``fix`` leaves no temporary file behind, and a worker
    never outlives the run (Linux: it gets SIGTERM when its parent dies, even of SIGKILL)."""
    if write:
        from lint_rules.fileio import install_cleanup_handlers

        install_cleanup_handlers()
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    if os.getppid() != parent:  # the parent died before the prctl
        os._exit(1)


POOL_INTERRUPTED = False
"""A signal or an exception tore down a process pool of this run (``cli.console``)."""


@contextlib.contextmanager
def _reaped(pool: Any) -> Iterator[None]:
    """While the pool runs: SIGTERM, SIGHUP and SIGINT end its workers first, then do what
    they did before (the workers would otherwise stay blocked on the call queue, holding the
    run's stdout, or hang Ctrl-C in multiprocessing's exit join); so does any exception."""
    import signal
    import threading

    def reap() -> None:
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            with contextlib.suppress(Exception):
                process.terminate()  # SIGTERM: a writing worker finishes its rename first

    owner = os.getpid()
    previous: dict[int, Any] = {}

    def handler(signum: int, frame: Any) -> None:
        if os.getpid() == owner:
            global POOL_INTERRUPTED
            POOL_INTERRUPTED = True  # its workers are gone: nothing to join at exit
            reap()
        old = previous.get(signum, signal.SIG_DFL)
        if callable(old):
            old(signum, frame)
        elif old != signal.SIG_IGN:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    if threading.current_thread() is threading.main_thread():
        for name in ("SIGTERM", "SIGHUP", "SIGINT"):
            signum = getattr(signal, name, None)
            if signum is not None and signal.getsignal(signum) != signal.SIG_IGN:
                previous[signum] = signal.getsignal(signum)
                signal.signal(signum, handler)
    try:
        yield
    except BaseException:
        global POOL_INTERRUPTED
        POOL_INTERRUPTED = True  # the console script then exits without joining the pool
        reap()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def _task(work: Work, job: Job, item: tuple[Any, ...]) -> Outcome:
    """``item``: ``(path, settings)``, or ``(path, settings, project)``."""
    return work(job, item[0], item[1], None, *item[2:])


def _remote_task(work: Work, job: Job, item: tuple[Any, ...]) -> tuple[Outcome, bool]:
    """``_task`` in a worker, and whether the worker kept the file's analysis: a first
    analysis the run will judge again (``analysis.Project.keep``) stays in the worker
    (``filework.KEPT``), which judges it again when the run sends it back (``rejudge_kept``)."""
    path = item[0]
    if work is not rejudge_kept:
        let_go_here(path)  # judged in full again: what was kept of it is stale
    outcome = _task(work, job, item)
    if work is rejudge_kept:
        return outcome, path in KEPT
    return outcome, keep_here(path, item[2] if len(item) > 2 else None, outcome)


def _remote_tasks(
    work: Work, job: Job, items: Sequence[tuple[Any, ...]]
) -> list[tuple[Outcome, bool]]:
    """``_remote_task`` for each of a few small files sent together."""
    return [_remote_task(work, job, item) for item in items]


def pool_size(plan: Plan, jobs: int | None, cpus: int | None = None) -> int:
    """Workers for the parse pass (this process counts as one): ``--jobs`` when given, else
    the idle cores (``cpus``, or ``default_cpus`` over the first pass), and only when the
    bytes to parse are enough to pay for a pool."""
    if len(plan.to_parse) <= 1:
        return 1
    if jobs is not None:
        return max(1, min(jobs, len(plan.to_parse)))
    if plan.bytes_to_parse < POOL_MIN_BYTES:
        return 1
    if cpus is None:
        cpus = default_cpus(plan.started)
    return max(1, min(cpus, len(plan.to_parse)))


def run_plan(
    work: Work, job: Job, plan: Plan, workers: int, parse: Any = None
) -> Iterator[Outcome]:
    """Outcomes in the order of the files, each as soon as it and those before it are done."""
    parsed = (parse or parse_files)(work, job, plan.to_parse, workers)
    for outcome in plan.done:
        yield outcome if outcome is not None else next(parsed)


def parse_files(
    work: Work, job: Job, files: Sequence[tuple[Any, ...]], workers: int
) -> Iterator[Outcome]:
    """Each item's outcome, in order: in this process, or with a pool of ``workers`` (this
    process among them) that lives for this call only (``Pool``: one for a whole run)."""
    if workers <= 1 or len(files) <= 1:
        yield from map(functools.partial(_task, work, job), files)
        return
    with Pool(workers, min_bytes=0) as pool:
        yield from pool(work, job, files, workers)


PRELOAD = (
    "lint_rules.analysis.core",
    "lint_rules.analysis.collector",
    "lint_rules.analysis.objects",
    "lint_rules.analysis.project",
    "lint_rules.analysis.reported",
    "lint_rules.analysis.runfacts",
    "lint_rules.analysis.runindex",
    "lint_rules.cli.fixcount",
    "lint_rules.fileio",
    "lint_rules.noqa",
)
"""What a worker needs to judge a file, imported before the workers fork: once, in this
process, not by every worker (a worker then pays from a few hundred KB of source)."""


SWITCH_INTERVAL = 0.0005
"""While the pool runs, the longest this process's analysis holds the interpreter when the
pool's threads (``concurrent.futures``: they pass files to the workers and take their outcomes
back) wait for it: at Python's 5 ms, a worker judging small files waited for those threads
between its files, and judged half as many files as this process."""

AHEAD = 4
"""Tasks queued for each worker at least (those it has not begun are taken back at the end)."""

CHUNK_BYTES = 32_000
"""Small files go to a worker together, up to this many bytes in one task: each task costs
this process's threads and the worker about as much as judging a few KB of source."""
CHUNK_FILES = 8
"""Files in one task at most: a task queued for a worker can be taken back only whole."""


class Pool:
    """The worker processes of one run: started by fork on the first parse that has two
    files or more for them, after the analysis core is imported, and kept for every later
    parse of the run (the cross-file run parses in several passes); ended with the run.

    ``workers`` counts this process: it judges files too (so on two cores one worker is
    forked), and a first analysis it keeps can be judged again without being redone
    (``analysis.run``). Files are dealt largest first, so that the last to finish are small:
    this process takes the largest file left, after handing each worker the next ones (``AHEAD``
    tasks, small files together (``CHUNK_BYTES``), or twice the bytes of its own file if that is
    more); outcomes come back in the order
    of the files; with no file left to deal, this process takes back the files still queued
    for a busy worker rather than wait. A worker returns only the ``Outcome``."""

    def __init__(self, workers: int, write: bool = False, min_bytes: int = POOL_MIN_BYTES) -> None:
        self.workers = max(1, workers)
        self.write = write
        self.min_bytes = min_bytes
        """The bytes of one parse below which no worker is forked for it (0 with ``--jobs``:
        always); once forked, the workers serve every later parse of the run."""
        self._executor: Any = None
        self._reaping: Any = None
        self._interval: float | None = None

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        """Join the workers; after an exception (Ctrl-C, a signal, a generator closed
        early), end them without joining (``_reaped``, ``POOL_INTERRUPTED``)."""
        if self._executor is None:
            return
        executor, reaping = self._executor, self._reaping
        self._executor = self._reaping = None
        if self._interval is not None:
            sys.setswitchinterval(self._interval)
            self._interval = None
        if kind is None:
            try:
                executor.shutdown(wait=True)
            except BaseException as failure:
                reaping.__exit__(type(failure), failure, failure.__traceback__)
                raise
        reaping.__exit__(kind, error, trace)

    def _start(self, write: bool) -> Any:
        if self._executor is None:
            import importlib
            from concurrent.futures import ProcessPoolExecutor

            for name in PRELOAD:
                importlib.import_module(name)
            init = functools.partial(_worker_init, write or self.write, os.getpid())
            executor = ProcessPoolExecutor(max_workers=self.workers - 1, initializer=init)
            reaping = _reaped(executor)
            reaping.__enter__()
            self._executor, self._reaping = executor, reaping
            self._interval = sys.getswitchinterval()
            sys.setswitchinterval(min(self._interval, SWITCH_INTERVAL))
        return self._executor

    def __call__(
        self, work: Work, job: Job, items: Sequence[tuple[Any, ...]], workers: int
    ) -> Iterator[Outcome]:
        """Each item's outcome, in order (``analysis.run.Parse``)."""
        task = functools.partial(_task, work, job)
        if work is rejudge_kept and self._executor is not None:
            yield from self._kept_elsewhere(job, items)  # where their analyses are
            return
        helpers = min(workers, self.workers) - 1
        sizes = [_size(item[0]) for item in items] if helpers >= 1 else []
        if len(sizes) <= 1 or (self._executor is None and sum(sizes) < self.min_bytes):
            yield from map(task, items)
            return
        from concurrent.futures import FIRST_COMPLETED, wait

        executor = self._start(job.mode == "write")
        remote = functools.partial(_remote_tasks, work, job)

        def received(future: Any) -> None:
            """A worker's outcomes; the run's view of a file learns that the worker kept its
            analysis (``filework.ELSEWHERE``)."""
            for at, (outcome, kept) in zip(running.pop(future), future.result()):
                results[at] = outcome
                if kept:
                    items[at][2].kept = ELSEWHERE

        order = sorted(range(len(items)), key=lambda n: -sizes[n])
        results: dict[int, Outcome] = {}
        running: dict[Any, list[int]] = {}
        dealt = given = 0

        def deal(ahead: int) -> None:
            """Keep each worker ``AHEAD`` tasks ahead, and twice the bytes this process is
            about to judge (``ahead``), so that no worker waits for this process to deal
            again (a worker's outcome reaches this process only between its own files). Small
            files go together (``CHUNK_BYTES``), but the last ones one by one."""
            nonlocal dealt
            while dealt < len(order) and (
                len(running) < AHEAD * helpers
                or sum(sizes[at] for chunk in running.values() for at in chunk)
                < 2 * helpers * ahead
            ):
                chunk, size = [order[dealt]], sizes[order[dealt]]
                dealt += 1
                while (
                    len(order) - dealt > 2 * AHEAD * helpers
                    and size + sizes[order[dealt]] <= CHUNK_BYTES
                    and len(chunk) < CHUNK_FILES
                ):
                    chunk.append(order[dealt])
                    size += sizes[order[dealt]]
                    dealt += 1
                running[executor.submit(remote, [items[at] for at in chunk])] = chunk

        while given < len(items):
            for future in [f for f in running if f.done()]:
                received(future)
            while given in results:
                yield results.pop(given)
                given += 1
            if given == len(items):
                break
            if dealt < len(order):  # this process takes the largest file left, the workers
                mine = order[dealt]  # the next ones
                dealt += 1
                deal(sizes[mine])
                results[mine] = task(items[mine])
            elif len(running) > helpers and job.mode != "write":
                # nothing left to deal: files still queued for a busy worker (the last
                # dealt) are judged here, not waited for; a worker that reaches them judges
                # them for nothing (never a file that is written)
                future = next(reversed(running))
                future.cancel()
                for at in running.pop(future):
                    results[at] = task(items[at])
            else:
                wait(list(running), return_when=FIRST_COMPLETED)

    def _kept_elsewhere(self, job: Job, items: Sequence[tuple[Any, ...]]) -> Iterator[Outcome]:
        """Files whose first analysis a worker kept, judged again by the workers (the one that
        kept a file judges it again; another analyses it in full): never here, where it would
        be analysed in full. Outcomes in order."""
        remote = functools.partial(_remote_task, rejudge_kept, job)
        futures = [self._executor.submit(remote, item) for item in items]
        for item, future in zip(items, futures):
            outcome, kept = future.result()
            if kept:
                item[2].kept = ELSEWHERE
            yield outcome


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except (OSError, ValueError, TypeError):
        return 0
