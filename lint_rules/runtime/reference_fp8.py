"""The FP8 half of the reference of TE's contract (NOT TE): recipes, autocast, the casts.

Re-exported by :mod:`lint_rules.runtime.reference_te`, which the scenarios use as a stand-in
for ``transformer_engine.pytorch``. What it models (TE 2.20.2, ``pytorch/quantization.py`` and
``common/recipe``):

- ``autocast(enabled, calibrating, recipe, amax_reduction_group, _graph)`` and the deprecated
  ``fp8_autocast(enabled, calibrating, fp8_recipe, fp8_group, _graph)``;
- the recipes ``DelayedScaling`` and ``Float8CurrentScaling`` (fields kept; both are modelled
  as current scaling: each tensor is scaled from its own amax, which is what
  ``Float8CurrentScaling`` does and what ``DelayedScaling`` converges to; TE's first
  ``DelayedScaling`` step uses scale 1, see docs/runtime.md for why the tolerances allow it);
- the ``HYBRID`` format: E4M3 for the forward operands (inputs and weights), E5M2 for the
  gradients in backward; ``E4M3`` uses E4M3 for both;
- ``is_fp8_available(return_reason=False)``: always available on the reference.

``TE_MICROBATCH_REFERENCE_MUTATION`` (test-only; see :func:`mutation`) switches one rule of the
reference off, so the tests can show that the GPU command fails on a wrong reference.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from lint_rules.runtime.mutations import MUTATION_ENV, MUTATIONS, mutation

__all__ = [
    "MUTATIONS",
    "MUTATION_ENV",
    "DelayedScaling",
    "Float8CurrentScaling",
    "Format",
    "active_format",
    "active_recipe",
    "autocast",
    "fp8_autocast",
    "is_fp8_available",
    "is_fp8_enabled",
    "mutation",
    "quantize",
    "quantize_grad",
]

FP8_DTYPE = torch.float8_e4m3fn
FP8_MAX = float(torch.finfo(FP8_DTYPE).max)  # 448
E5M2_DTYPE = torch.float8_e5m2
E5M2_MAX = float(torch.finfo(E5M2_DTYPE).max)  # 57344


class Format:
    """``transformer_engine.common.recipe.Format`` (names only)."""

    E4M3 = "E4M3"
    HYBRID = "HYBRID"


@dataclass
class DelayedScaling:
    """Stand-in for ``transformer_engine.common.recipe.DelayedScaling`` (fields kept)."""

    margin: int = 0
    fp8_format: str = Format.HYBRID
    amax_history_len: int = 1024
    amax_compute_algo: str = "max"
    reduce_amax: bool = True


@dataclass
class Float8CurrentScaling:
    """Stand-in for ``transformer_engine.common.recipe.Float8CurrentScaling``."""

    fp8_format: str = Format.HYBRID


_FP8: dict[str, Any] = {"enabled": False, "recipe": None}


@contextlib.contextmanager
def autocast(
    enabled: bool = True,
    calibrating: bool = False,
    recipe: Any = None,
    amax_reduction_group: Any = None,
    _graph: bool = False,
) -> Iterator[None]:
    """TE's ``autocast`` signature: modules called inside quantize to FP8."""
    saved = dict(_FP8)
    _FP8["enabled"] = bool(enabled)
    _FP8["recipe"] = recipe if recipe is not None else DelayedScaling()
    try:
        yield
    finally:
        _FP8.update(saved)


def fp8_autocast(
    enabled: bool = True,
    calibrating: bool = False,
    fp8_recipe: Any = None,
    fp8_group: Any = None,
    _graph: bool = False,
) -> contextlib.AbstractContextManager[None]:
    """TE's deprecated ``fp8_autocast`` signature; the same as :func:`autocast`."""
    return autocast(enabled, calibrating, fp8_recipe, fp8_group, _graph)


def is_fp8_enabled() -> bool:
    return bool(_FP8["enabled"])


def is_fp8_available(return_reason: bool = False) -> bool | tuple[bool, str]:
    """TE's gate; the reference can always quantize."""
    return (True, "") if return_reason else True


def _cast(tensor: torch.Tensor, dtype: torch.dtype, top: float) -> torch.Tensor:
    t = tensor.detach()
    if t.numel() == 0:  # an empty split of a GroupedLinear (an expert that got no tokens)
        return t.clone()
    amax = t.abs().max().float()
    scale = torch.where(amax > 0, top / amax, torch.ones_like(amax))
    return ((t.float() * scale).to(dtype).float() / scale).to(t.dtype).contiguous()


def quantize(tensor: torch.Tensor) -> torch.Tensor:
    """Round ``tensor`` through float8_e4m3fn with a per-tensor scale; back in its own dtype."""
    return _cast(tensor, FP8_DTYPE, FP8_MAX)


def active_format() -> str:
    """The FP8 format of the recipe in force (read at forward; backward runs outside)."""
    return str(getattr(_FP8["recipe"], "fp8_format", Format.HYBRID))


def active_recipe() -> Any:
    """The recipe of the autocast region in force (None outside one)."""
    return _FP8["recipe"] if _FP8["enabled"] else None


def quantize_grad(tensor: torch.Tensor, fp8_format: str = Format.HYBRID) -> torch.Tensor:
    """A gradient as ``fp8_format`` has it: E5M2 under HYBRID, E4M3 under E4M3."""
    if fp8_format == Format.HYBRID:
        return _cast(tensor, E5M2_DTYPE, E5M2_MAX)
    return quantize(tensor)
