"""Command-line arguments and the configuration they select (settings and excludes)."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from lint_rules import __version__
from lint_rules.cli.discovery import ExcludePattern
from lint_rules.cli.formats import FORMATS, PROG
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
