"""The rule table and the Transformer Engine facts the rules rely on.

Everything a user reads (codes and messages) lives in ``MESSAGES`` so that the flake8 plugin,
the CLI and the docs say the same thing. The TE facts are taken from ``docs/te-facts.md``
(transformer-engine 2.20.2); the linter never imports TE.
"""

from __future__ import annotations

FLAG = "is_first_microbatch"
"""The keyword every rule is about; files without these bytes are never parsed."""

MESSAGES: dict[str, str] = {
    "TEM001": (
        "TEM001 untracked `is_first_microbatch` passed to {callee}: a run resumed from a "
        "checkpoint passes True once and fused wgrad overwrites main_grad, losing a gradient; "
        "pass `flag if {guard}(config) else None`, or None"
    ),
    "TEM002": (
        "TEM002 untracked `is_first_microbatch` passed positionally to {callee}: a resumed run "
        "passes True once and fused wgrad overwrites main_grad; pass "
        "`is_first_microbatch=flag if {guard}(config) else None`, or None"
    ),
    "TEM003": (
        "TEM003 untracked `is_first_microbatch` reaches {callee} through `**{mapping}`: a resumed "
        "run passes True once and fused wgrad overwrites main_grad; store "
        "`flag if {guard}(config) else None`, or None"
    ),
    "TEM004": (
        "TEM004 {callee} does not accept `is_first_microbatch` (TypeError at run time); "
        "remove it: only the forward() of Linear, LayerNormLinear, LayerNormMLP, "
        "GroupedLinear, MultiheadAttention and TransformerLayer takes it"
    ),
    "TEM005": (
        "TEM005 {callee} may run more than once per step ({why}) with a non-None "
        "`is_first_microbatch`: backward runs in reverse, so the first call's wgrad is written "
        "last and, when its flag is True, overwrites the others' main_grad; pass None to a "
        "shared module"
    ),
}

SUMMARIES: dict[str, str] = {
    "TEM001": "Untracked is_first_microbatch passed by keyword to a TE module",
    "TEM002": "Untracked is_first_microbatch passed positionally to a TE module",
    "TEM003": "Untracked is_first_microbatch reaches a TE module through **kwargs",
    "TEM004": "is_first_microbatch passed to a TE callable that does not accept it",
    "TEM005": "Non-None is_first_microbatch passed to a TE module called more than once per step",
}
"""One line per rule, for rule listings (SARIF ``shortDescription``, docs)."""

FIXABLE_CODES = frozenset({"TEM001", "TEM002", "TEM003", "TEM005"})
"""TEM004 has no automatic fix: removing an argument changes what the user meant."""

DEFAULT_GUARD_FUNCTIONS: tuple[str, ...] = ("is_first_microbatch_tracked",)
DEFAULT_GUARD_IMPORT = "megatron.core.transformer.module.is_first_microbatch_tracked"
DEFAULT_GUARD_CONFIG = "self.config"

TE_ROOT = "transformer_engine"

# forward(...) parameter index of `is_first_microbatch`, counting positional arguments after
# `self` (TE 2.x). The unbound form `Linear.forward(module, x, flag)` shifts it by one.
FLAG_POSITION: dict[str, int] = {
    "Linear": 1,
    "LayerNormLinear": 1,
    "LayerNormMLP": 1,
    "GroupedLinear": 2,
    "MultiheadAttention": 6,
    "TransformerLayer": 10,
}

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
    return last if last in FLAG_POSITION else None


def te_rejecting_name(qualified_name: str) -> str | None:
    """Return the TE callable's short name if it rejects the flag (TEM004), else None."""
    if not qualified_name.startswith(TE_ROOT + "."):
        return None
    last = qualified_name.rsplit(".", 1)[-1]
    if qualified_name.startswith(TE_OPS_PACKAGE + ".") or last in TE_REJECTING:
        return last
    return None
