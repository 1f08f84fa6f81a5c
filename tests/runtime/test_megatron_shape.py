"""Megatron-Core's shape: TE wrappers keeping the flag as state, in a repeated MTP layer.

``lint_rules/runtime/fixtures/megatron_mtp_model.py``: ``TELinear(te.Linear)`` keeps
``self.is_first_microbatch`` and clears it after forward, ``set_is_first_microbatch`` re-arms it
only under FP8, the MTP block calls ``self.layers[0]`` at each depth, bf16 parameters and fp32
``main_grad``. No flag appears at the repeated call, so TEM005 cannot tie it statically; the
monitor catches it at run time (with and without FP8, after a resume), the three legs show
the divergence, and the oracle shows the residual case under FP8 that only ``None`` fixes.
Expectations come from the rule TE applies (docs/te-facts.md), not from running the code.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="the runtime suite needs torch")

from lint_rules.runtime import megatron_scenarios as ms  # noqa: E402
from lint_rules.runtime.backends import Backend  # noqa: E402
from lint_rules.runtime.gpu_legs import LegConfig, run_leg_matrix  # noqa: E402
from lint_rules.runtime.gpu_plan import MEGATRON_LAYERS  # noqa: E402
from lint_rules.runtime.megatron_shape import megatron_source  # noqa: E402
from lint_rules.runtime.monitor import MicrobatchMonitor  # noqa: E402

CPU = Backend("reference", "cpu")
LAYER = "mtp.layers.0.linear_fc1"


def test_variants_are_the_codemods_output() -> None:
    plain = megatron_source("unguarded")
    assert "super().forward(x, is_first_microbatch=_is_first_microbatch)" in plain
    guarded = megatron_source("guarded")
    assert "if is_first_microbatch_tracked(self.config) else None" in guarded
    assert "from megatron_guard import is_first_microbatch_tracked" in guarded
    assert "super().forward(x, is_first_microbatch=None)" in megatron_source("none")
    # TEGroupedLinear's call, fixed the same way
    assert "super().forward(x, m_splits, is_first_microbatch=None)" in megatron_source("none")
    grouped_guard = "super().forward(x, m_splits, is_first_microbatch=(_is_first_microbatch if"
    assert grouped_guard in guarded


@pytest.mark.parametrize(("variant", "fp8"), [("unguarded", None), ("guarded", "current")])
def test_the_grouped_layer_loses_what_the_linear_one_does(variant: str, fp8: str | None) -> None:
    """The MTP layer as TEGroupedLinear (the upstream fix's class): the same labels."""
    grouped = MEGATRON_LAYERS["Megatron TEGroupedLinear in MTP"]  # 16-row splits, as FP8 needs
    found = ms.megatron_oracle(CPU, variant, fp8=fp8, **grouped)
    assert found.label == ms.megatron_expected(variant, fp8), str(found)
    assert "lost" in found.label


@pytest.mark.parametrize("fp8", [None, "current"])
@pytest.mark.parametrize("variant", ["unguarded", "guarded", "none"])
def test_oracle(variant: str, fp8: str | None) -> None:
    """fp32/bf16: lost at the first step of each process unless guarded or None; FP8: the
    guard keeps the flag (re-armed every step), so depth 2 is lost EVERY step; None keeps it."""
    found = ms.megatron_oracle(CPU, variant, fp8=fp8)
    assert found.label == ms.megatron_expected(variant, fp8), str(found)


def test_expected_labels_say_what_the_issue_says() -> None:
    assert ms.megatron_expected("unguarded", None) == "lost,kept,lost,kept"
    assert ms.megatron_expected("guarded", None) == "kept,kept,kept,kept"
    assert ms.megatron_expected("guarded", "current") == "lost,lost,lost,lost"
    assert ms.megatron_expected("none", "current") == "kept,kept,kept,kept"


@pytest.mark.parametrize("fp8", [None, "current"])
def test_monitor_reports_the_wrapper_after_a_resume(fp8: str | None) -> None:
    found = ms.megatron_monitor(CPU, "unguarded", fp8=fp8)
    assert found.label == "repeated-call", str(found)
    assert f"{LAYER}@0" in found.detail  # the first step after the resume
    assert ms.megatron_monitor(CPU, "none", fp8=fp8).label == "silent"


def test_monitor_names_the_calls_and_the_value_te_received() -> None:
    training = ms.build(CPU, "unguarded")
    found = []
    with MicrobatchMonitor(training.model, on_hazard=found.append, optimizer=training.optimizer):
        training.train_step(training.batch(1))
    first = next(h for h in found if h.path == LAYER)
    assert [c.value for c in first.calls] == [True, False]
    assert first.module_type == "TELinear"


def test_monitor_restores_te_forward_when_detached() -> None:
    from lint_rules.runtime import reference_te

    original = reference_te.Linear.__dict__["forward"]
    training = ms.build(CPU, "unguarded")
    with MicrobatchMonitor(training.model, on_hazard=lambda h: None):
        assert reference_te.Linear.__dict__["forward"] is not original
    assert reference_te.Linear.__dict__["forward"] is original


def test_fsdp_overwrite_none_does_not_save_a_shared_layer_fusion_off_does() -> None:
    assert ms.fsdp_overwrite(CPU, fused=True).label == "lost"
    assert ms.fsdp_overwrite(CPU, fused=False).label == "kept"


def test_monitor_warns_on_overwrite_main_grad_with_a_repeated_module() -> None:
    training = ms.build(CPU, "none", overwrite_main_grad=True)
    found = []
    with MicrobatchMonitor(training.model, on_hazard=found.append):
        training.train_step(training.batch(1))
    kinds = {(h.kind, h.path) for h in found}
    assert ("overwrite-main-grad", LAYER) in kinds
    assert all(h.kind == "overwrite-main-grad" for h in found)  # None: no repeated-call
    again = ms.build(CPU, "none", overwrite_main_grad=True)
    with (
        pytest.warns(RuntimeWarning, match="overwrite_main_grad=True"),
        MicrobatchMonitor(again.model, on_hazard="warn"),
    ):
        again.train_step(again.batch(1))


def test_no_overwrite_warning_without_sharing() -> None:
    training = ms.build(CPU, "none", overwrite_main_grad=True, mtp_use_repeated_layer=False)
    found = []
    with MicrobatchMonitor(training.model, on_hazard=found.append):
        training.train_step(training.batch(1))
    assert found == []


def test_reentrant_recompute_reads_the_flag_again_in_backward() -> None:
    assert ms.reentrant_recompute(CPU, "unguarded", recompute=False).label == "overwritten"
    assert ms.reentrant_recompute(CPU, "unguarded", recompute=True).label == "accumulated"
    assert ms.reentrant_recompute(CPU, "none", recompute=True).label == "accumulated"


@pytest.mark.long
def test_three_legs_in_separate_processes(tmp_path) -> None:
    small = dict(ms.SIZES)
    fp8 = {**small, "fp8": "hybrid", "fp8_recipe": "tensorwise", "num_microbatches": 1}
    configs = [
        LegConfig("unguarded", "megatron", "unguarded", small),
        LegConfig("guarded", "megatron", "guarded", small),
        LegConfig("guarded fp8", "megatron", "guarded", fp8),
        LegConfig("none fp8", "megatron", "none", fp8),
    ]
    labels = run_leg_matrix(configs, backend="reference", device="cpu", workdir=tmp_path)
    assert labels == {
        "unguarded": "diverges at step 3",
        "guarded": "identical",
        "guarded fp8": "identical",  # re-armed every step: no divergence, yet lost every step
        "none fp8": "identical",
        **{f"{c.name} A/A": "identical" for c in configs},  # A and A': two straight runs agree
    }
