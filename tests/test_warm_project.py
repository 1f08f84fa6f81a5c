"""A warm ``check`` judged with its project (no ``--isolated``: ``check .``, ``check FILE`` as
pre-commit names files) is served whole from the project index when nothing it read changed
(``cli.warm.project_key``): every file of the project, not only those named, the list of the
project's files, the configuration of each file and its project's root. Each change below
makes the run in full, with the findings of a run without the index. ``fixtures/project`` is
the package of test_cross_file.py; a ``.git`` folder makes its copy a project root."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import age

from lint_rules.cli import command
from tests.test_warm import PROJECT, SERVED, Made

USER = '''"""Uses ``Thing`` of ``pkg/extra.py``: a TE subclass when that module exists."""

from pkg.extra import Thing


class User:
    def __init__(self):
        self.fc = Thing(4, 4)
        self.flag = True

    def run(self, x):
        return self.fc(x, self.flag)

    def keyword(self, x):
        return self.fc(x, is_first_microbatch=self.flag)
'''

EXTRA = '''import transformer_engine.pytorch as te


class Thing(te.Linear):
    """TE's own forward: the flag is second."""
'''


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the project, a project root, its files known by their stat; the working
    directory."""
    import shutil

    shutil.copytree(PROJECT, tmp_path / "project")
    (tmp_path / "project" / ".git").mkdir()
    (tmp_path / "project" / "pkg" / "user.py").write_text(USER)
    age(tmp_path / "project")
    monkeypatch.chdir(tmp_path / "project")
    return tmp_path / "project"


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> list[tuple[str, int, str]]:
    import json

    status = command.main(["check", "--output-format", "json", *args])
    rows = json.loads(capsys.readouterr().out)
    assert status == (1 if rows else 0)
    return sorted((os.path.normpath(r["path"]), r["line"], r["code"]) for r in rows)


def _warm_is_fresh(
    capsys: pytest.CaptureFixture[str], made: Made, *args: str
) -> list[tuple[str, int, str]]:
    """``check`` with the index after a change: made in full with the findings of a run
    without the index; then, nothing changed, served whole with the same findings."""
    fresh = _check(capsys, "--no-cache", *args)
    before = made.runs
    assert _check(capsys, "--cache-dir", "../cache", *args) == fresh
    assert made.runs > before  # made in full
    before = made.runs
    assert _check(capsys, "--cache-dir", "../cache", *args) == fresh
    assert made.runs == before  # served whole
    return fresh


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> Made:
    """Counts the runs made in full (the first pass, ``analysis.faces.plan_files``)."""
    import lint_rules.analysis.faces as faces

    counter = Made(monkeypatch)
    plan = faces.plan_files

    def counted(*args: object, **kwargs: object) -> object:
        counter.runs += 1
        return plan(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(faces, "plan_files", counted)
    return counter


def test_an_unchanged_project_is_served_whole(
    tree: Path, capsys: pytest.CaptureFixture[str], made: Made
) -> None:
    whole = _warm_is_fresh(capsys, made, ".")
    assert {code for _, _, code in whole} >= {"TEM001", "TEM002", "TEM004"}
    named = _warm_is_fresh(capsys, made, "pkg/model.py", "pkg/star.py")  # as pre-commit does
    assert named == [row for row in whole if row[0] in ("pkg/model.py", "pkg/star.py")]


def test_a_file_a_named_one_depends_on_through_the_index(
    tree: Path, capsys: pytest.CaptureFixture[str], made: Made
) -> None:
    """layers.py, not named, makes BiasLinear take the flag second: model.py's findings
    change, though its bytes did not."""
    first = _warm_is_fresh(capsys, made, "pkg/model.py")
    layers = tree / "pkg" / "layers.py"
    layers.write_text(
        layers.read_text().replace(
            "def forward(self, x, bias, is_first_microbatch=None):",
            "def forward(self, x, is_first_microbatch=None, bias=None):",
        )
    )
    age(tree)
    assert _warm_is_fresh(capsys, made, "pkg/model.py") != first


def test_a_new_module(tree: Path, capsys: pytest.CaptureFixture[str], made: Made) -> None:
    """``pkg/extra.py`` created makes user.py's ``Thing`` a TE subclass: its flag passed
    second (TEM002) and by keyword (TEM001)."""
    assert _warm_is_fresh(capsys, made, "pkg/user.py") == []
    (tree / "pkg" / "extra.py").write_text(EXTRA)
    age(tree)
    assert _warm_is_fresh(capsys, made, "pkg/user.py") == [
        ("pkg/user.py", 12, "TEM002"),
        ("pkg/user.py", 15, "TEM001"),
    ]


def test_a_deleted_module(tree: Path, capsys: pytest.CaptureFixture[str], made: Made) -> None:
    """``pkg/extra.py`` deleted: user.py's calls of ``Thing`` are unresolved (no finding)."""
    (tree / "pkg" / "extra.py").write_text(EXTRA)
    age(tree)
    assert len(_warm_is_fresh(capsys, made, "pkg/user.py")) == 2
    (tree / "pkg" / "extra.py").unlink()
    assert _warm_is_fresh(capsys, made, "pkg/user.py") == []


def test_a_configuration_created_or_edited_in_a_folder_between(
    tree: Path, capsys: pytest.CaptureFixture[str], made: Made
) -> None:
    """A ``pyproject.toml`` with a table in ``pkg/`` (between the file and the root, which it
    keeps: ``project-root``) governs model.py: ``unresolved = "report"`` reports the call of
    a class that is not TE; edited back to the default, it does not."""
    first = _warm_is_fresh(capsys, made, "pkg/model.py")
    config = tree / "pkg" / "pyproject.toml"
    table = '[tool.te-microbatch-lint]\nproject-root = ".."\nunresolved = "{}"\n'
    config.write_text(table.format("report"))
    age(tree)
    strict = _warm_is_fresh(capsys, made, "pkg/model.py")
    assert strict != first
    config.write_text(table.format("ignore"))
    age(tree)
    assert _warm_is_fresh(capsys, made, "pkg/model.py") == first


def test_a_moved_root(tree: Path, capsys: pytest.CaptureFixture[str], made: Made) -> None:
    """A ``pyproject.toml`` created in ``pkg/sub`` (no table) makes it the root of stack.py:
    ``layers.py`` is no longer of its project, and ``BiasLinear``'s layout (the flag third),
    which ``blocks.ScaledLinear`` inherits, is not known there. (The root is in the key by
    the project's files and the name of its root; a root moved over the same files changes
    no finding.)"""
    first = _warm_is_fresh(capsys, made, "pkg/sub/stack.py")
    (tree / "pkg" / "sub" / "pyproject.toml").write_text("[project]\nname = 'sub'\n")
    age(tree)
    assert _warm_is_fresh(capsys, made, "pkg/sub/stack.py") != first


def test_a_warm_project_run_imports_no_analysis(tree: Path) -> None:
    """What a fresh interpreter imports for a warm ``check .`` of an unchanged project: the
    modules of a served ``check --isolated`` (test_warm.py), the one that finds roots and
    those that infer the project's TE release (not ``te``'s facts)."""
    code = (  # the modules once the process has ended (``cli._leave`` too)
        "import atexit, sys\n"
        "atexit.register(lambda: print('\\0' + ' '.join(sorted(sys.modules))))\n"
        "sys.argv = ['te-microbatch-lint', 'check', '--output-format', 'json', "
        "'--cache-dir', '../cache', '.']\n"
        "from lint_rules.cli import console\nconsole()\n"
    )

    def run() -> tuple[str, set[str]]:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert done.returncode == 1, done.stderr  # findings
        out, _, modules = done.stdout.rpartition("\0")
        return out, set(modules.split())

    first, modules = run()
    assert "lint_rules.analysis.collector" in modules  # analysed, then kept whole
    again, modules = run()
    assert again == first
    ours = {m for m in modules if m.split(".")[0] == "lint_rules"}
    assert ours == SERVED | {
        "lint_rules.analysis.root",
        "lint_rules.releases",
        "lint_rules.te_release",
    }
    assert not {"ast", "dataclasses", "typing", "inspect", "tempfile", "threading"} & modules


def test_the_run_made_in_full_reads_the_files_its_key_was_made_of(
    tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``check .`` lists the project once (discovery); the run made in full is given that
    list (a module created meanwhile is not read by a run kept without it), and the project
    is listed once more after it, to keep the run only if no module came or went."""
    import lint_rules.analysis.faces as faces
    import lint_rules.analysis.root as root

    listed = []
    real = root.project_files

    def counted(*args: object) -> object:
        listed.append(args[0])
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(root, "project_files", counted)
    monkeypatch.setattr(faces, "project_files", counted)
    _check(capsys, "--cache-dir", "../cache", ".")
    assert listed == [str(tree)]  # after the run
    _check(capsys, "--cache-dir", "../cache", ".")
    assert listed == [str(tree)]  # served: the list is discovery's
