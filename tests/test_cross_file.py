"""TE subclasses and factories defined in one file of a run and used in another.

``fixtures/project/pkg`` is a small package: ``layers.py`` defines TE subclasses and factories,
``model.py`` imports them (absolutely, relatively, through the module; ``star.py`` with ``*``),
``sub/blocks.py`` subclasses one two directories away and ``sub/stack.py`` uses that subclass.
``stateful.py`` defines a stateful TE wrapper (it passes its own attribute as the flag) and
``sub/mtp.py`` calls a module holding one once per depth (TEM005 only with both files).
The inline
markers are the findings of ``check`` on the whole directory; a file checked alone (or by
flake8, which sees one file at a time) does not resolve the imported classes: the keyword calls
are unresolved (quiet by default, reported with ``unresolved = "report"``), no positional flag.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from markers import expected_findings

import lint_rules.analysis
from lint_rules.analysis.project import absolute
from lint_rules.cli import command
from lint_rules.cli.crossfile import Modules

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "fixtures" / "project"
FILES = sorted(PROJECT.rglob("*.py"))

Found = dict[str, set[tuple[int, int, str]]]


def check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[Found, dict]:
    """``check --format json`` in this process: findings per path, and the messages (add
    ``--unresolved report`` for a strict run)."""
    status = command.main(["check", "--isolated", "--format", "json", *args])
    rows = json.loads(capsys.readouterr().out or "[]")
    assert status == (1 if rows else 0)
    found: Found = {}
    messages = {}
    for row in rows:
        path = str(Path(row["path"]).resolve())
        found.setdefault(path, set()).add((row["line"], row["column"], row["code"]))
        messages[(Path(path).name, row["line"], row["code"])] = row["message"]
    return found, messages


def markers() -> Found:
    return {str(path): expected_findings(path) for path in FILES if expected_findings(path)}


def relative_markers() -> Found:
    return {str(Path(path).relative_to(PROJECT)): found for path, found in markers().items()}


ALONE_STRICT = {
    "model.py": {(28, 27, "TEM001"), (40, 32, "TEM001"), (49, 30, "TEM001")},
    "stack.py": {(18, 34, "TEM001"), (18, 34, "TEM005")},
    "star.py": {(17, 18, "TEM001")},
    "stateful.py": {(14, 34, "TEM001")},
}
"""Each file checked by itself, strict: the keyword calls of imported classes unresolved
(reported, as every unresolved callee), positional flags not looked for (no TE import)."""
ALONE = {"stateful.py": {(14, 34, "TEM001")}}
"""The same by default: only stateful.py's call of its own TE base is TE by evidence."""


def test_the_directory_resolves_across_its_files(capsys: pytest.CaptureFixture[str]) -> None:
    found, messages = check(capsys, "--no-cache", str(PROJECT))
    assert found == markers()
    assert "TE MyLinear `self.fc`" in messages[("model.py", 28, "TEM001")]
    assert "TE BiasLinear `self.tail`" in messages[("model.py", 40, "TEM001")]
    assert "TE NoFlagLinear" in messages[("model.py", 46, "TEM004")]
    assert ("model.py", 49, "TEM001") not in messages  # a class of the run that is not TE
    assert "TE BiasLinear `super().forward`" in messages[("blocks.py", 9, "TEM002")]
    assert "TE ScaledLinear `self.layer`" in messages[("stack.py", 18, "TEM001")]
    assert "TE Scaled `scaled`" in messages[("star.py", 16, "TEM002")]
    assert "via StatefulLinear" in messages[("mtp.py", 19, "TEM005")]
    assert "TE MyLinear `fc`" in messages[("star.py", 17, "TEM001")]


def test_strict_run_reports_the_class_of_the_run_that_is_not_te(
    capsys: pytest.CaptureFixture[str],
) -> None:
    found, messages = check(capsys, "--no-cache", "--unresolved", "report", str(PROJECT))
    strict = {str(p): expected_findings(p, strict=True) for p in FILES}
    assert found == {path: found for path, found in strict.items() if found}
    assert "unresolved `self.plain`" in messages[("model.py", 49, "TEM001")]  # not in the index


def test_parallel_run_gives_the_same(capsys: pytest.CaptureFixture[str]) -> None:
    found, _ = check(capsys, "--no-cache", "--jobs", "2", str(PROJECT))
    assert found == markers()


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(PROJECT)))
def test_one_file_alone_keeps_todays_answers(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found, _ = check(capsys, "--no-cache", str(path))
    assert found.get(str(path), set()) == ALONE.get(path.name, set())
    found, messages = check(capsys, "--no-cache", "--unresolved", "report", str(path))
    assert found.get(str(path), set()) == ALONE_STRICT.get(path.name, set())
    if path.name != "stateful.py":  # it calls its own TE base: resolved alone too
        assert all("unresolved `" in message for message in messages.values())


def test_flake8_sees_one_file_at_a_time() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "TEM", "pkg"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    found = {
        (Path(path).name, int(line), int(col), rest.split()[0])
        for path, line, col, rest in (row.split(":", 3) for row in proc.stdout.splitlines())
    }
    assert found == {(name, *f) for name, findings in ALONE.items() for f in findings}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(PROJECT, root)
    return root


def counting_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    parsed: list[str] = []
    analyze = lint_rules.analysis.analyze_source

    def recording(text: str, *args: object, **kwargs: object) -> list:
        parsed.append(text.splitlines()[0])
        return analyze(text, *args, **kwargs)

    monkeypatch.setattr(lint_rules.analysis, "analyze_source", recording)
    return parsed


def test_cache_is_invalidated_by_the_file_a_result_used(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    options = ["--cache-dir", str(project.parent / "cache"), "--jobs", "1"]
    cache = [*options, str(project)]
    parsed = counting_parses(monkeypatch)
    # A result of layers.py checked alone does not say what it exports: not served to a run
    # over the directory.
    check(capsys, *options, str(project / "pkg" / "layers.py"))
    del parsed[:]
    first, _ = check(capsys, *cache)
    assert first == {str(project / k): v for k, v in relative_markers().items()}
    # Seven files pass the prefilter; layers.py and stateful.py import TE and are analysed
    # first, so model.py, blocks.py and star.py see layers.py's exports, and sub/mtp.py
    # stateful.py's, the first time; stack.py imports the subclass blocks.py then exports
    # (parsed again with it).
    assert len(parsed) == 7 + 1
    again, _ = check(capsys, *cache)
    assert again == first and len(parsed) == 8  # the second run parsed nothing
    # BiasLinear now takes the flag second: model.py's results change, though it did not.
    layers = project / "pkg" / "layers.py"
    layers.write_text(
        layers.read_text().replace(
            "def forward(self, x, bias, is_first_microbatch=None):",
            "def forward(self, x, is_first_microbatch=None, bias=None):",
        )
    )
    model = str(project / "pkg" / "model.py")
    changed, _ = check(capsys, *cache)
    assert (31, 35, "TEM002") in first[model] and (31, 35, "TEM002") not in changed[model]
    assert (34, 32, "TEM002") in changed[model]
    fresh, _ = check(capsys, "--no-cache", str(project))
    assert changed == fresh
    # A change that no other file uses: only that file is parsed again.
    del parsed[:]
    stack = project / "pkg" / "sub" / "stack.py"
    stack.write_text(stack.read_text() + "\n# edited\n")
    assert check(capsys, *cache)[0] == fresh
    assert parsed == [stack.read_text().splitlines()[0]]


def test_fix_on_the_directory_uses_the_index(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert command.main(["fix", "--isolated", "--quiet", str(project)]) == 1
    capsys.readouterr()
    found, _ = check(capsys, "--no-cache", str(project))
    model = str(project / "pkg" / "model.py")
    # Left: TEM004 (no fix); the unresolved callee is quiet (and its fix unsafe).
    assert found == {model: {(46, 32, "TEM004")}}
    assert "self.bias_fc(x, b, self.flag)" not in (project / "pkg" / "model.py").read_text()


def test_module_names_and_relative_imports(tmp_path: Path) -> None:
    (tmp_path / "space" / "pkg" / "sub").mkdir(parents=True)
    for name in ("pkg/__init__.py", "pkg/sub/__init__.py", "pkg/sub/mod.py", "pkg/top.py"):
        (tmp_path / "space" / name).write_text("")
    modules = Modules([str(tmp_path / "space")])
    names, package = modules.names(str(tmp_path / "space" / "pkg" / "sub" / "mod.py"))
    assert names == ["pkg.sub.mod", "space.pkg.sub.mod"] and package == "pkg.sub"
    assert modules.names(str(tmp_path / "space" / "pkg" / "__init__.py")) == (
        ["pkg", "space.pkg"],
        "pkg",
    )
    # Also named from the run's directory, with its name (for namespace packages).
    names, package = Modules([str(tmp_path)]).names(str(tmp_path / "space" / "pkg" / "top.py"))
    assert (
        names
        == ["pkg.top", "space.pkg.top", tmp_path.name + ".space.pkg.top"][
            : 3 if tmp_path.name.isidentifier() else 2
        ]
        and package == "pkg"
    )
    assert absolute("..layers.X", "pkg.sub") == "pkg.layers.X"
    assert absolute(".layers", "pkg") == "pkg.layers"
    assert absolute("...x", "pkg.sub") is None and absolute(".x", None) is None


IMPORTS = ROOT / "fixtures" / "imports"
"""Packages whose ``model.py`` imports the TE subclass and factory of ``layers.py`` in one way
each (fixtures/imports/README.md): line 5 passes a positional flag to the subclass (TEM002),
line 6 an untracked keyword flag to the factory's product (TEM001)."""


def _codes(capsys: pytest.CaptureFixture[str], *args: str) -> dict[tuple[int, str], str]:
    found, messages = check(capsys, "--no-cache", *args)
    return {(line, code): messages[(name, line, code)] for name, line, code in messages}


@pytest.mark.parametrize(
    "case", ["from_dot_import_module", "from_pkg_import_module", "import_as", "reexport", "star"]
)
def test_a_module_or_a_reexport_resolves(capsys: pytest.CaptureFixture[str], case: str) -> None:
    found = _codes(capsys, str(IMPORTS / case))
    assert set(found) == {(5, "TEM002"), (6, "TEM001")}, found
    assert "TE MyLinear" in found[(5, "TEM002")]
    assert "TE Linear" in found[(6, "TEM001")]


def test_namespace_package_relative_imports_and_file_lists(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ``__init__.py`` (PEP 420): ``from .layers import ...`` resolves against the folder,
    in a directory run and with the files named one by one (as pre-commit names them)."""
    root = IMPORTS / "namespace"
    assert set(_codes(capsys, str(root))) == {(5, "TEM002"), (6, "TEM001")}
    monkeypatch.chdir(root)
    listed = _codes(capsys, "nspkg/model.py", "nspkg/layers.py")
    assert set(listed) == {(5, "TEM002"), (6, "TEM001")}, listed
