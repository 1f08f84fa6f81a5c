"""megatron-core's own TE wrappers over the CPU reference: one shared layer at two depths.

Run by ``test_megatron_core.py`` in a child process whose path holds megatron-core, numpy and
the test-built ``transformer_engine`` shim (``te_shim.py``); prints one JSON object, arm ->
label. Nothing here is a copy of Megatron: the layer is megatron-core's ``TELinear`` (duplicated
mode) or ``TEGroupedLinear`` built from its ``TransformerConfig``, inside a model derived from
its ``MegatronModule``, whose ``set_is_first_microbatch`` the loop calls at the start of every
step as the pipeline schedule's ``forward_step`` does.

Per step, the label says whether the fused ``main_grad`` of the shared weights kept every
depth (``kept``) or lost depth 2 of microbatch 0 (``lost``), against plain autograd with a
separate weight leaf per depth. After step 2 a new model (a fresh process: flags True again)
loads the state and trains on.
"""

from __future__ import annotations

import json
import sys
import warnings

import torch
import torch.nn.functional as F

from lint_rules.runtime import tolerances as tol
from lint_rules.runtime.scenarios import Outcome, all_same, classify, combine

warnings.simplefilter("ignore")  # megatron-core's deprecation and syntax warnings

import transformer_engine.pytorch as te  # noqa: E402  (the shim: the reference)
from megatron.core.extensions.transformer_engine import TEGroupedLinear, TELinear  # noqa: E402
from megatron.core.transformer.module import MegatronModule  # noqa: E402
from megatron.core.transformer.transformer_config import TransformerConfig  # noqa: E402

# 32 tokens: the grouped arm splits them in two, and TE wants 16-row splits under FP8
HIDDEN, TOKENS, MICROBATCHES, STEPS, RESUME_AT = 64, 32, 2, 4, 2


def splits(rows: int) -> list[int]:
    return [rows // 2, rows - rows // 2]


class SharedLayer(MegatronModule):
    """One layer called at two depths, as the MTP block with ``mtp_use_repeated_layer``."""

    def __init__(self, config: TransformerConfig, grouped: bool) -> None:
        super().__init__(config)
        self.grouped = grouped
        init = torch.nn.init.xavier_normal_
        if grouped:
            self.fc = TEGroupedLinear(
                2,
                HIDDEN,
                HIDDEN,
                parallel_mode=None,
                config=config,
                init_method=init,
                bias=True,
                skip_bias_add=False,
            )
        else:
            self.fc = TELinear(
                HIDDEN,
                HIDDEN,
                parallel_mode="duplicated",
                config=config,
                init_method=init,
                bias=True,
                skip_bias_add=False,
                skip_weight_param_allocation=False,
            )

    def layer(self, hidden: torch.Tensor) -> torch.Tensor:
        out, _ = self.fc(hidden, splits(hidden.shape[0])) if self.grouped else self.fc(hidden)
        return torch.tanh(out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(self.layer(x))


def weights(model: SharedLayer) -> list[str]:
    return ["fc.weight0", "fc.weight1"] if model.grouped else ["fc.weight"]


def mirror(model: SharedLayer, x: torch.Tensor, leaf: dict[str, torch.Tensor]) -> torch.Tensor:
    p = {n: t.detach() for n, t in model.named_parameters()}
    if not model.grouped:
        return torch.tanh(F.linear(x, leaf["fc.weight"], p["fc.bias"]))
    chunks = torch.split(x, splits(x.shape[0]))
    outs = [F.linear(c, leaf[f"fc.weight{i}"], p[f"fc.bias{i}"]) for i, c in enumerate(chunks)]
    return torch.tanh(torch.cat(outs))


def build(arm: dict, seed: int) -> SharedLayer:
    config = TransformerConfig(
        num_layers=1,
        hidden_size=HIDDEN,
        num_attention_heads=4,
        use_cpu_initialization=True,
        gradient_accumulation_fusion=True,
        params_dtype=torch.float32,
        disable_parameter_transpose_cache=arm.get("disable_cache", False),
        fp8="hybrid" if arm.get("fp8") else None,
    )
    torch.manual_seed(seed)
    model = SharedLayer(config, arm["grouped"])
    for param in model.parameters():
        param.main_grad = torch.zeros_like(param)
    return model


def run(arm: dict) -> Outcome:
    model = build(arm, 0)
    recipe = {None: None, "current": te.Float8CurrentScaling, "delayed": te.DelayedScaling}[
        arm.get("fp8")
    ]
    recipe = recipe() if recipe else None
    limit = tol.two_depth_wgrad_tolerance_fp8("Linear") if recipe else 1e-4
    separation = limit if recipe else 0.05
    gen = torch.Generator().manual_seed(1)
    per_step = []
    for step in range(1, STEPS + 1):
        if step == RESUME_AT + 1:  # a fresh process loads the checkpoint
            fresh = build(arm, 1)
            try:
                fresh.load_state_dict(model.state_dict())
            except RuntimeError as error:  # TE >= 2.18 on DelayedScaling state
                if "Refusing to load pickled Transformer Engine extra state" not in str(error):
                    raise
                return Outcome("refused", str(error))
            model = fresh
        names = weights(model)
        params = dict(model.named_parameters())
        for param in model.parameters():
            param.main_grad.zero_()
            param.grad = None
        model.set_is_first_microbatch()  # forward_step, first microbatch of the step
        kept = {n: torch.zeros_like(params[n]) for n in names}
        lost = {n: torch.zeros_like(params[n]) for n in names}
        for mb in range(MICROBATCHES):
            x = torch.randn(TOKENS, HIDDEN, generator=gen)
            probe = torch.randn(TOKENS, HIDDEN, generator=gen)
            depths = [
                {n: params[n].detach().clone().requires_grad_(True) for n in names}
                for _ in range(2)
            ]
            want = (mirror(model, mirror(model, x, depths[0]), depths[1]) * probe).sum()
            grads = torch.autograd.grad(want, [d[n] for d in depths for n in names])
            for i, grad in enumerate(grads):
                depth, n = divmod(i, len(names))
                kept[names[n]] += grad
                if not (mb == 0 and depth == 1):
                    lost[names[n]] += grad
            with te.autocast(enabled=recipe is not None, recipe=recipe):
                out = model(x)
            (out * probe).sum().backward()
        found = [
            classify(params[n].main_grad, {"kept": kept[n], "lost": lost[n]}, limit, separation)
            for n in names
        ]
        per_step.append(all_same(found))
        with torch.no_grad():
            for name, param in params.items():
                grad = param.main_grad if name in names else param.grad
                param.sub_(0.05 * grad)
    return combine(per_step)


ARMS = {
    "TELinear": {"grouped": False},
    "TEGroupedLinear": {"grouped": True},
    "TELinear disable_parameter_transpose_cache": {"grouped": False, "disable_cache": True},
    "TEGroupedLinear fp8": {"grouped": True, "fp8": "current"},
    "TELinear fp8 DelayedScaling": {"grouped": False, "fp8": "delayed"},
}


if __name__ == "__main__":
    only = sys.argv[1:] or list(ARMS)
    print(json.dumps({name: run(ARMS[name]).label for name in only}))
