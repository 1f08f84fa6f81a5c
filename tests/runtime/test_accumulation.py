"""Shared-layer accumulation: which gradients survive in ``main_grad`` for each flag pattern.

One module with ``fuse_wgrad_accumulation=True`` and a zeroed fp32 ``weight.main_grad`` is called
at two depths in one forward (``h1 = tanh(m(x, f1))``, ``h2 = tanh(m(h1, f2))``), then backward.
The expectation is computed independently with plain autograd: the same math with a separate
leaf copy of the weight per depth, so ``g1`` and ``g2`` (depth 1's and depth 2's weight
gradients) come out separately and the true gradient is ``g1 + g2``.

Backward runs in reverse: depth 2's wgrad is written first and depth 1's (the FIRST forward
call) last. So with flags ``(True, False)`` depth 1's GEMM overwrites and only ``g1`` survives:
that is the bug the linter is about, and the case proves the test can see it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="the runtime suite needs torch")

import torch.nn.functional as F  # noqa: E402
from runtime_support import Backend, load_fixture  # noqa: E402

HIDDEN = 16
TOKENS = 8
M_SPLITS = [3, 5]  # GroupedLinear: uneven on purpose, both GEMMs see rows
KINDS = ("Linear", "LayerNormLinear", "GroupedLinear")

# Tolerances, as relative Frobenius error ||main_grad - expected|| / ||expected||.
# - reference: the module and the autograd mirror compute the same fp32 products; they differ
#   only in summation order (the fused GEMM adds into main_grad with beta=1, i.e. (0 + g2) + g1
#   inside addmm, against g1 + g2 afterwards; autograd's own wgrad GEMM may block the
#   K = TOKENS reduction differently). Each is a few fp32 roundings (2^-24 ~ 6e-8) on sums of
#   8-16 terms, so errors are ~1e-7; 1e-5 leaves two orders of magnitude.
# - te: TE's cuBLASLt GEMMs may run fp32 inputs on TF32 tensor cores (10-bit mantissa, unit
#   roundoff 2^-11 ~ 4.9e-4) and its LayerNorm is a fused kernel with its own reduction order;
#   2e-3 covers a TF32 product summed over 8-16 rows.
# Either way the alternative outcome (a whole depth's gradient lost or kept) is O(1) away,
# which `assert_grad` checks too (SEPARATION), so the tolerance cannot hide the bug.
TOLERANCE = {"reference": 1e-5, "te": 2e-3}
SEPARATION = 0.05


@dataclass(frozen=True)
class Case:
    """Flags of the two calls and what must end up in ``main_grad``."""

    flags: tuple[bool | None, bool | None]
    expect: str  # "sum" (g1 + g2) or "first" (g1 only: depth 2's gradient overwritten)
    guard_config: Any = None  # route the flags through is_first_microbatch_tracked(config)
    overwrite_attr: bool = False  # weight.overwrite_main_grad = True
    fuse: bool = True


GUARD = load_fixture("megatron_guard")
CONFIG = load_fixture("shared_layer_model").ModelConfig

CASES = {
    # What the codemod writes: TE accumulates whenever fusion is on.
    "none": Case((None, None), "sum"),
    # The upstream guard with a BF16/FP32 config (untracked): the guard turns the flag into None.
    "guard-untracked": Case((True, False), "sum", guard_config=CONFIG()),
    # An uninterrupted run after its first microbatch: both accumulate.
    "false-false": Case((False, False), "sum"),
    # The first call after a (re)start: depth 1's wgrad, written last, overwrites depth 2's.
    "true-false": Case((True, False), "first"),
    # The guard's known limit (issue 7): with FP8 the flag is tracked, re-armed to True on the
    # first microbatch, and a module called twice still loses one depth's gradient.
    "guard-tracked-fp8": Case((True, False), "first", guard_config=CONFIG(fp8="hybrid")),
    # TE's attribute that forces overwrite even with the None fallback.
    "overwrite-attr": Case((None, None), "first", overwrite_attr=True),
    # Fusion off: a fresh wgrad per call, summed by autograd into .grad; nothing to overwrite.
    "unfused-true-false": Case((True, False), "sum", fuse=False),
}


def make_module(kind: str, backend: Backend, fuse: bool) -> torch.nn.Module:
    """Build ``kind`` from the backend's namespace with TE's keyword names."""
    te = backend.module()
    common = {
        "bias": True,
        "fuse_wgrad_accumulation": fuse,
        "params_dtype": torch.float32,
        "device": backend.device,
    }
    if kind == "GroupedLinear":
        return te.GroupedLinear(len(M_SPLITS), HIDDEN, HIDDEN, **common)
    return getattr(te, kind)(HIDDEN, HIDDEN, **common)


def fused_weights(kind: str, module: torch.nn.Module) -> list[torch.nn.Parameter]:
    """The parameters whose wgrad goes to ``main_grad`` (TE's names)."""
    if kind == "GroupedLinear":
        return [getattr(module, f"weight{i}") for i in range(len(M_SPLITS))]
    return [module.weight]


def call(kind: str, module: torch.nn.Module, x: torch.Tensor, flag: bool | None) -> torch.Tensor:
    if kind == "GroupedLinear":
        return module(x, M_SPLITS, is_first_microbatch=flag)
    return module(x, is_first_microbatch=flag)


def mirror(
    kind: str, module: torch.nn.Module, x: torch.Tensor, weights: list[torch.Tensor]
) -> torch.Tensor:
    """The module's math in plain torch, with ``weights`` in place of its fused weights."""
    if kind == "Linear":
        return F.linear(x, weights[0], module.bias.detach())
    if kind == "LayerNormLinear":
        normed = F.layer_norm(
            x,
            (HIDDEN,),
            module.layer_norm_weight.detach(),
            module.layer_norm_bias.detach(),
            module.eps,
        )
        return F.linear(normed, weights[0], module.bias.detach())
    chunks = torch.split(x, M_SPLITS)
    return torch.cat(
        [
            F.linear(chunk, w, getattr(module, f"bias{i}").detach())
            for i, (chunk, w) in enumerate(zip(chunks, weights))
        ]
    )


def per_depth_grads(
    kind: str, module: torch.nn.Module, x: torch.Tensor, probe: torch.Tensor
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """(g1, g2): each fused weight's gradient from depth 1 and from depth 2, by autograd."""
    originals = [w.detach() for w in fused_weights(kind, module)]
    depth1 = [w.clone().requires_grad_(True) for w in originals]
    depth2 = [w.clone().requires_grad_(True) for w in originals]
    h1 = torch.tanh(mirror(kind, module, x, depth1))
    h2 = torch.tanh(mirror(kind, module, h1, depth2))
    grads = torch.autograd.grad((h2 * probe).sum(), depth1 + depth2)
    n = len(originals)
    return list(grads[:n]), list(grads[n:])


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm().clamp_min(1e-30))


def assert_grad(got: torch.Tensor, want: torch.Tensor, other: torch.Tensor, tol: float) -> None:
    """``got`` matches ``want`` within ``tol`` and is clearly not the ``other`` outcome."""
    assert rel(got, want) <= tol, f"relative error {rel(got, want):.2e} > {tol:.0e}"
    assert rel(got, other) > SEPARATION, "the two outcomes are indistinguishable: weak test"


@pytest.mark.parametrize("case_id", list(CASES))
@pytest.mark.parametrize("kind", KINDS)
def test_shared_layer_accumulation(backend: Backend, kind: str, case_id: str) -> None:
    case = CASES[case_id]
    torch.manual_seed(1234)
    module = make_module(kind, backend, case.fuse)
    weights = fused_weights(kind, module)
    for w in weights:
        w.main_grad = torch.zeros_like(w, dtype=torch.float32)
        if case.overwrite_attr:
            w.overwrite_main_grad = True
    x = torch.randn(TOKENS, HIDDEN, device=backend.device)
    probe = torch.randn(TOKENS, HIDDEN, device=backend.device)

    flags = case.flags
    if case.guard_config is not None:
        # Exactly the guarded call shape the linter accepts: `v if tracked(config) else None`.
        flags = tuple(
            f if GUARD.is_first_microbatch_tracked(case.guard_config) else None for f in flags
        )
    h1 = torch.tanh(call(kind, module, x, flags[0]))
    h2 = torch.tanh(call(kind, module, h1, flags[1]))
    (h2 * probe).sum().backward()

    g1, g2 = per_depth_grads(kind, module, x, probe)
    tol = TOLERANCE[backend.name]
    for w, a, b in zip(weights, g1, g2):
        total = a + b
        if not case.fuse:
            assert w.grad is not None
            assert_grad(w.grad, total, a, tol)
            assert torch.count_nonzero(w.main_grad) == 0, "fusion off must not touch main_grad"
        elif case.expect == "sum":
            assert_grad(w.main_grad, total, a, tol)
        else:
            # Exactly one depth survives, and it is depth 1 (first forward, last backward).
            assert_grad(w.main_grad, a, total, tol)
            assert rel(w.main_grad, b) > SEPARATION


def test_reference_contract_table() -> None:
    """The reference's decision function is docs/te-facts.md's table, row by row."""
    from lint_rules.testing.reference_te import wgrad_accumulates

    assert wgrad_accumulates(True, None) is True
    assert wgrad_accumulates(True, False) is True
    assert wgrad_accumulates(True, True) is False
    assert wgrad_accumulates(True, None, overwrite_main_grad=True) is False
    assert wgrad_accumulates(True, False, overwrite_main_grad=True) is False
    for flag in (None, True, False):
        assert wgrad_accumulates(False, flag) is False  # fusion off: main_grad untouched


def test_reference_missing_main_grad_is_an_error() -> None:
    """Like TE, fused wgrad without a main_grad buffer fails loudly instead of dropping it."""
    from lint_rules.testing.reference_te import Linear

    layer = Linear(4, 4, fuse_wgrad_accumulation=True)
    out = layer(torch.randn(2, 4), is_first_microbatch=None)
    with pytest.raises(RuntimeError, match="main_grad"):
        out.sum().backward()


def test_reference_megatron_ddp_protocol() -> None:
    """With Megatron's grad_added_to_main_grad attribute the weight gets a dummy zero grad."""
    from lint_rules.testing.reference_te import Linear

    layer = Linear(4, 4, bias=False, fuse_wgrad_accumulation=True)
    layer.weight.main_grad = torch.zeros(4, 4)
    layer.weight.grad_added_to_main_grad = False
    layer(torch.randn(2, 4)).sum().backward()
    assert layer.weight.grad_added_to_main_grad is True
    assert layer.weight.grad is not None and torch.count_nonzero(layer.weight.grad) == 0
    assert torch.count_nonzero(layer.weight.main_grad) > 0
