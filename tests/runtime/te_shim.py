"""A ``transformer_engine`` import shim over the CPU reference, built by the tests (never shipped).

megatron-core imports ``transformer_engine`` at module level and subclasses its classes
(``TELinear(te.pytorch.Linear)``, ``TEGroupedLinear(te.pytorch.GroupedLinear)``,
``TEDotProductAttention(te.pytorch.DotProductAttention)``,
``TEFusedMLP(te.pytorch.ops.Sequential)``,
...), and reads ``transformer_engine.__version__``. :func:`build_shim` writes a package into a
folder that only a child process puts on its path:

- ``transformer_engine.__version__``: the release the reference behaves as;
- ``transformer_engine.pytorch``: the reference (``Linear``, ``LayerNormLinear``,
  ``LayerNormMLP``, ``GroupedLinear``, ``autocast``, ``fp8_autocast``, ...); every other name, and
  every submodule megatron-core imports (``transformer_engine.pytorch.router``, ...), is a
  stand-in whose classes raise ``NotImplementedError`` when built, so that megatron-core's
  import-time references resolve and anything the reference does not model fails loudly;
- ``transformer_engine.common.recipe``: the reference's recipes;
- ``transformer_engine.pytorch.tensor.QuantizedTensor``: a class nothing is an instance of.
"""

from __future__ import annotations

from pathlib import Path

FILES = {
    "transformer_engine/__init__.py": '''\
"""Test-only shim: transformer_engine backed by te-microbatch-lint's CPU reference."""
from lint_rules.runtime.reference_state import version as _version

__version__ = _version()
from . import common, pytorch  # noqa: E402,F401
''',
    "transformer_engine/common/__init__.py": "from . import recipe  # noqa: F401\n",
    "transformer_engine/common/recipe.py": (
        "from lint_rules.runtime.reference_fp8 import (  # noqa: F401\n"
        "    DelayedScaling, Float8CurrentScaling, Format,\n)\n"
    ),
    "transformer_engine/pytorch/tensor/__init__.py": '''\
import torch


class QuantizedTensor(torch.Tensor):
    """The reference keeps no quantized tensors: nothing is ever an instance."""
''',
    "transformer_engine/pytorch/__init__.py": '''\
import importlib.machinery as _machinery
import sys as _sys
import types as _types

import torch as _torch

from lint_rules.runtime.reference_te import *  # noqa: F401,F403
from lint_rules.runtime.reference_te import autocast, fp8_autocast  # noqa: F401


def _stand_in(name):
    class StandIn(_torch.nn.Module):
        def __init__(self, *args, **kwargs):
            raise NotImplementedError(f"{name}: not modelled by the reference")

    StandIn.__name__ = StandIn.__qualname__ = name.rsplit(".", 1)[-1]
    return StandIn


class _Namespace(_types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        full = f"{self.__name__}.{name}"
        value = _Namespace(full) if name[:1].islower() else _stand_in(full)
        setattr(self, name, value)
        return value


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    full = f"{__name__}.{name}"
    value = _Namespace(full) if name[:1].islower() else _stand_in(full)
    globals()[name] = value
    return value


class _StandInFinder:
    """transformer_engine.pytorch.<sub> modules the shim lacks: stand-in namespaces."""

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if not fullname.startswith(__name__ + "."):
            return None
        return _machinery.ModuleSpec(fullname, cls)

    @staticmethod
    def create_module(spec):
        return _Namespace(spec.name)

    @staticmethod
    def exec_module(module):
        return None


_sys.meta_path.append(_StandInFinder)
''',
}


def build_shim(folder: Path) -> Path:
    """Write the shim package into ``folder``; return ``folder`` (put it on a child's path)."""
    for name, text in FILES.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return folder
