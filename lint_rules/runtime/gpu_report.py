"""The GPU command's machine description and its report file (Markdown or JSON)."""

from __future__ import annotations

import importlib.metadata
import json
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any


def machine() -> dict[str, str]:
    """GPU, driver, CUDA, TE and torch versions, as far as this machine can tell."""
    import torch

    info = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "torch": torch.__version__,
        "cuda (torch build)": str(torch.version.cuda),
        "tf32": f"matmul {torch.backends.cuda.matmul.allow_tf32}, "
        f"cudnn {torch.backends.cudnn.allow_tf32}",
    }
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        info["gpu"] = f"{torch.cuda.get_device_name()} (compute capability {major}.{minor})"
        info["cudnn"] = str(torch.backends.cudnn.version())
    else:
        info["gpu"] = "no CUDA"
    info["driver"] = _driver()
    for dist in ("transformer_engine", "transformer-engine", "transformer_engine_torch"):
        try:
            info["transformer_engine"] = importlib.metadata.version(dist)
            break
        except importlib.metadata.PackageNotFoundError:
            continue
    else:
        info["transformer_engine"] = "not installed"
    return info


def _driver() -> str:
    if shutil.which("nvidia-smi") is None:
        return "unknown (no nvidia-smi)"
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.SubprocessError) as error:
        return f"unknown ({error})"
    return done.stdout.strip().splitlines()[0] if done.stdout.strip() else "unknown"


def one_line(info: dict[str, str]) -> str:
    keys = ("torch", "gpu", "driver", "cuda (torch build)", "transformer_engine")
    return ", ".join(f"{k} {info[k]}" for k in keys if k in info)


def write_report(
    path: str | Path, info: dict[str, str], backend: str, rows: list[dict[str, Any]], summary: str
) -> None:
    """JSON when ``path`` ends in ``.json``, else Markdown."""
    target = Path(path)
    if target.suffix.lower() == ".json":
        payload = {"machine": info, "backend": backend, "summary": summary, "results": rows}
        target.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        return
    lines = ["# te-microbatch-lint GPU check report", "", f"Backend: `{backend}`", ""]
    lines += ["| machine | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in info.items()]
    lines += ["", f"Summary: {summary}", ""]
    lines += ["| status | scenario | module | configuration | expected | labels |"]
    lines += ["|---|---|---|---|---|---|"]
    for row in rows:
        labels = "; ".join(f"{k}: {v}" for k, v in row["labels"].items()) or row.get("reason", "")
        cells = [row["status"], row["scenario"], row["module"], row["config"], row["expected"]]
        lines.append("| " + " | ".join(_cell(c) for c in [*cells, labels]) + " |")
    lines += ["", "## Numbers", ""]
    for row in rows:
        for name, detail in row.get("details", {}).items():
            if detail:
                lines.append(
                    f"- {row['scenario']} / {row['module']} / {row['config']} "
                    f"({name}): {_cell(detail)}"
                )
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")
