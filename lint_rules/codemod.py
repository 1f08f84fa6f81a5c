"""libcst codemod command, for teams that already drive their rewrites with libcst's runner.

    python -m libcst.tool codemod -x te_microbatch_lint.codemod.TEMicrobatchCodemod --no-format src/

(``te_microbatch_lint.codemod`` re-exports this class under a name that a project's own
``lint_rules/`` folder cannot shadow: libcst's runner puts the current directory first on
``sys.path``.)

It is a face over ``fixing.fix_source`` (the same rewrite as ``te-microbatch-lint fix``): the
module's text goes in, the fixed text comes back as a module. ``--no-format`` matters: the fix
edits only the flagged values, and libcst's default formatter (black) would restyle the rest
(or fail every file where black is not installed): without it, the command prints a one-line hint.
Settings come from the ``[tool.te-microbatch-lint]`` table of the ``pyproject.toml`` nearest to
each file (``lint_rules.settings.ConfigResolver``, as for the other faces), then from this
command's own flags, which are spelled as the CLI's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, NoReturn

import libcst as cst
from libcst.codemod import CodemodContext, VisitorBasedCodemodCommand

from lint_rules.setting_flags import add_setting_flags, flag_overrides
from lint_rules.settings import (
    ConfigResolver,
    Settings,
    SettingsError,
)

FORMAT_HINT = (
    "te-microbatch-lint: add --no-format (libcst's formatter restyles each fixed file, needs black)"
)


def _without_no_format() -> bool:
    """Whether libcst's runner was started without ``--no-format`` (it then pipes every changed
    file through its formatter, black by default, and reports 'Failed to codemod' with no
    reason where black is not installed)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    by_libcst = getattr(spec, "name", None) == "libcst.tool" or sys.argv[0].replace(
        "\\", "/"
    ).endswith("libcst/tool.py")
    return by_libcst and "codemod" in sys.argv[1:] and "--no-format" not in sys.argv[1:]


def _usage_error(message: str) -> NoReturn:
    """One line and exit 2, as the other faces do (libcst would print a traceback)."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


_JUDGES: dict[tuple[int, bool], Any] = {}
"""One ``ProjectJudge`` per command instance in each process: the project's run is done once
for all the files libcst's runner hands this process."""


class TEMicrobatchCodemod(VisitorBasedCodemodCommand):
    """Apply te-microbatch-lint's fixes (each rule's that has one) to each module libcst's runner
    hands us."""

    DESCRIPTION = (
        "Rewrite untracked `is_first_microbatch` values passed to Transformer Engine modules "
        "(the fixes of te-microbatch-lint; run with --no-format to keep everything else as is)."
    )

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        add_setting_flags(arg_parser)
        arg_parser.add_argument(
            "--select", dest="select", default=None, help="fix only these codes (prefixes)"
        )
        arg_parser.add_argument(
            "--ignore", dest="ignore", default=None, help="do not fix these codes (prefixes)"
        )
        arg_parser.add_argument(
            "--unsafe-fixes",
            dest="unsafe_fixes",
            action="store_true",
            default=False,
            help="also apply unsafe fixes",
        )
        arg_parser.add_argument(
            "--config",
            "--te-config",
            dest="te_config",
            default=None,
            help="pyproject.toml to read for every file (default: the nearest one above each "
            "file with a [tool.te-microbatch-lint] table)",
        )
        arg_parser.add_argument(
            "--isolated",
            dest="isolated",
            action="store_true",
            default=False,
            help="ignore every configuration file",
        )
        arg_parser.add_argument(
            "--disable-noqa", dest="disable_noqa", action="store_true", default=False
        )

    def __init__(
        self,
        context: CodemodContext,
        fix_strategy: str | None = None,
        guard_import: str | None = None,
        guard_config: str | None = None,
        guard_functions: str | None = None,
        tracked_functions: str | None = None,
        import_helpers: str | None = None,
        unresolved: str | None = None,
        project_root: str | None = None,
        unsafe_fixes: bool = False,
        select: str | None = None,
        ignore: str | None = None,
        te_config: str | None = None,
        isolated: bool = False,
        disable_noqa: bool = False,
        **old_names: Any,
    ) -> None:
        super().__init__(context)
        flags = dict(
            fix_strategy=fix_strategy,
            guard_import=guard_import,
            guard_config=guard_config,
            guard_functions=guard_functions,
            tracked_functions=tracked_functions,
            import_helpers=import_helpers,
            unresolved=unresolved,
            project_root=project_root,
            unsafe_fixes=unsafe_fixes,
            select=select,
            ignore=ignore,
        )
        for name, value in old_names.items():  # te_guard_functions=..., te_unresolved=...
            if value is not None:
                flags[name] = value
        try:
            self.resolver = ConfigResolver(
                config=te_config, isolated=isolated, overrides=flag_overrides(**flags)
            )
            # checked at load, not per file: the configuration above the cwd and every one
            # below it (libcst's workers could only fail file by file)
            self.resolver.settings_for(Path.cwd())
            self.resolver.check_tree(Path.cwd())
        except (SettingsError, TypeError) as error:
            _usage_error(str(error))
        if _without_no_format():
            print(FORMAT_HINT, file=sys.stderr)
        self.disable_noqa = disable_noqa
        self.isolated = isolated

    def settings(self) -> Settings:
        start = self.context.filename or Path.cwd()
        return self.resolver.settings_for(start)

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        text, notes = self._fixed(tree)
        for note in notes:
            self.warn(note)
        if text == tree.code:
            return tree
        # Keep the file's encoding (a coding cookie, a BOM): libcst writes `tree.bytes`.
        config = cst.PartialParserConfig(
            encoding=tree.encoding, default_newline=tree.default_newline
        )
        fixed = cst.parse_module(text, config=config)
        if fixed.code != text and text.endswith("\r"):
            # libcst's parser drops a CR-only file's final CR (its `has_trailing_newline` is
            # False for it); the file keeps it, as `te-microbatch-lint fix` keeps it
            fixed = fixed.with_changes(has_trailing_newline=True)
        return fixed

    def _fixed(self, tree: cst.Module) -> tuple[str, tuple[str, ...]]:
        """The text ``te-microbatch-lint fix`` writes for this module's file (judged with its
        project, ``analysis.faces``), and its notes; the module's own text without a file."""
        filename = self.context.filename
        outcome = self._project_fix(filename) if filename else None
        if outcome is not None and outcome.error is not None:  # the file as it is
            text = tree.code + "\r" if self._ends_with_cr() else tree.code
            return text, (*outcome.notes, outcome.error)
        if outcome is not None and outcome.new_text is not None:
            return outcome.new_text, outcome.notes
        from lint_rules.fixing import fix_source

        result = fix_source(
            tree.code, self.settings(), disable_noqa=self.disable_noqa, encoding=tree.encoding
        )
        return result.text if result.changed else tree.code, tuple(result.notes)

    def _project_fix(self, filename: str) -> Any:
        """What ``fix`` gives the file (an ``Outcome``, its ``new_text``), or None when the
        project's run failed (a bug, never an input: the module is then fixed alone)."""
        from lint_rules.analysis.records import Job
        from lint_rules.cli.running import fix_file

        job = Job(disable_noqa=self.disable_noqa, mode="stdout")
        try:
            return self._judge().outcomes([filename], fix_file, job)[0]
        except Exception:  # noqa: BLE001  # one face's bug must not fail the runner's file
            return None

    def _judge(self) -> Any:
        """This process's ``ProjectJudge`` for the command's settings (one per worker)."""
        from lint_rules.analysis.faces import ProjectJudge
        from lint_rules.analysis.store import open_cache

        key = (id(self.resolver), self.isolated)
        judge = _JUDGES.get(key)
        if judge is None:
            cache = None if self.isolated else open_cache(False, None)
            judge = _JUDGES[key] = ProjectJudge(
                self.resolver.settings_for, cache=cache, isolated=self.isolated
            )
        return judge

    def _ends_with_cr(self) -> bool:
        try:
            with open(self.context.filename or "", "rb") as handle:
                handle.seek(0, 2)
                if handle.tell() == 0:
                    return False
                handle.seek(-1, 2)
                return handle.read(1) == b"\r"
        except (OSError, ValueError):
            return False
