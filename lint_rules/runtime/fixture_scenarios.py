"""Runtime scenarios on the suite's shared-layer model, runnable on any :class:`Backend`.

- :func:`gradient_oracle`: every step of a run (straight, then across an in-process resume),
  the shared layer's ``main_grad`` against the sum of per-depth gradients that plain autograd
  computes on an independent copy of the model, with the same data and dropout masks.
- :func:`resume_rng`: a save/resume in one process with or without restoring the RNG state;
  the model draws dropout masks while training, so forgetting the RNG shows.
- :func:`monitor_kinds`: which hazards the runtime monitor reports while the model trains.

Like :mod:`lint_rules.runtime.scenarios`, each returns an :class:`Outcome` whose label the
tests assert and ``gpu_check`` compares between the reference and real TE.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, cast

import torch
import torch.nn.functional as F

from lint_rules.runtime.backends import Backend
from lint_rules.runtime.own_state import load_own_state
from lint_rules.runtime.scenarios import (
    FP8_TOLERANCE,
    TOLERANCE,
    Outcome,
    combine,
    rel,
)
from lint_rules.runtime.shared_layer import build_shared_layer_training

FP8_RUN = {"hidden_size": 32, "micro_batch_size": 16, "lr": 0.1}
"""FP8 runs: shapes in multiples of 16 (TE checks them for FP8 GEMMs) and a large Adam step, so
that a stale quantized weight is far from the current one (measured on the reference: a stale
step is 0.6-0.75 off the oracle, a fresh one 0.03-0.04). The fp32 runs keep the defaults."""


def build(
    backend: Backend, variant: str, *, fp8: bool = False, source: str | None = None, **config: Any
) -> Any:
    """The fixture's ``Training`` for ``variant`` on ``backend`` (``fp8`` sets a DelayedScaling
    run with FP8-friendly shapes)."""
    if fp8:
        config = {"fp8": "hybrid", **FP8_RUN, **config}
    return build_shared_layer_training(
        variant, backend=backend.name, device=backend.device, seed=0, source=source, **config
    )


def _rng_state() -> tuple[torch.Tensor, list[torch.Tensor] | None]:
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    return torch.get_rng_state(), cuda


def _set_rng_state(state: tuple[torch.Tensor, list[torch.Tensor] | None]) -> None:
    torch.set_rng_state(state[0])
    if state[1] is not None:
        torch.cuda.set_rng_state_all(state[1])


def _independent_copy(model: Any) -> dict[str, torch.Tensor]:
    """Plain tensors of every parameter the forward uses, detached and cloned."""
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def _autograd_main_grad(
    params: dict[str, torch.Tensor], config: Any, batch: list[Any]
) -> torch.Tensor:
    """The fixture's ``train_step`` in plain torch with a separate leaf for the shared layer's
    weight at each depth; returns the sum of those leaves' gradients over depths and
    microbatches: what a correct ``mtp_layer.weight.main_grad`` holds after the step."""
    total = torch.zeros_like(params["mtp_layer.weight"])
    for x, targets in batch:
        leaves = [
            params["mtp_layer.weight"].clone().requires_grad_(True)
            for _ in range(config.mtp_num_layers)
        ]
        hidden = torch.tanh(F.linear(x, params["embedding.weight"], params["embedding.bias"]))
        hidden = F.dropout(hidden, p=config.dropout, training=True)
        loss: torch.Tensor | float = 0.0
        for depth, target in zip(leaves, targets):
            hidden = torch.tanh(F.linear(hidden, depth, params["mtp_layer.bias"]))
            prediction = F.linear(
                hidden, params["output_layer.weight"], params["output_layer.bias"]
            )
            loss = loss + F.mse_loss(prediction, target)
        loss = loss / len(batch)
        # a tensor: `targets` is never empty
        for grad in torch.autograd.grad(cast(torch.Tensor, loss), leaves):
            total += grad
    return total


def gradient_oracle(
    backend: Backend,
    variant: str = "fixed",
    *,
    fp8: bool = False,
    steps: int = 4,
    resume_at: int | None = 2,
    source: str | None = None,
    fp8_recipe: str = "current",
) -> Outcome:
    """Per step ``ok`` when ``main_grad:mtp_layer.weight`` equals the autograd oracle.

    At ``resume_at`` a new ``Training`` (a fresh process: flag True again, no FP8 workspace)
    loads the model and optimizer state, the RNG continuing as a restored checkpoint would.
    Tolerance: the accumulation tolerance of the backend in fp32; ``FP8_TOLERANCE`` under FP8
    (the oracle is computed in fp32, the model in FP8). A ``None`` that overwrote, or a fix
    that wrote ``False`` (stale FP8 weights), is far outside either.
    """
    extra = {"fp8_recipe": fp8_recipe} if fp8 else {}
    training = build(backend, variant, fp8=fp8, source=source, **extra)
    tol = FP8_TOLERANCE if fp8 else TOLERANCE[backend.name]
    per_step = []
    for step in range(1, steps + 1):
        if resume_at is not None and step == resume_at + 1:
            rng = _rng_state()
            fresh = build(backend, variant, fp8=fp8, source=source, **extra)
            load_own_state(fresh.model, training.model.state_dict())
            fresh.optimizer.load_state_dict(training.optimizer.state_dict())
            training = fresh
            _set_rng_state(rng)
        batch = training.batch(step)
        params = _independent_copy(training.model)
        before = _rng_state()
        training.train_step(batch)
        after = _rng_state()
        _set_rng_state(before)  # the same dropout masks for the oracle
        want = _autograd_main_grad(params, training.config, batch)
        _set_rng_state(after)
        err = rel(training.model.mtp_layer.weight.main_grad, want)
        per_step.append(Outcome("ok" if err <= tol else "off", f"step {step}: {err:.1e}"))
    return combine(per_step)


def oracle_expected(steps: int = 4) -> str:
    return ",".join(["ok"] * steps)


def resume_rng(
    backend: Backend, *, restore_rng: bool, steps: int = 4, resume_at: int = 2
) -> Outcome:
    """Straight run vs save at ``resume_at`` and resume in a new ``Training`` (fixed variant),
    with or without restoring the RNG state. Label ``identical`` or ``diverges at step K``."""
    from lint_rules.runtime.resume import ResumeSetup, train
    from lint_rules.runtime.snapshot import first_divergence, load_checkpoint, save_checkpoint

    def setup() -> ResumeSetup:
        t = build(backend, "fixed")
        return ResumeSetup(t.model, t.optimizer, t.batch, t.train_step)

    straight = train(setup(), 1, steps)
    first = setup()
    digests = train(first, 1, resume_at)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "ckpt.pt"
        save_checkpoint(path, first, resume_at, digests)
        second = setup()  # seeds the RNG again, as a fresh process would
        start, digests = load_checkpoint(path, second, restore_rng=restore_rng)
    resumed = train(second, start + 1, steps, digests)
    found = first_divergence(straight, resumed)
    return Outcome(
        "identical" if found is None else f"diverges at step {found[0]}",
        "" if found is None else ", ".join(found[1][:3]),
    )


def monitor_kinds(
    backend: Backend,
    variant: str,
    *,
    fp8: bool = False,
    steps: int = 3,
    **config: Any,
) -> Outcome:
    """Train with the runtime monitor attached (told about FP8 when ``fp8``); the label is the
    sorted hazard kinds it reported, ``+``-joined, or ``silent``."""
    from lint_rules.runtime.monitor import MicrobatchMonitor

    training = build(backend, variant, fp8=fp8, **config)
    found: list[Any] = []
    with MicrobatchMonitor(
        training.model, on_hazard=found.append, optimizer=training.optimizer, fp8=fp8
    ):
        for step in range(1, steps + 1):
            training.train_step(training.batch(step))
    kinds = sorted({h.kind for h in found})
    steps_seen = sorted({h.step for h in found})
    return Outcome("+".join(kinds) or "silent", f"steps {steps_seen}" if found else "")
