"""Each planted error of the reference makes the CPU run of the GPU command fail (exit 1).

The errors (``lint_rules.runtime.mutations``) are set through the test-only environment
variable the reference and the three-leg harness read, so they also reach the leg processes.
Each error fails the subset of the command that it concerns, and the clean run of the whole
command exits 0 with every subset in it (so each failure is the error's doing); two errors also
fail the whole command (``WHOLE``). The quick tier runs one subset; the rest is ``slow``,
and the runs of the whole command are ``long``.

The command runs in this process (``gpu_check.main``, what ``python -m`` calls), which saves
starting torch again for every run; its leg processes are still separate processes, and the
clean run is the command as a user types it (``whole_reference_run``, shared with
``test_gpu_check``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the runtime suite needs torch")

from runtime_support import command_state  # noqa: E402

from lint_rules.runtime import gpu_check  # noqa: E402
from lint_rules.runtime.mutations import MUTATION_ENV, MUTATIONS  # noqa: E402

SUBSET = {
    "accumulate-on-true": ["--no-legs", "-k", "accumulation true-false"],
    "fusion-ignored": ["--no-legs", "-k", "accumulation unfused"],
    "fp8-cache-never-reused": ["--no-legs", "-k", "fp8 cache stuck resumed"],
    "none-reuses-like-false": ["--no-legs", "-k", "fp8 cache none"],
    "leg-c-not-reset": ["-k", "legs shared-layer unguarded"],
    "straight-runs-differ": ["-k", "legs shared-layer fixed"],
    "extra-state-refused": ["--no-legs", "-k", "fp8 cache stuck resumed"],
}


def gpu_check_with(
    args: list[str],
    planted: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> tuple[int, str]:
    """``python -m lint_rules.runtime.gpu_check --backend reference ARGS`` with the error
    planted, run in this process: (exit status, output)."""
    monkeypatch.setenv(MUTATION_ENV, planted)
    capsys.readouterr()
    with command_state(monkeypatch):
        code = gpu_check.main(["--backend", "reference", *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_every_planted_error_has_a_subset() -> None:
    assert set(SUBSET) == set(MUTATIONS)
    assert set(WHOLE) <= set(MUTATIONS)


@pytest.mark.long
def test_the_subsets_pass_without_a_planted_error(
    whole_reference_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """The clean run of the whole command passes and holds every subset: each failure below
    is the error's doing."""
    clean, _ = whole_reference_run
    assert clean.returncode == 0, clean.stdout[-3000:] + clean.stderr
    agreed = [line for line in clean.stdout.splitlines() if line.startswith("agree")]
    for subset in SUBSET.values():
        assert any(subset[-1] in line for line in agreed), subset[-1]


QUICK = {"accumulate-on-true"}
"""The planted error whose subset runs in about a second: the quick tier's sample."""


@pytest.mark.parametrize(
    "planted",
    [pytest.param(m, marks=() if m in QUICK else pytest.mark.slow) for m in sorted(MUTATIONS)],
)
def test_planted_error_fails_its_subset_of_the_command(
    planted: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = gpu_check_with(SUBSET[planted], planted, monkeypatch, capsys)
    assert code == 1, out
    assert "unexpected" in out or "error" in out


WHOLE = ("accumulate-on-true", "leg-c-not-reset")
"""The planted errors also run through the whole command (about 15 s each): one the command
checks in its own process, one its leg processes check. Each error's subset above is a run of
the same command, so the others fail it too; the whole command adds the exit policy."""


@pytest.mark.long
@pytest.mark.parametrize("planted", WHOLE)
def test_planted_error_fails_the_whole_command(
    planted: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = gpu_check_with([], planted, monkeypatch, capsys)
    assert code == 1, out[-3000:]
