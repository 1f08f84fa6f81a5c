"""Three-leg resume check on the shared-layer model, unguarded and after the project's codemod.

The model source is ``lint_rules/runtime/fixtures/shared_layer_model.py`` (unguarded). The codemod
(``lint_rules.fixing.fix_source``) writes the fixed version into a temporary folder; each
version is trained by ``lint_rules.runtime.resume`` in separate processes:

- A: straight through N steps; A': the same again (the A/A check every team already has);
- B: M < N steps, then save model, optimizer and RNG state;
- C: a fresh process loads B's checkpoint and trains on to N.

Asserted: unguarded — A and A' byte-identical (so an A/A check is blind to the bug), A and C
different, first in step M+1, in the shared layer's ``main_grad``; fixed — A and C
byte-identical, every tensor and every step's digest.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the runtime suite needs torch")

from runtime_support import BACKENDS, Backend, skip_unless_runnable  # noqa: E402

from lint_rules.runtime import shared_layer  # noqa: E402
from lint_rules.runtime.resume import ResumeCheckResult, run_resume_check  # noqa: E402

STEPS = 5  # N
RESUME_AT = 2  # M: C's first step is 3
SHARED = "mtp_layer.weight"
GUARD = "is_first_microbatch_tracked"


@pytest.fixture(scope="module", params=BACKENDS)
def runnable_backend(request: pytest.FixtureRequest) -> Backend:
    return skip_unless_runnable(request.param)


@pytest.fixture(scope="module")
def legs(
    runnable_backend: Backend, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, ResumeCheckResult]:
    """Run the three-leg check once per backend for both versions (tests below share it)."""
    results = {}
    for variant in shared_layer.VARIANTS:
        root = tmp_path_factory.mktemp(f"{runnable_backend.id}-{variant}")
        model_file = shared_layer.write_variant(variant, root / "src")
        results[variant] = run_resume_check(
            f"{model_file}:build_training",
            steps=STEPS,
            resume_at=RESUME_AT,
            workdir=root / "legs",
            device=runnable_backend.device,
            env={shared_layer.BACKEND_ENV: runnable_backend.name},
            # A' is only needed where the A/A blindness is the point; the fixed run's A == C
            # already shows the legs are deterministic.
            repeat_a=(variant == "unguarded"),
        )
    return results


@pytest.mark.long  # three training runs in subprocesses per backend
def test_unguarded_a_a_is_blind(legs: dict[str, ResumeCheckResult]) -> None:
    result = legs["unguarded"]
    assert result.a_vs_a is not None
    assert result.a_vs_a.identical, str(result.a_vs_a)


@pytest.mark.long  # three training runs in subprocesses per backend
def test_unguarded_resume_loses_a_gradient_right_after_the_resume(
    legs: dict[str, ResumeCheckResult],
) -> None:
    report = legs["unguarded"].a_vs_c
    assert not report.identical, str(report)
    assert report.first_step == RESUME_AT + 1, str(report)
    # Where it shows first: the shared layer's fused-wgrad buffer (and what follows from it).
    assert report.step_tensors[0] == f"main_grad:{SHARED}", str(report)
    assert f"param:{SHARED}" in report.step_tensors
    # Nothing else differed in that step: the embedding and heads got the same gradients.
    assert not any("embedding" in name for name in report.step_tensors), str(report)
    assert "the first step after resuming from step 2" in str(report)


@pytest.mark.long  # three training runs in subprocesses per backend
def test_fixed_resume_is_byte_identical(legs: dict[str, ResumeCheckResult]) -> None:
    result = legs["fixed"]
    assert result.a_vs_c.identical, str(result.a_vs_c)
    assert result.a_vs_c.steps_compared == STEPS
    assert result.a_vs_c.compared > 0
    assert result.ok


@pytest.mark.parametrize("strategy", ["none", "guard"])
def test_codemod_output_passes_none_to_the_shared_layer(strategy: str) -> None:
    """The fixed model really is the codemod's output, and it changed only the flag's value.

    Under the ``guard`` strategy too: a tracking guard does not make a module called twice per
    step safe (it is re-armed under FP8), so the shared layer gets ``None`` either way.
    """
    from lint_rules.settings import Settings

    unguarded = shared_layer.variant_source("unguarded")
    fixed = shared_layer.variant_source(
        "fixed", Settings(fix_strategy=strategy, guard_import="megatron_guard." + GUARD)
    )
    changed = [(a, b) for a, b in zip(unguarded.splitlines(), fixed.splitlines()) if a != b]
    assert len(unguarded.splitlines()) == len(fixed.splitlines())
    assert len(changed) == 1, changed
    calls = [
        node
        for node in ast.walk(ast.parse(fixed))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "mtp_layer"
    ]
    assert len(calls) == 1
    (keyword,) = [k for k in calls[0].keywords if k.arg == "is_first_microbatch"]
    assert isinstance(keyword.value, ast.Constant) and keyword.value.value is None


@pytest.mark.long  # three training runs in subprocesses
def test_compare_command_reports_the_divergence(
    legs: dict[str, ResumeCheckResult], runnable_backend: Backend
) -> None:
    """The CLI's ``compare`` on the unguarded legs: exit 1 and the first differing step."""
    if runnable_backend.id != "reference-cpu":
        pytest.skip("one CLI check is enough (the legs are the same files)")
    workdir = legs["unguarded"].workdir
    assert workdir is not None
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "lint_rules.runtime.resume",
            "compare",
            str(Path(workdir) / "A.pt"),
            str(Path(workdir) / "C.pt"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"first differing step: {RESUME_AT + 1}" in done.stdout
    assert f"main_grad:{SHARED}" in done.stdout
