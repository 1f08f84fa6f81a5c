"""What the lifecycle model costs in a cold ``check``: its own CPU time, against the whole run of
this checkout and of another checkout (the main it was built on), in one run.

    python benchmarks/lifecycle_cost.py --against /path/to/main --tree megatron-core
    python benchmarks/lifecycle_cost.py --against MAIN --tree megatron-core+flag --runs 7

Each run is a cold ``check --no-cache -j 1`` in a fresh process, this checkout and
``--against`` alternating. In this checkout's process, the lifecycle model's entry points are
timed (CPU time, each counted once however they nest):

- ``facts.collect``: the writes and calls a file shares, and a file's own facts for a verdict;
- ``Lifecycle.judge``: the verdicts, with their evidence;
- ``Forwarders.finish``: the callers of functions that forward the flag;
- ``Analysis.rejudge``: a first analysis judged again once the run's facts are known;
- ``Answers.answer``: where the run builds a class re-armed only under a condition;
- the run's sharing of the facts (``run_facts``, ``RunFacts.without``, ``lifecycle_digest``).

It prints, as medians over the runs: the lifecycle's CPU time, the whole process's CPU time
(user + sys) on both sides, the lifecycle's share of this checkout's run and of the other's,
and the one-minute load before and after. Standard library only.
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

from benchmarks.paired_check import run as plain_run  # noqa: E402
from benchmarks.profile_check import tree_files  # noqa: E402

TIMED = """
import functools, json, resource, sys, time
from lint_rules.analysis import builds, core, facts, forwarders, lifecycle, runfacts
from lint_rules.cli import crossfile
spent = [0.0]
depth = [0]
def timed(owner, name):
    inner = getattr(owner, name)
    @functools.wraps(inner)
    def wrapper(*args, **kwargs):
        if depth[0]:
            return inner(*args, **kwargs)
        depth[0] += 1
        start = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[0] += time.process_time() - start
            depth[0] -= 1
    setattr(owner, name, wrapper)
    return wrapper
collect = timed(facts, "collect")
for module in (core, lifecycle):
    module.collect = collect
timed(lifecycle.Lifecycle, "judge")
timed(forwarders.Forwarders, "finish")
timed(core.Analysis, "rejudge")
timed(builds.Answers, "answer")
timed(runfacts.RunFacts, "without")
crossfile.run_facts = timed(crossfile, "run_facts")
crossfile.lifecycle_digest = timed(crossfile, "lifecycle_digest")
from lint_rules.cli import main
sys.stdout = open(__import__("os").devnull, "w")
code = main(sys.argv[1:])
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps([spent[0], usage.ru_utime + usage.ru_stime]), file=sys.stderr)
"""


def timed_run(root: Path, paths: list[str]) -> tuple[float, float]:
    """(lifecycle CPU seconds, whole-process CPU seconds) of one cold check by this checkout."""
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    command = [sys.executable, "-c", TIMED, "check", "--no-cache", "-j", "1", "--exit-zero"]
    command += ["--isolated", "--output-format", "json", *paths]
    proc = subprocess.run(command, cwd=root, env=env, capture_output=True, check=True, timeout=600)
    lifecycle, total = json.loads(proc.stderr.decode().strip().splitlines()[-1])
    return lifecycle, total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--against", required=True, type=Path, help="the main it was built on")
    parser.add_argument("--tree", default="megatron-core")
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args(argv)
    root, _files, paths = tree_files(args.tree, 0)
    load = os.getloadavg()[0]
    timed_run(root, paths)  # untimed: writes each side's bytecode
    plain_run(args.against, root, paths)
    life: list[float] = []
    ours: list[float] = []
    theirs: list[float] = []
    for number in range(args.runs):
        order = [0, 1] if number % 2 else [1, 0]
        for side in order:
            if side == 0:
                spent, total = timed_run(root, paths)
                life.append(spent)
                ours.append(total)
            else:
                theirs.append(plain_run(args.against, root, paths)[0])
    lifecycle = statistics.median(life)
    print(
        json.dumps(
            {
                "tree": args.tree,
                "runs": args.runs,
                "lifecycle_cpu_median_s": round(lifecycle, 4),
                "this_cpu_median_s": round(statistics.median(ours), 3),
                "against_cpu_median_s": round(statistics.median(theirs), 3),
                "share_of_this_run": round(statistics.median(a / b for a, b in zip(life, ours)), 3),
                "share_of_against_run": round(lifecycle / statistics.median(theirs), 3),
                "load_before_after": [round(load, 2), round(os.getloadavg()[0], 2)],
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
