"""A pure-torch REFERENCE OF THE CONTRACT of TE's fused wgrad and FP8 weight cache (NOT TE).

This is not Transformer Engine and does not try to be fast or complete. It implements, on any
device torch supports (CPU in CI), exactly the rules read off ``transformer_engine.pytorch``
2.20.2 (``module/linear.py`` and the other module files; see docs/te-facts.md)::

    fuse_wgrad_accumulation off -> the wgrad GEMM writes a fresh tensor (autograd ``.grad``);
                                   the flag cannot overwrite anything.
    fuse_wgrad_accumulation on  -> the wgrad GEMM writes into ``weight.main_grad``:
        weight.overwrite_main_grad is True -> overwrite (beta = 0); read at FORWARD time, and
                                              for GroupedLinear from ``weight0`` only
        is_first_microbatch is None        -> accumulate (beta = 1)
        is_first_microbatch is True        -> overwrite (beta = 0)
        is_first_microbatch is False       -> accumulate (beta = 1)

After writing ``main_grad`` it returns no weight gradient to autograd, or, when the weight has
Megatron's ``grad_added_to_main_grad`` attribute, sets that to True and returns a dummy: an
UNINITIALISED tensor (``torch.empty``), or zeros when the weight has ``zero_out_wgrad=True``.

FP8 (inside :func:`fp8_autocast`), per weight, decided at forward as TE does::

    cache  = None if is_first_microbatch is None else "weight"   (linear.py line 2443)
    update = is_first_microbatch is None or is_first_microbatch   (line 577)
    True  -> quantize the current weight, store it in the module's workspace
    None  -> quantize the current weight, store nothing
    False -> reuse the stored workspace as it is (quantize and store only if there is none)

The casts are real (:mod:`lint_rules.runtime.reference_fp8`): ``torch.float8_e4m3fn`` with a
per-tensor scale from the tensor's own amax for weights and inputs, and under the ``HYBRID``
format ``torch.float8_e5m2`` for the gradients in backward, so a stale workspace shows in the
outputs and gradients. TE's numbers differ (``DelayedScaling`` scales from an amax history);
the runtime suite compares outcomes (which gradients survive, which weights a forward used),
never TE's bits.

Saved FP8 state and what changes with TE's release (the refusal of pickled ``DelayedScaling``
state from 2.18, ``overwrite_main_grad`` from 2.9) are in
:mod:`lint_rules.runtime.reference_state`.

Module classes take TE's constructor arguments in TE's order up to ``device``, and TE's options
after it by keyword (parallelism and communication options must keep their defaults here:
:mod:`lint_rules.runtime.reference_options`), and TE's forward signatures, so the flag sits at
the same positional index: ``Linear``/``LayerNormLinear``/``LayerNormMLP``
``.forward(inp, is_first_microbatch=None)``, ``GroupedLinear.forward(inp, m_splits,
is_first_microbatch=None)``. Parameter names follow TE (``weight``/``bias``;
``layer_norm_weight``/``layer_norm_bias``; ``fc1_weight``/``fc1_bias``/``fc2_weight``/
``fc2_bias``; ``weight{i}``/``bias{i}``). Deviation: ``device`` defaults to the CPU, not CUDA.

Why it exists: TE needs CUDA and a compiled extension, so CI could otherwise never run the
arithmetic the linter's advice rests on. ``python -m lint_rules.runtime.gpu_check`` runs the same
scenarios on real TE and this reference and says where they differ; docs/runtime.md says which
scenarios have run on real TE.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable, TypedDict

import torch
import torch.nn.functional as F

from lint_rules.runtime.reference_fp8 import (
    FP8_DTYPE,
    FP8_MAX,
    MUTATION_ENV,
    MUTATIONS,
    DelayedScaling,
    Float8CurrentScaling,
    Format,
    active_format,
    active_recipe,
    autocast,
    fp8_autocast,
    is_fp8_available,
    is_fp8_enabled,
    mutation,
    quantize,
    quantize_grad,
)
from lint_rules.runtime.reference_options import after_device as _after_device
from lint_rules.runtime.reference_options import only_defaults as _only_defaults
from lint_rules.runtime.reference_state import ExtraState, honours_overwrite_main_grad

__all__ = [
    "FP8_DTYPE",
    "FP8_MAX",
    "MUTATIONS",
    "MUTATION_ENV",
    "DelayedScaling",
    "Float8CurrentScaling",
    "Format",
    "autocast",
    "is_fp8_available",
    "mutation",
    "quantize_grad",
    "GroupedLinear",
    "LayerNormLinear",
    "LayerNormMLP",
    "Linear",
    "fp8_autocast",
    "is_fp8_enabled",
    "quantize",
    "wgrad_accumulates",
]

IS_REFERENCE = True
"""Lets a test or a model say which backend it got (``transformer_engine.pytorch`` lacks it)."""


def wgrad_accumulates(
    fuse_wgrad_accumulation: bool,
    is_first_microbatch: bool | None,
    overwrite_main_grad: bool = False,
) -> bool:
    """Whether the fused wgrad GEMM adds to ``main_grad`` (True) or overwrites it (False).

    The whole accumulation contract in one function, so that tests state expectations with the
    rule the modules apply. False when fusion is off: then no ``main_grad`` is touched at all.
    """
    if not fuse_wgrad_accumulation or overwrite_main_grad:
        return False
    if is_first_microbatch is None:
        return True
    if is_first_microbatch and mutation() == "accumulate-on-true":
        return True
    return not is_first_microbatch


# -- the GEMM with TE's wgrad rule -------------------------------------------------------------


class _FusedWgradLinear(torch.autograd.Function):
    """``y = x W^T + b`` whose backward writes W's gradient as TE does (see module docstring)."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        inp: torch.Tensor,
        weight: torch.Tensor,
        weight_used: torch.Tensor,
        bias: torch.Tensor | None,
        is_first_microbatch: bool | None,
        fuse_wgrad_accumulation: bool,
        overwrite_main_grad: bool,
    ) -> torch.Tensor:
        fp8 = is_fp8_enabled()
        x_used = quantize(inp) if fp8 else inp
        ctx.save_for_backward(x_used, weight_used)
        # TE keeps the recipe's format for backward: E5M2 gradients under HYBRID.
        ctx.grad_format = active_format() if fp8 else None
        ctx.has_bias = bias is not None
        # Captured at forward, decided in backward (ctx.is_first_microbatch in TE); TE also
        # reads overwrite_main_grad here (ctx.origin_weight_overwrite_main_grad).
        ctx.is_first_microbatch = is_first_microbatch
        ctx.fuse_wgrad_accumulation = fuse_wgrad_accumulation
        ctx.overwrite_main_grad = overwrite_main_grad
        ctx.weight_param = weight  # the Parameter itself; main_grad is looked up in backward
        return F.linear(x_used, weight_used, bias)

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        x_used, weight_used = ctx.saved_tensors
        if ctx.grad_format is not None:
            grad_out = quantize_grad(grad_out, ctx.grad_format)
        g2 = grad_out.reshape(-1, grad_out.shape[-1])
        x2 = x_used.reshape(-1, x_used.shape[-1])
        dgrad = (g2 @ weight_used).reshape(x_used.shape) if ctx.needs_input_grad[0] else None
        dbias = g2.sum(0) if ctx.has_bias and ctx.needs_input_grad[3] else None
        wgrad: torch.Tensor | None = None
        if ctx.needs_input_grad[1]:
            param = ctx.weight_param
            fused = ctx.fuse_wgrad_accumulation or mutation() == "fusion-ignored"
            if fused:
                wgrad = _write_main_grad(
                    param, g2, x2, ctx.is_first_microbatch, ctx.overwrite_main_grad
                )
            else:
                wgrad = g2.t() @ x2
        return dgrad, wgrad, None, dbias, None, None, None


def _write_main_grad(
    param: torch.Tensor,
    g2: torch.Tensor,
    x2: torch.Tensor,
    is_first_microbatch: bool | None,
    overwrite_main_grad: bool,
) -> torch.Tensor | None:
    """The fused wgrad GEMM into ``param.main_grad``; returns what autograd gets for the weight."""
    main_grad = getattr(param, "main_grad", None)
    if main_grad is None:
        raise RuntimeError(
            "fuse_wgrad_accumulation=True needs a `main_grad` buffer on the weight "
            "(TE raises as well); allocate it before backward"
        )
    a = g2.t().to(main_grad.dtype)
    b = x2.to(main_grad.dtype)
    overwrite_main_grad = overwrite_main_grad and honours_overwrite_main_grad()  # TE >= 2.9
    if wgrad_accumulates(True, is_first_microbatch, overwrite_main_grad):
        main_grad.addmm_(a, b)  # GEMM with beta = 1
    else:
        torch.mm(a, b, out=main_grad)  # GEMM with beta = 0
    if not hasattr(param, "grad_added_to_main_grad"):
        return None
    # Megatron's DDP protocol: TE flags the write and hands autograd a dummy, uninitialised
    # unless the weight asks for zeros.
    param.grad_added_to_main_grad = True
    if getattr(param, "zero_out_wgrad", False):
        return torch.zeros_like(param)
    return torch.empty_like(param)


# -- modules ---------------------------------------------------------------------------------


def _default_init(weight: torch.Tensor) -> None:
    """TE's default weight init (``normal_(mean=0, std=0.023)``), drawn from torch's RNG."""
    torch.nn.init.normal_(weight, mean=0.0, std=0.023)


class _Factory(TypedDict):
    """The keyword arguments every parameter of a reference module is created with."""

    dtype: torch.dtype
    device: torch.device | str


class _FusedWgradBase(ExtraState):
    """Parameter creation, the FP8 workspaces, the GEMM and the saved FP8 state
    (:class:`~lint_rules.runtime.reference_state.ExtraState`) of the reference modules."""

    def __init__(
        self,
        fuse_wgrad_accumulation: bool,
        params_dtype: torch.dtype | None,
        device: torch.device | str | None,
        init_method: Callable[[torch.Tensor], None] | None,
    ) -> None:
        super().__init__()
        self.fuse_wgrad_accumulation = fuse_wgrad_accumulation
        self._factory: _Factory = {
            "dtype": params_dtype if params_dtype is not None else torch.get_default_dtype(),
            "device": device if device is not None else "cpu",
        }
        self._init = init_method if init_method is not None else _default_init
        self._fp8_workspaces: dict[str, torch.Tensor] = {}

    def _weight(
        self, out_features: int, in_features: int, init: Callable[..., None] | None = None
    ) -> torch.nn.Parameter:
        weight = torch.nn.Parameter(torch.empty(out_features, in_features, **self._factory))
        with torch.no_grad():
            (init or self._init)(weight)
        return weight

    def _bias(self, out_features: int) -> torch.nn.Parameter:
        return torch.nn.Parameter(torch.zeros(out_features, **self._factory))

    def _weight_for_forward(
        self, name: str, weight: torch.Tensor, is_first_microbatch: bool | None
    ) -> torch.Tensor:
        """The weight the GEMM uses: itself, or under FP8 the quantized workspace TE would use."""
        self._note_forward(is_fp8_enabled(), active_recipe())
        if not is_fp8_enabled():
            return weight.detach()
        planted = mutation()
        reuse_none = planted == "none-reuses-like-false" and is_first_microbatch is None
        cache_name = None if is_first_microbatch is None and not reuse_none else name
        update = (is_first_microbatch is None and not reuse_none) or bool(is_first_microbatch)
        if planted == "fp8-cache-never-reused":
            update = True
        cached = self._fp8_workspaces.get(cache_name) if cache_name is not None else None
        if cached is not None and not update:
            return cached  # False: the workspace as it is, whatever the weight is now
        quantized = quantize(weight)
        if cache_name is not None:
            self._fp8_workspaces[cache_name] = quantized
        return quantized

    def _linear(
        self,
        inp: torch.Tensor,
        name: str,
        bias: torch.Tensor | None,
        is_first_microbatch: bool | None,
        overwrite_main_grad: bool | None = None,
    ) -> torch.Tensor:
        """The fused GEMM through the weight parameter called ``name``."""
        weight = getattr(self, name)
        if overwrite_main_grad is None:
            overwrite_main_grad = bool(getattr(weight, "overwrite_main_grad", False))
        used = self._weight_for_forward(name, weight, is_first_microbatch)
        return _FusedWgradLinear.apply(
            inp,
            weight,
            used,
            bias,
            is_first_microbatch,
            self.fuse_wgrad_accumulation,
            overwrite_main_grad,
        )

    def _layer_norm_params(self, width: int, eps: float) -> None:
        self.eps = eps
        self.layer_norm_weight = torch.nn.Parameter(torch.ones(width, **self._factory))
        self.layer_norm_bias = torch.nn.Parameter(torch.zeros(width, **self._factory))

    def _norm(self, inp: torch.Tensor) -> torch.Tensor:
        weight = self.layer_norm_weight
        return F.layer_norm(inp, weight.shape, weight, self.layer_norm_bias, self.eps)


class Linear(_FusedWgradBase):
    """Reference of ``transformer_engine.pytorch.Linear`` (NOT TE); flag at positional index 1."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        sequence_parallel: bool = False,
        fuse_wgrad_accumulation: bool = False,
        tp_group: Any = None,
        tp_size: int = 1,
        get_rng_state_tracker: Any = None,
        rng_tracker_name: str | None = None,
        init_method: Callable[[torch.Tensor], None] | None = None,
        bias: bool = True,
        return_bias: bool = False,
        params_dtype: torch.dtype | None = None,
        parallel_mode: str | None = None,
        parameters_split: Any = None,
        device: torch.device | str | None = None,
        **te_options: Any,
    ) -> None:
        _only_defaults(
            sequence_parallel=sequence_parallel,
            tp_group=tp_group,
            tp_size=tp_size,
            get_rng_state_tracker=get_rng_state_tracker,
            rng_tracker_name=rng_tracker_name,
            return_bias=return_bias,
            parallel_mode=parallel_mode,
            parameters_split=parameters_split,
            **_after_device(te_options),
        )
        super().__init__(fuse_wgrad_accumulation, params_dtype, device, init_method)
        self.in_features = in_features
        self.out_features = out_features
        self.weight = self._weight(out_features, in_features)
        self.bias = self._bias(out_features) if bias else None

    def forward(self, inp: torch.Tensor, is_first_microbatch: bool | None = None) -> torch.Tensor:
        return self._linear(inp, "weight", self.bias, is_first_microbatch)


class LayerNormLinear(_FusedWgradBase):
    """Reference of ``transformer_engine.pytorch.LayerNormLinear`` (LayerNorm, then Linear).

    Only the linear weight takes the fused path; the LayerNorm parameters get ordinary autograd
    gradients, as in TE. ``forward(inp, is_first_microbatch=None)``.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        eps: float = 1e-5,
        sequence_parallel: bool = False,
        fuse_wgrad_accumulation: bool = False,
        tp_group: Any = None,
        tp_size: int = 1,
        get_rng_state_tracker: Any = None,
        init_method: Callable[[torch.Tensor], None] | None = None,
        bias: bool = True,
        normalization: str = "LayerNorm",
        return_bias: bool = False,
        params_dtype: torch.dtype | None = None,
        parallel_mode: str | None = None,
        return_layernorm_output: bool = False,
        return_layernorm_output_gathered: bool = False,
        parameters_split: Any = None,
        zero_centered_gamma: bool = False,
        device: torch.device | str | None = None,
    ) -> None:
        _only_defaults(
            sequence_parallel=sequence_parallel,
            tp_group=tp_group,
            tp_size=tp_size,
            get_rng_state_tracker=get_rng_state_tracker,
            return_bias=return_bias,
            parallel_mode=parallel_mode,
            return_layernorm_output=return_layernorm_output,
            return_layernorm_output_gathered=return_layernorm_output_gathered,
            parameters_split=parameters_split,
            zero_centered_gamma=zero_centered_gamma,
        )
        if normalization != "LayerNorm":
            raise NotImplementedError("reference_te models normalization='LayerNorm' only")
        super().__init__(fuse_wgrad_accumulation, params_dtype, device, init_method)
        self.in_features = in_features
        self.out_features = out_features
        self._layer_norm_params(in_features, eps)
        self.weight = self._weight(out_features, in_features)
        self.bias = self._bias(out_features) if bias else None

    def forward(self, inp: torch.Tensor, is_first_microbatch: bool | None = None) -> torch.Tensor:
        normed = self._norm(inp)
        return self._linear(normed, "weight", self.bias, is_first_microbatch)


_ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "gelu": lambda x: F.gelu(x, approximate="tanh"),
    "relu": F.relu,
}


class LayerNormMLP(_FusedWgradBase):
    """Reference of ``transformer_engine.pytorch.LayerNormMLP``: LayerNorm, FC1, activation, FC2.

    Both GEMMs take the fused path with the same rule (``fc1_weight.main_grad`` and
    ``fc2_weight.main_grad``); under FP8 each weight has its own workspace.
    ``forward(inp, is_first_microbatch=None)``. Activations: ``gelu`` (tanh form) and ``relu``.
    """

    def __init__(
        self,
        hidden_size: int,
        ffn_hidden_size: int,
        eps: float = 1e-5,
        sequence_parallel: bool = False,
        return_bias: bool = False,
        get_rng_state_tracker: Any = None,
        tp_group: Any = None,
        tp_size: int = 1,
        init_method: Callable[[torch.Tensor], None] | None = None,
        bias: bool = True,
        normalization: str = "LayerNorm",
        activation: str = "gelu",
        activation_params: dict[str, Any] | None = None,
        output_layer_init_method: Callable[[torch.Tensor], None] | None = None,
        fuse_wgrad_accumulation: bool = False,
        params_dtype: torch.dtype | None = None,
        return_layernorm_output: bool = False,
        return_layernorm_output_gathered: bool = False,
        seq_length: int | None = None,
        micro_batch_size: int | None = None,
        set_parallel_mode: bool = False,
        zero_centered_gamma: bool = False,
        device: torch.device | str | None = None,
    ) -> None:
        _only_defaults(
            sequence_parallel=sequence_parallel,
            return_bias=return_bias,
            get_rng_state_tracker=get_rng_state_tracker,
            tp_group=tp_group,
            tp_size=tp_size,
            activation_params=activation_params,
            return_layernorm_output=return_layernorm_output,
            return_layernorm_output_gathered=return_layernorm_output_gathered,
            set_parallel_mode=set_parallel_mode,
            zero_centered_gamma=zero_centered_gamma,
        )
        if normalization != "LayerNorm":
            raise NotImplementedError("reference_te models normalization='LayerNorm' only")
        if activation not in _ACTIVATIONS:
            raise NotImplementedError(f"reference_te models activations {sorted(_ACTIVATIONS)}")
        super().__init__(fuse_wgrad_accumulation, params_dtype, device, init_method)
        self.hidden_size = hidden_size
        self.ffn_hidden_size = ffn_hidden_size
        self.activation = activation
        self.use_bias = bias
        self._layer_norm_params(hidden_size, eps)
        self.fc1_weight = self._weight(ffn_hidden_size, hidden_size)
        self.fc1_bias = self._bias(ffn_hidden_size) if bias else None
        self.fc2_weight = self._weight(hidden_size, ffn_hidden_size, output_layer_init_method)
        self.fc2_bias = self._bias(hidden_size) if bias else None

    def forward(self, inp: torch.Tensor, is_first_microbatch: bool | None = None) -> torch.Tensor:
        normed = self._norm(inp)
        fc1 = self._linear(normed, "fc1_weight", self.fc1_bias, is_first_microbatch)
        act = _ACTIVATIONS[self.activation](fc1)
        return self._linear(act, "fc2_weight", self.fc2_bias, is_first_microbatch)


FP8_SPLIT_MULTIPLE = 16
FP8_SPLIT_ERROR = (
    "Assertion failed: ret.lda % 16 == 0. Leading dimension requirement on A for FP8 GEMM. "
    "Caller must pad. (m_splits={m_splits})"
)
"""TE 2.20.2 on an H200 (``common/gemm/cublaslt_gemm.cu``, ``CanonicalizeGemmInput``) refuses
an FP8 GroupedLinear whose row splits are not multiples of 16 (the wgrad GEMM's leading
dimension), under DelayedScaling and Float8CurrentScaling alike; Megatron pads the splits
(``Fp8Padding``). The reference refuses them the same way."""


class GroupedLinear(_FusedWgradBase):
    """Reference of ``transformer_engine.pytorch.GroupedLinear``: one GEMM per row split.

    ``forward(inp, m_splits, is_first_microbatch=None)``: the flag is positional index 2, as in
    TE; split ``i`` of the rows goes through ``weight{i}`` (each with its own ``main_grad`` and
    FP8 workspace). ``overwrite_main_grad`` is read from ``weight0`` for every GEMM, as TE does.
    Under FP8 every split must be a multiple of ``FP8_SPLIT_MULTIPLE`` rows, as TE requires.
    """

    def __init__(
        self,
        num_gemms: int,
        in_features: int,
        out_features: int,
        sequence_parallel: bool = False,
        fuse_wgrad_accumulation: bool = False,
        tp_group: Any = None,
        tp_size: int = 1,
        get_rng_state_tracker: Any = None,
        rng_tracker_name: str | None = None,
        init_method: Callable[[torch.Tensor], None] | None = None,
        bias: bool = True,
        return_bias: bool = False,
        params_dtype: torch.dtype | None = None,
        parallel_mode: str | None = None,
        device: torch.device | str | None = None,
        **te_options: Any,
    ) -> None:
        _only_defaults(
            sequence_parallel=sequence_parallel,
            tp_group=tp_group,
            tp_size=tp_size,
            get_rng_state_tracker=get_rng_state_tracker,
            rng_tracker_name=rng_tracker_name,
            return_bias=return_bias,
            parallel_mode=parallel_mode,
            **_after_device(te_options),
        )
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
        if active_recipe() is not None and any(m % FP8_SPLIT_MULTIPLE for m in m_splits):
            raise RuntimeError(FP8_SPLIT_ERROR.format(m_splits=list(m_splits)))
        overwrite = bool(getattr(self.weight0, "overwrite_main_grad", False))
        outs = [
            self._linear(
                chunk,
                f"weight{i}",
                getattr(self, f"bias{i}"),
                is_first_microbatch,
                overwrite,
            )
            for i, chunk in enumerate(torch.split(inp, list(m_splits)))
        ]
        return torch.cat(outs) if outs else inp.new_empty(0, self.out_features)
