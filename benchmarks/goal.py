"""`check` against `ruff check --select B`, cold and warm, in one command: the results page.

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

PARSE_FLOOR = (
    "import ast, sys\n"
    "for path in open(sys.argv[1], encoding='utf-8').read().split('\\n'):\n"
    "    if path:\n"
    "        ast.parse(open(path, 'rb').read())\n"
)


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


def measure(
    commands: dict[str, list[str]], cwd: Path, repeats: int
) -> dict[str, list[tuple[float, float]]]:
    """name -> [(wall s, CPU s)] per repeat, interleaved, after one untimed run of each."""
    env = _env()
    for cmd in commands.values():
        run_timed(cmd, cwd=cwd, env=env)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    names = list(commands)
    for rep in range(repeats):
        for name in names[rep % len(names) :] + names[: rep % len(names)]:
            result = run_timed(commands[name], cwd=cwd, env=env)
            if result.rc not in (0, 1):
                raise SystemExit(f"{name} failed ({result.rc}): {result.stderr[-500:]}")
            times[name].append((result.wall_s, result.cpu_s))
    return times


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def paired(times: dict[str, list[tuple[float, float]]], a: str, b: str, cpu: bool = False) -> float:
    """Median over the repeats of ``a``'s time over ``b``'s in the same repeat."""
    at = 1 if cpu else 0
    return _median([x[at] / y[at] for x, y in zip(times[a], times[b]) if y[at] > 0])


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
    results: dict[str, dict[str, list[tuple[float, float]]]] = {}
    with tempfile.TemporaryDirectory(prefix="te-lint-goal-") as tmp:
        scratch = Path(tmp)
        for name, (root, paths) in trees(names, cache).items():
            results[name] = measure(tools(root, paths, scratch), root, args.repeats)
            print(f"# {name} done", file=sys.stderr, flush=True)
        if "startup" in names:
            empty = scratch / "empty"
            empty.mkdir()
            results["startup"] = measure(startup_tools(empty), empty, max(args.repeats, 15))
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
    print_tables(results)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        meta = {"started": started.isoformat(), "load": load, "busy_cores": busy}
        args.json.write_text(json.dumps({"meta": meta, "times": results}, indent=1) + "\n")
    return 0


def print_tables(results: dict[str, dict[str, list[tuple[float, float]]]]) -> None:
    trees_run = [n for n in results if n != "startup"]
    if trees_run:
        print(
            "| tree | `check` cold | ruff B cold | **ratio** (wall) | ratio (CPU) | goal | "
            "`check` warm | ruff B warm | ratio warm |"
        )
        print("|---|---:|---:|---:|---:|---|---:|---:|---:|")
        for name in trees_run:
            t = results[name]
            med = {k: _median([w for w, _ in v]) for k, v in t.items()}
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
            "| tree | default `--jobs` | `-j1` | default ÷ `-j1` | `grep -rl` | "
            "`ast.parse` of what must be parsed | `check` ÷ `ast.parse` |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name in trees_run:
            t = results[name]
            med = {k: _median([w for w, _ in v]) for k, v in t.items()}
            print(
                f"| {name} | {med['check']:.3f} s | {med['check -j1']:.3f} s | "
                f"{paired(t, 'check', 'check -j1'):.2f} | {med['grep -rl']:.3f} s | "
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
                f"| `{name}` | {_median([w for w, _ in t[name]]) * 1000:.1f} ms | "
                f"{ratio:.2f}x | {goal} |"
            )


if __name__ == "__main__":
    sys.exit(main())
