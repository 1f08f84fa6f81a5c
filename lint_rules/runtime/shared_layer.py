"""Build the runtime suite's shared-layer model: the unguarded fixture or its codemod-fixed form.

The model's source is ``lint_rules/runtime/fixtures/shared_layer_model.py`` (package data, read
with :mod:`importlib.resources`, so this works from an installed wheel; one TE ``Linear`` reused at
two depths, flag kept as ``self.is_first_microbatch``, fused wgrad into ``main_grad``). The
``fixed`` variant is that source after the project's own codemod
(:func:`lint_rules.fixing.fix_source`), never a hand-written copy, so whatever is proven about
it is proven about the codemod's real output.

Public entry points (for the resume check and the runtime monitor)::

    from lint_rules.runtime.shared_layer import build_shared_layer_training
    training = build_shared_layer_training("unguarded", backend="reference", device="cpu")
    training.model, training.optimizer, training.batch(step), training.train_step(batch)

``write_variant(variant, folder)`` writes the variant's source (and its sibling fixtures) to a
folder, which is what the subprocess legs of :mod:`lint_rules.runtime.resume` load.
"""

from __future__ import annotations

import importlib.resources
import itertools
import os
import sys
import threading
import types
from pathlib import Path
from typing import Any

__all__ = [
    "BACKEND_ENV",
    "MODEL_FILE",
    "VARIANTS",
    "build_shared_layer_training",
    "fixture_text",
    "load_source_module",
    "load_variant_module",
    "variant_source",
    "write_variant",
]

BACKEND_ENV = "TE_MICROBATCH_BACKEND"
"""Read by the fixture at import: ``te`` for ``transformer_engine.pytorch``, else the reference."""

FIXTURE_PACKAGE = "lint_rules.runtime.fixtures"
MODEL_FILE = "shared_layer_model.py"
FACTORY = "build_training"
SIBLINGS = ("megatron_guard.py",)
VARIANTS = ("unguarded", "fixed")
BACKENDS = ("reference", "te")

_LOCK = threading.Lock()
_COUNTER = itertools.count()


def fixture_text(name: str = MODEL_FILE) -> str:
    """The text of one runtime fixture file, read from the installed package."""
    return importlib.resources.files(FIXTURE_PACKAGE).joinpath(name).read_text(encoding="utf-8")


def variant_source(variant: str = "unguarded", settings: Any = None) -> str:
    """The model source of ``variant``: the fixture as written, or after ``fix_source``.

    ``settings`` (a :class:`lint_rules.settings.Settings`) selects the fix strategy; the
    default is the project default (``none``). Raises if the codemod changes nothing, since a
    "fixed" model identical to the unguarded one would make every later check vacuous.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, not {variant!r}")
    text = fixture_text(MODEL_FILE)
    if variant == "unguarded":
        return text
    from lint_rules.fixing import fix_source
    from lint_rules.settings import DEFAULT_SETTINGS

    result = fix_source(text, settings if settings is not None else DEFAULT_SETTINGS)
    if not result.changed or result.text == text:
        raise RuntimeError(f"the codemod left {MODEL_FILE} unchanged: nothing to compare")
    return result.text


def write_variant(variant: str, folder: str | Path, settings: Any = None) -> Path:
    """Write ``variant``'s model file and its sibling fixtures into ``folder``; return the file.

    The result is what ``python -m lint_rules.runtime.resume --factory FILE:build_training``
    loads (the harness puts the file's folder on ``sys.path`` for the siblings).
    """
    dest = Path(folder)
    dest.mkdir(parents=True, exist_ok=True)
    for name in SIBLINGS:
        (dest / name).write_text(fixture_text(name), encoding="utf-8")
    target = dest / MODEL_FILE
    target.write_text(variant_source(variant, settings), encoding="utf-8")
    return target


def load_variant_module(
    variant: str = "unguarded",
    backend: str = "reference",
    settings: Any = None,
    source: str | None = None,
) -> types.ModuleType:
    """Import ``variant``'s source as a fresh module bound to ``backend``.

    Each call gives a new module object (unique name), so an unguarded and a fixed model, or
    two backends, can live in one process. ``source`` replaces the variant's text (a mutant,
    for tests that show a check can fail). The backend is chosen by setting
    :data:`BACKEND_ENV` while the module body runs (the fixture reads it at import, like a real
    project choosing TE or a fallback), under a lock, and restoring it afterwards.
    """
    if source is None:
        source = variant_source(variant, settings)
    return load_source_module(source, f"{variant} {MODEL_FILE}", backend)


def load_source_module(source: str, label: str, backend: str = "reference") -> types.ModuleType:
    """Run a fixture's ``source`` as a fresh, uniquely named module bound to ``backend``."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, not {backend!r}")
    name = f"_te_runtime_fixture_{backend}_{next(_COUNTER)}"
    module = types.ModuleType(name)
    code = compile(source, f"<{label}>", "exec")
    with _LOCK:
        for sibling in SIBLINGS:  # the guard module, for a guard-strategy fix
            sibling_name = sibling[: -len(".py")]
            if sibling_name not in sys.modules:
                sys.modules[sibling_name] = importlib.import_module(
                    f"{FIXTURE_PACKAGE}.{sibling_name}"
                )
        previous = os.environ.get(BACKEND_ENV)
        os.environ[BACKEND_ENV] = backend
        try:
            sys.modules[name] = module
            exec(code, module.__dict__)
        finally:
            if previous is None:
                os.environ.pop(BACKEND_ENV, None)
            else:
                os.environ[BACKEND_ENV] = previous
    return module


def build_shared_layer_training(
    variant: str = "unguarded",
    backend: str = "reference",
    device: str | None = None,
    seed: int = 0,
    source: str | None = None,
    **config: Any,
) -> Any:
    """The fixture's ``Training`` object for ``variant`` on ``backend``.

    It has ``model`` (``SharedLayerMTPModel``; its shared layer is ``model.mtp_layer``),
    ``optimizer``, ``batch(step)``, ``train_step(batch)`` and ``config``. ``device`` defaults to
    ``cuda`` for ``te`` and ``cpu`` for the reference; ``config`` overrides ``ModelConfig``
    fields (``hidden_size``, ``mtp_num_layers``, ``num_microbatches``, ...).
    """
    module = load_variant_module(variant, backend, source=source)
    if device is None:
        device = "cuda" if backend == "te" else "cpu"
    return getattr(module, FACTORY)(device=device, seed=seed, **config)
