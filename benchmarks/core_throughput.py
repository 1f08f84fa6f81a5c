"""Throughput of the analysis core: lines per CPU-second of ``analyze_source`` over a tree.

    python benchmarks/core_throughput.py                         # worst case: 2,000 files
    python benchmarks/core_throughput.py --tree megatron-core    # a real corpus
    python benchmarks/core_throughput.py --tree megatron-core+flag   # it, every file parsed
    python benchmarks/core_throughput.py --against /path/to/old/checkout --repeats 3
    python benchmarks/core_throughput.py --floor   # + ast.parse alone, the C parser alone

What ``check`` does per file after reading it (byte prefilter, ``ast.parse``, the analysis with
its fixes), in one process on one core, timed with ``time.process_time``. ``--against`` runs
another checkout of the project (an older release) on the same files in the same run,
alternating, and prints the ratio: that is how a speed-up is reported (never a timed assertion).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]

_CHILD = r"""
import ast, gc, json, symtable, sys, time
from lint_rules.analysis import analyze_source, mentions_flag
files = json.loads(sys.stdin.read())
texts = [open(f, encoding="utf-8").read() for f in files]
lines = sum(t.count("\n") for t in texts)
start = time.process_time()
findings = 0
for text in texts:
    try:
        findings += len(analyze_source(text))
    except SyntaxError:
        pass
result = {"cpu": time.process_time() - start, "lines": lines, "findings": findings}
if "--floor" in sys.argv:
    # What parsing the files that pass the prefilter costs alone: ast.parse (collector off,
    # as analyze_source runs it), and the C parser without building Python objects
    # (symtable), the least a syntax check costs.
    parsed = [text for text in texts if mentions_flag(text)]
    for name, parse in (("ast.parse", ast.parse), ("symtable", symtable.symtable)):
        start = time.process_time()
        for text in parsed:
            gc.disable()
            try:
                parse(text, "<file>", "exec") if name == "symtable" else parse(text)
            except SyntaxError:
                pass
            finally:
                gc.enable()
        result[name] = time.process_time() - start
print(json.dumps(result))
"""


def run_once(checkout: Path, files: list[str], floor: bool = False) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, *(["--floor"] if floor else [])],
        input=json.dumps(files),
        capture_output=True,
        text=True,
        env=env,
        cwd=checkout,
        check=True,
    )
    return json.loads(proc.stdout)


def main() -> int:
    sys.path.insert(0, str(REPO_ROOT))
    from benchmarks.profile_check import tree_files

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument(
        "--tree",
        default="worst",
        help="worst, realistic, a corpus name, or NAME+flag (every file of it parsed)",
    )
    p.add_argument("--files", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--against", type=Path, help="another checkout to compare with")
    p.add_argument(
        "--floor", action="store_true", help="also time ast.parse alone and the C parser alone"
    )
    args = p.parse_args()
    root, files, _ = tree_files(args.tree, args.files)
    paths = [str(root / f) for f in files]
    checkouts = {"this checkout": REPO_ROOT}
    if args.against:
        checkouts["against"] = args.against.resolve()
    best: dict[str, dict[str, float]] = {}
    for _ in range(args.repeats):
        for name, checkout in checkouts.items():
            result = run_once(checkout, paths, args.floor and name == "this checkout")
            if name not in best or result["cpu"] < best[name]["cpu"]:
                best[name] = result
    print(f"# analyze_source on {args.tree}: {len(paths)} files, best of {args.repeats}")
    for name, result in best.items():
        rate = result["lines"] / result["cpu"]
        print(
            f"- {name}: {result['cpu']:.3f} CPU s, {rate:,.0f} lines/CPU-s, "
            f"{result['findings']} findings"
        )
    mine = best["this checkout"]
    for part in ("ast.parse", "symtable"):
        if part in mine:
            rate = mine["lines"] / mine[part]
            share = 100 * mine[part] / mine["cpu"]
            print(f"- {part} alone: {mine[part]:.3f} CPU s ({share:.0f}%), {rate:,.0f} lines/CPU-s")
    if len(best) == 2:
        ratio = best["against"]["cpu"] / best["this checkout"]["cpu"]
        print(f"- speed-up over the other checkout: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
