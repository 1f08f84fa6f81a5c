"""The resume-check harness itself: bitwise comparison, digests, checkpoints, factories, CLI.

In-process and cheap (no leg subprocesses): the three-process orchestration is exercised by
``test_resume.py``. These tests avoid ``make_deterministic`` so as not to change the pytest
process's global torch settings.
"""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the runtime suite needs torch")

from lint_rules.runtime import resume as rc  # noqa: E402


def test_lint_rules_imports_without_torch() -> None:
    """The harness, the model builder and gpu_check import torch lazily, like all of lint_rules."""
    code = (
        "import sys; import lint_rules.runtime.resume, lint_rules.resume_check, "
        "lint_rules.runtime.shared_layer, lint_rules.runtime.gpu_check, "
        "lint_rules.runtime.gpu_plan, lint_rules.runtime.gpu_legs, lint_rules.runtime.gpu_report, "
        "lint_rules.runtime.megatron_shape, lint_rules.runtime.mutations, "
        "lint_rules.runtime.tolerances, lint_rules.runtime.monitor_stateful, "
        "lint_rules.runtime.backends; assert 'torch' not in sys.modules, 'torch imported'"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (torch.tensor([0.0]), torch.tensor([-0.0]), False),  # == says equal; the bytes differ
        (torch.tensor([float("nan")]), torch.tensor([float("nan")]), True),  # same payload
        (torch.tensor([1.0]), torch.tensor([1.0 + 2**-23]), False),  # one ulp
        (torch.tensor([1.0]), torch.tensor([1.0], dtype=torch.float64), False),
        (torch.zeros(2, 3), torch.zeros(3, 2), False),
        (torch.ones(3, dtype=torch.bfloat16), torch.ones(3, dtype=torch.bfloat16), True),
        (torch.arange(6.0).reshape(2, 3).t(), torch.arange(6.0).reshape(2, 3).t().clone(), True),
        (torch.tensor(True), torch.tensor(True), True),
        (torch.tensor(3), torch.tensor(4), False),
    ],
)
def test_bitwise_equal(a: torch.Tensor, b: torch.Tensor, equal: bool) -> None:
    assert rc.bitwise_equal(a, b) is equal
    same_digest = rc.tensor_digests({"t": a}) == rc.tensor_digests({"t": b})
    assert same_digest is equal


def test_compare_states_names_every_kind_of_difference() -> None:
    a = {
        "param:w": torch.ones(2),
        "main_grad:w": torch.ones(2),
        "param:only_a": torch.ones(1),
        "buffer:dtype": torch.ones(1),
        "buffer:shape": torch.ones(2),
        "param:same": torch.ones(3),
    }
    b = {
        "param:w": torch.tensor([1.0, 2.0]),
        "main_grad:w": torch.tensor([1.0, 1.5]),
        "param:only_b": torch.ones(1),
        "buffer:dtype": torch.ones(1, dtype=torch.float64),
        "buffer:shape": torch.ones(3),
        "param:same": torch.ones(3),
    }
    diffs = rc.compare_states(a, b)
    reasons = {d.name: d.reason for d in diffs}
    assert reasons == {
        "param:w": "values",
        "main_grad:w": "values",
        "param:only_a": "missing in B",
        "param:only_b": "missing in A",
        "buffer:dtype": "dtype",
        "buffer:shape": "shape",
    }
    assert diffs[0].name == "main_grad:w"  # gradient buffers are reported first
    assert "1 of 2 elements differ" in str(diffs[0])


def test_first_divergence_reports_the_step_and_tensors() -> None:
    a = {1: {"param:w": "x", "main_grad:w": "y"}, 2: {"param:w": "p", "main_grad:w": "q"}}
    b = {1: {"param:w": "x", "main_grad:w": "y"}, 2: {"param:w": "P", "main_grad:w": "Q"}}
    assert rc.first_divergence(a, a) is None
    assert rc.first_divergence(a, b) == (2, ["main_grad:w", "param:w"])
    assert rc.first_divergence(a, {3: {}}) is None  # no common step: nothing to say


class _DropoutNet(torch.nn.Module):
    """Uses the global RNG in forward (dropout), so a resume must restore RNG state too."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 1)
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, batch: torch.Tensor) -> torch.Tensor:
        return self.drop(self.fc(batch)).pow(2).mean()


def make_setup(device: str = "cpu", seed: int = 0) -> rc.ResumeSetup:
    """A plain-torch factory of the documented protocol (momentum: optimizer state matters)."""
    torch.manual_seed(seed)
    model = _DropoutNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def batch(step: int) -> torch.Tensor:
        return torch.randn(8, 4, generator=torch.Generator().manual_seed(step))

    return rc.ResumeSetup(model, optimizer, batch)


def test_checkpoint_round_trip_reproduces_the_straight_run(tmp_path: Path) -> None:
    final_straight = make_setup()  # seeds the global RNG: dropout masks follow from it
    straight = rc.train(final_straight, 1, 4)

    first = make_setup()
    digests = rc.train(first, 1, 2)
    rc.save_checkpoint(tmp_path / "ckpt.pt", first, 2, digests)
    torch.manual_seed(12345)  # a fresh process would start from another RNG state
    second = make_setup(seed=99)  # and other initial weights: the checkpoint must win
    step, digests = rc.load_checkpoint(tmp_path / "ckpt.pt", second)
    assert step == 2
    resumed = rc.train(second, 3, 4, digests)

    assert rc.first_divergence(straight, resumed) is None
    assert sorted(resumed) == [1, 2, 3, 4]
    assert rc.compare_states(final_straight.current_tensors(), second.current_tensors()) == []


def test_missing_rng_restore_is_caught(tmp_path: Path) -> None:
    """The comparison is sharp enough to see a resume that forgets the RNG (dropout masks)."""
    straight = rc.train(make_setup(), 1, 3)
    first = make_setup()
    rc.train(first, 1, 1)
    second = make_setup()
    second.model.load_state_dict(first.model.state_dict())
    second.optimizer.load_state_dict(first.optimizer.state_dict())
    torch.manual_seed(0)  # RNG not restored
    resumed = rc.train(second, 2, 3)
    found = rc.first_divergence(straight, resumed)
    assert found is not None and found[0] == 2


def test_factory_results_of_every_documented_shape() -> None:
    setup = make_setup()
    as_tuple = rc._as_setup((setup.model, setup.optimizer, setup.batch))
    as_mapping = rc._as_setup(
        {"model": setup.model, "optimizer": setup.optimizer, "batch": setup.batch}
    )
    as_namespace = rc._as_setup(
        types.SimpleNamespace(model=setup.model, optimizer=setup.optimizer, batch=setup.batch)
    )
    for got in (as_tuple, as_mapping, as_namespace):
        assert got.model is setup.model and got.batch is setup.batch
    with pytest.raises(TypeError, match="lacks"):
        rc._as_setup(types.SimpleNamespace(model=setup.model))


def test_load_factory_specs(tmp_path: Path) -> None:
    module_spec = rc.load_factory("lint_rules.runtime.shared_layer:build_shared_layer_training")
    assert module_spec.__name__ == "build_shared_layer_training"
    (tmp_path / "helper_sibling.py").write_text("VALUE = 3\n")
    (tmp_path / "my_factory.py").write_text(
        "import helper_sibling\n\ndef make(device, seed):\n    return helper_sibling.VALUE\n"
    )
    made = rc.load_factory(f"{tmp_path / 'my_factory.py'}:make")
    assert made(device="cpu", seed=0) == 3  # the file's folder is importable for siblings
    with pytest.raises(ValueError, match="module:callable"):
        rc.load_factory("no_colon_here")
    with pytest.raises(FileNotFoundError):
        rc.load_factory(f"{tmp_path / 'absent.py'}:make")


def test_cli_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = rc.main(
        ["run", "--factory", "x:y", "--steps", "2", "--resume-at", "2", "--workdir", str(tmp_path)]
    )
    assert code == 2
    assert "resume_at" in capsys.readouterr().err


def test_shared_layer_factory_builds_both_variants_in_one_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The public factory other tests (the runtime monitor's) build the suite's model with."""
    from lint_rules.runtime import reference_te, shared_layer

    monkeypatch.delenv(shared_layer.BACKEND_ENV, raising=False)
    built = {
        variant: shared_layer.build_shared_layer_training(variant, backend="reference")
        for variant in shared_layer.VARIANTS
    }
    for training in built.values():
        assert isinstance(training.model.mtp_layer, reference_te.Linear)
        assert training.model.is_first_microbatch is True
        training.train_step(training.batch(1))
        assert training.model.is_first_microbatch is False
    # Same seed and data: step 1 differs only by depth 2's gradient of the first microbatch,
    # which the unguarded model overwrote.
    unguarded, fixed = (built[v].model.mtp_layer.weight.main_grad for v in shared_layer.VARIANTS)
    assert not torch.equal(unguarded, fixed)
    assert shared_layer.BACKEND_ENV not in os.environ  # restored
    with pytest.raises(ValueError, match="variant"):
        shared_layer.variant_source("guarded-by-hand")
