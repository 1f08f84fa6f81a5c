"""Rule selection layered as ruff layers it (docs/config.md, "Choosing rules").

One layer each: ``select`` replaces, ``extend-select`` adds, ``ignore``/``extend-ignore``
remove; the layers go extended file(s), the file, the command line. A look-alike table name is
warned about, and ``--show-settings`` says where each value came from.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lint_rules.cli.command import main
from lint_rules.selection import Layer, resolve
from lint_rules.settings import RULES, SettingsError, load_settings

SOURCE = """\
import transformer_engine.pytorch as te


class Block:
    def __init__(self):
        self.fc = te.Linear(4, 4)
        self.norm = te.LayerNorm(4)

    def forward(self, x):
        y = self.fc(x, is_first_microbatch=self.flag)
        with te.fp8_autocast(is_first_microbatch=True):
            y = self.norm(y)
        return y
"""
"""Line 10: TEM001; line 11: TEM004."""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "block.py").write_text(SOURCE, encoding="utf-8")
    return tmp_path


def codes(project: Path, table: str, *flags: str, capsys, monkeypatch) -> list[str]:
    (project / "pyproject.toml").write_text(
        f"[tool.te-microbatch-lint]\n{table}\n", encoding="utf-8"
    )
    monkeypatch.chdir(project)
    status = main(["check", "--no-cache", "--format", "concise", *flags, "pkg"])
    out = capsys.readouterr().out
    found = [
        line.split(": ", 1)[1].split()[0]
        for line in out.splitlines()
        if line != "All checks passed!"  # a clean run says so, as ruff does
    ]
    assert status == (1 if found else 0)
    return sorted(found)


def test_the_file_alone_is_one_layer(project: Path, capsys, monkeypatch) -> None:
    both = ["TEM001", "TEM004"]
    assert codes(project, "", capsys=capsys, monkeypatch=monkeypatch) == both
    assert codes(project, 'ignore = ["TEM004"]', capsys=capsys, monkeypatch=monkeypatch) == [
        "TEM001"
    ]
    table = 'select = ["TEM004"]\nextend-select = ["TEM001"]'
    assert codes(project, table, capsys=capsys, monkeypatch=monkeypatch) == both
    table = 'extend-ignore = ["TEM001"]'
    assert codes(project, table, capsys=capsys, monkeypatch=monkeypatch) == ["TEM004"]


def test_cli_ignore_adds_to_the_configured_ignore(project: Path, capsys, monkeypatch) -> None:
    table = 'ignore = ["TEM004"]'
    found = codes(project, table, "--ignore", "TEM002", capsys=capsys, monkeypatch=monkeypatch)
    assert found == ["TEM001"]  # TEM004 stays ignored
    found = codes(
        project, table, "--extend-ignore", "TEM001", capsys=capsys, monkeypatch=monkeypatch
    )
    assert found == []


def test_cli_select_re_enables_a_configured_ignore(project: Path, capsys, monkeypatch) -> None:
    table = 'ignore = ["TEM004"]'
    found = codes(project, table, "--select", "TEM004", capsys=capsys, monkeypatch=monkeypatch)
    assert found == ["TEM004"]
    found = codes(
        project, table, "--extend-select", "TEM004", capsys=capsys, monkeypatch=monkeypatch
    )
    assert found == ["TEM001", "TEM004"]  # the command line is the later layer
    found = codes(
        project,
        'select = ["TEM004"]',
        "--extend-select",
        "TEM001",
        capsys=capsys,
        monkeypatch=monkeypatch,
    )
    assert found == ["TEM001", "TEM004"]


def test_extend_reads_the_base_table_first(project: Path, capsys, monkeypatch) -> None:
    (project / "pkg" / "pyproject.toml").write_text(
        '[tool.te-microbatch-lint]\nextend = "../pyproject.toml"\nextend-select = ["TEM004"]\n',
        encoding="utf-8",
    )
    base = 'ignore = ["TEM004"]\nunresolved = "ignore"'
    assert codes(project, base, capsys=capsys, monkeypatch=monkeypatch) == ["TEM001", "TEM004"]
    settings = load_settings(project / "pkg" / "pyproject.toml")
    assert settings.unresolved == "ignore"  # inherited from the base
    assert dict(settings.sources)["unresolved"] == str(project / "pyproject.toml")
    assert dict(settings.sources)["extend_select"] == str(project / "pkg" / "pyproject.toml")


def test_extend_errors_are_one_line(project: Path) -> None:
    child = project / "pyproject.toml"
    child.write_text('[tool.te-microbatch-lint]\nextend = "missing.toml"\n', encoding="utf-8")
    with pytest.raises(SettingsError, match="does not exist"):
        load_settings(child)
    child.write_text('[tool.te-microbatch-lint]\nextend = "pyproject.toml"\n', encoding="utf-8")
    with pytest.raises(SettingsError, match="cycle"):
        load_settings(child)


def test_resolve_orders_select_extend_ignore() -> None:
    file = Layer("file", select=("TEM00",), ignore=("TEM005",))
    assert resolve([file], RULES) == {"TEM001", "TEM002", "TEM003", "TEM004"}
    assert resolve([file, Layer("cli", select=("TEM005",))], RULES) == {"TEM005"}
    assert resolve([file, Layer("cli", ignore=("TEM001",))], RULES) == {
        "TEM002",
        "TEM003",
        "TEM004",
    }
    assert resolve([Layer("file", select=())], RULES) == set(RULES)


def test_a_look_alike_table_is_warned_about(project: Path, capsys, monkeypatch) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.te_microbatch_lint]\nignore = ["TEM001"]\n', encoding="utf-8"
    )
    monkeypatch.chdir(project)
    assert main(["check", "--no-cache", "pkg"]) == 1
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert len(warnings) == 1
    assert "[tool.te_microbatch_lint] is not read" in warnings[0]
    assert "[tool.te-microbatch-lint]" in warnings[0]


def test_show_settings_names_where_each_value_comes_from(
    project: Path, capsys, monkeypatch
) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.te-microbatch-lint]\nignore = ["TEM004"]\n', encoding="utf-8"
    )
    monkeypatch.chdir(project)
    assert main(["check", "--show-settings", "pkg/block.py", "--unresolved", "ignore"]) == 0
    out = capsys.readouterr().out
    lines = {line.split("=", 1)[0].strip(): line for line in out.splitlines() if "=" in line}
    assert "pyproject.toml" in lines["ignore"] and '["TEM004"]' in lines["ignore"]
    assert "command line" in lines["unresolved"]
    assert "default" in lines["fix-strategy"]
    assert "TEM001" in lines["reported"] and "TEM004" not in lines["reported"]
