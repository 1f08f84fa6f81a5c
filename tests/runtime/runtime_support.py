"""Shared helpers of the runtime suite: the backends and fixture loading.

Backends (one parameter, three ways to run the same scenario):

- ``reference-cpu``: the pure-torch reference of TE's fused-wgrad contract
  (``lint_rules.testing.reference_te``) on the CPU. Runs everywhere, CI included.
- ``reference-cuda``: the same on a GPU (marked ``gpu``).
- ``te-cuda``: real ``transformer_engine.pytorch`` on a GPU (marked ``gpu``).

A backend that cannot run here skips with the reason (TE not importable, CUDA missing);
transformer_engine is imported only when a ``te`` test actually runs. (A uniquely named module
rather than ``conftest`` so that test files can import it without clashing with another
folder's conftest.)
"""

from __future__ import annotations

import importlib.util
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the runtime suite needs torch (pip install torch)")

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runtime"


@dataclass(frozen=True)
class Backend:
    """Which module implementation and which device a scenario runs on."""

    name: str  # "reference" or "te": the value of TE_MICROBATCH_BACKEND for the fixture model
    device: str

    @property
    def id(self) -> str:
        return f"{self.name}-{self.device}"

    def module(self) -> types.ModuleType:
        """The module namespace holding Linear, LayerNormLinear and GroupedLinear."""
        if self.name == "te":
            import transformer_engine.pytorch as te

            return te
        from lint_rules.testing import reference_te

        return reference_te


BACKENDS = [
    pytest.param(Backend("reference", "cpu"), id="reference-cpu"),
    pytest.param(Backend("reference", "cuda"), id="reference-cuda", marks=pytest.mark.gpu),
    pytest.param(Backend("te", "cuda"), id="te-cuda", marks=pytest.mark.gpu),
]


def te_unavailable_reason() -> str | None:
    """Why real TE cannot run here, or None. Imports TE only if it is installed."""
    if importlib.util.find_spec("transformer_engine") is None:
        return "transformer_engine not importable: not installed (see docs/runtime.md)"
    if not torch.cuda.is_available():
        return "CUDA not available (transformer_engine needs a GPU)"
    try:
        import transformer_engine.pytorch  # noqa: F401
    except Exception as error:  # ImportError, OSError from the extension, ...
        return f"transformer_engine not importable: {type(error).__name__}: {error}"
    return None


def skip_unless_runnable(chosen: Backend) -> Backend:
    """Skip the calling test, with the reason, when ``chosen`` cannot run on this machine."""
    if chosen.name == "te":
        reason = te_unavailable_reason()
        if reason is not None:
            pytest.skip(reason)
    elif chosen.device == "cuda" and not torch.cuda.is_available():
        pytest.skip("CUDA not available")
    return chosen


def load_fixture(name: str) -> types.ModuleType:
    """Import ``fixtures/runtime/<name>.py`` (fixtures are files, not a package)."""
    module_name = f"_runtime_fixture_{name}"
    spec = importlib.util.spec_from_file_location(module_name, FIXTURES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses look their module up while it executes
    spec.loader.exec_module(module)
    return module
