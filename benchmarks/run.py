"""Benchmark te-microbatch-lint against ruff, flake8, a byte search and (optionally) TorchFix.

    python benchmarks/run.py                 # full run: real corpora + synthetic scaling
    python benchmarks/run.py --quick         # smoke: 1 repeat, small trees, fewer peers
    python benchmarks/run.py --with-torchfix # also TorchFix 0.7.0 on megatron-core (once)
    python benchmarks/run.py --plot-only benchmarks/results/<file>.json

Every tool runs in the same process tree, interleaved repeat by repeat (the order rotates),
so ratios within one run are meaningful even on a busy machine; the table shows medians.
Corpora (megatron-core 0.19.2, transformer-engine 2.20.2 wheels) and synthetic trees are
cached under ``$TE_LINT_CACHE`` or the user cache directory (``corpora.cache_root``). Results go to
``benchmarks/results/*.json`` (git-ignored); the scaling plot to ``docs/scaling.png``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks import synth  # noqa: E402
from benchmarks.corpora import (  # noqa: E402
    CORPORA,
    CorpusSpec,
    cache_root,
    count_lines,
    fetch_corpus,
    python_files,
)
from benchmarks.measure import RunResult, run_timed  # noqa: E402
from benchmarks.summary import print_table, reuse_torchfix, summarize  # noqa: E402
from benchmarks.targets import evaluate_targets, print_targets  # noqa: E402

BIN = Path(sys.executable).parent
SHIM = Path(__file__).resolve().parent / "flake8_shim.py"
TORCHFIX_VERSION = "0.7.0"

_LOCATION = re.compile(r"^(?P<path>[^\s:][^:]*):(?P<line>\d+):(?P<col>\d+):? (?P<code>[A-Z]+\d+)\b")

Finding = tuple[str, int, str]


# ------------------------------------------------------------------------------ workloads/tools


@dataclass
class Workload:
    name: str
    kind: str  # corpus | synth | startup
    cwd: Path
    paths: list[str]
    files: int
    lines: int
    bytes: int
    relevant_files: int
    parsed_files: int | None = None
    """Files the prefilter lets through to the parser (``analysis.mentions_flag``)."""
    fraction: float | None = None
    expected: dict[str, int] | None = None
    version: str | None = None


@dataclass
class Tool:
    name: str
    family: str
    argv: Callable[[Workload], list[str]]
    parse: Callable[[str], list[Finding]]
    env: dict[str, str] | None = None
    ok_rcs: tuple[int, ...] = (0, 1)
    repeat: bool = True


@dataclass
class ToolRuns:
    tool: str
    family: str
    runs: list[RunResult] = field(default_factory=list)
    findings: list[list[Finding]] = field(default_factory=list)
    memory: RunResult | None = None

    @property
    def ok(self) -> list[RunResult]:
        return [r for r in self.runs if r.rc >= 0]


def _norm_path(path: str) -> str:
    path = path.strip()
    while path.startswith("./"):
        path = path[2:]
    return path


def parse_locations(text: str) -> list[Finding]:
    """``path:line:col: CODE ...`` lines (flake8, ruff concise, TorchFix) as findings."""
    out = []
    for line in text.splitlines():
        match = _LOCATION.match(line)
        if match:
            out.append((_norm_path(match["path"]), int(match["line"]), match["code"]))
    return sorted(out)


def parse_check_json(text: str) -> list[Finding]:
    """Our ``check --format json``: a list of {path, code, line, ...} (tolerant of wrappers)."""
    text = text.strip()
    if not text:
        return []
    data: Any = json.loads(text)
    if isinstance(data, dict):
        data = data.get("findings") or data.get("results") or []
    out = []
    for item in data:
        if item.get("code") is None:  # a file that could not be read or parsed
            continue
        path = item.get("path") or item.get("file") or item.get("filename") or ""
        out.append((_norm_path(path), int(item.get("line") or 0), str(item.get("code"))))
    return sorted(out)


def parse_grep(text: str) -> list[Finding]:
    return sorted((_norm_path(line), 0, "grep") for line in text.splitlines() if line.strip())


def _exe(name: str) -> str:
    candidate = BIN / name
    return str(candidate) if candidate.exists() else (shutil.which(name) or name)


def _flake8_env(without: str = "", times: str = "") -> dict[str, str]:
    env = dict(os.environ)
    env.pop("TE_BENCH_FLAKE8_WITHOUT", None)
    env.pop("TE_BENCH_PLUGIN_TIMES", None)
    if without:
        env["TE_BENCH_FLAKE8_WITHOUT"] = without
    if times:
        env["TE_BENCH_PLUGIN_TIMES"] = times
    return env


def install_checkout(cache: Path) -> str:
    """This checkout installed as a regular (non-editable) package in its own venv, as users
    get it from a wheel: an editable install adds an import hook that costs ~15 ms at every
    start. Returns its ``te-microbatch-lint``."""
    venv = cache / "venvs" / "te-microbatch-lint-bench"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    _log(f"installing {REPO_ROOT} into {venv} ...")
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--force-reinstall",
            "--no-deps",
            str(REPO_ROOT),
            "pathspec>=0.12",
        ],
        check=True,
    )
    return str(venv / "bin" / "te-microbatch-lint")


def make_tools(
    ncores: int, torchfix: str | None, cache: Path, check: str | None = None
) -> dict[str, Tool]:
    """Every tool as it is run. Caches: ``check`` and ``ruff ... (cached)`` keep theirs in
    ``<cache>/bench-caches`` and are warmed by an untimed run (their default way of running);
    every other row runs without a cache (``--no-cache``)."""
    check = check or _exe("te-microbatch-lint")
    flake8 = _exe("flake8")
    ruff = _exe("ruff")
    py = sys.executable
    caches = cache / "bench-caches"

    def check_argv(*extra: str) -> Callable[[Workload], list[str]]:
        return lambda w: [
            check,
            "check",
            *w.paths,
            "--isolated",
            "--quiet",
            *extra,
            "--format",
            "json",
        ]

    def ruff_argv(select: str, *extra: str) -> Callable[[Workload], list[str]]:
        return lambda w: [
            ruff,
            "check",
            "--isolated",
            *extra,
            "--no-respect-gitignore",
            "--output-format",
            "concise",
            "--select",
            select,
            *w.paths,
        ]

    tools = [
        Tool("check", "ours", check_argv("--cache-dir", str(caches / "check")), parse_check_json),
        Tool("check --no-cache", "ours", check_argv("--no-cache"), parse_check_json),
        Tool("check -j1", "ours", check_argv("--no-cache", "--jobs", "1"), parse_check_json),
        Tool(
            f"check -j{ncores}",
            "ours",
            check_argv("--no-cache", "--jobs", str(ncores)),
            parse_check_json,
        ),
        Tool(
            "flake8 --select TEM",
            "flake8",
            lambda w: [flake8, "--isolated", "--select", "TEM", *w.paths],
            parse_locations,
        ),
        Tool(
            "flake8 --select F",
            "flake8",
            lambda w: [flake8, "--isolated", "--select", "F", *w.paths],
            parse_locations,
        ),
        # The plugin's added cost: flake8 with its default selection (E,F,W,C90 + extensions),
        # with our plugin installed vs the same flake8 with the plugin's entry point removed.
        Tool(
            "flake8 default",
            "flake8",
            lambda w: [py, str(SHIM), "--isolated", *w.paths],
            parse_locations,
            env=_flake8_env(),
        ),
        Tool(
            "flake8 default -TEMplugin",
            "flake8",
            lambda w: [py, str(SHIM), "--isolated", *w.paths],
            parse_locations,
            env=_flake8_env(without="TEM"),
        ),
        # What a naive measurement would compare (both run the plugin: --select only filters).
        Tool(
            "flake8 -s E,W,F,C90",
            "flake8",
            lambda w: [flake8, "--isolated", "--select", "E,W,F,C90", *w.paths],
            parse_locations,
        ),
        Tool(
            "flake8 -s E,W,F,C90,TEM",
            "flake8",
            lambda w: [flake8, "--isolated", "--select", "E,W,F,C90,TEM", *w.paths],
            parse_locations,
        ),
        Tool(
            "ruff --select B (cached)",
            "ruff",
            ruff_argv("B", "--cache-dir", str(caches / "ruff")),
            parse_locations,
        ),
        Tool("ruff --select B", "ruff", ruff_argv("B", "--no-cache"), parse_locations),
        Tool("ruff --select F", "ruff", ruff_argv("F", "--no-cache"), parse_locations),
        Tool(
            "grep -rl",
            "grep",
            lambda w: ["grep", "-rl", "--include=*.py", "is_first_microbatch", *w.paths],
            parse_grep,
        ),
    ]
    if torchfix:
        tools.append(
            Tool(
                "torchfix --select ALL",
                "torchfix",
                lambda w: [torchfix, "--select", "ALL", *w.paths],
                parse_locations,
                ok_rcs=(0, 1),
                repeat=False,
            )
        )
    return {t.name: t for t in tools}


def tools_for(workload: Workload, tools: dict[str, Tool], args: argparse.Namespace) -> list[Tool]:
    names = [n for n in tools if tools[n].family in ("ours", "ruff", "grep")]
    flake8_ok = not args.no_flake8 and (
        workload.kind == "corpus" or workload.files <= args.flake8_max_files
    )
    if flake8_ok:
        names += ["flake8 --select TEM", "flake8 --select F"]
        if workload.kind == "corpus" and workload.name.startswith("megatron"):
            names += ["flake8 default", "flake8 default -TEMplugin"]
            if args.select_pair:
                names += ["flake8 -s E,W,F,C90", "flake8 -s E,W,F,C90,TEM"]
    if "torchfix --select ALL" in tools and workload.name.startswith("megatron"):
        names.append("torchfix --select ALL")
    if workload.kind == "startup":
        names = [n for n in names if tools[n].family in ("ours", "ruff")]
    return [tools[n] for n in names]


# ------------------------------------------------------------------------------------ corpora


def corpus_workload(spec: CorpusSpec, cache: Path) -> Workload:
    root = fetch_corpus(spec, cache)
    package = root / spec.package_dir
    files = python_files(package)
    lines, size = count_lines(files)
    from lint_rules.analysis import mentions_flag

    texts = [f.read_bytes().decode("utf-8", "replace") for f in files]
    relevant = sum(1 for text in texts if "is_first_microbatch" in text)
    parsed = sum(1 for text in texts if mentions_flag(text))
    return Workload(
        name=spec.key,
        kind="corpus",
        cwd=root,
        paths=[spec.package_dir],
        files=len(files),
        lines=lines,
        bytes=size,
        relevant_files=relevant,
        version=spec.version,
        parsed_files=parsed,
    )


def synth_workloads(cache: Path, sizes: list[int], fractions: list[float]) -> list[Workload]:
    out = []
    chunks = max(1, max(sizes) // synth.FILES_PER_CHUNK)
    for fraction in fractions:
        root, manifest = synth.ensure_tree(cache, fraction, chunks)
        for size in sizes:
            paths, totals = synth.subset(root, manifest, size)
            out.append(
                Workload(
                    name=f"synth {fraction * 100:g}% {size // 1000}k files",
                    kind="synth",
                    cwd=root,
                    paths=paths,
                    files=totals["py_files_generated"],
                    lines=totals["lines"],
                    bytes=totals["bytes"],
                    relevant_files=totals["relevant_files"],
                    fraction=fraction,
                    expected=totals["expected"],
                )
            )
    return out


def startup_workload(cache: Path) -> Workload:
    root = cache / "startup"
    root.mkdir(parents=True, exist_ok=True)
    (root / "tiny.py").write_text("import os\n\nprint(os.getcwd())\n", encoding="utf-8")
    return Workload("startup (1 tiny file)", "startup", root, ["tiny.py"], 1, 3, 31, 0)


def ensure_torchfix(cache: Path) -> str:
    """TorchFix in its own venv (it pins libcst<1.6); returns the ``torchfix`` executable."""
    venv = cache / "venvs" / f"torchfix-{TORCHFIX_VERSION}"
    exe = venv / "bin" / "torchfix"
    if exe.exists():
        return str(exe)
    print(f"installing TorchFix {TORCHFIX_VERSION} into {venv} ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            f"torchfix=={TORCHFIX_VERSION}",
        ],
        check=True,
    )
    return str(exe)


# ------------------------------------------------------------------------------------ running


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_workload(
    workload: Workload, tools: list[Tool], repeats: int, timeout: float, memory: bool
) -> dict[str, ToolRuns]:
    results = {t.name: ToolRuns(t.name, t.family) for t in tools}
    # Warm the page cache, the interpreter's bytecode caches and the tools' result caches.
    for tool in tools:
        if tool.family in ("grep", "ours", "ruff"):
            run_timed(tool.argv(workload), cwd=workload.cwd, env=tool.env, timeout=timeout)
    for rep in range(repeats):
        shift = rep % len(tools)
        for tool in tools[shift:] + tools[:shift]:
            if not tool.repeat and results[tool.name].runs:
                continue
            res = run_timed(tool.argv(workload), cwd=workload.cwd, env=tool.env, timeout=timeout)
            _log(
                f"  [{workload.name}] rep {rep + 1}/{repeats} {tool.name:<28} "
                f"{res.wall_s:8.3f}s rc={res.rc}"
            )
            if res.rc not in tool.ok_rcs:
                _log(f"    ! {tool.name} exit {res.rc}: {res.stderr.strip()[-400:]}")
            results[tool.name].runs.append(res)
            try:
                results[tool.name].findings.append(tool.parse(res.stdout))
            except (ValueError, KeyError, TypeError, AttributeError) as error:
                _log(f"    ! cannot parse {tool.name} output: {error}")
                results[tool.name].findings.append([])
            if (
                tool.family == "ours"
                and res.rc in (0, 1)
                and (bool(results[tool.name].findings[-1]) != (res.rc == 1))
            ):
                # exit 1 without findings is a crash (a traceback also exits 1), not a result
                _log(
                    f"    ! {tool.name}: exit {res.rc} with "
                    f"{len(results[tool.name].findings[-1])} findings: "
                    f"{res.stderr.strip()[-400:]}"
                )
                res.rc = -2
            # Keep this process small: its RSS is what forked children start from.
            res.stdout, res.stderr = "", res.stderr[-2000:]
    if memory:
        for tool in tools:
            if tool.family == "ours":
                res = run_timed(
                    tool.argv(workload),
                    cwd=workload.cwd,
                    env=tool.env,
                    timeout=timeout,
                    sample_memory=True,
                )
                res.stdout, res.stderr = "", res.stderr[-2000:]
                results[tool.name].memory = res
                _log(
                    f"  [{workload.name}] memory {tool.name}: tree peak "
                    f"{res.tree_rss_mb:.1f} MB, largest process {res.maxrss_mb:.1f} MB"
                )
    return results


def plugin_attribution(workload: Workload, timeout: float) -> dict[str, Any]:
    """flake8 --jobs 1 on the workload with our plugin's own time measured from inside."""
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "times.jsonl"
        res = run_timed(
            [sys.executable, str(SHIM), "--isolated", "--jobs", "1", *workload.paths],
            cwd=workload.cwd,
            env=_flake8_env(times=str(record)),
            timeout=timeout,
        )
        stats = (
            [json.loads(line) for line in record.read_text().splitlines()]
            if record.exists()
            else []
        )
    seconds = sum(s["seconds"] for s in stats)
    calls = sum(s["calls"] for s in stats)
    return {
        "flake8_jobs1_wall_s": res.wall_s,
        "flake8_jobs1_cpu_s": res.cpu_s,
        "plugin_seconds": seconds,
        "plugin_calls": calls,
        "plugin_share_of_wall": seconds / res.wall_s if res.wall_s else None,
        "rc": res.rc,
    }


# ---------------------------------------------------------------------------------- summaries


def environment(ncores: int, torchfix: str | None, check: str) -> dict[str, Any]:
    def version(cmd: list[str]) -> str:
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            return (out.stdout or out.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "unavailable"

    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    env = {
        "date_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": cpu,
        "cores": ncores,
        "load_avg_at_start": os.getloadavg(),
        "te_microbatch_lint": version([check, "--version"]),
        "te_microbatch_lint_command": check,
        "flake8": version([_exe("flake8"), "--version"]),
        "ruff": version([_exe("ruff"), "--version"]),
        "grep": version(["grep", "--version"]),
    }
    if torchfix:
        env["torchfix"] = version([torchfix, "--version"])
    return env


# ------------------------------------------------------------------------------------ main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--repeats", type=int, default=5, help="timed runs per tool (median shown)")
    p.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 1 repeat, 1k-file trees, no flake8 default pair",
    )
    p.add_argument(
        "--sizes",
        default="1000,2000,5000,10000,20000",
        help="synthetic tree sizes in files (multiples of 1000)",
    )
    p.add_argument("--fractions", default="0.01,1", help="share of files mentioning the flag")
    p.add_argument("--corpora", default=",".join(CORPORA), help="real corpora to benchmark")
    p.add_argument("--no-synth", action="store_true")
    p.add_argument("--no-flake8", action="store_true")
    p.add_argument(
        "--flake8-max-files",
        type=int,
        default=1000,
        help="run flake8 on synthetic trees up to this many files",
    )
    p.add_argument(
        "--select-pair",
        action="store_true",
        help="also time flake8 --select E,W,F,C90 vs E,W,F,C90,TEM on megatron-core",
    )
    p.add_argument(
        "--with-torchfix",
        action="store_true",
        help=f"TorchFix {TORCHFIX_VERSION} on megatron-core, once, in its own venv",
    )
    p.add_argument(
        "--reuse-torchfix",
        type=Path,
        default=None,
        metavar="RESULTS_JSON",
        help="take TorchFix's megatron-core timing from an earlier run's JSON",
    )
    p.add_argument("--no-memory", action="store_true", help="skip the sampled memory runs")
    p.add_argument(
        "--editable",
        action="store_true",
        help="time this environment's te-microbatch-lint instead of a regular install",
    )
    p.add_argument(
        "--jobs-max",
        type=int,
        default=os.cpu_count() or 1,
        help="the N of `check -jN` (default: all cores)",
    )
    p.add_argument("--timeout", type=float, default=1200.0, help="per command, seconds")
    p.add_argument(
        "--cache", type=Path, default=None, help="default $TE_LINT_CACHE or the user cache dir"
    )
    p.add_argument("--out", type=Path, default=None, help="JSON results path")
    p.add_argument("--plot", type=Path, default=REPO_ROOT / "docs" / "scaling.png")
    p.add_argument("--no-plot", action="store_true")
    p.add_argument("--plot-only", type=Path, default=None, metavar="RESULTS_JSON")
    args = p.parse_args(argv)
    if args.quick:
        args.repeats = 1
        if args.sizes == p.get_default("sizes"):
            args.sizes = "1000"
        if args.plot == p.get_default("plot"):  # a smoke run never replaces the README's plot
            args.plot = REPO_ROOT / "benchmarks" / "results" / "scaling-quick.png"
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.plot_only:
        from benchmarks.plot import plot_scaling

        plot_scaling(json.loads(args.plot_only.read_text()), args.plot)
        print(f"wrote {args.plot}")
        return 0
    cache = (args.cache or cache_root()).resolve()
    ncores = max(1, args.jobs_max)
    torchfix = ensure_torchfix(cache) if args.with_torchfix else None
    check = _exe("te-microbatch-lint") if args.editable else install_checkout(cache)
    tools = make_tools(ncores, torchfix, cache, check)

    workloads = [startup_workload(cache)]
    for name in [n for n in args.corpora.split(",") if n]:
        workloads.append(corpus_workload(CORPORA[name], cache))
    if not args.no_synth:
        sizes = sorted({int(s) for s in args.sizes.split(",") if s})
        fractions = [float(f) for f in args.fractions.split(",") if f]
        workloads += synth_workloads(cache, sizes, fractions)

    meta = environment(ncores, torchfix, check)
    meta["command"] = " ".join([Path(sys.executable).name, *sys.argv])
    meta["repeats"] = args.repeats
    print(
        f"# te-microbatch-lint benchmark, {meta['date_utc']}, {meta['cpu']} x{ncores}, "
        f"Python {meta['python']}, {meta['ruff']}, flake8 {meta['flake8']}"
    )
    print(
        f"# medians of {args.repeats} interleaved runs; machine load at start "
        f"{meta['load_avg_at_start']}"
    )
    summaries = []
    attribution = None
    for workload in workloads:
        _log(f"== {workload.name} ({workload.files} files, {workload.lines} lines)")
        chosen = tools_for(workload, tools, args)
        biggest_worst = (
            workload.kind == "synth"
            and workload.fraction == 1.0
            and workload.files == max(w.files for w in workloads if w.kind == "synth")
        )
        memory = not args.no_memory and (biggest_worst or workload.kind == "corpus")
        runs = run_workload(workload, chosen, args.repeats, args.timeout, memory)
        summary = summarize(workload, runs, ncores)
        if args.reuse_torchfix and workload.name.startswith("megatron"):
            reuse_torchfix(summary, args.reuse_torchfix)
        summaries.append(summary)
        print_table(summary, ncores)
        sys.stdout.flush()
        if workload.name.startswith("megatron") and not args.no_flake8 and not args.quick:
            attribution = plugin_attribution(workload, args.timeout)
            summary["plugin_attribution"] = attribution

    meta["load_avg_at_end"] = os.getloadavg()
    targets = evaluate_targets(summaries, ncores, attribution)
    print_targets(targets)
    data = {"meta": meta, "targets": targets, "workloads": summaries}
    out = args.out or (
        REPO_ROOT
        / "benchmarks"
        / "results"
        / f"bench-{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%SZ}"
        f"{'-quick' if args.quick else ''}.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"\nwrote {out}")
    if not args.no_plot:
        try:
            from benchmarks.plot import plot_scaling
        except ImportError as error:  # matplotlib missing: results are still written
            print(f"no plot ({error}); pip install matplotlib")
        else:
            plot_scaling(data, args.plot)
            print(f"wrote {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
