"""Shared helpers of the runtime suite: the backends as pytest parameters.

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

import pytest

pytest.importorskip("torch", reason="the runtime suite needs torch (pip install torch==2.13.0)")

from lint_rules.runtime.backends import BACKENDS as _BACKENDS  # noqa: E402
from lint_rules.runtime.backends import Backend  # noqa: E402

BACKENDS = [
    pytest.param(b, id=b.id, marks=() if b.id == "reference-cpu" else pytest.mark.gpu)
    for b in _BACKENDS
]

__all__ = ["BACKENDS", "Backend", "skip_unless_runnable"]


def skip_unless_runnable(chosen: Backend, fp8: bool = False) -> Backend:
    """Skip the calling test, with the reason, when ``chosen`` cannot run on this machine."""
    reason = chosen.fp8_unavailable() if fp8 else chosen.unavailable()
    if reason is not None:
        pytest.skip(f"{chosen.id}: {reason}")
    return chosen
