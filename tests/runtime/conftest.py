"""Runtime suite fixtures: ``backend`` parametrises a test over reference-cpu, reference-cuda
and te-cuda (see ``runtime_support``), skipping with the reason where one cannot run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the runtime suite needs torch (pip install torch==2.13.0)")

# What the GPU command sets, for the gpu-marked tests too: no TF32 anywhere (the variable before
# any CUDA context exists, so that it reaches cuBLASLt; torch's own flags).
os.environ["NVIDIA_TF32_OVERRIDE"] = "0"
from lint_rules.runtime.gpu_check import tf32_off  # noqa: E402

tf32_off()

from runtime_support import (  # noqa: E402
    BACKENDS,
    Backend,
    gpu_check_process,
    skip_unless_runnable,
)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Backend:
    """The backend under test; skips (with the reason) the ones this machine cannot run."""
    return skip_unless_runnable(request.param)


@pytest.fixture(params=BACKENDS)
def fp8_backend(request: pytest.FixtureRequest) -> Backend:
    """A backend that can run FP8 here (the reference always can; TE needs compute
    capability 8.9 or newer)."""
    return skip_unless_runnable(request.param, fp8=True)


@pytest.fixture(scope="session")
def whole_reference_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """One clean run of the whole GPU command on the CPU reference, as a user types it (about
    15 s): the tests of the command and of its planted errors share it. (process, report)"""
    report = tmp_path_factory.mktemp("whole-reference-run") / "report.md"
    done = gpu_check_process("--backend", "reference", "--report", str(report))
    return done, report
