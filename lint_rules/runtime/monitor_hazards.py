"""The monitor's findings: ``FlagCall``, ``Hazard`` and its messages, the exception and warning.

Split from :mod:`lint_rules.runtime.monitor` (which re-exports every public name here). No
torch import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

FLAG = "is_first_microbatch"
REPEATED_CALL = "repeated-call"
TRUE_AFTER_FIRST = "true-after-first"
STALE_FP8_CACHE = "stale-fp8-cache"
OVERWRITE_MAIN_GRAD = "overwrite-main-grad"


@dataclass(frozen=True)
class FlagCall:
    """One counted call of a watched module: where it falls in the step, and the flag it got."""

    index: int
    """0-based number of this call among the module's counted calls in the step."""
    microbatch: int
    """0-based microbatch (forward of the monitored model) of the step the call fell in."""
    value: Any
    """The ``is_first_microbatch`` value the module received (its default when not passed)."""

    def describe(self) -> str:
        return f"call #{self.index} (microbatch {self.microbatch}) {FLAG}={_show(self.value)}"


@dataclass(frozen=True)
class Hazard:
    """A reported calling pattern; ``message`` explains it and names the fix."""

    kind: str
    """``REPEATED_CALL``, ``TRUE_AFTER_FIRST``, ``STALE_FP8_CACHE`` or ``OVERWRITE_MAIN_GRAD``."""
    path: str
    """Qualified name of the module in the monitored model (``named_modules``); ``""`` = root."""
    aliases: tuple[str, ...]
    """Other names under which the same module object is registered (a shared layer)."""
    module_type: str
    step: int
    """Number of step boundaries seen before the call (0 in the first step)."""
    calls: tuple[FlagCall, ...]
    """The calls that make the pattern; the last one is the call that triggered the report."""
    omitted: int = 0
    """Calls of the pattern not listed in ``calls`` (only the first few are kept)."""
    covered_by: str | None = None
    """Path of an enclosing module already reported for the same pattern in this step; such
    hazards are recorded but not dispatched (one root cause, one report)."""

    @property
    def message(self) -> str:
        name = repr(self.path) if self.path else "the root module"
        where = f"{name} ({self.module_type})"
        if self.aliases:
            where += ", also registered as " + ", ".join(repr(a) for a in self.aliases)
        listed = "; ".join(call.describe() for call in self.calls)
        if self.omitted:
            listed += f"; ... and {self.omitted} more"
        trigger = self.calls[-1]
        if self.kind == STALE_FP8_CACHE:
            return (
                f"{where} received {FLAG}=False on its first call after an optimizer step "
                f"(step {self.step}, microbatch {trigger.microbatch}) in an FP8 run: False "
                "reuses the weight quantized before the step, so this forward runs on the "
                "previous step's weights. Re-arm the flag to True on the first microbatch of "
                "every step (as Megatron-Core's set_is_first_microbatch does), or pass "
                f"{FLAG}=None."
            )
        if self.kind == OVERWRITE_MAIN_GRAD:
            return (
                f"{where} was called {len(self.calls) + self.omitted} times in one microbatch "
                f"(step {self.step}, microbatch {trigger.microbatch}) and a weight of it has "
                "overwrite_main_grad=True (Megatron-FSDP's optim_grads modes set it): TE then "
                f"overwrites main_grad on every call whatever {FLAG} is, so only the gradient "
                f"written last (the first call's) survives; {FLAG}=None does not help here. "
                "Give each depth its own module, or build this one without "
                "fuse_wgrad_accumulation so that autograd sums the calls."
            )
        if self.kind == REPEATED_CALL:
            return (
                f"{where} was called {len(self.calls) + self.omitted} times in one microbatch "
                f"(step {self.step}, microbatch {trigger.microbatch}) with a non-None {FLAG}: "
                f"{listed}. Backward runs in reverse order, so with fused wgrad accumulation the "
                "earliest call that passes True writes main_grad last and overwrites the "
                "gradients of the later calls (the flag is True on the first microbatch of every "
                "step under FP8 in Megatron-Core, and after a resume when it is not tracked). "
                f"Pass {FLAG}=None to a module that is called more than once per forward."
            )
        return (
            f"{where} received {FLAG}=True at call #{trigger.index} of step {self.step} "
            f"(microbatch {trigger.microbatch}), after its first call of the step: {listed}. "
            "With fused wgrad accumulation True overwrites main_grad and discards the gradient "
            "that the earlier calls of this step accumulated. Set the flag to True only for the "
            "first call of a step; if a step boundary was missed, call MicrobatchMonitor.step() "
            "or attach_optimizer() so that the monitor sees it."
        )


class MicrobatchHazard(RuntimeError):
    """Raised (``on_hazard="raise"``) from the forward pre-hook of the offending call."""

    def __init__(self, hazard: Hazard) -> None:
        super().__init__(hazard.message)
        self.hazard = hazard


class MicrobatchHazardWarning(RuntimeWarning):
    """Category of the warnings issued with ``on_hazard="warn"``, for ``warnings`` filters."""


def _show(value: Any) -> str:
    """Short, side-effect-free text for a flag value (never syncs a device tensor)."""
    if value is None or isinstance(value, (bool, int)):
        return repr(value)
    shape = getattr(value, "shape", None)
    if shape is not None:
        return f"<{type(value).__name__} shape={tuple(shape)}>"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
