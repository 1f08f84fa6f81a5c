"""Training state as named tensors, per-step digests, checkpoints and bitwise comparison.

The half of the resume check that does not orchestrate anything: what a leg saves and how two
legs are compared (:mod:`lint_rules.runtime.resume` runs the legs). Imports torch only inside
functions, like the rest of ``lint_rules``.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - typing only
    import torch

__all__ = [
    "CompareReport",
    "TensorDiff",
    "bitwise_equal",
    "compare_leg_outputs",
    "compare_states",
    "first_divergence",
    "load_checkpoint",
    "rng_state",
    "rng_tensors",
    "save_checkpoint",
    "set_rng_state",
    "state_tensors",
    "tensor_digests",
    "torch_load",
]

# --------------------------------------------------------------------------------------------
# State, digests, checkpoints


def state_tensors(model: Any, optimizer: Any = None) -> dict[str, torch.Tensor]:
    """Every tensor that defines the training state, under readable names.

    ``param:<name>``, ``main_grad:<name>`` (the fused-wgrad buffer Megatron and TE use; it is
    where a lost gradient shows first), ``grad:<name>``, ``buffer:<name>`` and
    ``optim:<param name>.<key>`` for the optimizer's per-parameter state.
    """
    import torch

    out: dict[str, torch.Tensor] = {}
    names: dict[int, str] = {}
    for name, param in model.named_parameters():
        names[id(param)] = name
        out[f"param:{name}"] = param.detach()
        main_grad = getattr(param, "main_grad", None)
        if isinstance(main_grad, torch.Tensor):
            out[f"main_grad:{name}"] = main_grad.detach()
        if param.grad is not None:
            out[f"grad:{name}"] = param.grad.detach()
    for name, buf in model.named_buffers():
        out[f"buffer:{name}"] = buf.detach()
    if optimizer is not None:
        index = 0
        for group in optimizer.param_groups:
            for param in group["params"]:
                label = names.get(id(param), f"#{index}")
                index += 1
                for key, value in optimizer.state.get(param, {}).items():
                    if isinstance(value, torch.Tensor):
                        out[f"optim:{label}.{key}"] = value.detach()
                    elif isinstance(value, (int, float)):
                        out[f"optim:{label}.{key}"] = torch.tensor(value, dtype=torch.float64)
    return out


def _raw_bytes(tensor: torch.Tensor) -> bytes:
    """The tensor's element bytes (any dtype), as stored: the unit of "bitwise"."""
    import torch

    flat = tensor.detach().cpu().contiguous().reshape(-1)
    as_bytes = flat.view(torch.uint8) if flat.dtype != torch.uint8 else flat
    try:
        return as_bytes.numpy().tobytes()
    except (RuntimeError, TypeError):  # torch without numpy
        return bytes(as_bytes.tolist())


def tensor_digests(tensors: Mapping[str, torch.Tensor]) -> dict[str, str]:
    """sha256 per tensor over dtype, shape and raw bytes (equal digests: bitwise equal)."""
    out: dict[str, str] = {}
    for name in sorted(tensors):
        tensor = tensors[name]
        h = hashlib.sha256(f"{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        h.update(_raw_bytes(tensor))
        out[name] = h.hexdigest()
    return out


def rng_state() -> dict[str, Any]:
    import torch

    state: dict[str, Any] = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: Mapping[str, Any]) -> None:
    import torch

    torch.set_rng_state(state["torch"])
    python_state = state["python"]
    random.setstate((python_state[0], tuple(python_state[1]), python_state[2]))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def rng_tensors(state: Mapping[str, Any]) -> dict[str, torch.Tensor]:
    out = {"rng:torch": state["torch"]}
    for i, cuda_state in enumerate(state.get("cuda", [])):
        out[f"rng:cuda{i}"] = cuda_state
    return out


def torch_load(path: str | Path) -> Any:
    """Load a checkpoint or leg output (tensors, dicts, numbers) onto the CPU.

    ``weights_only=True`` first. A model's ``state_dict`` may carry non-tensor extra state
    (TE modules keep FP8 metadata in ``_extra_state``; older TE releases as a ``BytesIO``),
    which that loader refuses; these are files the harness itself wrote into the work folder,
    so it then retries with the full unpickler.
    """
    import pickle

    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        return torch.load(path, map_location="cpu", weights_only=False)


def save_checkpoint(
    path: str | Path, setup: Any, step: int, digests: Mapping[int, Mapping[str, str]]
) -> None:
    """Save what a resume needs: model, optimizer, RNG state, step and digests so far."""
    import torch

    torch.save(
        {
            "step": step,
            "model": setup.model.state_dict(),
            "optimizer": setup.optimizer.state_dict(),
            "rng": rng_state(),
            "digests": {int(k): dict(v) for k, v in digests.items()},
        },
        path,
    )


def load_checkpoint(
    path: str | Path, setup: Any, *, restore_rng: bool = True
) -> tuple[int, dict[int, dict[str, str]]]:
    """Restore model, optimizer and RNG state in place; return (step, digests so far).

    ``restore_rng=False`` leaves the RNG as it is: a deliberately broken resume, which the
    runtime suite uses to show that the comparison sees a forgotten RNG state.
    """
    ckpt = torch_load(path)
    from lint_rules.runtime.own_state import load_own_state

    load_own_state(setup.model, ckpt["model"])  # a file the harness wrote itself
    setup.optimizer.load_state_dict(ckpt["optimizer"])
    if restore_rng:
        set_rng_state(ckpt["rng"])
    return int(ckpt["step"]), {int(k): dict(v) for k, v in ckpt["digests"].items()}


# --------------------------------------------------------------------------------------------
# Comparison


@dataclass(frozen=True)
class TensorDiff:
    """How one named tensor differs between two states."""

    name: str
    reason: str  # "missing in A", "missing in B", "dtype", "shape" or "values"
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.name}: {self.reason}" + (f" ({self.detail})" if self.detail else "")


def bitwise_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """True iff dtype, shape and every stored byte agree (``-0.0 != 0.0``, NaN == same NaN)."""
    import torch

    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    ua = a.detach().cpu().contiguous().reshape(-1)
    ub = b.detach().cpu().contiguous().reshape(-1)
    if ua.dtype != torch.uint8:
        ua, ub = ua.view(torch.uint8), ub.view(torch.uint8)
    return torch.equal(ua, ub)


def _value_detail(a: torch.Tensor, b: torch.Tensor) -> str:
    import torch

    a, b = a.detach().cpu(), b.detach().cpu()
    if a.is_floating_point() or a.is_complex():
        neq = ~((a == b) & (torch.signbit(a.real) == torch.signbit(b.real)))
        neq |= torch.isnan(a) ^ torch.isnan(b)
        gap = (a.double() - b.double()).abs()
        gap = gap[torch.isfinite(gap)]
        worst = f", max |a-b| = {gap.max().item():.3e}" if gap.numel() else ""
        scale = a.double().abs().max().item() if a.numel() else 0.0
        return f"{int(neq.sum())} of {a.numel()} elements differ{worst}, max |a| = {scale:.3e}"
    neq = a != b
    return f"{int(neq.sum())} of {a.numel()} elements differ"


def compare_states(
    a: Mapping[str, torch.Tensor], b: Mapping[str, torch.Tensor]
) -> list[TensorDiff]:
    """Bitwise comparison of two name -> tensor maps: one entry per differing name.

    Sorted gradient buffers first, then parameters, optimizer state, buffers and RNG state.
    """
    diffs: list[TensorDiff] = []
    for name in sorted(set(a) | set(b), key=_report_order):
        if name not in a:
            diffs.append(TensorDiff(name, "missing in A"))
        elif name not in b:
            diffs.append(TensorDiff(name, "missing in B"))
        elif a[name].dtype != b[name].dtype:
            diffs.append(TensorDiff(name, "dtype", f"{a[name].dtype} vs {b[name].dtype}"))
        elif a[name].shape != b[name].shape:
            diffs.append(
                TensorDiff(name, "shape", f"{tuple(a[name].shape)} vs {tuple(b[name].shape)}")
            )
        elif not bitwise_equal(a[name], b[name]):
            diffs.append(TensorDiff(name, "values", _value_detail(a[name], b[name])))
    return diffs


_KIND_ORDER = {"main_grad": 0, "grad": 1, "param": 2, "optim": 3, "buffer": 4, "rng": 5}


def _report_order(name: str) -> tuple[int, str]:
    """Sort key: the gradient buffers first, since that is where a lost gradient shows first."""
    kind, sep, _ = name.partition(":")
    return (_KIND_ORDER.get(kind, 9) if sep else 9, name)


def first_divergence(
    a: Mapping[int, Mapping[str, str]], b: Mapping[int, Mapping[str, str]]
) -> tuple[int, list[str]] | None:
    """The first step (of those both recorded) whose digests differ, and the tensors that do."""
    for step in sorted(set(a) & set(b)):
        da, db = a[step], b[step]
        names = sorted((n for n in set(da) | set(db) if da.get(n) != db.get(n)), key=_report_order)
        if names:
            return step, names
    return None


@dataclass
class CompareReport:
    """The answer to "are these two runs the same?", readable as text (``str(report)``)."""

    label_a: str
    label_b: str
    first_step: int | None
    step_tensors: list[str]
    final_diffs: list[TensorDiff]
    compared: int
    steps_compared: int
    resumed_at: int | None = None

    @property
    def identical(self) -> bool:
        return self.first_step is None and not self.final_diffs

    def __str__(self) -> str:
        head = f"{self.label_a} vs {self.label_b}: "
        if self.identical:
            return (
                head + f"byte-identical ({self.compared} tensors at the end, "
                f"{self.steps_compared} steps of digests)"
            )
        lines = [head + "DIFFERENT"]
        if self.first_step is not None:
            where = ""
            if self.resumed_at is not None:
                if self.first_step == self.resumed_at + 1:
                    where = f" (the first step after resuming from step {self.resumed_at})"
                elif self.first_step <= self.resumed_at:
                    where = f" (before the resume at step {self.resumed_at})"
            shown = ", ".join(self.step_tensors[:6])
            more = len(self.step_tensors) - 6
            lines.append(f"  first differing step: {self.first_step}{where}")
            lines.append(
                f"  tensors differing after that step: {shown}"
                + (f" and {more} more" if more > 0 else "")
            )
        if self.final_diffs:
            lines.append(
                f"  final state: {len(self.final_diffs)} of {self.compared} tensors differ; "
                f"first: {self.final_diffs[0]}"
            )
        return "\n".join(lines)


def compare_leg_outputs(
    path_a: str | Path,
    path_b: str | Path,
    *,
    label_a: str = "A",
    label_b: str = "B",
) -> CompareReport:
    """Compare two leg output files (final tensors, RNG state and per-step digests)."""
    a, b = torch_load(path_a), torch_load(path_b)
    state_a = {**a["tensors"], **a["rng"]}
    state_b = {**b["tensors"], **b["rng"]}
    digests_a = {int(k): v for k, v in a["digests"].items()}
    digests_b = {int(k): v for k, v in b["digests"].items()}
    found = first_divergence(digests_a, digests_b)
    resumed = b.get("resumed_from") if b.get("resumed_from") is not None else a.get("resumed_from")
    return CompareReport(
        label_a=label_a,
        label_b=label_b,
        first_step=found[0] if found else None,
        step_tensors=found[1] if found else [],
        final_diffs=compare_states(state_a, state_b),
        compared=len(set(state_a) | set(state_b)),
        steps_compared=len(set(digests_a) & set(digests_b)),
        resumed_at=resumed,
    )
