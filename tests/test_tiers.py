"""The suite's own tiers (README, "Quick start"): the quick tier leaves out ``slow``, plain
``pytest`` leaves out ``long``, ``--long`` runs every test, and CI runs the README's command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from tiers import leaves_out_long

PROJECT = Path(__file__).resolve().parent.parent


def fake_config(*args: str, long: bool = False, markexpr: str = "", keyword: str = "") -> object:
    """What ``tiers.leaves_out_long`` reads of a pytest config, for ``pytest ARGS``."""
    source = pytest.Config.ArgsSource.ARGS if args else pytest.Config.ArgsSource.TESTPATHS
    return SimpleNamespace(
        getoption=lambda name: long if name == "--long" else None,
        option=SimpleNamespace(markexpr=markexpr, keyword=keyword),
        args_source=source,
        args=list(args) or ["tests"],
        rootpath=PROJECT,
        invocation_params=SimpleNamespace(dir=PROJECT),
    )


@pytest.mark.parametrize(
    ("config", "left_out"),
    [
        pytest.param(fake_config(), True, id="pytest"),
        pytest.param(fake_config("tests"), True, id="pytest tests"),
        pytest.param(fake_config(str(PROJECT / "tests")), True, id="pytest /abs/tests"),
        pytest.param(fake_config(long=True), False, id="pytest --long"),
        pytest.param(fake_config(markexpr="realcode"), False, id="pytest -m realcode"),
        pytest.param(fake_config(keyword="precommit"), False, id="pytest -k precommit"),
        pytest.param(fake_config("tests/test_precommit.py"), False, id="pytest FILE"),
        pytest.param(fake_config("tests/runtime"), False, id="pytest FOLDER"),
        pytest.param(fake_config("tests/test_kill.py::test_x"), False, id="pytest NODE"),
    ],
)
def test_plain_pytest_alone_leaves_out_the_long_tier(config: object, left_out: bool) -> None:
    assert leaves_out_long(config) is left_out  # type: ignore[arg-type]


def collected(*args: str) -> str:
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return listed.stdout


def test_markers_imply_the_tiers_they_belong_to() -> None:
    """``realcode`` is ``long``, and ``long`` is ``slow``: the quick tier and ``-m "not long"``
    leave both out."""
    quick = collected("-m", "not slow", "tests/test_real_code.py", "tests/test_deep_code.py")
    assert "test_megatron_core_flake8_plugin" not in quick  # realcode
    assert "test_megatron_core_check_json" in quick
    assert "test_deep_code" not in quick  # slow
    not_long = collected("-m", "not long", "tests/test_real_code.py", "tests/test_deep_code.py")
    assert "test_megatron_core_flake8_plugin" not in not_long  # realcode
    assert "test_core_and_fixer[flat-100000]" not in not_long  # long
    assert "test_core_and_fixer[nested-500]" in not_long  # slow only


def test_ci_runs_the_readme_commands_as_written() -> None:
    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    run = (PROJECT / ".ci" / "run").read_text(encoding="utf-8")
    commands = [line for line in readme.splitlines() if "python3 -m venv " in line]
    assert len(commands) == 2 and commands[1].endswith("python -m pytest --long")
    for command in commands:
        assert command in run.splitlines()
        # no fixed path outside the clone: two users, or two CI jobs, would share it
        assert "/tmp" not in command and "mktemp" in command or "-m venv .venv " in command
    assert 'python -m pytest -m "not slow"' in readme
