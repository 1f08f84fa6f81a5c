"""The GPU command's first check: an fp32 GEMM on the backend under test really is fp32.

TE runs fp32 GEMMs through cuBLASLt, which computes them as TF32 (10-bit mantissa) unless
TF32 is off; the fp32 tolerances of the suite (``tolerances.fp32_tolerance``, about 6e-4)
assume it is off, and TF32's own error (2^-11 relative per operand) is of the same size, so a
TF32 GEMM could pass some fp32 checks and fail others for the wrong reason. The command turns
TF32 off (``NVIDIA_TF32_OVERRIDE=0``, torch's flags); this check measures whether that reached
the module's GEMMs, forward and both backward GEMMs (dgrad and wgrad), before anything else.

The operands are ``+-(1 + 2^-12)``: exact in fp32, and 1 in TF32 (whose spacing at 1 is
2^-10). Each product is then ``1 + 2^-11 + 2^-24`` in fp32 and 1 in TF32, so a TF32 GEMM is
off by 2^-11 (4.9e-4) relative, exactly, while an fp32 GEMM with random signs stays below
1e-6; the threshold 2^-14 (6.1e-5) sits between them.
"""

from __future__ import annotations

from typing import Any

import torch

from lint_rules.runtime.backends import Backend
from lint_rules.runtime.scenarios import Outcome, rel

SIZE = 256
THRESHOLD = 2.0**-14
NAME = "fp32 GEMMs are fp32 (TF32 off)"


def operands(rows: int, cols: int, seed: int) -> torch.Tensor:
    """``+-(1 + 2^-12)`` with random signs (fp32): a value TF32 rounds to 1."""
    gen = torch.Generator().manual_seed(seed)
    signs = torch.randint(0, 2, (rows, cols), generator=gen, dtype=torch.float32) * 2 - 1
    return signs * (1 + 2.0**-12)


def gemm_errors(linear: Any, device: str) -> dict[str, float]:
    """Relative errors of ``linear``'s forward, dgrad and wgrad GEMMs against float64."""
    x64 = operands(SIZE, SIZE, 1).double()
    w64 = operands(SIZE, SIZE, 2).double()
    g64 = operands(SIZE, SIZE, 3).double()
    with torch.no_grad():
        linear.weight.copy_(w64.float().to(device))
    x = x64.float().to(device).requires_grad_(True)
    out = linear(x)
    out.backward(g64.float().to(device))
    weight_grad = linear.weight.grad
    if x.grad is None or weight_grad is None:
        raise RuntimeError("the Linear's backward gave no input or weight gradient")
    return {
        "forward": rel(out, x64 @ w64.t()),
        "dgrad": rel(x.grad, g64 @ w64),
        "wgrad": rel(weight_grad, g64.t() @ x64),
    }


def fp32_gemm(backend: Backend) -> Outcome:
    """``fp32`` when every GEMM of the backend's fp32 ``Linear`` is within 2^-14 of float64;
    ``tf32`` (with the errors) when one is not."""
    te = backend.module()
    linear = te.Linear(SIZE, SIZE, bias=False, params_dtype=torch.float32, device=backend.device)
    errors = gemm_errors(linear, backend.device)
    detail = ", ".join(f"{k}: {v:.1e}" for k, v in errors.items())
    if all(err < THRESHOLD for err in errors.values()):
        return Outcome("fp32", detail)
    return Outcome("tf32", detail)


BANNER = (
    "!!! fp32 GEMMs are NOT fp32 on this machine (TF32 or another reduced precision is on): "
    "every fp32 comparison below is meaningless. Check NVIDIA_TF32_OVERRIDE, "
    "torch.backends.cuda.matmul.allow_tf32 and torch.set_float32_matmul_precision. !!!"
)
