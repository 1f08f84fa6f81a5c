"""Tolerances of the runtime scenarios, derived from the number formats, not from measurements.

Every comparison is a relative Frobenius error ``||got - want|| / ||want||`` against an
expectation computed in fp32 (or double) by plain autograd. Round-to-nearest in a format with
``p`` explicit mantissa bits has a unit roundoff ``u = 2**-(p + 1)`` (relative error at most
``u``, uniformly spread, so about ``u / sqrt(3)`` RMS). A GEMM's relative Frobenius error
follows the RMS relative error of its operands (errors of independent elements do not cancel
or grow with the reduction length), and independent roundings add in quadrature. So for a
result that passes through ``n_f`` roundings in format ``f``::

    sigma = sqrt(sum_f n_f * u_f**2 / 3)        tolerance = K * sigma,  K = 2

with ``u_e4m3 = 2**-4`` (forward operands under FP8), ``u_e5m2 = 2**-3`` (gradients under
FP8's HYBRID format), ``u_bf16 = 2**-8`` and, for fp32 GEMMs with TF32 off, ``u_fp32 = 2**-24``
times the reduction length (summation order differs between the module and the oracle).

Scale: the inputs are N(0, 1) and the weights N(0, 0.2**2) or wider, so even with scale 1 (TE's
first ``DelayedScaling`` step, before any amax is recorded) almost every element is a normal
number of E4M3 (smallest normal 2**-6); the few that are not are small in absolute terms and
change the Frobenius error negligibly. Gradients are O(0.01-1), normal in E5M2 (2**-14).

A label also needs every other candidate at least ``separation`` away from what was measured
(:func:`lint_rules.runtime.scenarios.classify`), and the candidates of every scenario differ by
a whole depth's or a whole step's contribution, so a tolerance cannot hide the other outcome.
"""

from __future__ import annotations

import math

__all__ = ["K", "U_BF16", "U_E4M3", "U_E5M2", "U_FP32", "fp32_tolerance", "rounding_tolerance"]

K = 2.0
U_E4M3 = 2.0**-4
U_E5M2 = 2.0**-3
U_BF16 = 2.0**-8
U_FP32 = 2.0**-24


def rounding_tolerance(*, e4m3: int = 0, e5m2: int = 0, bf16: int = 0) -> float:
    """``K * sigma`` for a result that went through that many roundings in each format."""
    variance = (e4m3 * U_E4M3**2 + e5m2 * U_E5M2**2 + bf16 * U_BF16**2) / 3.0
    return K * math.sqrt(variance)


def fp32_tolerance(reduction: int, chain: int = 4) -> float:
    """fp32 with TF32 off: ``chain`` GEMMs, each a sum of ``reduction`` products whose order
    differs between module and oracle (worst case ``reduction * u`` each); times 10 for the
    fused LayerNorm and GELU kernels, which round differently from torch's."""
    return 10.0 * chain * reduction * U_FP32


def gemms(kind: str) -> int:
    """GEMMs per call of a module kind (LayerNormMLP has two)."""
    return 2 if kind == "LayerNormMLP" else 1


def forward_tolerance_fp8(kind: str) -> float:
    """One FP8 forward of ``kind``: each GEMM rounds its input and its weight to E4M3."""
    return rounding_tolerance(e4m3=2 * gemms(kind))


def two_depth_wgrad_tolerance_fp8(kind: str) -> float:
    """A weight gradient of ``kind`` called at two depths under FP8 (HYBRID): the forward
    operands of both depths in E4M3, each GEMM's incoming gradient in E5M2."""
    return rounding_tolerance(e4m3=4 * gemms(kind), e5m2=2 * gemms(kind))


def two_depth_wgrad_tolerance_bf16(kind: str) -> float:
    """The same in bf16 (weights exact, the oracle uses the same bf16 values upcast): per
    depth and GEMM the input, the output, the activation and the incoming gradient."""
    return rounding_tolerance(bf16=2 * 4 * gemms(kind))
