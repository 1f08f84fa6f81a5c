"""Shared-layer accumulation: which gradients survive in ``main_grad`` for each flag pattern.

One module of each kind (``Linear``, ``LayerNormLinear``, ``LayerNormMLP``, ``GroupedLinear``)
with ``fuse_wgrad_accumulation=True`` and a zeroed fp32 ``main_grad`` is called at two depths in
one forward, then backward (``lint_rules.runtime.scenarios.accumulation``). The expectation is
plain autograd with a separate copy of the weights per depth (``g1``, ``g2``). Backward runs in
reverse, so with flags ``(True, False)`` depth 1's GEMM, written last, overwrites: only ``g1``
survives. That case proves the test can see the bug.

Also here: the reference's own contract (decision table, TE's signatures and parameter names,
the dummy gradient, ``overwrite_main_grad`` read at forward).
"""

from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch", reason="the runtime suite needs torch")

from runtime_support import Backend  # noqa: E402

from lint_rules.runtime import reference_te  # noqa: E402
from lint_rules.runtime.scenarios import ACCUMULATION_CASES, KINDS, accumulation  # noqa: E402


@pytest.mark.parametrize("case_id", list(ACCUMULATION_CASES))
@pytest.mark.parametrize("kind", KINDS)
def test_shared_layer_accumulation(backend: Backend, kind: str, case_id: str) -> None:
    found = accumulation(backend, kind, case_id)
    assert found.label == ACCUMULATION_CASES[case_id].expect, str(found)


@pytest.mark.parametrize("case_id", list(ACCUMULATION_CASES))
@pytest.mark.parametrize("kind", KINDS)
def test_shared_layer_accumulation_bf16_params_fp32_main_grad(
    backend: Backend, kind: str, case_id: str
) -> None:
    """Production precision: bf16 parameters and activations, fused wgrad into fp32."""
    found = accumulation(backend, kind, case_id, dtype="bf16")
    assert found.label == ACCUMULATION_CASES[case_id].expect, str(found)


def test_reference_contract_table() -> None:
    """The reference's decision function is docs/te-facts.md's table, row by row."""
    accumulates = reference_te.wgrad_accumulates
    assert accumulates(True, None) is True
    assert accumulates(True, False) is True
    assert accumulates(True, True) is False
    assert accumulates(True, None, overwrite_main_grad=True) is False
    assert accumulates(True, False, overwrite_main_grad=True) is False
    for flag in (None, True, False):
        assert accumulates(False, flag) is False  # fusion off: main_grad untouched


# TE 2.20.2's constructor parameters, in order, up to `device` (what the reference models).
TE_SIGNATURES = {
    "Linear": "in_features out_features sequence_parallel fuse_wgrad_accumulation tp_group "
    "tp_size get_rng_state_tracker rng_tracker_name init_method bias return_bias params_dtype "
    "parallel_mode parameters_split device",
    "LayerNormLinear": "in_features out_features eps sequence_parallel fuse_wgrad_accumulation "
    "tp_group tp_size get_rng_state_tracker init_method bias normalization return_bias "
    "params_dtype parallel_mode return_layernorm_output return_layernorm_output_gathered "
    "parameters_split zero_centered_gamma device",
    "LayerNormMLP": "hidden_size ffn_hidden_size eps sequence_parallel return_bias "
    "get_rng_state_tracker tp_group tp_size init_method bias normalization activation "
    "activation_params output_layer_init_method fuse_wgrad_accumulation params_dtype "
    "return_layernorm_output return_layernorm_output_gathered seq_length micro_batch_size "
    "set_parallel_mode zero_centered_gamma device",
    "GroupedLinear": "num_gemms in_features out_features sequence_parallel "
    "fuse_wgrad_accumulation tp_group tp_size get_rng_state_tracker rng_tracker_name "
    "init_method bias return_bias params_dtype parallel_mode device",
}
TE_PARAMETERS = {
    "Linear": ["weight", "bias"],
    "LayerNormLinear": ["layer_norm_weight", "layer_norm_bias", "weight", "bias"],
    "LayerNormMLP": [
        "layer_norm_weight",
        "layer_norm_bias",
        "fc1_weight",
        "fc1_bias",
        "fc2_weight",
        "fc2_bias",
    ],
    "GroupedLinear": ["weight0", "bias0", "weight1", "bias1"],
}


@pytest.mark.parametrize("kind", KINDS)
def test_reference_has_te_signatures_and_parameter_names(kind: str) -> None:
    cls = getattr(reference_te, kind)
    signature = inspect.signature(cls.__init__).parameters.values()
    params = [p.name for p in signature if p.kind != p.VAR_KEYWORD][1:]
    assert params == TE_SIGNATURES[kind].split()
    forward = list(inspect.signature(cls.forward).parameters)[1:]
    assert forward.index("is_first_microbatch") == (2 if kind == "GroupedLinear" else 1)
    args = (2, 8, 8) if kind == "GroupedLinear" else (8, 16) if kind == "LayerNormMLP" else (8, 8)
    module = cls(*args)
    assert [name for name, _ in module.named_parameters()] == TE_PARAMETERS[kind]


def test_layernorm_mlp_positional_construction_and_fusion_on_both_gemms() -> None:
    """TE's positional order: ``LayerNormMLP(hidden, ffn, eps, ...)``; both GEMMs fused."""
    mlp = reference_te.LayerNormMLP(8, 16, 1e-6, fuse_wgrad_accumulation=True)
    assert (mlp.hidden_size, mlp.ffn_hidden_size, mlp.eps) == (8, 16, 1e-6)
    assert mlp.fc1_weight.shape == (16, 8) and mlp.fc2_weight.shape == (8, 16)
    for w in (mlp.fc1_weight, mlp.fc2_weight):
        w.main_grad = torch.zeros_like(w)
    mlp(torch.randn(4, 8)).sum().backward()
    assert mlp.fc1_weight.grad is None and mlp.fc2_weight.grad is None
    assert torch.count_nonzero(mlp.fc1_weight.main_grad) and torch.count_nonzero(
        mlp.fc2_weight.main_grad
    )
    with pytest.raises(NotImplementedError, match="tp_size"):
        reference_te.LayerNormMLP(8, 16, tp_size=2)


def test_reference_missing_main_grad_is_an_error() -> None:
    """Like TE, fused wgrad without a main_grad buffer fails loudly instead of dropping it."""
    layer = reference_te.Linear(4, 4, fuse_wgrad_accumulation=True)
    out = layer(torch.randn(2, 4), is_first_microbatch=None)
    with pytest.raises(RuntimeError, match="main_grad"):
        out.sum().backward()


@pytest.mark.parametrize("zero_out", [False, True])
def test_reference_megatron_ddp_protocol(zero_out: bool) -> None:
    """With Megatron's grad_added_to_main_grad the weight gets a dummy gradient: TE's is
    uninitialised (``torch.empty``), zeros only with ``zero_out_wgrad``; without the attribute
    it gets none."""
    layer = reference_te.Linear(4, 4, bias=False, fuse_wgrad_accumulation=True)
    layer.weight.main_grad = torch.zeros(4, 4)
    layer.weight.grad_added_to_main_grad = False
    if zero_out:
        layer.weight.zero_out_wgrad = True
    layer(torch.randn(2, 4)).sum().backward()
    assert layer.weight.grad_added_to_main_grad is True
    assert layer.weight.grad is not None and layer.weight.grad.shape == (4, 4)
    if zero_out:
        assert torch.count_nonzero(layer.weight.grad) == 0
    assert torch.count_nonzero(layer.weight.main_grad) > 0

    plain = reference_te.Linear(4, 4, bias=False, fuse_wgrad_accumulation=True)
    plain.weight.main_grad = torch.zeros(4, 4)
    plain(torch.randn(2, 4)).sum().backward()
    assert plain.weight.grad is None


def test_reference_dummy_gradient_is_not_zeroed() -> None:
    """The dummy is allocated with torch.empty, not zeros: the reference does not promise more
    than TE does (Megatron's DDP ignores it unless zero_out_wgrad)."""
    import unittest.mock

    layer = reference_te.Linear(4, 4, bias=False, fuse_wgrad_accumulation=True)
    layer.weight.main_grad = torch.zeros(4, 4)
    layer.weight.grad_added_to_main_grad = False
    with unittest.mock.patch.object(
        reference_te.torch, "empty_like", wraps=torch.empty_like
    ) as empty_like:
        layer(torch.randn(2, 4)).sum().backward()
    assert empty_like.called


@pytest.mark.parametrize("kind", ["Linear", "GroupedLinear"])
def test_overwrite_main_grad_is_read_at_forward(kind: str) -> None:
    """TE reads overwrite_main_grad when the forward runs: setting it between forward and
    backward changes nothing; GroupedLinear reads it from weight0 for every GEMM."""
    torch.manual_seed(0)
    x = torch.randn(4, 4)
    if kind == "Linear":
        module = reference_te.Linear(4, 4, fuse_wgrad_accumulation=True)
        weights = [module.weight]
        args: tuple = (x,)
    else:
        module = reference_te.GroupedLinear(2, 4, 4, fuse_wgrad_accumulation=True)
        weights = [module.weight0, module.weight1]
        args = (x, [2, 2])

    def main_grads(before: list[bool], after: list[bool]) -> list[torch.Tensor]:
        """main_grad (starting at 7) with the attribute set before and after the forward."""
        for w, flag in zip(weights, before):
            w.main_grad = torch.full_like(w, 7.0)
            w.overwrite_main_grad = flag
        out = module(*args, is_first_microbatch=None)
        for w, flag in zip(weights, after):
            w.overwrite_main_grad = flag
        out.sum().backward()
        return [w.main_grad.clone() for w in weights]

    n = len(weights)
    overwritten = [g + 7.0 for g in main_grads([True] * n, [True] * n)]  # 7 + wgrad, for reference
    accumulated = main_grads([False] * n, [False] * n)
    for got, want in zip(accumulated, overwritten):
        assert torch.allclose(got, want)  # 7 + wgrad: accumulated
    late = main_grads([False] * n, [True] * n)  # set after the forward: too late
    assert all(torch.equal(a, b) for a, b in zip(late, accumulated))
    only_first = main_grads([True] + [False] * (n - 1), [True] + [False] * (n - 1))
    for got, acc in zip(only_first, accumulated):
        assert torch.allclose(got, acc - 7.0)  # weight0's attribute overwrote every GEMM


@pytest.mark.parametrize("kind", ["Linear", "GroupedLinear"])
def test_tes_options_after_device_are_taken_at_their_defaults(kind: str) -> None:
    """What Megatron's wrappers pass (``ub_name=None``, ``rng_tracker_name`` without a
    tracker): accepted; another value is not modelled; a name TE lacks is a TypeError."""
    cls = getattr(reference_te, kind)
    args = (2, 8, 8) if kind == "GroupedLinear" else (8, 8)
    cls(*args, ub_name=None, delay_wgrad_compute=False, rng_tracker_name="data-parallel-rng")
    with pytest.raises(NotImplementedError, match="delay_wgrad_compute"):
        cls(*args, delay_wgrad_compute=True)
    with pytest.raises(TypeError, match="no_such_option"):
        cls(*args, no_such_option=1)
