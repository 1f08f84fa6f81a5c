"""``python -m lint_rules.runtime.gpu_check`` on a machine without CUDA, and its exit policy.

On CPU every scenario is skipped with its reason and the command exits 2 (nothing compared).
The comparison itself is exercised with stand-in backends: agree (0), differ, unexpected or
error (1), skipped only (2); FP8 checks skip on a GPU below compute capability 8.9.
"""

from __future__ import annotations

import io
import subprocess
import sys
from dataclasses import dataclass

import pytest

torch = pytest.importorskip("torch", reason="the runtime suite needs torch")

from lint_rules.runtime import backends, gpu_check  # noqa: E402
from lint_rules.runtime.backends import Backend  # noqa: E402
from lint_rules.runtime.scenarios import ACCUMULATION_CASES, FP8_POLICIES, KINDS, Outcome  # noqa: E402


def test_cpu_machine_skips_everything_with_a_reason_and_exits_2() -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the command would really run")
    done = subprocess.run(
        [sys.executable, "-m", "lint_rules.runtime.gpu_check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "no CUDA" in lines[0]
    rows = [line for line in lines if line.startswith("skipped")]
    assert len(rows) == len(gpu_check.checks())
    assert all(row.rstrip().endswith("CUDA not available") for row in rows)
    for kind in KINDS:  # every module kind is listed, not silently left out
        assert any(kind in row for row in rows)
    assert f"summary: {len(rows)} skipped" in done.stdout
    assert "nothing was compared" in done.stdout


def test_the_catalogue_covers_every_scenario_and_kind() -> None:
    names = {(c.scenario, c.module) for c in gpu_check.checks()}
    for kind in KINDS:
        for case in ACCUMULATION_CASES:
            assert (f"accumulation {case}", kind) in names
        for policy in FP8_POLICIES:
            assert (f"fp8 cache {policy}", kind) in names
            assert (f"fp8 cache {policy} resumed", kind) in names
        assert ("fp8 repeated layer tracked", kind) in names
        assert ("fp8 repeated layer none", kind) in names
    scenarios = {c.scenario for c in gpu_check.checks()}
    assert {
        "gradient oracle fixed",
        "gradient oracle fixed fp8",
        "resume without RNG state",
        "monitor unguarded",
        "monitor fp8 flag not re-armed",
    } <= scenarios
    fp8 = {c.scenario for c in gpu_check.checks() if c.fp8}
    named = {n for n in scenarios if n.startswith(("fp8 ", "monitor fp8")) or n.endswith(" fp8")}
    assert fp8 == named


@dataclass(frozen=True)
class Stand(Backend):
    """A runnable stand-in (CPU); ``fp8_reason`` simulates a GPU without FP8."""

    fp8_reason: str | None = None

    def unavailable(self) -> str | None:
        return None

    def fp8_unavailable(self) -> str | None:
        return self.fp8_reason


REF = Stand("reference", "cpu")
TE = Stand("te", "cpu")


def check(label_ref: str, label_te: str, expected: str, fp8: bool = False) -> gpu_check.Check:
    def run(backend: Backend) -> Outcome:
        label = label_te if backend.is_te else label_ref
        if label == "raise":
            raise RuntimeError("boom")
        return Outcome(label, "numbers")

    return gpu_check.Check("demo", "Linear", run, expected, fp8=fp8)


@pytest.mark.parametrize(
    ("labels", "status", "code"),
    [
        (("g1", "g1", "g1"), "agree", 0),
        (("g1", "g1+g2", "g1"), "differ", 1),
        (("g1", "g1", "g1+g2"), "unexpected", 1),
        (("g1", "raise", "g1"), "error", 1),
    ],
)
def test_exit_code_policy(labels: tuple[str, str, str], status: str, code: int) -> None:
    out = io.StringIO()
    summary = gpu_check.compare([check(*labels)], REF, TE, out=out)
    assert out.getvalue().startswith(status)
    assert summary.exit_code == code
    if status != "agree":
        assert "expected: " in out.getvalue()


def test_one_disagreement_among_agreements_exits_1() -> None:
    checks = [check("g1", "g1", "g1"), check("g1", "g2", "g1"), check("x", "x", "x")]
    summary = gpu_check.compare(checks, REF, TE, out=io.StringIO())
    assert summary.exit_code == 1
    assert str(summary) == "2 agree, 1 differ"


def test_fp8_checks_skip_with_the_reason_on_an_older_gpu() -> None:
    reason = "FP8 needs compute capability 8.9 or newer; this GPU has 8.0"
    old = Stand("te", "cpu", fp8_reason=reason)
    out = io.StringIO()
    summary = gpu_check.compare(
        [check("g1", "g1", "g1"), check("g1", "g1", "g1", fp8=True)], REF, old, out=out
    )
    assert summary.exit_code == 0  # the non-FP8 check agreed
    assert "skipped" in out.getvalue() and "8.9 or newer; this GPU has 8.0" in out.getvalue()


def test_only_skips_exits_2() -> None:
    summary = gpu_check.compare(
        [check("g1", "g1", "g1", fp8=True)], REF, Stand("te", "cpu", fp8_reason="no"), io.StringIO()
    )
    assert summary.exit_code == 2


def test_fp8_capability_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real rule behind the skip: TE runnable, capability below 8.9 -> a reason."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(backends, "te_unavailable_reason", lambda: None)
    te = Backend("te", "cuda")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (8, 0))
    assert "8.9" in (te.fp8_unavailable() or "")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (9, 0))
    assert te.fp8_unavailable() is None
    assert Backend("reference", "cuda").fp8_unavailable() is None


def test_reference_agrees_with_itself_on_a_real_scenario() -> None:
    """The real catalogue through compare(), with the reference standing in for both sides."""
    chosen = [c for c in gpu_check.checks() if c.scenario == "accumulation true-false"]
    out = io.StringIO()
    summary = gpu_check.compare(chosen, REF, Stand("reference", "cpu"), out=out)
    assert summary.exit_code == 0, out.getvalue()
    assert str(summary) == f"{len(KINDS)} agree"
