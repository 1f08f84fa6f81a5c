"""Free each file's tree as it finishes, or keep every tree to the end of the run?

    python benchmarks/tree_lifetime.py                       # megatron-core+flag, 5 pairs
    python benchmarks/tree_lifetime.py --tree worst --repeats 7

Each repeat runs ``check --no-cache --jobs 1`` in two fresh processes, one as the command is
(a file's tree is freed as soon as its findings are returned), one where every tree
``ast.parse`` makes is kept in a list until the process ends with ``os._exit`` (no freeing at
all: the cost of freeing is gone, and so is the reuse of the memory it frees), and one that
also never runs the cyclic garbage collector (which otherwise walks the kept trees). The
order rotates; medians of CPU time and wall time, and peak RSS, are printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.profile_check import tree_files  # noqa: E402

CHILD = """
import ast, os, resource, sys, time
keep = sys.argv[1] != "freed"
kept = []
if sys.argv[1] == "keep-nogc":
    import gc
    gc.disable()
    gc.enable = lambda: None  # the command switches it back on after each file
if keep:
    parse = ast.parse
    def keeping(*args, **kwargs):
        tree = parse(*args, **kwargs)
        kept.append(tree)
        return tree
    ast.parse = keeping
from lint_rules.cli.command import main
cpu, wall = time.process_time(), time.perf_counter()
sys.stdout = open(os.devnull, "w")
main(["check", "--isolated", "--no-cache", "--jobs", "1", "--exit-zero", "--quiet", *sys.argv[2:]])
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
sys.stderr.write(f"{cpu} {wall} {rss} {len(kept)}\\n")
sys.stderr.flush()
os._exit(0) if keep else None
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", default="megatron-core+flag")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    root, _, paths = tree_files(args.tree, 0)
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    results: dict[str, list[tuple[float, ...]]] = {"freed": [], "keep": [], "keep-nogc": []}
    load = [os.getloadavg()[0]]
    for rep in range(args.repeats):
        order = list(results)[rep % 3 :] + list(results)[: rep % 3]
        for mode in order:
            done = subprocess.run(
                [sys.executable, "-c", CHILD, mode, *paths],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            results[mode].append(tuple(float(x) for x in done.stderr.split()[-4:]))
    load.append(os.getloadavg()[0])
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"# {args.tree}, {stamp}, load {load[0]:.2f}-{load[1]:.2f}, medians of {args.repeats}")
    print("| trees | CPU s | wall s | peak RSS MB | trees kept |")
    print("|---|---:|---:|---:|---:|")
    for mode, rows in results.items():
        cpu, wall, rss, kept = (statistics.median(column) for column in zip(*rows))
        print(f"| {mode} | {cpu:.3f} | {wall:.3f} | {rss:.0f} | {kept:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
