"""Build the Megatron-shaped fixture: TE wrappers that keep the flag, in a repeated MTP layer.

The model is ``lint_rules/runtime/fixtures/megatron_mtp_model.py`` (package data; see its
docstring): ``TELinear(te.Linear)`` keeps ``self.is_first_microbatch`` and clears it after each
forward, ``MegatronModule.set_is_first_microbatch`` re-arms it only under FP8/FP4, and the MTP
block calls ``self.layers[0]`` at every depth. No static rule can tie that call to the wrappers
(Megatron builds its layers from specs), so this is where the runtime monitor is the answer.

Variants, every one produced by the project's own codemod from the unguarded text:

- ``unguarded``: the file as written (megatron-core 0.19.2);
- ``guarded``: ``fix --fix-strategy guard`` with ``self.config``: the upstream tracking guard,
  ``None`` unless :func:`is_first_microbatch_tracked` (FP8/FP4) is true;
- ``none``: ``fix`` with the default strategy: ``None`` always, the fix for a module called more
  than once per step.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from lint_rules.runtime.shared_layer import SIBLINGS, fixture_text, load_source_module

__all__ = [
    "MODEL_FILE",
    "VARIANTS",
    "build_megatron_training",
    "megatron_source",
    "write_megatron_variant",
]

MODEL_FILE = "megatron_mtp_model.py"
VARIANTS = ("unguarded", "guarded", "none")
GUARD_IMPORT = "megatron_guard.is_first_microbatch_tracked"


@functools.cache
def megatron_source(variant: str = "unguarded") -> str:
    """The model source of ``variant`` (the codemod's output for ``guarded`` and ``none``)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, not {variant!r}")
    text = fixture_text(MODEL_FILE)
    if variant == "unguarded":
        return text
    from lint_rules.fixing import fix_source
    from lint_rules.settings import Settings

    if variant == "guarded":
        settings = Settings(
            fix_strategy="guard", guard_import=GUARD_IMPORT, guard_config="self.config"
        )
    else:
        settings = Settings()
    result = fix_source(text, settings)
    if not result.changed or result.text == text:
        raise RuntimeError(f"the codemod left {MODEL_FILE} unchanged ({variant})")
    return result.text


def write_megatron_variant(variant: str, folder: str | Path) -> Path:
    """Write ``variant``'s model file and its siblings into ``folder``; return the file."""
    dest = Path(folder)
    dest.mkdir(parents=True, exist_ok=True)
    for name in SIBLINGS:
        (dest / name).write_text(fixture_text(name), encoding="utf-8")
    target = dest / MODEL_FILE
    target.write_text(megatron_source(variant), encoding="utf-8")
    return target


def build_megatron_training(
    variant: str = "unguarded",
    backend: str = "reference",
    device: str | None = None,
    seed: int = 0,
    **config: Any,
) -> Any:
    """The fixture's ``Training`` (``model``, ``optimizer``, ``batch``, ``train_step``,
    ``tensors``, ``config``); ``config`` overrides ``TransformerConfig`` fields."""
    module = load_source_module(megatron_source(variant), f"{variant} {MODEL_FILE}", backend)
    if device is None:
        device = "cuda" if backend == "te" else "cpu"
    return module.build_training(device=device, seed=seed, **config)
