"""The scaling plot for the README: wall time against lines of code, one line per tool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

STYLE = {
    "check": ("#08306b", "P", "-"),
    "check -j1": ("#1f77b4", "o", "-"),
    "check -j2": ("#1f77b4", "s", "--"),
    "ruff --select B (cached)": ("#8c1a1a", "<", ":"),
    "ruff --select B": ("#d62728", "^", "-"),
    "ruff --select F": ("#ff9896", "v", "--"),
    "flake8 --select TEM": ("#2ca02c", "D", "-"),
    "flake8 --select F": ("#98df8a", "d", "--"),
    "grep -rl": ("#7f7f7f", "X", ":"),
    "torchfix --select ALL": ("#9467bd", "*", "none"),
}


def plot_scaling(data: dict[str, Any], path: Path) -> None:
    """Two panels (1% and 100% of files relevant); real corpora drawn as labelled points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    synth = [w for w in data["workloads"] if w["workload"]["kind"] == "synth"]
    corpora = [w for w in data["workloads"] if w["workload"]["kind"] == "corpus"]
    fractions = sorted({w["workload"]["fraction"] for w in synth}) or [None]
    fig, axes = plt.subplots(
        1, len(fractions), figsize=(5.2 * len(fractions), 4.0), sharey=True, squeeze=False
    )
    for ax, fraction in zip(axes[0], fractions):
        rows = sorted(
            (w for w in synth if w["workload"]["fraction"] == fraction),
            key=lambda w: w["workload"]["lines"],
        )
        tools = [t for t in STYLE if any(t in w["tools"] for w in rows + corpora)]
        extra = sorted(
            {t for w in rows for t in w["tools"]}
            - set(STYLE)
            - {"flake8 default", "flake8 default -TEMplugin"}
            - {t for t in {t for w in rows for t in w["tools"]} if t.startswith("flake8 -s")}
        )
        for tool in tools + extra:
            color, marker, line = STYLE.get(tool, ("#17becf", ".", "-"))
            pts = [
                (w["workload"]["lines"], w["tools"][tool]["median_s"])
                for w in rows
                if tool in w["tools"] and w["tools"][tool]["median_s"]
            ]
            if pts:
                xs, ys = zip(*pts)
                ax.plot(
                    xs, ys, color=color, marker=marker, linestyle=line, label=tool, markersize=5
                )
            if fraction is None or fraction < 0.5:  # real trees are ~1% relevant
                for w in corpora:
                    t = w["tools"].get(tool)
                    if t and t["median_s"]:
                        ax.scatter(
                            [w["workload"]["lines"]],
                            [t["median_s"]],
                            color=color,
                            marker=marker,
                            s=60,
                            edgecolors="black",
                            linewidths=0.8,
                            zorder=5,
                            label=tool if not pts else None,
                        )
        if fraction is None or fraction < 0.5:
            for w in corpora:
                ax.axvline(w["workload"]["lines"], color="0.8", linewidth=0.8, zorder=0)
                ax.text(
                    w["workload"]["lines"],
                    0.985,
                    w["workload"]["name"],
                    transform=ax.get_xaxis_transform(),
                    fontsize=6,
                    rotation=90,
                    color="0.3",
                    ha="right",
                    va="top",
                    bbox={"facecolor": "white", "alpha": 0.7, "edgecolor": "none", "pad": 0.5},
                )
        ax.set_xscale("log")
        ax.set_yscale("log")
        title = (
            "synthetic trees"
            if fraction is None
            else (f"{fraction * 100:g}% of files mention is_first_microbatch")
        )
        if fraction is None or fraction < 0.5:
            title += "\n(outlined markers: real packages)"
        ax.set_title(title, fontsize=8.5)
        ax.set_xlabel("lines of Python")
        ax.grid(True, which="both", linewidth=0.3, alpha=0.6)
    axes[0][0].set_ylabel("wall time, s (median)")
    handles, labels = [], []
    for ax in axes[0]:
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(h)
                labels.append(label)
    meta = data.get("meta", {})
    fig.legend(
        handles, labels, loc="lower center", ncol=min(4, len(labels)), fontsize=7.5, frameon=False
    )
    fig.suptitle(
        f"te-microbatch-lint scaling - {meta.get('cores', '?')} cores, {meta.get('date_utc', '')}",
        fontsize=9,
    )
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)
