"""Check that a change leaves every finding as it was: this checkout against a git revision.

    python benchmarks/same_findings.py                  # against HEAD (uncommitted changes)
    python benchmarks/same_findings.py --base main      # against another revision
    python benchmarks/same_findings.py --jobs 1 --jobs 2

The revision is exported with ``git archive`` into a temporary folder and run from there
(``PYTHONPATH``), this checkout from the repository root; both run ``check --output-format
json --exit-zero --no-cache --isolated`` on the same trees from the same folder: every cached
corpus (``$TE_LINT_CACHE/corpora/*``, its every-file-parsed copies under ``flagged/``), the
fixture catalogue, and the installed ``torch`` package when there is one. The JSON (findings
and errors) and the exit status must be equal, byte for byte. Exit status 1 when any differs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.corpora import MEGATRON_CORE, cache_root  # noqa: E402
from benchmarks.profile_check import flagged_copy  # noqa: E402


def trees() -> list[tuple[str, Path, str]]:
    """(label, folder to run in, path argument)."""
    found = [("fixtures", REPO_ROOT, "fixtures")]
    cache = cache_root()
    megatron = cache / "corpora" / MEGATRON_CORE.key
    if megatron.is_dir():  # every file parsed: the cross-file passes at their busiest
        flagged_copy(megatron, cache / "flagged" / MEGATRON_CORE.key)
    for group in ("corpora", "flagged"):
        folder = cache / group
        if folder.is_dir():
            for tree in sorted(p for p in folder.iterdir() if p.is_dir() and ".tmp" not in p.name):
                found.append((f"{group}/{tree.name}", tree, "."))
    try:
        import importlib.util

        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin:
        torch = Path(spec.origin).parent
        found.append(("torch", torch.parent, torch.name))
    return found


def export(revision: str, target: Path) -> None:
    archive = subprocess.run(
        ["git", "archive", "--format=tar", revision],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
    ).stdout
    with tempfile.TemporaryFile() as handle:
        handle.write(archive)
        handle.seek(0)
        with tarfile.open(fileobj=handle) as tar:
            tar.extractall(target, filter="data")


def run(code: Path, cwd: Path, path: str, jobs: str | None) -> tuple[int, bytes, float]:
    env = dict(os.environ, PYTHONPATH=str(code))
    # -P: the folder it runs in is not put first on the path, so that a run from this
    # repository's root (the fixtures) imports the code of PYTHONPATH, not this checkout's.
    cmd = [sys.executable, "-P", "-m", "lint_rules.cli", "check", "--output-format", "json"]
    cmd += ["--exit-zero", "--no-cache", "--isolated", path]
    if jobs is not None:
        cmd += ["--jobs", jobs]
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True)
    return done.returncode, done.stdout, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="HEAD", help="git revision to compare with (HEAD)")
    parser.add_argument(
        "--jobs", action="append", help="--jobs values to run (default: the default)"
    )
    parser.add_argument("--only", help="only trees whose label contains this")
    args = parser.parse_args(argv)
    different = 0
    with tempfile.TemporaryDirectory(prefix="te-lint-base-") as base:
        export(args.base, Path(base))
        for label, cwd, path in trees():
            if args.only and args.only not in label:
                continue
            for jobs in args.jobs or [None]:
                old = run(Path(base), cwd, path, jobs)
                new = run(REPO_ROOT, cwd, path, jobs)
                same = old[:2] == new[:2]
                different += not same
                count = new[1].count(b'"code"')
                print(
                    f"{'same' if same else 'DIFFERENT':9} {label:40} jobs={jobs or 'default':7} "
                    f"{count:5} findings  {old[2]:6.2f} s -> {new[2]:6.2f} s",
                    flush=True,
                )
    print("all the same" if not different else f"{different} tree(s) differ")
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())
