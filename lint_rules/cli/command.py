"""The entry point: parse arguments, load the configuration, discover, run, report.

Exit status: 0 clean, 1 findings (``check``) or something to fix (``fix --check``), 2 usage or
configuration error, or a file that could not be read, parsed or written (each is named on
stderr with its reason and the other files are still processed).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Sequence
from typing import Callable, TextIO

from lint_rules.cli.discovery import Discovery, discover
from lint_rules.cli.formats import PROG, format_github, format_json, format_sarif, format_text
from lint_rules.cli.options import Configuration, _default_jobs, build_parser, configure
from lint_rules.cli.running import Job, Outcome, _progress, check_file, fix_file, run_files
from lint_rules.settings import SettingsError

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
PROGRESS_MIN_FILES = 200


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
    job = Job(config.resolver, disable_noqa=args.disable_noqa, mode="check")
    outcomes = _collect(args, check_file, job, discovery.files)
    settings_for = config.resolver.settings_for
    findings = [f for o in outcomes for f in o.findings if settings_for(o.path).reports(f.code)]
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
    job = Job(config.resolver, disable_noqa=args.disable_noqa, mode=mode)
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


def explain_rules(codes: Sequence[str], every: bool) -> int:
    """``rule CODE...`` / ``rule --all``: each rule's explanation, from ``rules.RULES``."""
    from lint_rules.docgen import explain
    from lint_rules.rules import RULES

    if every == bool(codes):
        print(f"{PROG} rule: error: name a rule code (e.g. TEM001) or --all", file=sys.stderr)
        return EXIT_ERROR
    unknown = [code for code in codes if code.upper() not in RULES]
    if unknown:
        known = ", ".join(RULES)
        print(f"{PROG} rule: error: unknown rule code {unknown[0]!r} ({known})", file=sys.stderr)
        return EXIT_ERROR
    chosen = list(RULES) if every else [code.upper() for code in codes]
    sys.stdout.write("\n".join(explain(RULES[code]) for code in chosen))
    return EXIT_CLEAN


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
    if args.command == "rule":
        return explain_rules(args.codes, args.all)
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
