"""The reference's release and its saved FP8 state (NOT TE): what changes with TE's version.

Two things of TE's contract depend on the release, and the reference models both, so that the
GPU command's handling of them runs on the CPU too:

- **Saved FP8 state** (``get_extra_state``/``set_extra_state``, TE ``module/base.py``). A module
  whose last forward ran under FP8 with a stateful recipe (``DelayedScaling``) saves its scaling
  state as a pickle in a ``uint8`` tensor (the ``_extra_state`` entry of its ``state_dict``);
  under a stateless recipe (``Float8CurrentScaling``), or when its last forward was not FP8, an
  empty tensor. From TE 2.18 (``pytorch/_extra_state.py``, PR #3123) loading a non-empty pickle
  raises ``RuntimeError`` with TE's advisory ("Refusing to load pickled Transformer Engine
  extra state for <class>. ...") unless ``NVTE_ALLOW_UNSAFE_PICKLE_EXTRA_STATE=1`` is set when
  the state is loaded (TE reads the variable at every load). TE has no other way to load it.
- **``overwrite_main_grad``** (TE's FSDP grad fusion, PR #2191): honoured from TE 2.9; an older
  TE ignores the attribute (the flag alone decides).

``TE_MICROBATCH_REFERENCE_VERSION`` (test-only) makes the reference pretend to be another
release (default :data:`VERSION`), so the tests can show the command's release gates.
"""

from __future__ import annotations

import os
import pickle
from typing import Any

import torch

from lint_rules.runtime.own_state import UNSAFE_PICKLE_EXTRA_STATE_ENV

VERSION = "2.20.2"
"""The TE release whose source the reference implements."""
VERSION_ENV = "TE_MICROBATCH_REFERENCE_VERSION"
REFUSES_PICKLE_FROM = (2, 18)
OVERWRITE_MAIN_GRAD_FROM = (2, 9)
STATELESS_RECIPES = ("Float8CurrentScaling", "MXFP8BlockScaling", "Float8BlockScaling")

__all__ = [
    "OVERWRITE_MAIN_GRAD_FROM",
    "REFUSES_PICKLE_FROM",
    "UNSAFE_PICKLE_EXTRA_STATE_ENV",
    "VERSION",
    "VERSION_ENV",
    "ExtraState",
    "extra_state_pickle_advisory",
    "parse_version",
    "version",
]


def parse_version(text: str) -> tuple[int, int]:
    """(major, minor) of a version text such as ``2.20.2`` or ``2.9.0.dev0+abc``."""
    parts = text.split("+")[0].split(".")
    try:
        return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        raise ValueError(f"not a version: {text!r}") from None


def version() -> str:
    """The release the reference behaves as (``TE_MICROBATCH_REFERENCE_VERSION``, else 2.20.2)."""
    return os.environ.get(VERSION_ENV) or VERSION


def extra_state_pickle_advisory(context: str) -> str:
    """TE's message, word for word (``_extra_state.extra_state_pickle_advisory``)."""
    return (
        f"Refusing to load pickled Transformer Engine extra state for {context}. "
        "Delayed-scaling FP8 metadata can be stored as a Python pickle, and loading it "
        "can execute arbitrary code. Only enable unsafe loading if this checkpoint is from "
        f"a trusted source. To load it anyway, set {UNSAFE_PICKLE_EXTRA_STATE_ENV}=1."
    )


class ExtraState(torch.nn.Module):
    """``get_extra_state``/``set_extra_state`` as TE's modules have them (see module doc)."""

    def _note_forward(self, fp8: bool, recipe: Any) -> None:
        """At every forward: whether it ran under FP8, and the recipe (TE's ``fp8_meta``)."""
        self._fp8_checkpoint = fp8
        if fp8:
            self._fp8_recipe = recipe

    def init_fp8_metadata(self, num_gemms: int = 1) -> None:
        """TE initialises its FP8 metadata here (at forward, and Megatron's ``TEGroupedLinear``
        before a load); the reference keeps none beyond :meth:`_note_forward`'s."""

    def get_extra_state(self) -> torch.Tensor:
        recipe = getattr(self, "_fp8_recipe", None)
        if not getattr(self, "_fp8_checkpoint", False) or recipe is None:
            return torch.empty(0, dtype=torch.uint8)
        if type(recipe).__name__ in STATELESS_RECIPES:
            return torch.empty(0, dtype=torch.uint8)
        history = getattr(recipe, "amax_history_len", 1)
        state = {
            "recipe": recipe,
            "scale_fwd": torch.ones(3),
            "amax_history_fwd": torch.zeros(history, 3),
            "scale_bwd": torch.ones(2),
            "amax_history_bwd": torch.zeros(history, 2),
            "extra_fp8_variables": {"num_gemms": 1},
        }
        return torch.frombuffer(bytearray(pickle.dumps(state)), dtype=torch.uint8)

    def set_extra_state(self, state: Any) -> None:
        if state is None or (isinstance(state, torch.Tensor) and state.numel() == 0):
            return
        if not isinstance(state, torch.Tensor):
            raise RuntimeError("Unsupported checkpoint format.")
        refuses = parse_version(version()) >= REFUSES_PICKLE_FROM
        if refuses and os.getenv(UNSAFE_PICKLE_EXTRA_STATE_ENV, "0") != "1":
            raise RuntimeError(extra_state_pickle_advisory(type(self).__name__))
        loaded = pickle.loads(bytes(state.detach().cpu().tolist()))  # torch without numpy too
        self._fp8_recipe = loaded["recipe"]


def honours_overwrite_main_grad() -> bool:
    """Whether the release the reference behaves as reads ``overwrite_main_grad``."""
    return parse_version(version()) >= OVERWRITE_MAIN_GRAD_FROM
