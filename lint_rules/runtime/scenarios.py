"""The runtime scenarios on one TE-style module, runnable on any :class:`Backend`.

Each scenario builds a module of one of the four kinds that take the flag (``Linear``,
``LayerNormLinear``, ``LayerNormMLP``, ``GroupedLinear``) from the backend's namespace, runs it,
and returns an :class:`Outcome` whose ``label`` names what happened (which gradients survived
in ``main_grad``, which weights each forward used). The expectation is computed independently,
by plain autograd on separate copies of the weights, never by the module under test. The tests
assert ``label == expected``; ``python -m lint_rules.runtime.gpu_check`` compares the labels of
the reference and of real TE. Numbers differ between backends (TF32, FP8 scaling); labels must
not.

- :func:`accumulation`: one module called at two depths in one forward (``ACCUMULATION_CASES``).
- :func:`fp8_weight_cache`: training steps under FP8; per step, whether the forward used the
  current weights (``fresh``) or those of an earlier step (``stale``) (``FP8_POLICIES``).
- :func:`fp8_repeated_layer`: the repeated layer under FP8 with the tracked flag (re-armed to
  True every step) or with ``None``; per step, whether ``main_grad`` kept every depth.
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import torch
import torch.nn.functional as F

from lint_rules.runtime import tolerances as tol
from lint_rules.runtime.backends import Backend
from lint_rules.runtime.fixtures import megatron_guard
from lint_rules.runtime.main_grad import MainGradParameter
from lint_rules.runtime.own_state import load_own_state

KINDS = ("Linear", "LayerNormLinear", "LayerNormMLP", "GroupedLinear")
HIDDEN = 256  # sizes in the hundreds, as in production (LayerNormMLP's FFN is 2 * HIDDEN)
TOKENS = 32
M_SPLITS = (12, 20)  # GroupedLinear: uneven on purpose, both GEMMs see rows
FP8_HIDDEN = 256  # FP8 GEMMs want dimensions that are multiples of 16
FP8_TOKENS = 32
FP8_M_SPLITS = (16, 16)
FP8_LR = 0.15
"""Adam's step in :func:`fp8_weight_cache`: every weight version distinct, and LayerNormMLP's
GELU kept out of its tail. At 0.3, with the outputs driven to zero, the hidden layer died
within three steps on some draws, and there GELU multiplies the E4M3 rounding of its input
(TE and the reference alike: 0.21-0.31 from the exact output on the first GPU run, 0.15-0.23
on the CPU with seeds 5, 6 and 10, against a tolerance of 0.144). At 0.15, toward a random
target: 40 seeds, every kind, policy and recipe, straight and resumed, all labelled as expected."""

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
"""Parameter and activation precision; ``main_grad`` is fp32 in both (Megatron's DDP)."""
RECIPES = ("delayed", "current")
"""FP8 recipes: ``DelayedScaling`` and ``Float8CurrentScaling`` (see ``backends.RECIPES``)."""

# Tolerances (relative Frobenius error), derived in lint_rules.runtime.tolerances from the
# formats' unit roundoffs, never fitted to a backend's numbers:
# - reference, fp32: the module and the oracle compute the same fp32 products in another
#   order: 1e-5 is two orders of magnitude above that.
# - te, fp32 (gpu_check turns TF32 off): fp32_tolerance(reduction) for reorderings and TE's
#   fused LayerNorm/GELU kernels.
# - bf16: two_depth_wgrad_tolerance_bf16(kind); FP8: forward_tolerance_fp8(kind) for outputs,
#   two_depth_wgrad_tolerance_fp8(kind) for gradients (E4M3 forward, E5M2 backward).
# A label needs its candidate within the tolerance AND every other candidate at least
# `separation` away, so no tolerance can hide the other outcome.
TOLERANCE = {"reference": 1e-5, "te": tol.fp32_tolerance(2 * HIDDEN)}
FP8_TOLERANCE = tol.two_depth_wgrad_tolerance_fp8("Linear")  # the shared-layer oracle
SEPARATION = 0.05
FP8_GRAD_SEPARATION = 0.5


def accumulation_tolerance(backend: Backend, kind: str, dtype: str) -> float:
    if dtype == "bf16":
        return tol.two_depth_wgrad_tolerance_bf16(kind)
    return TOLERANCE[backend.name]


@dataclass(frozen=True)
class Outcome:
    """What a scenario observed: a label to compare, and the numbers behind it."""

    label: str
    detail: str = ""

    def __str__(self) -> str:
        return self.label + (f" ({self.detail})" if self.detail else "")


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    """Relative Frobenius error of ``a`` against ``b``."""
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def classify(
    got: torch.Tensor, candidates: dict[str, torch.Tensor], tol: float, separation: float
) -> Outcome:
    """The candidate ``got`` is within ``tol`` of, if every other one is ``separation`` away."""
    errors = {name: rel(got, want) for name, want in candidates.items()}
    detail = ", ".join(f"{name}: {err:.1e}" for name, err in errors.items())
    best = min(errors, key=errors.__getitem__)
    if errors[best] > tol:
        return Outcome("none", detail)
    if any(err < separation for name, err in errors.items() if name != best):
        return Outcome("ambiguous", detail)
    return Outcome(best, detail)


def combine(outcomes: Sequence[Outcome]) -> Outcome:
    """One label for a sequence of observations (one per step), joined by commas."""
    return Outcome(",".join(o.label for o in outcomes), "; ".join(o.detail for o in outcomes))


def all_same(outcomes: Sequence[Outcome]) -> Outcome:
    """The common label of per-weight outcomes, or ``mixed[...]``."""
    labels = [o.label for o in outcomes]
    label = labels[0] if len(set(labels)) == 1 else "mixed[" + ",".join(labels) + "]"
    return Outcome(label, "; ".join(o.detail for o in outcomes if o.detail))


# -- building and mirroring the four kinds -------------------------------------------------


def make_module(
    kind: str,
    backend: Backend,
    *,
    fuse: bool,
    hidden: int = HIDDEN,
    init_std: float | None = None,
    activation: str = "relu",
    dtype: str = "fp32",
) -> torch.nn.Module:
    """Build ``kind`` from the backend's namespace with TE's keyword names.

    LayerNormMLP's ``activation``: ``relu`` for fp32 scenarios (no approximation to disagree
    on); ``gelu`` under FP8, where relu's derivative flips on pre-activations that quantization
    moves across zero (TE's and the reference's gelu agree far below FP8's rounding).
    """
    te = backend.module()
    common: dict[str, Any] = {
        "bias": True,
        "fuse_wgrad_accumulation": fuse,
        "params_dtype": DTYPES[dtype],
        "device": backend.device,
    }
    if init_std is not None:
        common["init_method"] = lambda w: torch.nn.init.normal_(w, 0.0, init_std)
    if kind == "GroupedLinear":
        return te.GroupedLinear(len(M_SPLITS), hidden, hidden, **common)
    if kind == "LayerNormMLP":
        if init_std is not None:
            common["output_layer_init_method"] = common["init_method"]
        return te.LayerNormMLP(hidden, 2 * hidden, activation=activation, **common)
    return getattr(te, kind)(hidden, hidden, **common)


def fused_weight_names(kind: str) -> list[str]:
    """The parameters whose wgrad the fused path writes to ``main_grad`` (TE's names)."""
    if kind == "GroupedLinear":
        return [f"weight{i}" for i in range(len(M_SPLITS))]
    if kind == "LayerNormMLP":
        return ["fc1_weight", "fc2_weight"]
    return ["weight"]


def fused_weights(kind: str, module: torch.nn.Module) -> list[MainGradParameter]:
    """The weights ``kind``'s fused wgrad writes: the scenarios give them ``main_grad``."""
    return [getattr(module, name) for name in fused_weight_names(kind)]


def call(
    kind: str, module: torch.nn.Module, x: torch.Tensor, flag: bool | None, m_splits: Sequence[int]
) -> torch.Tensor:
    if kind == "GroupedLinear":
        return module(x, list(m_splits), is_first_microbatch=flag)
    return module(x, is_first_microbatch=flag)


def mirror(
    kind: str,
    module: torch.nn.Module,
    x: torch.Tensor,
    weights: Sequence[torch.Tensor],
    m_splits: Sequence[int],
) -> torch.Tensor:
    """The module's math in plain torch, with ``weights`` in place of its fused weights."""

    def p(name: str) -> torch.Tensor:
        return getattr(module, name).detach().to(x.dtype)

    if kind == "Linear":
        return F.linear(x, weights[0], p("bias"))
    if kind in ("LayerNormLinear", "LayerNormMLP"):
        width = x.shape[-1]
        eps = cast(float, module.eps)  # a float attribute: torch's stubs say Tensor | Module
        normed = F.layer_norm(x, (width,), p("layer_norm_weight"), p("layer_norm_bias"), eps)
        if kind == "LayerNormLinear":
            return F.linear(normed, weights[0], p("bias"))
        fc1 = F.linear(normed, weights[0], p("fc1_bias"))
        hidden = F.relu(fc1) if module.activation == "relu" else F.gelu(fc1, approximate="tanh")
        return F.linear(hidden, weights[1], p("fc2_bias"))
    chunks = torch.split(x, list(m_splits))
    return torch.cat(
        [F.linear(c, w, p(f"bias{i}")) for i, (c, w) in enumerate(zip(chunks, weights))]
    )


def two_depth_grads(
    kind: str,
    module: torch.nn.Module,
    x: torch.Tensor,
    probe: torch.Tensor,
    m_splits: Sequence[int],
    weights: Sequence[torch.Tensor] | None = None,
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """(g1, g2): each fused weight's gradient from depth 1 and from depth 2, by autograd on
    separate copies of the weights (``weights``, default: the module's current ones)."""
    originals = [w.detach().float() for w in (weights or fused_weights(kind, module))]
    x, probe = x.float(), probe.float()
    depth1 = [w.clone().requires_grad_(True) for w in originals]
    depth2 = [w.clone().requires_grad_(True) for w in originals]
    h1 = torch.tanh(mirror(kind, module, x, depth1, m_splits))
    h2 = torch.tanh(mirror(kind, module, h1, depth2, m_splits))
    grads = torch.autograd.grad((h2 * probe).sum(), depth1 + depth2)
    n = len(originals)
    return list(grads[:n]), list(grads[n:])


# -- accumulation: one module at two depths ----------------------------------------------------


@dataclass(frozen=True)
class Case:
    """Flags of the two calls and what must end up in ``main_grad`` (or ``.grad``)."""

    flags: tuple[bool | None, bool | None]
    expect: str  # "g1+g2" or "g1" (depth 2's gradient overwritten)
    guard_config: Any = None  # route the flags through is_first_microbatch_tracked(config)
    overwrite_attr: bool = False  # weight0/weight.overwrite_main_grad = True, set before forward
    fuse: bool = True


UNTRACKED = types.SimpleNamespace(fp8=None, fp4=None)
TRACKED = types.SimpleNamespace(fp8="hybrid", fp4=None)

ACCUMULATION_CASES = {
    # What the codemod writes: TE accumulates whenever fusion is on.
    "none": Case((None, None), "g1+g2"),
    # The upstream guard with a BF16/FP32 config (untracked): the guard turns the flag into None.
    "guard-untracked": Case((True, False), "g1+g2", guard_config=UNTRACKED),
    # An uninterrupted run after its first microbatch: both accumulate.
    "false-false": Case((False, False), "g1+g2"),
    # The first call after a (re)start: depth 1's wgrad, written last, overwrites depth 2's.
    "true-false": Case((True, False), "g1"),
    # The guard's known limit: with FP8 the flag is tracked, re-armed to True on the first
    # microbatch, and a module called twice still loses one depth's gradient.
    "guard-tracked-fp8": Case((True, False), "g1", guard_config=TRACKED),
    # TE's attribute that forces overwrite even with the None fallback.
    "overwrite-attr": Case((None, None), "g1", overwrite_attr=True),
    # Fusion off: a fresh wgrad per call, summed by autograd into .grad; nothing to overwrite.
    "unfused-true-false": Case((True, False), "g1+g2", fuse=False),
}


def accumulation(
    backend: Backend, kind: str, case_id: str, seed: int = 1234, dtype: str = "fp32"
) -> Outcome:
    """Call ``kind`` at two depths with the case's flags, backward, and name what survived.

    Label: ``g1+g2``, ``g1``, ``g2`` (the candidates ``main_grad``, or ``.grad`` with fusion off,
    matched), ``none``/``ambiguous``, or ``main_grad touched`` when fusion is off and
    ``main_grad`` changed. Backward runs in reverse: depth 2's wgrad is written first and
    depth 1's (the FIRST forward call) last, so ``True, False`` keeps ``g1`` only.
    """
    case = ACCUMULATION_CASES[case_id]
    torch.manual_seed(seed)
    # relu's derivative flips where bf16 rounding moves a pre-activation across zero: gelu
    activation = "relu" if dtype == "fp32" else "gelu"
    module = make_module(kind, backend, fuse=case.fuse, dtype=dtype, activation=activation)
    weights = fused_weights(kind, module)
    for w in weights:
        w.main_grad = torch.zeros_like(w, dtype=torch.float32)
        if case.overwrite_attr:
            w.overwrite_main_grad = True
    x = torch.randn(TOKENS, HIDDEN, device=backend.device).to(DTYPES[dtype])
    probe = torch.randn(TOKENS, HIDDEN, device=backend.device).to(DTYPES[dtype])
    flags: tuple[bool | None, ...] = case.flags
    if case.guard_config is not None:
        # Exactly the guarded call shape the linter accepts: `v if tracked(config) else None`.
        tracked = megatron_guard.is_first_microbatch_tracked(case.guard_config)
        flags = tuple(f if tracked else None for f in flags)
    h1 = torch.tanh(call(kind, module, x, flags[0], M_SPLITS))
    h2 = torch.tanh(call(kind, module, h1, flags[1], M_SPLITS))
    (h2.float() * probe.float()).sum().backward()

    g1, g2 = two_depth_grads(kind, module, x, probe, M_SPLITS)
    limit = accumulation_tolerance(backend, kind, dtype)
    outcomes = []
    for w, a, b in zip(weights, g1, g2):
        got = w.main_grad if case.fuse else w.grad
        if got is None:
            outcomes.append(Outcome("no gradient"))
            continue
        if not case.fuse and torch.count_nonzero(w.main_grad):
            outcomes.append(Outcome("main_grad touched"))
            continue
        outcomes.append(classify(got, {"g1+g2": a + b, "g1": a, "g2": b}, limit, SEPARATION))
    return all_same(outcomes)


# -- FP8: the quantized weight cache over training steps ---------------------------------------

FP8_POLICIES = {
    # The flag the training loop never re-arms: True once per process, then False forever.
    "stuck": "fresh on the first step of a process, stale after every later optimizer step",
    # The codemod's fix: nothing cached, the current weight quantized on every call.
    "none": "fresh every step",
    # `flag if is_first_microbatch_tracked(config) else None` with an FP8 config (tracked), and
    # the loop re-arming the flag to True at every step (Megatron-Core's set_is_first_microbatch).
    "guarded-rearm": "fresh every step",
}


def fp8_expected(policy: str, steps: int, resume_at: int | None = None) -> str:
    """The label :func:`fp8_weight_cache` must return: one ``fresh``/``stale`` per step."""
    labels = []
    for step in range(1, steps + 1):
        first_of_process = step == 1 or (resume_at is not None and step == resume_at + 1)
        labels.append("stale" if policy == "stuck" and not first_of_process else "fresh")
    return ",".join(labels)


def _policy_flag(policy: str, state: dict[str, Any]) -> bool | None:
    if policy == "none":
        return None
    value = state["flag"]
    if policy == "guarded-rearm":
        return value if megatron_guard.is_first_microbatch_tracked(TRACKED) else None
    return value


def fp8_weight_cache(
    backend: Backend,
    kind: str,
    policy: str,
    *,
    steps: int = 3,
    resume_at: int | None = None,
    microbatches: int = 2,
    seed: int = 7,
    recipe: str = "delayed",
) -> Outcome:
    """Train ``kind`` under FP8 for ``steps`` steps with the ``policy``'s flag; per step, which
    weights the forwards used: ``fresh`` (the weights after the last optimizer step) or
    ``stale`` (an earlier version), judged against plain-torch outputs of every weight version.

    ``resume_at=M``: after step M, a new module (a fresh process: no workspace, flag True
    again) loads the state dict and the optimizer state and trains on. Fusion is off (the flag
    then only decides the cache); Adam with a large step (``FP8_LR``) toward a random target makes
    every version distinct.
    """
    if policy not in FP8_POLICIES:
        raise ValueError(f"policy must be one of {sorted(FP8_POLICIES)}")
    fp8_recipe = backend.recipe(recipe)
    torch.manual_seed(seed)
    m_splits = FP8_M_SPLITS

    def build() -> tuple[torch.nn.Module, torch.optim.Optimizer]:
        module = make_module(
            kind, backend, fuse=False, hidden=FP8_HIDDEN, init_std=0.3, activation="gelu"
        )
        return module, torch.optim.Adam(module.parameters(), lr=FP8_LR)

    module, optimizer = build()
    state = {"flag": True}
    versions: list[list[torch.Tensor]] = []
    per_step = []
    for step in range(1, steps + 1):
        if resume_at is not None and step == resume_at + 1:
            fresh, fresh_opt = build()
            load_own_state(fresh, module.state_dict())
            fresh_opt.load_state_dict(optimizer.state_dict())
            module, optimizer, state = fresh, fresh_opt, {"flag": True}
        if policy == "guarded-rearm":
            state["flag"] = True  # the loop re-arms at every step
        versions.append([w.detach().clone() for w in fused_weights(kind, module)])
        seen = []
        optimizer.zero_grad(set_to_none=True)
        for _ in range(microbatches):
            x = torch.randn(FP8_TOKENS, FP8_HIDDEN, device=backend.device)
            target = torch.randn(FP8_TOKENS, FP8_HIDDEN, device=backend.device)
            with backend.autocast(fp8_recipe):
                out = call(kind, module, x, _policy_flag(policy, state), m_splits)
            state["flag"] = False
            with torch.no_grad():
                candidates = {
                    ("fresh" if v == len(versions) - 1 else f"v{v}"): mirror(
                        kind, module, x, weights, m_splits
                    )
                    for v, weights in enumerate(versions)
                }
            # within the tolerance of exactly one weight version
            limit = tol.forward_tolerance_fp8(kind)
            found = classify(out, candidates, limit, limit)
            seen.append(
                found
                if found.label in ("fresh", "none", "ambiguous")
                else Outcome("stale", found.detail)
            )
            # toward a random target, not zero: driving the outputs to zero kills
            # LayerNormMLP's hidden layer, where GELU's tail multiplies FP8's rounding of its
            # input many times over (the tolerances assume operands errors pass at gain ~1)
            (out.float() - target).pow(2).mean().backward()
        optimizer.step()
        worst = next((o for o in seen if o.label != "fresh"), seen[0])
        per_step.append(worst)
    return combine(per_step)


# -- FP8: the repeated layer with the tracked flag ---------------------------------------------


def fp8_repeated_layer(
    backend: Backend,
    kind: str,
    flag_mode: str,
    *,
    steps: int = 2,
    microbatches: int = 1,
    seed: int = 11,
    recipe: str = "current",
) -> Outcome:
    """A fused-wgrad module called at two depths per microbatch, under FP8, for ``steps`` steps.

    ``flag_mode="tracked"``: the flag is passed through (tracked under FP8), re-armed to True at
    every step and cleared after the first call, as upstream code with the tracking guard does;
    ``"none"``: the TEM005 fix, ``None`` at both depths. Per step, ``main_grad`` is matched
    against the sum over microbatches and depths of plain-autograd gradients (``kept``) and the
    same sum without depth 2 of microbatch 0 (``lost``): that is the gradient depth 1's
    overwrite discards every step.
    """
    if flag_mode not in ("tracked", "none"):
        raise ValueError("flag_mode must be 'tracked' or 'none'")
    fp8_recipe = backend.recipe(recipe)
    torch.manual_seed(seed)
    module = make_module(
        kind, backend, fuse=True, hidden=FP8_HIDDEN, init_std=FP8_HIDDEN**-0.5, activation="gelu"
    )
    weights = fused_weights(kind, module)
    for w in weights:
        w.main_grad = torch.zeros_like(w, dtype=torch.float32)
    flag: bool | None = None
    per_step = []
    for _ in range(steps):
        for w in weights:
            w.main_grad.zero_()
        if flag_mode == "tracked":
            flag = True  # re-armed by the schedule on the first microbatch of every step
        kept = [torch.zeros_like(w.main_grad) for w in weights]
        lost = [torch.zeros_like(w.main_grad) for w in weights]
        for mb in range(microbatches):
            x = torch.randn(FP8_TOKENS, FP8_HIDDEN, device=backend.device)
            probe = torch.randn(FP8_TOKENS, FP8_HIDDEN, device=backend.device)
            with backend.autocast(fp8_recipe):
                h1 = torch.tanh(call(kind, module, x, flag, FP8_M_SPLITS))
                if flag_mode == "tracked":
                    flag = False
                h2 = torch.tanh(call(kind, module, h1, flag, FP8_M_SPLITS))
            (h2.float() * probe).sum().backward()
            g1, g2 = two_depth_grads(kind, module, x, probe, FP8_M_SPLITS)
            for i in range(len(weights)):
                kept[i] += g1[i] + g2[i]
                lost[i] += g1[i] + (0 if mb == 0 else g2[i])
        found = all_same(
            [
                classify(
                    w.main_grad,
                    {"kept": k, "lost": m},
                    tol.two_depth_wgrad_tolerance_fp8(kind),
                    FP8_GRAD_SEPARATION,
                )
                for w, k, m in zip(weights, kept, lost)
            ]
        )
        per_step.append(found)
        with torch.no_grad():  # an optimizer step, so each step quantizes new weights
            for w in weights:
                w.sub_(0.05 * w.main_grad.sign())
    return combine(per_step)
