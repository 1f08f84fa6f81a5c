"""The runtime monitor on the suite's shared-layer model, on every backend (reference-cpu,
reference-cuda, te-cuda): unguarded flagged, fixed silent, FP8 stale cache flagged."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from runtime_support import Backend  # noqa: E402

from lint_rules.runtime.monitor import (  # noqa: E402
    REPEATED_CALL,
    STALE_FP8_CACHE,
    Hazard,
    MicrobatchHazard,
    MicrobatchMonitor,
)

# -- the runtime suite's shared-layer model (lint_rules.runtime.shared_layer) ---------


def build(variant: str, backend: Backend, **config: Any) -> Any:
    """The fixture's Training (unguarded as written, or after the project's codemod)."""
    from lint_rules.runtime.shared_layer import build_shared_layer_training

    return build_shared_layer_training(
        variant, backend=backend.name, device=backend.device, seed=0, **config
    )


def _train(
    training: Any, steps: int, rearm: bool = False, **options: Any
) -> tuple[list[Hazard], MicrobatchMonitor]:
    """Train with the monitor watching; ``rearm`` sets the flag True every step as
    Megatron-Core's schedule does under FP8 (``set_is_first_microbatch``)."""
    found: list[Hazard] = []
    with MicrobatchMonitor(
        training.model, on_hazard=found.append, optimizer=training.optimizer, **options
    ) as mon:
        for step in range(steps):
            if rearm:
                training.model.is_first_microbatch = True
            training.train_step(training.batch(step))
    assert mon.step_index == steps  # the optimizer hook marked every step
    return found, mon


def test_suite_model_unguarded_is_flagged(backend: Backend) -> None:
    found, mon = _train(build("unguarded", backend), steps=3)
    assert set(mon.watched) == {"mtp_layer"}
    first = found[0]
    assert (first.kind, first.path, first.step) == (REPEATED_CALL, "mtp_layer", 0)
    assert [(c.microbatch, c.value) for c in first.calls] == [(0, True), (0, False)]
    # later steps pass False, False: still a shared module fed a non-None flag
    assert {h.step for h in found} == {0, 1, 2}


def test_suite_model_unguarded_raises_at_the_first_shared_call(backend: Backend) -> None:
    training = build("unguarded", backend)
    with (
        MicrobatchMonitor(training.model, on_hazard="raise"),
        pytest.raises(MicrobatchHazard, match="'mtp_layer'") as info,
    ):
        training.train_step(training.batch(0))
    assert [c.value for c in info.value.hazard.calls] == [True, False]


def test_suite_model_unguarded_after_resume_is_flagged(backend: Backend) -> None:
    """A fresh process that loads a checkpoint starts with the flag True again."""
    trained = build("unguarded", backend)
    for step in range(2):
        trained.train_step(trained.batch(step))
    resumed = build("unguarded", backend)
    resumed.model.load_state_dict(trained.model.state_dict())
    resumed.optimizer.load_state_dict(trained.optimizer.state_dict())
    found: list[Hazard] = []
    with MicrobatchMonitor(resumed.model, on_hazard=found.append):
        resumed.train_step(resumed.batch(2))
    assert [c.value for c in found[0].calls] == [True, False]


def test_suite_model_unguarded_fp8_rearm_is_flagged_every_step(backend: Backend) -> None:
    found, _ = _train(build("unguarded", backend), steps=3, rearm=True)
    assert [(h.step, h.calls[0].value) for h in found] == [(0, True), (1, True), (2, True)]


@pytest.mark.parametrize("rearm", [False, True])
@pytest.mark.parametrize("only_fused", [False, True])
def test_suite_model_fixed_is_silent(backend: Backend, rearm: bool, only_fused: bool) -> None:
    found, mon = _train(build("fixed", backend), steps=3, rearm=rearm, only_fused=only_fused)
    assert set(mon.watched) == {"mtp_layer"} and found == [] and mon.hazards == []


@pytest.mark.parametrize("variant", ["unguarded", "fixed"])
@pytest.mark.parametrize("rearm", [False, True])
def test_suite_model_without_sharing_is_silent(backend: Backend, variant: str, rearm: bool) -> None:
    """One depth: the unguarded flag (True once per step at most, then False) is intended use."""
    found, mon = _train(build(variant, backend, mtp_num_layers=1), steps=3, rearm=rearm)
    assert set(mon.watched) == {"mtp_layer"} and found == [] and mon.hazards == []


def test_suite_model_only_fused_sees_the_fused_layer(backend: Backend) -> None:
    training = build("unguarded", backend)
    assert training.model.mtp_layer.fuse_wgrad_accumulation is True
    with MicrobatchMonitor(training.model, only_fused=True) as mon, pytest.raises(MicrobatchHazard):
        training.train_step(training.batch(0))
    assert set(mon.watched) == {"mtp_layer"}


def test_suite_model_fp8_stuck_flag_is_flagged(backend: Backend) -> None:
    """One depth, FP8, a loop that never re-arms the flag: stale from the second step on."""
    from lint_rules.runtime.fixture_scenarios import monitor_kinds

    if backend.fp8_unavailable():
        pytest.skip(backend.fp8_unavailable())
    found = monitor_kinds(backend, "unguarded", fp8=True, rearm=False, mtp_num_layers=1)
    assert (found.label, found.detail) == (STALE_FP8_CACHE, "steps [1, 2]")
    rearmed = monitor_kinds(backend, "unguarded", fp8=True, rearm=True, mtp_num_layers=1)
    assert rearmed.label == "silent"
