"""User settings shared by every face, and their loading from ``pyproject.toml``.

The keys are the same everywhere: flake8 options ``--te-guard-functions`` and
``--te-unresolved``; ``[tool.te-microbatch-lint]`` keys ``guard-functions``, ``unresolved``,
``fix-strategy``, ``guard-import``, ``guard-config``, ``unsafe-fixes``, ``exclude``,
``tracked-functions``; CLI flags
win over the file.
"""

from __future__ import annotations

import ast
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
    unsafe_fixes: bool = False
    tracked_functions: tuple[str, ...] = ()
    """Project functions whose result is a tracked flag (re-armed every step by the project)."""

    def __post_init__(self) -> None:
        for problem in (
            guard_import_problem(self.guard_import),
            guard_config_problem(self.guard_config),
        ):
            if problem:
                raise SettingsError(problem)
        if not isinstance(self.unsafe_fixes, bool):
            raise SettingsError(f"unsafe-fixes must be true or false, not {self.unsafe_fixes!r}")
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


def guard_import_problem(value: object) -> str | None:
    """Why ``value`` is not a dotted ``module.name`` the fixer can import, or None."""
    parts = value.split(".") if isinstance(value, str) else []
    if len(parts) < 2 or not all(p.isidentifier() for p in parts):
        return f"guard-import must be a dotted `module.name`, not {value!r}"
    return None


def guard_config_problem(value: object) -> str | None:
    """Why ``value`` is not a Python expression the guard call can take, or None."""
    if not isinstance(value, str) or not value.strip() or "\n" in value or "\r" in value:
        return f"guard-config must be a one-line Python expression, not {value!r}"
    try:  # one expression, and the same one once written into `guard(CONFIG)`
        alone = ast.parse(value.strip(), mode="eval").body
        call = ast.parse(f"guard({value.strip()})", mode="eval").body
    except SyntaxError:
        alone = call = None
    if not (
        isinstance(call, ast.Call)
        and len(call.args) == 1
        and not call.keywords
        and ast.dump(call.args[0]) == ast.dump(alone)  # type: ignore[arg-type]
    ):
        return f"guard-config must be a Python expression, not {value!r}"
    return None


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
    unsafe_fixes: bool | None = None,
    te_tracked_functions: str | None = None,
) -> dict[str, Any]:
    """Command-line flags (CLI or libcst runner) as overrides for ``load_settings``."""
    return {
        "guard_functions": split_list(te_guard_functions) if te_guard_functions else None,
        "unresolved": te_unresolved,
        "fix_strategy": fix_strategy,
        "guard_import": guard_import,
        "guard_config": guard_config,
        "unsafe_fixes": unsafe_fixes or None,
        "tracked_functions": split_list(te_tracked_functions) if te_tracked_functions else None,
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
    tracked = split_list(values.pop("tracked_functions", ()))
    try:
        settings = Settings(**values, exclude=exclude, tracked_functions=tracked)
    except SettingsError as error:
        key = str(error).split(" ", 1)[0].replace("-", "_")
        from_file = key in {_KEYS.get(k, k) for k in raw} and (overrides or {}).get(key) is None
        raise SettingsError(f"{pyproject}: {error}" if from_file else str(error)) from None
    return settings.with_extra_guards(guards)
