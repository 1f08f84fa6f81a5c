"""The hooks in ``.pre-commit-hooks.yaml``, and the flake8 ``additional_dependencies`` way, run
by the real pre-commit on a temporary git repository (``pre-commit run`` with the repository in
the config, and ``pre-commit try-repo``). All three read the same ``[tool.te-microbatch-lint]``
table of the sample repository's ``pyproject.toml``.

pre-commit builds each hook's virtualenv and pip-installs this project into it, which needs the
package registry: the test is marked ``network`` and skips (saying why) when pip cannot reach it.
The project is copied into a throwaway git repository first, so the test sees the working tree
as it is (committed or not) and never touches the project's own repository.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.network, pytest.mark.long]

PROJECT = Path(__file__).resolve().parent.parent
SAMPLE = PROJECT / "fixtures" / "cli" / "project"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def sh(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: int = 60):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def git(*args: str, cwd: Path) -> None:
    env = {**os.environ, **GIT_ENV, "HOME": str(cwd)}
    done = sh("git", *args, cwd=cwd, env=env)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def pre_commit() -> list[str]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    pytest.importorskip("pre_commit", reason="pre-commit is not installed (pip install .[test])")
    probe = sh(sys.executable, "-m", "pip", "index", "versions", "libcst", cwd=PROJECT, timeout=90)
    if probe.returncode != 0:
        reason = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"pre-commit needs the package registry to build hooks; pip: {reason}")
    return [sys.executable, "-m", "pre_commit"]


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """This project's working tree as a one-commit git repository: (path, commit)."""
    root = tmp_path_factory.mktemp("hooks") / "te-microbatch-lint"
    for package in ("lint_rules", "te_microbatch_lint"):  # the packages pyproject.toml installs
        shutil.copytree(
            PROJECT / package, root / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    for name in ("pyproject.toml", ".pre-commit-hooks.yaml", "README.md"):
        if (PROJECT / name).exists():
            shutil.copy(PROJECT / name, root / name)
    if not (root / "README.md").exists():  # pyproject.toml names it as the readme
        (root / "README.md").write_text("te-microbatch-lint\n")
    git("init", "-q", cwd=root)
    git("add", "-A", cwd=root)
    git("commit", "-q", "-m", "snapshot", cwd=root)
    head = sh("git", "rev-parse", "HEAD", cwd=root).stdout.strip()
    return root, head


CONSUMER_CONFIG = """\
[tool.te-microbatch-lint]
exclude = ["pkg/sub/*"]
unresolved = "report"
guard-functions = ["tracked"]
"""
"""``exclude`` is for our hooks (flake8 has its own); ``guard-functions`` makes line 15 of
``pkg/sub/unresolved.py`` tracked, which only a face that reads this table knows."""


@pytest.fixture
def consumer(tmp_path: Path, hook_repo: tuple[Path, str]) -> Path:
    """A user's repository with the sample files, using our hooks and flake8 with our plugin."""
    repo_path, rev = hook_repo
    root = tmp_path / "consumer"
    shutil.copytree(SAMPLE, root)
    (root / "pyproject.toml").write_text(CONSUMER_CONFIG)
    (root / ".pre-commit-config.yaml").write_text(
        f"""\
repos:
- repo: {repo_path}
  rev: {rev}
  hooks:
  - id: te-microbatch-lint
  - id: te-microbatch-lint-fix
- repo: local
  hooks:
  - id: flake8
    name: flake8
    entry: flake8 --select TEM
    language: python
    types: [python]
    additional_dependencies: [flake8, {repo_path}]
"""
    )
    git("init", "-q", cwd=root)
    git("add", "-A", cwd=root)
    return root


def run_hook(pre_commit: list[str], hook: str, consumer: Path, cache: Path):
    env = {**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(cache), "PRE_COMMIT_COLOR": "never"}
    return sh(*pre_commit, "run", hook, "--all-files", cwd=consumer, env=env, timeout=600)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


def test_check_hook_reports_and_honours_config_excludes(
    pre_commit: list[str], consumer: Path, cache: Path
) -> None:
    done = run_hook(pre_commit, "te-microbatch-lint", consumer, cache)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "pkg/model.py:12:" in done.stdout and "TEM001" in done.stdout
    assert "pkg/model.py:13:" in done.stdout and "TEM004" in done.stdout
    assert "unresolved.py" not in done.stdout  # excluded by pyproject.toml, though named
    assert "suppressed.py" not in done.stdout


def test_fix_hook_rewrites_files_then_passes(
    pre_commit: list[str], consumer: Path, cache: Path
) -> None:
    first = run_hook(pre_commit, "te-microbatch-lint-fix", consumer, cache)
    assert first.returncode == 1, first.stdout + first.stderr  # pre-commit: files were modified
    assert "files were modified by this hook" in first.stdout
    text = (consumer / "pkg/model.py").read_text(encoding="utf-8")
    assert "y = self.fc(ünï, is_first_microbatch=None)" in text
    sub = (consumer / "pkg/sub/unresolved.py").read_bytes()
    assert sub == (SAMPLE / "pkg/sub/unresolved.py").read_bytes()
    git("add", "-A", cwd=consumer)
    second = run_hook(pre_commit, "te-microbatch-lint-fix", consumer, cache)
    # Nothing more to rewrite, but the hook still fails on what no fix removes (TEM004).
    assert second.returncode == 1, second.stdout + second.stderr
    assert "files were modified" not in second.stdout and "TEM004 x1" in second.stdout
    left = run_hook(pre_commit, "te-microbatch-lint", consumer, cache)
    assert left.returncode == 1
    assert "TEM004" in left.stdout and "TEM001" not in left.stdout


def test_flake8_with_additional_dependencies_reads_the_pyproject_table(
    pre_commit: list[str], consumer: Path, cache: Path
) -> None:
    done = run_hook(pre_commit, "flake8", consumer, cache)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "pkg/model.py:12:" in done.stdout and "TEM001" in done.stdout
    assert "suppressed.py" not in done.stdout
    assert "pkg/sub/unresolved.py:14:" in done.stdout  # flake8 does not apply our exclude
    assert "pkg/sub/unresolved.py:15:" not in done.stdout  # guard-functions from pyproject.toml


def test_try_repo(
    pre_commit: list[str], consumer: Path, cache: Path, hook_repo: tuple[Path, str]
) -> None:
    """``pre-commit try-repo`` with no hook named runs both hooks, in the order
    ``.pre-commit-hooks.yaml`` lists them (one hook environment for the two)."""
    repo_path, rev = hook_repo
    env = {**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(cache), "PRE_COMMIT_COLOR": "never"}
    command = (*pre_commit, "try-repo", str(repo_path), "--ref", rev, "--all-files")
    done = sh(*command, cwd=consumer, env=env, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    check, fix = re.split(r"^te-microbatch-lint fix\.+", done.stdout, maxsplit=1, flags=re.M)
    assert "pkg/model.py:12:" in check and "TEM004" in check
    assert "unresolved.py" not in done.stdout  # excluded by pyproject.toml, though named
    assert "files were modified by this hook" in fix
    text = (consumer / "pkg/model.py").read_text(encoding="utf-8")
    assert "is_first_microbatch=None" in text


def readme_snippet() -> str:
    """The README's pre-commit configuration, as a user copies it."""
    text = (PROJECT / "README.md").read_text(encoding="utf-8")
    return re.search(r"\*\*2\. pre-commit hooks\*\*.*?```yaml\n(.*?)```", text, re.S)[1]


def test_readme_snippet_pins_what_exists_and_runs_only_the_check_hook() -> None:
    """No tag is pinned that a copy of this repository may not have: the user fills in a
    commit (or, once a release is tagged, its tag), and the README says how releases are made."""
    from lint_rules import __version__

    snippet = readme_snippet()
    assert "rev: COMMIT-SHA " in snippet and "rev: v" not in snippet
    active = [
        line.split("id:")[1].split()[0]
        for line in snippet.splitlines()
        if line.strip().startswith("- id:")
    ]
    assert active == ["te-microbatch-lint"]  # the fix hook is opt-in, commented out
    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    assert "pre-commit autoupdate" in readme and "docs/contributing.md#releasing" in readme
    contributing = (PROJECT / "docs" / "contributing.md").read_text(encoding="utf-8")
    assert "## Releasing" in contributing and "git tag vX.Y.Z" in contributing
    changelog = (PROJECT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"## {__version__}\n" in changelog


def test_readme_snippet_runs_as_written(
    pre_commit: list[str], hook_repo: tuple[Path, str], tmp_path: Path, cache: Path
) -> None:
    """The snippet as written, its commit filled in as the README says: the check hook runs,
    reports, and no file is rewritten."""
    repo_path, head = hook_repo
    clone = tmp_path / "clone"
    git("clone", "-q", str(repo_path), str(clone), cwd=tmp_path)
    root = tmp_path / "consumer"
    shutil.copytree(SAMPLE, root)
    (root / "pyproject.toml").write_text(CONSUMER_CONFIG)
    snippet = readme_snippet().replace("https://YOUR-GIT-SERVER/te-microbatch-lint", str(clone))
    snippet = snippet.replace("COMMIT-SHA", head)
    (root / ".pre-commit-config.yaml").write_text(snippet)
    git("init", "-q", cwd=root)
    git("add", "-A", cwd=root)
    before = {p: p.read_bytes() for p in root.rglob("*.py")}
    env = {**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(cache), "PRE_COMMIT_COLOR": "never"}
    done = sh(*pre_commit, "run", "--all-files", cwd=root, env=env, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "pkg/model.py:12:" in done.stdout and "TEM001" in done.stdout
    assert "files were modified" not in done.stdout
    assert {p: p.read_bytes() for p in root.rglob("*.py")} == before
