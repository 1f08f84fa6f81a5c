"""``python -m lint_rules.runtime.gpu_check``: the plan, the exit policy, TE's gates, reports.

On a machine without CUDA the default (``--backend te``) skips every check with its reason and
exits 2; ``--backend reference`` runs the whole command on the CPU reference (the full run is
``slow``; a quick subset runs here). The comparison itself is exercised with stand-in backends.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the runtime suite needs torch")

from runtime_support import command_state, gpu_check_process  # noqa: E402

from lint_rules.runtime import backends, gpu_check, gpu_plan, gpu_report  # noqa: E402
from lint_rules.runtime.backends import Backend  # noqa: E402
from lint_rules.runtime.scenarios import (  # noqa: E402
    ACCUMULATION_CASES,
    FP8_POLICIES,
    KINDS,
    RECIPES,
    Outcome,
)


def test_cpu_machine_skips_everything_with_a_reason_and_exits_2() -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the command would really run")
    done = gpu_check_process()
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "no CUDA" in lines[0]
    rows = [line for line in lines if line.startswith("skipped")]
    assert len(rows) == gpu_plan.plan_size()
    assert all(row.rstrip().endswith("CUDA not available") for row in rows)
    assert f"summary: {len(rows)} skipped" in done.stdout
    assert "nothing ran" in done.stdout


def test_list_prints_the_plan_without_running(capsys: pytest.CaptureFixture[str]) -> None:
    assert gpu_check.main(["--list"]) == 0
    out = capsys.readouterr().out
    assert "torch" not in out.splitlines()[0]  # no machine line: nothing was started
    for text in (
        "bf16 params+activations, fp32 main_grad",
        "FP8 DelayedScaling",
        "FP8 Float8CurrentScaling",
        "three-leg resume check",
        "Megatron TELinear in MTP",
        "fsdp overwrite_main_grad, None",
        "reentrant recompute",
    ):
        assert text in out, text
    assert f"{gpu_plan.plan_size()} checks" in out


def test_the_plan_covers_every_scenario_kind_configuration_and_recipe() -> None:
    names = {(c.scenario, c.module, c.config) for c in gpu_plan.checks()}
    for kind in KINDS:
        for case in ACCUMULATION_CASES:
            assert (f"accumulation {case}", kind, gpu_plan.FP32) in names
            assert (f"accumulation {case}", kind, gpu_plan.BF16) in names
        for recipe in RECIPES:
            config = gpu_plan.RECIPE_NAMES[recipe]
            for policy in FP8_POLICIES:
                assert (f"fp8 cache {policy}", kind, config) in names
                assert (f"fp8 cache {policy} resumed", kind, config) in names
            assert ("fp8 repeated layer tracked", kind, config) in names
    unsupported = [c for c in gpu_plan.checks() if c.te_note]
    assert unsupported and all(c.recipe == "delayed" for c in unsupported)
    legs = {(c.fixture, c.variant, bool(c.kwargs.get("fp8"))) for c in gpu_plan.leg_configs()}
    assert {("megatron", "unguarded", False), ("megatron", "guarded", False)} <= legs
    assert ("megatron", "unguarded", True) in legs and ("shared-layer", "fixed", True) in legs


def test_the_plan_has_the_upstream_proofs_shape() -> None:
    """An A/A row per leg configuration, the fusion-off arm, the GroupedLinear MTP layer, and
    the check that fp32 is fp32 first of all."""
    plan = gpu_plan.checks()
    assert plan[0].scenario == "fp32 GEMMs are fp32 (TF32 off)" and plan[0].expected == "fp32"
    configs = gpu_plan.leg_configs()
    rows = [row for c in configs for row in gpu_plan.leg_rows(c)]
    assert [module for _, module, _ in rows].count(gpu_plan.AA_MODULE) == len(configs)
    assert all(
        expected == "identical" for _, module, expected in rows if module == gpu_plan.AA_MODULE
    )
    unfused = [c for c in configs if c.kwargs.get("fuse_wgrad_accumulation") is False]
    assert [(c.variant, c.expected) for c in unfused] == [("unguarded", "identical")]
    grouped = [c for c in configs if c.kwargs.get("mtp_linear") == "grouped"]
    assert {(c.variant, c.expected) for c in grouped} == {
        ("unguarded", gpu_plan.DIVERGES),
        ("none", "identical"),
    }
    assert any(c.module == "Megatron TEGroupedLinear in MTP" for c in plan)


@dataclass(frozen=True)
class Stand(Backend):
    """A runnable stand-in (CPU); ``fp8_reason`` simulates a GPU without FP8."""

    fp8_reason: str | None = None

    def unavailable(self) -> str | None:
        return None

    def fp8_unavailable(self, recipe: str = "delayed") -> str | None:
        return self.fp8_reason


REF = Stand("reference", "cpu")
TE = Stand("te", "cpu")


def check(
    label_ref: str, label_te: str, expected: str, fp8: bool = False, note: str | None = None
) -> gpu_plan.Check:
    def run_it(backend: Backend) -> Outcome:
        label = label_te if backend.is_te else label_ref
        if label == "raise":
            raise RuntimeError("boom")
        return Outcome(label, "numbers")

    recipe = "current" if fp8 else None
    return gpu_plan.Check("demo", "Linear", run_it, expected, recipe, te_note=note)


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
    summary = gpu_check.compare([check(*labels)], TE, REF, out=out)
    assert out.getvalue().startswith(status)
    assert summary.exit_code == code
    if status != "agree":
        assert "expected: " in out.getvalue()


def test_a_te_documented_unsupported_case_is_reported_not_failed() -> None:
    out = io.StringIO()
    checks = [check("lost", "garbage", "lost", fp8=True, note="TE says no"), check("a", "a", "a")]
    summary = gpu_check.compare(checks, TE, REF, out=out)
    assert summary.exit_code == 0, out.getvalue()
    assert str(summary) == "1 agree, 1 unsupported"
    assert "note: TE says no" in out.getvalue()


def test_reference_alone_judges_against_the_expectation() -> None:
    out = io.StringIO()
    summary = gpu_check.compare([check("g1", "-", "g1"), check("g2", "-", "g1")], REF, None, out)
    assert summary.exit_code == 1
    assert str(summary) == "1 agree, 1 unexpected"


def test_fp8_checks_skip_with_tes_reason() -> None:
    reason = "transformer_engine: Device compute capability 8.9 or higher required for FP8"
    old = Stand("te", "cpu", fp8_reason=reason)
    out = io.StringIO()
    summary = gpu_check.compare(
        [check("g1", "g1", "g1"), check("g1", "g1", "g1", fp8=True)], old, REF, out=out
    )
    assert summary.exit_code == 0  # the non-FP8 check agreed
    assert "skipped" in out.getvalue() and reason in out.getvalue()
    only_fp8 = gpu_check.compare([check("g1", "g1", "g1", fp8=True)], old, REF, io.StringIO())
    assert only_fp8.exit_code == 2


def fake_te(monkeypatch: pytest.MonkeyPatch, **attrs: object) -> types.ModuleType:
    """A stand-in ``transformer_engine.pytorch`` in ``sys.modules`` (no real TE here)."""
    package = types.ModuleType("transformer_engine")
    module = types.ModuleType("transformer_engine.pytorch")
    for name, value in attrs.items():
        setattr(module, name, value)
    package.pytorch = module  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "transformer_engine", package)
    monkeypatch.setitem(sys.modules, "transformer_engine.pytorch", module)
    return module


def test_fp8_gate_is_tes_own_per_recipe(monkeypatch: pytest.MonkeyPatch) -> None:
    """TE checks capability AND its CUDA/cuBLASLt versions: its reason is what is reported."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(backends, "te_unavailable_reason", lambda: None)
    seen = []

    def is_fp8_available(return_reason: bool = False) -> tuple[bool, str]:
        seen.append(return_reason)
        return False, "CUDA version 12.1 or higher required for FP8 execution"

    fake_te(monkeypatch, is_fp8_available=is_fp8_available)
    recipes = types.ModuleType("transformer_engine.common.recipe")
    recipes.DelayedScaling = recipes.Float8CurrentScaling = object  # type: ignore[attr-defined]
    common = types.ModuleType("transformer_engine.common")
    common.recipe = recipes  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "transformer_engine.common", common)
    monkeypatch.setitem(sys.modules, "transformer_engine.common.recipe", recipes)
    te = Backend("te", "cuda")
    for recipe in RECIPES:
        reason = te.fp8_unavailable(recipe)
        assert (
            reason == "transformer_engine: CUDA version 12.1 or higher required for FP8 execution"
        )
    assert seen == [True, True]
    fake_te(monkeypatch, is_fp8_available=lambda return_reason=False: (True, ""))
    assert te.fp8_unavailable("current") is None
    del recipes.Float8CurrentScaling  # an older TE
    assert (
        te.fp8_unavailable("current")
        == "this transformer_engine has no Float8CurrentScaling recipe"
    )
    assert Backend("reference", "cuda").fp8_unavailable() is None


def test_autocast_prefers_autocast_and_falls_back_to_fp8_autocast(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = []
    new = fake_te(monkeypatch, autocast=lambda **kw: calls.append(("autocast", kw)))
    Backend("te", "cuda").autocast("R")
    del new.autocast
    new.fp8_autocast = lambda **kw: calls.append(("fp8_autocast", kw))  # type: ignore[attr-defined]
    Backend("te", "cuda").autocast("R")
    assert calls == [
        ("autocast", {"enabled": True, "recipe": "R"}),
        ("fp8_autocast", {"enabled": True, "fp8_recipe": "R"}),
    ]


def test_report_json_and_markdown(tmp_path: pytest.TempPathFactory) -> None:
    summary = gpu_check.compare(
        [check("g1", "g1", "g1"), check("g1", "g2", "g1")], TE, REF, out=io.StringIO()
    )
    info = {"gpu": "Demo GPU", "driver": "1.0", "torch": "2", "transformer_engine": "9"}
    path = tmp_path / "r.json"  # type: ignore[operator]
    gpu_report.write_report(path, info, "te-cpu", summary.rows, str(summary))
    data = json.loads(path.read_text())
    assert data["machine"]["gpu"] == "Demo GPU"
    assert [r["status"] for r in data["results"]] == ["agree", "differ"]
    assert data["results"][1]["labels"] == {"te-cpu": "g2", "reference-cpu": "g1"}
    md = tmp_path / "r.md"  # type: ignore[operator]
    gpu_report.write_report(md, info, "te-cpu", summary.rows, str(summary))
    text = md.read_text()
    assert "| driver | 1.0 |" in text and "| differ | demo | Linear |" in text


def test_tf32_is_off_for_the_comparisons(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "1")
    with command_state(monkeypatch):
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
        gpu_check.main(["--backend", "reference", "--no-legs", "-k", "no such check"])
        assert os.environ["NVIDIA_TF32_OVERRIDE"] == "0"
        assert torch.backends.cuda.matmul.allow_tf32 is False
        assert torch.backends.cudnn.allow_tf32 is False


@pytest.mark.slow
def test_reference_backend_quick_subset_exits_0_and_writes_a_report(tmp_path) -> None:
    report = tmp_path / "report.json"
    done = gpu_check_process(
        "--backend",
        "reference",
        "--no-legs",
        "-k",
        "accumulation true-false",
        "--report",
        str(report),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(report.read_text())
    assert len(data["results"]) == 2 * len(KINDS)
    assert {r["status"] for r in data["results"]} == {"agree"}


@pytest.mark.long
def test_reference_backend_runs_the_whole_command_and_exits_0(
    whole_reference_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, report = whole_reference_run
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr
    assert f"summary: {gpu_plan.plan_size()} agree" in done.stdout
    assert "legs megatron unguarded" in done.stdout and "diverges at step 3" in done.stdout
