"""A warm ``check --isolated`` (``cli.warm``): a run over files that did not change is served
whole from the project index, importing none of the analysis; anything the run read that
changed (a file, a file it depends on through the project index, a setting, the linter's
code) makes the run in full, with the findings of a fresh run. ``fixtures/project`` is the
package of test_cross_file.py (TE subclasses defined in one file, used in others)."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from helpers import age, modules_after

import lint_rules.analysis.store as store
import lint_rules.cli.running as running
import lint_rules.cli.warm as warm
from lint_rules.cli import command

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "fixtures" / "project"


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the project, its files known by their stat; the working directory."""
    shutil.copytree(PROJECT, tmp_path / "project")
    age(tmp_path / "project")
    monkeypatch.chdir(tmp_path / "project")
    return tmp_path / "project"


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict]:
    status = command.main(["check", "--isolated", "--output-format", "json", *args])
    rows = json.loads(capsys.readouterr().out)
    assert status == (1 if rows else 0)
    return sorted(rows, key=lambda r: (r["path"], r["line"], r["column"], r["code"]))


class Made:
    """Counts the runs made in full (the first pass, ``running.plan_files``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.runs = 0
        plan = running.plan_files

        def counted(*args: object, **kwargs: object) -> object:
            self.runs += 1
            return plan(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(running, "plan_files", counted)


def _warm_is_fresh(capsys: pytest.CaptureFixture[str], made: Made, *args: str) -> list[dict]:
    """``check`` with the index after a change: made in full, the findings of a run without
    the index; then, nothing changed, served whole with the same findings."""
    fresh = _check(capsys, "--no-cache", *args)
    before = made.runs
    assert _check(capsys, "--cache-dir", "../cache", *args) == fresh
    assert made.runs == before + 1  # made in full
    assert _check(capsys, "--cache-dir", "../cache", *args) == fresh
    assert made.runs == before + 1  # served whole
    return fresh


def test_an_unchanged_tree_is_served_whole(
    tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    made = Made(monkeypatch)
    first = _warm_is_fresh(capsys, made, "pkg")
    assert {row["code"] for row in first} >= {"TEM001", "TEM002", "TEM004", "TEM005"}
    assert made.runs == 2  # the fresh run and the first warm one: the second was served
    # Another selection of the same run is served too (``select`` filters the findings).
    assert _check(capsys, "--cache-dir", "../cache", "--select", "TEM002", "pkg") == [
        row for row in first if row["code"] == "TEM002"
    ]
    assert made.runs == 2


def test_a_changed_file_is_analysed_again(
    tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    made = Made(monkeypatch)
    first = _warm_is_fresh(capsys, made, "pkg")
    model = tree / "pkg" / "model.py"
    model.write_text(model.read_text() + "\n\ndef later(m, x):\n    return m(x)\n")
    age(tree)
    assert _warm_is_fresh(capsys, made, "pkg") == first  # nothing found there
    stateful = tree / "pkg" / "stateful.py"
    stateful.write_text(stateful.read_text().replace("is_first_microbatch=", "other="))
    age(tree)
    assert _warm_is_fresh(capsys, made, "pkg") != first


def test_a_run_that_was_not_kept_never_serves_an_older_one(
    tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index learnt the new bytes of a file in a run whose outcomes were not kept (it was
    interrupted, or another file changed while it ran): the run kept before, of the old bytes,
    is not served, though every file's stat is the one recorded."""
    made = Made(monkeypatch)
    first = _warm_is_fresh(capsys, made, "pkg")
    stateful = tree / "pkg" / "stateful.py"
    stateful.write_text(stateful.read_text().replace("is_first_microbatch=", "other="))
    age(tree)
    with monkeypatch.context() as patched:
        patched.setattr(warm, "keep", lambda *args: None)
        changed = _check(capsys, "--cache-dir", "../cache", "pkg")
    assert changed != first
    assert _warm_is_fresh(capsys, made, "pkg") == changed


def test_a_command_keeps_one_run(
    tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run kept replaces the one kept before for the same command (its files changed since),
    so that a tree edited between runs does not pile up copies of its findings."""
    made = Made(monkeypatch)
    first = _warm_is_fresh(capsys, made, "pkg")
    _warm_is_fresh(capsys, made, "--unresolved", "report", "pkg")
    stateful = tree / "pkg" / "stateful.py"
    for n in range(3):
        stateful.write_text(stateful.read_text() + f"\nEDIT = {n}\n")
        age(tree)
        assert _warm_is_fresh(capsys, made, "pkg") == first
    (index,) = (tree.parent / "cache").rglob("*.json")
    assert len(json.loads(index.read_text())["@runs"]) == 2  # one per command


def test_a_file_changed_that_another_depends_on_through_the_index(
    tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """layers.py's BiasLinear takes the flag second: model.py's findings change, though its
    bytes did not."""
    made = Made(monkeypatch)
    first = _warm_is_fresh(capsys, made, "pkg")
    layers = tree / "pkg" / "layers.py"
    layers.write_text(
        layers.read_text().replace(
            "def forward(self, x, bias, is_first_microbatch=None):",
            "def forward(self, x, is_first_microbatch=None, bias=None):",
        )
    )
    age(tree)
    again = _warm_is_fresh(capsys, made, "pkg")
    model = [row for row in again if row["path"].endswith("model.py")]
    assert model != [row for row in first if row["path"].endswith("model.py")]


def test_a_changed_setting_or_path_is_a_run_of_its_own(
    tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    made = Made(monkeypatch)
    first = _warm_is_fresh(capsys, made, "pkg")
    strict = _warm_is_fresh(capsys, made, "--unresolved", "report", "pkg")
    assert strict != first
    _warm_is_fresh(capsys, made, "--disable-noqa", "pkg")
    alone = _warm_is_fresh(capsys, made, "pkg/sub")  # the same files, other module names
    assert alone != [row for row in first if "/sub/" in row["path"]]
    runs = made.runs
    assert _check(capsys, "--cache-dir", "../cache", "pkg") == first  # each is kept
    assert made.runs == runs


def test_a_new_package_folder_is_a_run_of_its_own(
    tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ``__init__.py`` left out of the run still makes its folder a package: the module
    names of the files, and what they resolve, change with it."""
    made = Made(monkeypatch)
    _warm_is_fresh(capsys, made, "--extend-exclude", "pkg/sub/__init__.py", "pkg")
    (tree / "pkg" / "sub" / "__init__.py").unlink()
    _warm_is_fresh(capsys, made, "--extend-exclude", "pkg/sub/__init__.py", "pkg")


def test_another_version_of_the_linter_never_reads_a_run(
    tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    made = Made(monkeypatch)
    first = _warm_is_fresh(capsys, made, "pkg")
    monkeypatch.setattr(store, "code_hash", lambda: "another")
    assert _warm_is_fresh(capsys, made, "pkg") == first


def test_a_run_with_a_file_written_just_now_is_made_in_full(
    tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file modified in the last two seconds is not known by its stat (a write in the same
    clock tick could keep it): the run is made in full each time, and not kept. (Its time is
    set an hour ahead, so that the test does not depend on how fast it runs.)"""
    made = Made(monkeypatch)
    first = _warm_is_fresh(capsys, made, "pkg")
    model = tree / "pkg" / "model.py"
    model.write_text(model.read_text() + "\n")
    ahead = time.time() + 3600
    os.utime(model, (ahead, ahead))
    runs = made.runs
    for _ in range(2):
        assert _check(capsys, "--cache-dir", "../cache", "pkg") == first
    assert made.runs == runs + 2


def test_a_syntax_error_is_served_too(
    tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that cannot be parsed is an error of its bytes: a run with it is kept whole,
    and served (the error line and exit status 2 again); fixed, the run is made in full."""
    made = Made(monkeypatch)
    first = _check(capsys, "--no-cache", "pkg")
    broken = tree / "pkg" / "broken.py"
    broken.write_text("def f(:\n    return m(x, is_first_microbatch=True)\n")
    age(tree)
    for runs in (2, 2):  # the fresh run, then the run made in full, then served
        assert command.main(["check", "--isolated", "--cache-dir", "../cache", "pkg"]) == 2
        err = capsys.readouterr().err
        assert "pkg/broken.py: error: cannot parse: " in err and "(line 1, column 7)" in err
        assert made.runs == runs
    broken.write_text("def f(m, x):\n    return m(x, flag=True)\n")
    age(tree)
    assert _warm_is_fresh(capsys, made, "pkg") == first


SERVED = frozenset(
    {
        "lint_rules",
        "lint_rules.analysis",
        "lint_rules.analysis.codehash",
        "lint_rules.analysis.records",
        "lint_rules.analysis.store",
        "lint_rules.cli",
        "lint_rules.cli.command",
        "lint_rules.cli.discovery",
        "lint_rules.cli.fixcount",
        "lint_rules.cli.formats",
        "lint_rules.cli.options",
        "lint_rules.cli.progress",
        "lint_rules.cli.warm",
        "lint_rules.rules",
        "lint_rules.selection",
        "lint_rules.setting_flags",
        "lint_rules.setting_options",
        "lint_rules.settings",
        "lint_rules.slotted",
    }
)
"""The tool's modules a warm run served whole imports (``check --isolated``)."""


def test_a_warm_run_imports_only_the_cache_discovery_and_output(tree: Path) -> None:
    """What a fresh interpreter imports for a warm ``check --isolated`` of an unchanged tree:
    no module of the analysis, no first pass, no ``ast``, ``dataclasses``, ``typing`` or
    ``inspect`` (a warm run is start-up, the stat of each file and reading the index)."""

    def run(status: int = 1) -> tuple[str, set[str]]:
        argv = ("check", "--isolated", "--output-format", "json", "--cache-dir", "../cache", "pkg")
        out, returned, modules = modules_after(None, *argv)
        assert returned == status  # 1: findings; 2: a file that cannot be parsed
        return out, modules

    first, modules = run()
    assert "lint_rules.analysis.collector" in modules  # analysed, then kept whole
    again, modules = run()
    assert again == first
    ours = {m for m in modules if m.split(".")[0] == "lint_rules"}
    assert ours == SERVED
    assert not {"ast", "dataclasses", "typing", "inspect", "tempfile"} & modules
    # A file that cannot be parsed: its error line is printed without the per-file machinery.
    (tree / "pkg" / "broken.py").write_text("def f(:\n    return m(x, is_first_microbatch=1)\n")
    age(tree)
    run(2)
    _, served = run(2)
    assert served == modules


def test_the_code_hash_follows_every_module_of_the_linter(tmp_path: Path) -> None:
    """An edited module anywhere in the package makes another version (its size or its
    modification time); compiled files do not count."""
    (tmp_path / "sub" / "__pycache__").mkdir(parents=True)
    (tmp_path / "a.py").write_text("A = 1\n")
    (tmp_path / "sub" / "b.py").write_text("B = 1\n")
    (tmp_path / "sub" / "__pycache__" / "c.py").write_text("")
    first = store.code_hash(str(tmp_path))
    os.utime(tmp_path / "sub" / "__pycache__" / "c.py", (1, 1))
    assert store.code_hash(str(tmp_path)) == first
    os.utime(tmp_path / "sub" / "b.py", (1, 1))
    second = store.code_hash(str(tmp_path))
    assert second != first
    (tmp_path / "a.py").write_text("A = 2\n")
    os.utime(tmp_path / "a.py", (1, 1))
    assert store.code_hash(str(tmp_path)) not in (first, second)
