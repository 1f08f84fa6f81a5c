"""Scenarios on the Megatron-shaped fixture (:mod:`lint_rules.runtime.megatron_shape`).

- :func:`megatron_oracle`: per step, whether the repeated layer's fp32 ``main_grad`` kept every
  depth (``kept``) or lost depth 2 of the first microbatch (``lost``), against plain autograd
  with a separate leaf per depth; across an in-process resume.
- :func:`megatron_monitor`: the runtime monitor on the model after a resume.
- :func:`fsdp_overwrite`: ``overwrite_main_grad=True`` (Megatron-FSDP): ``None`` does not save a
  shared layer; building it without fused wgrad does.
- :func:`reentrant_recompute`: reentrant activation recompute reads the flag again in backward.

Each returns an :class:`~lint_rules.runtime.scenarios.Outcome` like the other scenarios.
"""

from __future__ import annotations

from typing import Any, cast

import torch
import torch.nn.functional as F

from lint_rules.runtime import tolerances as tol
from lint_rules.runtime.backends import Backend
from lint_rules.runtime.megatron_shape import build_megatron_training
from lint_rules.runtime.own_state import load_own_state
from lint_rules.runtime.scenarios import Outcome, all_same, classify, combine

WEIGHTS = ("mtp.layers.0.linear_fc1.weight", "mtp.layers.0.linear_fc2.weight")
GROUPED_WEIGHTS = tuple(f"mtp.layers.0.linear_fc{j}.weight{i}" for j in (1, 2) for i in (0, 1))
"""``mtp_linear="grouped"``: ``TEGroupedLinear`` with two GEMMs, each on half the tokens."""
SEPARATION = 0.05
SIZES = {"hidden_size": 256, "ffn_hidden_size": 256, "micro_batch_size": 16}
"""Production-like widths, few tokens: the CPU run of the whole GPU command stays short."""


def build(backend: Backend, variant: str, fp8: str | None = None, **config: Any) -> Any:
    """The fixture's ``Training``; ``fp8`` is a recipe name (``delayed``/``current``) or None."""
    if fp8 is not None:
        recipe = {"delayed": "delayed", "current": "tensorwise"}[fp8]
        config = {"fp8": "hybrid", "fp8_recipe": recipe, "num_microbatches": 1, **config}
    config = {**SIZES, **config}
    return build_megatron_training(variant, backend=backend.name, device=backend.device, **config)


def tolerance(fp8: str | None) -> float:
    """bf16 throughout (embedding, tanh, per depth and GEMM: input, output, GELU, residual,
    incoming gradient); under FP8 also E4M3 operands and E5M2 gradients of 2 GEMMs x 2 depths."""
    if fp8 is None:
        return tol.rounding_tolerance(bf16=24)
    return tol.rounding_tolerance(e4m3=8, e5m2=4, bf16=24)


def shared_weights(training: Any) -> tuple[str, ...]:
    """The repeated layer's fused weights (TE's names)."""
    return GROUPED_WEIGHTS if training.config.mtp_linear == "grouped" else WEIGHTS


def _fc(
    j: int, x: torch.Tensor, leaf: dict[str, torch.Tensor], p: dict[str, torch.Tensor]
) -> torch.Tensor:
    """``linear_fc{j}`` in plain torch with the depth's own weight leaves."""
    prefix = f"mtp.layers.0.linear_fc{j}."
    if prefix + "weight" in leaf:
        return F.linear(x, leaf[prefix + "weight"], p[prefix + "bias"])
    half = x.shape[0] // 2  # the fixture's m_splits: two halves
    chunks = torch.split(x, [half, x.shape[0] - half])
    return torch.cat(
        [
            F.linear(c, leaf[f"{prefix}weight{i}"], p[f"{prefix}bias{i}"])
            for i, c in enumerate(chunks)
        ]
    )


def _oracle(training: Any, batch: list[Any]) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Per shared weight: (kept, lost), the sums plain autograd gives with and without depth 2
    of microbatch 0, from fp32 copies of the current (bf16) parameters."""
    names = shared_weights(training)
    p = {n: t.detach().float() for n, t in training.model.named_parameters()}
    kept = {w: torch.zeros_like(p[w]) for w in names}
    lost = {w: torch.zeros_like(p[w]) for w in names}
    for mb, (x, targets) in enumerate(batch):
        leaves = [{w: p[w].clone().requires_grad_(True) for w in names} for _ in targets]
        hidden = torch.tanh(F.linear(x.float(), p["embedding.weight"], p["embedding.bias"]))
        loss: torch.Tensor | float = 0.0
        for depth, target in zip(leaves, targets):
            act = F.gelu(_fc(1, hidden, depth, p), approximate="tanh")
            hidden = hidden + _fc(2, act, depth, p)
            out = F.linear(hidden, p["output_layer.weight"], p["output_layer.bias"])
            loss = loss + F.mse_loss(out, target)
        loss = loss / len(batch)
        # a tensor: `targets` is never empty
        grads = torch.autograd.grad(cast(torch.Tensor, loss), [d[w] for d in leaves for w in names])
        for i, grad in enumerate(grads):
            at_depth, name = divmod(i, len(names))
            kept[names[name]] += grad
            if not (mb == 0 and at_depth == 1):
                lost[names[name]] += grad
    return {w: (kept[w], lost[w]) for w in names}


def megatron_oracle(
    backend: Backend,
    variant: str,
    *,
    fp8: str | None = None,
    steps: int = 4,
    resume_at: int | None = 2,
    **config: Any,
) -> Outcome:
    """Per step ``kept`` or ``lost``; at ``resume_at`` a new ``Training`` (a fresh process:
    flags True again) loads the model and optimizer state. ``config``: fixture fields
    (``mtp_linear="grouped"``)."""
    training = build(backend, variant, fp8, **config)
    limit = tolerance(fp8)
    # under FP8 the depths' gradients are ~0.4 apart: the other candidate must be outside the
    # tolerance, which is the most a derived tolerance allows
    separation = SEPARATION if fp8 is None else limit
    per_step = []
    for step in range(1, steps + 1):
        if resume_at is not None and step == resume_at + 1:
            fresh = build(backend, variant, fp8, **config)
            load_own_state(fresh.model, training.model.state_dict())
            fresh.optimizer.load_state_dict(training.optimizer.state_dict())
            training = fresh
        batch = training.batch(step)
        want = _oracle(training, batch)
        training.train_step(batch)
        params = dict(training.model.named_parameters())
        found = [
            classify(params[w].main_grad, {"kept": k, "lost": m}, limit, separation)
            for w, (k, m) in want.items()
        ]
        per_step.append(all_same(found))
    return combine(per_step)


def megatron_expected(variant: str, fp8: str | None, steps: int = 4, resume_at: int = 2) -> str:
    """What a correct TE gives: without FP8 the unguarded flag is True at the first step of
    each process (lost there); under FP8 it is re-armed every step unless it is None."""
    labels = []
    for step in range(1, steps + 1):
        first_of_process = step in (1, resume_at + 1)
        if variant == "none" or (fp8 is None and variant == "guarded"):
            labels.append("kept")
        elif fp8 is not None:
            labels.append("lost")
        else:
            labels.append("lost" if first_of_process else "kept")
    return ",".join(labels)


def megatron_monitor(
    backend: Backend,
    variant: str,
    *,
    fp8: str | None = None,
    steps: int = 3,
    resume_at: int = 1,
    **config: Any,
) -> Outcome:
    """Train ``resume_at`` steps, resume in a new ``Training`` with the monitor attached (told
    about FP8), train on; the label is the hazard kinds reported after the resume."""
    from lint_rules.runtime.monitor import MicrobatchMonitor

    first = build(backend, variant, fp8, **config)
    for step in range(1, resume_at + 1):
        first.train_step(first.batch(step))
    training = build(backend, variant, fp8, **config)
    load_own_state(training.model, first.model.state_dict())
    training.optimizer.load_state_dict(first.optimizer.state_dict())
    found: list[Any] = []
    with MicrobatchMonitor(
        training.model, on_hazard=found.append, optimizer=training.optimizer, fp8=fp8 is not None
    ):
        for step in range(resume_at + 1, steps + 1):
            training.train_step(training.batch(step))
    kinds = sorted({h.kind for h in found})
    where = sorted({f"{h.path}@{h.step}" for h in found})
    return Outcome("+".join(kinds) or "silent", ", ".join(where))


def fsdp_overwrite(backend: Backend, *, fused: bool = True) -> Outcome:
    """``none`` variant with ``overwrite_main_grad=True`` on the TE weights (Megatron-FSDP), one
    step of one microbatch: ``lost`` with fused wgrad (TE overwrites on every call, so depth 1's
    write discards depth 2's), ``kept`` without fusion (autograd sums a fresh wgrad per call)."""
    training = build(
        backend, "none", overwrite_main_grad=True, num_microbatches=1, fuse_wgrad_accumulation=fused
    )
    batch = training.batch(1)
    want = _oracle(training, batch)
    training.ddp.zero_grad_buffer()
    for x, targets in batch:
        outputs = training.model(x)
        total = sum(F.mse_loss(o.float(), t) for o, t in zip(outputs, targets))
        loss = cast(torch.Tensor, total) / len(batch)  # a tensor: `targets` is never empty
        loss.backward()
    if fused:
        training.ddp.finish_grad_sync()
    params = dict(training.model.named_parameters())
    found = []
    for name, (kept, lost) in want.items():
        got = params[name].main_grad if fused else params[name].grad.float()
        found.append(classify(got, {"kept": kept, "lost": lost}, tolerance(None), SEPARATION))
    return all_same(found)


def reentrant_recompute(backend: Backend, variant: str, *, recompute: bool) -> Outcome:
    """The unguarded (or ``none``) model without sharing, one step of two microbatches, with a
    ``main_grad`` that still holds the previous step's gradient (a loop that relies on ``True``
    to overwrite instead of zeroing). Label: ``overwritten`` (``main_grad`` is this step's
    gradient) or ``accumulated`` (previous + this step's). Reentrant recompute runs the
    grad-carrying forward again in backward, where the wrapper reads its flag again: it was
    cleared by the first forward, so TE sees ``False`` and accumulates."""
    training = build(
        backend, variant, mtp_use_repeated_layer=False, mtp_num_layers=1, recompute=recompute
    )
    params = dict(training.model.named_parameters())
    name = "mtp.layers.0.linear_fc1.weight"
    previous = torch.randn_like(params[name].main_grad)
    batch = training.batch(1)
    this_step = _oracle_single(training, batch, name)
    params[name].main_grad.copy_(previous)
    for x, targets in batch:
        outputs = training.model(x)
        total = sum(F.mse_loss(o.float(), t) for o, t in zip(outputs, targets))
        loss = cast(torch.Tensor, total) / len(batch)  # a tensor: `targets` is never empty
        loss.backward()
    candidates = {"overwritten": this_step, "accumulated": previous + this_step}
    return classify(params[name].main_grad, candidates, tolerance(None), SEPARATION)


def _oracle_single(training: Any, batch: list[Any], name: str) -> torch.Tensor:
    """The one-depth gradient of ``name`` summed over microbatches (no sharing: kept == lost)."""
    return _oracle(training, batch)[name][0] if name in WEIGHTS else torch.zeros(())
