"""The attributes Megatron-style code sets on parameters at run time, declared for the type checker.

Megatron's DistributedDataParallel gives every parameter an fp32 ``main_grad`` buffer and the
``grad_added_to_main_grad`` attribute Transformer Engine looks for; Megatron-FSDP sets
``overwrite_main_grad``. torch's stubs declare none of them, so code that reads or writes them
views its parameters as :class:`MainGradParameter`: a declaration only, never instantiated (a
``cast`` or an annotation on ``getattr``'s result; the objects stay plain parameters).
"""

from __future__ import annotations

import torch

__all__ = ["MainGradParameter"]


class MainGradParameter(torch.nn.Parameter):
    """A ``torch.nn.Parameter`` as a Megatron-style data-parallel wrapper leaves it."""

    main_grad: torch.Tensor
    """The fp32 gradient buffer TE's fused wgrad GEMM writes (``fuse_wgrad_accumulation``)."""
    grad_added_to_main_grad: bool
    """Set by TE after it wrote ``main_grad``: the autograd ``.grad`` is then a dummy."""
    overwrite_main_grad: bool
    """Megatron-FSDP's switch: TE overwrites ``main_grad`` instead of adding to it."""
