"""The monitor on a TE subclass that keeps the flag as state, and on ``overwrite_main_grad``.

Plain torch stand-ins: ``_TEStyle`` plays a TE module (its ``forward`` takes the flag),
``_StatefulWrapper`` Megatron-Core's ``TELinear`` (``forward(self, x)``, the flag kept as
``self.is_first_microbatch`` and passed to ``super().forward``).
"""

from __future__ import annotations

import types

import pytest

torch = pytest.importorskip("torch")

from lint_rules.runtime.monitor import MicrobatchMonitor  # noqa: E402

# -- a subclass that keeps the flag as state (Megatron-Core's TELinear shape) ---------------


class _TEStyle(torch.nn.Linear):
    """Stands for a TE module: its forward takes the flag."""

    def forward(self, x: torch.Tensor, is_first_microbatch: bool | None = None) -> torch.Tensor:
        return super().forward(x)


class _StatefulWrapper(_TEStyle):
    """``forward(self, x)``; the flag is ``self.is_first_microbatch``, cleared after use."""

    def __init__(self) -> None:
        super().__init__(4, 4)
        self.is_first_microbatch = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = super().forward(x, is_first_microbatch=self.is_first_microbatch)
        self.is_first_microbatch = False
        return out


class _Repeated(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList([_StatefulWrapper()])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(2):
            x = self.layers[0](x)
        return x


def test_stateful_wrapper_is_watched_through_its_te_base() -> None:
    model = _Repeated()
    found: list = []
    with MicrobatchMonitor(model, on_hazard=found.append) as mon:
        assert list(mon.watched) == ["layers.0"]
        model(torch.randn(2, 4)).sum().backward()
    assert [h.kind for h in found] == ["repeated-call"]
    assert [c.value for c in found[0].calls] == [True, False]


def test_stateful_wrapper_patch_is_removed_and_leaves_other_instances_alone() -> None:
    original = _TEStyle.__dict__["forward"]
    plain = _TEStyle(4, 4)
    model = _Repeated()
    found: list = []
    with MicrobatchMonitor(model, on_hazard=found.append):
        plain(torch.randn(2, 4), True)  # not watched by this monitor: passes through
        plain(torch.randn(2, 4), True)
    assert _TEStyle.__dict__["forward"] is original
    assert found == []
    model(torch.randn(2, 4))  # after detach: nothing recorded
    assert found == []


def test_overwrite_main_grad_on_a_repeated_module_is_reported_even_with_none() -> None:
    layer = torch.nn.Linear(4, 4)
    layer.forward = types.MethodType(  # type: ignore[method-assign]
        lambda self, x, is_first_microbatch=None: torch.nn.functional.linear(
            x, self.weight, self.bias
        ),
        layer,
    )

    class Twice(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer = layer

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.layer(self.layer(x, is_first_microbatch=None), is_first_microbatch=None)

    model = Twice()
    found: list = []
    with MicrobatchMonitor(model, on_hazard=found.append):
        model(torch.randn(2, 4))
    assert found == []  # None twice: fine
    layer.weight.overwrite_main_grad = True
    with MicrobatchMonitor(model, on_hazard=found.append):
        model(torch.randn(2, 4))
    assert [h.kind for h in found] == ["overwrite-main-grad"]
    assert "None does not help" in found[0].message
