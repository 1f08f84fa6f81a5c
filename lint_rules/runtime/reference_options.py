"""The constructor options of TE's modules that the reference accepts only at their defaults.

The reference (:mod:`lint_rules.runtime.reference_te`) takes TE's constructor arguments so that
code written for TE (Megatron's wrappers included) builds it unchanged; parallelism,
communication overlap and the like are not modelled, so a value other than TE's default raises
``NotImplementedError``, and an option TE does not have raises ``TypeError`` as TE would.
"""

from __future__ import annotations

from typing import Any

_AFTER_DEVICE = {
    "ub_overlap_ag": False,
    "ub_overlap_rs": False,
    "ub_overlap_rs_dgrad": False,
    "ub_bulk_dgrad": False,
    "ub_bulk_wgrad": False,
    "ub_name": None,
    "delay_wgrad_compute": False,
    "symmetric_ar_type": None,
    "save_original_input": False,
    "name": None,
}
"""TE's keyword options after ``device`` (``Linear``, ``GroupedLinear``): accepted at their
defaults, as callers such as Megatron's wrappers pass them."""


def after_device(options: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(options) - set(_AFTER_DEVICE))
    if unknown:
        raise TypeError(f"unexpected keyword argument {unknown[0]!r}")
    return options


def only_defaults(**options: Any) -> None:
    """Parallelism and overlap options exist for TE's signature; the reference has none."""
    defaults = {
        "sequence_parallel": False,
        "tp_group": None,
        "tp_size": 1,
        "get_rng_state_tracker": None,
        "rng_tracker_name": None,
        "return_bias": False,
        "parallel_mode": None,
        "parameters_split": None,
        "return_layernorm_output": False,
        "return_layernorm_output_gathered": False,
        "zero_centered_gamma": False,
        "set_parallel_mode": False,
        "seq_length": None,
        "micro_batch_size": None,
        "activation_params": None,
    }
    defaults.update(_AFTER_DEVICE)
    if options.get("get_rng_state_tracker") is None:
        options.pop("rng_tracker_name", None)  # TE reads the name only to fork a tracker
    changed = sorted(k for k, v in options.items() if v != defaults.get(k, v))
    if changed:
        raise NotImplementedError(f"reference_te does not model {', '.join(changed)}")
