"""Hypothesis profiles for the fuzz tests (imported by them; no global side effect).

``ci`` (the default): a fixed, small example budget and a derandomised seed, so CI runs are short
and reproducible. ``long``: many random examples for a local hunt::

    HYPOTHESIS_PROFILE=long pytest tests/test_fuzz.py

The profile is applied per test through ``fuzz_settings`` rather than with
``settings.load_profile`` so that other hypothesis tests in the suite keep their own defaults.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

SLOW_CHECKS = [
    HealthCheck.too_slow,
    HealthCheck.filter_too_much,
    HealthCheck.data_too_large,
    HealthCheck.large_base_example,
]

settings.register_profile(
    "ci",
    max_examples=60,
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=SLOW_CHECKS,
)
settings.register_profile(
    "long",
    max_examples=3000,
    derandomize=False,
    deadline=None,
    print_blob=True,
    suppress_health_check=SLOW_CHECKS,
)

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
if PROFILE not in ("ci", "long"):
    PROFILE = "ci"


def fuzz_settings(scale: float = 1.0) -> settings:
    """The chosen profile, its example budget scaled for a slower or faster test."""
    base = settings.get_profile(PROFILE)
    return settings(base, max_examples=max(5, int(base.max_examples * scale)))
