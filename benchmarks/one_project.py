"""Paired timings of the faces that judge a file with its whole project (issue 28).

    python benchmarks/one_project.py                 # megatron-core, 3 pairs per arm
    python benchmarks/one_project.py --pairs 5 --out one_project.json

Arms, each run back to back with its baseline in alternating order (the per-pair ratio cancels
slow drifts of machine load), the one-minute load average recorded before and after each:

- ``flake8-cold``: flake8 over the package (not ``--isolated``: the plugin reads the project)
  with our plugin and an empty project index, against flake8 without the plugin
  (``flake8_shim.py``, ``TE_BENCH_FLAKE8_WITHOUT=TEM``);
- ``flake8-warm``: the same with the index the previous run left;
- ``check-file-warm``: ``check`` on the TE wrapper file named alone (what pre-commit passes
  for one staged file) with a warm index (its wall time is the figure);
- ``check-file-cold``: the same with an empty index, against ``check .`` with an empty index.

Python's bytecode is written (``PYTHONDONTWRITEBYTECODE`` unset), as for an installed package.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.corpora import CORPORA, cache_root, fetch_corpus  # noqa: E402
from benchmarks.measure import run_timed  # noqa: E402
from benchmarks.run import SHIM  # noqa: E402

WRAPPER = "megatron/core/extensions/transformer_engine.py"


def _load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def _env(index: str, without: str = "") -> dict[str, str]:
    env = dict(os.environ, TE_MICROBATCH_LINT_CACHE_DIR=index, PYTHONPATH=str(REPO_ROOT))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("TE_BENCH_FLAKE8_WITHOUT", None)
    if without:
        env["TE_BENCH_FLAKE8_WITHOUT"] = without
    return env


def _timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> dict[str, float]:
    before = _load()
    res = run_timed(cmd, cwd=cwd, env=env, timeout=3600)
    return {"wall_s": res.wall_s, "cpu_s": res.cpu_s, "rc": res.rc, "load": before}


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--corpus", default="megatron-core", choices=list(CORPORA))
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--arms", default="flake8-cold,flake8-warm,check-file-warm,check-file-cold")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    spec = CORPORA[args.corpus]
    root = fetch_corpus(spec, cache_root())
    lint = [sys.executable, "-m", "lint_rules.cli"]
    flake8 = [sys.executable, str(SHIM), "megatron/core"]
    results: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="te-one-project-") as tmp:
        warm = os.path.join(tmp, "warm")
        _timed([*lint, "check", "--exit-zero", WRAPPER], root, _env(warm))  # fills it
        for arm in args.arms.split(","):
            rows = []
            for i in range(args.pairs):
                cold = os.path.join(tmp, f"cold-{arm}-{i}")
                if arm == "flake8-cold":
                    sides = {"with": (flake8, _env(cold)), "without": (flake8, _env(cold, "TEM"))}
                elif arm == "flake8-warm":
                    sides = {"with": (flake8, _env(warm)), "without": (flake8, _env(warm, "TEM"))}
                elif arm == "check-file-warm":
                    sides = {"file": ([*lint, "check", "--exit-zero", WRAPPER], _env(warm))}
                else:
                    sides = {
                        "file": ([*lint, "check", "--exit-zero", WRAPPER], _env(cold + "-f")),
                        "dot": ([*lint, "check", "--exit-zero", "."], _env(cold + "-d")),
                    }
                order = list(sides) if i % 2 == 0 else list(reversed(sides))
                pair = {side: _timed(sides[side][0], root, sides[side][1]) for side in order}
                rows.append(pair)
                print(f"{arm} pair {i + 1}: " + " | ".join(
                    f"{s} {v['wall_s']:.3f}s wall {v['cpu_s']:.3f}s cpu (load {v['load']:.2f})"
                    for s, v in pair.items()), flush=True)  # fmt: skip
            results[arm] = rows
            names = list(rows[0])
            summary = {n: statistics.median(r[n]["wall_s"] for r in rows) for n in names}
            cpu = {n: statistics.median(r[n]["cpu_s"] for r in rows) for n in names}
            if len(names) == 2:
                a, b = names
                ratio = statistics.median(r[a]["wall_s"] / r[b]["wall_s"] for r in rows)
                by_cpu = statistics.median(r[a]["cpu_s"] / r[b]["cpu_s"] for r in rows)
                print(f"{arm}: median wall {summary}, cpu {cpu}; median ratio {a}/{b}: "
                      f"wall {ratio:.3f}, cpu {by_cpu:.3f}")  # fmt: skip
            else:
                print(f"{arm}: median wall {summary}, cpu {cpu}")
    print(f"load after: {_load():.2f}")
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
