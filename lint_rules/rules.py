"""The rule table: codes, messages and summaries, and the guard defaults.

Everything a user reads (codes and messages) lives in ``MESSAGES`` so that the flake8 plugin,
the CLI and the docs say the same thing. What the rules know about TE is in ``lint_rules.te``.
"""

from __future__ import annotations

from lint_rules.te import FLAG

__all__ = [
    "DEFAULT_GUARD_CONFIG",
    "DEFAULT_GUARD_FUNCTIONS",
    "DEFAULT_GUARD_IMPORT",
    "FIXABLE_CODES",
    "FLAG",
    "MESSAGES",
    "SUMMARIES",
]

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
