"""What the linter knows about Transformer Engine (TE 1.x and 2.x), without ever importing it.

Which TE callables take ``is_first_microbatch`` (and at which positional index), which reject
it, and which need it as a bool. ``docs/te-facts.md`` says where each fact comes from.
"""

from __future__ import annotations

from lint_rules.releases import NEWEST, OLDEST, Release, parse_release  # noqa: F401 - re-exported
from lint_rules.slotted import Frozen

FLAG = "is_first_microbatch"
"""The keyword every rule is about; files without these bytes are never parsed."""

TE_ROOT = "transformer_engine"

TE_MODULE_CLASSES: tuple[str, ...] = (
    "Linear",
    "LayerNormLinear",
    "LayerNormMLP",
    "GroupedLinear",
    "MultiheadAttention",
    "TransformerLayer",
)
"""The TE module classes whose ``forward`` takes ``is_first_microbatch``."""

# forward(...) parameter index of `is_first_microbatch`, counting positional arguments after
# `self`, for the classes where it is the same in TE 1.x and 2.x (read off 1.13.0 and 2.20.2).
# The unbound form `Linear.forward(module, x, flag)` shifts it by one.
FLAG_POSITION: dict[str, int] = {
    "Linear": 1,
    "LayerNormLinear": 1,
    "LayerNormMLP": 1,
    "GroupedLinear": 2,
}

VERSION_DEPENDENT_POSITION: dict[str, dict[str, int]] = {
    "MultiheadAttention": {"1.13": 5, "2.x": 6},
    "TransformerLayer": {"1.13": 8, "2.x": 10},
}
"""Classes whose positional index moved between TE releases: a positional argument there is
never taken for the flag (no TEM002, no positional fix), since the TE version is not known."""


# TE callables that do NOT take the flag: passing it raises TypeError (TEM004).
TE_REJECTING: frozenset[str] = frozenset(
    {
        "fp8_autocast",
        "autocast",
        "LayerNorm",
        "RMSNorm",
        "DotProductAttention",
        "fp8_model_init",
        "quantized_model_init",
    }
)
TE_OPS_PACKAGE = "transformer_engine.pytorch.ops"
# (DotProductAttention's entry is the newest release's: ``TEFacts.rejects`` asks the table.)
"""Everything under the fusible-ops package rejects the flag (it uses other switches)."""

TE_GRAPH_FACTORY = "make_graphed_callables"
"""Its callables need a bool flag on every call: never rewrite their flag to None."""


# --------------------------------------------------------------------------------------------
# TE's facts by release: one table, the rules and the explanations read it


# ``Release``, ``NEWEST``, ``OLDEST`` and ``parse_release`` live in ``releases`` (read when a
# project's release is inferred, before any analysis).


class Fact(Frozen):
    """One fact that holds for the releases ``first`` to ``last`` (inclusive; None: still)."""

    __slots__ = ("first", "last", "source")

    first: Release
    last: Release | None
    source: str
    """Where it was read: the file of the TE package, and the releases checked."""

    def __init__(self, first: Release, last: Release | None, source: str) -> None:
        self._fill(locals())

    def holds(self, release: Release) -> bool:
        return self.first <= release and (self.last is None or release <= self.last)


TAKES_FLAG_SINCE: dict[str, Fact] = {
    # A class's instance takes the flag in these releases (its ``forward`` has the parameter).
    "DotProductAttention": Fact(
        (1, 9),
        (1, 13),
        "pytorch/attention.py `DotProductAttention.forward(..., is_first_microbatch=None)` "
        "in 1.13.0 (used for its FP8 weight cache); gone from 2.0 on "
        "(pytorch/attention/dot_product_attention/dot_product_attention.py in 2.20.2)",
    ),
}
"""TE callables that take the flag in some releases only; outside them they reject it."""

OVERWRITE_MAIN_GRAD = Fact(
    (2, 9),
    None,
    "pytorch/module/linear.py reads the weight attribute `overwrite_main_grad` (2.9 on, TE PR "
    "#2191; not in 2.8): set, TE overwrites `main_grad` whatever the flag",
)
"""``weight.overwrite_main_grad = True`` forces overwrite (Megatron-FSDP sets it)."""


class TEFacts(Frozen):
    """What one TE release does with the flag, as the rules need it."""

    __slots__ = ("release",)

    release: Release

    def __init__(self, release: Release) -> None:
        self._fill(locals())

    def rejects(self, name: str) -> bool:
        """Whether the TE callable ``name`` (short name) rejects the flag in this release."""
        taking = TAKES_FLAG_SINCE.get(name)
        if taking is not None:
            return not taking.holds(self.release)
        return name in TE_REJECTING

    @property
    def overwrite_main_grad(self) -> bool:
        return OVERWRITE_MAIN_GRAD.holds(self.release)

    @property
    def label(self) -> str:
        return f"{self.release[0]}.{self.release[1]}"


def facts_for(version: str) -> TEFacts:
    """The facts of the release ``version`` names (``""``: the newest)."""
    release = parse_release(version) if version else None
    return TEFacts(release or NEWEST)


# --------------------------------------------------------------------------------------------
# Look-alikes: packages that copy TE's API without being TE


class LookAlikeFamily(Frozen):
    """A package that copies TE's module API, and how the linter treats it (docs/rules.md)."""

    __slots__ = ("package", "name", "te_semantics", "reason")

    package: str
    name: str
    te_semantics: bool
    """Whether its modules do with the flag what TE does (overwrite a fused ``main_grad``)."""
    reason: str
    """Why, read off the code that uses it (neither package's source is public)."""

    def __init__(self, package: str, name: str, te_semantics: bool, reason: str) -> None:
        self._fill(locals())


_GAUDI = (
    "Habana's Megatron-LM (megatron/core/extensions/intel_transformer_engine.py) builds "
    "`IntelTELinear(te.Linear)` with no `fuse_wgrad_accumulation` and sets its flag to `None` "
    "unless `cache_fp8_weight_fwd` is on: the flag only selects an FP8 weight cache on HPU, "
    "and no fused gradient can be overwritten"
)
LOOKALIKES: dict[str, LookAlikeFamily] = {
    "intel_transformer_engine": LookAlikeFamily(
        "intel_transformer_engine", "Intel Gaudi's TE port", False, _GAUDI
    ),
    "habana_frameworks.torch.hpex.experimental.transformer_engine": LookAlikeFamily(
        "habana_frameworks.torch.hpex.experimental.transformer_engine",
        "Intel Gaudi's TE port",
        False,
        _GAUDI,
    ),
    "nvidia_kitchen": LookAlikeFamily(
        "nvidia_kitchen",
        "NVIDIA Kitchen",
        True,
        "megatron-core's extensions/kitchen.py (0.14.0 on) subclasses `nvidia_kitchen.Linear`, "
        "`GroupedLinear` and `LayerNormLinear` with TE's constructor (`fuse_wgrad_accumulation`) "
        "and `forward(x, is_first_microbatch=...)`, and `set_is_first_microbatch` re-arms them "
        "under `use_kitchen`: TE's semantics, but not TE, and its modules exist only where "
        "`use_kitchen` re-arms their flag",
    ),
}
"""Known TE look-alikes by package: never resolved as TE; quiet unless ``unresolved =
"report"``, and then named in the message."""


def te_class_of(qualified_name: str) -> str | None:
    """Return the TE module class (``"Linear"``...) a dotted name refers to, if it is one."""
    if not qualified_name.startswith(TE_ROOT + "."):
        return None
    if qualified_name.startswith(TE_OPS_PACKAGE + "."):
        return None  # te.ops.Linear is a fusible op: it rejects the flag
    last = qualified_name.rsplit(".", 1)[-1]
    return last if last in TE_MODULE_CLASSES else None


def te_rejecting_name(qualified_name: str, facts: TEFacts | None = None) -> str | None:
    """Return the TE callable's short name if it rejects the flag (TEM004) in the release of
    ``facts`` (the newest when None), else None."""
    if not qualified_name.startswith(TE_ROOT + "."):
        return None
    last = qualified_name.rsplit(".", 1)[-1]
    if qualified_name.startswith(TE_OPS_PACKAGE + "."):
        return last
    if (facts or _NEWEST_FACTS).rejects(last):
        return last
    return None


def te_taking_name(qualified_name: str, facts: TEFacts | None = None) -> str | None:
    """The short name of a TE class that takes the flag only in some releases, when the
    release of ``facts`` is one of them (``DotProductAttention`` in 1.9-1.13)."""
    if not qualified_name.startswith(TE_ROOT + ".") or qualified_name.startswith(
        TE_OPS_PACKAGE + "."
    ):
        return None
    last = qualified_name.rsplit(".", 1)[-1]
    taking = TAKES_FLAG_SINCE.get(last)
    if taking is not None and taking.holds((facts or _NEWEST_FACTS).release):
        return last
    return None


FORWARDERS: dict[str, str] = {
    "torch.utils.checkpoint.checkpoint": "checkpoint",
    "transformer_engine.pytorch.distributed.checkpoint": "te_checkpoint",
    "transformer_engine.pytorch.checkpoint": "te_checkpoint",
    "functools.partial": "partial",
}
"""Callables that call their first argument with the rest of their arguments (and keywords):
``checkpoint(function, *args, **kwargs)``; ``partial`` binds them for a later call. TE's
also takes the legacy positional form ``checkpoint(function, distribute_saved_activations,
get_rng_state_tracker, tp_group, *args)``."""

TE_CHECKPOINT_LEGACY_ARGS = 3
"""Positional arguments TE's checkpoint consumes itself in its legacy form."""

PASS_THROUGH: frozenset[str] = frozenset(
    {"torch.compile", "torch.jit.script", "copy.deepcopy", "copy.copy"}
)
"""Wrappers that return a callable module equivalent to their first argument (a copy of a
module is a module of the same class)."""


_NEWEST_FACTS = TEFacts(NEWEST)
