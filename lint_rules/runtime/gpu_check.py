"""One command for a GPU machine: every runtime scenario on real TE and on the reference.

    python -m lint_rules.runtime.gpu_check        (or: te-microbatch-gpu-check)

Needs CUDA, a CUDA build of torch and ``transformer_engine[pytorch]``. For each scenario and
module kind it runs the scenario on the reference (``reference_te``, on the GPU) and on
``transformer_engine.pytorch`` and prints one line::

    agree     accumulation true-false        Linear          reference: g1 | te: g1
    differ    fp8 cache stuck                LayerNormMLP    reference: fresh,stale,stale | te: ...
    skipped   fp8 cache stuck                Linear          FP8 needs compute capability 8.9 ...

``agree``: both gave the expected label. ``differ``: the labels differ. ``unexpected``: both
gave the same label, but not the expected one. ``error``: a scenario raised. FP8 scenarios run
under a ``DelayedScaling`` recipe where the GPU supports FP8 (compute capability 8.9 or newer)
and are skipped with the reason elsewhere. The monitor runs on the real TE modules too.

Exit status: 0 when every scenario that ran agrees and at least one ran; 1 on any ``differ``,
``unexpected`` or ``error``; 2 when nothing could be compared (no CUDA or no TE: every line
says ``skipped`` and why).
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, TextIO

from lint_rules.runtime.backends import Backend

FAILURES = ("differ", "unexpected", "error")


@dataclass(frozen=True)
class Check:
    """One scenario on one module kind, with the label a correct backend gives."""

    scenario: str
    module: str
    run: Callable[[Backend], object]  # returns an Outcome (label, detail)
    expected: str
    fp8: bool = False


@dataclass
class Summary:
    """Counts per status; ``exit_code`` is the command's exit status."""

    counts: dict[str, int] = field(default_factory=dict)

    def add(self, status: str) -> None:
        self.counts[status] = self.counts.get(status, 0) + 1

    @property
    def exit_code(self) -> int:
        if any(self.counts.get(s) for s in FAILURES):
            return 1
        return 0 if self.counts.get("agree") else 2

    def __str__(self) -> str:
        order = ("agree", *FAILURES, "skipped")
        return ", ".join(f"{self.counts[s]} {s}" for s in order if self.counts.get(s))


def checks() -> list[Check]:
    """Every scenario the runtime suite runs, per module kind, with its expected label."""
    from lint_rules.runtime import fixture_scenarios as fs
    from lint_rules.runtime import scenarios as sc

    out = []
    for case_id, case in sc.ACCUMULATION_CASES.items():
        for kind in sc.KINDS:
            run = partial(sc.accumulation, kind=kind, case_id=case_id)
            out.append(Check(f"accumulation {case_id}", kind, run, case.expect))
    for policy in sc.FP8_POLICIES:
        for resume_at, steps in ((None, 3), (2, 4)):
            name = f"fp8 cache {policy}" + (" resumed" if resume_at else "")
            expected = sc.fp8_expected(policy, steps, resume_at)
            for kind in sc.KINDS:
                run = partial(
                    sc.fp8_weight_cache, kind=kind, policy=policy, steps=steps, resume_at=resume_at
                )
                out.append(Check(name, kind, run, expected, fp8=True))
    for mode, expected in (("tracked", "lost,lost"), ("none", "kept,kept")):
        for kind in sc.KINDS:
            run = partial(sc.fp8_repeated_layer, kind=kind, flag_mode=mode)
            out.append(Check(f"fp8 repeated layer {mode}", kind, run, expected, fp8=True))
    model = "shared-layer model"
    ok = fs.oracle_expected()
    out += [
        Check("gradient oracle fixed", model, fs.gradient_oracle, ok),
        Check(
            "gradient oracle fixed fp8", model, partial(fs.gradient_oracle, fp8=True), ok, fp8=True
        ),
        Check(
            "resume with RNG state", model, partial(fs.resume_rng, restore_rng=True), "identical"
        ),
        Check(
            "resume without RNG state",
            model,
            partial(fs.resume_rng, restore_rng=False),
            "diverges at step 3",
        ),
        Check(
            "monitor unguarded",
            model,
            partial(fs.monitor_kinds, variant="unguarded"),
            "repeated-call",
        ),
        Check("monitor fixed", model, partial(fs.monitor_kinds, variant="fixed"), "silent"),
    ]
    for rearm, expected in ((False, "stale-fp8-cache"), (True, "silent")):
        run = partial(
            fs.monitor_kinds, variant="unguarded", fp8=True, rearm=rearm, mtp_num_layers=1
        )
        name = "monitor fp8 flag " + ("re-armed" if rearm else "not re-armed")
        out.append(Check(name, model, run, expected, fp8=True))
    return out


def _label(check: Check, backend: Backend) -> tuple[str, str]:
    """(label, detail) of ``check`` on ``backend``; ``error: ...`` when it raised."""
    try:
        outcome = check.run(backend)
    except Exception as error:  # a scenario that cannot run on TE is a finding, not a crash
        last = traceback.format_exception_only(type(error), error)[-1].strip()
        return f"error: {last}", traceback.format_exc(limit=3)
    return str(getattr(outcome, "label", outcome)), str(getattr(outcome, "detail", ""))


def compare(
    all_checks: Sequence[Check],
    reference: Backend,
    te: Backend,
    out: TextIO = sys.stdout,
    verbose: bool = False,
) -> Summary:
    """Run every check on both backends (or skip it, with the reason) and print one line each."""
    summary = Summary()
    for check in all_checks:
        where = f"{check.scenario:32} {check.module:18}"
        reason = (
            (te.fp8_unavailable() or reference.fp8_unavailable())
            if check.fp8
            else (te.unavailable() or reference.unavailable())
        )
        if reason is not None:
            summary.add("skipped")
            print(f"{'skipped':10} {where} {reason}", file=out)
            continue
        ref_label, ref_detail = _label(check, reference)
        te_label, te_detail = _label(check, te)
        if ref_label.startswith("error") or te_label.startswith("error"):
            status = "error"
        elif ref_label != te_label:
            status = "differ"
        elif ref_label != check.expected:
            status = "unexpected"
        else:
            status = "agree"
        summary.add(status)
        line = f"{status:10} {where} reference: {ref_label} | te: {te_label}"
        if status != "agree":
            line += f" | expected: {check.expected}"
        print(line, file=out)
        if verbose or status != "agree":
            for name, detail in (("reference", ref_detail), ("te", te_detail)):
                if detail:
                    print(f"{'':10}   {name}: {detail}", file=out)
    return summary


def environment() -> str:
    """One line about this machine: torch, CUDA device and TE version, as far as known."""
    import importlib.metadata

    import torch

    parts = [f"torch {torch.__version__}"]
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        parts.append(f"{torch.cuda.get_device_name()} (compute capability {major}.{minor})")
    else:
        parts.append("no CUDA")
    for dist in ("transformer_engine", "transformer-engine"):
        try:
            parts.append(f"transformer_engine {importlib.metadata.version(dist)}")
            break
        except importlib.metadata.PackageNotFoundError:
            continue
    else:
        parts.append("transformer_engine not installed")
    return ", ".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lint_rules.runtime.gpu_check",
        description="Run the runtime scenarios on real Transformer Engine and on the reference; "
        "print agree/differ/skipped per scenario and module (exit 1 on any disagreement, "
        "2 when nothing could be compared).",
    )
    parser.add_argument("-k", "--only", help="run only scenarios whose name contains this text")
    parser.add_argument("-v", "--verbose", action="store_true", help="print the numbers too")
    args = parser.parse_args(argv)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("gpu_check: error: torch is not installed", file=sys.stderr)
        return 2
    print(environment())
    selected = [c for c in checks() if not args.only or args.only in f"{c.scenario} {c.module}"]
    summary = compare(
        selected, Backend("reference", "cuda"), Backend("te", "cuda"), verbose=args.verbose
    )
    print(f"summary: {summary or 'nothing selected'}")
    if summary.exit_code == 2:
        print("nothing was compared: this needs CUDA and transformer_engine (see docs/runtime.md)")
    return summary.exit_code


if __name__ == "__main__":
    sys.exit(main())
