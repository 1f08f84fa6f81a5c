"""Shared helpers of the runtime suite: the backends as pytest parameters, and the GPU command
as a process (``gpu_check_process``) or in this process (``command_state``).

Backends (one parameter, three ways to run the same scenario; see
``lint_rules.runtime.backends``):

- ``reference-cpu``: the pure-torch reference of TE's contract (``lint_rules.runtime.reference_te``)
  on the CPU. Runs everywhere, CI included.
- ``reference-cuda``: the same on a GPU (marked ``gpu``).
- ``te-cuda``: real ``transformer_engine.pytorch`` on a GPU (marked ``gpu``).

A backend that cannot run here skips with the reason (CUDA missing, TE not installed or not
importable, FP8 not supported by the GPU). (A uniquely named module rather than ``conftest`` so
that test files can import it without clashing with another folder's conftest.)
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

pytest.importorskip("torch", reason="the runtime suite needs torch (pip install torch==2.13.0)")

from lint_rules.runtime.backends import BACKENDS as _BACKENDS  # noqa: E402
from lint_rules.runtime.backends import Backend  # noqa: E402
from lint_rules.runtime.mutations import MUTATION_ENV  # noqa: E402

BACKENDS = [
    pytest.param(b, id=b.id, marks=() if b.id == "reference-cpu" else pytest.mark.gpu)
    for b in _BACKENDS
]

__all__ = ["BACKENDS", "Backend", "command_state", "gpu_check_process", "skip_unless_runnable"]


def skip_unless_runnable(chosen: Backend, fp8: bool = False) -> Backend:
    """Skip the calling test, with the reason, when ``chosen`` cannot run on this machine."""
    reason = chosen.fp8_unavailable() if fp8 else chosen.unavailable()
    if reason is not None:
        pytest.skip(f"{chosen.id}: {reason}")
    return chosen


def gpu_check_process(
    *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m lint_rules.runtime.gpu_check ARGS`` as a user types it, with no planted
    error unless ``env`` plants one."""
    clean = {k: v for k, v in os.environ.items() if k != MUTATION_ENV}
    return subprocess.run(
        [sys.executable, "-m", "lint_rules.runtime.gpu_check", *args],
        capture_output=True,
        text=True,
        timeout=900,
        env={**clean, **(env or {})},
    )


@contextlib.contextmanager
def command_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Around ``gpu_check.main`` run in this process: what the command sets for itself (torch's
    threads, its TF32 flags, ``NVIDIA_TF32_OVERRIDE``) is put back afterwards."""
    import torch

    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", os.environ.get("NVIDIA_TF32_OVERRIDE", "0"))
    threads = torch.get_num_threads()
    tf32 = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32
