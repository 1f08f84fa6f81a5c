"""Runtime suite fixtures: ``backend`` parametrises a test over reference-cpu, reference-cuda
and te-cuda (see ``runtime_support``), skipping with the reason where one cannot run."""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="the runtime suite needs torch (pip install torch==2.13.0)")

from runtime_support import BACKENDS, Backend, skip_unless_runnable  # noqa: E402


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Backend:
    """The backend under test; skips (with the reason) the ones this machine cannot run."""
    return skip_unless_runnable(request.param)


@pytest.fixture(params=BACKENDS)
def fp8_backend(request: pytest.FixtureRequest) -> Backend:
    """A backend that can run FP8 here (the reference always can; TE needs compute
    capability 8.9 or newer)."""
    return skip_unless_runnable(request.param, fp8=True)
