"""Per-file work (check, fix) run in order, in worker processes when asked, with progress.

Each worker returns plain picklable data (``Outcome``); the core is imported only when a file
is processed, libcst only by ``fixing`` (guard strategy), flake8 never.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Callable, TextIO, TypeVar

from lint_rules.findings import char_column, split_lines
from lint_rules.settings import ConfigResolver

T = TypeVar("T")


@dataclass(frozen=True)
class Reported:
    """A finding as printed: flake8 columns (UTF-8 bytes, 1-based) and character columns."""

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


@dataclass(frozen=True)
class Outcome:
    """What processing one file gave; built in a worker process, so plain picklable data."""

    path: str
    findings: tuple[Reported, ...] = ()
    error: str | None = None
    changed: bool = False
    fixed: int = 0
    notes: tuple[str, ...] = ()
    diff: str = ""


@dataclass(frozen=True)
class Job:
    """Everything a worker needs besides the path (pickled once per chunk of files)."""

    resolver: ConfigResolver
    """Gives each file its settings (``settings_for(path)``); picklable, cached per directory."""
    disable_noqa: bool = False
    mode: str = "check"  # check | write | diff | verify (fix --check without --diff)


def _char_columns(text: str) -> Callable[[int, int], int]:
    """Map (line, UTF-8 byte column) to a character column; lines are split only when asked."""
    lines: list[str] = []

    def convert(line: int, col: int) -> int:
        if not lines:
            lines.extend(split_lines(text))
        if not 1 <= line <= len(lines):
            return col
        return char_column(lines[line - 1], col)

    return convert


def _reported(path: str, text: str, findings: Iterable[Any]) -> tuple[Reported, ...]:
    chars = _char_columns(text)
    ordered = sorted(findings, key=lambda f: f.sort_key)
    return tuple(
        Reported(
            path=path,
            code=f.code,
            message=f.message,
            line=f.line,
            column=f.col + 1,
            end_line=f.end_line,
            end_column=f.end_col + 1,
            char_column=chars(f.line, f.col) + 1,
            end_char_column=chars(f.end_line, f.end_col) + 1,
            fixable=f.fix is not None,
        )
        for f in ordered
    )


def _syntax_reason(error: SyntaxError) -> str:
    where = f" (line {error.lineno}, column {error.offset})" if error.lineno else ""
    return f"cannot parse: {error.msg}{where}"


def _guarded(work: Callable[[Job, str], Outcome]) -> Callable[[Job, str], Outcome]:
    """Turn any failure on one file into that file's error, so that the run goes on."""

    @functools.wraps(work)
    def run(job: Job, path: str) -> Outcome:
        from lint_rules.fileio import SourceError

        try:
            return work(job, path)
        except SourceError as error:
            return Outcome(path, error=error.reason)
        except SyntaxError as error:
            return Outcome(path, error=_syntax_reason(error))
        except Exception as error:  # a core bug on one file must not hide the others
            kind = type(error).__name__
            return Outcome(path, error=f"internal error: {kind}: {error} (please report this)")

    return run


@_guarded
def check_file(job: Job, path: str) -> Outcome:
    """Findings for one file, ``# noqa`` applied."""
    from lint_rules.analysis import analyze_source
    from lint_rules.fileio import read_source
    from lint_rules.noqa import filter_noqa

    source = read_source(path)
    findings = analyze_source(source.text, job.resolver.settings_for(path))
    if findings:
        findings, _ = filter_noqa(findings, source.text, job.disable_noqa)
    return Outcome(path, findings=_reported(path, source.text, findings))


@_guarded
def fix_file(job: Job, path: str) -> Outcome:
    """Fix one file: write it (mode ``write``), or only say what would change."""
    from lint_rules.fileio import read_source, write_source_atomic
    from lint_rules.fixing import FixError, fix_source

    source = read_source(path)
    try:
        settings = job.resolver.settings_for(path)
        result = fix_source(source.text, settings, disable_noqa=job.disable_noqa)
    except FixError as error:
        return Outcome(path, error=f"not fixed: {error}")
    notes = tuple(result.notes)
    if not result.changed or result.text == source.text:
        return Outcome(path, notes=notes)
    diff = unified_diff(source.text, result.text, path) if job.mode == "diff" else ""
    if job.mode == "write":
        write_source_atomic(source, result.text)
    return Outcome(path, changed=True, fixed=len(result.applied), notes=notes, diff=diff)


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


def _worker_init() -> None:
    """Pool initializer: an interrupted ``fix`` leaves no temporary file behind."""
    from lint_rules.fileio import install_cleanup_handlers

    install_cleanup_handlers()


def run_files(
    work: Callable[[Job, str], Outcome], job: Job, files: Sequence[str], jobs: int
) -> Iterator[Outcome]:
    """Outcomes in the order of ``files``, whatever ``jobs`` is."""
    task = functools.partial(work, job)
    if jobs <= 1 or len(files) <= 1:
        yield from map(task, files)
        return
    from concurrent.futures import ProcessPoolExecutor

    workers = min(jobs, len(files))
    chunksize = max(1, min(32, len(files) // (workers * 8)))
    initializer = _worker_init if job.mode == "write" else None
    with ProcessPoolExecutor(max_workers=workers, initializer=initializer) as pool:
        yield from pool.map(task, files, chunksize=chunksize)


def _progress(items: Iterator[T], total: int, stream: TextIO | None) -> Iterator[T]:
    """A one-line progress bar on ``stream`` (a terminal), erased when done."""
    if stream is None:
        yield from items
        return
    width = 30
    step = max(1, total // 200)
    try:
        for done, item in enumerate(items, 1):
            if done % step == 0 or done == total:
                filled = width * done // total
                stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} files")
                stream.flush()
            yield item
    finally:
        stream.write("\r" + " " * (width + 30) + "\r")
        stream.flush()
