"""Render a results JSON of ``benchmarks/run.py`` as Markdown tables (the README's benchmarks).

python benchmarks/report.py benchmarks/results/<file>.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

REAL_TOOLS = (
    "check",
    "check --no-cache",
    "check -j1",
    "check -j2",
    "ruff --select B (cached)",
    "ruff --select B",
    "ruff --select F",
    "grep -rl",
    "flake8 --select TEM",
    "flake8 --select F",
    "flake8 default",
    "flake8 default -TEMplugin",
    "flake8 -s E,W,F,C90",
    "flake8 -s E,W,F,C90,TEM",
    "torchfix --select ALL",
)


def _s(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if value < 1 else f"{value:.2f}" if value < 100 else f"{value:.0f}"


def real_table(w: dict[str, Any], ref: str = "check") -> str:
    tools = w["tools"]
    ref_s = tools.get(ref, {}).get("median_s")
    wl = w["workload"]
    out = [
        f"**{wl['name']}** ({wl['files']} files, {wl['lines']:,} lines, "
        f"{wl['relevant_files']} mention `is_first_microbatch`, "
        f"{wl.get('parsed_files') or wl['relevant_files']} parsed)",
        "",
        f"| tool | median s | min s | CPU s | peak MB | findings | `{ref}` time ÷ tool time |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name in REAL_TOOLS:
        t = tools.get(name)
        if not t:
            continue
        ratio = f"{ref_s / t['median_s']:.3g}" if ref_s and t["median_s"] else "-"
        label = name + (
            " (run once, earlier run)"
            if "reused_from" in t
            else " (run once)"
            if name.startswith("torchfix")
            else ""
        )
        peak = t.get("memory_tree_peak_mb")
        findings = str(t["findings"])
        out.append(
            f"| `{label}` | {_s(t['median_s'])} | {_s(t['min_s'])} | "
            f"{_s(t['cpu_s_median'])} | {f'{peak:.0f}' if peak else '-'} | {findings} | "
            f"{ratio} |"
        )
    return "\n".join(out)


def scaling_table(workloads: list[dict[str, Any]]) -> str:
    out = [
        "| relevant | files | lines | check (cached) s | check --no-cache s | check -j1 s "
        "| check -j2 s | default ÷ -j1 | ruff B s | ruff B (cached) s | grep s "
        "| findings (= expected) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for w in workloads:
        wl, t = w["workload"], w["tools"]
        if wl["kind"] != "synth":
            continue
        expected = sum((wl.get("expected") or {}).values())
        got = t["check -j1"]["findings"]

        def med(name: str, t: dict[str, Any] = t) -> float | None:
            return t.get(name, {}).get("median_s")

        ratio = med("check --no-cache") / med("check -j1") if med("check -j1") else None
        out.append(
            f"| {wl['fraction'] * 100:g}% | {wl['files']:,} | {wl['lines']:,} | "
            f"{_s(med('check'))} | {_s(med('check --no-cache'))} | {_s(med('check -j1'))} | "
            f"{_s(med('check -j2'))} | {_s(ratio)} | {_s(med('ruff --select B'))} | "
            f"{_s(med('ruff --select B (cached)'))} | {_s(med('grep -rl'))} | "
            f"{got} ({'yes' if got == expected else 'NO'}) |"
        )
    return "\n".join(out)


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Print the README tables from a results file.")
    parser.add_argument("results", help="benchmarks/results/<run>.json")
    args = parser.parse_args()
    data = json.loads(Path(args.results).read_text(encoding="utf-8"))
    meta = data["meta"]
    print(
        f"Measured {meta['date_utc']} on {meta['cpu']} x{meta['cores']} cores, Python "
        f"{meta['python']}, {meta['ruff']}, flake8 {meta['flake8'].split(' (')[0]}; medians "
        f"of {meta['repeats']} interleaved runs; load average at start "
        f"{meta['load_avg_at_start'][0]:.2f}, at end {meta.get('load_avg_at_end', [0])[0]:.2f}."
    )
    print(f"Command: `{meta['command']}`\n")
    for w in data["workloads"]:
        if w["workload"]["kind"] in ("corpus", "startup"):
            print(real_table(w))
            print()
    print(scaling_table(data["workloads"]))
    print()
    print("```")
    print(json.dumps(data["targets"], indent=1))
    print("```")
    return 0


if __name__ == "__main__":
    sys.exit(main())
