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

POOL_MIN_BYTES = 100_000
"""Below this many bytes to parse beside the largest file, a process pool costs more than it
saves (2-core machine, ``benchmarks/pool_breakeven.py``: a forked pool of two pays from about
60 KB of small generated files, by 9% at 109 KB, 14% at 221 KB; nemo_toolkit parses two files
of 75 KB and 44 KB first, and a pool there was 3% slower than none)."""


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
    they did before (the workers would otherwise stay blocked on their task pipes, holding the
    run's stdout); so does any exception. ``pool.terminate()`` ends the workers."""
    import signal
    import threading

    owner = os.getpid()
    previous: dict[int, Any] = {}

    def handler(signum: int, frame: Any) -> None:
        if os.getpid() == owner:
            global POOL_INTERRUPTED
            POOL_INTERRUPTED = True  # its workers are gone: nothing to join at exit
            pool.terminate()
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
        pool.terminate()
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


def pool_size(plan: Plan, jobs: int | None, cpus: int | None = None) -> int:
    """Workers for the parse pass (this process counts as one): ``--jobs`` when given, else
    the idle cores (``cpus``, or ``default_cpus`` over the first pass), and only when the
    bytes to parse beside the largest file (which one process judges whole) are enough to pay
    for a pool."""
    if len(plan.to_parse) <= 1:
        return 1
    if jobs is not None:
        return max(1, min(jobs, len(plan.to_parse)))
    if plan.bytes_to_parse < POOL_MIN_BYTES:
        return 1
    largest = max(_size(path) for path, *_ in plan.to_parse)
    if plan.bytes_to_parse - largest < POOL_MIN_BYTES:
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


class Pool:
    """The worker processes of one run: forked on the first parse that has two files or more
    for them, after the analysis core is imported, and kept for every later parse of the run
    (the cross-file run parses in several passes); ended with the run.

    ``workers`` counts this process: it judges files too (so on two cores one worker is
    forked), and a first analysis it keeps can be judged again without being redone
    (``analysis.run``). Every process of the pool draws the files of a parse from one queue,
    largest first (``cli.workers``): this process takes the largest, the others the next ones,
    and each the largest left whenever it is free, so that the last to finish are small, no
    process waits for a file another has not begun, and no file is judged twice. Outcomes come
    back in the order of the files. A worker returns only the ``Outcome``."""

    def __init__(self, workers: int, write: bool = False, min_bytes: int = POOL_MIN_BYTES) -> None:
        self.workers = max(1, workers)
        self.write = write
        self.min_bytes = min_bytes
        """The bytes of one parse below which no worker is forked for it (0 with ``--jobs``:
        always); once forked, the workers serve every later parse of the run."""
        self._workers: list[Any] | None = None
        self._tickets: tuple[int, int] | None = None
        self._reaping: Any = None
        self._calls = 0
        self._keeper: dict[str, int] = {}
        """Which worker kept the first analysis of a file (``filework.KEPT``), by path."""

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        """Join the workers; after an exception (Ctrl-C, a signal, a generator closed
        early), end them without joining (``_reaped``, ``POOL_INTERRUPTED``)."""
        if self._workers is None:
            return
        workers, reaping = self._workers, self._reaping
        self._reaping = None
        if kind is None:
            for worker in workers:
                worker.close()  # its task pipe ends: the worker ends
            for worker in workers:
                with contextlib.suppress(OSError):
                    os.waitpid(worker.pid, 0)
        try:
            reaping.__exit__(kind, error, trace)
        finally:
            self._close()

    def terminate(self) -> None:
        """End the workers now (SIGTERM: a writing worker finishes its rename first)."""
        import signal

        for worker in self._workers or ():
            with contextlib.suppress(OSError):
                os.kill(worker.pid, signal.SIGTERM)

    def _close(self) -> None:
        import gc

        for worker in self._workers or ():
            worker.close()
        for fd in self._tickets or ():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._workers = None
        self._tickets = None
        gc.unfreeze()

    def pids(self) -> list[int]:
        """The workers' process ids (none before the first parse that forks them)."""
        return [worker.pid for worker in self._workers or ()]

    def _start(self, write: bool) -> list[Any]:
        if self._workers is None:
            import gc
            import importlib

            import lint_rules.cli.workers as workers

            for name in PRELOAD:
                importlib.import_module(name)
            init = functools.partial(_worker_init, write or self.write, os.getpid())
            self._tickets = workers.pipe()
            os.set_blocking(self._tickets[0], False)
            # What is alive now is shared with the workers: the collector leaves it alone, so
            # that neither process copies its pages only to mark them (unfrozen at the end).
            gc.freeze()
            try:
                self._workers = workers.fork_workers(
                    self.workers - 1, self._tickets, init, _remote_task
                )
            except BaseException:  # Ctrl-C: nothing held past the run
                self._workers = []
                self._close()
                raise
            reaping = _reaped(self)
            reaping.__enter__()
            self._reaping = reaping
        return self._workers

    def __call__(
        self, work: Work, job: Job, items: Sequence[tuple[Any, ...]], workers: int
    ) -> Iterator[Outcome]:
        """Each item's outcome, in order (``analysis.run.Parse``)."""
        task = functools.partial(_task, work, job)
        if work is rejudge_kept and self._workers:  # (none: every fork was refused)
            yield from self._serve(job, work, items, self._workers, kept=True)
            return
        helpers = min(workers, self.workers) - 1 if hasattr(os, "fork") else 0  # not Windows
        sizes = [_size(item[0]) for item in items] if helpers >= 1 else []
        if len(sizes) <= 1 or (self._workers is None and sum(sizes) - max(sizes) < self.min_bytes):
            yield from map(task, items)
            return
        chosen = self._start(job.mode == "write")[:helpers]
        from lint_rules.cli.workers import TICKET, capacity

        assert self._tickets is not None
        most = max(2, capacity(self._tickets[1]) // TICKET.size)
        for at in range(0, len(items), most):  # a pipe's worth of tickets at a time
            part = items[at : at + most]
            yield from self._serve(job, work, part, chosen, sizes=sizes[at : at + most])

    def _serve(
        self,
        job: Job,
        work: Work,
        items: Sequence[tuple[Any, ...]],
        chosen: list[Any],
        sizes: list[int] | None = None,
        kept: bool = False,
    ) -> Iterator[Outcome]:
        """One call: with ``sizes``, every process draws the items from one queue, largest
        first, this process the largest; with ``kept``, each item whose first analysis a
        worker kept goes to that worker, the others to the first worker (never here, where it
        would be analysed in full)."""
        import lint_rules.cli.workers as pipes

        self._calls += 1
        call = self._calls
        assert self._tickets is not None
        results: dict[int, Outcome] = {}
        mine: list[int] = []
        if kept:
            given: dict[int, list[int]] = {n: [] for n in range(len(chosen))}
            for place, item in enumerate(items):
                keeper = self._keeper.get(item[0], 0)
                given[keeper if keeper < len(chosen) else 0].append(place)
            busy = []
            for n, places in given.items():
                if places and chosen[n].alive and chosen[n].give((call, work, job, items, places)):
                    busy.append(chosen[n])
                else:
                    mine.extend(places)
        else:
            assert sizes is not None
            order = sorted(range(len(items)), key=lambda n: -sizes[n])
            busy = [worker for worker in chosen if worker.alive]
            if busy:
                tickets = b"".join(pipes.TICKET.pack(n) for n in order[1:])
                pipes.write_all(self._tickets[1], tickets)  # before the call: none is missed
                busy = [w for w in busy if w.give((call, work, job, items, None))]
                if not busy:  # none could take the call: its tickets are this process's
                    pipes.drain(self._tickets[0])
            mine = order[:1] if busy else order
        waiting = {worker.pid for worker in busy}
        try:
            yield from self._collect(call, work, job, items, results, mine, busy, waiting)
        except GeneratorExit:  # closed early: the call ends before the next one begins
            if self._tickets is not None and (waiting or len(results) < len(items)):
                pipes.drain(self._tickets[0])
                while waiting:
                    self._gather(call, items, results, busy, waiting, block=True)
            raise

    def _collect(
        self,
        call: int,
        work: Work,
        job: Job,
        items: Sequence[tuple[Any, ...]],
        results: dict[int, Outcome],
        mine: list[int],
        busy: list[Any],
        waiting: set[int],
    ) -> Iterator[Outcome]:
        import lint_rules.cli.workers as pipes

        task = functools.partial(_task, work, job)
        given = 0
        drawing = bool(busy) and work is not rejudge_kept
        mine.reverse()  # taken from the end: the first first
        assert self._tickets is not None
        while given < len(items):
            place: int | None
            if mine:
                place = mine.pop()
            elif drawing:
                place = pipes.draw(self._tickets[0])
                drawing = place is not None
            else:
                place = None
            if place is not None:
                results[place] = task(items[place])
            self._gather(call, items, results, busy, waiting, block=place is None)
            if place is None and not waiting:  # every worker done: what none sent back
                for at in range(len(items)):  # (a worker that died) is judged here
                    if at not in results:
                        results[at] = task(items[at])
            while len(results) == len(items) and waiting:  # the call ends with its outcomes
                self._gather(call, items, results, busy, waiting, block=True)
            while given in results:
                yield results[given]
                given += 1

    def _gather(
        self,
        call: int,
        items: Sequence[tuple[Any, ...]],
        results: dict[int, Outcome],
        busy: list[Any],
        waiting: set[int],
        block: bool,
    ) -> None:
        """The outcomes the workers sent so far (``block``: at least one message, unless every
        worker is done with the call); a worker whose pipe ended is done."""
        while True:
            got = False
            for worker in busy:
                if worker.pid not in waiting:
                    continue
                for message in worker.inbox.read():
                    sent, place, result = message
                    if sent != call:
                        continue
                    got = True
                    if place < 0:
                        waiting.discard(worker.pid)
                        continue
                    outcome, kept = result
                    results[place] = outcome
                    path = items[place][0]
                    if kept:
                        items[place][2].kept = ELSEWHERE
                        self._keeper[path] = worker.index
                    else:
                        self._keeper.pop(path, None)
                if worker.inbox.closed and worker.pid in waiting:
                    worker.alive = False
                    waiting.discard(worker.pid)
                    got = True
            if not block or got or not waiting:
                return
            import select

            fds = [w.inbox.fd for w in busy if w.pid in waiting]
            if hasattr(select, "poll"):  # any descriptor (select: below FD_SETSIZE only)
                poller = select.poll()
                for fd in fds:
                    poller.register(fd, select.POLLIN)
                poller.poll()
            else:  # pragma: no cover - no poll
                select.select(fds, [], [])


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except (OSError, ValueError, TypeError):
        return 0
