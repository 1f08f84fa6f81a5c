"""Every goal of the speed issue as a ratio, in one command: the results page.

    python benchmarks/goal.py                    # 7 pairs per tree (a few minutes)
    python benchmarks/goal.py --repeats 3 --trees megatron-core,startup
    python benchmarks/goal.py --json benchmarks/results/goal.json

Every tree is linted by each tool as a separate process from this one, interleaved repeat by
repeat (the order rotates), after one untimed run of each (page cache, bytecode). Cold: both
linters without their caches (``check --no-cache``, ``ruff check --no-cache``), a first run in
CI. Warm: both with their caches, warmed by that untimed run (each in its own folder), a repeat
run on an unchanged tree. Each ratio is the median over the repeats of the ratio within one
repeat (paired: the load of that moment divides out), wall time as a user sees it; CPU time
(user + system, the process and its workers) is shown beside it. The load average and the
idle share of the CPU over the whole run (``/proc/stat``) are printed with the tables.

Trees: megatron-core 0.19.2 and transformer-engine 2.20.2 (the code the tool is for),
nemo_toolkit 1.23.0, transformers 5.23.0 and the installed ``torch`` package (code that never
uses TE), megatron-core with ``# is_first_microbatch`` appended to every file (every file
parsed: the analysis at its busiest), and start-up (``--version``, an empty folder) against
``python -c pass``. The physical limits beside them: ``grep -rl is_first_microbatch`` (read
every byte once) and ``ast.parse`` of exactly the files the prefilter lets through, in one
Python process (its start-up included).

The goals are set against the floor F of each tree: interpreter start-up (``python -c pass``),
plus reading every file once (``grep -rl``), plus ``ast.parse`` of exactly the files that must
be parsed (those the prefilter lets through), spread over the cores that were free while
``check`` ran (in each repeat: the share of the machine ``/proc/stat`` saw idle, plus the
share ``check`` itself used; the parse times are measured per file inside the floor's process
and dealt out to that many cores, largest first). F is computed per repeat from the runs of
that repeat, and each ratio to it is a median over the repeats, like the others. The goal
table says, per tree: cold ``check`` ÷ F (at most 1.5x on the trees that use TE and on the
every-file-parsed tree, 2x on the trees that never do), warm ``check`` ÷ ruff warm (at most
1.0x) and ÷ cold ``check`` (never slower: at most 1.0x), default ``--jobs`` ÷ ``-j1`` (at most
1.0x), ``-j1`` ÷ default on the every-file-parsed tree (at least 1.6x, when two cores were free:
the cores free during the default runs are printed beside it), and ``check`` on an empty folder
÷ ``python -c pass`` (at most 2x).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.corpora import CORPORA, NO_TE, cache_root, fetch_corpus  # noqa: E402
from benchmarks.measure import run_timed  # noqa: E402
from benchmarks.profile_check import flagged_copy  # noqa: E402

BIN = Path(sys.executable).parent
FLAG = "is_first_microbatch"
GOALS = {
    "megatron-core": 1.2,
    "transformer-engine": 1.5,
    "nemo_toolkit": 0.5,
    "transformers": 0.5,
    "torch": 0.5,
    "megatron-core+flag": 6.0,
}
"""The most ``check`` may take, cold, as a multiple of ``ruff check --select B``'s wall time."""
STARTUP_GOAL = 2.0
"""``--version`` and an empty folder, as a multiple of ``python -c pass``."""
TE_TREES = ("megatron-core", "transformer-engine", "megatron-core+flag")
FLOOR_GOALS = {"te": 1.5, "no-te": 2.0}
"""Cold ``check`` as a multiple of the floor F: trees that use TE (and the every-file-parsed
one), trees that never do."""
WARM_GOAL = 1.0
"""Warm ``check`` as a multiple of ruff warm, and of cold ``check``."""
JOBS_GOAL = 1.0
"""Default ``--jobs`` as a multiple of ``-j1``: never slower."""
POOL_TREE, POOL_GOAL = "megatron-core+flag", 1.6
"""``-j1`` as a multiple of the default ``--jobs`` on the every-file-parsed tree, with two cores
free."""

PARSE_FLOOR = (
    "import ast, sys, time\n"
    "spent = []\n"
    "for path in open(sys.argv[1], encoding='utf-8').read().split('\\n'):\n"
    "    if path:\n"
    "        data = open(path, 'rb').read()\n"
    "        start, cpu = time.perf_counter(), time.process_time()\n"
    "        ast.parse(data)\n"
    "        spent.append((time.perf_counter() - start, time.process_time() - cpu))\n"
    "print(' '.join(f'{s:.6f}' for s, _ in spent))\n"
    "print(' '.join(f'{c:.6f}' for _, c in spent))\n"
)
"""``ast.parse`` of the files listed, each timed alone (reading is ``grep -rl``'s part): the
wall times on the first line, the CPU times on the second."""


def _exe(name: str) -> str:
    found = BIN / name
    return str(found) if found.exists() else (shutil.which(name) or name)


def _env() -> dict[str, str]:
    """The children's environment: bytecode written and read as an installed package's is."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def cpu_ticks() -> tuple[int, int]:
    """(idle, total) clock ticks of the machine so far (``/proc/stat``); (0, 0) without it."""
    try:
        with open("/proc/stat", encoding="ascii") as handle:
            fields = [int(x) for x in handle.readline().split()[1:9]]
    except (OSError, ValueError):
        return 0, 0
    return fields[3] + fields[4], sum(fields)


def trees(names: list[str], cache: Path) -> dict[str, tuple[Path, list[str]]]:
    """name -> (folder to run in, path arguments)."""
    found: dict[str, tuple[Path, list[str]]] = {}
    for name in names:
        if name == "startup":
            continue
        if name == "torch":
            import importlib.util

            spec = importlib.util.find_spec("torch")
            if spec is None or not spec.origin:
                print("# torch is not installed: skipped", file=sys.stderr)
                continue
            package = Path(spec.origin).parent
            found[name] = (package.parent, [package.name])
            continue
        flagged = name.endswith("+flag")
        base = name[: -len("+flag")] if flagged else name
        spec = {**CORPORA, **NO_TE}[base]
        root = fetch_corpus(spec, cache)
        if flagged:
            root = flagged_copy(root, cache / "flagged" / spec.key)
        found[name] = (root, [spec.package_dir])
    return found


def must_parse(root: Path, paths: list[str]) -> list[str]:
    """The files of the tree that the prefilter lets through (what ``check`` must parse)."""
    from lint_rules.analysis import mentions_flag

    chosen = []
    for path in paths:
        for file in sorted((root / path).rglob("*.py")):
            text = file.read_bytes().decode("utf-8", "replace")
            if mentions_flag(text):
                chosen.append(str(file))
    return chosen


def tools(root: Path, paths: list[str], scratch: Path) -> dict[str, list[str]]:
    check, ruff = _exe("te-microbatch-lint"), _exe("ruff")
    ours = [check, "check", "--isolated", "--quiet", "--exit-zero", "--output-format", "json"]
    theirs = [ruff, "check", "--isolated", "--no-respect-gitignore", "--exit-zero", "--quiet"]
    theirs += ["--select", "B"]
    floor = scratch / f"parse-{root.name}.txt"
    floor.write_text("\n".join(must_parse(root, paths)) + "\n", encoding="utf-8")
    grep = shutil.which("grep") or "grep"
    return {
        "check": [*ours, "--no-cache", *paths],
        "check -j1": [*ours, "--no-cache", "--jobs", "1", *paths],
        "ruff": [*theirs, "--no-cache", *paths],
        "check (warm)": [*ours, "--cache-dir", str(scratch / f"check-{root.name}"), *paths],
        "ruff (warm)": [*theirs, "--cache-dir", str(scratch / f"ruff-{root.name}"), *paths],
        "grep -rl": [grep, "-rl", "--include=*.py", FLAG, *paths],
        "ast.parse": [sys.executable, "-c", PARSE_FLOOR, str(floor)],
        "python -c pass": [sys.executable, "-c", "pass"],
    }


def startup_tools(empty: Path) -> dict[str, list[str]]:
    check, ruff = _exe("te-microbatch-lint"), _exe("ruff")
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "check --version": [check, "--version"],
        "check (empty folder)": [check, "check", "."],
        "check --no-cache (empty folder)": [check, "check", "--no-cache", "."],
        "ruff --version": [ruff, "--version"],
        "ruff (empty folder)": [ruff, "check", "--no-cache", "."],
    }


Run = tuple[float, float, float, str]
"""One timed run: wall s, CPU s (user + system, the process and its workers), the cores free
for it (the machine's idle share over the run, plus its own CPU time over its wall time), and
what it printed when that is a measurement (the floor's parse times), else ""."""
Times = dict[str, list[Run]]


def measure(commands: dict[str, list[str]], cwd: Path, repeats: int) -> Times:
    """name -> a ``Run`` per repeat, interleaved, after one untimed run of each."""
    env = _env()
    cores = os.cpu_count() or 1
    for cmd in commands.values():
        run_timed(cmd, cwd=cwd, env=env)
    times: Times = {name: [] for name in commands}
    names = list(commands)
    for rep in range(repeats):
        for name in names[rep % len(names) :] + names[: rep % len(names)]:
            idle0, total0 = cpu_ticks()
            result = run_timed(commands[name], cwd=cwd, env=env)
            idle1, total1 = cpu_ticks()
            if result.rc not in (0, 1):
                raise SystemExit(f"{name} failed ({result.rc}): {result.stderr[-500:]}")
            free = float("nan")
            if total1 - total0 >= 4 and result.wall_s > 0:  # ticks: 10 ms per core
                idle = cores * (idle1 - idle0) / (total1 - total0)
                free = min(cores, idle + result.cpu_s / result.wall_s)
            out = result.stdout if name == "ast.parse" else ""
            times[name].append((result.wall_s, result.cpu_s, free, out))
    return times


def _median(values: list[float]) -> float:
    values = [v for v in values if v == v]  # not NaN
    return statistics.median(values) if values else float("nan")


def paired(times: Times, a: str, b: str, cpu: bool = False) -> float:
    """Median over the repeats of ``a``'s time over ``b``'s in the same repeat."""
    at = 1 if cpu else 0
    return _median([x[at] / y[at] for x, y in zip(times[a], times[b]) if y[at] > 0])


def makespan(spent: list[float], cores: int) -> float:
    """The parse times dealt out to ``cores`` (largest first, each to the least loaded)."""
    loads = [0.0] * max(1, cores)
    for cost in sorted(spent, reverse=True):
        loads[loads.index(min(loads))] += cost
    return max(loads)


def floors(times: Times) -> list[tuple[float, float, float, int, float]]:
    """Per repeat: (``python -c pass``, ``grep -rl``, ``ast.parse`` on one core, the cores
    free while ``check`` ran, F = the first two + the parse spread over those cores)."""
    cores = os.cpu_count() or 1
    found = []
    for start, read, parse, check in zip(
        times["python -c pass"], times["grep -rl"], times["ast.parse"], times["check"]
    ):
        spent = [float(s) for s in parse[3].partition("\n")[0].split()]
        free = check[2]
        use = max(1, min(cores, round(free))) if free == free else 1
        found.append(
            (start[0], read[0], sum(spent), use, start[0] + read[0] + makespan(spent, use))
        )
    return found


def over_floor(times: Times, name: str = "check") -> float:
    return _median([t[0] / f[4] for t, f in zip(times[name], floors(times)) if f[4] > 0])


def over_floor_cpu(times: Times, name: str = "check") -> float:
    """CPU time over the floor's work (start-up, reading and every parse, on one core): what
    a loaded machine disturbs least; ``check``'s workers count in its CPU time."""
    ratios = []
    for t, start, read, parse in zip(
        times[name], times["python -c pass"], times["grep -rl"], times["ast.parse"]
    ):
        lines = parse[3].split("\n")
        cpu = lines[1] if len(lines) > 1 and lines[1].strip() else lines[0]
        work = start[1] + read[1] + sum(float(s) for s in cpu.split())
        if work > 0:
            ratios.append(t[1] / work)
    return _median(ratios)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--trees",
        default="megatron-core,transformer-engine,nemo_toolkit,transformers,torch,"
        "megatron-core+flag,startup",
    )
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    args = parser.parse_args(argv)
    names = [n for n in args.trees.split(",") if n]
    cache = cache_root()
    idle0, total0 = cpu_ticks()
    load = [os.getloadavg()]
    started = dt.datetime.now(dt.timezone.utc)
    results: dict[str, Times] = {}
    loads: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="te-lint-goal-") as tmp:
        scratch = Path(tmp)
        for name, (root, paths) in trees(names, cache).items():
            before = os.getloadavg()[0]
            results[name] = measure(tools(root, paths, scratch), root, args.repeats)
            loads[name] = (before, os.getloadavg()[0])
            print(f"# {name} done", file=sys.stderr, flush=True)
        if "startup" in names:
            empty = scratch / "empty"
            empty.mkdir()
            before = os.getloadavg()[0]
            results["startup"] = measure(startup_tools(empty), empty, max(args.repeats, 15))
            loads["startup"] = (before, os.getloadavg()[0])
    idle1, total1 = cpu_ticks()
    load.append(os.getloadavg())
    cores = os.cpu_count() or 1
    busy = cores * (1 - (idle1 - idle0) / (total1 - total0)) if total1 > total0 else float("nan")
    ruff_version = subprocess.run([_exe("ruff"), "--version"], capture_output=True, text=True)
    print(
        f"{started:%Y-%m-%d %H:%M} UTC, {platform.processor() or platform.machine()}, "
        f"{cores} cores, Python {platform.python_version()}, {ruff_version.stdout.strip()}; "
        f"load average {load[0][0]:.2f} at the start, {load[1][0]:.2f} at the end; "
        f"cores busy on average over the run {busy:.2f} of {cores}; "
        f"medians of {args.repeats} interleaved repeats\n"
    )
    print_goals(results, loads)
    print_tables(results)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        meta = {"started": started.isoformat(), "load": load, "busy_cores": busy, "loads": loads}
        args.json.write_text(json.dumps({"meta": meta, "times": results}, indent=1) + "\n")
    return 0


def _verdict(value: float, limit: float, at_least: bool = False) -> str:
    if value != value:
        return "not measured"
    met = value >= limit if at_least else value <= limit
    return "**met**" if met else "not met"


def print_goals(results: dict[str, Times], loads: dict[str, tuple[float, float]]) -> None:
    """The issue's goals, one row each: the ratio, its limit, met or not, the load."""
    print("| goal | tree | ratio (wall) | limit | verdict | ratio (CPU) | load (start-end) |")
    print("|---|---|---:|---:|---|---:|---|")

    def row(
        goal: str, tree: str, pair: tuple[float, float], limit: float, least: bool = False
    ) -> None:
        value, cpu = pair
        sign = ">=" if least else "<="
        start, end = loads.get(tree, (float("nan"), float("nan")))
        print(
            f"| {goal} | {tree} | {value:.2f}x | {sign} {limit}x | "
            f"{_verdict(value, limit, least)} | {cpu:.2f}x | {start:.1f}-{end:.1f} |"
        )

    def both(times: Times, a: str, b: str) -> tuple[float, float]:
        return paired(times, a, b), paired(times, a, b, cpu=True)

    trees_run = [n for n in results if n != "startup"]
    for name in trees_run:
        limit = FLOOR_GOALS["te" if name in TE_TREES else "no-te"]
        t = results[name]
        row("cold `check` ÷ floor F", name, (over_floor(t), over_floor_cpu(t)), limit)
    for name in trees_run:
        row(
            "warm `check` ÷ ruff warm",
            name,
            both(results[name], "check (warm)", "ruff (warm)"),
            WARM_GOAL,
        )
    for name in trees_run:
        row(
            "warm `check` ÷ cold `check`",
            name,
            both(results[name], "check (warm)", "check"),
            WARM_GOAL,
        )
    for name in trees_run:
        row("default `--jobs` ÷ `-j1`", name, both(results[name], "check", "check -j1"), JOBS_GOAL)
    if POOL_TREE in results:
        t = results[POOL_TREE]
        free = _median([run[2] for run in t["check"]])
        value = both(t, "check -j1", "check")
        row(f"`-j1` ÷ default `--jobs` (cores free: {free:.2f})", POOL_TREE, value, POOL_GOAL, True)
        if not free >= 1.8:
            print(f"|  | {POOL_TREE} | two free cores wanted: not measurable here |  |  |  |  |")
    if "startup" in results:
        t = results["startup"]
        row(
            "empty folder ÷ `python -c pass`",
            "startup",
            both(t, "check (empty folder)", "python -c pass"),
            STARTUP_GOAL,
        )
    print()
    if trees_run:
        print(
            "| tree | `python -c pass` | `grep -rl` | `ast.parse`, one core | cores free | "
            "F | `check` cold | ÷ F |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for name in trees_run:
            t = results[name]
            parts = floors(t)
            med = [_median([p[i] for p in parts]) for i in range(5)]
            check = _median([r[0] for r in t["check"]])
            print(
                f"| {name} | {med[0]:.3f} s | {med[1]:.3f} s | {med[2]:.3f} s | {med[3]:.0f} | "
                f"{med[4]:.3f} s | {check:.3f} s | {over_floor(t):.2f}x |"
            )
        print()


def print_tables(results: dict[str, Times]) -> None:
    trees_run = [n for n in results if n != "startup"]
    if trees_run:
        print(
            "| tree | `check` cold | ruff B cold | **ratio** (wall) | ratio (CPU) | goal | "
            "`check` warm | ruff B warm | ratio warm |"
        )
        print("|---|---:|---:|---:|---:|---|---:|---:|---:|")
        for name in trees_run:
            t = results[name]
            med = {k: _median([r[0] for r in v]) for k, v in t.items()}
            ratio = paired(t, "check", "ruff")
            goal = GOALS.get(name)
            verdict = f"<= {goal}x: {'met' if ratio <= goal else 'not met'}" if goal else ""
            print(
                f"| {name} | {med['check']:.3f} s | {med['ruff']:.3f} s | **{ratio:.2f}x** | "
                f"{paired(t, 'check', 'ruff', cpu=True):.2f}x | {verdict} | "
                f"{med['check (warm)']:.3f} s | {med['ruff (warm)']:.3f} s | "
                f"{paired(t, 'check (warm)', 'ruff (warm)'):.2f}x |"
            )
        print()
        print(
            "| tree | default `--jobs` | `-j1` | default ÷ `-j1` | cores free (default) | "
            "`grep -rl` | `ast.parse` of what must be parsed | `check` ÷ `ast.parse` |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for name in trees_run:
            t = results[name]
            med = {k: _median([r[0] for r in v]) for k, v in t.items()}
            free = _median([r[2] for r in t["check"]])
            print(
                f"| {name} | {med['check']:.3f} s | {med['check -j1']:.3f} s | "
                f"{paired(t, 'check', 'check -j1'):.2f} | {free:.2f} | {med['grep -rl']:.3f} s | "
                f"{med['ast.parse']:.3f} s | {paired(t, 'check', 'ast.parse'):.2f}x |"
            )
        print()
    if "startup" in results:
        t = results["startup"]
        print("| start-up | median | ÷ `python -c pass` | goal |")
        print("|---|---:|---:|---|")
        for name in t:
            ratio = paired(t, name, "python -c pass")
            goal = ""
            if name in ("check --version", "check (empty folder)"):
                goal = f"<= {STARTUP_GOAL}x: {'met' if ratio <= STARTUP_GOAL else 'not met'}"
            print(
                f"| `{name}` | {_median([r[0] for r in t[name]]) * 1000:.1f} ms | "
                f"{ratio:.2f}x | {goal} |"
            )


if __name__ == "__main__":
    sys.exit(main())
