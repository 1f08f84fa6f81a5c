"""One command for a GPU machine: every runtime scenario on real TE, checked against the plan.

    python -m lint_rules.runtime.gpu_check [--report FILE] [-v]    (te-microbatch-gpu-check)
    python -m lint_rules.runtime.gpu_check --backend reference      (on the CPU reference)
    python -m lint_rules.runtime.gpu_check --list                   (the plan, nothing run)

With ``--backend te`` (the default; needs CUDA, a CUDA torch and ``transformer_engine``) every
scenario (:mod:`lint_rules.runtime.gpu_plan`) runs on ``transformer_engine.pytorch`` and on the
reference on the same GPU, and the three-leg resume check (:mod:`lint_rules.runtime.gpu_legs`,
separate processes, with an A/A row per configuration) runs on TE in fp32/bf16 and under FP8.
TF32 is off for everything (``torch.backends.cuda.matmul.allow_tf32 = False``,
``NVIDIA_TF32_OVERRIDE=0``, meant to reach TE's own cuBLASLt GEMMs); the tolerances assume it,
and the first check (:mod:`lint_rules.runtime.precision`) measures it, with a banner when it
fails. State the command saved itself is loaded with TE 2.18's pickle opt-in for that load only
(:mod:`lint_rules.runtime.own_state`); checks that need a newer TE than the one installed
(``Check.since``) are skipped with the reason. FP8 checks run where TE's own gate
for their recipe (``is_fp8_available(return_reason=True)``) says so, and are skipped with TE's
reason elsewhere. FP8 regions use ``te.autocast(recipe=...)``, ``fp8_autocast`` on a TE that
lacks it. With ``--backend reference`` everything runs on the CPU reference instead, the legs
included: every line of the command except TE itself.

One line per check: ``agree`` (TE, and the reference on the GPU, gave the expected label),
``differ`` (TE and the reference differ), ``unexpected`` (both differ from the expectation),
``error`` (a scenario raised), ``unsupported`` (TE deviates on a case TE documents as
unsupported: reported, not a failure), ``skipped`` (with the reason). Exit status: 0 when
every check that ran agrees and one did; 1 on any differ/unexpected/error; 2 when nothing ran.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from lint_rules.runtime.backends import Backend
from lint_rules.runtime.gpu_legs import LegConfig
from lint_rules.runtime.gpu_plan import Check, checks, leg_config_text, leg_configs, leg_rows

FAILURES = ("differ", "unexpected", "error")
STATUSES = ("agree", *FAILURES, "unsupported", "skipped")


@dataclass
class Summary:
    """Counts per status and the rows of the report; ``exit_code`` is the command's status."""

    counts: dict[str, int] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)

    def add(self, status: str, row: dict[str, Any] | None = None) -> None:
        self.counts[status] = self.counts.get(status, 0) + 1
        if row is not None:
            self.rows.append({"status": status, **row})

    @property
    def exit_code(self) -> int:
        if any(self.counts.get(s) for s in FAILURES):
            return 1
        return 0 if self.counts.get("agree") else 2

    def __str__(self) -> str:
        return ", ".join(f"{self.counts[s]} {s}" for s in STATUSES if self.counts.get(s))


def _label(check: Check, backend: Backend) -> tuple[str, str]:
    """(label, detail) of ``check`` on ``backend``; ``error: ...`` when it raised."""
    try:
        outcome = check.run(backend)
    except Exception as error:  # a scenario that cannot run on TE is a finding, not a crash
        last = traceback.format_exception_only(type(error), error)[-1].strip()
        return f"error: {last}", traceback.format_exc(limit=3)
    return str(getattr(outcome, "label", outcome)), str(getattr(outcome, "detail", ""))


def _unavailable(check: Check, backend: Backend) -> str | None:
    """Why ``check`` cannot run on ``backend`` (its FP8 recipe, or the backend itself)."""
    reason = (
        backend.fp8_unavailable(check.recipe)
        if check.recipe is not None  # check.fp8
        else backend.unavailable()
    )
    if reason is None and check.since is not None:
        reason = backend.too_old(check.since[0], check.since[1])
    return reason


def judge(
    expected: str, primary: tuple[str, str], control: tuple[str, str] | None, note: str | None
) -> str:
    """The status of one check from the label of the backend under test and of the control."""
    labels = [primary[0]] + ([control[0]] if control else [])
    if any(label.startswith("error") for label in labels):
        return "error"
    if control is not None and primary[0] != control[0]:
        return "unsupported" if note and control[0] == expected else "differ"
    if primary[0] != expected:
        return "unsupported" if note and control is not None else "unexpected"
    return "agree"


def compare(
    all_checks: Sequence[Check],
    primary: Backend,
    control: Backend | None = None,
    out: TextIO | None = None,
    verbose: bool = False,
    summary: Summary | None = None,
) -> Summary:
    """Run every check on ``primary`` (and ``control``, the reference on the same device),
    or skip it with the reason; print one line each (to ``out``, else standard output)."""
    out = out if out is not None else sys.stdout
    summary = summary if summary is not None else Summary()
    for check in all_checks:
        where = f"{check.scenario:40} {check.module:24} {check.config:40}"
        base = {
            "scenario": check.scenario,
            "module": check.module,
            "config": check.config,
            "expected": check.expected,
            "labels": {},
            "details": {},
        }
        sides = [primary] + ([control] if control is not None else [])
        reason = next(
            (r for b in sides if (r := _unavailable(check, b)) is not None),
            None,
        )
        if reason is not None:
            summary.add("skipped", {**base, "reason": reason})
            print(f"{'skipped':11} {where} {reason}", file=out)
            continue
        got = _label(check, primary)
        ref = _label(check, control) if control is not None else None
        status = judge(check.expected, got, ref, check.te_note)
        labels = {primary.id: got[0]}
        details = {primary.id: got[1]}
        if ref is not None and control is not None:
            labels[control.id], details[control.id] = ref
        summary.add(status, {**base, "labels": labels, "details": details})
        shown = " | ".join(f"{k}: {v}" for k, v in labels.items())
        line = f"{status:11} {where} {shown}"
        if status != "agree":
            line += f" | expected: {check.expected}"
        print(line, file=out)
        if status == "unsupported" and check.te_note:
            print(f"{'':11}   note: {check.te_note}", file=out)
        if verbose or status in FAILURES:
            for name, detail in details.items():
                if detail:
                    print(f"{'':11}   {name}: {detail}", file=out)
    return summary


def _selected(only: Sequence[str] | None, name: str) -> bool:
    """``-k``: no filter, or any of the texts is part of the name."""
    return not only or any(text in name for text in only)


def run_legs(
    primary: Backend, out: TextIO, summary: Summary, only: Sequence[str] | None = None
) -> None:
    """The three-leg resume check and its A/A check for every leg configuration (separate
    processes): two rows per configuration (:func:`~lint_rules.runtime.gpu_plan.leg_rows`)."""
    from lint_rules.runtime.gpu_legs import run_leg_matrix

    configs = [c for c in leg_configs() if _selected(only, f"{c.name} three-leg A/A")]
    if not configs:
        return
    fp8_reason = primary.fp8_unavailable("current")
    reason = primary.unavailable()
    runnable = []
    for config in configs:
        why = reason or (fp8_reason if config.kwargs.get("fp8") else None)
        if why is not None:
            for _, module, expected in leg_rows(config):
                row = _leg_row(config, module, expected)
                summary.add("skipped", {**row, "reason": why})
                print(
                    f"{'skipped':11} {config.name:40} {module:24} {row['config']} {why}", file=out
                )
        else:
            runnable.append(config)
    if not runnable:
        return
    with tempfile.TemporaryDirectory(prefix="te-gpu-check-legs-") as work:
        try:
            labels = run_leg_matrix(
                runnable, backend=primary.name, device=primary.device, workdir=work
            )
        except Exception as error:  # a leg process failed: every leg check errs
            failed = f"error: {str(error)[:2000]}"
            labels = {key: failed for c in runnable for key, _, _ in leg_rows(c)}
    for config in runnable:
        for key, module, expected in leg_rows(config):
            row = _leg_row(config, module, expected)
            label = labels[key]
            status = (
                "error"
                if label.startswith("error")
                else ("agree" if label == expected else "unexpected")
            )
            summary.add(status, {**row, "labels": {primary.id: label}})
            line = f"{status:11} {config.name:40} {module:24} {row['config']} {primary.id}: {label}"
            if status != "agree":
                line += f" | expected: {expected}"
            print(line, file=out)


def _leg_row(config: LegConfig, module: str, expected: str) -> dict[str, Any]:
    return {
        "scenario": config.name,
        "module": module,
        "config": leg_config_text(config),
        "expected": expected,
        "labels": {},
        "details": {},
    }


def print_plan(out: TextIO | None = None) -> int:
    """``--list``: scenario, module, configuration and expected label; nothing is run."""
    out = out if out is not None else sys.stdout
    rows = [(c.scenario, c.module, c.config, c.expected) for c in checks()]
    rows += [
        (c.name, module, leg_config_text(c), expected)
        for c in leg_configs()
        for _, module, expected in leg_rows(c)
    ]
    print(f"{'scenario':40} {'module':24} {'configuration':40} expected", file=out)
    for row in rows:
        print(f"{row[0]:40} {row[1]:24} {row[2]:40} {row[3]}", file=out)
    print(f"{len(rows)} checks", file=out)
    return 0


def tf32_off() -> None:
    """No TF32 anywhere: NVIDIA libraries (TE's cuBLASLt included) and torch's own flags."""
    os.environ["NVIDIA_TF32_OVERRIDE"] = "0"
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def _say_precision(summary: Summary) -> None:
    """Loudly, when the first check found that fp32 GEMMs are not fp32 here."""
    from lint_rules.runtime.precision import BANNER, NAME

    if any(r["scenario"] == NAME and r["status"] in FAILURES for r in summary.rows):
        print(BANNER)


def state_line() -> str:
    """What the command did about TE's refusal of pickled FP8 state (see ``own_state``)."""
    from lint_rules.runtime.own_state import LOADS, UNSAFE_PICKLE_EXTRA_STATE_ENV

    return (
        f"saved FP8 state: {UNSAFE_PICKLE_EXTRA_STATE_ENV}=1 was set only while loading state "
        f"this command saved itself ({LOADS['allowed']} loads in this process, and each leg C "
        "load); TE 2.18 and later refuse pickled DelayedScaling state otherwise"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lint_rules.runtime.gpu_check",
        description="Run the runtime scenarios on real Transformer Engine (or, with --backend "
        "reference, on the CPU reference) and check each against its expected label.",
    )
    parser.add_argument(
        "--backend",
        choices=("te", "reference"),
        default="te",
        help="te: TE on CUDA, with the reference on CUDA as control (default); "
        "reference: the CPU reference alone, every line but TE itself",
    )
    parser.add_argument("--list", action="store_true", help="print the plan, run nothing")
    parser.add_argument(
        "--report", metavar="FILE", help="write a report (.json: JSON, else Markdown)"
    )
    parser.add_argument("--no-legs", action="store_true", help="skip the three-leg resume check")
    parser.add_argument(
        "-k",
        "--only",
        action="append",
        help="run only checks whose name contains this text (repeatable: any of them)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="print the numbers too")
    args = parser.parse_args(argv)
    if args.list:
        return print_plan()
    os.environ["NVIDIA_TF32_OVERRIDE"] = "0"  # before torch creates a CUDA context
    try:
        import torch  # noqa: F401
    except ImportError:
        print("gpu_check: error: torch is not installed", file=sys.stderr)
        return 2
    tf32_off()
    from lint_rules.runtime import gpu_report

    info = gpu_report.machine()
    print(gpu_report.one_line(info))
    if args.backend == "te":
        primary, control = Backend("te", "cuda"), Backend("reference", "cuda")
    else:
        primary, control = Backend("reference", "cpu"), None
        torch.set_num_threads(1)  # as the legs: small CPU GEMMs gain nothing from threads
    selected = [c for c in checks() if _selected(args.only, f"{c.scenario} {c.module} {c.config}")]
    summary = compare(selected, primary, control, verbose=args.verbose)
    _say_precision(summary)
    if not args.no_legs:
        run_legs(primary, sys.stdout, summary, args.only)
    print(f"summary: {summary or 'nothing selected'}")
    print(state_line())
    if args.report:
        info["saved FP8 state"] = state_line()
        if not primary.is_te:
            info["reference behaves as TE"] = primary.version()
        gpu_report.write_report(args.report, info, primary.id, summary.rows, str(summary))
        print(f"report written to {args.report}")
    if summary.exit_code == 2:
        print("nothing ran: --backend te needs CUDA and transformer_engine (see docs/runtime.md)")
    return summary.exit_code


if __name__ == "__main__":
    sys.exit(main())
