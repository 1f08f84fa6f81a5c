"""The entry point: parse arguments, load the configuration, discover, run, report.

Exit status: 0 clean, 1 findings (``check``; ``fix``: findings left, or with ``--check`` or
``--diff`` something to fix), 2 usage or configuration error, or a file that could not be read,
parsed or written (each is named on stderr with its reason and the other files are still
processed).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

from lint_rules.cli.discovery import Discovery, _forced_out, discover
from lint_rules.cli.formats import (
    PLAIN,
    PROG,
    Problem,
    Style,
    fixable_hint,
    format_github,
    format_json,
    format_statistics,
    format_text,
    rule_url,
    shown_path,
    use_colour,
)
from lint_rules.cli.options import COMMANDS, Configuration, build_parser, configure
from lint_rules.cli.progress import Progress
from lint_rules.settings import SettingsError

TYPE_CHECKING = False  # the per-file machinery (``running``) loads once a file is to be read
if TYPE_CHECKING:
    from typing import Any, Callable, TextIO

    from lint_rules.cli.running import Job, Outcome, Work

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
PROGRESS_MIN_FILES = 200
STDIN = "-"


class UsageError(Exception):
    """A combination of arguments that cannot work (exit 2, one line)."""


def _progress(args: argparse.Namespace, total: int) -> Progress:
    stream = None
    if not args.quiet and total > PROGRESS_MIN_FILES and sys.stderr.isatty():
        stream = sys.stderr
    return Progress(total, stream)


def _report(items: Iterable[tuple[str, str]], kind: str = "error") -> None:
    for path, reason in items:
        print(f"{shown_path(path)}: {kind}: {reason}", file=sys.stderr)


def _problem(outcome: Outcome) -> Problem:
    assert outcome.error is not None
    return Problem(outcome.path, outcome.error, outcome.error_line, outcome.error_column)


def _outcomes(
    args: argparse.Namespace,
    config: Configuration,
    work: Work,
    job: Job,
    files: Sequence[str],
    cache: object = None,
    crossfile: bool | None = None,
    members: dict[str, list[str]] | None = None,
) -> Iterable[Outcome]:
    """Every file's outcome, in order, as each finishes; progress drawn on the way. Each
    file is judged with its whole project (``analysis.faces``), whichever files were named;
    with ``--isolated``, the files named are the project (a folder, or several files)."""
    if not args.isolated:
        from lint_rules.cli.project import judged

        yield from judged(
            args, config, work, job, files, cache, lambda n: _progress(args, n), members
        )
        return
    from lint_rules.cli.cpus import CpuSample
    from lint_rules.cli.running import POOL_MIN_BYTES, Pool, plan_files, pool_size, run_plan

    progress = _progress(args, len(files))
    if crossfile is None:
        crossfile = _crossfile(args, files)
    plan = plan_files(
        job, files, config.settings_of, cache, progress.advance, crossfile, CpuSample.now()
    )
    workers = pool_size(plan, args.jobs)
    # forked on the first parse that needs it (any, with --jobs)
    pool = Pool(workers, job.mode == "write", 0 if args.jobs is not None else POOL_MIN_BYTES)
    if crossfile and not plan.passed:  # nothing to analyse: the run's machinery not imported
        from lint_rules.analysis.unread import nothing_passed

        stream = nothing_passed(plan, progress.advance)
    elif crossfile:
        from lint_rules.analysis.run import run_crossfile

        stream = run_crossfile(work, job, plan, workers, args.paths, progress.advance, parse=pool)
    else:
        stream = run_plan(work, job, plan, workers, pool)
    try:
        with pool:  # its workers end with the run's last file
            for planned, outcome in zip(plan.done, stream):
                if planned is None and not crossfile:  # parsed now (the others: when read)
                    progress.advance()
                if outcome.findings or outcome.diff:
                    progress.clear()
                yield outcome
    finally:
        progress.clear()


def _crossfile(args: argparse.Namespace, files: Sequence[str]) -> bool:
    """Whether the files of an ``--isolated`` run are judged together: more than one, or a
    folder named, even with one file in it (nothing else can re-arm its flags)."""
    return len(files) > 1 or (bool(files) and any(os.path.isdir(p) for p in args.paths))


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


@contextmanager
def _output(args: argparse.Namespace, inputs: Sequence[str] = ()) -> Iterator[TextIO]:
    """Where the report goes: ``--output-file`` (closed at the end), else stdout. Opening it
    truncates it, so it must not be one of the files read (``inputs``)."""
    if not getattr(args, "output_file", None):
        yield sys.stdout
        return
    clash = next((path for path in inputs if _same_file(args.output_file, path)), None)
    if clash is not None:
        raise UsageError(
            f"{args.output_file}: is one of the files checked ({clash}); "
            "--output-file must name another file"
        )
    try:
        out = open(args.output_file, "w", encoding="utf-8", errors="backslashreplace")  # noqa: SIM115
    except OSError as error:
        raise UsageError(f"{args.output_file}: cannot write: {error.strerror or error}") from None
    with out:
        yield out


def _check_status(
    args: argparse.Namespace, findings: list, problems: list[Problem], hint: str = ""
) -> int:
    """``check``'s ending: the problems and the hint on stderr, then the exit status."""
    _report((p.path, p.reason) for p in problems)
    if hint and args.format in HUMAN_FORMATS and not args.quiet:
        print(hint, file=sys.stderr)
    if problems:
        return EXIT_ERROR
    return EXIT_FINDINGS if findings and not args.exit_zero else EXIT_CLEAN


TEXT_FORMATS = ("text", "full", "concise")
HUMAN_FORMATS = (*TEXT_FORMATS, "grouped")
"""Formats read by people: the fixable hint, and ruff's "All checks passed!" on a clean run."""
CLEAN = "All checks passed!"


def _applies(config: Configuration) -> Callable[[Any], bool]:
    """Whether ``fix`` would apply a finding's fix: safe ones, and unsafe ones where that
    file's settings ask for them (the hint, ``--statistics`` and JSON count alike)."""

    def applies(finding: Any) -> bool:
        if finding.applicability == "safe":
            return True
        return finding.applicability == "unsafe" and config.settings_of(finding.path).unsafe_fixes

    return applies


def _style(args: argparse.Namespace, out: TextIO) -> Style:
    return Style(use_colour(getattr(args, "color", "auto"), out))


def run_check(args: argparse.Namespace, config: Configuration, discovery: Discovery) -> int:
    if args.statistics and args.format not in (*TEXT_FORMATS, "json"):
        raise UsageError(
            f"--statistics works with --format {', '.join(TEXT_FORMATS)} or json, "
            f"not {args.format} (as in ruff)"
        )
    files = discovery.files
    cache = None
    if not args.no_cache and files:  # --no-cache: the cache module is not even imported
        from lint_rules.analysis.store import open_cache

        cache = open_cache(args.no_cache, args.cache_dir)
    adding = getattr(args, "add_noqa", False)
    crossfile = _crossfile(args, files)
    memo: Any = None  # a run over unchanged files is served whole (``cli.warm``)
    shape: Any = None  # judged with its project: what the run reads besides the files
    served = None
    if cache is not None and args.isolated and not adding:
        from lint_rules.cli.warm import served as served_run

        memo = (config.settings_of, args.paths, crossfile, args.disable_noqa)
        served = served_run(cache, files, *memo)
    elif cache is not None and files and not adding:
        from lint_rules.cli.warm import project_shape, served_project

        alike = len(args.paths) == 1 and args.respect_gitignore and not args.force_exclude
        listed = (args.paths[0], files) if alike else None
        shape = project_shape(files, config.settings_of, config.excludes, listed)
        if shape is not None:
            memo = (shape, args.paths, args.disable_noqa)
            served = served_project(cache, files, *memo)
    job: Any = None
    if files:  # nothing to read (an empty folder): the per-file machinery is not imported
        from lint_rules.cli.fixcount import selected
    if files and served is None:
        from lint_rules.cli.running import Job, check_file

        job = Job(disable_noqa=args.disable_noqa, mode="check")
    streaming = args.format in TEXT_FORMATS and not args.statistics and not adding
    findings = []
    checked: dict[str, str] = {}  # --add-noqa: the digest of the text each file was checked in
    problems = [Problem(path, reason) for path, reason in discovery.errors]
    applies = _applies(config)
    made: list[Outcome] | None = [] if memo is not None and served is None else None
    with _output(args, discovery.files) as out:
        style = _style(args, out) if streaming else PLAIN
        concise = args.format == "concise"
        stream: Iterable[Outcome] = ()
        if served is not None:
            stream = served
        elif files:
            listed = None if shape is None else shape.members  # the files the key read
            stream = _outcomes(args, config, check_file, job, files, cache, crossfile, listed)
        for outcome in stream:
            if cache is not None:
                cache.put(outcome)
            if made is not None:
                made.append(outcome)
            if outcome.error:
                problems.append(_problem(outcome))
            checked[outcome.path] = outcome.digest
            settings = config.settings_of(outcome.path) if outcome.findings else None
            kept = selected(outcome.findings, settings)
            if streaming and kept:
                out.write(format_text(kept, style, concise))
                out.flush()
            findings.extend(kept)
        if made is not None and cache is not None:  # made in full: kept whole
            from lint_rules.cli.warm import keep, keep_project

            if shape is None:
                keep(cache, files, made, *memo)
            else:
                shaped, paths, disable_noqa = memo
                settings_of = config.settings_of
                keep_project(
                    cache, files, made, settings_of, shaped, paths, disable_noqa, config.excludes
                )
        if cache is not None:
            cache.save()
        if not adding:
            _write_report(args, out, findings, problems, applies, config)
            clean = not (findings or problems or args.statistics or args.quiet)
            if clean and args.format in HUMAN_FORMATS:
                out.write(CLEAN + "\n")
    if adding:
        from lint_rules.cli.aids import add_noqa

        added, errors = add_noqa(findings, args.quiet, checked, config.settings_of, job)
        _report(errors)
        if not args.quiet:
            from lint_rules.cli.fixtally import count

            print(f"{PROG}: added `# noqa` to {count(added, 'line')}", file=sys.stderr)
        return EXIT_ERROR if problems or errors else EXIT_CLEAN
    hint = fixable_hint(findings, applies)
    return _check_status(args, findings, problems, hint)


def _write_report(
    args: argparse.Namespace,
    out: TextIO,
    findings: list,
    problems: list[Problem],
    applies: Callable[[Any], bool],
    config: Configuration,
) -> None:
    def url_of(finding: Any) -> str | None:
        return rule_url(finding.code, config.settings_of(finding.path).docs_url)

    if args.statistics:
        out.write(format_statistics(findings, as_json=args.format == "json", applies=applies))
    elif args.format == "json":
        out.write(format_json(findings, problems, applies, url_of))
    elif args.format == "json-lines":
        from lint_rules.cli.ciformats import format_json_lines

        out.write(format_json_lines(findings, problems, applies, url_of))
    elif args.format == "sarif":
        from lint_rules.cli.sarif import format_sarif

        out.write(format_sarif(findings, problems, config.settings_of(os.getcwd()).docs_url))
    elif args.format == "github":
        out.write(format_github(findings, problems))
    elif args.format == "grouped":
        from lint_rules.cli.ciformats import format_grouped

        out.write(format_grouped(findings, problems, applies))
    elif args.format == "pylint":
        from lint_rules.cli.ciformats import format_pylint

        out.write(format_pylint(findings, problems))
    elif args.format == "junit":
        from lint_rules.cli.ciformats import format_junit

        out.write(format_junit(findings, problems))
    elif args.format == "gitlab":
        from lint_rules.cli.ciformats import format_gitlab

        out.write(format_gitlab(findings, problems))
    out.flush()


def run_fix(args: argparse.Namespace, config: Configuration, discovery: Discovery) -> int:
    from lint_rules.cli.fixtally import FixTally
    from lint_rules.cli.running import Job, fix_file, fixed_count

    mode = "diff" if args.diff else "verify" if args.check else "write"
    if mode == "write":
        from lint_rules.fileio import install_cleanup_handlers

        install_cleanup_handlers()
    job = Job(disable_noqa=args.disable_noqa, mode=mode, name_writes=not args.quiet)
    errors = list(discovery.errors)
    verb = "fixed" if mode == "write" else "would fix"
    tally = FixTally()
    for outcome in _outcomes(args, config, fix_file, job, discovery.files):
        if outcome.error:
            errors.append((outcome.path, outcome.error))
            tally.remaining.update(outcome.remaining)  # a write that failed left them all
            tally.refused += 1
            continue
        sys.stdout.write(outcome.diff)
        _report(((outcome.path, note) for note in outcome.notes), "note")
        tally.add(outcome)
        if outcome.changed and not args.quiet and mode != "write":  # written: named by its writer
            print(
                f"{verb} {shown_path(outcome.path)} ({fixed_count(outcome.fixed)})", file=sys.stderr
            )
            sys.stderr.flush()
    sys.stdout.flush()
    _report(errors)
    if not args.quiet:
        _note_default_guard(tally.added_imports)
        tally.errors = len(errors)
        print(tally.summary(verb), file=sys.stderr)
    if errors:
        return EXIT_ERROR
    if tally.remaining or (mode != "write" and tally.changed):
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _note_default_guard(added_imports: Iterable[str]) -> None:
    """Once per run: the default guard is in no released megatron-core (docs/fixes.md)."""
    from lint_rules.rules import DEFAULT_GUARD_IMPORT

    if DEFAULT_GUARD_IMPORT in added_imports:
        print(
            f"{PROG}: note: guard-import is the default `{DEFAULT_GUARD_IMPORT}`, which no "
            "released megatron-core (up to 0.19.2) defines: set guard-import to a guard your "
            "project has",
            file=sys.stderr,
        )


def explain_rules(codes: Sequence[str], every: bool) -> int:
    """``rule CODE...`` / ``rule NAME...`` / ``rule --all``: each rule's explanation."""
    from lint_rules.cli.aids import rule_codes
    from lint_rules.docgen import explain
    from lint_rules.rules import RULES

    if every == bool(codes):
        print(
            f"{PROG}: error: name a rule (e.g. TEM001 or untracked-flag) or --all", file=sys.stderr
        )
        return EXIT_ERROR
    chosen, unknown = rule_codes(codes)
    if unknown:
        known = ", ".join(f"{code} ({rule.name})" for code, rule in RULES.items())
        print(f"{PROG}: error: unknown rule {unknown[0]!r}; the rules are {known}", file=sys.stderr)
        return EXIT_ERROR
    chosen = list(RULES) if every else chosen
    sys.stdout.write("\n".join(explain(RULES[code]) for code in chosen))
    return EXIT_CLEAN


def run_stdin(args: argparse.Namespace, config: Configuration) -> int:
    """``check -`` / ``fix -``: the source on stdin, resolved as ``--stdin-filename``."""
    from lint_rules.cli.running import Job, check_file, fix_file
    from lint_rules.fileio import SourceError, decode_source

    shown = args.stdin_filename or STDIN
    raw = sys.stdin.buffer.read()
    fixing = args.command == "fix"
    echo = fixing and not (args.diff or args.check)
    excluded = args.stdin_filename is not None and _forced_out(
        args.stdin_filename, config.excludes, False, args.respect_gitignore
    )
    if excluded:
        if echo:
            sys.stdout.buffer.write(raw)
        return EXIT_CLEAN
    try:
        source = decode_source(shown, raw)
    except SourceError as error:
        if echo:
            sys.stdout.buffer.write(raw)  # an editor's buffer must never come back empty
        _report([(shown, error.reason)])
        return EXIT_ERROR
    settings = config.settings_of(args.stdin_filename or os.path.join(os.getcwd(), "stdin.py"))
    from lint_rules.cli.fixcount import selected
    from lint_rules.cli.project import stdin_project

    project, alone = stdin_project(args, config)
    if not fixing:
        job = Job(disable_noqa=args.disable_noqa, mode="check")
        outcome = check_file(job, shown, settings, source, project)
        if alone and outcome.findings and not args.quiet:
            _report([(shown, alone)], "note")
        findings = selected(outcome.findings, settings)
        problems = [_problem(outcome)] if outcome.error else []
        with _output(args, [args.stdin_filename] if args.stdin_filename else []) as out:
            if args.format in TEXT_FORMATS and not args.statistics:
                out.write(format_text(findings, _style(args, out), args.format == "concise"))
            _write_report(args, out, findings, problems, _applies(config), config)
        return _check_status(args, findings, problems)  # no hint: an editor's buffer
    mode = "diff" if args.diff else "verify" if args.check else "stdout"
    job = Job(disable_noqa=args.disable_noqa, mode=mode)
    outcome = fix_file(job, shown, settings, source, project)
    if echo:
        text = outcome.new_text if outcome.new_text is not None else source.text
        sys.stdout.buffer.write(text.encode(source.encoding))
    else:
        sys.stdout.write(outcome.diff)
    sys.stdout.flush()
    _report(((shown, note) for note in outcome.notes), "note")
    if not args.quiet:
        _note_default_guard(outcome.added_imports)
    if outcome.error:
        _report([(shown, outcome.error)])
        return EXIT_ERROR
    if outcome.remaining or ((args.check or args.diff) and outcome.changed):
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _discover(args: argparse.Namespace, config: Configuration) -> Discovery:
    discovery = discover(
        args.paths,
        config.excludes,
        force_exclude=args.force_exclude,
        respect_gitignore=args.respect_gitignore,
    )
    if not args.quiet:
        _report(discovery.notes, "note")
        if not discovery.files and not discovery.errors:
            print(f"{PROG}: warning: No Python files found under the paths given", file=sys.stderr)
    return discovery


def _watch(args: argparse.Namespace) -> int:
    """``check --watch``: the whole check (configuration and discovery too) on every change."""
    from lint_rules.cli.aids import watch

    def once() -> int:
        try:
            config = configure(args)
            return run_check(args, config, _discover(args, config))
        except (SettingsError, UsageError) as error:
            print(f"{PROG}: error: {error}", file=sys.stderr)
            return EXIT_ERROR

    return watch(once, args.paths, getattr(args, "watch_runs", None))


def run_explain(args: argparse.Namespace) -> int:
    """``explain PATH:LINE``: check the project that holds PATH (``aids.project_root``), as
    ``check`` would, and print the findings at LINE with every step of their evidence."""
    from lint_rules.cli.aids import explain_text, parse_place, project_root
    from lint_rules.cli.running import Job, check_file

    try:
        path, line = parse_place(args.place)
    except ValueError as error:
        raise UsageError(str(error)) from None
    if not os.path.isfile(path):
        raise UsageError(f"{path}: no such file")
    root = project_root(path)
    relative = os.path.relpath(root)
    if not relative.startswith(os.pardir):  # inside the cwd: paths as the user writes them
        root = relative
    args.paths = [root]
    config = configure(args)
    discovery = discover([root], config.excludes, respect_gitignore=args.respect_gitignore)
    if not any(os.path.samefile(found, path) for found in discovery.files):
        discovery.files.append(path)  # excluded there: explain it anyway, with the others
    from lint_rules.cli.fixcount import selected

    job = Job(disable_noqa=args.disable_noqa, mode="check")
    findings: list[Any] = []
    for outcome in _outcomes(args, config, check_file, job, discovery.files):
        settings = config.settings_of(outcome.path)
        findings.extend(selected(outcome.findings, settings))
    text = explain_text(findings, path, line)
    if not text:
        print(f"{path}:{line}: no finding on this line (project checked: {root})")
        return EXIT_CLEAN
    sys.stdout.write(text)
    print(f"(project checked: {root})")
    return EXIT_FINDINGS


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status instead of exiting."""
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(words[0] if words and words[0] in COMMANDS else None)
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # --help, --version, or a usage error (argparse says which)
        return stop.code if isinstance(stop.code, int) else EXIT_ERROR
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    if args.command == "rule":
        return explain_rules(args.codes, args.all)
    if args.stdin_filename and not args.paths:
        args.paths = [STDIN]  # --stdin-filename implies `-`, as in ruff
    args.paths = args.paths or ["."]  # as in ruff and flake8
    try:
        if args.command == "explain":
            return run_explain(args)
        if STDIN in args.paths and len(args.paths) > 1:
            raise UsageError("`-` (stdin) must be the only path")
        if args.stdin_filename and args.paths != [STDIN]:
            raise UsageError("--stdin-filename goes with `-` as the path")
        config = configure(args)
        if args.show_settings:
            from lint_rules.cli.aids import show_settings

            return show_settings(config, args.show_settings)
        if args.paths == [STDIN]:
            return run_stdin(args, config)
        discovery = _discover(args, config)
        if args.show_files:
            from lint_rules.cli.aids import show_files

            return show_files(discovery)
        if args.command == "check" and args.watch:
            return _watch(args)
        if args.command == "check":
            return run_check(args, config, discovery)
        return run_fix(args, config, discovery)
    except (SettingsError, UsageError) as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
