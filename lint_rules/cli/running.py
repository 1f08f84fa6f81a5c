"""Per-file work (check, fix): read, prefilter, cache, then parse in order, in a pool if it pays.

The run has two passes. The first reads every file in the main process and applies the core's
byte prefilter (``analysis.mentions_flag``): a file that never spells the flag is done without
being parsed, and a file whose result is in the cache (``cli.cache``) is done too. Only the rest
is parsed, in worker processes when ``--jobs`` allows it and the bytes to parse are enough to
pay for a pool (``POOL_MIN_BYTES``, measured in benchmarks/README.md), else in this process.
Outcomes come back in the order of the files, whatever the number of jobs, one by one as they
finish, so the text format streams. Each worker returns plain picklable data (``Outcome``);
libcst is imported only by ``fixing`` (guard strategy), flake8 never.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable

try:  # the module behind hashlib.blake2b, without loading OpenSSL (a few ms at start-up)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - other Pythons
    from hashlib import blake2b

from lint_rules.cli.cpus import CpuSample, default_cpus
from lint_rules.findings import split_lines
from lint_rules.settings import Settings

POOL_MIN_BYTES = 400_000
"""Below this many bytes to parse, a process pool costs more than it saves (2-core machine:
pool start-up and imports about 60 ms; parsing and analysis about 3 MB/s per core)."""


@dataclass(frozen=True)
class Reported:
    """A finding as printed: flake8 columns (UTF-8 bytes, 1-based) and character columns.

    ``fingerprint`` identifies the finding by its code and the text of its line (and which
    occurrence of that text it is), not by its line number, so that it survives edits above it.
    ``applicability`` is the fix's (``"safe"``/``"unsafe"``), or None without a fix.
    """

    path: str
    code: str
    message: str
    line: int
    column: int
    end_line: int
    end_column: int
    char_column: int
    end_char_column: int
    fixable: bool
    applicability: str | None = None
    fingerprint: str = ""
    verdict: str = ""
    """The flag's lifecycle verdict (``stale``, ``conditional``, ``unverified``, ...)."""
    evidence: tuple[tuple[str, int, int, str], ...] = ()
    """The flag's life, in reading order: ``(path, line, column, message)`` per step, the path
    always filled (the finding's own file when the step is there), line 0 for a remark with no
    place; columns 1-based characters in the finding's own file, else 1-based UTF-8 bytes."""
    fix_message: str = ""
    """What the fix does (its note, else a generic line); "" without a fix."""
    edits: tuple[tuple[int, int, int, int, str], ...] = ()
    """The fix's edits: ``(line, column, end_line, end_column, content)``, 1-based characters."""


@dataclass(frozen=True)
class Outcome:
    """What processing one file gave; built in a worker process, so plain picklable data.

    ``error_line``/``error_column`` locate a syntax error (1-based characters) when known.
    ``digest`` is the cache key of the content read (empty when nothing was parsed).
    """

    path: str
    findings: tuple[Reported, ...] = ()
    error: str | None = None
    changed: bool = False
    fixed: int = 0
    notes: tuple[str, ...] = ()
    diff: str = ""
    new_text: str | None = None
    error_line: int | None = None
    error_column: int | None = None
    digest: str = ""
    cacheable: bool = False
    remaining: tuple[str, ...] = ()
    """``fix``: the codes of the findings left in the file (one entry per finding)."""
    unsafe: int = 0
    """``fix``: how many of those have an unsafe fix that was not asked for."""
    added_imports: tuple[str, ...] = ()
    """``fix``: the dotted guards whose import the fix added."""
    exports: tuple[tuple[str, Any], ...] = ()
    """Checked with the other files of the run (``cli.crossfile``): its TE subclasses and
    factories, ``(name, analysis.Export)``."""
    names: tuple[str, ...] = ()
    """The project names its analysis looked up (what its findings may depend on)."""
    used: str = ""
    """A digest of the index entries those names reached ("": none, as without an index)."""
    package: str | None = None
    """The package its relative imports were resolved in."""
    indexed: bool = False
    """Analysed as a file of a run over several files (``exports`` and ``names`` are known)."""
    facts: Any = None
    """Its lifecycle facts for the other files of the run (``analysis.facts.FileFacts``)."""
    keys: tuple[str, ...] = ()
    """The state keys its verdicts read from the run, and the functions of the file that
    re-arm them (``fn:<name>``): what its findings depend on in the other files."""


@dataclass(frozen=True)
class Job:
    """Everything a worker needs besides the path and its settings (pickled once per chunk)."""

    disable_noqa: bool = False
    mode: str = "check"  # check | write | diff | verify (fix --check without --diff) | stdout
    name_writes: bool = False
    """``write``: the process that renames a fixed file into place says ``fixed PATH (N
    findings)`` on stderr before a Ctrl-C held back during the rename is let through."""


NOT_IN_CACHE_KEY = frozenset(
    {
        "select",
        "extend_select",
        "ignore",
        "extend_ignore",
        "enabled",
        "sources",
        "exclude",
        "extend_exclude",
        "config_file",
    }
)
"""Settings that never change a file's findings (``select``/``ignore`` filter them later)."""


def content_digest(settings: Settings, disable_noqa: bool, raw: bytes) -> str:
    """Cache key: the file's bytes and every setting that can change its findings."""
    from dataclasses import fields

    digest = blake2b(raw, digest_size=20)
    values = [
        (f.name, getattr(settings, f.name))
        for f in fields(settings)
        if f.name not in NOT_IN_CACHE_KEY
    ]
    digest.update(repr((values, disable_noqa)).encode("utf-8", "backslashreplace"))
    return digest.hexdigest()


def _syntax_outcome(path: str, error: SyntaxError, digest: str = "") -> Outcome:
    where = f" (line {error.lineno}, column {error.offset})" if error.lineno else ""
    return Outcome(
        path,
        error=f"cannot parse: {error.msg}{where}",
        error_line=error.lineno or None,
        error_column=error.offset or None,
        digest=digest,
        cacheable=bool(digest),
    )


Work = Callable[..., Outcome]
"""``work(job, path, settings, source=None, project=None)``."""


def _guarded(work: Work) -> Work:
    """Turn any failure on one file into that file's error, so that the run goes on."""

    @functools.wraps(work)
    def run(
        job: Job, path: str, settings: Settings, source: Any = None, project: Any = None
    ) -> Outcome:
        from lint_rules.fileio import SourceError

        try:
            return work(job, path, settings, source, project)
        except SourceError as error:
            return Outcome(path, error=error.reason)
        except SyntaxError as error:
            return _syntax_outcome(path, error)
        except Exception as error:  # a core bug on one file must not hide the others
            kind = type(error).__name__
            return Outcome(path, error=f"internal error: {kind}: {error} (please report this)")

    return run


@_guarded
def check_file(
    job: Job, path: str, settings: Settings, source: Any = None, project: Any = None
) -> Outcome:
    """Findings for one file, ``# noqa`` applied (``source``: already read, or None;
    ``project``: the other files of the run, ``analysis.Project``, or None)."""
    from lint_rules.analysis import analyze_source
    from lint_rules.fileio import read_source

    source = source or read_source(path)
    try:
        findings = analyze_source(source.text, settings, project=project)
    except SyntaxError as error:
        return _syntax_outcome(path, error, content_digest(settings, job.disable_noqa, source.raw))
    if project is not None and project.kept is not None:
        project.source = source  # to be judged again (``crossfile.rejudged``)
    return checked(job, path, settings, source, findings, project)


@_guarded
def rejudge_file(
    job: Job, path: str, settings: Settings, source: Any = None, project: Any = None
) -> Outcome:
    """``check_file`` again, for a file whose first analysis the run kept (``project.kept``)
    now that the run's lifecycle facts are known (``project.lifecycle``): its calls are
    judged again; nothing is read, parsed, walked or resolved again."""
    from lint_rules.analysis import rejudge

    findings = rejudge(project)
    return checked(job, path, settings, project.source, findings, project)


def checked(
    job: Job, path: str, settings: Settings, source: Any, findings: Any, project: Any
) -> Outcome:
    """A file's outcome from its findings: ``# noqa`` applied, and what it tells the run."""
    from lint_rules.noqa import filter_noqa

    digest = content_digest(settings, job.disable_noqa, source.raw)
    if findings:
        findings, _ = filter_noqa(findings, source.text, job.disable_noqa)
        from lint_rules.cli.fixcount import only_applicable_fixes

        findings = only_applicable_fixes(source.text, findings, job.disable_noqa)
    from lint_rules.cli.reporting import reported_findings

    reported = reported_findings(path, source.text, findings)
    found = {}
    if project is not None:
        from lint_rules.cli.crossfile import found_in

        found = found_in(project)
    return Outcome(path, findings=reported, digest=digest, cacheable=True, **found)


@_guarded
def fix_file(
    job: Job, path: str, settings: Settings, source: Any = None, project: Any = None
) -> Outcome:
    """Fix one file: write it (mode ``write``), or only say what would change."""
    from lint_rules.fileio import SourceError, read_source, signals_held, write_source_atomic
    from lint_rules.fixing import FixError, fix_source

    source = source or read_source(path)
    try:
        result = fix_source(
            source.text, settings, job.disable_noqa, project, encoding=source.encoding
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


def shown_path(path: str) -> str:
    """``path`` as printed: control characters (a newline, an escape) escaped, so that a
    report line stays one line and the terminal is not driven by a file name."""
    if not any(ord(c) < 32 or ord(c) == 127 for c in path):
        return path
    return "".join(
        c.encode("unicode_escape").decode("ascii") if ord(c) < 32 or ord(c) == 127 else c
        for c in path
    )


def fixed_count(number: int) -> str:
    return f"{number} finding{'' if number == 1 else 's'}"


def unified_diff(old: str, new: str, path: str) -> str:
    """A ``git apply``-able unified diff; newlines stay as in the file."""
    import difflib

    name = os.path.normpath(path)
    before, after = (name, name) if os.path.isabs(name) else (f"a/{name}", f"b/{name}")
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
        for process in list(getattr(pool, "_processes", {}).values()):
            with contextlib.suppress(Exception):
                process.terminate()  # SIGTERM: a writing worker finishes its rename first

    owner = os.getpid()
    previous: dict[int, Any] = {}

    def handler(signum: int, frame: Any) -> None:
        if os.getpid() == owner:
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


@dataclass
class Plan:
    """The first pass: each file either done (an Outcome) or to parse (None)."""

    files: list[str]
    done: list[Outcome | None]
    to_parse: list[tuple[str, Settings]]
    bytes_to_parse: int
    passed: list[tuple[int, Settings]] = field(default_factory=list)
    """Every file that passed the prefilter (parsed now or found in the cache): its place."""
    deferred: list[tuple[int, Settings]] = field(default_factory=list)
    """Packages' ``__init__.py`` that fail the prefilter but import, and share no lifecycle
    fact (a run over several files): read for the index only if a file of the run imports
    from them (``cli.crossfile``)."""
    te_importers: set[int] = field(default_factory=set)
    """The places of the files to parse whose text imports TE (``cli.crossfile`` analyses
    them first)."""
    started: CpuSample | None = None
    """The machine's CPU time when the first pass began (``default_cpus``)."""


def plan_files(
    job: Job,
    files: Sequence[str],
    settings_of: Callable[[str], Settings],
    cache: Any = None,
    on_done: Callable[[], None] | None = None,
    crossfile: bool = False,
) -> Plan:
    """Read every file, apply the prefilter and the cache; what remains must be parsed.

    ``on_done`` is called for each file finished here (the progress bar counts it). A cached
    result that used the index of a run over several files serves only such a run
    (``crossfile``), which checks that the index still answers the same (``cli.crossfile``)."""
    started = CpuSample.now()
    if not files:  # nothing to read: neither the prefilter nor the reader is imported
        return Plan([], [], [], 0, started=started)
    from lint_rules.analysis import mentions_flag
    from lint_rules.analysis.prefilter import imports_te, mentions_state
    from lint_rules.fileio import SourceError, read_source

    done: list[Outcome | None] = []
    to_parse: list[tuple[str, Settings]] = []
    passed: list[tuple[int, Settings]] = []
    deferred: list[tuple[int, Settings]] = []
    te_importers: set[int] = set()
    size = 0
    for path in files:
        outcome = None
        try:
            source = read_source(path)
        except SourceError as error:
            outcome = Outcome(path, error=error.reason)
        else:
            text = source.text
            relevant = mentions_flag(text)
            if not relevant and not (crossfile and _may_reexport(path, text)):
                outcome = Outcome(path, new_text=source.text if job.mode == "stdout" else None)
            else:
                settings = settings_of(path)
                if cache is not None and job.mode == "check":
                    digest = content_digest(settings, job.disable_noqa, source.raw)
                    outcome = cache.get(digest, path)
                    if outcome is not None and outcome.error is None:
                        usable = outcome.indexed if crossfile else not outcome.used
                        if not usable:  # analysed alone, or it used the other files
                            outcome = None
                if outcome is None and not relevant and not mentions_state(text):
                    deferred.append((len(done), settings))
                else:
                    passed.append((len(done), settings))
                if outcome is None and relevant:
                    to_parse.append((path, settings))
                    size += len(source.raw)
                    if crossfile and imports_te(text):
                        te_importers.add(len(done))
        done.append(outcome)
        if outcome is not None and on_done is not None:
            on_done()
    return Plan(list(files), done, to_parse, size, passed, deferred, te_importers, started)


def _may_reexport(path: str, text: str) -> bool:
    """A package's ``__init__.py`` that imports: in a run over several files it is analysed
    too, so that what it re-exports from the run's modules (``from .layers import MyLinear``)
    resolves where it is imported from the package."""
    return os.path.basename(path) == "__init__.py" and "import" in text


def pool_size(plan: Plan, jobs: int | None, cpus: int | None = None) -> int:
    """Workers for the parse pass: ``--jobs`` when given, else the idle cores (``cpus``, or
    ``default_cpus`` over the first pass), and only when the bytes to parse are enough to pay
    for a pool. With a pool, the analysis core is imported here, before the workers fork: once,
    not by every worker of every pool the run starts."""
    if len(plan.to_parse) <= 1:
        return 1
    if jobs is not None:
        workers = min(jobs, len(plan.to_parse))
    elif plan.bytes_to_parse < POOL_MIN_BYTES:
        return 1
    else:
        if cpus is None:
            cpus = default_cpus(plan.started)
        workers = max(1, min(cpus, len(plan.to_parse)))
    if workers > 1:
        import lint_rules.analysis.core  # noqa: F401
    return workers


def run_plan(work: Work, job: Job, plan: Plan, workers: int) -> Iterator[Outcome]:
    """Outcomes in the order of the files, each as soon as it and those before it are done."""
    parsed = _parse(work, job, plan.to_parse, workers)
    for outcome in plan.done:
        yield outcome if outcome is not None else next(parsed)


def _parse(
    work: Work, job: Job, files: Sequence[tuple[Any, ...]], workers: int
) -> Iterator[Outcome]:
    task = functools.partial(_task, work, job)
    if workers <= 1:
        yield from map(task, files)
        return
    from concurrent.futures import ProcessPoolExecutor

    chunksize = max(1, min(16, len(files) // (workers * 8)))
    init = functools.partial(_worker_init, job.mode == "write", os.getpid())
    with ProcessPoolExecutor(max_workers=workers, initializer=init) as pool, _reaped(pool):
        yield from pool.map(task, files, chunksize=chunksize)
