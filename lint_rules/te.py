"""What the linter knows about Transformer Engine (TE 1.x and 2.x), without ever importing it.

Which TE callables take ``is_first_microbatch`` (and at which positional index), which reject
it, and which need it as a bool. ``docs/te-facts.md`` says where each fact comes from.
"""

from __future__ import annotations

FLAG = "is_first_microbatch"
"""The keyword every rule is about; files without these bytes are never parsed."""

TE_ROOT = "transformer_engine"

TE_MODULE_CLASSES: tuple[str, ...] = (
    "Linear",
    "LayerNormLinear",
    "LayerNormMLP",
    "GroupedLinear",
    "MultiheadAttention",
    "TransformerLayer",
)
"""The TE module classes whose ``forward`` takes ``is_first_microbatch``."""

# forward(...) parameter index of `is_first_microbatch`, counting positional arguments after
# `self`, for the classes where it is the same in TE 1.x and 2.x (read off 1.13.0 and 2.20.2).
# The unbound form `Linear.forward(module, x, flag)` shifts it by one.
FLAG_POSITION: dict[str, int] = {
    "Linear": 1,
    "LayerNormLinear": 1,
    "LayerNormMLP": 1,
    "GroupedLinear": 2,
}

VERSION_DEPENDENT_POSITION: dict[str, dict[str, int]] = {
    "MultiheadAttention": {"1.13": 5, "2.x": 6},
    "TransformerLayer": {"1.13": 8, "2.x": 10},
}
"""Classes whose positional index moved between TE releases: a positional argument there is
never taken for the flag (no TEM002, no positional fix), since the TE version is not known."""


# TE callables that do NOT take the flag: passing it raises TypeError (TEM004).
TE_REJECTING: frozenset[str] = frozenset(
    {
        "fp8_autocast",
        "autocast",
        "LayerNorm",
        "RMSNorm",
        "DotProductAttention",
        "fp8_model_init",
        "quantized_model_init",
    }
)
TE_OPS_PACKAGE = "transformer_engine.pytorch.ops"
"""Everything under the fusible-ops package rejects the flag (it uses other switches)."""

TE_GRAPH_FACTORY = "make_graphed_callables"
"""Its callables need a bool flag on every call: never rewrite their flag to None."""


def te_class_of(qualified_name: str) -> str | None:
    """Return the TE module class (``"Linear"``...) a dotted name refers to, if it is one."""
    if not qualified_name.startswith(TE_ROOT + "."):
        return None
    if qualified_name.startswith(TE_OPS_PACKAGE + "."):
        return None  # te.ops.Linear is a fusible op: it rejects the flag
    last = qualified_name.rsplit(".", 1)[-1]
    return last if last in TE_MODULE_CLASSES else None


def te_rejecting_name(qualified_name: str) -> str | None:
    """Return the TE callable's short name if it rejects the flag (TEM004), else None."""
    if not qualified_name.startswith(TE_ROOT + "."):
        return None
    last = qualified_name.rsplit(".", 1)[-1]
    if qualified_name.startswith(TE_OPS_PACKAGE + ".") or last in TE_REJECTING:
        return last
    return None


FORWARDERS: dict[str, str] = {
    "torch.utils.checkpoint.checkpoint": "checkpoint",
    "transformer_engine.pytorch.distributed.checkpoint": "te_checkpoint",
    "transformer_engine.pytorch.checkpoint": "te_checkpoint",
    "functools.partial": "partial",
}
"""Callables that call their first argument with the rest of their arguments (and keywords):
``checkpoint(function, *args, **kwargs)``; ``partial`` binds them for a later call. TE's
also takes the legacy positional form ``checkpoint(function, distribute_saved_activations,
get_rng_state_tracker, tp_group, *args)``."""

TE_CHECKPOINT_LEGACY_ARGS = 3
"""Positional arguments TE's checkpoint consumes itself in its legacy form."""

PASS_THROUGH: frozenset[str] = frozenset(
    {"torch.compile", "torch.jit.script", "copy.deepcopy", "copy.copy"}
)
"""Wrappers that return a callable module equivalent to their first argument (a copy of a
module is a module of the same class)."""
