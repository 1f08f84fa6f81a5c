"""The flake8 face: a thin adapter from flake8's tree and options to the analysis core."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

from lint_rules import __version__
from lint_rules.analysis import analyze_tree, mentions_flag
from lint_rules.settings import DEFAULT_SETTINGS, UNRESOLVED_CHOICES, Settings


class TEMicrobatchChecker:
    """flake8 plugin ``TEM``: reuses the ``ast`` tree flake8 already built.

    It asks flake8 for the file's lines as well, so that a file that never spells the flag is
    skipped with a substring test instead of a tree walk.
    """

    name = "te-microbatch-lint"
    version = __version__
    settings: Settings = DEFAULT_SETTINGS

    def __init__(self, tree: Any, lines: list[str]) -> None:
        self.tree = tree
        self.lines = lines

    @classmethod
    def add_options(cls, parser: Any) -> None:
        parser.add_option(
            "--te-guard-functions",
            default="",
            parse_from_config=True,
            comma_separated_list=True,
            help="Extra guard functions (dotted names) that make an `is_first_microbatch` "
            "value tracked, in addition to is_first_microbatch_tracked.",
        )
        parser.add_option(
            "--te-guard-import",
            default=DEFAULT_SETTINGS.guard_import,
            parse_from_config=True,
            help="Dotted name of the guard that `te-microbatch-lint fix --fix-strategy guard` "
            "inserts; it always counts as a guard. Keep it equal to `guard-import` in "
            "[tool.te-microbatch-lint].",
        )
        parser.add_option(
            "--te-unresolved",
            default="report",
            choices=UNRESOLVED_CHOICES,
            parse_from_config=True,
            help="What to do with calls whose callee cannot be resolved within the file: "
            "report (default) or ignore.",
        )

    @classmethod
    def parse_options(cls, options: argparse.Namespace) -> None:
        guards = getattr(options, "te_guard_functions", None) or []
        if isinstance(guards, str):
            guards = [g.strip() for g in guards.replace(",", " ").split()]
        unresolved = getattr(options, "te_unresolved", None) or "report"
        guard_import = getattr(options, "te_guard_import", None) or DEFAULT_SETTINGS.guard_import
        cls.settings = Settings(unresolved=unresolved, guard_import=guard_import).with_extra_guards(
            list(guards)
        )

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        source = "".join(self.lines)
        if not mentions_flag(source):
            return
        for finding in analyze_tree(self.tree, self.settings, source, fixes=False):
            yield finding.line, finding.col, finding.message, type(self)
