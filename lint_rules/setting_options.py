"""The option table: every setting's key, how its value is checked, and what the docs say.

``settings`` builds ``Settings`` from it; the faces (CLI flags, flake8 options, docs) read it too.
"""

from __future__ import annotations

from lint_rules.rules import (
    DEFAULT_GUARD_CONFIG,
    DEFAULT_GUARD_FUNCTIONS,
    DEFAULT_GUARD_IMPORT,
    RULES,
)

TYPE_CHECKING = False  # `typing` is not imported at run time (start-up)
if TYPE_CHECKING:
    from typing import Any, Callable

TABLE = "tool.te-microbatch-lint"
UNRESOLVED_CHOICES = ("report", "ignore")
STRATEGY_CHOICES = ("none", "guard")


class SettingsError(ValueError):
    """A configuration value is invalid (reported as a usage error, exit 2)."""


# ---------------------------------------------------------------------------------- value checks


def split_list(value: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Accept ``"a,b c"`` or a TOML list; strip blanks, as flake8 does for list options."""
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    return tuple(v.strip() for v in value if v and v.strip())


def _is_dotted(value: str, parts_at_least: int = 1) -> bool:
    parts = value.split(".")
    return len(parts) >= parts_at_least and all(p.isidentifier() for p in parts)


def guard_name_problem(dotted: str) -> str | None:
    """Why the dotted ``module.name`` cannot be the guard the fix imports, or None: each part
    a Python name that is not a keyword and in its NFKC form (Python reads ``ｓｅｌｆ`` as
    ``self``); not a ``__future__`` import, nor ``__debug__``; and the name no builtin or
    dunder, which a module-level import would shadow for the whole module."""
    import builtins
    import keyword
    import unicodedata

    parts = dotted.split(".")
    for part in parts:
        if not part.isidentifier() or keyword.iskeyword(part):
            return f"{part!r} is not a Python name"
        if unicodedata.normalize("NFKC", part) != part:
            return f"{part!r} is read by Python as {unicodedata.normalize('NFKC', part)!r}"
    module, name = ".".join(parts[:-1]), parts[-1]
    if module == "__future__" or parts[0] == "__future__":
        return "a __future__ import cannot be a guard"
    if name.startswith("__") and name.endswith("__"):
        return f"importing {name!r} would replace the module's own {name}"
    if hasattr(builtins, name):
        return f"importing {name!r} would shadow the builtin {name}() in the whole module"
    return None


def guard_import_problem(value: object) -> str | None:
    """Why ``value`` is not a dotted ``module.name`` the fixer can import, or None."""
    if not (isinstance(value, str) and _is_dotted(value, 2)):
        return f"guard-import must be a dotted `module.name`, not {value!r}"
    problem = guard_name_problem(value)
    return f"guard-import {value!r}: {problem}" if problem else None


def guard_config_problem(value: object) -> str | None:
    """Why ``value`` is not a Python expression the guard call can take, or None."""
    if not isinstance(value, str) or not value.strip() or "\n" in value or "\r" in value:
        return f"guard-config must be a one-line Python expression, not {value!r}"
    import ast  # only for a guard-config that is not the default (start-up)

    alone: ast.expr | None
    call: ast.expr | None
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


def _strings(key: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return split_list(value)
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return split_list(value)
    raise SettingsError(f"{key} must be a list of strings, not {value!r}")


DEFAULT_IMPORT_HELPERS: tuple[str, ...] = ("safe_import_from", "safe_import")
"""NeMo's optional-import helpers (``nemo.utils.import_utils``), matched by their last name."""


def _names(key: str, value: object) -> tuple[str, ...]:
    names = _strings(key, value)
    for name in names:
        if not _is_dotted(name):
            raise SettingsError(f"{key} must hold function names (dotted or plain), not {name!r}")
    return names


def _codes(key: str, value: object) -> tuple[str, ...]:
    if isinstance(value, (list, tuple)) and "" in (str(v).strip() for v in value):
        raise SettingsError(f"{key}: an empty rule code selects nothing: remove it, or use ALL")
    codes = tuple(code.upper() for code in _strings(key, value))
    for code in codes:
        if code != "ALL" and not any(known.startswith(code) for known in RULES):
            import difflib

            # Only a near-miss of a full code (TEM01, TEM0001), never a prefix matching nothing.
            near = [known for known in RULES if abs(len(known) - len(code)) <= 1]
            close = difflib.get_close_matches(code, near, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise SettingsError(
                f"{key}: unknown rule code {code!r}{hint}; the codes are "
                f"{', '.join(RULES)} (or a prefix of them, or ALL)"
            )
    return codes


def _choice(choices: tuple[str, ...]) -> Callable[[str, object], str]:
    def check(key: str, value: object) -> str:
        if value not in choices:
            raise SettingsError(f"{key} must be one of {', '.join(choices)}, not {value!r}")
        return value  # type: ignore[return-value]

    return check


def _boolean(key: str, value: object) -> bool:
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if not isinstance(value, bool):
        raise SettingsError(f"{key} must be true or false, not {value!r}")
    return value


def _guard_import(key: str, value: object) -> str:
    problem = guard_import_problem(value)
    if problem:
        raise SettingsError(problem)
    return value  # type: ignore[return-value]


def _guard_config(key: str, value: object) -> str:
    problem = guard_config_problem(value)
    if problem:
        raise SettingsError(problem)
    assert isinstance(value, str)  # guard_config_problem refused anything else
    return value.strip()


def _per_file(key: str, value: object) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``{glob = [codes]}`` (ruff's and flake8's ``per-file-ignores``) as ``((glob, codes), ...)``;
    an already checked value (those pairs) is taken as it is; on the command line, flake8's
    spelling: ``GLOB:CODES`` pairs separated by spaces (``"tests/*:TEM005,TEM001 x.py:TEM"``)."""
    if isinstance(value, str):
        table: dict[str, str] = {}
        for pair in value.split():
            glob, colon, codes = pair.rpartition(":")
            if not colon or not glob:
                raise SettingsError(f"{key} takes GLOB:CODES pairs, not {pair!r}")
            table[glob] = codes
        value = table
    if isinstance(value, (tuple, list)) and all(
        isinstance(pair, (tuple, list)) and len(pair) == 2 for pair in value
    ):
        value = dict(value)
    if not isinstance(value, dict):
        raise SettingsError(f"{key} must be a table of glob = [codes], not {value!r}")
    pairs = []
    for glob, codes in value.items():
        if not isinstance(glob, str) or not glob.strip() or glob.strip() == "!":
            raise SettingsError(f"{key}: a glob must be a non-empty string, not {glob!r}")
        pairs.append((glob.strip(), _codes(f"{key} {glob!r}", codes)))
    return tuple(pairs)


def _url(key: str, value: object) -> str:
    if not isinstance(value, str) or (value and not value.startswith(("https://", "http://"))):
        raise SettingsError(f"{key} must be an http(s) URL, not {value!r}")
    if "example.invalid" in value:
        raise SettingsError(f"{key}: {value!r} does not exist; name where your docs live")
    return value.rstrip("#")


def _te_version(key: str, value: object) -> str:
    """``"1.13"``, ``"2.20.2"``, ``"2"``; ``""`` (the default): inferred from the project."""
    if not isinstance(value, str):
        raise SettingsError(f'{key} must be a TE release such as "1.13" or "2.20", not {value!r}')
    if not value:
        return value  # TE's tables are read only to check a release that is set
    from lint_rules.te import parse_release

    if parse_release(value) is None:
        raise SettingsError(f'{key} must be a TE release such as "1.13" or "2.20", not {value!r}')
    return value.strip()


# ------------------------------------------------------------------------------ the option table


class Option:
    """One setting: its key everywhere, how it is checked, and what the docs say about it.

    ``flake8``: also a flake8 option, spelled ``te-KEY``. ``aliases``: older spellings still
    accepted (pyproject keys or flags, documented in docs/config.md). A plain class: a second
    dataclass would cost milliseconds of start-up for every command.
    """

    __slots__ = ("key", "check", "default", "help", "example", "flake8", "aliases")

    def __init__(
        self,
        key: str,
        check: Callable[[str, object], Any],
        default: Any,
        help: str,
        example: str,
        flake8: bool = False,
        aliases: tuple[str, ...] = (),
    ) -> None:
        self.key, self.check, self.default = key, check, default
        self.help, self.example, self.flake8, self.aliases = help, example, flake8, aliases

    def __repr__(self) -> str:
        return f"Option({self.key!r})"

    @property
    def field(self) -> str:
        return self.key.replace("-", "_")

    @property
    def flag(self) -> str:
        return f"--{self.key}"

    @property
    def flake8_name(self) -> str | None:
        return f"te-{self.key}" if self.flake8 else None


def _folder(key: str, value: object) -> str:
    if not isinstance(value, str):
        raise SettingsError(f"{key} must be a string (a folder), got {value!r}")
    return value


OPTIONS: tuple[Option, ...] = (
    Option(
        "guard-functions",
        _names,
        DEFAULT_GUARD_FUNCTIONS,
        "Functions whose call makes a flag tracked (`flag if guard(config) else None`); added "
        "to the default.",
        '["is_first_microbatch_tracked", "my_project.flags.fp8_tracked"]',
        flake8=True,
        aliases=("--te-guard-functions",),
    ),
    Option(
        "tracked-functions",
        _names,
        (),
        "Project functions whose result is a flag re-armed every step (a tracked value).",
        '["my_project.state.get_is_first_microbatch"]',
        flake8=True,
        aliases=("--te-tracked-functions",),
    ),
    Option(
        "import-helpers",
        _names,
        DEFAULT_IMPORT_HELPERS,
        "Optional-import helpers whose string arguments name a module and a symbol "
        '(`X, HAVE_TE = safe_import_from("transformer_engine.pytorch", "X")`): the first name '
        "bound is that import. Replaces the default.",
        '["safe_import_from", "safe_import", "my_project.utils.try_import"]',
        flake8=True,
    ),
    Option(
        "unresolved",
        _choice(UNRESOLVED_CHOICES),
        "ignore",
        "Calls whose callee nobody can show is TE (not resolved, a package that is not TE, a "
        "TE look-alike, a CUDA-graphed callable): `ignore` them (the default) or `report` them "
        "(strict; docs/rules.md).",
        '"report"',
        flake8=True,
        aliases=("--te-unresolved",),
    ),
    Option(
        "te-version",
        _te_version,
        "",
        'The TE release the project runs (`"1.13"`, `"2.20"`): which TE callables take, '
        "ignore or reject the flag follows it (TEM004). Empty (the default): inferred from the "
        "project's pins (`pyproject.toml` dependencies, `requirements*.txt`, `setup.cfg` "
        "`install_requires`), else the newest release known.",
        '"1.13"',
        flake8=True,
    ),
    Option(
        "fix-strategy",
        _choice(STRATEGY_CHOICES),
        "none",
        "What `fix` writes: `none` (the value becomes `None`) or `guard` "
        "(`value if GUARD(CONFIG) else None`).",
        '"guard"',
    ),
    Option(
        "guard-import",
        _guard_import,
        DEFAULT_GUARD_IMPORT,
        "Dotted `module.name` of the guard the `guard` strategy writes and imports; it always "
        "counts as a guard.",
        '"megatron.core.transformer.module.is_first_microbatch_tracked"',
        flake8=True,
    ),
    Option(
        "guard-config",
        _guard_config,
        DEFAULT_GUARD_CONFIG,
        "The expression the `guard` strategy passes to the guard.",
        '"self.config"',
    ),
    Option(
        "unsafe-fixes",
        _boolean,
        False,
        "`fix` (and the libcst runner) also applies unsafe fixes: unresolved callees, values "
        "with calls, forwarded parameters (docs/fixes.md).",
        "true",
    ),
    Option(
        "exclude",
        _strings,
        (),
        "Globs of paths to skip, relative to the configuration file's directory (a glob "
        "without `/` matches a file or directory name). `--exclude` replaces it.",
        '["third_party/*", "*_pb2.py"]',
    ),
    Option(
        "extend-exclude",
        _strings,
        (),
        "More globs to skip, added to `exclude` (also when `--exclude` replaces it).",
        '["generated/*"]',
    ),
    Option(
        "project-root",
        _folder,
        "",
        "The folder whose files are the project every face judges a file with (relative to "
        "the configuration file). Default: the nearest folder holding pyproject.toml, "
        "setup.cfg or .git, else the current directory.",
        '"src"',
    ),
    Option(
        "select",
        _codes,
        (),
        "Report only these codes (or code prefixes); empty means all.",
        '["TEM001", "TEM004"]',
    ),
    Option(
        "extend-select",
        _codes,
        (),
        "Codes added to `select` (and to the `select` of a file this one extends).",
        '["TEM005"]',
    ),
    Option(
        "ignore",
        _codes,
        (),
        "Do not report these codes (or code prefixes).",
        '["TEM005"]',
    ),
    Option(
        "extend-ignore",
        _codes,
        (),
        "Codes added to `ignore` (as flake8 spells it).",
        '["TEM004"]',
    ),
    Option(
        "per-file-ignores",
        _per_file,
        (),
        "Codes (or prefixes) not reported in the files a glob matches: `{glob = [codes]}`, as in "
        "ruff and flake8. A glob is relative to the configuration file's directory (one without "
        "`/` matches the file name too); `!glob` means the files it does not match.",
        '{ "tests/*" = ["TEM005"], "legacy.py" = ["TEM"] }',
    ),
    Option(
        "extend-per-file-ignores",
        _per_file,
        (),
        "More `per-file-ignores`, added to them; those of the files this one extends, of this "
        "file and of the command line add up.",
        '{ "scripts/*" = ["TEM004"] }',
    ),
    Option(
        "docs-url",
        _url,
        "",
        "Where your copy of docs/rules.md is shown (your git server's page of it): JSON `url` "
        "and SARIF `helpUri` are this URL and `#` the rule's anchor. Unset, they are left out "
        "and SARIF carries the rule's help text alone.",
        '"https://git.example.com/ml/te-microbatch-lint/blob/main/docs/rules.md"',
    ),
)

OPTION_BY_KEY: dict[str, Option] = {o.key: o for o in OPTIONS}
_BY_FIELD: dict[str, Option] = {o.field: o for o in OPTIONS}
_KEY_ALIASES: dict[str, str] = {o.field: o.key for o in OPTIONS if o.field != o.key}
"""``guard_functions`` was read as ``guard-functions`` by the first release: still accepted."""
