"""User settings shared by every face, and their loading from ``pyproject.toml``.

The keys are the same everywhere: flake8 options ``--te-guard-functions`` and
``--te-unresolved``; ``[tool.te-microbatch-lint]`` keys ``guard-functions``, ``unresolved``,
``fix-strategy``, ``guard-import``, ``guard-config``, ``exclude``; CLI flags win over the file.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from lint_rules.rules import DEFAULT_GUARD_CONFIG, DEFAULT_GUARD_FUNCTIONS, DEFAULT_GUARD_IMPORT

UNRESOLVED_CHOICES = ("report", "ignore")
STRATEGY_CHOICES = ("none", "guard")


class SettingsError(ValueError):
    """A configuration value is invalid (reported as a usage error, exit 2)."""


@dataclass(frozen=True)
class Settings:
    """What the analysis and the fixer need to know about the user's project."""

    guard_functions: tuple[str, ...] = DEFAULT_GUARD_FUNCTIONS
    unresolved: str = "report"
    fix_strategy: str = "none"
    guard_import: str = DEFAULT_GUARD_IMPORT
    guard_config: str = DEFAULT_GUARD_CONFIG
    exclude: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.unresolved not in UNRESOLVED_CHOICES:
            raise SettingsError(
                f"unresolved must be one of {', '.join(UNRESOLVED_CHOICES)}, "
                f"not {self.unresolved!r}"
            )
        if self.fix_strategy not in STRATEGY_CHOICES:
            raise SettingsError(
                f"fix-strategy must be one of {', '.join(STRATEGY_CHOICES)}, "
                f"not {self.fix_strategy!r}"
            )

    def with_extra_guards(self, names: list[str] | tuple[str, ...]) -> Settings:
        """Extend (never replace) the guard list, keeping order and dropping repeats."""
        merged = tuple(dict.fromkeys((*self.guard_functions, *names)))
        return replace(self, guard_functions=merged)


DEFAULT_SETTINGS = Settings()

_KEYS = {f.name.replace("_", "-"): f.name for f in fields(Settings)}


def split_list(value: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Accept ``"a,b c"`` or a TOML list; strip blanks, as flake8 does for list options."""
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    return tuple(v.strip() for v in value if v and v.strip())


def flag_overrides(
    *,
    te_guard_functions: str | None = None,
    te_unresolved: str | None = None,
    fix_strategy: str | None = None,
    guard_import: str | None = None,
    guard_config: str | None = None,
) -> dict[str, Any]:
    """Command-line flags (CLI or libcst runner) as overrides for ``load_settings``."""
    return {
        "guard_functions": split_list(te_guard_functions) if te_guard_functions else None,
        "unresolved": te_unresolved,
        "fix_strategy": fix_strategy,
        "guard_import": guard_import,
        "guard_config": guard_config,
    }


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start`` (a file or a directory)."""
    start = start.resolve()
    for folder in (start, *start.parents) if start.is_dir() else start.parents:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_settings(pyproject: Path | None, overrides: dict[str, Any] | None = None) -> Settings:
    """Settings from ``[tool.te-microbatch-lint]`` of ``pyproject`` then ``overrides``."""
    raw: dict[str, Any] = {}
    if pyproject is not None:
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pragma: no cover - exercised on 3.9/3.10 only
            import tomli as tomllib
        try:
            with open(pyproject, "rb") as handle:
                data = tomllib.load(handle)
        except (OSError, tomllib.TOMLDecodeError) as error:
            raise SettingsError(f"{pyproject}: cannot read configuration: {error}") from error
        raw = dict(data.get("tool", {}).get("te-microbatch-lint", {}))
    values: dict[str, Any] = {}
    for key, value in raw.items():
        name = _KEYS.get(key) or (key if key in _KEYS.values() else None)
        if name is None:
            raise SettingsError(f"{pyproject}: unknown key {key!r} in [tool.te-microbatch-lint]")
        values[name] = value
    for name, value in (overrides or {}).items():
        if value is not None:
            values[name] = value
    guards = split_list(values.pop("guard_functions", ()))
    exclude = split_list(values.pop("exclude", ()))
    settings = Settings(**values, exclude=exclude)
    return settings.with_extra_guards(guards)
