"""The numbers the project promises, computed from one run's summaries (benchmarks/run.py).

Headline (issue 12): on megatron-core 0.19.2, ``check`` against ``ruff check --select B`` as a
ratio of medians within the run, both with their caches (the way each runs by default) and both
without; and the default ``--jobs`` against ``--jobs 1`` (no cache) on every real corpus and on
every tree where all files are parsed. The older targets (TorchFix, plugin overhead, worst-case
throughput, ``--jobs`` scaling, memory, identical findings) follow.
"""

from __future__ import annotations

from typing import Any

TARGETS = {
    "check_vs_ruff_max": 1.2,
    "default_jobs_vs_jobs1_max": 1.05,
    "torchfix_vs_check_min": 100.0,
    "plugin_overhead_max": 0.02,
    "worst_lines_per_s_per_core_min": 20_000.0,
    "jobs2_speedup_min": 1.6,
    "worst_peak_mb_max": 300.0,
}
ISSUE_TORCHFIX_MEGATRON_S = 280.0
"""TorchFix on megatron-core 0.19.2 as measured once by ``run.py --with-torchfix`` (used when
not measured in the run)."""

CHECK = "check"
CHECK_COLD = "check --no-cache"
RUFF_B = "ruff --select B"
RUFF_B_CACHED = "ruff --select B (cached)"


def _get(summary: dict[str, Any], tool: str, key: str = "median_s") -> float | None:
    return summary["tools"].get(tool, {}).get(key)


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def check_vs_ruff(mc: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {"target_max": TARGETS["check_vs_ruff_max"]}
    for label, ours, ruff in (("cached", CHECK, RUFF_B_CACHED), ("uncached", CHECK_COLD, RUFF_B)):
        entry[label] = {
            "check_s": _get(mc, ours),
            "ruff_s": _get(mc, ruff),
            "ratio": _ratio(_get(mc, ours), _get(mc, ruff)),
            "ratio_min_of_runs": _ratio(_get(mc, ours, "min_s"), _get(mc, ruff, "min_s")),
        }
    cached = entry["cached"]["ratio"]
    entry["met"] = cached is not None and cached <= TARGETS["check_vs_ruff_max"]
    entry["met_by"] = "both with their caches (their default)"
    return entry


def default_vs_jobs1(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    rows = {}
    for summary in summaries:
        w = summary["workload"]
        if w["kind"] == "corpus" or (w["kind"] == "synth" and w.get("fraction") == 1.0):
            default, one = _get(summary, CHECK_COLD), _get(summary, "check -j1")
            rows[w["name"]] = {"default_s": default, "jobs1_s": one, "ratio": _ratio(default, one)}
    ratios = [r["ratio"] for r in rows.values() if r["ratio"] is not None]
    return {
        "workloads": rows,
        "worst_ratio": max(ratios) if ratios else None,
        "target_max": TARGETS["default_jobs_vs_jobs1_max"],
        "met": bool(ratios) and max(ratios) <= TARGETS["default_jobs_vs_jobs1_max"],
    }


def evaluate_targets(
    summaries: list[dict[str, Any]], ncores: int, attribution: dict[str, Any] | None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    mc = next((s for s in summaries if s["workload"]["name"].startswith("megatron-core")), None)
    if mc:
        out["megatron_check_vs_ruff_B"] = check_vs_ruff(mc)
    out["default_jobs_vs_jobs1"] = default_vs_jobs1(summaries)
    if mc:
        out.update(_torchfix(mc))
        overhead = _plugin_overhead(mc, attribution)
        if overhead:
            out["plugin_overhead"] = overhead
    out.update(_worst_case(summaries, ncores))
    stable = [
        s["check_identical_across_jobs_and_runs"]
        for s in summaries
        if s["check_identical_across_jobs_and_runs"] is not None
    ]
    out["findings_identical"] = {"workloads": len(stable), "met": bool(stable) and all(stable)}
    return out


def _torchfix(mc: dict[str, Any]) -> dict[str, Any]:
    tf = _get(mc, "torchfix --select ALL")
    row = mc["tools"].get("torchfix --select ALL", {})
    if not tf:
        source = "issue 5 (not measured here)"
    elif "reused_from" in row:
        source = f"reused: {row['reused_from']} ({row.get('measured_at')})"
    else:
        source = "this run"
    entry: dict[str, Any] = {
        "torchfix_s": tf or ISSUE_TORCHFIX_MEGATRON_S,
        "torchfix_source": source,
        "check_s": _get(mc, CHECK_COLD),
    }
    if entry["check_s"]:
        entry["speedup"] = entry["torchfix_s"] / entry["check_s"]
        entry["met"] = entry["speedup"] >= TARGETS["torchfix_vs_check_min"]
    return {"megatron_torchfix_vs_check_uncached": entry}


def _plugin_overhead(mc: dict[str, Any], attribution: dict[str, Any] | None) -> dict[str, Any]:
    with_p, without_p = _get(mc, "flake8 default"), _get(mc, "flake8 default -TEMplugin")
    if not (with_p and without_p):
        return {}
    cpu_with = _get(mc, "flake8 default", "cpu_s_median")
    cpu_without = _get(mc, "flake8 default -TEMplugin", "cpu_s_median")
    entry: dict[str, Any] = {
        "flake8_with_plugin_s": with_p,
        "flake8_without_plugin_s": without_p,
        "overhead_wall_median": with_p / without_p - 1,
        "overhead_cpu_median": cpu_with / cpu_without - 1 if cpu_with and cpu_without else None,
        "target_max": TARGETS["plugin_overhead_max"],
    }
    if attribution:
        entry["attribution"] = attribution
        share = attribution.get("plugin_share_of_wall")
        entry["met"] = share is not None and share < TARGETS["plugin_overhead_max"]
        entry["met_by"] = "in-process attribution (flake8 --jobs 1)"
    return entry


def _worst_case(summaries: list[dict[str, Any]], ncores: int) -> dict[str, Any]:
    worst = [
        s
        for s in summaries
        if s["workload"]["kind"] == "synth" and s["workload"]["fraction"] == 1.0
    ]
    if not worst:
        return {}
    out: dict[str, Any] = {}
    big = max(worst, key=lambda s: s["workload"]["files"])
    lines = big["workload"]["lines"]
    name_n = f"check -j{ncores}"
    j1, jn = _get(big, "check -j1"), _get(big, name_n)
    entry: dict[str, Any] = {"workload": big["workload"]["name"], "lines": lines}
    if j1:
        entry["lines_per_s_per_core_jobs1"] = lines / j1
        entry["met"] = lines / j1 >= TARGETS["worst_lines_per_s_per_core_min"]
    if jn:
        entry[f"lines_per_s_per_core_jobs{ncores}"] = lines / (jn * ncores)
    out["worst_case_throughput"] = entry
    if j1 and jn:
        out["jobs_speedup"] = {
            "jobs1_s": j1,
            f"jobs{ncores}_s": jn,
            "speedup": j1 / jn,
            "target_min": TARGETS["jobs2_speedup_min"],
            "met": j1 / jn >= TARGETS["jobs2_speedup_min"],
        }
    peaks = {
        n: _get(big, n, "memory_tree_peak_mb")
        for n in ("check -j1", name_n)
        if _get(big, n, "memory_tree_peak_mb") is not None
    }
    if peaks:
        out["worst_case_peak_memory"] = {
            **{f"{n}_tree_peak_mb": v for n, v in peaks.items()},
            "target_max": TARGETS["worst_peak_mb_max"],
            "met": max(peaks.values()) < TARGETS["worst_peak_mb_max"],
        }
    return out


def print_targets(targets: dict[str, Any]) -> None:
    print("\n## Targets")
    for key, value in targets.items():
        met = value.get("met")
        mark = "MET " if met else ("MISSED" if met is False else "n/a ")
        detail = ", ".join(
            f"{k}={_short(v)}" for k, v in value.items() if k not in ("met", "attribution")
        )
        print(f"- [{mark}] {key}: {detail}")


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_short(v)}" for k, v in value.items()) + "}"
    return str(value)
