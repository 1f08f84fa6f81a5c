"""What respecting ``.gitignore`` costs: our walk with and without ignore files, and git's own.

    python benchmarks/discovery_cost.py           # megatron-core 0.19.2 as a git repository

The corpus is copied into a temporary git repository with a root ``.gitignore`` (five patterns,
one re-include) and a nested one. Timed in this process, best and median of 15: the walk with
``--no-respect-gitignore``, the walk with the ignore files matched by ``pathspec``, and
``git ls-files --cached --others --exclude-standard`` (a process per call), which is the
alternative the issue offered. All three must list the same files (the walk without ignore
files lists more).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.corpora import CORPORA, cache_root, fetch_corpus  # noqa: E402

GITIGNORE = "build/\n*.egg-info/\n__pycache__/\n*_pb2.py\nmegatron/core/models/audio/\n"
NESTED = "*_test_utils.py\n"


def timed(work: Callable[[], list[str]], repeats: int = 15) -> tuple[float, float, list[str]]:
    walls, result = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        result = work()
        walls.append(time.perf_counter() - start)
    return min(walls), statistics.median(walls), result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default="megatron-core", choices=list(CORPORA))
    args = parser.parse_args(argv)
    from lint_rules.cli.discovery import discover

    corpus = fetch_corpus(CORPORA[args.corpus], cache_root())
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        shutil.copytree(corpus, root)
        (root / ".gitignore").write_text(GITIGNORE)
        (root / "megatron" / "core" / ".gitignore").write_text(NESTED)
        git = ["git", "-c", "user.email=bench@example.invalid", "-c", "user.name=bench"]
        subprocess.run([*git, "init", "-q"], cwd=root, check=True)
        subprocess.run([*git, "add", "-A"], cwd=root, check=True)
        subprocess.run([*git, "commit", "-qm", "corpus"], cwd=root, check=True)

        def walk(respect: bool) -> Callable[[], list[str]]:
            return lambda: [
                str(Path(p)) for p in discover(["."], [], respect_gitignore=respect).files
            ]

        def ls_files() -> list[str]:
            listed = subprocess.run(
                ["git", "ls-files", "-co", "--exclude-standard", "--", "*.py", "*.pyi"],
                cwd=root,
                capture_output=True,
                text=True,
                check=True,
            )
            return listed.stdout.splitlines()

        os.chdir(root)
        rows = [
            ("walk, --no-respect-gitignore", walk(False)),
            ("walk + .gitignore via pathspec", walk(True)),
            ("git ls-files -co --exclude-standard", ls_files),
        ]
        print(f"| {args.corpus} as a git repository | files | best ms | median ms |")
        print("|---|---:|---:|---:|")
        found = {}
        for name, work in rows:
            best, median, files = timed(work)
            found[name] = sorted(files)
            print(f"| {name} | {len(files)} | {best * 1000:.1f} | {median * 1000:.1f} |")
        same = found[rows[1][0]] == found[rows[2][0]]
        print(f"\npathspec walk and git ls-files list the same files: {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
