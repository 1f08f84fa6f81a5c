"""The runtime monitor (``lint_rules.runtime.monitor``) on CPU, with plain torch modules that
take the ``is_first_microbatch`` keyword as TE modules do. No timing assertions here (see
``benchmarks/monitor_overhead.py``)."""

from __future__ import annotations

import subprocess
import sys
import warnings
from typing import Any

import pytest

torch = pytest.importorskip("torch")


from lint_rules.runtime.monitor import (  # noqa: E402 - after the importorskip on purpose
    REPEATED_CALL,
    TRUE_AFTER_FIRST,
    Hazard,
    MicrobatchHazard,
    MicrobatchHazardWarning,
    MicrobatchMonitor,
    watch_is_first_microbatch,
)

nn = torch.nn


class Flagged(nn.Module):
    """A TE-like leaf: the flag is positional index 1, as in ``te.pytorch.Linear``."""

    def __init__(self, width: int = 4) -> None:
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x: Any, is_first_microbatch: bool | None = None) -> Any:
        return self.fc(x)


class Grouped(nn.Module):
    """The flag at positional index 2 (``GroupedLinear(inp, m_splits, is_first_microbatch)``)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: Any, m_splits: Any, is_first_microbatch: bool | None = None) -> Any:
        return self.fc(x)


class KeywordOnly(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: Any, *, is_first_microbatch: bool | None = None) -> Any:
        return self.fc(x)


class Fused(Flagged):
    """A leaf that says it fuses wgrad (what ``only_fused`` looks at)."""

    def __init__(self) -> None:
        super().__init__()
        self.fuse_wgrad_accumulation = True


class Shared(nn.Module):
    """MTP style: one layer called at ``depths`` depths per forward, with given flags."""

    def __init__(self, flags: list[Any], layer: nn.Module | None = None) -> None:
        super().__init__()
        self.layer = layer if layer is not None else Flagged()
        self.flags = flags

    def forward(self, x: Any) -> Any:
        for flag in self.flags:
            x = self.layer(x, is_first_microbatch=flag)
        return x


class Stack(nn.Module):
    """No sharing: a loop over different modules, the flag forwarded to each."""

    def __init__(self, n: int = 3) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Flagged() for _ in range(n))

    def forward(self, x: Any, is_first_microbatch: bool | None = None) -> Any:
        for layer in self.layers:
            x = layer(x, is_first_microbatch=is_first_microbatch)
        return x


class Forwarder(nn.Module):
    """TE TransformerLayer style: takes the flag and passes it on to its children."""

    def __init__(self) -> None:
        super().__init__()
        self.attn = Flagged()
        self.mlp = Flagged()

    def forward(self, x: Any, is_first_microbatch: bool | None = None) -> Any:
        x = self.attn(x, is_first_microbatch=is_first_microbatch)
        return self.mlp(x, is_first_microbatch=is_first_microbatch)


class TwiceCaller(nn.Module):
    """A wrapper (called once) that calls its child twice: the CHILD is the hazard."""

    def __init__(self) -> None:
        super().__init__()
        self.child = Flagged()

    def forward(self, x: Any, is_first_microbatch: bool | None = None) -> Any:
        x = self.child(x, is_first_microbatch=is_first_microbatch)
        return self.child(x, is_first_microbatch=False)


def x_in() -> Any:
    return torch.randn(2, 4)


def record(model: Any, **options: Any) -> tuple[MicrobatchMonitor, list[Hazard]]:
    found: list[Hazard] = []
    return MicrobatchMonitor(model, on_hazard=found.append, **options), found


# -- import weight ---------------------------------------------------------------------------


def test_import_does_not_import_torch() -> None:
    code = "import sys, lint_rules.runtime; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


# -- what is flagged -------------------------------------------------------------------------


def test_flags_shared_layer_true_then_false() -> None:
    model = Shared([True, False])
    with MicrobatchMonitor(model, on_hazard="raise"), pytest.raises(MicrobatchHazard) as info:
        model(x_in())
    hazard = info.value.hazard
    assert hazard.kind == REPEATED_CALL
    assert hazard.path == "layer"
    assert [(c.index, c.microbatch, c.value) for c in hazard.calls] == [(0, 0, True), (1, 0, False)]
    message = str(info.value)
    assert "'layer'" in message and "call #0" in message and "is_first_microbatch=True" in message
    assert "call #1" in message and "is_first_microbatch=False" in message
    assert "None" in message  # names the fix


@pytest.mark.parametrize("flags", [[False, False], [True, None], [None, False], [True, True]])
def test_flags_any_repeated_call_with_a_non_none_flag(flags: list[Any]) -> None:
    model = Shared(flags)
    mon, found = record(model)
    with mon:
        model(x_in())
    assert found and found[0].kind == REPEATED_CALL and found[0].path == "layer"


def test_silent_with_none() -> None:
    model = Shared([None, None, None])
    with MicrobatchMonitor(model, on_hazard="raise") as mon:
        for _ in range(3):
            model(x_in())
        mon.step()
        model(x_in())
    assert mon.hazards == []


def test_flags_true_after_first_call_of_the_step() -> None:
    model = Flagged()
    mon, found = record(model)
    with mon:
        for flag in (True, False, True):  # three microbatches, the flag re-armed at the third
            model(x_in(), is_first_microbatch=flag)
    assert [h.kind for h in found] == [TRUE_AFTER_FIRST]
    hazard = found[0]
    assert hazard.path == "" and "the root module" in hazard.message
    assert [(c.index, c.microbatch, c.value) for c in hazard.calls] == [
        (0, 0, True),
        (1, 1, False),
        (2, 2, True),
    ]
    assert "call #2" in hazard.message


def test_silent_on_ordinary_gradient_accumulation() -> None:
    """One call per microbatch, True then False, False: the intended use, every step."""
    model = Stack()
    with MicrobatchMonitor(model, on_hazard="raise") as mon:
        for _ in range(3):
            for mb in range(4):
                model(x_in(), is_first_microbatch=mb == 0)
            mon.step()
    assert mon.hazards == [] and set(mon.watched) == {"", "layers.0", "layers.1", "layers.2"}


def test_silent_on_loop_over_different_modules() -> None:
    model = Stack(5)
    with MicrobatchMonitor(model, on_hazard="raise") as mon:
        model(x_in(), is_first_microbatch=True)
    assert mon.hazards == []


def test_forwarding_wrapper_is_silent_and_counted_on_its_own() -> None:
    model = nn.ModuleList([Forwarder(), Forwarder()])

    class Outer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = model

        def forward(self, x: Any, is_first_microbatch: bool | None = None) -> Any:
            for block in self.blocks:
                x = block(x, is_first_microbatch=is_first_microbatch)
            return x

    outer = Outer()
    with MicrobatchMonitor(outer, on_hazard="raise") as mon:
        outer(x_in(), is_first_microbatch=True)
        outer(x_in(), is_first_microbatch=False)
    assert mon.hazards == []
    assert {"blocks.0", "blocks.0.attn", "blocks.1.mlp"} <= set(mon.watched)


def test_wrapper_calling_a_shared_child_twice_flags_the_child() -> None:
    model = TwiceCaller()
    mon, found = record(model)
    with mon:
        model(x_in(), is_first_microbatch=True)
    assert [(h.path, h.kind) for h in found] == [("child", REPEATED_CALL)]


def test_shared_wrapper_reports_once_and_records_children_as_covered() -> None:
    model = Shared([True, False], layer=Forwarder())
    mon, found = record(model)
    with mon:
        model(x_in())
    assert [h.path for h in found] == ["layer"]
    covered = {h.path: h.covered_by for h in mon.hazards if h.covered_by is not None}
    assert covered == {"layer.attn": "layer", "layer.mlp": "layer"}


def test_module_registered_twice_names_its_aliases() -> None:
    layer = Flagged()

    class TwoNames(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.decoder = layer
            self.mtp = nn.ModuleList([layer])

        def forward(self, x: Any) -> Any:
            return self.mtp[0](self.decoder(x, is_first_microbatch=True), is_first_microbatch=False)

    model = TwoNames()
    with MicrobatchMonitor(model) as mon, pytest.raises(MicrobatchHazard) as info:
        model(x_in())
    assert info.value.hazard.path == "decoder" and info.value.hazard.aliases == ("mtp.0",)
    assert "'mtp.0'" in str(info.value)
    assert list(mon.watched) == ["decoder"]


# -- positional flag detection ---------------------------------------------------------------


def test_positional_flag_is_detected() -> None:
    model = Flagged()

    class Positional(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = model

        def forward(self, x: Any) -> Any:
            return self.fc(self.fc(x, True), False)

    outer = Positional()
    mon, found = record(outer)
    with mon:
        outer(x_in())
    assert [(c.value) for c in found[0].calls] == [True, False]


def test_positional_flag_at_index_two_and_keyword_only() -> None:
    grouped, kw_only = Grouped(), KeywordOnly()

    class Both(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.grouped = grouped
            self.kw_only = kw_only

        def forward(self, x: Any) -> Any:
            x = self.grouped(x, [2], True)
            x = self.grouped(x, [2], False)
            x = self.kw_only(x, is_first_microbatch=True)
            return self.kw_only(x)  # the default (None) still counts as a call

    model = Both()
    mon, found = record(model)
    with mon:
        model(x_in())
    got = {h.path: [c.value for c in h.calls] for h in found}
    assert got == {"grouped": [True, False], "kw_only": [True, None]}


@pytest.mark.parametrize("module", [Flagged(), Grouped(), KeywordOnly()], ids=type)
def test_flag_position_agrees_with_bind_partial(module: nn.Module) -> None:
    """The precomputed index reads the same value that ``Signature.bind_partial`` binds."""
    import inspect

    from lint_rules.runtime.monitor import _flag_position

    index, default = _flag_position(module.forward)
    sig = inspect.signature(module.forward)
    for args, kwargs in [
        (("x",), {}),
        (("x", "s"), {}),
        (("x", "s", "f"), {}),
        (("x",), {"is_first_microbatch": "k"}),
    ]:
        try:
            bound = sig.bind_partial(*args, **kwargs).arguments
        except TypeError:
            continue  # the module would reject this call itself
        expected = bound.get("is_first_microbatch", default)
        if "is_first_microbatch" in kwargs:
            got = kwargs["is_first_microbatch"]
        elif index is not None and len(args) > index:
            got = args[index]
        else:
            got = default
        assert got == expected, (args, kwargs)


def test_default_value_is_used_when_the_flag_is_not_passed() -> None:
    model = Shared([])  # calls nothing itself; drive the leaf directly
    leaf = model.layer
    mon, found = record(model, microbatch_boundary="manual")
    with mon:
        leaf(x_in())
        leaf(x_in())
    assert found == [] and mon.hazards == []  # two calls, both None (the default)


def test_modules_without_the_parameter_are_not_watched() -> None:
    class Splat(nn.Module):
        def forward(self, x: Any, **kwargs: Any) -> Any:
            return x

    model = nn.Sequential(nn.Linear(4, 4), Splat())
    with MicrobatchMonitor(model) as mon:
        model(x_in())
    assert mon.watched == {}


# -- step boundaries -------------------------------------------------------------------------


def test_step_resets_counts() -> None:
    model = Flagged()
    with MicrobatchMonitor(model, on_hazard="raise") as mon:
        model(x_in(), is_first_microbatch=True)
        model(x_in(), is_first_microbatch=False)
        assert mon.call_counts() == {"": 2}
        mon.step()
        assert mon.call_counts() == {"": 0}
        model(x_in(), is_first_microbatch=True)  # first call of the new step: fine
        assert mon.step_index == 1 and mon.call_counts() == {"": 1}
        with pytest.raises(MicrobatchHazard):
            model(x_in(), is_first_microbatch=True)  # no step() in between: flagged


def test_optimizer_hook_marks_the_step() -> None:
    model = Flagged()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with MicrobatchMonitor(model, on_hazard="raise", optimizer=opt) as mon:
        for _ in range(3):
            for mb in range(2):
                model(x_in(), is_first_microbatch=mb == 0).sum().backward()
            opt.step()
            opt.zero_grad()
        assert mon.step_index == 3 and mon.hazards == []
    opt.step()  # the hook went away with the monitor
    assert mon.step_index == 3
    with mon:  # and comes back with it
        opt.step()
    assert mon.step_index == 4


def test_attach_optimizer_rejects_objects_without_the_hook() -> None:
    with pytest.raises(TypeError, match="step\\(\\)"):
        MicrobatchMonitor(Flagged()).attach_optimizer(object())


def test_no_grad_forward_is_ignored() -> None:
    """A validation pass between steps does not count (it cannot overwrite gradients)."""
    model = Flagged()
    with MicrobatchMonitor(model, on_hazard="raise") as mon:
        model(x_in(), is_first_microbatch=True)
        with torch.no_grad():
            model(x_in(), is_first_microbatch=True)
        model(x_in(), is_first_microbatch=False)
    assert mon.hazards == []


@pytest.mark.parametrize("reentrant", [True, False])
def test_activation_checkpointing_recompute_is_not_a_second_call(reentrant: bool) -> None:
    from torch.utils.checkpoint import checkpoint

    class Checkpointed(nn.Module):
        def __init__(self, flags: list[Any]) -> None:
            super().__init__()
            self.layer = Flagged()
            self.flags = flags

        def forward(self, x: Any) -> Any:
            for flag in self.flags:
                x = checkpoint(self.layer, x, flag, use_reentrant=reentrant)
            return x

    x = torch.randn(2, 4, requires_grad=True)
    single = Checkpointed([True])
    with MicrobatchMonitor(single, on_hazard="raise") as mon:
        single(x).sum().backward()
        single.flags = [False]  # second microbatch of the step
        single(x).sum().backward()
    assert mon.hazards == []

    shared = Checkpointed([True, False])
    mon, found = record(shared)
    with mon:
        shared(x).sum().backward()
    assert [(h.kind, h.path) for h in found] == [(REPEATED_CALL, "layer")]


def test_manual_microbatch_boundaries() -> None:
    leaf = Flagged()
    mon, found = record(leaf, microbatch_boundary="manual")
    with mon:
        mon.microbatch()  # optional before the first microbatch
        leaf(x_in(), is_first_microbatch=True)
        mon.microbatch()
        leaf(x_in(), is_first_microbatch=False)
        mon.step()
        leaf(x_in(), is_first_microbatch=True)
        leaf(x_in(), is_first_microbatch=False)  # no boundary: same microbatch
    assert [(h.kind, h.step) for h in found] == [(REPEATED_CALL, 1)]


def test_pipeline_chunks_as_a_list_of_roots() -> None:
    chunks = [Stack(2), Stack(2)]
    mon, found = record(chunks)
    with mon:
        for mb in range(3):  # interleaved chunk forwards, one call per microbatch each
            for chunk in chunks:
                chunk(x_in(), is_first_microbatch=mb == 0)
    assert found == [] and {"0", "0.layers.1", "1.layers.0"} <= set(mon.watched)


# -- modes and lifecycle ---------------------------------------------------------------------


def test_warn_mode_warns_at_the_call_site() -> None:
    model = Shared([True, False])
    with (
        MicrobatchMonitor(model, on_hazard="warn") as mon,
        warnings.catch_warnings(record=True) as w,
    ):
        warnings.simplefilter("always")
        out = model(x_in())
    assert out.shape == (2, 4)  # the forward ran to the end
    assert [type(x.message) for x in w] == [MicrobatchHazardWarning]
    assert w[0].filename == Shared.forward.__code__.co_filename  # the line that called the layer
    assert w[0].lineno > Shared.forward.__code__.co_firstlineno
    assert len(mon.hazards) == 1 and issubclass(MicrobatchHazardWarning, RuntimeWarning)


def test_callable_mode_receives_the_hazard_and_the_forward_continues() -> None:
    model = Shared([True, False, False])
    mon, found = record(model)
    with mon:
        model(x_in())
    assert len(found) == 1  # once per module and pattern per step, not once per extra call
    assert isinstance(found[0], Hazard) and found[0].step == 0


def test_each_step_reports_again() -> None:
    model = Shared([True, False])
    mon, found = record(model)
    with mon:
        for _ in range(3):
            model(x_in())
            mon.step()
    assert [h.step for h in found] == [0, 1, 2] and mon.hazard_count == 3


def test_raise_is_a_runtime_error_with_the_hazard() -> None:
    assert issubclass(MicrobatchHazard, RuntimeError)
    model = Shared([True, False])
    with MicrobatchMonitor(model) as mon:
        with pytest.raises(RuntimeError):
            model(x_in())
        assert mon._root_depth == 0  # the root's exit hook ran although the forward raised
    root = Flagged()  # the root itself takes the flag and raises in its own pre-hook
    with MicrobatchMonitor(root) as mon:
        root(x_in(), is_first_microbatch=True)
        with pytest.raises(MicrobatchHazard):
            root(x_in(), is_first_microbatch=True)
        assert mon._root_depth == 0


def test_invalid_options() -> None:
    with pytest.raises(ValueError):
        MicrobatchMonitor(Flagged(), on_hazard="ignore")
    with pytest.raises(ValueError):
        MicrobatchMonitor(Flagged(), microbatch_boundary="step")
    with pytest.raises(TypeError):
        MicrobatchMonitor([])


def _hook_counts(model: nn.Module) -> int:
    return sum(len(m._forward_pre_hooks) + len(m._forward_hooks) for m in model.modules())


def test_hooks_removed_after_exit_even_on_error() -> None:
    model = Shared([True, False], layer=Forwarder())
    assert _hook_counts(model) == 0
    with pytest.raises(MicrobatchHazard), MicrobatchMonitor(model) as mon:
        assert _hook_counts(model) > 0 and mon.attached
        model(x_in())
    assert _hook_counts(model) == 0 and not mon.attached
    model(x_in())  # nothing watches any more


def test_watch_function_returns_an_attached_monitor() -> None:
    model = Shared([True, False])
    mon = watch_is_first_microbatch(model, on_hazard="raise")
    try:
        assert mon.attached
        with pytest.raises(MicrobatchHazard):
            model(x_in())
    finally:
        mon.detach()
    model(x_in())
    assert _hook_counts(model) == 0


def test_only_fused_watches_fused_modules_only() -> None:
    plain, fused = Shared([True, False]), Shared([True, False], layer=Fused())
    with MicrobatchMonitor(plain, only_fused=True) as mon:
        plain(x_in())
    assert mon.watched == {}
    with MicrobatchMonitor(fused, only_fused=True) as mon, pytest.raises(MicrobatchHazard):
        fused(x_in())


def test_include_filter() -> None:
    model = Shared([True, False], layer=Forwarder())
    mon, found = record(model, include=lambda path, module: path.endswith("mlp"))
    with mon:
        model(x_in())
    assert [h.path for h in found] == ["layer.mlp"]


def test_tensor_flag_is_shown_without_reading_it() -> None:
    model = Shared([torch.tensor(True), torch.tensor(False)])
    mon, found = record(model)
    with mon:
        model(x_in())
    assert "<Tensor shape=()>" in found[0].message
