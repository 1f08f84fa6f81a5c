"""One workload's runs as a summary (medians, findings, stability) and its Markdown table."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any


def reuse_torchfix(summary: dict[str, Any], path: Path) -> None:
    """Copy the TorchFix row for the same workload from an earlier results file (marked)."""
    earlier = json.loads(path.read_text(encoding="utf-8"))
    for old in earlier["workloads"]:
        if old["workload"]["name"] == summary["workload"]["name"]:
            row = old["tools"].get("torchfix --select ALL")
            if row:
                summary["tools"]["torchfix --select ALL"] = {
                    **row,
                    "reused_from": str(path),
                    "measured_at": earlier["meta"]["date_utc"],
                }
            return


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def summarize(workload: Any, runs: dict[str, Any], ncores: int) -> dict[str, Any]:
    tools: dict[str, Any] = {}
    for name, tr in runs.items():
        good = [r for r in tr.runs if r.rc >= 0]
        walls = [r.wall_s for r in good]
        valid = [f for r, f in zip(tr.runs, tr.findings) if r.rc >= 0]
        distinct = {tuple(f) for f in valid}
        codes: dict[str, int] = {}
        for _, _, code in tr.findings[0] if tr.findings else []:
            codes[code] = codes.get(code, 0) + 1
        tools[name] = {
            "family": tr.family,
            "wall_s": walls,
            "median_s": _median(walls),
            "min_s": min(walls) if walls else None,
            "cpu_s_median": _median([r.cpu_s for r in good]),
            "maxrss_mb_max": max((r.maxrss_mb for r in good), default=None),
            "rcs": [r.rc for r in tr.runs],
            "invalid_runs": sum(1 for r in tr.runs if r.rc < 0),
            "findings": len(tr.findings[0]) if tr.findings else None,
            "findings_by_code": codes,
            "stable_across_runs": len(distinct) <= 1,
            "memory_tree_peak_mb": tr.memory.tree_rss_mb if tr.memory else None,
            "memory_largest_process_mb": tr.memory.maxrss_mb if tr.memory else None,
            "stderr_tail": (
                tr.runs[-1].stderr.strip()[-300:]
                if tr.runs and tr.runs[-1].rc not in (0, 1)
                else ""
            ),
        }
    ours = [n for n in runs if runs[n].family == "ours"]
    same = None
    if len(ours) >= 2 and all(runs[n].findings for n in ours):
        same = (
            len(
                {
                    tuple(f)
                    for n in ours
                    for r, f in zip(runs[n].runs, runs[n].findings)
                    if r.rc >= 0
                }
            )
            == 1
        )
    faces = None
    tem = runs.get("flake8 --select TEM")
    if tem and tem.findings and ours and runs[ours[-1]].findings:
        faces = tem.findings[0] == runs[ours[-1]].findings[0]
    return {
        "workload": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(workload).items()},
        "tools": tools,
        "check_identical_across_jobs_and_runs": same,
        "flake8_plugin_matches_check": faces,
    }


def _fmt_s(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def print_table(summary: dict[str, Any], ncores: int) -> None:
    w = summary["workload"]
    tools = summary["tools"]
    ref_name = "check"
    ref = tools.get(ref_name, {}).get("median_s")
    print()
    print(
        f"## {w['name']}: {w['files']} files, {w['lines']:,} lines, "
        f"{w['relevant_files']} mention is_first_microbatch, "
        f"{w.get('parsed_files') or w['relevant_files']} parsed"
    )
    header = (
        f"| {'tool':<28} | median s | min s | cpu s | peak MB | findings | stable "
        f"| {ref_name} / tool |"
    )
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")
    for name, t in tools.items():
        med = t["median_s"]
        ratio = f"{ref / med:.2f}x" if ref and med else "-"
        peak = t["memory_tree_peak_mb"]
        rss = f"{peak:.0f}" if peak is not None else "-"
        findings = "-" if t["findings"] is None else str(t["findings"])
        if t["rcs"] and all(rc not in (0, 1) for rc in t["rcs"]):
            findings = f"error rc={t['rcs'][0]}"
        print(
            f"| {name:<28} | {_fmt_s(med):>8} | {_fmt_s(t['min_s']):>5} | "
            f"{_fmt_s(t['cpu_s_median']):>5} | {rss:>7} | {findings:>8} | "
            f"{'yes' if t['stable_across_runs'] else 'NO':>6} | {ratio:>16} |"
        )
    if summary["check_identical_across_jobs_and_runs"] is not None:
        print(
            f"check findings identical across --jobs and runs: "
            f"{summary['check_identical_across_jobs_and_runs']}"
        )
    if summary["flake8_plugin_matches_check"] is not None:
        print(f"flake8 plugin findings == check findings: {summary['flake8_plugin_matches_check']}")
    if w.get("expected"):
        got = tools.get(ref_name, {}).get("findings_by_code")
        print(f"expected (generator) {w['expected']} / check {got}")
