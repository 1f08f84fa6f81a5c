"""The plan of the GPU command: every scenario, module, configuration and expected label.

:func:`checks` lists the in-process scenarios (:class:`Check`), :func:`leg_configs` the
three-leg resume check's configurations (:class:`~lint_rules.runtime.gpu_legs.LegConfig`).
``python -m lint_rules.runtime.gpu_check --list`` prints both without running anything.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from lint_rules import te
from lint_rules.runtime.backends import Backend
from lint_rules.runtime.gpu_legs import AA, RESUME_AT, LegConfig

FP32 = "fp32"
BF16 = "bf16 params+activations, fp32 main_grad"
RECIPE_NAMES = {"delayed": "FP8 DelayedScaling", "current": "FP8 Float8CurrentScaling"}
TE_UNSUPPORTED = (
    "TE documents a module called more than once inside one autocast region as unsupported "
    "with DelayedScaling (reduce_amax=True): kept, labelled; its TE outcome is informative"
)
OVERWRITE_MAIN_GRAD = (
    ".".join(map(str, te.OVERWRITE_MAIN_GRAD.first)),
    "weight.overwrite_main_grad (FSDP grad fusion, TE PR #2191)",
)
"""The release gate of the checks that set ``overwrite_main_grad``: an older TE ignores it."""


@dataclass(frozen=True)
class Check:
    """One scenario on one module in one configuration, with the label a correct TE gives."""

    scenario: str
    module: str
    run: Callable[[Backend], object]  # returns an Outcome (label, detail)
    expected: str
    recipe: str | None = None  # the FP8 recipe, None for no FP8
    config: str = FP32
    te_note: str | None = None  # set where TE documents the case as unsupported
    since: tuple[str, str] | None = None  # (TE release, what): skipped on an older TE

    @property
    def fp8(self) -> bool:
        return self.recipe is not None


def _config(recipe: str | None, dtype: str = FP32) -> str:
    return RECIPE_NAMES[recipe] if recipe else dtype


def checks() -> list[Check]:
    """Every in-process scenario, per module kind and configuration."""
    from lint_rules.runtime import fixture_scenarios as fs
    from lint_rules.runtime import megatron_scenarios as ms
    from lint_rules.runtime import precision
    from lint_rules.runtime import scenarios as sc

    # first: whether fp32 is fp32 here (TF32 off), which every fp32 tolerance assumes
    out: list[Check] = [Check(precision.NAME, "Linear", precision.fp32_gemm, "fp32")]
    for dtype, config in (("fp32", FP32), ("bf16", BF16)):
        for case_id, case in sc.ACCUMULATION_CASES.items():
            for kind in sc.KINDS:
                run = partial(sc.accumulation, kind=kind, case_id=case_id, dtype=dtype)
                since = OVERWRITE_MAIN_GRAD if case.overwrite_attr else None
                name = f"accumulation {case_id}"
                out.append(Check(name, kind, run, case.expect, None, config, since=since))
    for recipe in sc.RECIPES:
        for policy in sc.FP8_POLICIES:
            for resume_at, steps in ((None, 3), (2, 4)):
                name = f"fp8 cache {policy}" + (" resumed" if resume_at else "")
                expected = sc.fp8_expected(policy, steps, resume_at)
                for kind in sc.KINDS:
                    run = partial(
                        sc.fp8_weight_cache,
                        kind=kind,
                        policy=policy,
                        steps=steps,
                        resume_at=resume_at,
                        recipe=recipe,
                    )
                    out.append(Check(name, kind, run, expected, recipe, _config(recipe)))
        note = TE_UNSUPPORTED if recipe == "delayed" else None
        for mode, expected in (("tracked", "lost,lost"), ("none", "kept,kept")):
            for kind in sc.KINDS:
                run = partial(sc.fp8_repeated_layer, kind=kind, flag_mode=mode, recipe=recipe)
                name = f"fp8 repeated layer {mode}"
                out.append(Check(name, kind, run, expected, recipe, _config(recipe), note))
    model = "shared-layer model"
    ok = fs.oracle_expected()
    out += [
        Check("gradient oracle fixed", model, fs.gradient_oracle, ok),
        Check(
            "resume with RNG state", model, partial(fs.resume_rng, restore_rng=True), "identical"
        ),
        Check(
            "resume without RNG state",
            model,
            partial(fs.resume_rng, restore_rng=False),
            "diverges at step 3",
        ),
        Check(
            "monitor unguarded",
            model,
            partial(fs.monitor_kinds, variant="unguarded"),
            "repeated-call",
        ),
        Check("monitor fixed", model, partial(fs.monitor_kinds, variant="fixed"), "silent"),
    ]
    for recipe in sc.RECIPES:
        note = TE_UNSUPPORTED if recipe == "delayed" else None
        run = partial(fs.gradient_oracle, fp8=True, fp8_recipe=recipe)
        out.append(Check("gradient oracle fixed", model, run, ok, recipe, _config(recipe), note))
    for rearm, expected in ((False, "stale-fp8-cache"), (True, "silent")):
        run = partial(
            fs.monitor_kinds, variant="unguarded", fp8=True, rearm=rearm, mtp_num_layers=1
        )
        name = "monitor flag " + ("re-armed" if rearm else "not re-armed")
        out.append(Check(name, model, run, expected, "current", _config("current")))
    out += megatron_checks(ms)
    return out


MEGATRON_LAYERS: dict[str, dict[str, Any]] = {
    "Megatron TELinear in MTP": {},
    # the upstream fix's class; 32 tokens: two splits of 16 rows, as TE requires under FP8
    "Megatron TEGroupedLinear in MTP": {"mtp_linear": "grouped", "micro_batch_size": 32},
}


def megatron_checks(ms: types.ModuleType) -> list[Check]:
    """The Megatron-shaped wrappers (``TELinear``, ``TEGroupedLinear``): oracle, monitor after
    a resume, the limits of None."""
    model = "Megatron TELinear in MTP"
    out = []
    for layer, extra in MEGATRON_LAYERS.items():
        out += _megatron_layer_checks(ms, layer, extra)
    out += [
        Check(
            "fsdp overwrite_main_grad, None",
            model,
            partial(ms.fsdp_overwrite, fused=True),
            "lost",
            None,
            BF16,
            since=OVERWRITE_MAIN_GRAD,
        ),
        Check(
            "fsdp overwrite_main_grad, fusion off",
            model,
            partial(ms.fsdp_overwrite, fused=False),
            "kept",
            None,
            BF16,
        ),
    ]
    for variant, recompute, expected in (
        ("unguarded", False, "overwritten"),
        ("unguarded", True, "accumulated"),
        ("none", True, "accumulated"),
    ):
        name = f"reentrant recompute {variant}" + ("" if recompute else " (no recompute)")
        run = partial(ms.reentrant_recompute, variant=variant, recompute=recompute)
        out.append(Check(name, model, run, expected, None, BF16))
    return out


def _megatron_layer_checks(ms: types.ModuleType, model: str, extra: dict[str, Any]) -> list[Check]:
    """Oracle (unguarded, guarded, None) and monitor after a resume on one wrapper class."""
    out = []
    for recipe in (None, "delayed", "current"):
        note = TE_UNSUPPORTED if recipe == "delayed" else None
        config = _config(recipe, BF16)
        for variant in ("unguarded", "guarded", "none"):
            run = partial(ms.megatron_oracle, variant=variant, fp8=recipe, **extra)
            expected = ms.megatron_expected(variant, recipe)
            out.append(
                Check(f"megatron oracle {variant}", model, run, expected, recipe, config, note)
            )
    for recipe in (None, "current"):
        config = _config(recipe, BF16)
        for variant, plain, fp8 in (
            ("unguarded", "repeated-call", "repeated-call"),
            ("guarded", "silent", "repeated-call"),
            ("none", "silent", "silent"),
        ):
            run = partial(ms.megatron_monitor, variant=variant, fp8=recipe, **extra)
            expected = fp8 if recipe else plain
            name = f"megatron monitor after resume {variant}"
            out.append(Check(name, model, run, expected, recipe, config))
    return out


DIVERGES = f"diverges at step {RESUME_AT + 1}"


def leg_configs() -> list[LegConfig]:
    """The three-leg check's configurations (fp32/bf16 and FP8) and their expected labels."""
    small = {"hidden_size": 256, "ffn_hidden_size": 256, "micro_batch_size": 16}
    fp8 = {"fp8": "hybrid", "fp8_recipe": "tensorwise", "num_microbatches": 1}
    shared_fp8 = {"fp8": "hybrid", "hidden_size": 32, "micro_batch_size": 16}
    unfused = {**small, "fuse_wgrad_accumulation": False}
    grouped = {**small, "mtp_linear": "grouped"}
    return [
        LegConfig("legs shared-layer unguarded", "shared-layer", "unguarded", {}, DIVERGES),
        LegConfig("legs shared-layer fixed", "shared-layer", "fixed", {}),
        LegConfig("legs shared-layer fixed fp8", "shared-layer", "fixed", shared_fp8),
        LegConfig("legs megatron unguarded", "megatron", "unguarded", small, DIVERGES),
        # the upstream proof's confirming arm: without fused wgrad the divergence vanishes
        LegConfig("legs megatron unguarded fusion off", "megatron", "unguarded", unfused),
        LegConfig("legs megatron guarded", "megatron", "guarded", small),
        LegConfig("legs megatron unguarded fp8", "megatron", "unguarded", {**small, **fp8}),
        LegConfig("legs megatron grouped unguarded", "megatron", "unguarded", grouped, DIVERGES),
        LegConfig("legs megatron grouped none", "megatron", "none", grouped),
        LegConfig("legs megatron none fp8", "megatron", "none", {**small, **fp8}),
    ]


LEG_MODULE = "three-leg resume check"
AA_MODULE = "A/A: two straight runs"


def leg_rows(config: LegConfig) -> list[tuple[str, str, str]]:
    """(label key, module column, expected label) of a leg configuration's two rows: A vs C,
    and A vs A' (always ``identical``: else the backend is not deterministic, and no
    difference between A and C can be told from noise)."""
    return [
        (config.name, LEG_MODULE, config.expected),
        (f"{config.name} {AA}", AA_MODULE, "identical"),
    ]


def plan_size() -> int:
    """How many rows the plan has (``--list``'s count)."""
    return len(checks()) + sum(len(leg_rows(c)) for c in leg_configs())


def leg_config_text(config: LegConfig) -> str:
    if config.kwargs.get("fp8"):
        return RECIPE_NAMES["current"]
    return BF16 if config.fixture == "megatron" else FP32


def leg_id(config: LegConfig) -> str:
    return f"{config.name} [{leg_config_text(config)}]"
