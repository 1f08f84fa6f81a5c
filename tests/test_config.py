"""Configuration like ruff's: validated at load in every face, found per file, one name scheme.

- A bad value, a wrong type, an unknown key or an unknown rule code is one line on stderr that
  names the key and where it came from, and exit 2 (the CLI, flake8, libcst's runner), never a
  traceback and never exit 1 (which CI reads as "findings").
- Each file gets the nearest ``pyproject.toml`` above it with a ``[tool.te-microbatch-lint]``
  table: ``check .`` and ``check sub`` agree, a path outside the cwd keeps its configuration,
  and flake8 and the libcst runner read the same table.
- Every option has one spelling per face (docs/config.md's table), the old ones still work.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import IN_PROCESS_UNSAFE, cli, run_in_process, without_notes

from lint_rules.settings import OPTIONS, ConfigResolver, Settings, SettingsError, load_settings

PROJECT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

TE_FILE = """\
import transformer_engine.pytorch as te
from my_project.layers import ParallelLinear


class Block:
    def __init__(self):
        self.fc = te.Linear(4, 4)
        self.up = ParallelLinear(4, 4)

    def forward(self, x):
        y = self.fc(x, is_first_microbatch=self.flag)
        return self.up(y, is_first_microbatch=self.flag)
"""
"""Line 11: a TE Linear (TEM001 always); line 12: an unresolved callee (only when reported:
``unresolved = "report"``)."""


def run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=120, env=env)


def te_lint(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    if not IN_PROCESS_UNSAFE.intersection(args):  # in this process (helpers.run_in_process)
        return without_notes(run_in_process(list(args), cwd))
    return without_notes(run(*cli(), *args, cwd=cwd))  # one line per finding


def flake8(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run(str(BIN / "flake8"), *args, cwd=cwd)


def codemod(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    command = "lint_rules.codemod.TEMicrobatchCodemod"
    return run(
        sys.executable, "-m", "libcst.tool", "codemod", "-x", command, "--no-format",
        "--hide-progress", *args, cwd=cwd,
    )  # fmt: skip


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def assert_one_line_error(done: subprocess.CompletedProcess, *needles: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if any(n in line for n in needles)]
    assert lines, done.stderr
    assert all(needle in lines[0] for needle in needles), (needles, done.stderr)


# ------------------------------------------------------------------------ validated at load


BAD_PYPROJECT = [
    ("exclude = 5", "exclude"),
    ('unresolved = "maybe"', "unresolved"),
    ("guard-functions = [1, 2]", "guard-functions"),
    ('fix-strategy = "sometimes"', "fix-strategy"),
    ('unsafe-fixes = "yes"', "unsafe-fixes"),
    ('select = ["TEM999"]', "select"),
    ('ignore = ["E501"]', "ignore"),
    ('guard-function = ["x"]', "guard-functions"),  # unknown key: did you mean
    # TOML has types: a string where a list or a boolean is expected is an error, as in ruff
    # (flake8's config and the command line are text, and split lists on commas)
    ('guard-functions = "a, b"', "guard-functions"),
    ('tracked-functions = "my.flag"', "tracked-functions"),
    ('import-helpers = "safe_import"', "import-helpers"),
    ('import-helpers = ["not a name"]', "import-helpers"),
    ('exclude = "build"', "exclude"),
    ('select = "TEM001"', "select"),
    ('unsafe-fixes = "true"', "unsafe-fixes"),
    ('select = [""]', "select"),  # an empty code selected nothing, silently
    ("unsafe-fixes = true\nunsafe_fixes = false", "unsafe-fixes"),  # one key, two spellings
]


@pytest.mark.parametrize(("line", "key"), BAD_PYPROJECT, ids=[b[0] for b in BAD_PYPROJECT])
def test_bad_pyproject_value_is_one_line_and_exit_2(line: str, key: str, tmp_path: Path) -> None:
    config = write(tmp_path / "pyproject.toml", f"[tool.te-microbatch-lint]\n{line}\n")
    write(tmp_path / "model.py", TE_FILE)
    done = te_lint("check", "model.py", cwd=tmp_path)
    assert_one_line_error(done, key, str(config))
    assert done.stdout == ""


def test_unknown_key_suggests_the_closest(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.te-microbatch-lint]\nunresolve = "ignore"\n')
    with pytest.raises(SettingsError, match="did you mean 'unresolved'"):
        load_settings(tmp_path / "pyproject.toml")


@pytest.mark.parametrize("codes", ["TEM999", "E501", "TEM001,X1"])
@pytest.mark.parametrize("flag", ["--select", "--ignore"])
def test_unknown_code_on_the_command_line(flag: str, codes: str, tmp_path: Path) -> None:
    write(tmp_path / "model.py", TE_FILE)
    done = te_lint("check", "--isolated", flag, codes, "model.py", cwd=tmp_path)
    assert_one_line_error(done, flag, "unknown rule code")


@pytest.mark.parametrize(
    ("code", "hint"),
    [("TEM01", "TEM001"), ("TEM0001", "TEM001"), ("TEM9", None), ("TEM1", None), ("TEM999", None)],
)
def test_unknown_code_suggests_only_a_near_miss_of_a_full_code(
    code: str, hint: str | None, tmp_path: Path
) -> None:
    """TEM01 is a mistyped TEM001; TEM9 is a prefix that matches nothing, not a near-miss."""
    write(tmp_path / "model.py", TE_FILE)
    done = te_lint("check", "--isolated", "--select", code, "model.py", cwd=tmp_path)
    assert_one_line_error(done, "--select", "unknown rule code")
    assert done.stderr.count("\n") == 1, done.stderr
    message = done.stderr
    if hint is None:
        assert "did you mean" not in message
    else:
        assert f"(did you mean {hint!r}?)" in message


def test_select_prefixes_and_all(tmp_path: Path) -> None:
    assert Settings(select=("TEM",)).reports("TEM004")
    assert Settings(select=("TEM00",), ignore=("TEM004",)).reports("TEM001")
    assert not Settings(select=("TEM00",), ignore=("TEM004",)).reports("TEM004")
    assert not Settings(ignore=("ALL",)).reports("TEM001")


def test_flake8_bad_value_in_its_own_config(tmp_path: Path) -> None:
    write(tmp_path / "setup.cfg", "[flake8]\nte-unresolved = maybe\n")
    write(tmp_path / "model.py", TE_FILE)
    done = flake8("--select", "TEM", "model.py", cwd=tmp_path)
    assert_one_line_error(done, "te-unresolved", "maybe")


@pytest.mark.parametrize(
    ("line", "key"), [("exclude = 5", "exclude"), ('guard-functions = "a, b"', "guard-functions")]
)
def test_flake8_bad_value_in_pyproject(line: str, key: str, tmp_path: Path) -> None:
    config = write(tmp_path / "pyproject.toml", f"[tool.te-microbatch-lint]\n{line}\n")
    write(tmp_path / "model.py", TE_FILE)
    done = flake8("--select", "TEM", "model.py", cwd=tmp_path)
    assert_one_line_error(done, key, str(config))


def test_flake8_config_splits_lists_on_commas(tmp_path: Path) -> None:
    """flake8's own config is text: a comma-separated list there is the normal spelling."""
    write(tmp_path / "setup.cfg", "[flake8]\nte-guard-functions = my.guard, other.guard\n")
    write(tmp_path / "model.py", TE_FILE)
    done = flake8("--select", "TEM", "model.py", cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr


HELPER_FILE = """\
from my_project.imports import try_import

Linear, HAVE_TE = try_import("transformer_engine.pytorch", "Linear")


class Block:
    def __init__(self):
        self.fc = Linear(4, 4)
        self.flag = True

    def forward(self, x):
        return self.fc(x, is_first_microbatch=self.flag)
"""
"""Line 11: a TE Linear only when ``try_import`` is a configured import helper."""


def test_import_helpers_reach_every_face(tmp_path: Path) -> None:
    """``import-helpers`` from pyproject, the CLI flag and flake8's option: each makes the
    helper's string arguments an import of TE, so the call is a TE ``Linear`` (not unresolved)."""
    write(tmp_path / "model.py", HELPER_FILE)
    plain = te_lint("check", "--isolated", "--unresolved", "report", "model.py", cwd=tmp_path)
    assert "unresolved `self.fc`" in plain.stdout, plain.stdout
    flag = te_lint(
        "check", "--isolated", "--import-helpers", "try_import", "model.py", cwd=tmp_path
    )
    assert "TE Linear `self.fc`" in flag.stdout, flag.stdout
    write(
        tmp_path / "pyproject.toml", '[tool.te-microbatch-lint]\nimport-helpers = ["try_import"]\n'
    )
    config = te_lint("check", "model.py", cwd=tmp_path)
    assert "TE Linear `self.fc`" in config.stdout, config.stdout
    done = flake8(
        "--isolated", "--select", "TEM", "--te-import-helpers=try_import", "model.py", cwd=tmp_path
    )
    assert "TE Linear `self.fc`" in done.stdout, done.stdout


def test_libcst_runner_bad_value(tmp_path: Path) -> None:
    config = write(tmp_path / "pyproject.toml", "[tool.te-microbatch-lint]\nunresolved = 3\n")
    write(tmp_path / "model.py", TE_FILE)
    done = codemod("model.py", cwd=tmp_path)
    assert_one_line_error(done, "unresolved", str(config))
    assert (tmp_path / "model.py").read_text() == TE_FILE


@pytest.mark.parametrize(
    "command",
    [["te-microbatch-lint", "check"], ["flake8", "-j1"], ["flake8", "-j2"], ["libcst.tool"]],
)
def test_bad_config_below_the_paths_named(command: list[str], tmp_path: Path) -> None:
    """Found by discovery (the CLI) or checked at load (flake8, whose workers could only crash)."""
    config = write(tmp_path / "sub" / "pyproject.toml", "[tool.te-microbatch-lint]\nexclude = 5\n")
    write(tmp_path / "sub" / "model.py", TE_FILE)
    write(tmp_path / "top.py", TE_FILE)
    if command[0] == "flake8":
        done = flake8(*command[1:], "--select", "TEM", ".", cwd=tmp_path)
    elif command[0] == "libcst.tool":
        done = codemod(".", cwd=tmp_path)
        assert (tmp_path / "top.py").read_text() == TE_FILE
    else:
        done = te_lint(*command[1:], ".", cwd=tmp_path)
    assert_one_line_error(done, "exclude", str(config))
    assert done.stdout == ""


def test_flake8_does_not_check_what_it_excludes(tmp_path: Path) -> None:
    """A vendored tree flake8 never lints does not stop it with its configuration."""
    write(tmp_path / "vendor" / "pyproject.toml", "[tool.te-microbatch-lint]\nexclude = 5\n")
    write(tmp_path / "vendor" / "model.py", TE_FILE)
    write(tmp_path / "top.py", TE_FILE)
    done = flake8("--select", "TEM", "--extend-exclude", "vendor", ".", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert findings(done, tmp_path, tmp_path) == {("top.py", 11)}


# ------------------------------------------------------------------------ found per file


@pytest.fixture
def nested(tmp_path: Path) -> Path:
    """root/ without a table (a pyproject.toml of another tool), root/sub/ with one."""
    root = tmp_path / "root"
    write(root / "pyproject.toml", "[tool.black]\nline-length = 100\n")
    write(root / "top.py", TE_FILE)
    write(
        root / "sub" / "pyproject.toml",
        '[tool.te-microbatch-lint]\nunresolved = "report"\nexclude = ["gen/*"]\n',
    )
    write(root / "sub" / "inner.py", TE_FILE)
    write(root / "sub" / "gen" / "made.py", TE_FILE)
    write(root / "sub" / "deeper" / "more.py", TE_FILE)
    return root


def findings(done: subprocess.CompletedProcess, base: Path, cwd: Path) -> set[tuple[str, int]]:
    assert done.returncode == 1, done.stderr
    found = set()
    for line in done.stdout.splitlines():
        path, number = line.split(":")[:2]
        found.add(
            (os.path.relpath(os.path.join(cwd, path), base).replace(os.sep, "/"), int(number))
        )
    return found


EXPECTED_SUB = {("sub/inner.py", 11), ("sub/inner.py", 12)}
EXPECTED_SUB |= {("sub/deeper/more.py", 11), ("sub/deeper/more.py", 12)}


def test_check_dot_and_check_sub_agree(nested: Path) -> None:
    whole = findings(te_lint("check", ".", cwd=nested), nested, nested)
    sub = findings(te_lint("check", "sub", cwd=nested), nested, nested)
    inside = findings(te_lint("check", ".", cwd=nested / "sub"), nested, nested / "sub")
    assert {f for f in whole if f[0].startswith("sub/")} == EXPECTED_SUB
    assert sub == EXPECTED_SUB
    assert inside == EXPECTED_SUB
    assert {f for f in whole if f[0] == "top.py"} == {("top.py", 11)}


def test_named_files_get_their_own_config(nested: Path) -> None:
    done = te_lint("check", "top.py", "sub/inner.py", cwd=nested)
    assert findings(done, nested, nested) == {
        ("top.py", 11),
        ("sub/inner.py", 11),
        ("sub/inner.py", 12),
    }


def test_force_exclude_uses_each_files_config(nested: Path) -> None:
    """What pre-commit does: name every file; the sub-project's exclude is relative to sub/."""
    done = te_lint("check", "--force-exclude", "sub/gen/made.py", "sub/inner.py", cwd=nested)
    assert findings(done, nested, nested) == {("sub/inner.py", 11), ("sub/inner.py", 12)}


def test_path_outside_the_cwd_keeps_its_config(nested: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = te_lint("check", str(nested / "sub"), cwd=elsewhere)
    assert findings(done, nested, elsewhere) == EXPECTED_SUB


def test_config_flag_overrides_and_isolated_ignores(nested: Path) -> None:
    other = write(nested / "other.toml", "[tool.te-microbatch-lint]\nexclude = []\n")
    forced = te_lint("check", "--config", str(other), "sub", cwd=nested)
    assert ("sub/inner.py", 12) not in findings(forced, nested, nested)  # sub's "report" is gone
    assert ("sub/gen/made.py", 11) in findings(forced, nested, nested)
    isolated = te_lint("check", "--isolated", "sub", cwd=nested)
    assert ("sub/gen/made.py", 11) in findings(isolated, nested, nested)
    assert ("sub/gen/made.py", 12) not in findings(isolated, nested, nested)


def test_resolver_caches_per_directory_and_reads_each_file_once(nested: Path) -> None:
    resolver = ConfigResolver()
    first = resolver.settings_for(nested / "sub" / "deeper" / "more.py")
    assert first.unresolved == "report"
    assert first.config_file == str(nested / "sub" / "pyproject.toml")
    assert resolver.settings_for(nested / "sub" / "inner.py") is first
    assert resolver.settings_for(nested / "top.py").config_file is None  # black's, no table


def test_flake8_reads_the_pyproject_table(nested: Path) -> None:
    done = flake8("--select", "TEM", ".", cwd=nested)
    found = findings(done, nested, nested)
    made = {("sub/gen/made.py", 11), ("sub/gen/made.py", 12)}
    assert {f for f in found if f[0].startswith("sub/")} == EXPECTED_SUB | made
    assert ("top.py", 12) not in found
    # flake8's own option wins over the table
    write(nested / "setup.cfg", "[flake8]\nte-unresolved = ignore\n")
    done = flake8("--select", "TEM", "sub/inner.py", cwd=nested)
    assert findings(done, nested, nested) == {("sub/inner.py", 11)}


@pytest.mark.slow
def test_libcst_runner_agrees_with_fix(nested: Path, tmp_path: Path) -> None:
    write(
        nested / "sub" / "pyproject.toml",
        # Block never sets self.config (that guard falls back to None): the guard reads `x`
        '[tool.te-microbatch-lint]\nfix-strategy = "guard"\nguard-config = "x"\n',
    )
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(nested, copy)
    done = codemod(".", cwd=nested)
    assert done.returncode == 0, done.stderr
    fixed = te_lint("fix", ".", cwd=copy)
    assert fixed.returncode == 0, fixed.stderr  # all fixed (unresolved callees quiet by default)
    for name in ("top.py", "sub/inner.py", "sub/deeper/more.py"):
        assert (nested / name).read_text() == (copy / name).read_text(), name
    assert "is_first_microbatch_tracked(x)" in (nested / "sub/inner.py").read_text()
    assert "is_first_microbatch_tracked" not in (nested / "top.py").read_text()


# ------------------------------------------------------------------------ one name scheme


@pytest.mark.parametrize(
    "flags",
    [
        ["--guard-functions", "a.b", "--tracked-functions", "c", "--unresolved", "ignore"],
        ["--te-guard-functions", "a.b", "--te-tracked-functions", "c", "--te-unresolved", "ignore"],
    ],
    ids=["new", "old"],
)
def test_cli_and_runner_spell_options_alike(flags: list[str], tmp_path: Path) -> None:
    write(tmp_path / "model.py", TE_FILE)
    done = te_lint("check", "--isolated", *flags, "model.py", cwd=tmp_path)
    assert findings(done, tmp_path, tmp_path) == {("model.py", 11)}
    runner = codemod("--isolated", *flags, "model.py", cwd=tmp_path)
    assert runner.returncode == 0, runner.stderr


def test_flake8_spells_options_with_te_prefix(tmp_path: Path) -> None:
    write(tmp_path / "model.py", TE_FILE)
    args = ["--te-unresolved", "ignore", "--te-tracked-functions", "c", "--te-guard-functions", "a"]
    done = flake8("--isolated", "--select", "TEM", *args, "model.py", cwd=tmp_path)
    assert findings(done, tmp_path, tmp_path) == {("model.py", 11)}


RUNNER_LEAVES_OUT = {"exclude", "extend-exclude", "extend-select", "extend-ignore"}
"""libcst's runner chooses the files itself (its own ``--blacklist-patterns``) and takes only
``--select``/``--ignore``."""


def test_every_option_has_its_flag_in_the_cli_and_the_runner() -> None:
    import argparse

    from lint_rules.cli.options import build_parser
    from lint_rules.codemod import TEMicrobatchCodemod

    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    runner = argparse.ArgumentParser()
    TEMicrobatchCodemod.add_args(runner)
    for option in OPTIONS:
        flags = [option.flag, *(a for a in option.aliases if a.startswith("--"))]
        for flag in flags:
            assert flag in commands["fix"]._option_string_actions, flag
            if option.key != "unsafe-fixes":  # check reports; it never applies a fix
                assert flag in commands["check"]._option_string_actions, flag
            if option.key not in RUNNER_LEAVES_OUT:
                assert flag in runner._option_string_actions, flag


def test_docs_config_examples_load(tmp_path: Path) -> None:
    """The pyproject.toml and setup.cfg examples of docs/config.md are valid as written."""
    text = (PROJECT / "docs" / "config.md").read_text(encoding="utf-8")
    toml = re.search(r"```toml\n(.*?)```", text, re.S)[1]  # type: ignore[index]
    ini = re.search(r"```ini\n(.*?)```", text, re.S)[1]  # type: ignore[index]
    write(tmp_path / "pyproject.toml", toml)
    settings = load_settings(tmp_path / "pyproject.toml")
    assert settings.tracked_functions == ("my_project.state.get_is_first_microbatch",)
    table = "\n".join(line for line in text.splitlines() if line.startswith("| `"))
    for row in re.findall(r"`([a-z-]+ = [^`]+)`", table):
        write(tmp_path / "row.toml", f"[tool.te-microbatch-lint]\n{row}\n")
        load_settings(tmp_path / "row.toml")  # every example cell of the table
    write(tmp_path / "setup.cfg", ini)
    write(tmp_path / "model.py", TE_FILE)
    done = flake8("--select", "TEM", "model.py", cwd=tmp_path)
    assert findings(done, tmp_path, tmp_path) == {("model.py", 11), ("model.py", 12)}


def test_docs_config_table_lists_every_option() -> None:
    text = (PROJECT / "docs" / "config.md").read_text(encoding="utf-8")
    rows = {
        line.split("|")[1].strip(" `"): line for line in text.splitlines() if line.startswith("| `")
    }
    for option in OPTIONS:
        row = rows.get(option.key)
        assert row is not None, f"docs/config.md has no row for {option.key}"
        assert f"`{option.flag}`" in row, row
        if option.flake8:
            assert f"`{option.flake8_name}`" in row, row
        for alias in option.aliases:
            assert alias in text, alias
    assert re.search(r"--te-config", text)


def test_every_default_passes_its_own_check() -> None:
    """``Settings`` does not check again a value left at its option's default (start-up: no
    ``ast.parse`` of ``guard-config`` per settings object); each default passes its check."""
    for option in OPTIONS:
        option.check(option.key, option.default)


@pytest.mark.parametrize(
    ("field", "value"), [("guard_config", "self.config)"), ("unsafe_fixes", 0), ("te_version", "x")]
)
def test_a_bad_value_beside_the_defaults_is_still_refused(field: str, value: object) -> None:
    """A value equal to a default but of another type (``0`` for ``False``) is checked."""
    with pytest.raises(SettingsError):
        Settings(**{field: value})  # type: ignore[arg-type]
