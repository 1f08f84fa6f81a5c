"""Where does `te-microbatch-lint check` spend its time? Phases, cProfile, imports.

    python benchmarks/profile_check.py                    # worst case, first 2,000 files
    python benchmarks/profile_check.py --files 20000      # the whole 20k-file worst case
    python benchmarks/profile_check.py --tree megatron-core
    python benchmarks/profile_check.py --pyinstrument     # also a pyinstrument call tree

Three views, all in one process on one core:

1. phases: the per-file pipeline of ``check`` taken apart (read + decode, byte prefilter,
   ``ast.parse``, ``analyze_tree``, noqa, reporting) and timed separately;
2. cProfile of ``lint_rules.cli.main(["check", ..., "--jobs", "1"])``: top functions by own
   time, and own time grouped by module;
3. start-up: ``python -X importtime`` of the CLI, and which heavy modules ``check`` imports.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import cProfile
import io
import os
import pstats
import re
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks import synth  # noqa: E402
from benchmarks.corpora import CORPORA, cache_root, fetch_corpus  # noqa: E402

FLAGGED = "+flag"
"""``megatron-core+flag``: a copy of a corpus where every file mentions the flag (in a last
comment line), so that every file passes the byte prefilter and is parsed."""


def flagged_copy(source: Path, target: Path) -> Path:
    """Copy the corpus ``source`` to ``target`` (once) with ``# is_first_microbatch`` appended
    to every ``.py`` file."""
    marker = target / ".te-lint-flagged"
    if marker.is_file():
        return target
    staging = target.with_name(target.name + f".tmp{os.getpid()}")
    for path in source.rglob("*"):
        copy = staging / path.relative_to(source)
        if path.is_dir():
            copy.mkdir(parents=True, exist_ok=True)
        elif path.is_file():
            copy.parent.mkdir(parents=True, exist_ok=True)
            data = path.read_bytes()
            if path.suffix == ".py":
                data += b"\n# is_first_microbatch\n"
            copy.write_bytes(data)
    (staging / marker.name).write_text("complete\n")
    if target.exists():  # another run made it meanwhile
        shutil.rmtree(staging)
    else:
        staging.rename(target)
    return target


def tree_files(name: str, n_files: int) -> tuple[Path, list[str], list[str]]:
    """(root, files relative to root, the CLI's path arguments covering exactly those files)."""
    cache = cache_root()
    if name.endswith(FLAGGED) and name[: -len(FLAGGED)] in CORPORA:
        spec = CORPORA[name[: -len(FLAGGED)]]
        root = flagged_copy(fetch_corpus(spec, cache), cache / "flagged" / spec.key)
        files = sorted(str(p.relative_to(root)) for p in (root / spec.package_dir).rglob("*.py"))
        if n_files and n_files < len(files):
            return root, files[:n_files], files[:n_files]
        return root, files, [spec.package_dir]
    if name in CORPORA:
        spec = CORPORA[name]
        root = fetch_corpus(spec, cache)
        files = sorted(str(p.relative_to(root)) for p in (root / spec.package_dir).rglob("*.py"))
        if n_files and n_files < len(files):
            return root, files[:n_files], files[:n_files]
        return root, files, [spec.package_dir]
    fraction = {"worst": 1.0, "realistic": 0.01}[name]
    chunks = max(1, n_files // synth.FILES_PER_CHUNK)
    root, manifest = synth.ensure_tree(cache, fraction, max(chunks, 20))
    paths, _ = synth.subset(root, manifest, n_files)
    files = sorted(str(p.relative_to(root)) for d in paths for p in (root / d).rglob("*.py"))
    return root, files, paths


def phases(root: Path, files: list[str]) -> None:
    from lint_rules.analysis import analyze_tree, mentions_flag
    from lint_rules.cli.reporting import reported_findings as _reported
    from lint_rules.fileio import read_source
    from lint_rules.noqa import filter_noqa
    from lint_rules.settings import DEFAULT_SETTINGS

    t: dict[str, float] = defaultdict(float)
    lines = n_findings = parsed = 0
    clock = time.perf_counter
    for rel in files:
        path = str(root / rel)
        a = clock()
        with open(path, "rb") as handle:
            raw = handle.read()
        b = clock()
        source = read_source(path)
        c = clock()
        relevant = mentions_flag(source.text)
        d = clock()
        t["open+read bytes (measured apart)"] += b - a
        t["read_source (stat, read, NUL scan, detect encoding, decode)"] += c - b
        t["text prefilter"] += d - c
        lines += raw.count(b"\n")
        if not relevant:
            continue
        parsed += 1
        tree = ast.parse(source.text)
        e = clock()
        findings = analyze_tree(tree, DEFAULT_SETTINGS)
        f = clock()
        if findings:
            findings, _ = filter_noqa(findings, source.text, False)
        g = clock()
        _reported(path, source.text, findings)
        h = clock()
        t["ast.parse"] += e - d
        t["analyze_tree"] += f - e
        t["filter_noqa"] += g - f
        t["_reported (columns)"] += h - g
        n_findings += len(findings)
    total = sum(v for k, v in t.items() if "measured apart" not in k)
    print(
        f"\n## Phases (one process, {len(files)} files, {lines:,} lines, {parsed} parsed, "
        f"{n_findings} findings)"
    )
    print("| phase | seconds | share | lines/s |\n|---|---|---|---|")
    for name, seconds in sorted(t.items(), key=lambda kv: -kv[1]):
        share = f"{100 * seconds / total:.1f}%" if "apart" not in name else "-"
        print(f"| {name} | {seconds:.3f} | {share} | {lines / seconds if seconds else 0:,.0f} |")
    print(
        f"| total (pipeline, no process start, no pool, no output) | {total:.3f} | 100% | "
        f"{lines / total:,.0f} |"
    )


def profile_cli(
    root: Path, files: list[str], paths: list[str], top: int, use_pyinstrument: bool
) -> None:
    from lint_rules import cli

    argv = ["check", *paths, "--isolated", "--quiet", "--no-cache", "--jobs", "1"]
    argv += ["--format", "json"]
    old = os.getcwd()
    os.chdir(root)
    try:
        profiler = cProfile.Profile()
        sink = io.StringIO()
        start = time.perf_counter()
        with contextlib.redirect_stdout(sink):
            profiler.runcall(cli.main, argv)
        wall = time.perf_counter() - start
        if use_pyinstrument:
            from pyinstrument import Profiler

            prof = Profiler(interval=0.001)
            with contextlib.redirect_stdout(io.StringIO()):
                prof.start()
                cli.main(argv)
                prof.stop()
            print("\n## pyinstrument (check --jobs 1)\n```")
            print(prof.output_text(unicode=False, color=False, show_all=False)[:6000])
            print("```")
    finally:
        os.chdir(old)
    stats = pstats.Stats(profiler)
    print(
        f"\n## cProfile of cli.main(check --jobs 1) on {len(files)} files: {wall:.2f}s "
        f"under the profiler"
    )
    by_module: dict[str, float] = defaultdict(float)
    rows = []
    for (filename, lineno, func), (_, ncalls, tottime, cumtime, _) in stats.stats.items():
        module = _module_of(filename)
        by_module[module] += tottime
        rows.append((tottime, cumtime, ncalls, f"{module}:{lineno}({func})"))
    total = sum(by_module.values())
    print("\n| module (own time) | seconds | share |\n|---|---|---|")
    for module, seconds in sorted(by_module.items(), key=lambda kv: -kv[1])[:15]:
        print(f"| {module} | {seconds:.3f} | {100 * seconds / total:.1f}% |")
    print("\n| own s | cum s | calls | function |\n|---|---|---|---|")
    for tottime, cumtime, ncalls, name in sorted(rows, reverse=True)[:top]:
        print(f"| {tottime:.3f} | {cumtime:.3f} | {ncalls} | {name} |")


def _module_of(filename: str) -> str:
    if filename.startswith("<") or filename == "~":
        return "builtins/C"
    path = Path(filename)
    if "lint_rules" in path.parts:
        return "lint_rules/" + path.name
    if "site-packages" in path.parts:
        return "site-packages/" + path.parts[path.parts.index("site-packages") + 1]
    return "stdlib/" + path.name


def startup() -> None:
    cmd = [sys.executable, "-X", "importtime", "-c", "import lint_rules.cli"]
    out = subprocess.run(cmd, capture_output=True, text=True).stderr
    rows = []
    for line in out.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if m:
            rows.append((int(m[2]), int(m[1]), len(m[3]) // 2, m[4]))
    top_level = [r for r in rows if r[2] <= 1]
    total = sum(r[0] for r in top_level)
    print(f"\n## Start-up: `import lint_rules.cli` {total / 1000:.1f} ms (python -X importtime)")
    for cum, _, _, name in sorted(top_level, reverse=True)[:8]:
        print(f"- {name}: {cum / 1000:.1f} ms cumulative")
    probe = (
        "import sys, io, contextlib, os\n"
        "from lint_rules import cli\n"
        "os.chdir(sys.argv[1])\n"
        "with contextlib.redirect_stdout(io.StringIO()): cli.main(['check', sys.argv[2], "
        "'--isolated', '--quiet', '--no-cache', '--jobs', '1'])\n"
        "heavy = [m for m in ('libcst', 'flake8', 'torch', 'multiprocessing', "
        "'concurrent.futures', 'tomllib') if m in sys.modules]\n"
        "print(' '.join(heavy) or 'none')\n"
    )
    root, files, _ = tree_files("worst", 1000)
    out = subprocess.run(
        [sys.executable, "-c", probe, str(root), files[0]], capture_output=True, text=True
    )
    print(
        f"- heavy modules imported by `check` on one relevant file: {out.stdout.strip()} "
        f"{out.stderr.strip()[-300:]}"
    )
    for label, argv in (
        ("python -c pass", [sys.executable, "-c", "pass"]),
        (
            "te-microbatch-lint --version",
            [str(Path(sys.executable).parent / "te-microbatch-lint"), "--version"],
        ),
    ):
        walls = []
        for _ in range(5):
            a = time.perf_counter()
            subprocess.run(argv, capture_output=True)
            walls.append(time.perf_counter() - a)
        print(f"- {label}: {1000 * sorted(walls)[2]:.0f} ms (median of 5)")


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--tree", default="worst", choices=["worst", "realistic", *CORPORA], help="what to profile"
    )
    p.add_argument("--files", type=int, default=2000, help="files (0 = all, for corpora)")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--pyinstrument", action="store_true")
    p.add_argument("--no-cprofile", action="store_true")
    p.add_argument("--no-startup", action="store_true")
    args = p.parse_args()
    root, files, paths = tree_files(args.tree, args.files)
    print(f"# profile of check on {args.tree}: {len(files)} files under {root}")
    phases(root, files)
    if not args.no_cprofile:
        profile_cli(root, files, paths, args.top, args.pyinstrument)
    if not args.no_startup:
        startup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
