"""libcst's own runner drives ``lint_rules.codemod.TEMicrobatchCodemod`` to the same result as
``te-microbatch-lint fix`` (the codemod is only a face over ``fixing.fix_source``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest
from helpers import SAMPLE_PYPROJECT
from libcst.codemod import CodemodContext

from lint_rules.codemod import TEMicrobatchCodemod

SAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "cli" / "project"
COMMAND = "te_microbatch_lint.codemod.TEMicrobatchCodemod"
GLOBAL_MODULE = """\
import transformer_engine.pytorch as te

fc = te.Linear(4, 4)


def step(x, i):
    return fc(x, is_first_microbatch=i == 0)
"""


def libcst_tool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "libcst.tool", "codemod", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "te-microbatch-lint"
    return subprocess.run(
        [str(script), *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def contents(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.py"))}


@pytest.fixture
def twins(tmp_path: Path) -> tuple[Path, Path]:
    """Two copies of the sample tree, with a latin-1 file (coding cookie) added to each."""
    copies = []
    for name in ("runner", "cli"):
        root = tmp_path / name
        shutil.copytree(SAMPLE, root)
        (root / "pyproject.toml").write_text(SAMPLE_PYPROJECT)
        latin = (root / "pkg/model.py").read_text(encoding="utf-8").replace("ünï", "x_é")
        (root / "pkg" / "latin.py").write_bytes(
            b"# -*- coding: latin-1 -*-\n" + latin.encode("latin-1")
        )
        copies.append(root)
    return copies[0], copies[1]


def test_libcst_runner_gives_what_fix_gives(twins: tuple[Path, Path]) -> None:
    runner, plain = twins
    original = contents(runner)
    result = libcst_tool(
        "-x", COMMAND, "--no-format", "--hide-progress", "-j", "1", "pkg", cwd=runner
    )
    assert result.returncode == 0, result.stderr
    assert " - Failed to codemod 0 files." in result.stderr
    assert cli("fix", "pkg", cwd=plain).returncode == 1  # TEM004 and unsafe fixes remain
    assert contents(runner) == contents(plain)
    changed = {name for name, data in contents(runner).items() if data != original[name]}
    assert changed == {"pkg/model.py", "pkg/latin.py"}  # unresolved callees: unsafe fixes
    latin = (runner / "pkg/latin.py").read_bytes().decode("latin-1")
    assert "x_é = x" in latin and "is_first_microbatch=None" in latin


@pytest.mark.slow
def test_runner_flags_reach_the_settings(twins: tuple[Path, Path]) -> None:
    runner, plain = twins
    args = ("--fix-strategy", "guard", "--guard-import", "my_guards.tracked")
    args += ("--guard-config", "step")  # Block never sets self.config (that guard falls back)
    result = libcst_tool(
        "-x", COMMAND, "--no-format", "--hide-progress", *args, "pkg/model.py", cwd=runner
    )
    assert result.returncode == 0, result.stderr
    assert cli("fix", *args, "pkg/model.py", cwd=plain).returncode == 1  # TEM004 remains
    text = (runner / "pkg/model.py").read_text(encoding="utf-8")
    assert "tracked(step) else None" in text
    assert text == (plain / "pkg/model.py").read_text(encoding="utf-8")


@pytest.mark.slow
def test_runner_reads_pyproject_of_the_file(twins: tuple[Path, Path]) -> None:
    runner, _ = twins
    (runner / "pyproject.toml").write_text('[tool.te-microbatch-lint]\nunresolved = "ignore"\n')
    before = (runner / "pkg/sub/unresolved.py").read_bytes()
    result = libcst_tool("-x", COMMAND, "--no-format", "--hide-progress", "pkg", cwd=runner)
    assert result.returncode == 0, result.stderr
    assert (runner / "pkg/sub/unresolved.py").read_bytes() == before


@pytest.mark.slow
def test_runner_finds_the_command_through_libcst_config(twins: tuple[Path, Path]) -> None:
    runner, plain = twins
    (runner / ".libcst.codemod.yaml").write_text("modules:\n- 'lint_rules'\nformatter: ['true']\n")
    result = libcst_tool(
        "codemod.TEMicrobatchCodemod", "--no-format", "--hide-progress", "pkg", cwd=runner
    )
    assert result.returncode == 0, result.stderr
    cli("fix", "pkg", cwd=plain)
    assert contents(runner) == contents(plain)


def test_unified_diff_mode_writes_nothing(twins: tuple[Path, Path]) -> None:
    runner, _ = twins
    before = contents(runner)
    result = libcst_tool(
        "-x", COMMAND, "--no-format", "--hide-progress", "-u", "1", "pkg/model.py", cwd=runner
    )
    assert result.returncode == 0, result.stderr
    assert "+        y = self.fc(ünï, is_first_microbatch=None)" in result.stdout
    assert contents(runner) == before


def test_in_process_notes_become_warnings() -> None:
    context = CodemodContext(filename=None)
    command = TEMicrobatchCodemod(context, fix_strategy="guard")
    tree = cst.parse_module(GLOBAL_MODULE)
    output = command.transform_module(tree)
    assert output.code == GLOBAL_MODULE.replace("i == 0)", "None)")
    assert any("self" in warning for warning in context.warnings), context.warnings


def test_in_process_unchanged_module_is_returned_as_is() -> None:
    tree = cst.parse_module("x = 1  # is_first_microbatch=True\n")
    assert TEMicrobatchCodemod(CodemodContext()).transform_module_impl(tree) is tree


@pytest.mark.slow
def test_runner_without_no_format_says_why_in_one_line(twins: tuple[Path, Path]) -> None:
    """libcst's default formatter (black) restyles every fixed file, and where black is not
    installed each file ends as 'Failed to codemod' with no reason: the command says so."""
    runner, _ = twins
    result = libcst_tool("-x", COMMAND, "--hide-progress", "pkg/model.py", cwd=runner)
    hints = [line for line in result.stderr.splitlines() if "--no-format" in line]
    assert len(hints) == 1, result.stderr
    assert hints[0].startswith("te-microbatch-lint: ") and len(hints[0]) <= 100, hints
    quiet = libcst_tool("-x", COMMAND, "--no-format", "--hide-progress", "pkg/model.py", cwd=runner)
    assert quiet.returncode == 0, quiet.stderr
    assert "--no-format" not in quiet.stderr
