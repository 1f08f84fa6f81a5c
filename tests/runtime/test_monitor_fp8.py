"""The runtime monitor under FP8: a flag left at False on the first call after an optimizer step
reuses the weight quantized before the step (``fp8=True``, hazard ``stale-fp8-cache``)."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from lint_rules.runtime.monitor import (  # noqa: E402
    STALE_FP8_CACHE,
    Hazard,
    MicrobatchHazard,
    MicrobatchMonitor,
)


class Flagged(torch.nn.Module):
    """A TE-like leaf: the flag is positional index 1, as in ``te.pytorch.Linear``."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x: Any, is_first_microbatch: bool | None = None) -> Any:
        return self.fc(x)


def x_in() -> Any:
    return torch.randn(2, 4)


def _fp8_steps(flags_per_step: list[list[Any]], fp8: bool = True) -> list[Hazard]:
    """One Flagged leaf, one call per microbatch, a step boundary after each inner list."""
    found: list[Hazard] = []
    layer = Flagged()
    with MicrobatchMonitor(layer, on_hazard=found.append, fp8=fp8) as mon:
        for flags in flags_per_step:
            for flag in flags:
                layer(x_in(), flag)
            mon.step()
    return found


def test_fp8_flags_false_on_the_first_call_after_a_step() -> None:
    found = _fp8_steps([[True, False], [False, False], [False]])
    assert [(h.kind, h.step) for h in found] == [(STALE_FP8_CACHE, 1), (STALE_FP8_CACHE, 2)]
    assert [c.value for c in found[0].calls] == [False]
    assert "previous step's weights" in found[0].message and "step 1" in found[0].message


@pytest.mark.parametrize(
    "flags",
    [
        [[True, False], [True, False], [True, False]],  # re-armed every step (Megatron, FP8)
        [[None, None], [None], [None, None]],  # the codemod's fix
        [[False, False]],  # a fresh process: nothing cached before, False quantizes and stores
    ],
    ids=["rearmed", "none", "first-step"],
)
def test_fp8_silent_when_the_cache_is_refreshed(flags: list[list[Any]]) -> None:
    assert _fp8_steps(flags) == []


def test_fp8_stale_cache_needs_to_be_told() -> None:
    """Without fp8=True a stuck False is ordinary BF16 accumulation: not reported."""
    assert _fp8_steps([[True, False], [False, False]], fp8=False) == []


def test_fp8_stale_cache_raises_by_default() -> None:
    layer = Flagged()
    with MicrobatchMonitor(layer, fp8=True) as mon:
        layer(x_in(), True)
        mon.step()
        with pytest.raises(MicrobatchHazard, match="is_first_microbatch=False"):
            layer(x_in(), False)
