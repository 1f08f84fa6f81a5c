"""User settings: one table of options, validated when they load, found per file like ruff's.

Names follow one scheme (docs/config.md): the ``[tool.te-microbatch-lint]`` key ``KEY`` is
``--KEY`` on the command line (``te-microbatch-lint`` and libcst's runner) and ``te-KEY`` in
flake8's configuration (``--te-KEY`` on flake8's command line; flake8 wants a plugin prefix).
Older spellings stay accepted as aliases (``Option.aliases``).

Every value is checked when it is read (type, choice, dotted name, expression, rule code), and a
bad one is a ``SettingsError`` whose text is one line naming the key and where it came from; the
faces turn it into exit 2. ``ConfigResolver`` finds, for each file, the nearest
``pyproject.toml`` above it that has a ``[tool.te-microbatch-lint]`` table (``--config``
overrides, ``--isolated`` ignores them all), the same way for the CLI, the pre-commit hooks, the
libcst runner and the flake8 plugin.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

from lint_rules.rules import (
    DEFAULT_GUARD_CONFIG,
    DEFAULT_GUARD_FUNCTIONS,
    DEFAULT_GUARD_IMPORT,
    RULES,
)
from lint_rules.selection import SELECTION_FIELDS, warn_lookalike
from lint_rules.setting_options import (  # noqa: F401 - re-exported: the table lives there
    _BY_FIELD,
    _KEY_ALIASES,
    DEFAULT_IMPORT_HELPERS,
    OPTION_BY_KEY,
    OPTIONS,
    STRATEGY_CHOICES,
    TABLE,
    UNRESOLVED_CHOICES,
    Option,
    SettingsError,
    guard_config_problem,
    guard_import_problem,
    split_list,
)
from lint_rules.slotted import Frozen, replace

TYPE_CHECKING = False  # `typing` is not imported at run time (start-up)
if TYPE_CHECKING:
    from typing import Any, Callable


class Settings(Frozen):
    """What the analysis, the fixer and the faces need to know about the user's project."""

    __slots__ = (
        "guard_functions",
        "tracked_functions",
        "import_helpers",
        "unresolved",
        "te_version",
        "fix_strategy",
        "guard_import",
        "guard_config",
        "unsafe_fixes",
        "exclude",
        "extend_exclude",
        "project_root",
        "select",
        "extend_select",
        "ignore",
        "extend_ignore",
        "per_file_ignores",
        "extend_per_file_ignores",
        "docs_url",
        "file_ignored",
        "config_file",
        "enabled",
        "sources",
    )
    _uncompared = frozenset({"config_file", "sources"})
    """Not in ``==`` or the hash: where the values came from."""

    guard_functions: tuple[str, ...]
    tracked_functions: tuple[str, ...]
    import_helpers: tuple[str, ...]
    unresolved: str
    te_version: str
    """The TE release (``te-version``); ``""``: inferred per file (``te_release``)."""
    fix_strategy: str
    guard_import: str
    guard_config: str
    unsafe_fixes: bool
    exclude: tuple[str, ...]
    extend_exclude: tuple[str, ...]
    project_root: str
    select: tuple[str, ...]
    extend_select: tuple[str, ...]
    ignore: tuple[str, ...]
    extend_ignore: tuple[str, ...]
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...]
    extend_per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...]
    docs_url: str
    file_ignored: frozenset[str]
    """The codes ``per-file-ignores`` leave out in the one file these settings were asked for
    (``ConfigResolver.settings_for``; ``selection.per_file_ignored``)."""
    config_file: str | None
    """The ``pyproject.toml`` these came from (its directory anchors ``exclude``), or None."""
    enabled: frozenset[str] | None
    """The codes reported, once every layer is applied (``selection``); None: from this
    object's own ``select``/``ignore`` keys alone."""
    sources: tuple[tuple[str, str], ...]
    """``(key, where it was set)`` for each key not at its default (``--show-settings``)."""

    def __init__(
        self,
        guard_functions: tuple[str, ...] = DEFAULT_GUARD_FUNCTIONS,
        tracked_functions: tuple[str, ...] = (),
        import_helpers: tuple[str, ...] = DEFAULT_IMPORT_HELPERS,
        unresolved: str = "ignore",
        te_version: str = "",
        fix_strategy: str = "none",
        guard_import: str = DEFAULT_GUARD_IMPORT,
        guard_config: str = DEFAULT_GUARD_CONFIG,
        unsafe_fixes: bool = False,
        exclude: tuple[str, ...] = (),
        extend_exclude: tuple[str, ...] = (),
        project_root: str = "",
        select: tuple[str, ...] = (),
        extend_select: tuple[str, ...] = (),
        ignore: tuple[str, ...] = (),
        extend_ignore: tuple[str, ...] = (),
        per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = (),
        extend_per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = (),
        docs_url: str = "",
        file_ignored: frozenset[str] = frozenset(),
        config_file: str | None = None,
        enabled: frozenset[str] | None = None,
        sources: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self._fill(locals())
        self._check()

    def _check(self) -> None:
        """Each option's check, on the values not at their default."""
        for option in OPTIONS:
            value = getattr(self, option.field)
            if not isinstance(value, str) and isinstance(value, list):
                value = tuple(value)
            if type(value) is type(option.default) and value == option.default:
                continue  # an option's default passes its check (tests/test_settings.py)
            option.check(option.key, value)

    @property
    def root(self) -> str | None:
        """The directory ``exclude`` globs are relative to (the config file's)."""
        return os.path.dirname(self.config_file) if self.config_file else None

    @property
    def excludes(self) -> tuple[str, ...]:
        return (*self.exclude, *self.extend_exclude)

    def reports(self, code: str) -> bool:
        """Whether the selection keeps findings of ``code`` (ruff's layers and prefix rules)."""
        enabled = self.enabled
        if code in self.file_ignored:
            return False
        if enabled is None:
            from lint_rules.selection import Layer, resolve

            layer = Layer.of("", {f: getattr(self, f) for f in SELECTION_FIELDS})
            enabled = resolve([layer], RULES)
        return code in enabled

    def with_extra_guards(self, names: list[str] | tuple[str, ...]) -> Settings:
        """Extend (never replace) the guard list, keeping order and dropping repeats."""
        merged = tuple(dict.fromkeys((*self.guard_functions, *names)))
        return replace(self, guard_functions=merged)


DEFAULT_SETTINGS = Settings()


# ------------------------------------------------------------------------------------- loading


def _read_table(pyproject: Path) -> dict[str, Any] | None:
    """``[tool.te-microbatch-lint]`` of ``pyproject``, or None when it has no such table."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.9/3.10 only
        import tomli as tomllib
    try:
        raw = pyproject.read_bytes()
        warn_lookalike(pyproject, raw, TABLE)
        if b"te-microbatch-lint" not in raw:
            return None  # no table: not worth parsing (and an unrelated broken file is fine)
        data = tomllib.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise SettingsError(f"{pyproject}: cannot read configuration: {error}") from None
    tool = data.get("tool", {})
    table = tool.get("te-microbatch-lint") if isinstance(tool, dict) else None
    if table is None:
        return None
    if not isinstance(table, dict):
        raise SettingsError(f"{pyproject}: [{TABLE}] must be a table, not {table!r}")
    return table


def _file_values(pyproject: Path, table: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, value in table.items():
        canonical = key if key in OPTION_BY_KEY else _KEY_ALIASES.get(key)
        if canonical is None:
            import difflib

            known = [*OPTION_BY_KEY, *_KEY_ALIASES]
            close = difflib.get_close_matches(key, known, n=1)
            hint = f" (did you mean {_KEY_ALIASES.get(close[0], close[0])!r}?)" if close else ""
            raise SettingsError(f"{pyproject}: unknown key {key!r} in [{TABLE}]{hint}")
        option = OPTION_BY_KEY[canonical]
        if option.field in values:  # `unsafe-fixes` and `unsafe_fixes` in one table
            raise SettingsError(
                f"{pyproject}: [{TABLE}] sets {option.key!r} twice (as {key!r} too): keep one"
            )
        try:
            _toml_type(option, value)
            values[option.field] = option.check(option.key, value)
        except SettingsError as error:
            raise SettingsError(f"{pyproject}: [{TABLE}] {error}") from None
    return values


def _toml_type(option: Option, value: object) -> None:
    """TOML values are typed: a string where a list or a boolean belongs is an error, as in
    ruff. (flake8's config and the command line are text: there ``"a, b"`` is a list.)"""
    if isinstance(value, str) and isinstance(option.default, tuple):
        raise SettingsError(f"{option.key} must be a list of strings, not {value!r}")
    if isinstance(value, str) and isinstance(option.default, bool):
        raise SettingsError(f"{option.key} must be true or false, not {value!r}")


def _flag_values(overrides: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, value in overrides.items():
        if value is None:
            continue
        option = _BY_FIELD.get(name)
        if option is None:
            raise SettingsError(f"unknown setting {name!r}")
        try:
            values[name] = option.check(option.flag, value)
        except SettingsError as error:
            raise SettingsError(f"command line: {error}") from None
    return values


def _extend_per_file(values: dict[str, Any], layer: dict[str, Any]) -> None:
    """``extend-per-file-ignores`` adds up over the layers (as in ruff), where every other key's
    last layer wins."""
    if "extend_per_file_ignores" in layer and "extend_per_file_ignores" in values:
        merged = (*values["extend_per_file_ignores"], *layer["extend_per_file_ignores"])
        layer["extend_per_file_ignores"] = merged


def load_settings(pyproject: Path | None, overrides: dict[str, Any] | None = None) -> Settings:
    """Settings from ``[tool.te-microbatch-lint]`` of ``pyproject``, then ``overrides``.

    Each value is checked as it is read; a bad one raises ``SettingsError`` naming the key and
    the file (or the command line). ``guard-functions`` adds to the default guard.
    """
    from lint_rules.selection import Layer, extend_chain, resolve

    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    layers = []
    config_file = None
    if pyproject is not None:
        for path, table in extend_chain(pyproject, _read_table, SettingsError):
            layer = _file_values(path, table)
            layers.append(Layer.of(str(path), layer))
            _extend_per_file(values, layer)
            values.update(layer)
            sources.update(dict.fromkeys(layer, str(path)))
        config_file = str(Path(os.path.abspath(pyproject)))
    flags = _flag_values(overrides or {})
    layers.append(Layer.of("command line", flags))
    _extend_per_file(values, flags)
    values.update(flags)
    sources.update(dict.fromkeys(flags, "command line"))
    guards = values.pop("guard_functions", ())
    settings = Settings(
        **values,
        config_file=config_file,
        enabled=resolve(layers, RULES),
        sources=tuple(sorted(sources.items())),
    )
    return settings.with_extra_guards(guards)


def with_te_release(settings: Settings, folder: str) -> Settings:
    """``settings`` with ``te-version`` inferred from the project of ``folder`` when it is not
    set (``te_release.infer``), and where it came from in ``sources``."""
    if settings.te_version:
        return settings
    from lint_rules.te_release import infer

    inferred = infer(folder)
    key = (id(settings), inferred)
    known = _WITH_RELEASE.get(key)
    if known is not None and known[0] is settings:
        return known[1]  # one object per configuration and project (callers compare them)
    sources = (
        *(s for s in settings.sources if s[0] != "te_version"),
        ("te_version", inferred.source),
    )
    result = replace(settings, te_version=inferred.version, sources=tuple(sorted(sources)))
    _WITH_RELEASE[key] = (settings, result)
    return result


_WITH_RELEASE: dict[tuple[int, object], tuple[Settings, Settings]] = {}
"""``with_te_release``'s answers (the settings object is kept, so its id is not reused)."""


def has_table(pyproject: Path) -> bool:
    """Whether ``pyproject`` exists and has a ``[tool.te-microbatch-lint]`` table."""
    return pyproject.is_file() and _read_table(pyproject) is not None


def ancestors(folder: str) -> Iterator[str]:
    """``folder`` (made absolute) and every folder above it, up to the root."""
    folder = os.path.abspath(folder)
    while True:
        yield folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return
        folder = parent


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` with our table at or above ``start`` (file or directory)."""
    folder = os.path.abspath(start)
    if not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    for above in ancestors(folder):
        candidate = Path(above, "pyproject.toml")
        if has_table(candidate):
            return candidate
    return None


_NOT_ENTERED = frozenset({"venv", "__pycache__", "node_modules", "build", "dist", "site-packages"})


class ConfigResolver:
    """The settings of each file: the nearest configuration above it, then the flags.

    ``config`` (a ``pyproject.toml``) applies to every file; ``isolated`` ignores every
    configuration file; otherwise each file gets the nearest ``pyproject.toml`` above it that has
    a ``[tool.te-microbatch-lint]`` table (defaults when there is none). ``overrides`` (by field
    name, see ``flag_overrides``) win over the file. Lookups are cached per directory and
    each configuration file is read and checked once. Picklable (for worker processes).
    """

    def __init__(
        self,
        config: str | Path | None = None,
        isolated: bool = False,
        overrides: dict[str, Any] | None = None,
    ) -> None:
        self.overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
        self.isolated = isolated
        self.config = Path(os.path.abspath(config)) if config is not None else None
        self._by_folder: dict[str, Settings] = {}
        self._by_file: dict[Path | None, Settings] = {}
        self._narrowed: dict[tuple[int, frozenset[str]], Settings] = {}
        self._by_path: dict[str, Settings] = {}
        self._released: dict[str, Settings] = {}
        """Each folder's settings with its project's TE release (``with_te_release``)."""
        if self.config is not None and not self.config.is_file():
            what = "is not a regular file" if self.config.exists() else "does not exist"
            raise SettingsError(f"{config}: configuration file {what}")
        # Fail at load, not on the first file: the flags, and an explicit file, are checked now.
        self._load(self.config if not isolated else None)

    def _load(self, pyproject: Path | None) -> Settings:
        settings = self._by_file.get(pyproject)
        if settings is None:
            settings = load_settings(pyproject, self.overrides)
            self._by_file[pyproject] = settings
        return settings

    def _folder_settings(self, folder: str) -> Settings:
        settings = self._by_folder.get(folder)
        if settings is not None:
            return settings
        candidate = Path(folder, "pyproject.toml")
        if has_table(candidate):
            settings = self._load(candidate)
        else:
            parent = os.path.dirname(folder)
            settings = self._load(None) if parent == folder else self._folder_settings(parent)
        self._by_folder[folder] = settings
        return settings

    def check_path(self, path: str | Path) -> None:
        """Read and check now the configuration files that apply to ``path`` (a file or a
        folder), as ``settings_for`` would; the TE release, which no configuration can make
        wrong, is inferred only when a file asks for its settings."""
        if self.isolated or self.config is not None:
            return  # the one configuration (or none) was loaded and checked by __init__
        absolute = os.path.abspath(path)
        self._folder_settings(absolute if os.path.isdir(absolute) else os.path.dirname(absolute))

    def settings_for(self, path: str | Path) -> Settings:
        """Settings for a file (or, given a directory, for the files in it): answered once per
        path (a run asks for a file's settings several times: its digest, its project, its
        findings), as its folder's configuration and TE release are."""
        absolute = os.path.abspath(path)
        known = self._by_path.get(absolute)
        if known is None:
            known = self._by_path[absolute] = self._settings_for(absolute)
        return known

    def _settings_for(self, absolute: str) -> Settings:
        if self.isolated:  # the same for a file and a folder: no need to ask which it is
            return self._for_file(absolute, self._load(None))
        is_dir = os.path.isdir(absolute)
        folder = absolute if is_dir else os.path.dirname(absolute)
        settings = self._released.get(folder)
        if settings is None:  # once per folder: its files share it
            if self.config is not None:
                settings = with_te_release(self._load(self.config), folder)
            else:
                settings = with_te_release(self._folder_settings(folder), folder)
            self._released[folder] = settings
        if self.config is not None:
            return self._for_file(absolute, settings)
        return settings if is_dir else self._for_file(absolute, settings)

    def _for_file(self, absolute: str, settings: Settings) -> Settings:
        """``settings`` with the codes its ``per-file-ignores`` leave out in this file."""
        if not (settings.per_file_ignores or settings.extend_per_file_ignores):
            return settings
        from lint_rules.selection import per_file_ignored

        dropped = per_file_ignored(settings, absolute)
        if not dropped:
            return settings
        key = (id(settings), dropped)
        narrowed = self._narrowed.get(key)
        if narrowed is None:
            narrowed = self._narrowed[key] = replace(settings, file_ignored=dropped)
        return narrowed

    def check_tree(self, root: str | Path, skip: Callable[[str], bool] | None = None) -> None:
        """Read and check now every configuration file at or below ``root`` (a directory).

        For a face that meets files one at a time, in worker processes (flake8): a bad file
        below the paths named is then a usage error at load instead of a failure mid-run.
        Hidden directories, the usual tool directories and those ``skip(path)`` refuses (the
        face's own excludes) are not entered.
        """
        if self.isolated or self.config is not None or not os.path.isdir(root):
            return
        stack = [os.path.abspath(root)]
        while stack:
            folder = stack.pop()
            self._folder_settings(folder)
            try:
                with os.scandir(folder) as entries:
                    for entry in entries:
                        if entry.name.startswith(".") or entry.name in _NOT_ENTERED:
                            continue
                        if entry.is_dir(follow_symlinks=False) and not (skip and skip(entry.path)):
                            stack.append(entry.path)
            except OSError:
                continue
