"""Where a runtime scenario runs: the reference (CPU or CUDA) or real Transformer Engine (CUDA).

``Backend("reference", "cpu")``, ``Backend("reference", "cuda")`` and ``Backend("te", "cuda")``
run the same scenario code; :meth:`Backend.unavailable` says why one cannot run on this machine
(without importing TE when it is not installed). Importing this module does not import torch.
"""

from __future__ import annotations

import importlib.util
import types
from dataclasses import dataclass

FP8_MIN_CAPABILITY = (8, 9)
"""FP8 GEMMs need compute capability 8.9 (Ada) or newer (Hopper is 9.0)."""


@dataclass(frozen=True)
class Backend:
    """Which module implementation and which device a scenario runs on."""

    name: str  # "reference" or "te": also the fixture model's TE_MICROBATCH_BACKEND value
    device: str

    @property
    def id(self) -> str:
        return f"{self.name}-{self.device}"

    @property
    def is_te(self) -> bool:
        return self.name == "te"

    def module(self) -> types.ModuleType:
        """The namespace holding Linear, LayerNormLinear, LayerNormMLP, GroupedLinear and
        fp8_autocast."""
        if self.is_te:
            import transformer_engine.pytorch as te

            return te
        from lint_rules.runtime import reference_te

        return reference_te

    def recipe(self) -> object:
        """A ``DelayedScaling`` FP8 recipe of this backend (TE's own class on TE)."""
        if self.is_te:
            from transformer_engine.common.recipe import DelayedScaling

            return DelayedScaling()
        from lint_rules.runtime.reference_te import DelayedScaling as Reference

        return Reference()

    def unavailable(self) -> str | None:
        """Why this backend cannot run here, or None."""
        import torch

        if self.device == "cuda" and not torch.cuda.is_available():
            return "CUDA not available"
        if self.is_te:
            return te_unavailable_reason()
        return None

    def fp8_unavailable(self) -> str | None:
        """Why FP8 scenarios cannot run on this backend here, or None (the reference always can)."""
        reason = self.unavailable()
        if reason is not None or not self.is_te:
            return reason
        import torch

        capability = torch.cuda.get_device_capability()
        if capability < FP8_MIN_CAPABILITY:
            return (
                f"FP8 needs compute capability 8.9 or newer; this GPU has "
                f"{capability[0]}.{capability[1]}"
            )
        return None


BACKENDS = (Backend("reference", "cpu"), Backend("reference", "cuda"), Backend("te", "cuda"))


def te_unavailable_reason() -> str | None:
    """Why real TE cannot run here, or None. Imports TE only if it is installed."""
    if importlib.util.find_spec("transformer_engine") is None:
        return "transformer_engine not installed"
    import torch

    if not torch.cuda.is_available():
        return "CUDA not available (transformer_engine needs a GPU)"
    try:
        import transformer_engine.pytorch  # noqa: F401
    except Exception as error:  # ImportError, OSError from the extension, ...
        return f"transformer_engine not importable: {type(error).__name__}: {error}"
    return None
