"""Runtime monitor for the module-called-twice ``is_first_microbatch`` hazard.

The static rules can prove that a flag is tracked, but not how often a module runs per step: a
layer shared across depths (multi-token prediction with a repeated layer) or a flag re-armed in
the middle of a step is only visible while the model runs. This monitor watches every submodule
whose ``forward`` takes ``is_first_microbatch`` and reports, naming the module and its calls:

* ``repeated-call``: the module is called more than once in ONE microbatch (one forward of the
  monitored model) and at least one of those calls passes a flag that is not ``None``. Backward
  runs in reverse, so with fused wgrad the first call (flag ``True`` on the first microbatch of a
  step, every step under FP8 in Megatron-Core, and after a resume when the flag is not tracked)
  writes ``main_grad`` last and overwrites the gradients of the later calls.
* ``true-after-first``: the module receives ``True`` after its first call of the step. With fused
  wgrad that call overwrites the gradient the earlier calls of the step accumulated.

* ``stale-fp8-cache`` (only with ``fp8=True``: the run uses FP8): the module receives ``False`` on
  its first call after a step boundary, having been called in an earlier step. Under FP8,
  ``False`` reuses the quantized weight cached at the module's last ``True`` call, so this
  forward runs on the weights from before the optimizer step (TE 2.20.2 ``module/linear.py``:
  ``update_ws = is_first_microbatch is None or is_first_microbatch``).

A module called once per microbatch (``True`` then ``False``, ``False``, ... across the
microbatches of a step) is the intended use and is not reported. The monitor flags the calling
pattern; whether gradient is really lost also depends on ``fuse_wgrad_accumulation``, which is
not always visible (wrappers, plain torch modules), so it is checked only with
``only_fused=True``. See docs/runtime.md, "Runtime monitor".

Importing this module does not import torch; torch is imported when a monitor is created.
"""

from __future__ import annotations

import inspect
import os
import sys
import warnings
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Callable, Union

from lint_rules.runtime.monitor_hazards import (
    FLAG,
    OVERWRITE_MAIN_GRAD,
    REPEATED_CALL,
    STALE_FP8_CACHE,
    TRUE_AFTER_FIRST,
    FlagCall,
    Hazard,
    MicrobatchHazard,
    MicrobatchHazardWarning,
)
from lint_rules.runtime.monitor_stateful import stateful_base, watch_base_calls

if TYPE_CHECKING:  # pragma: no cover - typing only, keeps the import light
    from types import FrameType

    import torch

__all__ = [
    "FLAG",
    "OVERWRITE_MAIN_GRAD",
    "REPEATED_CALL",
    "STALE_FP8_CACHE",
    "TRUE_AFTER_FIRST",
    "FlagCall",
    "Hazard",
    "MicrobatchHazard",
    "MicrobatchHazardWarning",
    "MicrobatchMonitor",
    "watch_is_first_microbatch",
]


#: Calls kept per module and step for the report (the count itself is exact).
_MAX_KEPT_CALLS = 32
#: Hazards kept in ``MicrobatchMonitor.hazards`` (``hazard_count`` counts all of them).
_MAX_KEPT_HAZARDS = 1000

_TORCH_MODULE_FILE = os.path.join("torch", "nn", "modules", "module.py")


_Call = tuple[int, int, Any]
"""(index, microbatch, value): a ``FlagCall`` before it is needed (tuples are cheaper)."""
OnHazard = Union[str, Callable[[Hazard], Any]]
ModuleFilter = Callable[[str, "torch.nn.Module"], bool]


def _flag_position(forward: Callable[..., Any]) -> tuple[int | None, Any] | None:
    """Where ``forward`` takes the flag: (positional index or None, default), or None if not.

    The index is what ``inspect.Signature.bind_partial`` would map the flag to: the count of
    positional parameters before it (``forward`` is the bound method, so ``self`` is gone).
    """
    try:
        params = list(inspect.signature(forward).parameters.values())
    except (TypeError, ValueError):  # builtins or odd callables: nothing to watch
        return None
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    for i, param in enumerate(params):
        if param.name != FLAG:
            continue
        if param.kind not in positional and param.kind is not inspect.Parameter.KEYWORD_ONLY:
            return None  # ``*is_first_microbatch`` or ``**is_first_microbatch``: not the flag
        index = i if param.kind in positional else None
        default = None if param.default is inspect.Parameter.empty else param.default
        return index, default
    return None


class _Watch:
    """Per-module state; reset lazily when the monitor's step generation changes."""

    __slots__ = (
        "module",
        "path",
        "aliases",
        "index",
        "default",
        "generation",
        "count",
        "calls",
        "microbatch",
        "mb_calls",
        "mb_count",
        "mb_non_none",
        "reported",
        "ever_called",
        "base",
    )

    def __init__(
        self, module: Any, path: str, aliases: tuple[str, ...], index: int | None, default: Any
    ) -> None:
        self.module = module
        self.path = path
        self.aliases = aliases
        self.index = index
        self.default = default
        self.generation = -1
        self.ever_called = False  # called in any step so far (under FP8: a cache may exist)
        self.base: type | None = None  # a stateful wrapper: the TE class whose forward is seen
        self.reset(0)

    def reset(self, generation: int) -> None:
        self.generation = generation
        self.count = 0
        self.calls: list[_Call] = []
        self.microbatch = -1
        self.mb_calls: list[_Call] = []
        self.mb_count = 0
        self.mb_non_none = False
        self.reported: set[str] = set()


class MicrobatchMonitor:
    """Watches the ``is_first_microbatch`` calls of a model's submodules between step boundaries.

    ``model`` is the module whose forward is one microbatch (the model, or a list of pipeline
    chunks). Every submodule (the root included) whose ``forward`` has a parameter named
    ``is_first_microbatch`` gets a forward pre-hook (with kwargs); each is counted on its own, so
    a wrapper that forwards the flag to its children is not itself a hazard, and a wrapper that
    calls a shared child twice gets the CHILD reported.

    Boundaries: a microbatch starts at each forward of ``model`` (or at ``microbatch()`` when
    ``microbatch_boundary="manual"``); a step ends at ``step()`` or at the ``step()`` of an
    optimizer given to ``attach_optimizer``.

    Counted calls: those that can produce a weight gradient. A forward of ``model`` entered with
    gradients disabled (validation, ``torch.no_grad``) is ignored as a whole; calls made during
    backward (activation-checkpoint recomputation) are ignored because they repeat a forward
    already counted. A no-grad segment inside a grad-enabled forward (reentrant checkpointing)
    is counted, since its recomputation will carry the gradient.

    ``on_hazard``: ``"raise"`` (``MicrobatchHazard`` from the offending call), ``"warn"``
    (``MicrobatchHazardWarning`` at the call site), or a callable taking the ``Hazard``. Each
    module and pattern is dispatched at most once per step; all are kept in ``hazards``.

    ``only_fused=True`` watches only modules whose ``fuse_wgrad_accumulation`` attribute is true
    (TE's Linear, LayerNormLinear, LayerNormMLP, GroupedLinear), where the pattern does lose
    gradient; the default watches every module with the keyword, because fusion is not always
    visible and the pattern is fragile anyway. ``include(path, module)`` can narrow the set.

    ``fp8=True`` says the run uses FP8 (or FP4): then a module that gets ``False`` on its first
    call after a step boundary is reported as ``STALE_FP8_CACHE`` (its forward reuses the weight
    quantized before the optimizer step). The monitor cannot see whether a run uses FP8, so it
    checks this only when told.
    """

    def __init__(
        self,
        model: torch.nn.Module | Iterable[torch.nn.Module],
        on_hazard: OnHazard = "raise",
        *,
        only_fused: bool = False,
        microbatch_boundary: str = "forward",
        optimizer: Any = None,
        include: ModuleFilter | None = None,
        fp8: bool = False,
    ) -> None:
        import torch  # fail early and clearly when torch is missing

        if not (callable(on_hazard) or on_hazard in ("raise", "warn")):
            raise ValueError(f"on_hazard must be 'raise', 'warn' or a callable, not {on_hazard!r}")
        if microbatch_boundary not in ("forward", "manual"):
            raise ValueError(
                f"microbatch_boundary must be 'forward' or 'manual', not {microbatch_boundary!r}"
            )
        self.on_hazard = on_hazard
        self.only_fused = only_fused
        self.microbatch_boundary = microbatch_boundary
        self.include = include
        self.fp8 = bool(fp8)
        self._roots = self._as_roots(model)
        self._watches: list[_Watch] = []
        self._handles: list[Any] = []
        self._optimizers: list[Any] = []
        self._optimizer_handles: list[Any] = []
        self.hazards: list[Hazard] = []
        self.hazard_count = 0
        self.step_index = 0
        self._generation = 0
        self._microbatch = 0
        self._microbatch_used = False
        self._root_depth = 0
        self._root_counts = True
        self._reported_paths: dict[str, list[str]] = {}
        self._in_backward = _backward_probe()
        self._is_grad_enabled = torch.is_grad_enabled
        if optimizer is not None:
            optimizers = optimizer if isinstance(optimizer, (list, tuple)) else [optimizer]
            for opt in optimizers:
                self.attach_optimizer(opt)

    @staticmethod
    def _as_roots(model: Any) -> list[tuple[str, Any]]:
        import torch

        if isinstance(model, torch.nn.Module):
            return [("", model)]
        roots = list(model)
        if not roots or not all(isinstance(m, torch.nn.Module) for m in roots):
            raise TypeError("model must be a torch.nn.Module or a non-empty list of them")
        return [(f"{i}.", m) for i, m in enumerate(roots)]

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def attached(self) -> bool:
        return bool(self._handles)

    @property
    def watched(self) -> dict[str, torch.nn.Module]:
        """Path -> module of every watched module (filled by ``attach``)."""
        return {w.path: w.module for w in self._watches}

    def attach(self) -> MicrobatchMonitor:
        """Register the hooks (idempotent); returns ``self``."""
        if self.attached:
            return self
        self._watches = self._find_watches()
        if self.microbatch_boundary == "forward":
            for _, root in self._roots:
                # prepend: the microbatch must start before a root that takes the flag is counted
                self._handles.append(root.register_forward_pre_hook(self._root_enter, prepend=True))
                self._handles.append(root.register_forward_hook(self._root_exit, always_call=True))
        for watch in self._watches:
            hook = self._make_hook(watch)
            if watch.base is not None:  # a TE subclass keeping the flag: see what TE receives
                stop = watch_base_calls(watch.base, watch.module, hook)
                self._handles.append(_StopHandle(stop))
                continue
            self._handles.append(watch.module.register_forward_pre_hook(hook, with_kwargs=True))
        for optimizer in self._optimizers:
            self._optimizer_handles.append(self._hook_optimizer(optimizer))
        if not self._handles:  # nothing watched and manual boundaries: still mark as attached
            self._handles.append(_NullHandle())
        return self

    def detach(self) -> None:
        """Remove every hook, the optimizer hooks included (``attach`` adds them back)."""
        for handle in self._handles + self._optimizer_handles:
            handle.remove()
        self._handles = []
        self._optimizer_handles = []
        self._root_depth = 0

    close = detach

    def __enter__(self) -> MicrobatchMonitor:
        return self.attach()

    def __exit__(self, *exc: object) -> None:
        self.detach()

    def _find_watches(self) -> list[_Watch]:
        paths: dict[int, list[str]] = {}
        modules: dict[int, Any] = {}
        for prefix, root in self._roots:
            for name, module in root.named_modules(remove_duplicate=False):
                key = id(module)
                modules.setdefault(key, module)
                path = (prefix + name).rstrip(".") if prefix else name
                paths.setdefault(key, []).append(path)
        watches = []
        for key, module in modules.items():
            where = _flag_position(module.forward)
            base = None
            if where is None:
                found = stateful_base(module)
                if found is None:
                    continue
                base, *rest = found
                where = (rest[0], rest[1])
            path, *aliases = paths[key]
            if self.only_fused and not getattr(module, "fuse_wgrad_accumulation", None):
                continue
            if self.include is not None and not self.include(path, module):
                continue
            watch = _Watch(module, path, tuple(aliases), *where)
            watch.base = base
            watches.append(watch)
        return watches

    def call_counts(self) -> dict[str, int]:
        """Path -> counted calls of each watched module in the current step (for debugging)."""
        return {w.path: w.count if w.generation == self._generation else 0 for w in self._watches}

    # -- boundaries --------------------------------------------------------------------------

    def step(self) -> None:
        """Mark a step boundary (after the optimizer step): per-step counts start again."""
        self.step_index += 1
        self._generation += 1
        self._microbatch = 0
        self._microbatch_used = False
        self._reported_paths = {}

    def microbatch(self) -> None:
        """Mark the start of a microbatch (``microbatch_boundary="manual"``; harmless otherwise).

        Calling it before the first microbatch of a step is optional.
        """
        if self._microbatch_used:
            self._microbatch += 1
            self._microbatch_used = False

    def attach_optimizer(self, optimizer: Any) -> None:
        """Call ``step()`` after every ``optimizer.step()`` while the monitor is attached.

        Needs ``torch.optim.Optimizer.register_step_post_hook``; for an optimizer wrapper
        without it (Megatron-Core's ``MegatronOptimizer``), call ``step()`` yourself.
        """
        if getattr(optimizer, "register_step_post_hook", None) is None:
            raise TypeError(
                f"{type(optimizer).__name__} has no register_step_post_hook; "
                "call MicrobatchMonitor.step() after each optimizer step instead"
            )
        self._optimizers.append(optimizer)
        if self.attached:
            self._optimizer_handles.append(self._hook_optimizer(optimizer))

    def _hook_optimizer(self, optimizer: Any) -> Any:
        return optimizer.register_step_post_hook(lambda *_args: self.step())

    # -- hooks -------------------------------------------------------------------------------

    def _root_enter(self, module: Any, args: Any) -> None:
        self._root_depth += 1
        if self._root_depth == 1:
            self._root_counts = self._is_grad_enabled() and not self._in_backward()
            if self._root_counts:
                self.microbatch()

    def _root_exit(self, module: Any, args: Any, output: Any) -> None:
        if self._root_depth:
            self._root_depth -= 1

    def _make_hook(self, watch: _Watch) -> Callable[..., None]:
        is_grad_enabled = self._is_grad_enabled
        in_backward = self._in_backward
        index, default, flag = watch.index, watch.default, FLAG

        def hook(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            if in_backward():
                return
            if self._root_depth:
                if not self._root_counts:
                    return
            elif not is_grad_enabled():
                return
            if flag in kwargs:
                value = kwargs[flag]
            elif index is not None and len(args) > index:
                value = args[index]
            else:
                value = default
            self._record(watch, value)

        return hook

    def _record(self, watch: _Watch, value: Any) -> None:
        """Count one call and report the patterns it completes (the hot path: kept lean)."""
        if watch.generation != self._generation:
            watch.reset(self._generation)
        microbatch = self._microbatch
        self._microbatch_used = True
        index = watch.count
        watch.count = index + 1
        if index == 0 and self.fp8 and watch.ever_called and value is False:
            # first call after a step boundary, a cache from an earlier step, and False: stale
            self._report(watch, STALE_FP8_CACHE, [(index, microbatch, value)], 1, None)
        watch.ever_called = True
        call = (index, microbatch, value)
        if index < _MAX_KEPT_CALLS:
            watch.calls.append(call)
        if watch.microbatch != microbatch:  # first call in this microbatch: the usual case
            watch.microbatch = microbatch
            watch.mb_calls = [call]
            watch.mb_count = 1
            watch.mb_non_none = value is not None
        else:
            watch.mb_count += 1
            if len(watch.mb_calls) < _MAX_KEPT_CALLS:
                watch.mb_calls.append(call)
            if value is not None:
                watch.mb_non_none = True
            if watch.mb_non_none and REPEATED_CALL not in watch.reported:
                self._report(watch, REPEATED_CALL, watch.mb_calls, watch.mb_count, call)
            if OVERWRITE_MAIN_GRAD not in watch.reported and _overwrites(watch.module):
                # None does not save a module whose weights force overwrite (Megatron-FSDP)
                self._report(watch, OVERWRITE_MAIN_GRAD, watch.mb_calls, watch.mb_count, call)
        # True or a non-zero int; a tensor flag is never read (that would sync the device)
        true = value is True or (type(value) is int and value != 0)
        if index and true and TRUE_AFTER_FIRST not in watch.reported:
            self._report(watch, TRUE_AFTER_FIRST, watch.calls, watch.count, call)

    def _report(
        self, watch: _Watch, kind: str, kept: list[_Call], total: int, trigger: _Call | None
    ) -> None:
        calls = list(kept)
        if trigger is not None and calls[-1] is not trigger:
            calls[-1] = trigger  # the list is full: show the triggering call in the last slot
        watch.reported.add(kind)
        names = (watch.path, *watch.aliases)
        reported = self._reported_paths.setdefault(kind, [])
        covered_by = next(
            (
                outer
                for outer in reported
                for name in names
                if name.startswith(outer + ".") or (outer == "" and name != "")
            ),
            None,
        )
        reported.extend(names)
        hazard = Hazard(
            kind=kind,
            path=watch.path,
            aliases=watch.aliases,
            module_type=type(watch.module).__name__,
            step=self.step_index,
            calls=tuple(FlagCall(*call) for call in calls),
            omitted=total - len(calls),
            covered_by=covered_by,
        )
        self.hazard_count += 1
        if len(self.hazards) < _MAX_KEPT_HAZARDS:
            self.hazards.append(hazard)
        if covered_by is None:
            self._dispatch(hazard)

    def _dispatch(self, hazard: Hazard) -> None:
        if self.on_hazard == "raise":
            raise MicrobatchHazard(hazard)
        if self.on_hazard == "warn":
            warnings.warn(hazard.message, MicrobatchHazardWarning, stacklevel=_caller_level())
            return
        self.on_hazard(hazard)  # type: ignore[operator]


class _NullHandle:
    def remove(self) -> None:
        pass


class _StopHandle:
    def __init__(self, stop: Callable[[], None]) -> None:
        self.remove = stop


def _overwrites(module: Any) -> bool:
    """Whether a weight of ``module`` has TE's ``overwrite_main_grad`` attribute set."""
    return any(getattr(p, "overwrite_main_grad", False) for p in module.parameters())


def _backward_probe() -> Callable[[], bool]:
    """A cheap "are we inside autograd's backward?" test (recomputation runs there)."""
    import torch

    task_id = getattr(torch._C, "_current_graph_task_id", None)
    if task_id is None:  # pragma: no cover - very old torch: count recomputation too
        return lambda: False
    return lambda: task_id() != -1


def _caller_level() -> int:
    """``stacklevel`` that points a warning at the code that called the module."""
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and (
        frame.f_code.co_filename == __file__
        or frame.f_code.co_filename.endswith(_TORCH_MODULE_FILE)
    ):
        frame = frame.f_back
        level += 1
    return level


def watch_is_first_microbatch(
    model: torch.nn.Module | Iterable[torch.nn.Module],
    on_hazard: OnHazard = "raise",
    **options: Any,
) -> MicrobatchMonitor:
    """Attach a ``MicrobatchMonitor`` to ``model`` and return it; call ``detach()`` to stop.

    ``options`` are those of ``MicrobatchMonitor`` (``only_fused``, ``microbatch_boundary``,
    ``optimizer``, ``include``, ``fp8``).
    """
    return MicrobatchMonitor(model, on_hazard, **options).attach()
