"""A pure-torch REFERENCE OF THE CONTRACT of TE's fused weight-gradient accumulation.

This is **not** Transformer Engine and does not try to be fast or complete. It implements, on
any device torch supports (CPU in CI), exactly the rule that ``docs/te-facts.md`` reads off
``transformer_engine.pytorch`` 2.20.2 (``module/linear.py`` and the other module files)::

    fuse_wgrad_accumulation off -> the wgrad GEMM writes a fresh tensor (autograd ``.grad``);
                                   the flag cannot overwrite anything.
    fuse_wgrad_accumulation on  -> the wgrad GEMM writes into ``weight.main_grad``:
        weight.overwrite_main_grad is True -> overwrite (beta = 0)
        is_first_microbatch is None        -> accumulate (beta = 1)
        is_first_microbatch is True        -> overwrite (beta = 0)
        is_first_microbatch is False       -> accumulate (beta = 1)

and, like TE, returns no weight gradient to autograd when it wrote ``main_grad`` (or a dummy
zero tensor when the weight carries Megatron's ``grad_added_to_main_grad`` attribute, which it
then sets to True). The quantized-weight cache that the flag also controls under FP8 has no
analogue here: under BF16/FP32 the flag only decides accumulation, and that is what the runtime
suite checks.

Why it exists: TE needs CUDA and a compiled extension, so CI could otherwise never run the
arithmetic the linter's advice rests on. The same scenarios run against real TE on a GPU
(``pytest -m gpu tests/runtime``), which is what keeps this reference honest.

The three module classes mirror TE's forward signatures, so the flag sits at the same
positional index as in TE: ``Linear.forward(inp, is_first_microbatch=None)``,
``LayerNormLinear.forward(inp, is_first_microbatch=None)``,
``GroupedLinear.forward(inp, m_splits, is_first_microbatch=None)``; parameter names follow TE
(``weight``/``bias``; ``layer_norm_weight``/``layer_norm_bias``; ``weight{i}``/``bias{i}``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable

import torch
import torch.nn.functional as F

__all__ = ["GroupedLinear", "LayerNormLinear", "Linear", "wgrad_accumulates"]

IS_REFERENCE = True
"""Lets a test or a model say which backend it got (``transformer_engine.pytorch`` lacks it)."""


def wgrad_accumulates(
    fuse_wgrad_accumulation: bool,
    is_first_microbatch: bool | None,
    overwrite_main_grad: bool = False,
) -> bool:
    """Whether the fused wgrad GEMM adds to ``main_grad`` (True) or overwrites it (False).

    The whole contract in one function, so that the tests can state expectations with the same
    rule the modules apply. Meaningless (False) when fusion is off: then no ``main_grad`` is
    touched at all.
    """
    if not fuse_wgrad_accumulation or overwrite_main_grad:
        return False
    if is_first_microbatch is None:
        return True
    return not is_first_microbatch


class _FusedWgradLinear(torch.autograd.Function):
    """``y = x W^T + b`` whose backward writes W's gradient as TE does (see module docstring)."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        inp: torch.Tensor,
        weight: torch.Tensor,
        bias: torch.Tensor | None,
        is_first_microbatch: bool | None,
        fuse_wgrad_accumulation: bool,
    ) -> torch.Tensor:
        ctx.save_for_backward(inp, weight)
        ctx.has_bias = bias is not None
        # TE captures the flag at forward time (ctx.is_first_microbatch) and decides in backward.
        ctx.is_first_microbatch = is_first_microbatch
        ctx.fuse_wgrad_accumulation = fuse_wgrad_accumulation
        ctx.weight_param = weight  # the Parameter itself, to reach its main_grad attribute
        return F.linear(inp, weight, bias)

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        inp, weight = ctx.saved_tensors
        g2 = grad_out.reshape(-1, grad_out.shape[-1])
        x2 = inp.reshape(-1, inp.shape[-1])
        dgrad = (g2 @ weight).reshape(inp.shape) if ctx.needs_input_grad[0] else None
        dbias = g2.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
        wgrad: torch.Tensor | None = None
        if ctx.needs_input_grad[1]:
            param = ctx.weight_param
            if ctx.fuse_wgrad_accumulation:
                main_grad = getattr(param, "main_grad", None)
                if main_grad is None:
                    raise RuntimeError(
                        "fuse_wgrad_accumulation=True needs a `main_grad` buffer on the weight "
                        "(TE raises as well); allocate it before backward"
                    )
                accumulate = wgrad_accumulates(
                    True,
                    ctx.is_first_microbatch,
                    bool(getattr(param, "overwrite_main_grad", False)),
                )
                a = g2.t().to(main_grad.dtype)
                b = x2.to(main_grad.dtype)
                if accumulate:
                    main_grad.addmm_(a, b)  # GEMM with beta = 1
                else:
                    torch.mm(a, b, out=main_grad)  # GEMM with beta = 0
                if hasattr(param, "grad_added_to_main_grad"):
                    # Megatron's DDP protocol: TE flags the write and hands autograd a dummy.
                    param.grad_added_to_main_grad = True
                    wgrad = torch.zeros_like(weight)
            else:
                wgrad = g2.t() @ x2
        return dgrad, wgrad, dbias, None, None


def _default_init(weight: torch.Tensor) -> None:
    """TE's default weight init (``normal_(mean=0, std=0.023)``), drawn from torch's RNG."""
    torch.nn.init.normal_(weight, mean=0.0, std=0.023)


class _FusedWgradBase(torch.nn.Module):
    """Shared construction for the reference modules (parameter creation and init)."""

    def __init__(
        self,
        fuse_wgrad_accumulation: bool,
        params_dtype: torch.dtype | None,
        device: torch.device | str | None,
        init_method: Callable[[torch.Tensor], None] | None,
    ) -> None:
        super().__init__()
        self.fuse_wgrad_accumulation = fuse_wgrad_accumulation
        self._factory = {
            "dtype": params_dtype if params_dtype is not None else torch.get_default_dtype(),
            "device": device if device is not None else "cpu",
        }
        self._init = init_method if init_method is not None else _default_init

    def _weight(self, out_features: int, in_features: int) -> torch.nn.Parameter:
        weight = torch.nn.Parameter(torch.empty(out_features, in_features, **self._factory))
        with torch.no_grad():
            self._init(weight)
        return weight

    def _bias(self, out_features: int) -> torch.nn.Parameter:
        return torch.nn.Parameter(torch.zeros(out_features, **self._factory))

    def _linear(
        self,
        inp: torch.Tensor,
        weight: torch.Tensor,
        bias: torch.Tensor | None,
        is_first_microbatch: bool | None,
    ) -> torch.Tensor:
        return _FusedWgradLinear.apply(
            inp, weight, bias, is_first_microbatch, self.fuse_wgrad_accumulation
        )


class Linear(_FusedWgradBase):
    """Reference of ``transformer_engine.pytorch.Linear``'s wgrad contract (NOT TE).

    ``forward(inp, is_first_microbatch=None)``: the flag is positional index 1, as in TE.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        *,
        fuse_wgrad_accumulation: bool = False,
        params_dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
        init_method: Callable[[torch.Tensor], None] | None = None,
    ) -> None:
        super().__init__(fuse_wgrad_accumulation, params_dtype, device, init_method)
        self.in_features = in_features
        self.out_features = out_features
        self.weight = self._weight(out_features, in_features)
        self.bias = self._bias(out_features) if bias else None

    def forward(self, inp: torch.Tensor, is_first_microbatch: bool | None = None) -> torch.Tensor:
        return self._linear(inp, self.weight, self.bias, is_first_microbatch)


class LayerNormLinear(_FusedWgradBase):
    """Reference of ``transformer_engine.pytorch.LayerNormLinear`` (LayerNorm then Linear).

    Only the linear weight takes the fused path; the LayerNorm parameters get ordinary
    autograd gradients, as in TE. ``forward(inp, is_first_microbatch=None)``.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        eps: float = 1e-5,
        bias: bool = True,
        *,
        fuse_wgrad_accumulation: bool = False,
        params_dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
        init_method: Callable[[torch.Tensor], None] | None = None,
    ) -> None:
        super().__init__(fuse_wgrad_accumulation, params_dtype, device, init_method)
        self.in_features = in_features
        self.out_features = out_features
        self.eps = eps
        self.layer_norm_weight = torch.nn.Parameter(torch.ones(in_features, **self._factory))
        self.layer_norm_bias = torch.nn.Parameter(torch.zeros(in_features, **self._factory))
        self.weight = self._weight(out_features, in_features)
        self.bias = self._bias(out_features) if bias else None

    def forward(self, inp: torch.Tensor, is_first_microbatch: bool | None = None) -> torch.Tensor:
        normed = F.layer_norm(
            inp, (self.in_features,), self.layer_norm_weight, self.layer_norm_bias, self.eps
        )
        return self._linear(normed, self.weight, self.bias, is_first_microbatch)


class GroupedLinear(_FusedWgradBase):
    """Reference of ``transformer_engine.pytorch.GroupedLinear``: one GEMM per row split.

    ``forward(inp, m_splits, is_first_microbatch=None)``: the flag is positional index 2, as in
    TE; split ``i`` of the rows goes through ``weight{i}`` (each with its own ``main_grad``).
    """

    def __init__(
        self,
        num_gemms: int,
        in_features: int,
        out_features: int,
        *,
        bias: bool = True,
        fuse_wgrad_accumulation: bool = False,
        params_dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
        init_method: Callable[[torch.Tensor], None] | None = None,
    ) -> None:
        super().__init__(fuse_wgrad_accumulation, params_dtype, device, init_method)
        self.num_gemms = num_gemms
        self.in_features = in_features
        self.out_features = out_features
        self.use_bias = bias
        for i in range(num_gemms):
            self.register_parameter(f"weight{i}", self._weight(out_features, in_features))
            self.register_parameter(f"bias{i}", self._bias(out_features) if bias else None)

    def forward(
        self,
        inp: torch.Tensor,
        m_splits: Sequence[int],
        is_first_microbatch: bool | None = None,
    ) -> torch.Tensor:
        if len(m_splits) != self.num_gemms:
            raise ValueError(f"m_splits has {len(m_splits)} entries, expected {self.num_gemms}")
        if sum(m_splits) != inp.shape[0]:
            raise ValueError(f"m_splits sum to {sum(m_splits)}, input has {inp.shape[0]} rows")
        outs = [
            self._linear(
                chunk, getattr(self, f"weight{i}"), getattr(self, f"bias{i}"), is_first_microbatch
            )
            for i, chunk in enumerate(torch.split(inp, list(m_splits)))
        ]
        return torch.cat(outs) if outs else inp.new_empty(0, self.out_features)
