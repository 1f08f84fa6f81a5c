"""Test-only planted errors of the reference and the harness (no torch import).

``TE_MICROBATCH_REFERENCE_MUTATION=<name>`` makes the reference of TE's contract (or the
three-leg harness of the GPU command) break one rule on purpose, so the tests can show that
``python -m lint_rules.runtime.gpu_check --backend reference`` fails on each. Never set it
outside the tests.
"""

from __future__ import annotations

import os

__all__ = ["MUTATIONS", "MUTATION_ENV", "mutation"]

MUTATION_ENV = "TE_MICROBATCH_REFERENCE_MUTATION"
MUTATIONS = {
    "accumulate-on-true": "the fused wgrad accumulates when the flag is True",
    "fusion-ignored": "fuse_wgrad_accumulation=False still writes main_grad",
    "fp8-cache-never-reused": "False re-quantizes the current weight instead of reusing",
    "none-reuses-like-false": "None caches and reuses the quantized weight like False",
    "leg-c-not-reset": "leg C continues in leg B's process instead of a fresh one",
    "straight-runs-differ": "leg A' of the three-leg check is not the same run as leg A",
    "extra-state-refused": "the command loads saved FP8 state without allowing TE's pickle",
}
"""The deliberate errors the tests plant in the reference (and the harness) to show that
``gpu_check --backend reference`` fails on each of them."""


def mutation() -> str | None:
    """The planted error this process runs with, or None (always None outside the tests)."""
    value = os.environ.get(MUTATION_ENV) or None
    if value is not None and value not in MUTATIONS:
        raise ValueError(f"{MUTATION_ENV}={value!r}: not one of {sorted(MUTATIONS)}")
    return value
