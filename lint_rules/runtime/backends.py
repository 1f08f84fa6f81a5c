"""Where a runtime scenario runs: the reference (CPU or CUDA) or real Transformer Engine (CUDA).

``Backend("reference", "cpu")``, ``Backend("reference", "cuda")`` and ``Backend("te", "cuda")``
run the same scenario code; :meth:`Backend.unavailable` says why one cannot run on this machine
(without importing TE when it is not installed). Importing this module does not import torch.
"""

from __future__ import annotations

import importlib.util
import types
from dataclasses import dataclass
from typing import Any

FP8_MIN_CAPABILITY = (8, 9)
"""FP8 GEMMs need compute capability 8.9 (Ada) or newer (Hopper is 9.0); used only on a TE
too old to have its own gate."""


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

    def recipe(self, name: str = "delayed") -> object:
        """An FP8 recipe of this backend (TE's own class on TE): ``RECIPES`` names them."""
        if name not in RECIPES:
            raise ValueError(f"recipe must be one of {sorted(RECIPES)}, not {name!r}")
        if self.is_te:
            from transformer_engine.common import recipe
        else:
            from lint_rules.runtime import reference_fp8 as recipe
        return getattr(recipe, RECIPES[name])()

    def autocast(self, recipe: object, enabled: bool = True) -> Any:
        """``autocast(enabled=..., recipe=...)``; ``fp8_autocast`` on a TE that lacks it."""
        te = self.module()
        if hasattr(te, "autocast"):
            return te.autocast(enabled=enabled, recipe=recipe)
        return te.fp8_autocast(enabled=enabled, fp8_recipe=recipe)

    def version(self) -> str:
        """The TE release: ``transformer_engine.__version__``, or the one the reference
        implements (``reference_state.version()``, which a test can set lower)."""
        if self.is_te:
            import transformer_engine

            return str(transformer_engine.__version__)
        from lint_rules.runtime.reference_state import version

        return version()

    def too_old(self, since: str | None, what: str) -> str | None:
        """Why a check that needs TE ``since`` cannot run on this release, or None."""
        if since is None:
            return None
        from lint_rules.runtime.reference_state import parse_version

        have = self.version()
        if parse_version(have) >= parse_version(since):
            return None
        return f"{what} exists from TE {since}; this is {have}"

    def unavailable(self) -> str | None:
        """Why this backend cannot run here, or None."""
        import torch

        if self.device == "cuda" and not torch.cuda.is_available():
            return "CUDA not available"
        if self.is_te:
            return te_unavailable_reason()
        return None

    def fp8_unavailable(self, recipe: str = "delayed") -> str | None:
        """Why FP8 scenarios under ``recipe`` cannot run on this backend here, or None.

        The reference always can. On TE the answer is TE's own: the recipe's gate
        (``is_fp8_available(return_reason=True)`` for ``DelayedScaling`` and
        ``Float8CurrentScaling``, which checks compute capability AND the CUDA and cuBLASLt
        versions), with the compute-capability rule only for a TE too old to have the gate.
        """
        reason = self.unavailable()
        if reason is not None or not self.is_te:
            return reason
        return te_fp8_unavailable_reason(recipe)


RECIPES = {"delayed": "DelayedScaling", "current": "Float8CurrentScaling"}
"""The FP8 recipes the scenarios run under (short name -> class in TE's ``common.recipe``)."""

_RECIPE_GATES = {"delayed": "is_fp8_available", "current": "is_fp8_available"}
"""TE 2.x's public gate per recipe (both per-tensor recipes share one)."""


def te_fp8_unavailable_reason(recipe: str = "delayed") -> str | None:
    """TE's reason why ``recipe`` cannot run here, or None (TE must be importable)."""
    import transformer_engine.pytorch as te
    from transformer_engine.common import recipe as recipes

    if not hasattr(recipes, RECIPES[recipe]):
        return f"this transformer_engine has no {RECIPES[recipe]} recipe"
    gate = getattr(te, _RECIPE_GATES[recipe], None)
    if gate is not None:
        ok, reason = gate(return_reason=True)
    else:  # an older TE: the same check under its older name, else the capability rule
        try:
            from transformer_engine.pytorch.fp8 import check_fp8_support
        except ImportError:
            check_fp8_support = None
        if check_fp8_support is not None:
            ok, reason = check_fp8_support()
        else:
            import torch

            capability = torch.cuda.get_device_capability()
            ok = capability >= FP8_MIN_CAPABILITY
            reason = (
                f"FP8 needs compute capability 8.9 or newer; this GPU has "
                f"{capability[0]}.{capability[1]}"
            )
    if ok:
        return None
    return f"transformer_engine: {reason or 'FP8 not available'}"


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
