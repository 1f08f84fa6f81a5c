"""The docs are true: every command they show runs, and everything they link to exists.

- Each ```` ```text ```` block that starts with ``$ `` (in README.md, docs/*.md and
  benchmarks/README.md) is run in a fresh copy of ``examples/``; its stdout followed by its
  stderr must equal the block's remaining lines.
- Each ``te-microbatch-lint``/``flake8``/``python -m libcst.tool`` line of a ```` ```bash ````
  block is run in a temporary project whose ``src/`` is a copy of ``examples/``: it must not be
  a usage error (exit 0 or 1, never 2), so a renamed flag or a dropped subcommand fails here.
- README.md stays short, relative links resolve inside the repository, and nothing points
  outside it.

pre-commit examples need hook installs and are covered by tests/test_precommit.py instead.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent
README = PROJECT / "README.md"
DOCS = [README, *sorted((PROJECT / "docs").glob("*.md")), PROJECT / "benchmarks" / "README.md"]
TEXT_BLOCK = re.compile(r"```text\n\$ (?P<command>[^\n]+)\n(?P<output>.*?)```", re.S)
BASH_BLOCK = re.compile(r"```bash\n(?P<body>.*?)```", re.S)
RUNNABLE = ("te-microbatch-lint ", "flake8 ", "python -m libcst.tool ")
LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")
README_LIMIT = 15 * 1024


def _docs() -> list[Path]:
    return [doc for doc in DOCS if doc.is_file()]


def examples() -> list[tuple[str, str, str]]:
    found = []
    for doc in _docs():
        for m in TEXT_BLOCK.finditer(doc.read_text("utf-8")):
            if not m["command"].startswith("pre-commit"):
                found.append((doc.relative_to(PROJECT).as_posix(), m["command"], m["output"]))
    return found


def shown_commands() -> list[tuple[str, str]]:
    found = []
    for doc in _docs():
        for m in BASH_BLOCK.finditer(doc.read_text("utf-8")):
            for line in m["body"].splitlines():
                command = line.split(" #", 1)[0].strip()
                if command.startswith(RUNNABLE):
                    found.append((doc.relative_to(PROJECT).as_posix(), command))
    return found


def _argv(command: str) -> list[str]:
    argv = shlex.split(command)
    if argv[0] == "python":
        argv[0] = sys.executable
    else:
        argv[0] = str(Path(sys.executable).parent / argv[0])
    return argv


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "80"}
    return subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, encoding="utf-8", env=env, timeout=120
    )


def test_the_docs_have_examples() -> None:
    commands = [command for _, command, _ in examples()]
    assert any(c.startswith("te-microbatch-lint check") for c in commands)
    assert any(c.startswith("te-microbatch-lint fix") for c in commands)
    assert any(c.startswith("python -m libcst.tool") for c in commands)


@pytest.mark.parametrize(
    ("doc", "command", "output"), examples(), ids=[f"{d}: {c}" for d, c, _ in examples()]
)
def test_example_output_is_real(doc: str, command: str, output: str, tmp_path: Path) -> None:
    shutil.copytree(PROJECT / "examples", tmp_path / "examples")
    done = _run(_argv(command), tmp_path)
    assert done.stdout + done.stderr == output, f"{doc}: {command}"


@pytest.mark.parametrize(
    ("doc", "command"), shown_commands(), ids=[f"{d}: {c}" for d, c in shown_commands()]
)
def test_shown_command_runs(doc: str, command: str, tmp_path: Path) -> None:
    shutil.copytree(PROJECT / "examples", tmp_path / "src")
    shutil.copytree(PROJECT / "examples", tmp_path / "examples")
    done = _run(_argv(command), tmp_path)
    assert done.returncode in (0, 1), f"{doc}: {command}\n{done.stdout}{done.stderr}"


def python_commands() -> list[tuple[str, list[str]]]:
    """``python -m MODULE [SUBCOMMAND]`` and ``python SCRIPT.py`` lines of the bash blocks, as
    the argv that asks them for ``--help`` (they are too long to run here: benchmarks, GPU)."""
    found = []
    for doc in _docs():
        for m in BASH_BLOCK.finditer(doc.read_text("utf-8")):
            for line in m["body"].splitlines():
                words = line.split(" #", 1)[0].split()
                if words[:1] != ["python"] or words[1:3] in (
                    ["-m", "pytest"],
                    ["-m", "libcst.tool"],
                ):
                    continue
                head = words[1:3] if words[1] == "-m" else words[1:2]
                rest = words[len(head) + 1 :]
                subcommand = rest[:1] if rest and rest[0].isidentifier() else []
                found.append((doc.relative_to(PROJECT).as_posix(), [*head, *subcommand]))
    return found


@pytest.mark.parametrize(
    ("doc", "argv"), python_commands(), ids=[f"{d}: {' '.join(a)}" for d, a in python_commands()]
)
def test_shown_python_command_exists(doc: str, argv: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, *argv, "--help"], cwd=PROJECT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{doc}: python {' '.join(argv)}\n{done.stderr}"


def test_readme_is_short() -> None:
    size = len(README.read_bytes())
    assert size <= README_LIMIT, f"README.md is {size} bytes; the limit is {README_LIMIT}"


def test_readme_claims_only_what_was_run() -> None:
    """Whether real TE has run is said in one place (docs/runtime.md), not asserted in the
    README; the default guard's origin is said where the guard strategy is first shown."""
    text = " ".join(README.read_text("utf-8").split())
    assert "(docs/runtime.md#what-has-run-on-real-transformer-engine)" in text
    assert not re.search(r"on real TE where|runs? on real TE", text), (
        "the README claims real-TE runs"
    )
    assert "no released megatron-core" in text  # is_first_microbatch_tracked: Megatron-LM PR 6965
    assert "pull request 6965" in text


def _repository_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
    )
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout: {listed.stderr.strip()}")
    return [PROJECT / name for name in listed.stdout.splitlines() if (PROJECT / name).is_file()]


def _anchors(doc: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    found = set()
    for line in doc.read_text("utf-8").splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


def test_relative_links_resolve() -> None:
    broken = []
    for doc in [*_docs(), *sorted(PROJECT.glob("*.yaml")), *sorted(PROJECT.glob(".*.yaml"))]:
        text = doc.read_text("utf-8")
        targets = [m["target"] for m in LINK.finditer(text)]
        targets += re.findall(r"\b(docs/[\w.-]+\.md)\b", text) if doc.suffix == ".yaml" else []
        for target in targets:
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            base = PROJECT if doc.suffix == ".yaml" else doc.parent
            linked = base / path if path else doc
            if not linked.exists():
                broken.append(f"{doc.relative_to(PROJECT)}: {target}")
            elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
                broken.append(f"{doc.relative_to(PROJECT)}: {target} (no such heading)")
    assert not broken, broken


def test_nothing_points_outside_the_repository() -> None:
    folder = "shared"  # spelled apart so that this file does not match itself
    outside = re.compile(rf"(?<![\w/.-])(\.\./)+{folder}/|(?<![\w.-]){folder}/te-facts")
    hits = []
    for path in _repository_files():
        if path.suffix not in {".py", ".md", ".toml", ".cfg", ".yaml", ".txt", ""}:
            continue
        try:
            text = path.read_text("utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if outside.search(line):
                hits.append(f"{path.relative_to(PROJECT)}:{number}: {line.strip()}")
    assert not hits, hits
