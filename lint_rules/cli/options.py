"""Command-line arguments and the configuration they select (settings and excludes)."""

from __future__ import annotations

import argparse
import os

from lint_rules import __version__
from lint_rules.cli.discovery import ExcludePattern
from lint_rules.cli.formats import FORMATS, PROG
from lint_rules.setting_flags import add_setting_flags, flag_overrides
from lint_rules.settings import (
    TABLE,
    ConfigResolver,
    Settings,
    split_list,
)
from lint_rules.slotted import Frozen

TYPE_CHECKING = False  # `typing` is not imported at run time (start-up)
if TYPE_CHECKING:
    from typing import Any


def _jobs(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


FIX_FLAGS = {"--fix": "", "--diff": "--diff ", "--unsafe-fixes": "--unsafe-fixes "}
"""ruff's ``check`` flags that are ``fix``'s here: a usage error names the command to run."""
FIX_FLAG_WHAT = {
    "--fix": "applies the fixes",
    "--diff": "shows the rewrite",
    "--unsafe-fixes": "applies the unsafe fixes too",
}


class Formatter(argparse.HelpFormatter):
    """argparse's help formatter without ``shutil``, whose import (with ``bz2``, ``lzma``)
    argparse paid at every argument declared: the width is the terminal's as
    ``shutil.get_terminal_size`` finds it, asked once per process."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        if width is None:
            width = terminal_columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width)


_COLUMNS: list[int] = []


def terminal_columns() -> int:
    """``shutil.get_terminal_size().columns``: ``$COLUMNS``, else the terminal of stdout,
    else 80."""
    if not _COLUMNS:
        try:
            columns = int(os.environ["COLUMNS"])
        except (KeyError, ValueError):
            columns = 0
        if columns <= 0:
            import sys

            try:
                columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
            except (AttributeError, ValueError, OSError):
                columns = 0
        _COLUMNS.append(columns or 80)
    return _COLUMNS[0]


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (``te-microbatch-lint: error: ...``, exit 2)
    instead of the usage block; ``--help`` shows the usage. Options are never abbreviated
    (``check --fix`` is not ``--fix-strategy``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # type: ignore[override]
        if message.startswith("unrecognized arguments:"):
            words = message.split()
            for flag, hint in FIX_FLAGS.items():
                if flag in words:
                    message += f" (`{PROG} fix {hint}PATH` {FIX_FLAG_WHAT[flag]})"
                    break
        self.exit(2, f"{PROG}: error: {message}\n")


COMMANDS = ("check", "rule", "fix", "explain")
"""The subcommands, in the order ``--help`` lists them."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of the command line. ``command`` is the first word of the arguments when it
    names a subcommand: only that subcommand then gets its arguments, since argparse reads no
    other one's (declaring them all costs a fifth of the interpreter's start-up). None: every
    subcommand is complete (``--help``, a usage error naming the choices, the docs)."""
    parser = Parser(
        prog=PROG,
        description="Find and fix untracked `is_first_microbatch` flags passed to "
        "Transformer Engine modules.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=Parser
    )
    for name, declare in (("check", _check), ("rule", _rule), ("fix", _fix), ("explain", _explain)):
        if command is None or command == name:
            declare(commands)
    return parser


def _common(common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The arguments ``check``, ``fix`` and ``explain`` share (declared first on each)."""
    common.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="files or directories (default: `.`); `-` reads stdin",
    )
    common.add_argument(
        "--exclude",
        action="append",
        default=None,
        metavar="GLOB",
        help="skip paths matching GLOB (repeatable, comma lists too); replaces `exclude` from "
        "the config; a GLOB matches a file or directory name, or with a `/` the path from the cwd",
    )
    common.add_argument(
        "--extend-exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="like --exclude, but added to `exclude` from the config",
    )
    common.add_argument(
        "--no-respect-gitignore",
        dest="respect_gitignore",
        action="store_false",
        help="also walk what .gitignore, .ignore and .git/info/exclude ignore",
    )
    common.add_argument(
        "--stdin-filename",
        metavar="PATH",
        help="with `-`: the path the source on stdin stands for (config, excludes, noqa, output)",
    )
    common.add_argument(
        "--no-cache", action="store_true", help="neither read nor write the result cache"
    )
    common.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="where the result cache lives (default: $TE_MICROBATCH_LINT_CACHE_DIR, else "
        "te-microbatch-lint in the user's cache directory: $XDG_CACHE_HOME or ~/.cache on Linux)",
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
        help="worker processes (default: the idle cores, and only when the files to parse "
        "are enough to pay for a process pool)",
    )
    common.add_argument(
        "--config",
        metavar="PATH",
        help="pyproject.toml to read [tool.te-microbatch-lint] from, for every file "
        "(default: for each file, the nearest one above it that has that table)",
    )
    common.add_argument("--isolated", action="store_true", help="ignore every configuration file")
    add_setting_flags(common)
    common.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the path, the code and `[*]` (auto: on a terminal, unless NO_COLOR is set; "
        "FORCE_COLOR forces it)",
    )
    common.add_argument(
        "--show-settings",
        metavar="PATH",
        nargs="?",
        const=".",
        help="print the settings that apply to PATH (default: the current directory) and where "
        "each comes from, then exit",
    )
    common.add_argument(
        "--show-files", action="store_true", help="print the files that would be checked, then exit"
    )
    common.add_argument("--disable-noqa", action="store_true", help="ignore `# noqa` comments")
    common.add_argument("--quiet", "-q", action="store_true", help="no progress or summary")
    return common


def _check(commands: Any) -> None:
    check = commands.add_parser(
        "check",
        help="report findings (exit 1 when there are any)",
        description="Report findings. Exit 0: clean, 1: findings, 2: usage error or a file "
        "that could not be read or parsed.",
    )
    _common(check)
    check.add_argument(
        "--format",
        "--output-format",
        choices=FORMATS,
        default="text",
        help="how findings are printed (`--output-format` as in ruff): text (= full: each "
        "finding and its evidence as `note:` lines), concise (one line per finding, as flake8 "
        "prints it); as ruff writes them: grouped, pylint, json, json-lines, junit, gitlab, "
        "github, sarif",
    )
    check.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 even when there are findings (2 is still returned for errors)",
    )
    _selection_flags(check, "report")
    check.add_argument(
        "--statistics",
        action="store_true",
        help="print the number of findings per code instead of the findings",
    )
    check.add_argument(
        "--output-file", "-o", metavar="PATH", help="write the report to PATH instead of stdout"
    )
    check.add_argument(
        "--add-noqa",
        action="store_true",
        help="write `# noqa: CODE` on each line with a finding (atomic writes, idempotent)",
    )
    check.add_argument(
        "--watch",
        action="store_true",
        help="check again whenever a file changes (needs `pip install te-microbatch-lint[watch]`)",
    )


def _rule(commands: Any) -> None:
    rule = commands.add_parser(
        "rule",
        help="explain a rule: why it matters and how to fix it",
        description="Print the explanation of each CODE (or of every rule with --all).",
    )
    rule.add_argument(
        "codes", nargs="*", metavar="CODE", help="a rule code or name (TEM001, untracked-flag)"
    )
    rule.add_argument("--all", action="store_true", help="explain every rule")


def _fix(commands: Any) -> None:
    fix = commands.add_parser(
        "fix",
        help="rewrite fixable findings in place",
        description=f"Apply the safe fixes of {fixable_codes()} in place (atomic writes; files "
        "with nothing to fix are not touched; each file is named as it is written). Exit 0: no "
        "finding left, 1: findings remain (or, with --check/--diff, something would change), "
        "2: usage error or a file that could not be read, parsed or written.",
    )
    _common(fix)
    fix.add_argument("--diff", action="store_true", help="print a unified diff and write nothing")
    fix.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 when a fix would change something or findings remain",
    )
    fix.add_argument(
        "--unsafe-fixes",
        action="store_true",
        default=None,
        help="also apply unsafe fixes (unresolved callees, values with calls, forwarded "
        "parameters; see docs/fixes.md)",
    )
    _selection_flags(fix, "fix and count")


def _explain(commands: Any) -> None:
    explain = commands.add_parser(
        "explain",
        help="print the findings at PATH:LINE with the flag's whole life",
        description="Check the project that holds PATH (its repository root, else the directory "
        "of its configuration file, else its own directory), so that re-arming in other files "
        "is seen, and print each finding at LINE with every step of its evidence.",
    )
    _common(explain)
    explain.add_argument("place", metavar="PATH:LINE", help="a file and a line of it")


def fixable_codes() -> str:
    """The codes whose rule has a fix, from the rule table (``TEM001, TEM002 and TEM003``)."""
    from lint_rules.rules import RULES

    codes = [code for code, rule in RULES.items() if rule.fix != "none"]
    return ", ".join(codes[:-1]) + " and " + codes[-1] if len(codes) > 1 else "".join(codes)


def _selection_flags(parser: argparse.ArgumentParser, verb: str) -> None:
    """``--select``/``--extend-select``/``--ignore``/``--extend-ignore`` as ruff layers them on
    the configuration (docs/config.md, "Choosing rules")."""
    parser.add_argument(
        "--select",
        metavar="CODES",
        help=f"{verb} only codes starting with these (comma list); replaces the configured "
        "selection, so it also re-enables a configured `ignore`",
    )
    parser.add_argument(
        "--extend-select", metavar="CODES", help="add these codes to the configured selection"
    )
    parser.add_argument(
        "--ignore",
        metavar="CODES",
        help="also leave out codes starting with these (added to the configured `ignore`)",
    )
    parser.add_argument(
        "--extend-ignore", metavar="CODES", help="the same as --ignore (flake8's spelling)"
    )


class Configuration(Frozen):
    """The settings of each file (``resolver``) and the excludes of each path (``excludes``)."""

    __slots__ = ("resolver", "flag_excludes", "replace_excludes", "_same")
    _fields = ("resolver", "flag_excludes", "replace_excludes")

    resolver: ConfigResolver
    flag_excludes: tuple[ExcludePattern, ...]
    replace_excludes: bool
    """``--exclude`` was given: it replaces the configured ``exclude``."""

    def __init__(
        self,
        resolver: ConfigResolver,
        flag_excludes: tuple[ExcludePattern, ...],
        replace_excludes: bool = False,
    ) -> None:
        self._fill(locals())

    def excludes(self, path: str, is_dir: bool = False) -> tuple[ExcludePattern, ...]:
        """``--exclude`` globs, then the ``exclude`` of the configuration that governs ``path``
        (its parent directory's, relative to that file's directory). ``--exclude`` replaces the
        configured ``exclude``; ``extend-exclude`` always applies."""
        resolver = self.resolver
        single = resolver.isolated or resolver.config is not None
        if single:  # one configuration for every path: its excludes asked once
            same = getattr(self, "_same", None)
            if same is not None:
                return same  # type: ignore[no-any-return]
        folder = os.path.dirname(os.path.abspath(path)) if is_dir else path
        settings = resolver.settings_for(folder)
        globs = settings.extend_exclude if self.replace_excludes else settings.excludes
        anchor = settings.root or os.getcwd()
        found = (*self.flag_excludes, *(ExcludePattern(glob, anchor) for glob in globs))
        if single:
            object.__setattr__(self, "_same", found)
        return found

    def settings_of(self, path: str) -> Settings:
        """The settings that apply to one file: the one call site for per-file settings."""
        return self.resolver.settings_for(path)


def _has_table(config: str) -> bool:
    from pathlib import Path

    from lint_rules.settings import has_table

    return has_table(Path(config))


def configure(args: argparse.Namespace) -> Configuration:
    """The per-file configuration: files found per directory, ``--config``, ``--isolated``, flags.

    Every configuration file that applies to a path named is read and checked here, before
    any file is processed; those further down are checked when discovery reaches them.
    """
    overrides = flag_overrides(
        guard_functions=args.guard_functions,
        tracked_functions=args.tracked_functions,
        import_helpers=args.import_helpers,
        unresolved=args.unresolved,
        te_version=getattr(args, "te_version", None),
        fix_strategy=args.fix_strategy,
        guard_import=args.guard_import,
        guard_config=args.guard_config,
        per_file_ignores=args.per_file_ignores,
        extend_per_file_ignores=args.extend_per_file_ignores,
        docs_url=args.docs_url,
        project_root=args.project_root,
        select=getattr(args, "select", None),
        extend_select=getattr(args, "extend_select", None),
        ignore=getattr(args, "ignore", None),
        extend_ignore=getattr(args, "extend_ignore", None),
        unsafe_fixes=getattr(args, "unsafe_fixes", None) or None,
    )
    resolver = ConfigResolver(config=args.config, isolated=args.isolated, overrides=overrides)
    if args.config and not args.isolated and not _has_table(args.config):
        import sys

        print(
            f"{PROG}: warning: {args.config} has no [{TABLE}] table: the defaults apply",
            file=sys.stderr,
        )
    for path in args.paths:
        resolver.check_path(path)
    cwd = os.getcwd()
    given = [*(args.exclude or ()), *args.extend_exclude]
    flag_excludes = tuple(
        ExcludePattern(glob, cwd) for value in given for glob in split_list(value)
    )
    return Configuration(resolver, flag_excludes, replace_excludes=args.exclude is not None)
