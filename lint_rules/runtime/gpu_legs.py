"""The three-leg resume check inside the GPU command, for several configurations at once.

For every configuration (a fixture, a variant and factory arguments) leg A trains straight
through ``steps``, leg A' does it again in another process, leg B trains ``resume_at`` steps and
saves, leg C starts from B's checkpoint and trains on; A and A' (the A/A check: two
uninterrupted runs agree, so nondeterminism of the backend cannot pass for a resume effect) and
A and C are compared byte for byte (:mod:`lint_rules.runtime.resume`). To keep the cost of
starting torch down, ONE process runs leg A of every configuration in turn, one every leg A',
one every leg B, and one every leg C (after B), each configuration with a freshly built model
and freshly seeded RNGs (and on TE a reset of TE's global FP8 state). What the check needs holds
for every configuration: its C runs in a process that never ran its B.

``python -m lint_rules.runtime.gpu_legs LEG PLAN.json`` runs one leg process (what
:func:`run_leg_matrix` spawns).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lint_rules.runtime.mutations import MUTATION_ENV
from lint_rules.runtime.resume import DETERMINISM_ENV, finish_leg, start_leg

STEPS = 4
RESUME_AT = 2
AA = "A/A"
"""The suffix of the A/A label's key in :func:`run_leg_matrix`'s answer."""


@dataclass(frozen=True)
class LegConfig:
    """One configuration of the three-leg check and the label a correct backend gives."""

    name: str
    fixture: str  # "shared-layer" or "megatron"
    variant: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    expected: str = "identical"


def write_fixture(config: LegConfig, folder: Path) -> str:
    """Write the configuration's model source; return its ``file.py:build_training`` spec."""
    if config.fixture == "megatron":
        from lint_rules.runtime.megatron_shape import write_megatron_variant

        path = write_megatron_variant(config.variant, folder)
    else:
        from lint_rules.runtime.shared_layer import write_variant

        path = write_variant(config.variant, folder)
    return f"{path}:build_training"


def run_leg_matrix(
    configs: Sequence[LegConfig],
    *,
    backend: str,
    device: str,
    workdir: str | Path,
    steps: int = STEPS,
    resume_at: int = RESUME_AT,
    timeout: float = 600.0,
) -> dict[str, str]:
    """Run legs A, A', B (in parallel), then C for every configuration; name -> label of A vs
    C and ``f"{name} {AA}"`` -> label of A vs A' (``identical`` or ``diverges at step K``)."""
    work = Path(workdir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    jobs: list[dict[str, Any]] = []
    for i, config in enumerate(configs):
        spec = write_fixture(config, work / f"src{i}")
        jobs.append({"name": config.name, "spec": spec, "kwargs": config.kwargs, "i": i})
    plan = work / "plan.json"
    plan.write_text(
        json.dumps({"jobs": jobs, "steps": steps, "resume_at": resume_at, "device": device}),
        encoding="utf-8",
    )
    env = {**os.environ, **DETERMINISM_ENV, "TE_MICROBATCH_BACKEND": backend}
    env["NVIDIA_TF32_OVERRIDE"] = "0"
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    argv = [sys.executable, "-m", "lint_rules.runtime.gpu_legs"]
    first = {leg: start_leg([*argv, leg, str(plan)], env, work) for leg in ("A", "A2", "B")}
    for leg, proc in first.items():
        finish_leg(leg, proc, timeout)
    finish_leg("C", start_leg([*argv, "C", str(plan)], env, work), timeout)
    from lint_rules.runtime.snapshot import compare_leg_outputs

    labels = {}
    for job in jobs:
        a = work / f"A{job['i']}.pt"
        for key, other in ((job["name"], "C"), (f"{job['name']} {AA}", "A2")):
            report = compare_leg_outputs(a, work / f"{other}{job['i']}.pt", label_b=other)
            labels[key] = (
                "identical" if report.identical else f"diverges at step {report.first_step}"
            )
    return labels


def _reset_te_state() -> None:
    """Between configurations in one TE process: TE's global FP8 state starts afresh."""
    if os.environ.get("TE_MICROBATCH_BACKEND") != "te":
        return
    try:
        from transformer_engine.pytorch.quantization import FP8GlobalStateManager
    except ImportError:  # older TE
        from transformer_engine.pytorch.fp8 import FP8GlobalStateManager
    FP8GlobalStateManager.reset()


def leg_process(leg: str, plan_file: str) -> None:
    """Run leg ``leg`` of every job in the plan, in this process, one after the other."""
    from lint_rules.runtime.resume import run_leg

    plan = json.loads(Path(plan_file).read_text(encoding="utf-8"))
    work = Path(plan_file).parent
    steps, resume_at, device = plan["steps"], plan["resume_at"], plan["device"]
    planted = os.environ.get(MUTATION_ENV)
    for job in plan["jobs"]:
        _reset_te_state()
        i, spec, kwargs = job["i"], job["spec"], job["kwargs"]
        ckpt = work / f"B{i}.ckpt.pt"
        if leg in ("A", "A2"):
            # the planted error: the second straight run is not the same run
            seed = 1 if leg == "A2" and planted == "straight-runs-differ" else 0
            out = work / f"{leg}{i}.pt"
            run_leg(spec, steps=steps, out=out, device=device, factory_kwargs=kwargs, seed=seed)
        elif leg == "B":
            run_leg(
                spec,
                steps=resume_at,
                out=work / f"B{i}.pt",
                device=device,
                factory_kwargs=kwargs,
                save_at=resume_at,
                checkpoint=ckpt,
            )
            if planted == "leg-c-not-reset":  # the planted error: C goes on in B's process
                _continue_in_process(spec, kwargs, device, steps, ckpt, work / f"C{i}.pt")
        elif planted != "leg-c-not-reset":
            run_leg(
                spec,
                steps=steps,
                out=work / f"C{i}.pt",
                device=device,
                factory_kwargs=kwargs,
                resume_from=ckpt,
            )


def _continue_in_process(
    spec: str, kwargs: dict[str, Any], device: str, steps: int, ckpt: Path, out: Path
) -> None:
    """Test-only mutation: train B's own objects on to ``steps`` (no fresh process)."""
    import torch

    from lint_rules.runtime.resume import build_setup, train
    from lint_rules.runtime.snapshot import load_checkpoint, rng_state, rng_tensors

    setup = build_setup(spec, device=device, factory_kwargs=kwargs)
    start, digests = load_checkpoint(ckpt, setup)
    train(setup, 1, start)  # replays B in this process: the flag is already cleared
    load_checkpoint(ckpt, setup)
    train(setup, start + 1, steps, digests)
    tensors = {k: v.detach().cpu().clone() for k, v in setup.current_tensors().items()}
    result = {
        "step": steps,
        "resumed_from": start,
        "tensors": tensors,
        "rng": rng_tensors(rng_state()),
        "digests": digests,
    }
    torch.save(result, out)


def describe(configs: Sequence[LegConfig]) -> list[dict[str, Any]]:
    return [asdict(c) for c in configs]


if __name__ == "__main__":
    leg_process(sys.argv[1], sys.argv[2])
