"""A gradient oracle for the resume fixture, and the fixture's randomness.

``gradient_oracle``: every step of the fixed model's run (straight, then across a resume), the
shared layer's ``main_grad`` equals the sum of per-depth gradients that plain autograd computes
on an independent copy of the model (same data, same dropout masks). The three-leg resume check
only proves "A and C are byte-identical"; this proves the gradients are right, and the
mutation tests below show that it fails where the resume check would not:

- a reference in which ``None`` overwrites (fp32 run);
- a codemod that writes ``False`` instead of ``None``: under BF16/FP32 ``False`` accumulates and
  is harmless (it passes, as it should), under FP8 it runs forwards on stale weights and fails.

``resume_rng``: the fixture draws dropout masks while training, so a resume that forgets the RNG
state diverges at the first step after the resume.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the runtime suite needs torch")

from runtime_support import BACKENDS, Backend, skip_unless_runnable  # noqa: E402

from lint_rules.runtime import reference_te, shared_layer  # noqa: E402
from lint_rules.runtime.fixture_scenarios import (  # noqa: E402
    gradient_oracle,
    oracle_expected,
    resume_rng,
)

REFERENCE_CPU = Backend("reference", "cpu")


def false_writing_codemod() -> str:
    """The fixed model as a codemod that wrote False instead of None would have left it."""
    fixed = shared_layer.variant_source("fixed")
    mutant = fixed.replace("is_first_microbatch=None", "is_first_microbatch=False")
    assert mutant != fixed
    return mutant


def test_oracle_fixed_model(backend: Backend) -> None:
    found = gradient_oracle(backend)
    assert found.label == oracle_expected(), str(found)


def test_oracle_fixed_model_fp8(fp8_backend: Backend) -> None:
    found = gradient_oracle(fp8_backend, fp8=True)
    assert found.label == oracle_expected(), str(found)


def test_oracle_sees_the_unguarded_model_lose_a_gradient_at_start_and_after_resume() -> None:
    found = gradient_oracle(REFERENCE_CPU, "unguarded")
    assert found.label == "off,ok,off,ok", str(found)  # steps 1 and 3: first of a process


def test_mutation_none_overwrites_fails_the_oracle(monkeypatch: pytest.MonkeyPatch) -> None:
    real = reference_te.wgrad_accumulates

    def none_overwrites(fuse: bool, flag: bool | None, overwrite: bool = False) -> bool:
        return False if flag is None else real(fuse, flag, overwrite)

    monkeypatch.setattr(reference_te, "wgrad_accumulates", none_overwrites)
    found = gradient_oracle(REFERENCE_CPU)
    assert found.label == "off,off,off,off", str(found)


def test_mutation_false_writing_codemod_passes_in_fp32_and_fails_under_fp8() -> None:
    mutant = false_writing_codemod()
    assert gradient_oracle(REFERENCE_CPU, source=mutant).label == oracle_expected()
    found = gradient_oracle(REFERENCE_CPU, source=mutant, fp8=True)
    # stale after each optimizer step; the resumed process quantizes afresh at step 3
    assert found.label == "ok,off,ok,off", str(found)


@pytest.fixture(scope="module", params=BACKENDS)
def rng_backend(request: pytest.FixtureRequest) -> Backend:
    return skip_unless_runnable(request.param)


def test_resume_with_rng_state_is_identical(rng_backend: Backend) -> None:
    found = resume_rng(rng_backend, restore_rng=True)
    assert found.label == "identical", str(found)


def test_resume_without_rng_state_diverges(rng_backend: Backend) -> None:
    found = resume_rng(rng_backend, restore_rng=False)
    assert found.label == "diverges at step 3", str(found)
