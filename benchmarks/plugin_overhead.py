"""Paired A/B: what our flake8 plugin adds to flake8's own time on a real tree.

    python benchmarks/plugin_overhead.py                  # megatron-core, 8 pairs, --jobs 1
    python benchmarks/plugin_overhead.py --pairs 12 --jobs 2
    python benchmarks/plugin_overhead.py --noop     # + a third arm: plugin's run() a no-op

Each pair runs flake8 (default selection, ``--isolated``) with our plugin installed and with
its entry point removed (``benchmarks/flake8_shim.py``), in alternating order, back to back;
the per-pair ratios cancel slow drifts of machine load, and their median is reported with the
spread. One more run measures the plugin's own time from inside flake8 (attribution).
``flake8 --select ...`` cannot be used for this: flake8 runs every installed plugin whatever is
selected, so both sides of such a comparison would run the plugin.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.corpora import CORPORA, cache_root, fetch_corpus  # noqa: E402
from benchmarks.measure import run_timed  # noqa: E402
from benchmarks.run import SHIM, _flake8_env  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--corpus", default="megatron-core", choices=list(CORPORA))
    p.add_argument("--pairs", type=int, default=8)
    p.add_argument("--jobs", default="1", help="flake8 --jobs (1: CPU time == work)")
    p.add_argument(
        "--noop",
        action="store_true",
        help="third arm: plugin installed and called, its run() a no-op",
    )
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    spec = CORPORA[args.corpus]
    root = fetch_corpus(spec, cache_root())
    base = [sys.executable, str(SHIM), "--isolated", "--jobs", args.jobs, spec.package_dir]
    noop = dict(_flake8_env(), TE_BENCH_PLUGIN_NOOP="1")
    sides = {"with": _flake8_env(), "without": _flake8_env(without="TEM"), "noop-run": noop}
    names = list(sides) if args.noop else ["with", "without"]
    rows = []
    for i in range(args.pairs):
        order = names[i % len(names) :] + names[: i % len(names)]
        if i % 2:
            order.reverse()
        pair = {}
        for side in order:
            res = run_timed(base, cwd=root, env=sides[side], timeout=1800)
            pair[side] = (res.wall_s, res.cpu_s, res.rc)
        rows.append(pair)
        print(
            f"round {i + 1}: "
            + " | ".join(
                f"{side} {pair[side][0]:.3f}s wall {pair[side][1]:.3f}s cpu" for side in names
            ),
            file=sys.stderr,
            flush=True,
        )
    wall = [r["with"][0] / r["without"][0] - 1 for r in rows]
    cpu = [r["with"][1] / r["without"][1] - 1 for r in rows]
    noop_cpu = [r["noop-run"][1] / r["without"][1] - 1 for r in rows if "noop-run" in r]
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "t.jsonl"
        res = run_timed(
            base[:3] + ["--jobs", "1", spec.package_dir],
            cwd=root,
            env=_flake8_env(times=str(record)),
            timeout=1800,
        )
        stats = [json.loads(line) for line in record.read_text().splitlines()]
    plugin_s = sum(s["seconds"] for s in stats)
    result = {
        "corpus": spec.key,
        "flake8_jobs": args.jobs,
        "pairs": rows,
        "overhead_wall_median": statistics.median(wall),
        "overhead_wall_quartiles": statistics.quantiles(wall, n=4) if len(wall) > 1 else wall,
        "overhead_cpu_median": statistics.median(cpu),
        "overhead_cpu_quartiles": statistics.quantiles(cpu, n=4) if len(cpu) > 1 else cpu,
        "noop_run_overhead_cpu_median": statistics.median(noop_cpu) if noop_cpu else None,
        "attribution_plugin_s": plugin_s,
        "attribution_flake8_jobs1_wall_s": res.wall_s,
        "attribution_share": plugin_s / res.wall_s,
    }
    print(
        f"{spec.key}: flake8 (default selection, --jobs {args.jobs}) with vs without the "
        f"TEM plugin, {args.pairs} alternating pairs"
    )
    print(
        f"- added wall time: median {100 * result['overhead_wall_median']:+.2f}% "
        f"(quartiles {', '.join(f'{100 * q:+.2f}%' for q in result['overhead_wall_quartiles'])})"
    )
    print(
        f"- added CPU time:  median {100 * result['overhead_cpu_median']:+.2f}% "
        f"(quartiles {', '.join(f'{100 * q:+.2f}%' for q in result['overhead_cpu_quartiles'])})"
    )
    if noop_cpu:
        print(
            f"- installed but run() a no-op, added CPU time: median "
            f"{100 * statistics.median(noop_cpu):+.2f}%"
        )
    print(
        f"- plugin's own time inside flake8 --jobs 1: {plugin_s:.3f}s of {res.wall_s:.2f}s "
        f"= {100 * result['attribution_share']:.2f}%"
    )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
