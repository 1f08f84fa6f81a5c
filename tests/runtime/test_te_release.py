"""What changes with TE's release, modelled by the reference and handled by the GPU command.

- TE 2.18 and later refuse to load a module's pickled FP8 state (``DelayedScaling``) unless
  ``NVTE_ALLOW_UNSAFE_PICKLE_EXTRA_STATE=1``: the reference refuses the same way, with TE's
  message, and the command loads the state it saved itself with the variable set for that
  load only (``lint_rules.runtime.own_state``).
- ``overwrite_main_grad`` exists from TE 2.9: on an older TE the checks that set it skip with
  the reason (the reference pretends to be 2.8 through ``TE_MICROBATCH_REFERENCE_VERSION``).
- The command's first check: an fp32 GEMM of the backend is fp32, not TF32.
"""

from __future__ import annotations

import os
import types

import pytest

torch = pytest.importorskip("torch", reason="the runtime suite needs torch")

from runtime_support import command_state  # noqa: E402

from lint_rules.runtime import gpu_check, gpu_plan, precision, reference_te  # noqa: E402
from lint_rules.runtime.backends import Backend  # noqa: E402
from lint_rules.runtime.own_state import load_own_state  # noqa: E402
from lint_rules.runtime.reference_state import (  # noqa: E402
    UNSAFE_PICKLE_EXTRA_STATE_ENV,
    VERSION_ENV,
)
from lint_rules.runtime.scenarios import accumulation  # noqa: E402
from lint_rules.runtime.snapshot import load_checkpoint, save_checkpoint  # noqa: E402

TE_ADVISORY = (  # transformer_engine/pytorch/_extra_state.py, extra_state_pickle_advisory
    "Refusing to load pickled Transformer Engine extra state for Linear. "
    "Delayed-scaling FP8 metadata can be stored as a Python pickle, and loading it "
    "can execute arbitrary code. Only enable unsafe loading if this checkpoint is from "
    "a trusted source. To load it anyway, set NVTE_ALLOW_UNSAFE_PICKLE_EXTRA_STATE=1."
)
REFERENCE = Backend("reference", "cpu")


def trained_linear(recipe: object) -> torch.nn.Module:
    """A reference ``Linear`` whose last forward ran under FP8 with ``recipe``."""
    module = reference_te.Linear(32, 32)
    with reference_te.autocast(recipe=recipe):
        module(torch.randn(16, 32))
    return module


@pytest.fixture(autouse=True)
def no_opt_in(monkeypatch: pytest.MonkeyPatch) -> None:
    """TE's default: the opt-in variable unset, the reference at its own release."""
    monkeypatch.delenv(UNSAFE_PICKLE_EXTRA_STATE_ENV, raising=False)
    monkeypatch.delenv(VERSION_ENV, raising=False)


def test_reference_refuses_pickled_delayed_scaling_state_as_te_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = trained_linear(reference_te.DelayedScaling()).state_dict()
    assert state["_extra_state"].dtype == torch.uint8 and state["_extra_state"].numel() > 0
    with pytest.raises(RuntimeError) as refused:
        reference_te.Linear(32, 32).load_state_dict(state)
    assert str(refused.value) == TE_ADVISORY
    monkeypatch.setenv(UNSAFE_PICKLE_EXTRA_STATE_ENV, "1")
    fresh = reference_te.Linear(32, 32)
    fresh.load_state_dict(state)
    assert isinstance(fresh._fp8_recipe, reference_te.DelayedScaling)


def test_stateless_recipe_and_no_fp8_save_nothing_to_refuse() -> None:
    for module in (trained_linear(reference_te.Float8CurrentScaling()), reference_te.Linear(8, 8)):
        state = module.state_dict()
        assert state["_extra_state"].numel() == 0
        type(module)(module.in_features, module.out_features).load_state_dict(state)


def test_a_te_before_2_18_loads_the_pickle_without_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = trained_linear(reference_te.DelayedScaling()).state_dict()
    monkeypatch.setenv(VERSION_ENV, "2.17.0")
    reference_te.Linear(32, 32).load_state_dict(state)


def test_own_state_loads_allow_the_pickle_for_that_load_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = trained_linear(reference_te.DelayedScaling()).state_dict()
    load_own_state(reference_te.Linear(32, 32), state)
    assert UNSAFE_PICKLE_EXTRA_STATE_ENV not in os.environ
    monkeypatch.setenv(UNSAFE_PICKLE_EXTRA_STATE_ENV, "0")  # a user's explicit "no" is kept
    load_own_state(reference_te.Linear(32, 32), state)
    assert os.environ[UNSAFE_PICKLE_EXTRA_STATE_ENV] == "0"
    with pytest.raises(RuntimeError, match="Refusing to load pickled"):
        reference_te.Linear(32, 32).load_state_dict(state)


def test_the_harness_resumes_from_its_own_checkpoint_with_fp8_state(tmp_path) -> None:
    """Leg C's load (``snapshot.load_checkpoint``) of a DelayedScaling module's state."""
    module = trained_linear(reference_te.DelayedScaling())
    saved = types.SimpleNamespace(model=module, optimizer=torch.optim.SGD(module.parameters()))
    save_checkpoint(tmp_path / "ckpt.pt", saved, 2, {})
    fresh = reference_te.Linear(32, 32)
    resumed = types.SimpleNamespace(model=fresh, optimizer=torch.optim.SGD(fresh.parameters()))
    assert load_checkpoint(tmp_path / "ckpt.pt", resumed) == (2, {})
    assert torch.equal(fresh.weight, module.weight)


def run_command(
    args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    capsys.readouterr()
    with command_state(monkeypatch):
        code = gpu_check.main(["--backend", "reference", "--no-legs", *args])
    return code, capsys.readouterr().out


def test_the_command_resumes_delayed_scaling_modules_on_a_refusing_release(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The 4 FP8-cache checks under DelayedScaling resume from a state TE 2.18+ refuses by
    default (the planted error ``extra-state-refused`` shows them fail without the handling)."""
    code, out = run_command(["-k", "fp8 cache stuck resumed"], monkeypatch, capsys)
    assert code == 0, out
    delayed = [line for line in out.splitlines() if "FP8 DelayedScaling" in line]
    assert len(delayed) == 4 and all(line.startswith("agree") for line in delayed)
    assert "NVTE_ALLOW_UNSAFE_PICKLE_EXTRA_STATE=1 was set only while loading" in out
    assert UNSAFE_PICKLE_EXTRA_STATE_ENV not in os.environ


def test_an_older_te_ignores_overwrite_main_grad(monkeypatch: pytest.MonkeyPatch) -> None:
    """Why the gate: on 2.8 the attribute does nothing, so the checks would say ``differ``."""
    assert accumulation(REFERENCE, "Linear", "overwrite-attr").label == "g1"
    monkeypatch.setenv(VERSION_ENV, "2.8.0")
    assert accumulation(REFERENCE, "Linear", "overwrite-attr").label == "g1+g2"


def test_overwrite_main_grad_checks_skip_on_an_older_te(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    gated = [c for c in gpu_plan.checks() if c.since == gpu_plan.OVERWRITE_MAIN_GRAD]
    assert len(gated) == 9
    monkeypatch.setenv(VERSION_ENV, "2.8.0")
    code, out = run_command(["-k", "overwrite"], monkeypatch, capsys)
    skipped = [line for line in out.splitlines() if line.startswith("skipped")]
    assert len(skipped) == 9, out
    assert all(
        "overwrite_main_grad" in line and "exists from TE 2.9; this is 2.8.0" in line
        for line in skipped
    )
    assert code == 0  # "fsdp overwrite_main_grad, fusion off" needs no gate, and agrees
    monkeypatch.setenv(VERSION_ENV, "2.9.0")
    code, out = run_command(["-k", "overwrite"], monkeypatch, capsys)
    assert code == 0 and "skipped" not in out


def test_fp32_gemms_are_fp32(backend: Backend) -> None:
    assert precision.fp32_gemm(backend).label == "fp32"


class TF32Linear(reference_te.Linear):
    """The reference ``Linear`` with its forward operands rounded to TF32 (10-bit mantissa),
    as cuBLASLt's ``CUBLAS_COMPUTE_32F_FAST_TF32`` does when TF32 is not turned off."""

    def forward(self, inp: torch.Tensor, is_first_microbatch: bool | None = None) -> torch.Tensor:
        def tf32(t: torch.Tensor) -> torch.Tensor:
            bits = t.detach().contiguous().view(torch.int32)
            rounded = ((bits + 0x1000) & ~0x1FFF).view(torch.float32)
            return t + (rounded - t).detach()  # rounded forward, gradient as it is

        return torch.nn.functional.linear(tf32(inp), tf32(self.weight), self.bias)


def test_the_first_check_fails_loudly_on_a_tf32_gemm(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(reference_te, "Linear", TF32Linear)
    assert precision.fp32_gemm(REFERENCE).label == "tf32"
    code, out = run_command(["-k", "fp32 GEMMs"], monkeypatch, capsys)
    assert code == 1
    assert "forward: 4.9e-04" in out  # 2^-11: exactly what TF32 loses on 1 + 2^-12
    assert precision.BANNER in out


def test_the_pytest_gpu_path_turns_tf32_off_as_the_command_does() -> None:
    """tests/runtime/conftest.py sets what ``gpu_check`` sets, before any CUDA context."""
    assert os.environ["NVIDIA_TF32_OVERRIDE"] == "0"
    assert torch.backends.cuda.matmul.allow_tf32 is False
    assert torch.backends.cudnn.allow_tf32 is False
