"""Settings the fixer depends on are checked when they load (issue: fix safety).

``guard-import`` must be a dotted ``module.name`` (a bare name would be written into the code
without an import: NameError at run time) and ``guard-config`` must parse as an expression (the
release failed later, once per file, as an "internal error"). ``unsafe-fixes`` is a boolean.
Each mistake is one line naming the key (and the file when it came from one), exit 2, and the
file to fix is left untouched.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers import cli

from lint_rules.findings import Fix
from lint_rules.settings import Settings, SettingsError, load_settings

SOURCE = (
    "import transformer_engine.pytorch as te\n\n\n"
    "class Block:\n"
    "    def __init__(self, config):\n"
    "        self.config = config\n"
    "        self.fc = te.Linear(4, 4)\n\n"
    "    def forward(self, x):\n"
    "        return self.fc(x, is_first_microbatch=True)\n"
)


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*cli(), *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_fix_is_safe_unless_said_otherwise() -> None:
    assert Fix(()).applicability == "safe"
    assert Fix((), applicability="unsafe").applicability == "unsafe"


@pytest.mark.parametrize(
    "value", ["flag_ok", "", "my guards.tracked", "mod.", ".name", "a..b", "a.1b"]
)
def test_guard_import_must_be_dotted(value: str) -> None:
    with pytest.raises(SettingsError, match="guard-import"):
        Settings(guard_import=value)


@pytest.mark.parametrize("value", ["self.cfg)", "", "self.config,", "a = b", "x\ny"])
def test_guard_config_must_be_an_expression(value: str) -> None:
    with pytest.raises(SettingsError, match="guard-config"):
        Settings(guard_config=value)


@pytest.mark.parametrize("value", ["self.config", "cfg", "self.model.config", "get_config()"])
def test_guard_config_expressions_are_accepted(value: str) -> None:
    assert Settings(guard_config=value).guard_config == value


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ('guard-import = "flag_ok"', "guard-import"),
        ("guard-import = 3", "guard-import"),
        ('guard-config = "self.cfg)"', "guard-config"),
        ('unsafe-fixes = "yes"', "unsafe-fixes"),
    ],
)
def test_pyproject_values_are_checked_at_load(tmp_path: Path, line: str, key: str) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(f"[tool.te-microbatch-lint]\n{line}\n")
    with pytest.raises(SettingsError) as error:
        load_settings(pyproject)
    message = str(error.value)
    assert key in message and str(pyproject) in message and "\n" not in message


def test_unsafe_fixes_from_file_and_flag(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.te-microbatch-lint]\nunsafe-fixes = true\n")
    assert load_settings(pyproject).unsafe_fixes is True
    assert load_settings(None).unsafe_fixes is False
    assert load_settings(None, {"unsafe_fixes": True}).unsafe_fixes is True


@pytest.mark.parametrize(
    ("args", "config", "key"),
    [
        (("--fix-strategy", "guard", "--guard-import", "flag_ok"), "", "guard-import"),
        (("--fix-strategy", "guard"), 'guard-import = "flag_ok"\n', "guard-import"),
        (("--fix-strategy", "guard"), "guard-import = 3\n", "guard-import"),
        (("--fix-strategy", "guard"), 'guard-config = "self.cfg)"\n', "guard-config"),
    ],
)
def test_cli_fix_rejects_bad_guard_settings(
    tmp_path: Path, args: tuple[str, ...], config: str, key: str
) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.te-microbatch-lint]\n{config}")
    target = tmp_path / "model.py"
    target.write_text(SOURCE)
    proc = run("fix", *args, "model.py", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and key in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert target.read_text() == SOURCE


@pytest.mark.parametrize(
    "face",
    [
        ["-m", "flake8", "--isolated", "--select", "TEM", "--te-guard-import", "flag_ok"],
        [
            "-m",
            "libcst.tool",
            "codemod",
            "-x",
            "lint_rules.codemod.TEMicrobatchCodemod",
            "--no-format",
            "--guard-import",
            "flag_ok",
        ],
    ],
    ids=["flake8", "libcst-codemod"],
)
def test_other_faces_reject_a_bare_guard_name(tmp_path: Path, face: list[str]) -> None:
    import sys

    target = tmp_path / "model.py"
    target.write_text(SOURCE)
    proc = subprocess.run(
        [sys.executable, *face, "model.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "guard-import" in proc.stderr and "Traceback" not in proc.stderr
    assert target.read_text() == SOURCE
