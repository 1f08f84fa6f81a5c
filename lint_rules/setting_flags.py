"""The settings that the command line (``te-microbatch-lint``, the libcst runner) also takes as
flags: their ``argparse`` declaration, and the values given, by field name, for
``settings.load_settings``."""

from __future__ import annotations

from lint_rules.settings import (
    _BY_FIELD,
    OPTION_BY_KEY,
    STRATEGY_CHOICES,
    UNRESOLVED_CHOICES,
)

TYPE_CHECKING = False  # `typing` is not imported at run time (start-up)
if TYPE_CHECKING:
    from typing import Any


def flag_overrides(**flags: Any) -> dict[str, Any]:
    """Command-line values by field name (``guard_functions=...``) for ``load_settings``.

    Old spellings are accepted as names too (``te_guard_functions``, ``te_unresolved``);
    values that are None (a flag not given) are dropped.
    """
    overrides: dict[str, Any] = {}
    for name, value in flags.items():
        if value is None or (value is False and name.endswith("unsafe_fixes")):
            continue
        key = name[3:] if name.startswith("te_") and name[3:] in _BY_FIELD else name
        if key not in _BY_FIELD:
            raise TypeError(f"flag_overrides: unknown setting {name!r}")
        overrides[key] = value
    return overrides


_FLAGS: tuple[tuple[str, str | None, str], ...] = (
    (
        "guard-functions",
        "NAMES",
        "extra tracking-guard functions, comma separated (added to the defaults)",
    ),
    ("tracked-functions", "NAMES", "functions whose result is a tracked flag, comma separated"),
    ("import-helpers", "NAMES", "optional-import helpers, comma separated (replace the default)"),
    ("unresolved", None, "ignore (default) or report calls whose callee nobody can show is TE"),
    ("te-version", "X.Y", "the TE release the project runs (default: inferred from its pins)"),
    (
        "fix-strategy",
        None,
        "none (default): the value becomes None; guard: `v if GUARD(CONFIG) else None`",
    ),
    ("guard-import", "DOTTED.NAME", "GUARD for the guard strategy, imported once per file"),
    ("guard-config", "EXPR", "CONFIG for the guard strategy (default: self.config)"),
    (
        "per-file-ignores",
        "GLOB:CODES",
        "leave CODES out of the files GLOB matches (space-separated pairs, flake8's spelling); "
        "replaces the configured per-file-ignores",
    ),
    ("extend-per-file-ignores", "GLOB:CODES", "like --per-file-ignores, added to them"),
    ("docs-url", "URL", "where docs/rules.md is shown: JSON `url` and SARIF `helpUri` link there"),
    (
        "project-root",
        "DIR",
        "the folder whose files are the project a file is judged with (default: the nearest "
        "folder holding pyproject.toml, setup.cfg or .git, else the current directory)",
    ),
)
"""The settings the CLI and the libcst runner also take as flags: (key, metavar, help)."""

_CHOICES = {"unresolved": UNRESOLVED_CHOICES, "fix-strategy": STRATEGY_CHOICES}


def add_setting_flags(parser: Any) -> None:
    """Declare ``--KEY`` (and its old ``--te-KEY`` spelling) for each setting in ``_FLAGS`` on an
    ``argparse`` parser: one declaration for every face that takes them as flags; their values
    are checked where the settings load (``flag_overrides``)."""
    for key, metavar, help_text in _FLAGS:
        option = OPTION_BY_KEY[key]
        spellings = [option.flag, *(a for a in option.aliases if a.startswith("--"))]
        parser.add_argument(
            *spellings,
            dest=option.field,
            default=None,
            choices=_CHOICES.get(key),
            metavar=metavar,
            help=help_text,
        )
