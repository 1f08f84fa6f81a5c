"""The ``te-microbatch-lint`` command: ``check`` and ``fix`` over files and directory trees.

A thin face over the analysis core (docs/CONTRACT.md): it finds the files, runs
``analysis.analyze_source`` + ``noqa.filter_noqa`` (check) or ``fixing.fix_source`` (fix) on
each, in worker processes when asked, and prints the results in one stable order whatever the
number of jobs. It holds no rule logic. Start-up stays light: the core is imported only when a
file is processed, libcst only by ``fixing`` (guard strategy), flake8 never.

Exit status: 0 clean, 1 findings (``check``) or something to fix (``fix --check``), 2 usage or
configuration error, or a file that could not be read, parsed or written (each is named on
stderr with its reason and the other files are still processed).
"""

from __future__ import annotations

import argparse
import fnmatch
import functools
import os
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TextIO, TypeVar

from lint_rules import __version__
from lint_rules.findings import char_column, split_lines
from lint_rules.settings import (
    STRATEGY_CHOICES,
    UNRESOLVED_CHOICES,
    Settings,
    SettingsError,
    find_pyproject,
    flag_overrides,
    load_settings,
    split_list,
)

PROG = "te-microbatch-lint"
EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
FORMATS = ("text", "json", "sarif", "github")

SOURCE_SUFFIXES = (".py", ".pyi")
SKIPPED_DIRS = frozenset({".venv", "venv", "__pycache__", "build", "dist", ".git", "node_modules"})
"""Never walked into (hidden directories neither); a file named explicitly is still read."""

PROGRESS_MIN_FILES = 200
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://example.invalid/te-microbatch-lint"

T = TypeVar("T")


# ------------------------------------------------------------------------------- file discovery


@dataclass(frozen=True)
class ExcludePattern:
    """A glob and the directory it is relative to (the config file's, or the cwd for a flag).

    Like flake8: a pattern matches a file or directory by its name, or by its whole path once a
    pattern containing ``/`` is anchored at its directory (``fixtures/*`` from pyproject.toml
    excludes ``<project>/fixtures/...`` wherever the command runs from).
    """

    glob: str
    anchor: str

    @property
    def absolute(self) -> str | None:
        if "/" not in self.glob and os.sep not in self.glob:
            return None
        return os.path.normpath(os.path.join(self.anchor, self.glob)) + (
            os.sep if self.glob.endswith(("/", os.sep)) else ""
        )


def _excluded(path: str, patterns: Sequence[ExcludePattern], is_dir: bool = False) -> bool:
    name = os.path.basename(os.path.normpath(path))
    absolute = os.path.abspath(path)
    candidates = [absolute, absolute + os.sep] if is_dir else [absolute]
    for pattern in patterns:
        if name not in ("", ".", "..") and fnmatch.fnmatch(name, pattern.glob):
            return True
        anchored = pattern.absolute
        if anchored is not None and any(fnmatch.fnmatch(c, anchored) for c in candidates):
            return True
    return False


def _skipped_dir(name: str) -> bool:
    return name.startswith(".") or name in SKIPPED_DIRS


@dataclass
class Discovery:
    """The files to process, in output order, and the paths that could not be explored."""

    files: list[str]
    errors: list[tuple[str, str]]


def discover(
    paths: Sequence[str], patterns: Sequence[ExcludePattern], force_exclude: bool = False
) -> Discovery:
    """Files under ``paths`` in a deterministic order (arguments in order, then names sorted).

    A directory is walked for ``*.py``/``*.pyi``, skipping hidden and tool directories and
    excluded paths, without following directory symlinks (no loops). A path named explicitly is
    always processed unless ``force_exclude`` (for pre-commit, which names every file).
    """
    found = Discovery(files=[], errors=[])
    seen: set[str] = set()

    def add(path: str) -> None:
        # Resolved, so that a symlink and its target are one file (never two writers).
        key = os.path.normcase(os.path.realpath(path))
        if key not in seen:
            seen.add(key)
            found.files.append(path)

    for root in paths:
        if os.path.isdir(root):
            if force_exclude and _forced_out(root, patterns, is_dir=True):
                continue
            _walk(root, patterns, add, found.errors)
        elif os.path.lexists(root):
            if not (force_exclude and _forced_out(root, patterns)):
                add(root)  # read_source names whatever is wrong with it
        else:
            found.errors.append((root, "does not exist"))
    return found


def _forced_out(path: str, patterns: Sequence[ExcludePattern], is_dir: bool = False) -> bool:
    relative = Path(os.path.relpath(os.path.abspath(path)))
    folders = relative.parts if is_dir else relative.parts[:-1]
    inside = ".." not in folders  # the skipped-directory names apply below the cwd only
    if inside and any(_skipped_dir(part) for part in folders if part != "."):
        return True
    return _excluded(path, patterns, is_dir=is_dir)


def _walk(
    root: str,
    patterns: Sequence[ExcludePattern],
    add: Callable[[str], None],
    errors: list[tuple[str, str]],
) -> None:
    """Depth first in name order, a directory's contents at its place among its siblings."""
    stack: list[Iterator[os.DirEntry[str]]] = []

    def enter(folder: str) -> None:
        try:
            with os.scandir(folder) as scan:
                stack.append(iter(sorted(scan, key=lambda entry: entry.name)))
        except OSError as error:
            errors.append((folder, f"cannot list directory: {error.strerror or error}"))

    enter(root)
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
            continue
        path = entry.path
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            is_file = not is_dir and entry.is_file()
        except OSError:
            continue
        if is_dir:
            if not _skipped_dir(entry.name) and not _excluded(path, patterns, is_dir=True):
                enter(path)
        elif is_file and entry.name.endswith(SOURCE_SUFFIXES) and not _excluded(path, patterns):
            add(path)


# ---------------------------------------------------------------------------- per-file workers


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

    settings: Settings
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
    findings = analyze_source(source.text, job.settings)
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
        result = fix_source(source.text, job.settings, disable_noqa=job.disable_noqa)
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


# ---------------------------------------------------------------------------------- formatting


def format_text(findings: Sequence[Reported]) -> str:
    """flake8's default format, byte for byte: ``path:line:col: CODE message``."""
    return "".join(f"{f.path}:{f.line}:{f.column}: {f.message}\n" for f in findings)


def format_json(findings: Sequence[Reported]) -> str:
    import json

    keys = ("path", "code", "message", "line", "column", "end_line", "end_column", "fixable")
    rows = [{key: getattr(f, key) for key in keys} for f in findings]
    return json.dumps(rows, indent=2) + "\n"


def _escape_github(value: str, property_value: bool = False) -> str:
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if property_value:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return value


def format_github(findings: Sequence[Reported]) -> str:
    """GitHub Actions workflow commands (annotations); columns in characters."""
    out = []
    for f in findings:
        props = ",".join(
            (
                f"file={_escape_github(f.path, True)}",
                f"line={f.line}",
                f"col={f.char_column}",
                f"endLine={f.end_line}",
                f"endColumn={f.end_char_column}",
                f"title={f.code}",
            )
        )
        out.append(f"::warning {props}::{_escape_github(f.message)}\n")
    return "".join(out)


def _rule_descriptions() -> dict[str, tuple[str, str]]:
    """(short, full) text of each rule, from the message templates in ``rules.MESSAGES``."""
    from lint_rules.rules import MESSAGES, SUMMARIES

    described = {}
    for code, template in sorted(MESSAGES.items()):
        full = re.sub(r"\{(\w+)\}", r"<\1>", template)
        full = full.replace(code, "", 1).strip() if full.startswith(code) else full
        described[code] = (SUMMARIES[code], full)
    return described


def _artifact_uri(path: str) -> str:
    from urllib.parse import quote

    if os.path.isabs(path):
        return Path(path).as_uri()
    posix = Path(os.path.normpath(path)).as_posix()
    return quote(posix)


def format_sarif(findings: Sequence[Reported], errors: Sequence[tuple[str, str]]) -> str:
    """SARIF 2.1.0 for code scanning; regions in characters (``unicodeCodePoints``)."""
    import json

    descriptions = _rule_descriptions()
    codes = list(descriptions)
    for extra in sorted({f.code for f in findings} - set(codes)):
        codes.append(extra)
        descriptions[extra] = (extra, extra)
    rules = [
        {
            "id": code,
            "name": code,
            "shortDescription": {"text": descriptions[code][0]},
            "fullDescription": {"text": descriptions[code][1]},
            "defaultConfiguration": {"level": "warning"},
        }
        for code in codes
    ]
    results = [
        {
            "ruleId": f.code,
            "ruleIndex": codes.index(f.code),
            "level": "warning",
            "message": {"text": f.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": _artifact_uri(f.path)},
                        "region": {
                            "startLine": f.line,
                            "startColumn": f.char_column,
                            "endLine": f.end_line,
                            "endColumn": f.end_char_column,
                        },
                    }
                }
            ],
        }
        for f in findings
    ]
    notifications = [
        {
            "level": "error",
            "message": {"text": reason},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": _artifact_uri(path)}}}],
        }
        for path, reason in errors
    ]
    log = {
        "version": "2.1.0",
        "$schema": SARIF_SCHEMA,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": PROG,
                        "version": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "invocations": [
                    {
                        "executionSuccessful": not errors,
                        "toolExecutionNotifications": notifications,
                    }
                ],
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"


# ------------------------------------------------------------------------------ argument parsing


def _jobs(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


def _default_jobs() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("paths", nargs="+", metavar="PATH", help="files or directories")
    common.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="skip paths matching GLOB (repeatable; added to `exclude` from the config); "
        "a GLOB matches a file or directory name, or with a `/` the path from the cwd",
    )
    common.add_argument(
        "--force-exclude",
        action="store_true",
        help="apply excludes to files named on the command line too (pre-commit names them)",
    )
    common.add_argument(
        "--jobs",
        "-j",
        type=_jobs,
        default=None,
        metavar="N",
        help="worker processes (default: all cores)",
    )
    common.add_argument(
        "--config",
        metavar="PATH",
        help="pyproject.toml to read [tool.te-microbatch-lint] from "
        "(default: the nearest one above the paths)",
    )
    common.add_argument("--isolated", action="store_true", help="ignore every configuration file")
    common.add_argument(
        "--te-guard-functions",
        metavar="NAMES",
        help="extra tracking-guard functions, comma separated (added to the defaults)",
    )
    common.add_argument(
        "--te-unresolved",
        choices=UNRESOLVED_CHOICES,
        default=None,
        help="report (default) or ignore calls whose callee cannot be resolved",
    )
    common.add_argument(
        "--fix-strategy",
        choices=STRATEGY_CHOICES,
        default=None,
        help="none (default): the value becomes None; guard: `v if GUARD(CONFIG) else None`",
    )
    common.add_argument(
        "--guard-import",
        metavar="DOTTED.NAME",
        default=None,
        help="GUARD for the guard strategy, imported once per file",
    )
    common.add_argument(
        "--guard-config",
        metavar="EXPR",
        default=None,
        help="CONFIG for the guard strategy (default: self.config)",
    )
    common.add_argument("--disable-noqa", action="store_true", help="ignore `# noqa` comments")
    common.add_argument("--quiet", "-q", action="store_true", help="no progress or summary")

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Find and fix untracked `is_first_microbatch` flags passed to "
        "Transformer Engine modules.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    check = commands.add_parser(
        "check",
        parents=[common],
        help="report findings (exit 1 when there are any)",
        description="Report findings. Exit 0: clean, 1: findings, 2: usage error or a file "
        "that could not be read or parsed.",
    )
    check.add_argument("--format", choices=FORMATS, default="text")
    check.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 even when there are findings (2 is still returned for errors)",
    )
    check.add_argument(
        "--select", metavar="CODES", help="report only codes starting with these (comma list)"
    )
    check.add_argument("--ignore", metavar="CODES", help="do not report codes starting with these")
    fix = commands.add_parser(
        "fix",
        parents=[common],
        help="rewrite fixable findings in place",
        description="Apply the fixes of TEM001/2/3/5 in place (atomic writes; files with "
        "nothing to fix are not touched). Exit 0: done, 1: --check found something to fix, "
        "2: usage error or a file that could not be read, parsed or written.",
    )
    fix.add_argument("--diff", action="store_true", help="print a unified diff and write nothing")
    fix.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 when a fix would change something",
    )
    return parser


@dataclass(frozen=True)
class Configuration:
    settings: Settings
    excludes: tuple[ExcludePattern, ...]


def configure(args: argparse.Namespace) -> Configuration:
    """Settings from the config file then the flags (flags win); excludes from both."""
    pyproject: Path | None = None
    if args.config:
        pyproject = Path(args.config)
        if not pyproject.is_file():
            raise SettingsError(f"{args.config}: configuration file does not exist")
    elif not args.isolated:
        absolute = [os.path.abspath(p) for p in args.paths]
        try:
            start = os.path.commonpath(absolute)
        except ValueError:  # paths on different drives
            start = os.getcwd()
        pyproject = find_pyproject(Path(start))
    overrides = flag_overrides(
        te_guard_functions=args.te_guard_functions,
        te_unresolved=args.te_unresolved,
        fix_strategy=args.fix_strategy,
        guard_import=args.guard_import,
        guard_config=args.guard_config,
    )
    settings = load_settings(pyproject, overrides)
    anchor = str(pyproject.resolve().parent) if pyproject else os.getcwd()
    excludes = [ExcludePattern(glob, anchor) for glob in settings.exclude]
    cwd = os.getcwd()
    for value in args.exclude:
        excludes.extend(ExcludePattern(glob, cwd) for glob in split_list(value))
    return Configuration(settings, tuple(excludes))


# ----------------------------------------------------------------------------------------- main


def _code_filter(select: str | None, ignore: str | None) -> Callable[[str], bool]:
    selected = split_list(select or "")
    ignored = split_list(ignore or "")

    def keep(code: str) -> bool:
        if selected and not code.startswith(selected):
            return False
        return not (ignored and code.startswith(ignored))

    return keep


def _progress_stream(args: argparse.Namespace, total: int) -> TextIO | None:
    if args.quiet or total <= PROGRESS_MIN_FILES:
        return None
    return sys.stderr if sys.stderr.isatty() else None


def _report_errors(errors: Iterable[tuple[str, str]]) -> None:
    for path, reason in errors:
        print(f"{path}: error: {reason}", file=sys.stderr)


def _collect(
    args: argparse.Namespace, work: Callable[[Job, str], Outcome], job: Job, files: list[str]
) -> list[Outcome]:
    jobs = args.jobs or _default_jobs()
    outcomes = run_files(work, job, files, jobs)
    return list(_progress(outcomes, len(files), _progress_stream(args, len(files))))


def run_check(args: argparse.Namespace, config: Configuration, discovery: Discovery) -> int:
    job = Job(config.settings, disable_noqa=args.disable_noqa, mode="check")
    outcomes = _collect(args, check_file, job, discovery.files)
    keep = _code_filter(args.select, args.ignore)
    findings = [f for o in outcomes for f in o.findings if keep(f.code)]
    errors = discovery.errors + [(o.path, o.error) for o in outcomes if o.error]
    if args.format == "json":
        sys.stdout.write(format_json(findings))
    elif args.format == "sarif":
        sys.stdout.write(format_sarif(findings, errors))
    elif args.format == "github":
        sys.stdout.write(format_github(findings))
    else:
        sys.stdout.write(format_text(findings))
    sys.stdout.flush()
    _report_errors(errors)
    if errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if findings and not args.exit_zero else EXIT_CLEAN


def run_fix(args: argparse.Namespace, config: Configuration, discovery: Discovery) -> int:
    mode = "diff" if args.diff else "verify" if args.check else "write"
    if mode == "write":
        from lint_rules.fileio import install_cleanup_handlers

        install_cleanup_handlers()
    job = Job(config.settings, disable_noqa=args.disable_noqa, mode=mode)
    outcomes = _collect(args, fix_file, job, discovery.files)
    errors = list(discovery.errors)
    verb = "fixed" if mode == "write" else "would fix"
    changed = fixed = unchanged = 0
    for outcome in outcomes:
        if outcome.error:
            errors.append((outcome.path, outcome.error))
            continue
        sys.stdout.write(outcome.diff)
        for note in outcome.notes:
            print(f"{outcome.path}: note: {note}", file=sys.stderr)
        if not outcome.changed:
            unchanged += 1
            continue
        changed += 1
        fixed += outcome.fixed
        if not args.quiet:
            print(f"{verb} {outcome.path} ({_count(outcome.fixed, 'finding')})", file=sys.stderr)
    sys.stdout.flush()
    _report_errors(errors)
    if not args.quiet:
        print(
            f"{verb} {_count(fixed, 'finding')} in {_count(changed, 'file')}, "
            f"{_count(unchanged, 'file')} unchanged",
            file=sys.stderr,
        )
    if errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if args.check and changed else EXIT_CLEAN


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status instead of exiting."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # --help, --version, or a usage error (argparse says which)
        return stop.code if isinstance(stop.code, int) else EXIT_ERROR
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        config = configure(args)
    except SettingsError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    discovery = discover(args.paths, config.excludes, force_exclude=args.force_exclude)
    try:
        if args.command == "check":
            return run_check(args, config, discovery)
        return run_fix(args, config, discovery)
    except BrokenPipeError:  # `... | head`: stop quietly, as a filter should
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_ERROR
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
