"""Nothing under analysis is ever imported, executed or evaluated.

``fixtures/io/sidefx_pkg`` writes a marker file from its package ``__init__``, its module body,
a decorator, a class body, an annotation, a default argument, a call argument, its ``__main__``
block and an imported helper; ``fixtures/io/fake_site`` is a stand-in ``transformer_engine``
that writes a marker when imported. Both are put on the linter's ``PYTHONPATH`` and in its
working directory, so importing the analysed code (or TE) in any way would leave a marker.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import cli

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "io"


@pytest.fixture
def sandbox(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "sidefx_pkg", project / "sidefx_pkg")
    shutil.copytree(FIXTURES / "fake_site", tmp_path / "site")
    markers = tmp_path / "markers"
    markers.mkdir()
    python_path = os.pathsep.join(
        [str(tmp_path / "site"), str(project), os.environ.get("PYTHONPATH", "")]
    )
    env = {**os.environ, "TEM_EXEC_MARKER_DIR": str(markers), "PYTHONPATH": python_path}
    return project, env


def executed(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.executed"))


def test_fixture_really_has_side_effects(sandbox: tuple[Path, dict[str, str]]) -> None:
    """The guard of the real test: importing the fixture does write markers."""
    project, env = sandbox
    subprocess.run(
        [sys.executable, "-c", "import sidefx_pkg.model"], cwd=project, env=env, check=True
    )
    names = {Path(p).name for p in executed(project.parent)}
    assert {
        "sidefx_pkg.__init__.executed",
        "helpers.executed",
        "module_body.executed",
        "class_body.executed",
        "default_argument.executed",
        "transformer_engine.pytorch.executed",
    } <= names


def test_check_and_fix_never_execute_the_code(sandbox: tuple[Path, dict[str, str]]) -> None:
    project, env = sandbox
    model = project / "sidefx_pkg" / "model.py"
    original = model.read_text()

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*cli(), *args], cwd=project, env=env, capture_output=True, text=True, timeout=120
        )

    checked = run("check", ".")
    assert checked.returncode == 1, (checked.stdout, checked.stderr)
    assert "model.py" in checked.stdout and "TEM001" in checked.stdout  # it was analysed
    for extra in (["--format", "json"], ["--format", "sarif"], ["--jobs", "2"]):
        assert run("check", ".", *extra).returncode == 1
    flake8 = subprocess.run(
        [sys.executable, "-m", "flake8", "--select", "TEM", "--isolated", "."],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert flake8.returncode == 1 and "TEM001" in flake8.stdout, (flake8.stdout, flake8.stderr)
    assert run("fix", "--diff", ".").returncode == 1
    assert run("fix", "--check", ".").returncode == 1
    assert model.read_text() == original
    fixed = run("fix", "--unsafe-fixes", "--jobs", "2", ".")  # a call in a value: unsafe
    assert fixed.returncode == 0, fixed.stderr
    assert model.read_text() != original  # it was rewritten ...
    assert run("check", ".").returncode == 0
    assert executed(project.parent) == []  # ... and never run
