"""The flake8 face: a thin adapter from flake8's tree and options to the analysis core.

Its options are the settings marked ``flake8`` in ``lint_rules.settings.OPTIONS``, spelled
``te-KEY`` (``--te-KEY`` on the command line). What flake8's own configuration leaves unset
comes from the ``[tool.te-microbatch-lint]`` table of the ``pyproject.toml`` nearest to each
file, as for the other faces (flake8's ``--isolated`` ignores it too). A bad value, in either
place, is one ``flake8: error: ...`` line and exit 2, like flake8's own usage errors.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import sys
from collections.abc import Iterator
from typing import Any, Callable, NoReturn

from lint_rules import __version__
from lint_rules.analysis import analyze_tree, mentions_flag
from lint_rules.settings import OPTIONS, ConfigResolver, SettingsError

FLAKE8_OPTIONS = tuple(option for option in OPTIONS if option.flake8)


def _usage_error(message: str) -> NoReturn:
    """flake8's usage-error path (argparse's): one line on stderr, exit 2, no traceback."""
    print(f"flake8: error: {message}", file=sys.stderr)
    raise SystemExit(2)


class TEMicrobatchChecker:
    """flake8 plugin ``TEM``: reuses the ``ast`` tree flake8 already built.

    It asks flake8 for the file's lines as well, so that a file that never spells the flag is
    skipped with a substring test instead of a tree walk; only then is the file's
    configuration looked up (cached per directory).
    """

    name = "te-microbatch-lint"
    version = __version__
    resolver: ConfigResolver = ConfigResolver(isolated=True)
    _judge: Any = None

    def __init__(self, tree: Any, lines: list[str], filename: str) -> None:
        self.tree = tree
        self.lines = lines
        self.filename = filename

    @classmethod
    def add_options(cls, parser: Any) -> None:
        for option in FLAKE8_OPTIONS:
            is_list = isinstance(option.default, tuple)
            parser.add_option(
                f"--{option.flake8_name}",
                default=None,
                parse_from_config=True,
                comma_separated_list=is_list,
                help=f"{option.help} Default: from [tool.te-microbatch-lint] in pyproject.toml, "
                f"else {_shown(option.default)}.",
            )

    @classmethod
    def parse_options(cls, options: argparse.Namespace) -> None:
        overrides: dict[str, Any] = {}
        for option in FLAKE8_OPTIONS:
            name = option.flake8_name or option.key  # FLAKE8_OPTIONS: flake8_name is set
            value = getattr(options, name.replace("-", "_"), None)
            if value is None or value == [] or value == "":
                continue  # unset in flake8's configuration: the pyproject table decides
            try:
                overrides[option.field] = option.check(name, value)
            except SettingsError as error:
                _usage_error(f"{error} (flake8 option --{option.flake8_name})")
        try:
            cls.resolver = ConfigResolver(isolated=_isolated(options), overrides=overrides)
            cls._judge = None  # a new configuration: a new judge
            # Validated at load: the configuration of every path named (and of the cwd).
            # flake8 meets files in worker processes, where an error could only be a crash;
            # so every configuration file under the paths named is checked now.
            excluded = _flake8_excluded(options)
            for path in getattr(options, "filenames", None) or ["."]:
                if path == "-":  # stdin: the configuration of the name it is shown as
                    shown = getattr(options, "stdin_display_name", None) or "stdin"
                    cls.resolver.settings_for(shown if shown not in ("-", "stdin") else ".")
                    continue
                cls.resolver.settings_for(path)
                cls.resolver.check_tree(path, skip=excluded)
        except SettingsError as error:
            _usage_error(str(error))

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        source = "".join(self.lines)
        if not mentions_flag(source):
            return
        path = self.filename if self.filename not in ("-", "stdin") else "."
        try:
            settings = self.resolver.settings_for(path)
        except SettingsError as error:  # a file met only now (never a traceback)
            _usage_error(str(error))
        if path != "." and os.path.isfile(path):  # judged with its project, as `check`
            judged = self._judged(path, settings)
            if judged is not None:
                yield from judged
                return
        for finding in analyze_tree(self.tree, settings, source, fixes=False):
            if settings.reports(finding.code):
                yield finding.line, finding.col, flake8_message(finding, path), type(self)

    def _judged(self, path: str, settings: Any) -> list[tuple[int, int, str, type]] | None:
        """The file's findings as ``check`` gives them: judged with its whole project
        (``analysis.faces``), the project's run done once per process. None when the
        project's run failed (a bug, never an input: the file is then judged alone)."""
        judge = type(self).judge()
        try:
            outcome = judge.outcomes([path])[0]
            judge.save()
        except Exception:  # noqa: BLE001  # one face's bug must not end flake8's run
            return None
        root = judge.root_of(path) if path not in judge.alone else None
        where = ""
        if root is not None and root.path != os.getcwd():  # not the obvious one
            where = f" [project {os.path.relpath(root.path)}]"
        return [
            (found.line, found.column - 1, reported_message(found, path) + where, type(self))
            for found in outcome.findings
            if settings.reports(found.code)
        ]

    @classmethod
    def judge(cls) -> Any:
        """This process's ``ProjectJudge`` (flake8 names a project's files one by one)."""
        judge = cls.__dict__.get("_judge")
        if judge is None or judge.settings_of != cls.resolver.settings_for:
            from lint_rules.analysis.faces import ProjectJudge
            from lint_rules.analysis.store import open_cache

            isolated = cls.resolver.isolated
            cache = None if isolated else open_cache(False, None)
            judge = ProjectJudge(cls.resolver.settings_for, cache=cache, isolated=isolated)
            cls._judge = judge
        return judge


def flake8_message(finding: Any, path: str) -> str:
    """The message and its evidence on one line, bounded (``oneline``): flake8 prints one line
    per finding. A place in this file is ``:LINE``, in another ``PATH:LINE``."""
    from lint_rules.oneline import step_text, with_evidence

    steps = (step_text(step.message, step.where()) for step in finding.evidence)
    prefix = len(f"{path}:{finding.line}:{finding.col + 1}: ")
    return with_evidence(
        finding.message, steps, f"te-microbatch-lint explain {path}:{finding.line}", prefix
    )


def _isolated(options: argparse.Namespace) -> bool:
    """flake8's ``--isolated``: its first stage consumes the flag, so the options handed to
    plugins never hold it; the command line says it."""
    return bool(getattr(options, "isolated", False)) or "--isolated" in sys.argv[1:]


def reported_message(found: Any, path: str) -> str:
    """``flake8_message`` for a finding as a run reports it (``records.Reported``)."""
    from lint_rules.oneline import step_text, with_evidence

    steps = [
        step_text(message, f"{'' if where == found.path else where}:{line}" if line else "")
        for where, line, _column, message in found.evidence
    ]
    prefix = len(f"{path}:{found.line}:{found.column}: ")
    explain = f"te-microbatch-lint explain {path}:{found.line}"
    return with_evidence(found.message, steps, explain, prefix)


def _flake8_excluded(options: argparse.Namespace) -> Callable[[str], bool]:
    """flake8's ``--exclude``/``--extend-exclude`` for a directory (its name or its path)."""
    patterns = [
        *(getattr(options, "exclude", None) or ()),
        *(getattr(options, "extend_exclude", None) or ()),
    ]

    def excluded(path: str) -> bool:
        name = os.path.basename(path)
        return any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(path, p) for p in patterns)

    return excluded


def _shown(default: Any) -> str:
    if isinstance(default, tuple):
        return ",".join(default) or "none"
    return str(default)
