"""libcst codemod command, for teams that already drive their rewrites with libcst's runner.

    python -m libcst.tool codemod -x lint_rules.codemod.TEMicrobatchCodemod --no-format src/

It is a face over ``fixing.fix_source`` (the same rewrite as ``te-microbatch-lint fix``): the
module's text goes in, the fixed text comes back as a module. ``--no-format`` matters: the fix
edits only the flagged values, and libcst's default formatter (black) would restyle the rest.
Settings come from the ``[tool.te-microbatch-lint]`` table of the ``pyproject.toml`` nearest to
each file, then from this command's own flags.
"""

from __future__ import annotations

import argparse
import functools
from pathlib import Path
from typing import Any

import libcst as cst
from libcst.codemod import CodemodContext, VisitorBasedCodemodCommand

from lint_rules.settings import (
    STRATEGY_CHOICES,
    UNRESOLVED_CHOICES,
    Settings,
    find_pyproject,
    flag_overrides,
    load_settings,
)


@functools.lru_cache(maxsize=64)
def _settings_for(pyproject: Path | None, overrides: tuple[tuple[str, Any], ...]) -> Settings:
    """One load per configuration file and flag set, not one per file of the run."""
    return load_settings(pyproject, dict(overrides))


class TEMicrobatchCodemod(VisitorBasedCodemodCommand):
    """Apply te-microbatch-lint's fixes (TEM001/2/3/5) to each module libcst's runner hands us."""

    DESCRIPTION = (
        "Rewrite untracked `is_first_microbatch` values passed to Transformer Engine modules "
        "(the fixes of te-microbatch-lint; run with --no-format to keep everything else as is)."
    )

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument(
            "--fix-strategy",
            dest="fix_strategy",
            choices=STRATEGY_CHOICES,
            default=None,
            help="none: the value becomes None; guard: `v if GUARD(CONFIG) else None`",
        )
        arg_parser.add_argument("--guard-import", dest="guard_import", default=None)
        arg_parser.add_argument("--guard-config", dest="guard_config", default=None)
        arg_parser.add_argument(
            "--te-guard-functions",
            dest="te_guard_functions",
            default=None,
            help="extra tracking-guard functions, comma separated",
        )
        arg_parser.add_argument(
            "--te-unresolved", dest="te_unresolved", choices=UNRESOLVED_CHOICES, default=None
        )
        arg_parser.add_argument(
            "--te-config",
            dest="te_config",
            default=None,
            help="pyproject.toml to read (default: the nearest one above each file)",
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
        te_guard_functions: str | None = None,
        te_unresolved: str | None = None,
        te_config: str | None = None,
        disable_noqa: bool = False,
    ) -> None:
        super().__init__(context)
        self.overrides: tuple[tuple[str, Any], ...] = tuple(
            flag_overrides(
                te_guard_functions=te_guard_functions,
                te_unresolved=te_unresolved,
                fix_strategy=fix_strategy,
                guard_import=guard_import,
                guard_config=guard_config,
            ).items()
        )
        self.te_config = Path(te_config) if te_config else None
        self.disable_noqa = disable_noqa

    def settings(self) -> Settings:
        pyproject = self.te_config
        if pyproject is None:
            start = Path(self.context.filename) if self.context.filename else Path.cwd()
            pyproject = find_pyproject(start)
        return _settings_for(pyproject, self.overrides)

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        from lint_rules.fixing import fix_source

        result = fix_source(tree.code, self.settings(), disable_noqa=self.disable_noqa)
        for note in result.notes:
            self.warn(note)
        if not result.changed or result.text == tree.code:
            return tree
        # Keep the file's encoding (a coding cookie, a BOM): libcst writes `tree.bytes`.
        config = cst.PartialParserConfig(
            encoding=tree.encoding, default_newline=tree.default_newline
        )
        return cst.parse_module(result.text, config=config)
