"""Each planted error of the reference makes the CPU run of the GPU command fail (exit 1).

The errors (``lint_rules.runtime.mutations``) are set through the test-only environment
variable the reference and the three-leg harness read, so they also reach the leg processes.
Each error fails the subset of the command that it concerns, and one clean run of all the
subsets exits 0 (so each failure is the error's doing); two errors also fail the whole command
(``WHOLE``). The quick tier runs one subset; the rest is ``slow``.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("torch", reason="the runtime suite needs torch")

from lint_rules.runtime.mutations import MUTATION_ENV, MUTATIONS  # noqa: E402

SUBSET = {
    "accumulate-on-true": ["--no-legs", "-k", "accumulation true-false"],
    "fusion-ignored": ["--no-legs", "-k", "accumulation unfused"],
    "fp8-cache-never-reused": ["--no-legs", "-k", "fp8 cache stuck resumed"],
    "none-reuses-like-false": ["--no-legs", "-k", "fp8 cache none"],
    "leg-c-not-reset": ["-k", "legs shared-layer unguarded"],
}


def gpu_check(args: list[str], planted: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != MUTATION_ENV}
    if planted is not None:
        env[MUTATION_ENV] = planted
    return subprocess.run(
        [sys.executable, "-m", "lint_rules.runtime.gpu_check", "--backend", "reference", *args],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )


def test_every_planted_error_has_a_subset() -> None:
    assert set(SUBSET) == set(MUTATIONS)
    assert set(WHOLE) <= set(MUTATIONS)


@pytest.mark.slow
def test_the_subsets_pass_without_a_planted_error() -> None:
    """One clean run of every subset together: each failure below is the error's doing."""
    args = [arg for subset in SUBSET.values() for arg in subset if arg != "--no-legs"]
    clean = gpu_check(args, None)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "legs shared-layer unguarded" in clean.stdout


QUICK = {"accumulate-on-true"}
"""The planted error whose subset runs in about a second: the quick tier's sample."""


@pytest.mark.parametrize(
    "planted",
    [pytest.param(m, marks=() if m in QUICK else pytest.mark.slow) for m in sorted(MUTATIONS)],
)
def test_planted_error_fails_its_subset_of_the_command(planted: str) -> None:
    broken = gpu_check(SUBSET[planted], planted)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "unexpected" in broken.stdout or "error" in broken.stdout


WHOLE = ("accumulate-on-true", "leg-c-not-reset")
"""The planted errors also run through the whole command (about 15 s each): one the command
checks in its own process, one its leg processes check. Each error's subset above is a run of
the same command, so the others fail it too; the whole command adds the exit policy."""


@pytest.mark.slow
@pytest.mark.parametrize("planted", WHOLE)
def test_planted_error_fails_the_whole_command(planted: str) -> None:
    broken = gpu_check([], planted)
    assert broken.returncode == 1, broken.stdout[-3000:] + broken.stderr
