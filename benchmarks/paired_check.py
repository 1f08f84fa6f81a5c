"""Paired cold ``check`` runs of two checkouts on the same tree: what one change costs.

    python benchmarks/paired_check.py --against /path/to/old/checkout --tree megatron-core
    python benchmarks/paired_check.py --against OLD --tree megatron-core+flag --pairs 9

Each pair runs ``python -m lint_rules.cli check --no-cache -j 1 --exit-zero`` once with this
checkout and once with ``--against`` (alternating which goes first), in separate processes, and
takes the CPU time (user + sys) of each process (``getrusage`` of the children). It prints the
median of each side (after one untimed run per side, so that both run from bytecode, as an
installed package does), the median of the per-pair ratios, the one-minute load average before and
after, and the number of findings each side printed. Trees are those of ``core_throughput``
(``megatron-core``, ``megatron-core+flag``: every file parsed, ``transformer-engine``...).
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from benchmarks.profile_check import tree_files  # noqa: E402


def run(checkout: Path, root: Path, paths: list[str]) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, findings) of one cold ``check`` of ``tree`` by ``checkout``."""
    import resource
    import time

    env = dict(os.environ, PYTHONPATH=str(checkout))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # compiled once, as an installed package is
    command = [sys.executable, "-m", "lint_rules.cli", "check", "--no-cache", "-j", "1"]
    command += ["--exit-zero", "--isolated", "--output-format", "json", *paths]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=root, env=env, capture_output=True, check=False, timeout=600)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rows = json.loads(proc.stdout or b"[]")
    return cpu, wall, len(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--against", required=True, type=Path, help="the other checkout")
    parser.add_argument("--tree", default="megatron-core")
    parser.add_argument("--pairs", type=int, default=7)
    args = parser.parse_args(argv)
    root, _files, paths = tree_files(args.tree, 0)
    load = os.getloadavg()[0]
    ours: list[float] = []
    theirs: list[float] = []
    found = set()
    for checkout in (REPO_ROOT, args.against):  # untimed: writes each side's bytecode
        run(checkout, root, paths)
    for pair in range(args.pairs):
        order = [(REPO_ROOT, ours), (args.against, theirs)]
        if pair % 2:
            order.reverse()
        for checkout, into in order:
            cpu, _wall, findings = run(checkout, root, paths)
            into.append(cpu)
            found.add((str(checkout), findings))
    ratios = [a / b for a, b in zip(ours, theirs)]
    print(
        json.dumps(
            {
                "tree": args.tree,
                "pairs": args.pairs,
                "this_cpu_median_s": round(statistics.median(ours), 3),
                "against_cpu_median_s": round(statistics.median(theirs), 3),
                "ratio_median": round(statistics.median(ratios), 3),
                "ratio_min_max": [round(min(ratios), 3), round(max(ratios), 3)],
                "load_before_after": [round(load, 2), round(os.getloadavg()[0], 2)],
                "findings": sorted(found),
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
