"""Provenance of callees and the TE release (docs/rules.md, "Which callees are reported").

- ``fixtures/catalogue/tem001_provenance_*.py`` and ``tem001_lookalike_*.py``: what ``check``
  reports by default and with ``--unresolved report``, as JSON beside each case (``NAME.json``,
  ``{"default": [...], "strict": [...]}``);
- ``fixtures/releases/te_X_Y/``: one small project per TE release boundary (1.8 | 1.9 and
  1.13 | 2.0), each pinning TE in another kind of file (``requirements.txt``,
  ``requirements-train.txt``, ``setup.cfg``, ``pyproject.toml``); ``expected.json`` is what
  ``check .`` reports there, ``te-version`` inferred from the pin.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from lint_rules.analysis import analyze_source
from lint_rules.cli import command
from lint_rules.settings import Settings
from lint_rules.te import NEWEST, facts_for, parse_release
from lint_rules.te_release import infer, release_of_spec

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = ROOT / "fixtures" / "catalogue"
RELEASES = ROOT / "fixtures" / "releases"
JSON_CASES = sorted(CATALOGUE.glob("*.json"))
KEYS = ("line", "column", "code", "message", "applicability")


@contextlib.contextmanager
def working_in(path: Path) -> Iterator[None]:
    """``contextlib.chdir`` (Python 3.11) for every Python the project supports."""
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def check_json(*args: str, cwd: Path | None = None) -> list[dict]:
    """``check --format json ARGS`` in this process: the rows, with the keys compared here."""
    out = io.StringIO()
    with contextlib.ExitStack() as stack:
        if cwd is not None:
            stack.enter_context(working_in(cwd))
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(io.StringIO()))
        command.main(["check", "--no-cache", "--format", "json", *args])
    keys = KEYS if cwd is None else ("path", *KEYS)
    return [{k: row[k] for k in keys} for row in json.loads(out.getvalue() or "[]")]


@pytest.mark.parametrize("expected", JSON_CASES, ids=lambda p: p.stem)
def test_provenance_cases_report_what_their_json_says(expected: Path) -> None:
    case = str(expected.with_suffix(".py").relative_to(ROOT))
    want = json.loads(expected.read_text())
    with working_in(ROOT):
        assert check_json("--isolated", case) == want["default"]
        assert check_json("--isolated", "--unresolved", "report", case) == want["strict"]


def test_every_look_alike_and_provenance_family_has_a_case() -> None:
    names = {p.stem for p in JSON_CASES}
    assert {"tem001_lookalike_intel_gaudi", "tem001_lookalike_nvidia_kitchen"} <= names
    assert {"tem001_provenance_foreign", "tem001_provenance_aliases"} <= names
    assert "tem001_provenance_graphed" in names


def test_strict_messages_say_where_the_callee_comes_from() -> None:
    strict = {p.stem: json.loads(p.read_text())["strict"] for p in JSON_CASES}
    assert all(
        "(a TE look-alike: NVIDIA Kitchen)" in r["message"]
        for r in strict["tem001_lookalike_nvidia_kitchen"]
    )
    assert all(
        "Intel Gaudi's TE port" in r["message"] for r in strict["tem001_lookalike_intel_gaudi"]
    )
    foreign = [r for r in strict["tem001_provenance_foreign"] if "unresolved" in r["message"]]
    assert len(foreign) == 3 and all("(from `my_project`, not TE)" in r["message"] for r in foreign)


# ------------------------------------------------------------------------------ TE releases

BOUNDARIES = {"te_1_8": "1.8", "te_1_9": "1.9", "te_1_13": "1.13", "te_2_0": "2.0"}


@pytest.mark.parametrize("name", sorted(BOUNDARIES))
def test_release_trees_report_what_expected_json_says(name: str, tmp_path: Path) -> None:
    tree = tmp_path / name
    shutil.copytree(RELEASES / name, tree)
    expected = json.loads((tree / "expected.json").read_text())
    assert check_json(".", cwd=tree) == expected
    rejected = {r["message"].split("`")[0] for r in expected}
    dot_product = any("DotProductAttention" in text for text in rejected)
    assert dot_product == (name in ("te_1_8", "te_2_0"))  # it takes the flag in 1.9 to 1.13


@pytest.mark.parametrize("name", sorted(BOUNDARIES))
def test_show_settings_says_where_the_release_came_from(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = tmp_path / name
    shutil.copytree(RELEASES / name, tree)
    with working_in(tree):
        command.main(["check", "--show-settings", "model/attention.py"])
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("te-version"))
    assert line.startswith(f'te-version = "{BOUNDARIES[name]}"  # inferred from {tree}'), line


def test_the_setting_beats_the_pins(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = tmp_path / "te_1_13"
    shutil.copytree(RELEASES / "te_1_13", tree)
    rows = check_json("--te-version", "2.1", ".", cwd=tree)
    assert any("DotProductAttention" in r["message"] for r in rows)
    (tree / "pyproject.toml").write_text('[tool.te-microbatch-lint]\nte-version = "2.20"\n')
    rows = check_json(".", cwd=tree)
    assert any("DotProductAttention" in r["message"] for r in rows)
    with working_in(tree):
        command.main(["check", "--show-settings", "model/attention.py"])
    shown = capsys.readouterr().out
    assert f'te-version = "2.20"  # {tree / "pyproject.toml"}' in shown


def test_a_bad_release_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("x = 1\n")
    with working_in(tmp_path), contextlib.redirect_stderr(io.StringIO()) as err:
        assert command.main(["check", "--te-version", "two", "m.py"]) == 2
    assert "te-version must be a TE release" in err.getvalue()


@pytest.mark.parametrize(("text", "release"), [("1.9.0\n", "1.9"), ("2.5.0.dev0", "2.5")])
def test_te_source_tree_knows_its_own_release(tmp_path: Path, text: str, release: str) -> None:
    """TransformerEngine's own tree (or a fork's) pins no TE; its ``build_tools/VERSION.txt``
    says which release its tests and examples run against."""
    (tmp_path / "build_tools").mkdir()
    (tmp_path / "build_tools" / "VERSION.txt").write_text(text)
    (tmp_path / "transformer_engine").mkdir()
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "tests").mkdir()
    inferred = infer(str(tmp_path / "tests"))
    assert inferred.version == release and "TE's own release" in inferred.source
    (tmp_path / "transformer_engine").rmdir()  # a VERSION.txt alone is not TE's tree
    infer.cache_clear()
    assert infer(str(tmp_path / "tests")).version == ""


def test_nothing_pinned_means_the_newest(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("torch\n")
    inferred = infer(str(tmp_path))
    assert inferred.version == "" and "pins no TE" in inferred.source
    assert facts_for("").release == NEWEST


@pytest.mark.parametrize(
    ("spec", "release"),
    [
        ("==1.13.0", (1, 13)),
        ("~=2.3", (2, 3)),
        (">=1.9,<2.0", (1, 13)),
        ("<=1.11", (1, 11)),
        ("<2.5", (2, 4)),
        (">=1.9", None),
        ("", None),
    ],
)
def test_pins_point_at_a_release(spec: str, release: tuple[int, int] | None) -> None:
    assert release_of_spec(spec) == release


def test_release_table() -> None:
    assert parse_release("1.13.0") == (1, 13) and parse_release("x") is None
    assert facts_for("1.8").rejects("DotProductAttention")
    assert not facts_for("1.9").rejects("DotProductAttention")
    assert not facts_for("1.13").rejects("DotProductAttention")
    assert facts_for("2.0").rejects("DotProductAttention")
    assert all(facts_for(v).rejects("LayerNorm") for v in ("1.0", "1.13", "2.20"))
    assert not facts_for("2.8").overwrite_main_grad and facts_for("2.9").overwrite_main_grad


TE_OPS = """\
import transformer_engine.pytorch as te

op = te.ops.BasicLinear(4, 4)
y = op(x, is_first_microbatch=True)
"""


@pytest.mark.parametrize("version", ["1.13", "2.20"])
def test_fusible_ops_reject_the_flag_in_every_release(version: str) -> None:
    found = analyze_source(TE_OPS, Settings(te_version=version))
    assert [f.code for f in found] == ["TEM004"]
