"""Where a process pool starts to pay: ``check -j1`` against ``check -jN`` by bytes to parse.

    python benchmarks/pool_breakeven.py                  # 1..256 files, 5 interleaved repeats
    python benchmarks/pool_breakeven.py --files 8,32,128 --repeats 9

Trees of N generated files that all mention ``is_first_microbatch`` (so every file is parsed,
about 4 KB each) are checked with ``--no-cache --jobs 1`` and ``--jobs N`` (all cores: the
command and N-1 workers, forced), and with the default ``--jobs`` (which forks workers only
for a parse of ``lint_rules.cli.running.POOL_MIN_BYTES`` or more). The break-even is the
smallest size where the pool's median beats ``-j1``'s; the default should follow the faster of
the two everywhere.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.measure import run_timed  # noqa: E402
from benchmarks.synth import generate_file  # noqa: E402


def build_tree(root: Path, n_files: int) -> int:
    """``n_files`` generated files that all mention the flag; returns their total bytes."""
    size = 0
    for index in range(n_files):
        text, _ = generate_file(index, relevant=True)
        path = root / f"m{index:04d}.py"
        path.write_text(text, encoding="utf-8")
        size += len(text.encode("utf-8"))
    return size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", default="1,2,4,8,16,32,64,128,256")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    args = parser.parse_args(argv)
    from lint_rules.cli.running import POOL_MIN_BYTES

    exe = str(Path(sys.executable).with_name("te-microbatch-lint"))
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode read as an installed package's is
    variants = {
        "-j1": ["--jobs", "1"],
        f"-j{args.jobs}": ["--jobs", str(args.jobs)],
        "default": [],
    }
    print(
        f"# pool break-even, {args.jobs} cores, load {os.getloadavg()[0]:.2f}, "
        f"POOL_MIN_BYTES={POOL_MIN_BYTES:,}, medians of {args.repeats}"
    )
    print(f"| files | KB to parse | {' | '.join(f'{v} s' for v in variants)} | pool faster |")
    print("|---:|---:|" + "---:|" * len(variants) + "---|")
    for n_files in [int(n) for n in args.files.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            size = build_tree(root, n_files)
            times: dict[str, list[float]] = {name: [] for name in variants}
            for rep in range(args.repeats + 1):
                for name, extra in variants.items():
                    cmd = [exe, "check", "--isolated", "--no-cache", "--quiet", *extra, "."]
                    result = run_timed(cmd, cwd=root, env=env)
                    if rep:  # the first round warms the page and bytecode caches
                        times[name].append(result.wall_s)
            medians = {name: statistics.median(values) for name, values in times.items()}
            pool = medians[f"-j{args.jobs}"] < medians["-j1"]
            cells = " | ".join(f"{medians[name]:.3f}" for name in variants)
            print(f"| {n_files} | {size / 1000:,.0f} | {cells} | {'yes' if pool else 'no'} |")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
